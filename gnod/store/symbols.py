"""The definitions found in source code, per content, and which contents define a name.

A parsed content has one row of `content_symbols` (its definitions, packed) even when
it defines nothing, which marks it parsed; `symbol_names` (FTS5, rowid = content id,
no positions) maps each defined name to the contents that define it. That layout costs
the kernel tree ~45 MB for its 1.5 million definitions, where a row per definition with
its two indexes cost ~100 MB for fewer. Both go with their content (a foreign-key
cascade and a trigger).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import apsw
import msgspec

from gnod.ingest.symbols import GRAMMARS, Symbol, display, grammar_for, path_globs, stamp
from gnod.store.db import in_list
from gnod.store.documents import compress, decompress, path_in

# How a content parsed today is marked, per grammar: others are parsed again.
_STAMPS = sorted({stamp(g) for g in GRAMMARS.values()})
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(list[Symbol])  # built in C: 3× faster than Symbol(*row) per row


class Defined(NamedTuple):
    """A definition of a looked-up name, with the document it is in."""

    doc_id: int
    rel_path: str
    symbol: Symbol


def _pack(symbols: Sequence[Symbol]) -> bytes:
    return compress(_encoder.encode(symbols))


def _unpack(blob: bytes) -> list[Symbol]:
    return _decoder.decode(decompress(blob))


# The characters outside ASCII whose case folds to ASCII letters (ß → ss, K → k, ﬁ → fi),
# in UTF-8: a name holding one may fold to an ASCII name its bytes do not show.
FOLDS_TO_ASCII = "\u00df\u017f\u1e9e\u212a\ufb00\ufb01\ufb02\ufb03\ufb04\ufb05\ufb06"
_FOLDS_TO_ASCII = re.compile(b"|".join(re.escape(c.encode()) for c in FOLDS_TO_ASCII))


def _needles(wanted: set[str], prefix: bool) -> list[bytes]:
    """What the packed symbols of a content defining one of the `wanted` names (case
    folded) hold, their ASCII letters lowercased: each name as the encoder writes a
    string, its length first (for a `prefix`, its letters alone). None where a name is
    not ASCII (its case folds otherwise than its bytes'): every content is decoded."""
    if not all(map(str.isascii, wanted)):
        return []
    return [w.encode() if prefix else _encoder.encode(w).lower() for w in wanted]


def _may_hold(packed: bytes, needles: list[bytes]) -> bool:
    """Whether a content's packed symbols may define a name of `needles` (_needles): a
    word used often (`usb`) is a term of many contents' names that are not it (61 of the
    100 contents its lookup reads), whose symbols need no decoding (2.8 → 2.5 ms)."""
    lowered = packed.lower()
    return any(n in lowered for n in needles) or _FOLDS_TO_ASCII.search(packed) is not None


def backlog(conn: apsw.Connection, since: int | None = None) -> list[tuple[int, str]]:
    """(content id, grammar) of each content a document in a parsed language points at
    and that was not parsed yet, or by an older extraction, oldest first. `since`: only
    documents indexed from then on (unix seconds; per collection, through its index).
    The scan is SQLite's (no GIL held): only the rows due come back to Python."""
    globs = path_globs()
    sql = (
        "SELECT ct.id, d.rel_path FROM documents d JOIN content ct ON ct.mirror_hash = d.mirror_hash "
        "LEFT JOIN content_symbols s ON s.content_id = ct.id "
        f"WHERE (s.grammar IS NULL OR s.grammar NOT IN ({','.join('?' * len(_STAMPS))})) AND ({path_in(globs)})"
    )
    args: list[Any] = [*_STAMPS, *globs]
    if since is None:
        rows = list(conn.execute(sql, args))
    else:
        sql += " AND d.collection_id = ? AND d.indexed_at >= ?"
        ids = [r[0] for r in conn.execute("SELECT id FROM collections")]
        rows = [row for cid in ids for row in conn.execute(sql, [*args, cid, since])]
    pending: dict[int, str] = {}
    for content_id, rel_path in rows:
        grammar = grammar_for(rel_path)
        if grammar is not None:
            pending.setdefault(content_id, grammar)
    return sorted(pending.items())


def sources(conn: apsw.Connection, items: Sequence[tuple[int, str]]) -> list[tuple[int, str, bytes | str]]:
    """(content id, grammar, stored markdown) for the parser; contents gone meanwhile are left out."""
    grammar = dict(items)
    among, values = in_list([i for i, _ in items])
    rows = conn.execute(f"SELECT id, markdown FROM content WHERE id IN {among}", values)
    return [(content_id, grammar[content_id], stored) for content_id, stored in rows]


def put(conn: apsw.Connection, parsed: Iterable[tuple[int, str, list[Symbol]]]) -> int:
    """Store each content's definitions (a content deleted since it was read is skipped);
    returns how many contents were stored."""
    stored = 0
    with conn:
        for content_id, grammar, symbols in parsed:
            if conn.execute("SELECT 1 FROM content WHERE id = ?", (content_id,)).fetchone() is None:
                continue
            conn.execute("DELETE FROM content_symbols WHERE content_id = ?", (content_id,))
            conn.execute(
                "INSERT INTO content_symbols(content_id, grammar, symbols) VALUES (?, ?, ?)",
                (content_id, stamp(grammar), _pack(symbols)),
            )
            names = " ".join(dict.fromkeys(s.name for s in symbols))
            if names:
                conn.execute("INSERT INTO symbol_names(rowid, names) VALUES (?, ?)", (content_id, names))
            stored += 1
    return stored


def counts(conn: apsw.Connection) -> int:
    """Contents parsed so far by today's extraction."""
    sql = f"SELECT count(*) FROM content_symbols WHERE grammar IN ({','.join('?' * len(_STAMPS))})"
    n: int = conn.execute(sql, _STAMPS).fetchone()[0]
    return n


def of_documents(conn: apsw.Connection, docs: Iterable[tuple[str, str]]) -> dict[str, list[Symbol]]:
    """The definitions of documents given as (rel_path, mirror_hash), by mirror hash, in
    the order they start; a file in no parsed language, or not parsed yet, has none. One
    statement for a search's hits (one each was ~0.16 ms of a ~4 ms search on the kernel tree)."""
    wanted = list(dict.fromkeys(h for rel_path, h in docs if grammar_for(rel_path) is not None))
    if not wanted:
        return {}
    among, values = in_list(wanted)
    rows = conn.execute(
        "SELECT ct.mirror_hash, s.symbols FROM content_symbols s JOIN content ct ON ct.id = s.content_id "
        f"WHERE ct.mirror_hash IN {among}",
        values,
    )
    return {mirror_hash: _unpack(blob) for mirror_hash, blob in rows}


def label(symbols: Sequence[Symbol], start: int, end: int) -> str | None:
    """How to name where lines start..end are: the innermost definition around `start`,
    else the first one that begins among them (a passage from a file's top)."""
    around = None
    for s in symbols:
        if s.start_line > start:
            if around is None and s.start_line <= end:
                around = s
            break
        if s.end_line >= start:
            around = s
    return None if around is None else display(around.name, around.kind, around.container)


# A name's terms as symbol_names holds them (its tokenizer's: letters, digits, `_`, `$`).
_TERM = re.compile(r"[\w$]+")


def _fts_name(name: str, prefix: bool) -> str | None:
    """The terms of `name` all held (the last one begun, for a `prefix`), as an FTS5
    query; None for a name of no term. symbol_names keeps no positions (detail=none):
    a name of several terms (`snps,dw-apb-uart`) is no phrase there, and the names found
    are compared whole afterwards."""
    terms = _TERM.findall(name)
    if not terms:
        return None
    quoted = [f'"{t}"' for t in terms]
    if prefix:
        quoted[-1] += "*"
    return "(" + " AND ".join(quoted) + ")"


def _starting(conn: apsw.Connection, prefix: str, limit: int, by_length: bool = False) -> apsw.Cursor:
    """symbol_vocab's rows (name, how many contents define it) of the names starting with
    `prefix` (in lower case, as symbol_names keeps them), at most `limit`, in the names'
    order or (`by_length`) shortest first."""
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    order = "ORDER BY length(term), term " if by_length else ""
    return conn.execute(
        f"SELECT term, doc FROM symbol_vocab WHERE term >= ? AND term < ? {order}LIMIT ?", (prefix, upper, limit)
    )


def names_starting(conn: apsw.Connection, prefix: str, cap: int) -> list[str] | None:
    """The names defined that start with `prefix` (in lower case), in order; None where
    more than `cap` do (a prefix that says too little), found by reading `cap` of them."""
    rows = _starting(conn, prefix, cap + 1).fetchall()
    return None if len(rows) > cap else [name for name, _ in rows]


def contents_starting(conn: apsw.Connection, prefix: str, most: int) -> int:
    """How many contents define a name starting with `prefix` (in lower case), a content
    counted once a name; past `most`, some number above it (its names are not all read)."""
    rows = _starting(conn, prefix, most + 1).fetchall()
    return len(rows) if len(rows) > most else sum(docs for _, docs in rows)


def defined_names(conn: apsw.Connection, names: Sequence[str]) -> dict[str, int]:
    """Those of `names` (in lower case) that some collection defines, each with how many
    contents define it."""
    found: dict[str, int] = {}
    for i in range(0, len(names), 500):  # SQLite's limit on a statement's parameters
        part = names[i : i + 500]
        marks = ",".join("?" * len(part))
        found.update(conn.execute(f"SELECT term, doc FROM symbol_vocab WHERE term IN ({marks})", part).fetchall())
    return found


def names_by_length(conn: apsw.Connection, prefix: str, most: int) -> Iterator[tuple[str, int]]:
    """The `most` shortest names defined that start with `prefix` (in lower case),
    shortest first, each with how many contents define it."""
    yield from _starting(conn, prefix, most, by_length=True)


def lookup(
    conn: apsw.Connection,
    names: Sequence[str],
    prefix: bool,
    where: str,
    args: list[Any],
    cap: int,
    grammar: str | None = None,
) -> list[Defined]:
    """Definitions named any of `names` (any case; `prefix`: names starting with one), in
    documents passing the SQL condition `where` over `documents d` and `collections c`
    (`grammar`: in contents parsed as that grammar); at most `cap` contents are read. A
    document no grammar parses has none, whatever was stored for its content (by an
    older gnod, or under a name it had before)."""
    queries = [q for q in (_fts_name(name, prefix) for name in names) if q is not None]
    if not queries:
        return []
    match = " OR ".join(queries)
    if grammar is not None:  # its stamps, `kconfig/5`: "/" sorts just before "0"
        where, args = f"({where}) AND s.grammar >= ? AND s.grammar < ?", [*args, f"{grammar}/", f"{grammar}0"]
    rows = conn.execute(
        "SELECT d.id, d.rel_path, s.symbols FROM symbol_names n "
        "JOIN content_symbols s ON s.content_id = n.rowid "
        "JOIN content ct ON ct.id = s.content_id "
        "JOIN documents d ON d.mirror_hash = ct.mirror_hash "
        "JOIN collections c ON c.id = d.collection_id "
        f"WHERE symbol_names MATCH ? AND {where} LIMIT ?",
        [match, *args, cap],
    )
    wanted = {name.casefold() for name in names}
    starts = tuple(wanted) if prefix else ()
    needles = _needles(wanted, prefix)
    found: list[Defined] = []
    for doc_id, rel_path, blob in rows:
        if grammar_for(rel_path) is None:
            continue
        packed = decompress(blob)
        if needles and not _may_hold(packed, needles):
            continue
        for s in _decoder.decode(packed):
            folded = s.name.casefold()
            if folded in wanted or folded.startswith(starts):
                found.append(Defined(doc_id, rel_path, s))
    return found
