"""The page's addresses of a document: its rendered page and its own file."""

from __future__ import annotations

from urllib.parse import urlencode


def doc_href(
    ref: str, line: int | None = None, start: int | None = None, marks: tuple[str, ...] = (), query: str = ""
) -> str:
    """The document page, its `line` marked; `start`: the first line of a long one's window;
    `marks`: the words a search matched there, marked on that line; `query`: the search
    the page was opened from, which it links back to."""
    found = [("ref", ref)] + ([("line", str(line))] if line else []) + ([("from", str(start))] if start else [])
    found += [("mark", word) for word in marks] + ([("q", query)] if query else [])
    return "/doc?" + urlencode(found) + ("#hit" if line and not start else "")


def file_href(ref: str) -> str:
    """The document's own file, as the browser shows it (a PDF, a picture)."""
    return "/file?" + urlencode([("ref", ref)])


def wiki_href(collection: str, folder: str, name: str) -> str:
    """A `[[wiki link]]`'s address: the note `name` names, found from a note in `folder`
    of `collection` when the link is followed (gnoctl.web.wiki)."""
    return "/wiki?" + urlencode([("c", collection), ("in", folder), ("name", name)])
