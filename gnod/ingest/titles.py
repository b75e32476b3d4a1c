"""Titles taken again from what is stored once the rules that take them change
(markdown.TITLE_RULES): an index written before would keep its prose documents' old
titles until each file changes (a reStructuredText page titled by a shell comment in
one of its literal blocks). Nothing is read from disk. A document whose title changes
is indexed again; its vectors keep the title they were embedded with until its text
changes."""

from __future__ import annotations

import json

import apsw

from gnod.config import PROSE_EXTENSIONS
from gnod.ingest.markdown import TITLE_RULES, extract_title
from gnod.ingest.obsidian import named_by_files
from gnod.store import documents as store

RETITLE_BATCH = 500  # documents whose title is taken again per writer job
_KEY = "title_rules"  # schema_meta: the TITLE_RULES the stored titles were taken by
_GLOBS = [f"*{ext}" for ext in PROSE_EXTENSIONS]  # where a heading titles the document


def due(conn: apsw.Connection) -> bool:
    """Whether the stored titles were taken by older rules."""
    return store.meta_value(conn, _KEY) != str(TITLE_RULES)


def retitle(conn: apsw.Connection, after: int) -> tuple[int, int] | None:
    """Take again the titles of up to RETITLE_BATCH prose documents from id `after` on;
    returns (the last id done, documents done), or None once none is left (the rules
    are then recorded). Call inside a transaction."""
    rows = store.titled_sources(conn, _GLOBS, after, RETITLE_BATCH)
    named = {cid: named_by_files(root) for cid, root in store.collection_paths(conn).items()}
    for doc_id, cid, rel_path, title, metadata, markdown, body_line in rows:
        meta, name = json.loads(metadata), rel_path.rsplit("/", 1)[-1]
        new = extract_title(meta, store.body_of(markdown, body_line), name, named.get(cid, False))
        if new != title:
            store.set_title(conn, doc_id, new)
    if rows:
        return int(rows[-1][0]), len(rows)
    store.set_meta_value(conn, _KEY, str(TITLE_RULES))
    return None
