"""Files read again after an upgrade: where gno now reads a kind of file otherwise (its
frontmatter, its title), the documents an older gno indexed from such files are marked
changed when the index is opened, and the rescan that follows every start reads them
from disk again. Their stored text cannot give back what the old reading dropped (a web
page's <title>); what comes out the same as before is kept as it was (content is stored
by its hash). Titles alone are taken again from what is stored (gnod.ingest.titles)."""

from __future__ import annotations

from typing import NamedTuple

import apsw

from gnod.config import CODE_EXTENSIONS, CONVERTED, MEMBER_SEP, PROSE_EXTENSIONS, extension
from gnod.store import documents as store


class Reading(NamedTuple):
    """A change in how some files are read, from READ_RULES `since` on."""

    since: int
    extensions: frozenset[str]  # the files it reads otherwise
    framed: bool = False  # only those an older gno read with frontmatter (content.body_line > 1)


READINGS = (
    # TOML's +++ frontmatter is read (Hugo, Zola); a YAML value's unclosed quote is not kept in it.
    Reading(2, frozenset(PROSE_EXTENSIONS)),
    # A web page is titled by its <title>, before its own <h1>.
    Reading(2, frozenset(CONVERTED["html"])),
    # Code has no frontmatter: the first of a YAML file's documents was read as a note's.
    Reading(2, CODE_EXTENSIONS, framed=True),
)
# The rules the files are read by now: the last Reading's `since`.
READ_RULES = max(r.since for r in READINGS)
_KEY = "read_rules"  # schema_meta: the READ_RULES the stored documents were read by


def mark(conn: apsw.Connection) -> int:
    """Mark what was read by older rules for the next walk to read again: the documents,
    the failed files (another try), and a container holding such a document (read whole);
    then record today's rules. Returns how many documents were marked (0 at once when the
    rules are today's). Call inside a transaction."""
    stored = store.meta_value(conn, _KEY)
    before = int(stored) if stored is not None else 1
    if before >= READ_RULES:
        return 0
    readings = [r for r in READINGS if r.since > before]
    due: list[int] = []
    files: set[tuple[int, str]] = set()
    for doc_id, cid, rel, body_line in store.read_with(conn):
        ext = extension(rel)
        if any(ext in r.extensions and (body_line > 1 or not r.framed) for r in readings):
            due.append(doc_id)
            if MEMBER_SEP in rel:
                files.add((cid, rel.split(MEMBER_SEP, 1)[0]))
    for cid, rel in store.failed_paths(conn):
        if any(extension(rel) in r.extensions for r in readings if not r.framed):
            files.update({(cid, rel), (cid, rel.split(MEMBER_SEP, 1)[0])})
    store.read_again(conn, due, sorted(files))
    store.set_meta_value(conn, _KEY, str(READ_RULES))
    return len(due)
