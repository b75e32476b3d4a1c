"""Chunk vectors in sqlite-vec: one vec0 table per embedding model, keyed by chunk id.

The backlog is what is missing from a model's table (chunks without a vector), so it
survives crashes and restarts by construction; deleted chunks leave tombstones (a
trigger, see migration 0002) that the embedder applies to every model's table.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import apsw
import msgspec
import numpy as np

from gnod.store.db import in_list
from gnod.store.documents import Contents


class VecModel(msgspec.Struct, frozen=True):
    uri: str
    table: str
    dim: int
    complete_at: int | None


def load_extension(conn: apsw.Connection) -> str | None:
    """Load sqlite-vec into this connection; the reason when it cannot be (search degrades)."""
    try:
        import sqlite_vec

        conn.load_extension(sqlite_vec.loadable_path())
        return None
    except Exception as e:  # missing package, unloadable library: vsearch is off, said once
        return f"{type(e).__name__}: {e}"


def table_for(uri: str) -> str:
    return "vec_" + hashlib.sha256(uri.encode()).hexdigest()[:8]


def models(conn: apsw.Connection) -> list[VecModel]:
    return [
        VecModel(*r)
        for r in conn.execute("SELECT uri, table_name, dim, complete_at FROM vec_models ORDER BY created_at")
    ]


def ensure_model(conn: apsw.Connection, uri: str, dim: int) -> VecModel:
    """The model's table, created on first use; a model whose dimension changed starts over."""
    row = conn.execute("SELECT uri, table_name, dim, complete_at FROM vec_models WHERE uri = ?", (uri,)).fetchone()
    if row is not None and row[2] == dim:
        return VecModel(*row)
    table = table_for(uri)
    with conn:
        if row is not None:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute("DELETE FROM vec_models WHERE uri = ?", (uri,))
        conn.execute(f"CREATE VIRTUAL TABLE {table} USING vec0(embedding float[{dim}] distance_metric=cosine)")
        conn.execute(
            "INSERT INTO vec_models(uri, table_name, dim, created_at) VALUES (?, ?, ?, ?)",
            (uri, table, dim, int(time.time())),
        )
    return VecModel(uri, table, dim, None)


def drop_model(conn: apsw.Connection, uri: str) -> bool:
    with conn:
        row = conn.execute("SELECT table_name FROM vec_models WHERE uri = ?", (uri,)).fetchone()
        if row is None:
            return False
        conn.execute(f"DROP TABLE IF EXISTS {row[0]}")
        conn.execute("DELETE FROM vec_models WHERE uri = ?", (uri,))
        if not conn.execute("SELECT 1 FROM vec_models").fetchone():
            conn.execute("DELETE FROM vec_tombstones")
    return True


def set_complete(conn: apsw.Connection, uri: str, complete: bool) -> None:
    conn.execute("UPDATE vec_models SET complete_at = ? WHERE uri = ?", (int(time.time()) if complete else None, uri))


class PendingChunk(msgspec.Struct, frozen=True, array_like=True):
    chunk_id: int
    title: str
    text: str


def pending(conn: apsw.Connection, model: VecModel, after_id: int, limit: int) -> list[PendingChunk]:
    """Chunks without a vector in this model's table, in id order from after_id."""
    rows = conn.execute(
        f"""SELECT cc.id,
                   (SELECT d.title FROM documents d WHERE d.mirror_hash = ct.mirror_hash LIMIT 1),
                   ct.mirror_hash, cc.pos, cc.length
            FROM content_chunks cc JOIN content ct ON ct.id = cc.content_id
            WHERE cc.id > ? AND NOT EXISTS (SELECT 1 FROM {model.table} v WHERE v.rowid = cc.id)
            ORDER BY cc.id LIMIT ?""",
        (after_id, limit),
    ).fetchall()
    contents = Contents(conn)
    return [PendingChunk(i, t or "", contents.span(h, pos, length)) for i, t, h, pos, length in rows]


def counts(conn: apsw.Connection, model: VecModel) -> tuple[int, int]:
    """(chunks, chunks with a vector in this model's table)."""
    total = conn.execute("SELECT count(*) FROM content_chunks").fetchone()[0]
    done = conn.execute(f"SELECT count(*) FROM {model.table}_rowids").fetchone()[0]
    return total, done


def put(conn: apsw.Connection, model: VecModel, ids: Sequence[int], vecs: np.ndarray) -> int:
    """Store vectors for chunks that still exist (one may have gone while it was embedded)."""
    n = 0
    with conn:
        for cid, vec in zip(ids, vecs):
            if conn.execute("SELECT 1 FROM content_chunks WHERE id = ?", (cid,)).fetchone() is None:
                continue
            conn.execute(f"DELETE FROM {model.table} WHERE rowid = ?", (cid,))
            conn.execute(
                f"INSERT INTO {model.table}(rowid, embedding) VALUES (?, ?)",
                (cid, np.ascontiguousarray(vec, dtype=np.float32).tobytes()),
            )
            n += 1
    return n


def apply_tombstones(conn: apsw.Connection) -> list[int]:
    """Delete vectors of deleted chunks from every model's table; returns those chunk ids."""
    ids = [r[0] for r in conn.execute("SELECT chunk_id FROM vec_tombstones")]
    if not ids:
        return []
    with conn:
        for m in models(conn):
            conn.executemany(f"DELETE FROM {m.table} WHERE rowid = ?", ((i,) for i in ids))
        conn.executemany("DELETE FROM vec_tombstones WHERE chunk_id = ?", ((i,) for i in ids))
    return ids


def stored_ids(conn: apsw.Connection, model: VecModel) -> np.ndarray:
    """The chunk ids the model's table holds a vector for, ascending."""
    return np.sort(np.fromiter((r[0] for r in conn.execute(f"SELECT rowid FROM {model.table}_rowids")), dtype=np.int64))


def read_vectors(
    conn: apsw.Connection, model: VecModel, ids: np.ndarray | None, batch: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(chunk ids, vectors) in batches: of `ids` (each read by its rowid), or of every
    vector the table holds (one scan) when `ids` is None."""
    if ids is None:
        rows: Iterable[Any] = conn.execute(f"SELECT rowid, embedding FROM {model.table}")
    else:
        sql = f"SELECT rowid, embedding FROM {model.table} WHERE rowid = ?"
        rows = (r for i in ids.tolist() for r in conn.execute(sql, (i,)))
    while part := list(itertools.islice(rows, batch)):
        vecs = np.frombuffer(b"".join(blob for _, blob in part), dtype=np.float32).reshape(len(part), model.dim)
        yield np.fromiter((cid for cid, _ in part), dtype=np.int64, count=len(part)), vecs


def allowed_chunks(conn: apsw.Connection, condition: str, args: Sequence[Any]) -> np.ndarray:
    """Ids of the chunks of documents passing `condition` over `d` and `c` (the search
    filters, gnod.search.filters.where)."""
    rows = conn.execute(
        f"""SELECT DISTINCT cc.id FROM content_chunks cc
            JOIN content ct ON ct.id = cc.content_id
            JOIN documents d ON d.mirror_hash = ct.mirror_hash
            JOIN collections c ON c.id = d.collection_id
            WHERE {condition}""",
        list(args),
    )
    return np.fromiter((r[0] for r in rows), dtype=np.int64)


class ChunkHit(msgspec.Struct, frozen=True, array_like=True):
    chunk_id: int
    doc_id: int
    collection: str
    seq: int
    start_line: int
    end_line: int
    text: str


def chunk_hits(
    conn: apsw.Connection, chunk_ids: Sequence[int], condition: str = "1", args: Sequence[Any] = ()
) -> list[ChunkHit]:
    """Each chunk with every document that holds it (content is shared) and passes `condition`."""
    if not chunk_ids:
        return []
    among, values = in_list(chunk_ids)
    sql = f"""SELECT cc.id, d.id, c.name, cc.seq, cc.start_line, cc.end_line, ct.mirror_hash, cc.pos, cc.length
              FROM content_chunks cc
              JOIN content ct ON ct.id = cc.content_id
              JOIN documents d ON d.mirror_hash = ct.mirror_hash
              JOIN collections c ON c.id = d.collection_id
              WHERE cc.id IN {among}"""
    contents = Contents(conn)
    return [
        ChunkHit(cid, doc_id, name, seq, start, end, contents.span(h, pos, length))
        for cid, doc_id, name, seq, start, end, h, pos, length in conn.execute(
            f"{sql} AND {condition}", [*values, *args]
        ).fetchall()
    ]
