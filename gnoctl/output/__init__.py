"""Rendering of every gnoctl result, one module per kind of result (common: what they share)."""
