"""Documents, content and chunks: the SQL that writes and reads them.

Writers call these inside a transaction of whole documents (see ingest.pipeline),
so a failure or crash part-way through a document never leaves half of it visible.
Every write that changes what the lexical index holds of a document records its id
in `lexical_pending` in the same transaction (gnod.store.lexical_index takes it from
there once the transaction commits).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import apsw
import msgspec
import zstandard

from gnod.config import MAILBOX_SUFFIXES, MEMBER_SEP, converted, extension, uncompressed
from gnod.store.db import in_list
from gnod.store.tags import TAG_KEYS, listed, tags_of
from gnod.text.analyzer import fold
from gnod.text.dates import mtime_day
from gnod.text.headings import MARKDOWN, markup, section_of


class ChunkRow(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """A chunk as a span of the document's canonical markdown (see content_chunks)."""

    seq: int
    pos: int
    length: int
    start_line: int
    end_line: int


class LexicalText(NamedTuple):
    """What the analyzers make of one document for the lexical index: space-separated
    tokens per part, stems (in the document's language) and exact forms."""

    stem_path: str
    stem_title: str
    stem_body: str
    exact_path: str
    exact_title: str
    exact_body: str


class PreparedDoc(msgspec.Struct, frozen=True, gc=False):
    """Everything the store needs to write one document; built off the writer thread.

    gc=False (here and on the other per-file Structs): they hold no cycles, and
    tracking tens of thousands of them made the cyclic GC a fifth of ingest time."""

    rel_path: str
    size: int
    mtime_ns: int
    inode: int
    source_hash: str
    mirror_hash: str
    packed: bytes  # the canonical Markdown as content.markdown stores it (pack)
    body_line: int
    title: str
    language: str | None
    metadata: dict[str, Any]
    chunks: list[ChunkRow]
    text: LexicalText
    read_rules: int  # gnod.ingest.reread.READ_RULES: what it was read by
    # Languages some blocks of the body were stemmed in besides `language` (a document
    # that mixes languages): queries weigh them by how much of the index they hold.
    other_languages: tuple[str, ...] = ()
    language_confident: bool = True  # False: a guess, see pipeline.settle_languages
    line_shifts: str = ""  # the file's lines (ingest.canonical.canonicalize_lines)
    ocr_pending: bool = False  # a picture or scan indexed by its name, its text read later (ocr_pending)


class DocState(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """An indexed file's stat as indexed: what a walk compares (its hashes are read only
    for the files whose stat changed, `source_hashes`)."""

    id: int
    size: int
    mtime_ns: int
    inode: int


class DocRow(msgspec.Struct, frozen=True):
    id: int
    collection: str
    root: str
    rel_path: str
    title: str
    language: str | None
    mirror_hash: str
    size: int
    mtime_ns: int
    metadata: str
    line_shifts: str = ""  # canonical lines → the file's (gnod.lines.file_line)


# Where a document's frontmatter gives its date, first found first: `date` (Hugo,
# Jekyll…), else `created` (Obsidian's templates). Past them, and for a value that is no
# ISO day, the date is the file's mtime.
DATE_KEYS = ("date", "created")


def date_of(meta: dict[str, Any]) -> str | None:
    """A document's frontmatter date as written: the first of DATE_KEYS given a value
    (not empty), if that is text (as filters.DOC_DATE reads it in SQL)."""
    for key in DATE_KEYS:
        value = meta.get(key)
        if value is not None and value != "":
            return value if isinstance(value, str) else None
    return None


def sender_key(sender: str) -> str:
    """A sender as `--from` compares it, in a document's `from` and in the filter's value:
    in lower case, accents off (`schafer` finds Schäfer, as a search finds Müller by
    `muller`; SQL's FOLD_FUNCTION folds the same)."""
    return fold(sender.strip().lower())


def _from(meta: dict[str, Any]) -> list[str]:
    """A document's frontmatter `from` (a message's sender: "Name <address>"), as written."""
    raw = meta.get("from")
    values = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    return [v for v in values if isinstance(v, str) and v.strip()]


def senders_of(meta: dict[str, Any]) -> list[str]:
    """A document's senders (_from), each as `sender_key` gives it, in order, once each."""
    return list(dict.fromkeys(map(sender_key, _from(meta))))


def sender_of(meta: dict[str, Any]) -> str | None:
    """A document's first sender (_from) as written, to show; None without one."""
    return next(iter(_from(meta)), None)


# The frontmatter keys whose values are a note's other names (Obsidian's `aliases`).
ALIAS_KEYS = ("aliases", "alias")


def aliases_of(meta: dict[str, Any]) -> list[str]:
    """A note's other names (tags.listed: a list, or a string of them separated by
    commas), in order, once each."""
    return list(dict.fromkeys(name for key in ALIAS_KEYS for name in listed(meta.get(key))))


# The frontmatter keys read as what they say elsewhere (the title, other names, tags, the
# date): a note's other properties are words of its text (properties_text).
_KEYS_READ = frozenset({"title", *ALIAS_KEYS, *TAG_KEYS, *DATE_KEYS})
_YES_NO = frozenset({"true", "false"})  # a property's values that say nothing as words


def properties_text(meta: dict[str, Any]) -> str:
    """The values of a note's other frontmatter properties (Obsidian's `company: Freelance`,
    `project: "[[Project Alpha]]"`, each of a list's), a line each; `true` and `false`
    say nothing. Searchable as words of its text."""
    values = (
        v for key, raw in meta.items() if key not in _KEYS_READ for v in (raw if isinstance(raw, list) else [raw])
    )
    return "\n".join(v for v in values if isinstance(v, str) and v.strip() and v.lower() not in _YES_NO)


def indexed_title(title: str, meta: dict[str, Any]) -> str:
    """What a document's title column holds: its title, its other names and its tags
    (searchable as words, with the title's weight)."""
    return " ".join([title, *aliases_of(meta), *tags_of(meta)])


# --- collections -------------------------------------------------------------------


def upsert_collection(conn: apsw.Connection, name: str, path: str, language: str | None) -> int:
    """The collection's id, its row written only when new or changed (store.kept)."""
    row = conn.execute(
        "INSERT INTO collections(name, path, language) VALUES (?, ?, ?) "
        "ON CONFLICT(name) DO UPDATE SET path=excluded.path, language=excluded.language "
        "WHERE (path, language) IS NOT (excluded.path, excluded.language) RETURNING id",
        (name, path, language),
    ).fetchone()
    if row is None:
        row = conn.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
    return int(row[0])


def collection_ids(conn: apsw.Connection) -> dict[str, int]:
    return {name: cid for cid, name in conn.execute("SELECT id, name FROM collections")}


def delete_collection(conn: apsw.Connection, name: str) -> int:
    """Remove a collection and every row that belongs to it; returns documents removed."""
    row = conn.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
    if row is None:
        return 0
    cid = row[0]
    removed = 0
    with conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM documents WHERE collection_id = ?", (cid,))]
        for doc_id in ids:
            _delete_document(conn, doc_id)
            removed += 1
        conn.execute("DELETE FROM ingest_errors WHERE collection_id = ?", (cid,))
        conn.execute("DELETE FROM collections WHERE id = ?", (cid,))
    return removed


# --- ingest state ------------------------------------------------------------------


def _scoped(conn: apsw.Connection, sql: str, collection_id: int, scope: Iterable[str] | None) -> Iterator[Any]:
    """Rows of a per-collection query (`sql` ends in its WHERE clause), only for paths
    equal to or under any of `scope`, and members of a container among them (rel!/…,
    gnod.ingest.containers): one index range each (an OR of them made SQLite read the
    whole collection: 65k documents, ~10 ms per watcher event). Without a scope, the
    cursor itself (no Python between its rows: the stat-only pass reads them all)."""
    if scope is None:
        rows: Iterator[Any] = conn.execute(sql, (collection_id,))
        return rows
    return _in_scope(conn, sql, collection_id, scope)


def _in_scope(conn: apsw.Connection, sql: str, collection_id: int, scope: Iterable[str]) -> Iterator[Any]:
    for rel in dict.fromkeys(scope):
        yield from conn.execute(sql + " AND rel_path = ?", (collection_id, rel))
        # rel/… and rel!/… ('0' is the character after '/').
        for lo, hi in ((rel + "/", rel + "0"), (rel + MEMBER_SEP, rel + "!0")):
            yield from conn.execute(sql + " AND rel_path > ? AND rel_path < ?", (collection_id, lo, hi))


def doc_states(conn: apsw.Connection, collection_id: int, scope: Iterable[str] | None = None) -> dict[str, DocState]:
    sql = "SELECT rel_path, id, size, mtime_ns, inode FROM documents WHERE collection_id = ?"
    return {
        rel: DocState(i, size, mtime, inode) for rel, i, size, mtime, inode in _scoped(conn, sql, collection_id, scope)
    }


def source_hashes(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, str]:
    """Each of these documents' source hash: same bytes as indexed means no work."""
    if not ids:
        return {}
    sql = "SELECT id, source_hash FROM documents WHERE id IN (SELECT value FROM json_each(?))"
    return dict(conn.execute(sql, (json.dumps(list(ids)),)).fetchall())


def error_states(
    conn: apsw.Connection, collection_id: int, scope: Iterable[str] | None = None, retry: Iterable[str] = ()
) -> dict[str, tuple[int, int, int]]:
    """Each failed path's stat when it failed (unchanged since: not tried again), but
    for failures with a code in `retry` (their cause may have gone: tried again)."""
    sql = "SELECT rel_path, size, mtime_ns, inode, code FROM ingest_errors WHERE collection_id = ?"
    again = set(retry)
    return {
        r[0]: (r[1], r[2], r[3]) if r[4] not in again else (-1, -1, -1)
        for r in _scoped(conn, sql, collection_id, scope)
    }


def put_document(
    conn: apsw.Connection, collection_id: int, doc: PreparedDoc, old: DocState | None, had_error: bool
) -> int:
    """Insert or replace one document; returns its id. `old` is its indexed state, if any.

    Call inside the caller's transaction. No savepoint per document: atomicity is the
    batch's, and a failure rolls the whole batch back.
    """
    now = int(time.time())
    conn.execute(
        "INSERT OR IGNORE INTO content(mirror_hash, markdown, body_line, created_at) VALUES (?, ?, ?, ?)",
        (doc.mirror_hash, doc.packed, doc.body_line, now),
    )
    if conn.changes():  # new content (not shared with another document): add its chunks
        _put_chunks(conn, conn.last_insert_rowid(), doc.chunks)
    else:
        _as_read_now(conn, doc)
    meta = json.dumps(doc.metadata, ensure_ascii=False) if doc.metadata else "{}"
    fields = (
        doc.size,
        doc.mtime_ns,
        doc.inode,
        doc.source_hash,
        doc.mirror_hash,
        doc.title,
        doc.language,
        " ".join(doc.other_languages),
        int(doc.language_confident),
        meta,
        doc.line_shifts,
        now,
        doc.read_rules,
    )
    if old is None:
        conn.execute(
            "INSERT INTO documents(size, mtime_ns, inode, source_hash, mirror_hash, title, language, "
            "other_languages, language_confident, metadata, line_shifts, indexed_at, read_rules, collection_id, "
            "rel_path) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (*fields, collection_id, doc.rel_path),
        )
        doc_id = conn.last_insert_rowid()
    else:
        doc_id = old.id
        (old_mirror,) = conn.execute("SELECT mirror_hash FROM documents WHERE id = ?", (doc_id,)).fetchone()
        conn.execute(
            "UPDATE documents SET size=?, mtime_ns=?, inode=?, source_hash=?, mirror_hash=?, title=?, language=?, "
            "other_languages=?, language_confident=?, metadata=?, line_shifts=?, indexed_at=?, read_rules=? WHERE id=?",
            (*fields, doc_id),
        )
    _pending(conn, doc_id)
    if doc.ocr_pending:
        conn.execute("INSERT OR IGNORE INTO ocr_pending(doc_id) VALUES (?)", (doc_id,))
    elif old is not None:
        conn.execute("DELETE FROM ocr_pending WHERE doc_id = ?", (doc_id,))
    if had_error:
        conn.execute(
            "DELETE FROM ingest_errors WHERE collection_id = ? AND rel_path = ?",
            (collection_id, doc.rel_path),
        )
    if old is not None and old_mirror != doc.mirror_hash:
        _gc_content(conn, old_mirror)
    return int(doc_id)


def _put_chunks(conn: apsw.Connection, content_id: int, chunks: Sequence[ChunkRow]) -> None:
    conn.executemany(
        "INSERT INTO content_chunks(content_id, seq, pos, length, start_line, end_line) VALUES (?, ?, ?, ?, ?, ?)",
        [(content_id, c.seq, c.pos, c.length, c.start_line, c.end_line) for c in chunks],
    )


def _as_read_now(conn: apsw.Connection, doc: PreparedDoc) -> None:
    """Content stored before with another body line (its frontmatter read by older rules:
    gnod.ingest.reread) takes the body line and the chunks this reading gives; the
    vectors of its old chunks go with them (content_chunks_tombstone)."""
    content_id, body_line = conn.execute(
        "SELECT id, body_line FROM content WHERE mirror_hash = ?", (doc.mirror_hash,)
    ).fetchone()
    if body_line == doc.body_line:
        return
    conn.execute("DELETE FROM content_chunks WHERE content_id = ?", (content_id,))
    conn.execute("UPDATE content SET body_line = ? WHERE id = ?", (doc.body_line, content_id))
    _put_chunks(conn, content_id, doc.chunks)


def touch_document(conn: apsw.Connection, doc_id: int, size: int, mtime_ns: int, inode: int, before_ns: int) -> None:
    """Same bytes, new stat (e.g. `touch`, a copy back): remember the stat, skip the work.
    Where the file's day changed (`before_ns`: its mtime as indexed), the lexical index
    takes the document again: its date there may be that day (a backup restored with
    `rsync -t` was still found by `--since` the day it was copied)."""
    conn.execute(
        "UPDATE documents SET size = ?, mtime_ns = ?, inode = ? WHERE id = ?",
        (size, mtime_ns, inode, doc_id),
    )
    if mtime_day(before_ns) != mtime_day(mtime_ns):
        _pending(conn, doc_id)


def delete_documents(conn: apsw.Connection, doc_ids: Iterable[int]) -> None:
    with conn:
        for doc_id in doc_ids:
            _delete_document(conn, doc_id)


def _delete_document(conn: apsw.Connection, doc_id: int) -> None:
    row = conn.execute("SELECT mirror_hash FROM documents WHERE id = ?", (doc_id,)).fetchone()
    if row is None:
        return
    conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
    _pending(conn, doc_id)
    _gc_content(conn, row[0])


def lexically_pending(conn: apsw.Connection, ids: Sequence[int]) -> set[int]:
    """Which of these documents were written since the lexical index last committed them:
    what it matched them by may be their text before."""
    if not ids:
        return set()
    sql = "SELECT doc_id FROM lexical_pending WHERE doc_id IN (SELECT value FROM json_each(?))"
    return {r[0] for r in conn.execute(sql, (json.dumps(list(ids)),))}


def _pending(conn: apsw.Connection, doc_id: int) -> None:
    """The lexical index must take this document again (or drop it)."""
    conn.execute("INSERT OR IGNORE INTO lexical_pending(doc_id) VALUES (?)", (doc_id,))


def _gc_content(conn: apsw.Connection, mirror_hash: str) -> None:
    """Drop content (and, by cascade, its chunks) once no document points at it."""
    conn.execute(
        "DELETE FROM content WHERE mirror_hash = ? AND NOT EXISTS (SELECT 1 FROM documents WHERE mirror_hash = ?)",
        (mirror_hash, mirror_hash),
    )


def record_error(
    conn: apsw.Connection,
    collection_id: int,
    rel_path: str,
    code: str,
    reason: str,
    size: int,
    mtime_ns: int,
    inode: int,
) -> None:
    """Remember why a file failed (and its stat, so an unchanged failure is not retried).
    The same failure again is left as it was, from when it was first recorded: a run
    that finds nothing new writes nothing (store.kept)."""
    conn.execute(
        "INSERT INTO ingest_errors(collection_id, rel_path, code, reason, size, mtime_ns, inode, at) "
        "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(collection_id, rel_path) DO UPDATE SET "
        "code=excluded.code, reason=excluded.reason, size=excluded.size, "
        "mtime_ns=excluded.mtime_ns, inode=excluded.inode, at=excluded.at "
        "WHERE (code, reason, size, mtime_ns, inode) "
        "IS NOT (excluded.code, excluded.reason, excluded.size, excluded.mtime_ns, excluded.inode)",
        (collection_id, rel_path, code, reason, size, mtime_ns, inode, int(time.time())),
    )


def clear_errors(conn: apsw.Connection, collection_id: int, rel_paths: Iterable[str]) -> None:
    conn.executemany(
        "DELETE FROM ingest_errors WHERE collection_id = ? AND rel_path = ?",
        [(collection_id, p) for p in rel_paths],
    )


# --- reads ---------------------------------------------------------------------------

_DOC_FIELDS = (
    "d.id, c.name, c.path, d.rel_path, d.title, d.language, d.mirror_hash, d.size, d.mtime_ns, d.metadata, "
    "d.line_shifts"
)
_DOC_FROM = "documents d JOIN collections c ON c.id = d.collection_id"
_DOC_COLUMNS = f"{_DOC_FIELDS} FROM {_DOC_FROM}"


def _doc(row: Sequence[Any]) -> DocRow:
    return DocRow(*row)


def docs_by_ids(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, DocRow]:
    if not ids:
        return {}
    among, values = in_list(ids)
    return {r[0]: _doc(r) for r in conn.execute(f"SELECT {_DOC_COLUMNS} WHERE d.id IN {among}", values)}


def docs_with_contents(
    conn: apsw.Connection, ids: Sequence[int], read: bool = True
) -> dict[int, tuple[DocRow, str | bytes | None, int]]:
    """Documents by id, each with its canonical Markdown as stored (for `unpack` or
    `pieces`) and the line its body starts on (None, 0 if its content is missing, or not
    `read`): a search's hits in one statement, since after every commit each statement
    reads its pages afresh."""
    if not ids:
        return {}
    among, values = in_list(ids)
    if read:
        columns = "ct.markdown, ct.body_line"
        tables = f"{_DOC_FROM} LEFT JOIN content ct ON ct.mirror_hash = d.mirror_hash"
    else:
        columns, tables = "NULL, 0", _DOC_FROM
    rows = conn.execute(f"SELECT {_DOC_FIELDS}, {columns} FROM {tables} WHERE d.id IN {among}", values)
    return {r[0]: (_doc(r[:-2]), r[-2], r[-1] or 0) for r in rows}


def doc_by_path(conn: apsw.Connection, collection: str, rel_path: str) -> DocRow | None:
    row = conn.execute(f"SELECT {_DOC_COLUMNS} WHERE c.name = ? AND d.rel_path = ?", (collection, rel_path)).fetchone()
    return _doc(row) if row else None


def _doc_at(conn: apsw.Connection, collection_id: int, rel_path: str) -> DocRow | None:
    """The document at `rel_path` in a collection: one lookup in its (collection, path) index."""
    row = conn.execute(
        f"SELECT {_DOC_COLUMNS} WHERE d.collection_id = ? AND d.rel_path = ?", (collection_id, rel_path)
    ).fetchone()
    return _doc(row) if row else None


def docs_by_rel_path(conn: apsw.Connection, rel_path: str) -> list[DocRow]:
    """The documents at `rel_path` inside each collection that has one, by collection name."""
    ids = [cid for (cid,) in conn.execute("SELECT id FROM collections ORDER BY name").fetchall()]
    return [doc for cid in ids if (doc := _doc_at(conn, cid, rel_path)) is not None]


def doc_by_abs_path(conn: apsw.Connection, abs_path: str) -> DocRow | None:
    for cid, root in collection_paths(conn).items():
        prefix = root.rstrip("/") + "/"
        if abs_path.startswith(prefix) and (doc := _doc_at(conn, cid, abs_path[len(prefix) :])) is not None:
            return doc
    return None


def _doc_filter(
    collection: str | None, prefix: str, passing: tuple[str, list[Any]] | None = None
) -> tuple[str, list[Any]]:
    """The WHERE clause of a listing: a collection's documents (or all), those under
    `prefix` as a range of the (collection, path) index, not a test of every path
    (65k documents: 8 ms for none), and those `passing` a condition (list_docs)."""
    sql, args = " WHERE 1=1", list[object]()
    if passing is not None:
        sql += f" AND ({passing[0]})"
        args += passing[1]
    if collection is not None:
        sql += " AND c.name = ?"
        args.append(collection)
    if prefix:
        if collection is None:  # each collection's range (SQLite would rather scan every path)
            sql += " AND d.collection_id IN (SELECT id FROM collections)"
        after = _after_prefix(prefix)
        if after is not None:
            sql += " AND d.rel_path >= ? AND d.rel_path < ?"
            args += [prefix, after]
        else:
            sql += " AND d.rel_path >= ? AND substr(d.rel_path, 1, ?) = ?"
            args += [prefix, len(prefix), prefix]
    return sql, args


def _after_prefix(prefix: str) -> str | None:
    """The least string after every string that starts with `prefix`, in SQLite's order
    (the code points'): its last character's successor; None past the last one."""
    last = ord(prefix[-1]) + 1
    if last > 0x10FFFF:
        return None
    if 0xD800 <= last <= 0xDFFF:  # surrogates are not characters: the next one is
        last = 0xE000
    return prefix[:-1] + chr(last)


def list_docs(
    conn: apsw.Connection,
    collection: str | None,
    prefix: str,
    limit: int,
    offset: int,
    passing: tuple[str, list[Any]] | None = None,
) -> list[DocRow]:
    """`passing`: an SQL condition over `d` and `c` with its arguments (filters.where). A
    mailbox's messages (`prefix` its `path.mbox!/`) in their order, 2.eml before 10.eml."""
    where, args = _doc_filter(collection, prefix, passing)
    numbered = prefix.endswith(MEMBER_SEP) and prefix[: -len(MEMBER_SEP)].lower().endswith(MAILBOX_SUFFIXES)
    order = "c.name, length(d.rel_path), d.rel_path" if numbered else "c.name, d.rel_path"
    sql = f"SELECT {_DOC_COLUMNS}{where} ORDER BY {order} LIMIT ? OFFSET ?"
    return [_doc(r) for r in conn.execute(sql, [*args, limit, offset])]


def any_passing(conn: apsw.Connection, sql: str, args: list[Any]) -> bool:
    """Whether a document passes the SQL condition `sql` over `d` and `c` (filters.where)."""
    return conn.execute(f"SELECT 1 FROM {_DOC_FROM} WHERE {sql} LIMIT 1", args).fetchone() is not None


def paths_named(conn: apsw.Connection, collection: str, name: str, limit: int) -> list[str]:
    """Up to `limit` paths of the collection's documents whose file is named `name`."""
    rows = conn.execute(
        "SELECT d.rel_path FROM documents d JOIN collections c ON c.id = d.collection_id "
        "WHERE c.name = ? AND (d.rel_path = ? OR substr(d.rel_path, -?) = ?) ORDER BY d.rel_path LIMIT ?",
        (collection, name, len(name) + 1, "/" + name, limit),
    )
    return [r[0] for r in rows]


def count_docs(
    conn: apsw.Connection, collection: str | None, prefix: str, passing: tuple[str, list[Any]] | None = None
) -> int:
    where, args = _doc_filter(collection, prefix, passing)
    sql = f"SELECT count(*) FROM documents d JOIN collections c ON c.id = d.collection_id{where}"
    n: int = conn.execute(sql, args).fetchone()[0]
    return n


def list_folder(
    conn: apsw.Connection, collection: str | None, folder: str, limit: int, offset: int
) -> tuple[list[tuple[str, str, int]], list[DocRow], int]:
    """One level of a folder (`folder` ends with "/", or is "" for a collection's top):
    the folders right in it as (collection, path ending with "/", documents under it),
    and up to `limit` of the documents directly in it, with how many there are. It
    seeks from entry to entry along the (collection, path) index and counts a folder's
    documents as a range of it, so a folder of 16,000 documents is one count, not 16,000
    rows read (the kernel tree's top: 170–400 ms by reading every path, a few ms so)."""
    names = "SELECT id, name FROM collections" + (" WHERE name = ?" if collection is not None else "")
    first = "SELECT id, rel_path FROM documents WHERE collection_id = ? AND rel_path {} ? ORDER BY rel_path LIMIT 1"
    count = "SELECT count(*) FROM documents WHERE collection_id = ? AND rel_path >= ? AND rel_path < ?"
    folders: list[tuple[str, str, int]] = []
    ids: list[int] = []
    total = 0
    for cid, name in sorted(conn.execute(names, [collection] if collection is not None else []), key=lambda r: r[1]):
        at, op = folder, ">="
        while (row := conn.execute(first.format(op), (cid, at)).fetchone()) and row[1].startswith(folder):
            docid, path = row
            cut = path.find("/", len(folder))
            if cut < 0:  # a document directly in the folder
                if offset <= total < offset + limit:
                    ids.append(docid)
                total += 1
                at, op = path, ">"
                continue
            sub = path[: cut + 1]
            after = _after_prefix(sub)
            assert after is not None  # sub ends with "/", which has a successor
            folders.append((name, sub, conn.execute(count, (cid, sub, after)).fetchone()[0]))
            at, op = after, ">="
    among, values = in_list(ids)
    rows = [
        _doc(r)
        for r in conn.execute(f"SELECT {_DOC_COLUMNS} WHERE d.id IN {among} ORDER BY c.name, d.rel_path", values)
    ]
    return folders, rows, total


def ids_at_top(conn: apsw.Connection, name: str) -> list[int]:
    """The documents named `name` at a collection's top (one lookup of the (collection,
    path) index each)."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT d.id FROM collections c JOIN documents d ON d.collection_id = c.id AND d.rel_path = ?", (name,)
        )
    ]


def ids_by_path_glob(conn: apsw.Connection, glob: str, limit: int) -> list[int]:
    """Up to `limit` ids of the documents whose path matches `glob` (SQLite's GLOB), by
    one pass over the (collection, path) index: SQLite tests a path in C."""
    return [r[0] for r in conn.execute("SELECT id FROM documents WHERE rel_path GLOB ? LIMIT ?", (glob, limit))]


def chunks_of(conn: apsw.Connection, mirror_hash: str) -> list[tuple[int, int, str, int, int]]:
    """(id, seq, text, start_line, end_line) of a content's chunks, in order."""
    contents = Contents(conn)
    return [
        (i, seq, contents.span(mirror_hash, pos, length), start, end)
        for i, seq, pos, length, start, end in conn.execute(
            "SELECT cc.id, cc.seq, cc.pos, cc.length, cc.start_line, cc.end_line FROM content_chunks cc "
            "JOIN content ct ON ct.id = cc.content_id WHERE ct.mirror_hash = ? ORDER BY cc.seq",
            (mirror_hash,),
        ).fetchall()
    ]


def content_of(conn: apsw.Connection, mirror_hash: str) -> tuple[str, int] | None:
    """(canonical Markdown, line where its body starts)."""
    row = conn.execute("SELECT markdown, body_line FROM content WHERE mirror_hash = ?", (mirror_hash,)).fetchone()
    return (unpack(row[0]), row[1]) if row else None


def copies_of(conn: apsw.Connection, doc: DocRow, limit: int) -> list[tuple[str, str]]:
    """(collection, path) of up to `limit` other documents with `doc`'s text, in order."""
    rows = conn.execute(
        "SELECT c.name, d.rel_path FROM documents d JOIN collections c ON c.id = d.collection_id "
        "WHERE d.mirror_hash = ? AND d.id != ? ORDER BY c.name, d.rel_path LIMIT ?",
        (doc.mirror_hash, doc.id, limit),
    )
    return [(r[0], r[1]) for r in rows]


def section_markup(rel_path: str) -> str | None:
    """How the headings that name a document's passages are marked (text.headings): a
    converted document's text is Markdown (a PDF's `## Page 2`, a slide's title; a gzip
    file's is the file's it holds: a log's has none); a Markdown, reStructuredText or Org
    file's own; None for any other (code's `# comment` is no heading)."""
    inner = uncompressed(rel_path)
    return MARKDOWN if converted(inner) else markup(extension(inner))


def section_label(doc: DocRow, text: str, line: int) -> str | None:
    """The section the document's stored `line` (of its stored `text`) is in, which a
    passage of it is cited by (section_markup); None in a document of no headings, and
    for the section its title heads (a mail's subject, a page's title: each hit said it
    twice)."""
    marked = section_markup(doc.rel_path)
    found = section_of(text, line, marked) if marked is not None else None
    return None if found == doc.title else found


def section_at(conn: apsw.Connection, doc: DocRow, line: int) -> str | None:
    """section_label, the document's text read here (only where it has headings)."""
    if section_markup(doc.rel_path) is None:
        return None
    found = content_of(conn, doc.mirror_hash)
    return section_label(doc, found[0], line) if found is not None else None


# Content is stored zstd-compressed: ~5× smaller for source code and prose, read back at
# about 1 GB/s (a 300 KB file in 0.3 ms), so snippets and `get` barely notice. The kernel
# tree's 1,289 MB of text: 252.7 MB at level 3 in 4.0 CPU-s, 247.6 at 4 in 5.6, 238.3 at
# 5 in 8.4 (its ingest takes ~125 CPU-s); reading back is as fast at any of them.
PACK_LEVEL = 4
PACK_BATCH = 500  # rows of old uncompressed content packed per writer job


class Contents:
    """Spans of stored contents, each content read and decompressed once (the chunks
    of a batch share a few documents)."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn
        self._texts: dict[str, str] = {}

    def span(self, mirror_hash: str, pos: int, length: int) -> str:
        text = self._texts.get(mirror_hash)
        if text is None:
            content = content_of(self.conn, mirror_hash)
            text = self._texts[mirror_hash] = content[0] if content else ""
        return text[pos : pos + length]


# A (de)compressor per thread: one is not safe to share, and making one per call costs
# as much as decompressing a small document.
_zstd = threading.local()


def compress(data: bytes) -> bytes:
    """`data` as the index stores blobs (zstd, PACK_LEVEL)."""
    if not hasattr(_zstd, "compressor"):
        _zstd.compressor = zstandard.ZstdCompressor(level=PACK_LEVEL)
    packed: bytes = _zstd.compressor.compress(data)
    return packed


def decompress(blob: bytes) -> bytes:
    if not hasattr(_zstd, "decompressor"):
        _zstd.decompressor = zstandard.ZstdDecompressor()
    raw: bytes = _zstd.decompressor.decompress(blob)
    return raw


def pack(markdown: str) -> bytes:
    return compress(markdown.encode("utf-8"))


def unpack(stored: str | bytes) -> str:
    """content.markdown as written: zstd bytes (pack), or text from before compression."""
    return stored if isinstance(stored, str) else decompress(stored).decode("utf-8")


def unpack_utf8(stored: str | bytes) -> bytes:
    """`unpack(stored)` as UTF-8, not decoded: a scan of a long text for ASCII words
    needs no str of it (`search --symbol interrupt` reads 72 MB of register maps)."""
    return stored.encode("utf-8") if isinstance(stored, str) else decompress(stored)


def pieces(stored: str | bytes, size: int) -> Iterator[str]:
    """`unpack(stored)` a piece at a time, each piece the text's next lines through the
    one that holds its `size`-th byte of UTF-8: reading a long text's start does not
    decompress the rest of it. Text stored before compression comes whole."""
    if isinstance(stored, str) or zstandard.frame_content_size(stored) <= size:
        yield unpack(stored)
        return
    # A reader of its own: this one may be left half-read while the thread's decompresses others.
    reader = zstandard.ZstdDecompressor().stream_reader(stored)
    held: list[bytes] = []  # the piece so far (a line longer than a piece: chunk after chunk)
    length = 0
    while chunk := reader.read(size):
        cut = chunk.find(b"\n", max(size - 1 - length, 0)) + 1
        if not cut:
            held.append(chunk)
            length += len(chunk)
            continue
        held.append(chunk[:cut])
        yield b"".join(held).decode("utf-8")
        held = [chunk[cut:]]
        length = len(held[0])
    if length:
        yield b"".join(held).decode("utf-8")


def head(stored: str | bytes, size: int, least: int) -> str | None:
    """The first lines of a stored text of at least `least` bytes, through the one that
    holds its `size`-th byte (without that line's break), decompressed without the rest;
    None for a shorter text, or one stored before compression (its text is whole already)."""
    if isinstance(stored, str) or zstandard.frame_content_size(stored) < least:
        return None
    return next(pieces(stored, size), "").removesuffix("\n")


def pack_old_content(conn: apsw.Connection, after: int) -> tuple[int, int] | None:
    """Compress up to PACK_BATCH rows of content stored as text (by gno before
    compression), from rowid `after` on; returns (the last rowid done, rows done), None
    when none was left. Call inside a transaction."""
    rows = conn.execute(
        "SELECT rowid, markdown FROM content WHERE rowid > ? AND typeof(markdown) = 'text' ORDER BY rowid LIMIT ?",
        (after, PACK_BATCH),
    ).fetchall()
    for rowid, markdown in rows:
        conn.execute("UPDATE content SET markdown = ? WHERE rowid = ?", (pack(markdown), rowid))
    return (rows[-1][0], len(rows)) if rows else None


def index_languages(conn: apsw.Connection) -> list[str | None]:
    return [r[0] for r in conn.execute("SELECT DISTINCT language FROM documents")]


def unsure_documents(conn: apsw.Connection, collection_id: int, language: str | None) -> list[int]:
    """The ids of the collection's documents whose language was a guess and is not `language`
    (as ranges of the index of guesses on each side of it: none, after the first settling)."""
    if language is None:
        return [
            r[0]
            for r in conn.execute(
                "SELECT id FROM documents WHERE collection_id = ? AND language_confident = 0 AND language IS NOT NULL",
                (collection_id,),
            )
        ]
    return [
        r[0]
        for r in conn.execute(
            "SELECT id FROM documents WHERE collection_id = ?1 AND language_confident = 0 AND language < ?2 "
            "UNION ALL SELECT id FROM documents WHERE collection_id = ?1 AND language_confident = 0 "
            "AND language > ?2 "
            "UNION ALL SELECT id FROM documents WHERE collection_id = ?1 AND language_confident = 0 "
            "AND language IS NULL",
            (collection_id, language),
        )
    ]


def restem_document(conn: apsw.Connection, doc_id: int, language: str | None) -> None:
    """Give a document another language: the lexical index re-stems it in that one."""
    conn.execute("UPDATE documents SET language = ?, other_languages = '' WHERE id = ?", (language, doc_id))
    _pending(conn, doc_id)


def lexical_sources(conn: apsw.Connection, ids: Sequence[int], packed: bool = False) -> list[tuple[Any, ...]]:
    """(id, rel_path, title, metadata, markdown, body_line, language, other_languages) of
    these documents: what their lexical text is derived from. `packed`: the markdown as
    stored (`unpack` gives the text), a quarter of its size to send to another process."""
    rows = conn.execute(
        "SELECT d.id, d.rel_path, d.title, d.metadata, c.markdown, c.body_line, d.language, d.other_languages "
        "FROM documents d JOIN content c ON c.mirror_hash = d.mirror_hash "
        "WHERE d.id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ids)),),
    ).fetchall()
    return [tuple(r) for r in rows] if packed else [(*r[:4], unpack(r[4]), *r[5:]) for r in rows]


def body_of(markdown: str, body_line: int) -> str:
    """A stored text's body: its lines from `body_line` on (after its frontmatter)."""
    return "\n".join(markdown.split("\n")[body_line - 1 :])


def path_in(globs: Sequence[str]) -> str:
    """SQL over `documents d`: its path in lower case matches one of `globs` (their args)."""
    return " OR ".join(["lower(d.rel_path) GLOB ?"] * len(globs))


def titled_sources(
    conn: apsw.Connection, globs: Sequence[str], after: int, limit: int
) -> list[tuple[int, int, str, str, str, str, int]]:
    """(id, collection id, rel_path, title, metadata, markdown, body_line) of up to
    `limit` documents whose path in lower case matches one of `globs`, from id `after`
    on, by id: what a title is taken from."""
    rows = conn.execute(
        "SELECT d.id, d.collection_id, d.rel_path, d.title, d.metadata, c.markdown, c.body_line "
        "FROM documents d JOIN content c ON c.mirror_hash = d.mirror_hash "
        f"WHERE d.id > ? AND ({path_in(globs)}) ORDER BY d.id LIMIT ?",
        [after, *globs, limit],
    ).fetchall()
    return [(*r[:5], unpack(r[5]), r[6]) for r in rows]


def collection_paths(conn: apsw.Connection) -> dict[int, str]:
    """Each collection's folder, by its id."""
    return dict(conn.execute("SELECT id, path FROM collections").fetchall())


def set_title(conn: apsw.Connection, doc_id: int, title: str) -> None:
    """Give a document another title; the lexical index takes it again (its title is indexed)."""
    conn.execute("UPDATE documents SET title = ? WHERE id = ?", (title, doc_id))
    _pending(conn, doc_id)


def read_before(conn: apsw.Connection, rules: int) -> Iterator[tuple[int, int, str, int, int, int]]:
    """(id, collection id, rel_path, body line, read rules, content rowid) of each
    document read by rules older than `rules` (gnod.ingest.reread)."""
    yield from conn.execute(
        "SELECT d.id, d.collection_id, d.rel_path, c.body_line, d.read_rules, c.rowid "
        "FROM documents d JOIN content c ON c.mirror_hash = d.mirror_hash WHERE d.read_rules < ?",
        (rules,),
    )


def stored_utf8(conn: apsw.Connection, content_id: int) -> bytes:
    """The stored text of a content row (by rowid), as UTF-8 (unpack_utf8)."""
    row = conn.execute("SELECT markdown FROM content WHERE rowid = ?", (content_id,)).fetchone()
    return unpack_utf8(row[0]) if row else b""


def read_by(conn: apsw.Connection, ids: Sequence[int], rules: int) -> None:
    """Record that these documents are as `rules` read them (nothing in them changes)."""
    conn.execute(
        "UPDATE documents SET read_rules = ? WHERE id IN (SELECT value FROM json_each(?))",
        (rules, json.dumps(list(ids))),
    )


def failing(conn: apsw.Connection, doc_ids: Sequence[int]) -> list[tuple[str, str, str]]:
    """(collection, rel_path, error code) of those of the documents whose file failed to be
    read since it was indexed (their last good text stays indexed), or whose archive or
    mailbox did; nothing read where no file failed."""
    if not doc_ids or conn.execute("SELECT NOT EXISTS(SELECT 1 FROM ingest_errors)").fetchone()[0]:
        return []
    rows = conn.execute(
        "SELECT c.name, d.rel_path, e.code FROM documents d JOIN collections c ON c.id = d.collection_id "
        "JOIN ingest_errors e ON e.collection_id = d.collection_id "
        "AND e.rel_path IN (d.rel_path, substr(d.rel_path, 1, instr(d.rel_path, ?) - 1)) "
        "WHERE d.id IN (SELECT value FROM json_each(?))",
        (MEMBER_SEP, json.dumps(list(doc_ids))),
    )
    return [(str(c), str(rel), str(code)) for c, rel, code in rows]


def failed_paths(conn: apsw.Connection) -> list[tuple[int, str]]:
    """(collection id, rel_path) of every file that failed."""
    return [(int(cid), str(rel)) for cid, rel in conn.execute("SELECT collection_id, rel_path FROM ingest_errors")]


def read_again(conn: apsw.Connection, ids: Sequence[int], files: Iterable[tuple[int, str]]) -> None:
    """Make the next walk read these documents again, and the `files` (collection id,
    rel_path: whole files, containers whose members all go) that failed or hold them:
    a stat no file has, and no source hash to find the same bytes by."""
    conn.execute(
        "UPDATE documents SET inode = -1, source_hash = '' WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ids)),),
    )
    for cid, rel in files:
        conn.execute("UPDATE ingest_errors SET inode = -1 WHERE collection_id = ? AND rel_path = ?", (cid, rel))
        prefix = rel + MEMBER_SEP
        conn.execute(
            "UPDATE documents SET inode = -1 WHERE collection_id = ? AND substr(rel_path, 1, ?) = ?",
            (cid, len(prefix), prefix),
        )


def read_collection_again(conn: apsw.Connection, collection: str) -> None:
    """Make the next walk read every file of the collection again (read_again's mark), its
    failed ones too: its language changed, which each document's stems were made in."""
    cid = collection_ids(conn).get(collection)
    if cid is not None:
        conn.execute("UPDATE documents SET inode = -1, source_hash = '' WHERE collection_id = ?", (cid,))
        conn.execute("UPDATE ingest_errors SET inode = -1 WHERE collection_id = ?", (cid,))


def meta_value(conn: apsw.Connection, key: str) -> str | None:
    """A value the index keeps about itself (schema_meta), None where unset."""
    row = conn.execute("SELECT value FROM schema_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta_value(conn: apsw.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO schema_meta(key, value) VALUES (?, ?) ON CONFLICT DO UPDATE SET value = ?", (key, value, value)
    )


def language_counts(conn: apsw.Connection) -> dict[str | None, int]:
    """Documents per language, counting a document once more for each other language
    some of its blocks were stemmed in: how much of the index each language holds."""
    counts: dict[str | None, int] = {}
    for language, others, n in conn.execute(
        "SELECT language, other_languages, sum(n) FROM language_counts GROUP BY 1, 2 HAVING sum(n) > 0"
    ):
        for lang in [language or None, *others.split()]:
            counts[lang] = counts.get(lang, 0) + n
    return counts


def dominant_language(conn: apsw.Connection, collection_id: int) -> tuple[str | None, float]:
    """The language most of a collection's documents are in, and its share of them."""
    rows = conn.execute(
        "SELECT language, sum(n) AS total FROM language_counts WHERE collection_id = ? "
        "GROUP BY language HAVING total > 0 ORDER BY total DESC",
        (collection_id,),
    ).fetchall()
    total = sum(n for _, n in rows)
    return (rows[0][0] or None, rows[0][1] / total) if total else (None, 0.0)


def collection_stats(conn: apsw.Connection) -> list[tuple[Any, ...]]:
    """(name, path, language, documents, errors, last_indexed_at) per collection."""
    return list(
        conn.execute(
            "SELECT c.name, c.path, c.language, "
            "(SELECT count(*) FROM documents d WHERE d.collection_id = c.id), "
            "(SELECT count(*) FROM ingest_errors e WHERE e.collection_id = c.id), "
            "(SELECT max(indexed_at) FROM documents d WHERE d.collection_id = c.id) "
            "FROM collections c ORDER BY c.name"
        )
    )


def error_count(conn: apsw.Connection) -> int:
    """The ingest errors held, of every collection."""
    return int(conn.execute("SELECT count(*) FROM ingest_errors").fetchone()[0])


def recent_errors(conn: apsw.Connection, collection: str | None, limit: int) -> list[tuple[Any, ...]]:
    sql = (
        "SELECT c.name, e.rel_path, e.code, e.reason, e.at FROM ingest_errors e "
        "JOIN collections c ON c.id = e.collection_id"
    )
    args: list[Any] = []
    if collection is not None:
        sql += " WHERE c.name = ?"
        args.append(collection)
    sql += " ORDER BY e.at DESC LIMIT ?"
    args.append(limit)
    return list(conn.execute(sql, args))
