"""The OCR backlog: pictures and scans indexed by their name whose text gnod's OCR loop
(gnod.server.ocr) has yet to read, oldest first. A document joins it when it is stored
without its text (documents.put_document) and leaves when stored with it, or removed."""

from __future__ import annotations

from typing import NamedTuple

import apsw


class Waiting(NamedTuple):
    """A document waiting for OCR, with its stat as indexed (changed since: indexed again)."""

    doc_id: int
    collection: str
    rel_path: str
    size: int
    mtime_ns: int
    inode: int


def backlog(conn: apsw.Connection) -> list[Waiting]:
    sql = (
        "SELECT d.id, c.name, d.rel_path, d.size, d.mtime_ns, d.inode FROM ocr_pending o "
        "JOIN documents d ON d.id = o.doc_id JOIN collections c ON c.id = d.collection_id ORDER BY o.doc_id"
    )
    return [Waiting(*row) for row in conn.execute(sql)]


def unread_since(conn: apsw.Connection, collections: list[str], mtime_ns: int) -> int:
    """How many documents of `collections` whose file was modified at `mtime_ns` or later
    are not searchable by their text yet: waiting for OCR, or stored (by OCR, which no
    index run waits for) and not yet taken by the lexical index's next commit."""
    marks = ",".join("?" * len(collections))
    sql = (
        "SELECT count(*) FROM documents d JOIN collections c ON c.id = d.collection_id "
        f"WHERE c.name IN ({marks}) AND d.mtime_ns >= ? AND (d.id IN (SELECT doc_id FROM ocr_pending) "
        "OR d.id IN (SELECT doc_id FROM lexical_pending))"
    )
    return int(conn.execute(sql, [*collections, mtime_ns]).fetchone()[0])


def count(conn: apsw.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM ocr_pending").fetchone()[0])


def waiting(conn: apsw.Connection, doc_id: int) -> bool:
    return conn.execute("SELECT 1 FROM ocr_pending WHERE doc_id = ?", (doc_id,)).fetchone() is not None
