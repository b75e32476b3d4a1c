"""Named, ordered schema migrations; each runs once, in its own transaction.

Append new migrations at the end; never edit or reorder one that has shipped. A Python
step carries the code it runs (no call into today's modules, whose behaviour moves on):
what a migration does is fixed when it ships.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import apsw


def _refill_symbol_names(conn: apsw.Connection) -> None:
    """symbol_names from content_symbols: each content's defined names (its packed
    definitions are zstd-compressed msgpack arrays, the name first), once each."""
    import msgspec
    import zstandard

    unzip = zstandard.ZstdDecompressor()
    rows = conn.execute("SELECT content_id, symbols FROM content_symbols").fetchall()
    for content_id, blob in rows:
        names = " ".join(dict.fromkeys(row[0] for row in msgspec.msgpack.decode(unzip.decompress(blob))))
        if names:
            conn.execute("INSERT INTO symbol_names(rowid, names) VALUES (?, ?)", (content_id, names))


# A migration is SQL, optionally followed by a Python step (run in the same transaction).
MIGRATIONS: list[tuple[str, str, Callable[[apsw.Connection], None] | None]] = [
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
        None,
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
        None,
    ),
    (
        "0003_exact_forms",
        """
        -- The unstemmed (case- and accent-folded) tokens of each document, beside the
        -- stems of documents_fts: an exact-form match outranks a match through stemming,
        -- and a document stemmed in a language the query is not stemmed in is still found
        -- by its exact words. The vocabulary view gives document frequencies (IDF).
        CREATE VIRTUAL TABLE documents_exact USING fts5(
            filepath, title, body,
            content='', contentless_delete=1,
            tokenize="unicode61 remove_diacritics 2 categories 'L* N* Co M*'"
        );
        CREATE VIRTUAL TABLE documents_exact_vocab USING fts5vocab(documents_exact, row);
        -- Languages some blocks of a document were stemmed in besides its own
        -- (space-separated): how much of the index each language holds.
        ALTER TABLE documents ADD COLUMN other_languages TEXT NOT NULL DEFAULT '';
        -- 0: the language was a guess (no clear evidence in the text): ingestion may give
        -- such a short document its collection's dominant language instead.
        ALTER TABLE documents ADD COLUMN language_confident INTEGER NOT NULL DEFAULT 1;
        """,
        # It once filled documents_exact for older documents by calling the analyzer of
        # the day; 0004 drops that table and rebuilds the lexical index from the
        # documents, so the step did nothing lasting and is gone rather than frozen.
        None,
    ),
    (
        "0004_lexical_index",
        """
        -- The lexical index moved to tantivy (gnod.store.lexical_index), derived from
        -- these tables and rebuilt from them at the first start after this migration.
        DROP TABLE documents_exact_vocab;
        DROP TABLE documents_exact;
        DROP TABLE documents_fts;
        DELETE FROM schema_meta WHERE key = 'fts_tokenizer';
        -- Documents written (or deleted) whose change the lexical index has not taken
        -- yet: filled in the transaction that writes them, emptied once tantivy committed.
        CREATE TABLE lexical_pending(doc_id INTEGER PRIMARY KEY);
        """,
        None,
    ),
    (
        "0005_language_indexes",
        """
        -- A collection's languages (pipeline.settle_languages after every edit) and the
        -- index's (language_counts, read again by the first search after every write): an
        -- index range instead of a scan of every document (65k documents: 48 ms → 8 ms).
        CREATE INDEX documents_collection_language ON documents(collection_id, language);
        CREATE INDEX documents_unsure ON documents(collection_id, language) WHERE language_confident = 0;
        CREATE INDEX documents_other_languages ON documents(other_languages) WHERE other_languages != '';
        """,
        None,
    ),
    (
        "0006_collection_indexed_at",
        """
        -- When each collection was last indexed (`status`, sampled by every client): the
        -- last entry of an index range instead of a visit to every document (7 ms → 0).
        CREATE INDEX documents_collection_indexed ON documents(collection_id, indexed_at);
        """,
        None,
    ),
    (
        "0007_language_counts",
        """
        -- Documents per collection, language ('' for none) and other languages, kept by
        -- triggers: a collection's dominant language (after every edit) and the index's
        -- languages (by the first search after every write) read a few rows instead of
        -- an index range over every document (65k documents: ~3 ms each).
        CREATE TABLE language_counts(
            collection_id INTEGER NOT NULL,
            language TEXT NOT NULL,
            other_languages TEXT NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY(collection_id, language, other_languages)
        ) WITHOUT ROWID;
        INSERT INTO language_counts
            SELECT collection_id, ifnull(language, ''), other_languages, count(*)
            FROM documents GROUP BY 1, 2, 3;
        CREATE TRIGGER language_counts_insert AFTER INSERT ON documents BEGIN
            INSERT INTO language_counts VALUES (new.collection_id, ifnull(new.language, ''), new.other_languages, 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
        END;
        CREATE TRIGGER language_counts_delete AFTER DELETE ON documents BEGIN
            UPDATE language_counts SET n = n - 1 WHERE collection_id = old.collection_id
                AND language = ifnull(old.language, '') AND other_languages = old.other_languages;
        END;
        CREATE TRIGGER language_counts_update AFTER UPDATE OF collection_id, language, other_languages ON documents
        WHEN old.collection_id IS NOT new.collection_id OR old.language IS NOT new.language
            OR old.other_languages IS NOT new.other_languages BEGIN
            UPDATE language_counts SET n = n - 1 WHERE collection_id = old.collection_id
                AND language = ifnull(old.language, '') AND other_languages = old.other_languages;
            INSERT INTO language_counts VALUES (new.collection_id, ifnull(new.language, ''), new.other_languages, 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
        END;
        """,
        None,
    ),
    (
        "0008_chunks_by_content_id",
        """
        -- A chunk names its content by rowid, not by its 64-character hash: the hash was
        -- stored twice per chunk (row and unique index), ~180 of a chunk's bytes (the
        -- kernel tree's 500k chunks: 89 → ~20 MB). Chunk ids stay (vectors key on them).
        CREATE TABLE content_chunks_by_id(
            id INTEGER PRIMARY KEY,
            content_id INTEGER NOT NULL REFERENCES content(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            pos INTEGER NOT NULL,
            length INTEGER NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            UNIQUE(content_id, seq)
        );
        INSERT INTO content_chunks_by_id
            SELECT cc.id, ct.id, cc.seq, cc.pos, cc.length, cc.start_line, cc.end_line
            FROM content_chunks cc JOIN content ct ON ct.mirror_hash = cc.mirror_hash;
        DROP TABLE content_chunks;
        ALTER TABLE content_chunks_by_id RENAME TO content_chunks;
        CREATE TRIGGER content_chunks_tombstone AFTER DELETE ON content_chunks
        WHEN EXISTS (SELECT 1 FROM vec_models)
        BEGIN
            INSERT OR IGNORE INTO vec_tombstones(chunk_id) VALUES (old.id);
        END;
        """,
        None,
    ),
    (
        "0009_symbols",
        """
        -- The definitions tree-sitter finds in a content (gnod.store.symbols packs them),
        -- parsed in the background after the text is indexed. A row marks its content
        -- parsed, even one that defines nothing.
        CREATE TABLE content_symbols(
            content_id INTEGER PRIMARY KEY REFERENCES content(id) ON DELETE CASCADE,
            grammar TEXT NOT NULL,              -- and the extraction: c/1 (gnod.ingest.symbols.stamp)
            symbols BLOB NOT NULL
        );
        -- The names each content defines (rowid = content id), for `search --symbol`:
        -- `_` and `$` are part of a name.
        CREATE VIRTUAL TABLE symbol_names USING fts5(
            names, content='', contentless_delete=1,
            tokenize="unicode61 remove_diacritics 0 tokenchars '_$'"
        );
        CREATE TRIGGER content_symbols_delete AFTER DELETE ON content_symbols BEGIN
            DELETE FROM symbol_names WHERE rowid = old.content_id;
        END;
        """,
        None,
    ),
    (
        "0010_line_shifts",
        """
        -- Where the canonical text's lines were in the file: the blank lines the
        -- canonical form dropped (gnod.ingest.canonical.canonicalize_lines), so results
        -- name the file's lines. '' for none, and for documents indexed before this.
        ALTER TABLE documents ADD COLUMN line_shifts TEXT NOT NULL DEFAULT '';
        """,
        None,
    ),
    (
        "0011_ocr_pending",
        """
        -- Pictures and scans indexed by their name, whose text OCR reads in the
        -- background (gnod.server.ocr); a document leaves when its text is stored.
        CREATE TABLE ocr_pending(
            doc_id INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE
        );
        """,
        None,
    ),
    (
        "0012_symbol_vocab",
        """
        -- The names defined (symbol_names' terms) with how many contents define each, in
        -- order: an identifier being typed completes from them (gnod.store.symbols.names_starting).
        CREATE VIRTUAL TABLE symbol_vocab USING fts5vocab(symbol_names, row);
        """,
        None,
    ),
    (
        "0013_symbol_names_membership",
        """
        -- Which contents define a name, without where among their names (detail=none):
        -- a name is looked up as its own terms, never as a phrase, and the positions
        -- were a sixth of the table (3 MB of the kernel tree's 20). Filled again from
        -- the stored definitions by the step.
        DROP TABLE symbol_vocab;
        DROP TRIGGER content_symbols_delete;
        DROP TABLE symbol_names;
        CREATE VIRTUAL TABLE symbol_names USING fts5(
            names, content='', contentless_delete=1, detail=none,
            tokenize="unicode61 remove_diacritics 0 tokenchars '_$'"
        );
        CREATE TRIGGER content_symbols_delete AFTER DELETE ON content_symbols BEGIN
            DELETE FROM symbol_names WHERE rowid = old.content_id;
        END;
        CREATE VIRTUAL TABLE symbol_vocab USING fts5vocab(symbol_names, row);
        """,
        _refill_symbol_names,
    ),
    (
        "0014_config_files_guessed",
        """
        -- A configuration file's language is a guess (config.CONFIG_EXTENSIONS): the next
        -- run of its collection (the rescan at start) gives it the collection's language,
        -- as pipeline.settle_languages does a short page's.
        UPDATE documents SET language_confident = 0
        WHERE language_confident = 1 AND (
            lower(rel_path) GLOB '*.toml' OR lower(rel_path) GLOB '*.yaml' OR lower(rel_path) GLOB '*.yml'
            OR lower(rel_path) GLOB '*.ini' OR lower(rel_path) GLOB '*.cfg' OR lower(rel_path) GLOB '*.conf'
            OR lower(rel_path) GLOB '*.config' OR lower(rel_path) GLOB '*.properties'
        );
        """,
        None,
    ),
    (
        "0015_read_rules",
        """
        -- The rules each document was read by (gnod.ingest.reread.READ_RULES): a gno that
        -- reads a kind of file otherwise reads again those read by older rules, whichever
        -- gno read them last (an older gno run on this index refuses it: it lacks this
        -- migration; kept for the index as a whole, the rules missed what one wrote).
        ALTER TABLE documents ADD COLUMN read_rules INTEGER NOT NULL DEFAULT 1;
        DELETE FROM schema_meta WHERE key = 'read_rules';
        """,
        None,
    ),
    (
        "0016_written_days",
        """
        -- A frontmatter date that is no ISO day (`03.11.2025`, `April 9, 2025`) is read
        -- as a day now (gnod.text.dates): the lexical index takes those documents again,
        -- for their day, at the next start.
        INSERT OR IGNORE INTO lexical_pending(doc_id)
        SELECT id FROM documents
        WHERE coalesce(nullif(json_extract(metadata, '$.date'), ''), nullif(json_extract(metadata, '$.created'), ''))
            NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*';
        """,
        None,
    ),
    (
        "0017_senders_folded",
        """
        -- `--from` compares senders with their accents off (documents.sender_key): the
        -- lexical index takes the messages whose sender has a letter past ASCII again.
        INSERT OR IGNORE INTO lexical_pending(doc_id)
        SELECT id FROM documents
        WHERE json_extract(metadata, '$.from') GLOB '*[^ -~]*' OR json_extract(metadata, '$.from') LIKE '%\\u%';
        """,
        None,
    ),
    (
        "0018_keywords_are_tags",
        """
        -- A frontmatter's `keywords` are tags (tags.TAG_KEYS): the lexical index takes
        -- the documents that have some again, for its tags.
        INSERT OR IGNORE INTO lexical_pending(doc_id)
        SELECT id FROM documents WHERE json_array_length(metadata, '$.keywords') > 0
            OR json_type(metadata, '$.keywords') = 'text';
        """,
        None,
    ),
    (
        "0019_tags_folded",
        """
        -- `--tag` compares tags with their accents off and finds a nested tag by its
        -- parent (tags.tag_keys): the lexical index takes the documents whose tags have
        -- a letter past ASCII or a `/` again.
        INSERT OR IGNORE INTO lexical_pending(doc_id)
        SELECT id FROM (
            SELECT id, coalesce(json_extract(metadata, '$.tags'), '') || ' '
                || coalesce(json_extract(metadata, '$.keywords'), '') AS held
            FROM documents
        ) WHERE held GLOB '*[^ -~]*' OR held LIKE '%\\u%' OR held LIKE '%/%';
        """,
        None,
    ),
    (
        "0020_named_days",
        """
        -- A note named by its day (`2025-03-14.md`) is of that day, where its frontmatter
        -- gives none (text.dates.named_day): the lexical index takes the documents whose
        -- path may end in such a name again, for their day.
        INSERT OR IGNORE INTO lexical_pending(doc_id)
        SELECT id FROM documents WHERE rel_path GLOB '*[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*';
        """,
        None,
    ),
    (
        "0021_aliases",
        """
        -- A note's frontmatter `aliases` are its other names (documents.ALIAS_KEYS): the
        -- lexical index takes the documents that have some again, for their title and names.
        INSERT OR IGNORE INTO lexical_pending(doc_id)
        SELECT id FROM documents WHERE json_type(metadata, '$.aliases') IN ('array', 'text')
            OR json_type(metadata, '$.alias') IN ('array', 'text');
        """,
        None,
    ),
    (
        "0022_tex_accents",
        """
        -- A TeX file's accented letters are indexed as letters (`G\\"odel` as Gödel:
        -- gnod.text.tex): the lexical index takes the LaTeX and BibTeX files again.
        INSERT OR IGNORE INTO lexical_pending(doc_id)
        SELECT id FROM documents WHERE lower(rel_path) GLOB '*.tex' OR lower(rel_path) GLOB '*.bib';
        """,
        None,
    ),
]


class IndexTooNew(Exception):
    """The index was written by a newer gno: this one does not know all its migrations."""


def pending(conn: apsw.Connection) -> list[str]:
    """The migrations `migrate` would apply, in order; IndexTooNew for an index a newer
    gno wrote (it may hold what this gno cannot read: nothing is changed)."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)")
    done = {row[0] for row in conn.execute("SELECT name FROM migrations")}
    unknown = done - {name for name, _, _ in MIGRATIONS}
    if unknown:
        raise IndexTooNew(
            f"the index in {os.path.dirname(conn.filename)} was written by a newer gno (migrations this one "
            f"lacks: {', '.join(sorted(unknown))}): run that version, or move that folder away to start anew"
        )
    return [name for name, _, _ in MIGRATIONS if name not in done]


def migrate(conn: apsw.Connection) -> list[str]:
    """Apply pending migrations in order; returns the names applied (IndexTooNew: see pending)."""
    due = set(pending(conn))
    applied = []
    for name, sql, step in MIGRATIONS:
        if name not in due:
            continue
        with conn:
            conn.execute(sql)
            if step is not None:
                step(conn)
            conn.execute("INSERT INTO migrations(name, applied_at) VALUES (?, ?)", (name, int(time.time())))
        applied.append(name)
    return applied
