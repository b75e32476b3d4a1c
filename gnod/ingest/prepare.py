"""One file's bytes → a PreparedDoc: decode, canonicalize, frontmatter, title, language,
chunks and the stemmed FTS text. Pure (no database), so it can run anywhere."""

from __future__ import annotations

import os

from gnod.ingest.canonical import canonicalize, mirror_hash
from gnod.ingest.chunk import chunk_text
from gnod.ingest.markdown import extract_title, split_frontmatter
from gnod.ingest.walk import WalkEntry
from gnod.store.documents import ChunkRow, PreparedDoc
from gnod.text.analyzer import AnalyzerSet
from gnod.text.language import detect_language

# Bigger text files are almost always logs or data dumps, not documents.
MAX_TEXT_BYTES = 32 * 1024 * 1024


class IngestFailure(Exception):
    """A file that cannot be indexed; recorded in ingest_errors, never fatal to a run."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def decode_text(data: bytes) -> str:
    """Bytes → str for text files: UTF-8 (with or without BOM), UTF-16 with BOM, else Latin-1.

    Latin-1 never fails, so a legacy-encoded note is still indexed rather than lost.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise IngestFailure("DECODE", "invalid UTF-16 text") from None
    if b"\x00" in data[:8192]:
        raise IngestFailure("BINARY", "binary file (contains NUL bytes); not a text document")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def prepare(
    entry: WalkEntry,
    data: bytes,
    source_hash: str,
    language_hint: str | None,
    analyzers: AnalyzerSet,
) -> PreparedDoc:
    if len(data) > MAX_TEXT_BYTES:
        raise IngestFailure(
            "TOO_LARGE", f"file is {len(data) // 1048576} MiB; the limit is {MAX_TEXT_BYTES // 1048576} MiB"
        )
    canonical = canonicalize(decode_text(data))
    meta, body, fm_lines = split_frontmatter(canonical)
    title = extract_title(meta, body, os.path.basename(entry.rel_path))
    language = language_hint or detect_language(body)
    offset = len(canonical) - len(body)
    chunks = [
        ChunkRow(c.seq, c.pos + offset, len(c.text), c.start_line + fm_lines, c.end_line + fm_lines)
        for c in chunk_text(body)
    ]
    analyzer = analyzers.get(language)
    return PreparedDoc(
        rel_path=entry.rel_path,
        size=entry.size,
        mtime_ns=entry.mtime_ns,
        inode=entry.inode,
        source_hash=source_hash,
        mirror_hash=mirror_hash(canonical),
        markdown=canonical,
        body_line=fm_lines + 1,
        title=title,
        language=language,
        metadata=meta,
        chunks=chunks,
        fts_path=analyzer.index_text(entry.rel_path),
        fts_title=analyzer.index_text(title),
        fts_body=analyzer.index_text(body),
    )
