"""`gnoctl web`: a local web page over gnod's socket (Starlette, uvicorn and Jinja2 are
imported by that command only)."""
