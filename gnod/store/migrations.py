"""Named, ordered schema migrations; each runs once, in its own transaction.

Append new migrations at the end; never edit or reorder one that has shipped.
"""

from __future__ import annotations

import time

import apsw

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_initial",
        """
        CREATE TABLE collections(
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            path TEXT NOT NULL,
            language TEXT
        );
        -- Rowid tables with the hash in a separate unique index: big text rows are
        -- appended instead of being inserted at random points of a hash-keyed b-tree.
        CREATE TABLE content(
            id INTEGER PRIMARY KEY,
            mirror_hash TEXT NOT NULL UNIQUE,
            markdown TEXT NOT NULL,
            body_line INTEGER NOT NULL,         -- 1-based line where the body starts (after frontmatter)
            created_at INTEGER NOT NULL
        );
        -- A chunk is a span of its content's markdown (text = substr(markdown, pos + 1,
        -- length)): stored once, not twice. Its rowid is its stable id (vectors key on it).
        CREATE TABLE content_chunks(
            id INTEGER PRIMARY KEY,
            mirror_hash TEXT NOT NULL REFERENCES content(mirror_hash) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            pos INTEGER NOT NULL,               -- 0-based character offset in content.markdown
            length INTEGER NOT NULL,            -- in characters
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            UNIQUE(mirror_hash, seq)
        );
        CREATE TABLE documents(
            id INTEGER PRIMARY KEY,
            collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            rel_path TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            inode INTEGER NOT NULL,
            source_hash TEXT NOT NULL,
            mirror_hash TEXT NOT NULL REFERENCES content(mirror_hash),
            title TEXT NOT NULL,
            language TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            indexed_at INTEGER NOT NULL,
            UNIQUE(collection_id, rel_path)
        );
        CREATE INDEX documents_mirror ON documents(mirror_hash);
        CREATE INDEX documents_language ON documents(language);
        CREATE VIRTUAL TABLE documents_fts USING fts5(
            filepath, title, body,
            content='', contentless_delete=1,
            tokenize="unicode61 remove_diacritics 2 categories 'L* N* Co M*'"
        );
        CREATE TABLE ingest_errors(
            collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            rel_path TEXT NOT NULL,
            code TEXT NOT NULL,
            reason TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            inode INTEGER NOT NULL,
            at INTEGER NOT NULL,
            PRIMARY KEY(collection_id, rel_path)
        ) WITHOUT ROWID;
        INSERT INTO schema_meta(key, value) VALUES ('fts_tokenizer', 'gno-snowball-v1');
        """,
    ),
    (
        "0002_vectors",
        """
        -- One sqlite-vec table per embedding model (vec_<sha256(uri)[:8]>), created when
        -- the model is first used; its rowids are content_chunks ids. A model becomes
        -- the one vsearch serves once its backlog was empty (complete_at).
        CREATE TABLE vec_models(
            uri TEXT PRIMARY KEY,
            table_name TEXT NOT NULL UNIQUE,
            dim INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            complete_at INTEGER
        );
        -- Chunks deleted since the embedder last looked: their vectors must go too.
        -- A plain trigger, so deleting never needs the sqlite-vec extension loaded.
        CREATE TABLE vec_tombstones(chunk_id INTEGER PRIMARY KEY);
        CREATE TRIGGER content_chunks_tombstone AFTER DELETE ON content_chunks
        WHEN EXISTS (SELECT 1 FROM vec_models)
        BEGIN
            INSERT OR IGNORE INTO vec_tombstones(chunk_id) VALUES (old.id);
        END;
        """,
    ),
]


def migrate(conn: apsw.Connection) -> list[str]:
    """Apply pending migrations in order; returns the names applied."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)"
    )
    done = {row[0] for row in conn.execute("SELECT name FROM migrations")}
    known = {name for name, _ in MIGRATIONS}
    unknown = done - known
    if unknown:
        raise RuntimeError(
            f"index was written by a newer gno (unknown migrations: {', '.join(sorted(unknown))})"
        )
    applied = []
    for name, sql in MIGRATIONS:
        if name in done:
            continue
        with conn:
            conn.execute(sql)
            conn.execute(
                "INSERT INTO migrations(name, applied_at) VALUES (?, ?)", (name, int(time.time()))
            )
        applied.append(name)
    return applied
