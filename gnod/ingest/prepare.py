"""One file's bytes → a PreparedDoc: convert to Markdown, canonicalize, frontmatter, title,
language, chunks and the lexical text. No database, so it can run anywhere."""

from __future__ import annotations

import os
import time

from gnod.config import (
    CODE_EXTENSIONS,
    CONFIG_EXTENSIONS,
    SOURCE_EXTENSIONS,
    SOURCE_LANGUAGE,
    TABLE_EXTENSIONS,
    extension,
    uncompressed,
)
from gnod.ingest import ocr
from gnod.ingest.canonical import canonicalize_lines, mirror_hash
from gnod.ingest.chunk import chunk_text
from gnod.ingest.convert import convert_lines, prose
from gnod.ingest.failure import IngestFailure
from gnod.ingest.lexical_text import indexed_body, lexical_text
from gnod.ingest.markdown import extract_title, inline_tags, split_frontmatter
from gnod.ingest.reread import READ_RULES
from gnod.ingest.sections import stem_body
from gnod.ingest.walk import WalkEntry
from gnod.lines import composed
from gnod.store.documents import ChunkRow, PreparedDoc, compress, indexed_title
from gnod.store.tags import as_tags
from gnod.text import org
from gnod.text.analyzer import AnalyzerSet
from gnod.text.headings import MARKDOWN_EXTENSIONS
from gnod.text.language import detect_language_sure

__all__ = ["Deadline", "IngestFailure", "prepare"]  # workers catch IngestFailure from here

# Preparing one document (after conversion, which has its own deadline) takes
# milliseconds; past this something is pathological, and the writer must move on.
PREPARE_TIMEOUT_S = 60.0


class Deadline:
    """A per-document time limit, checked between stages and between blocks: a document
    that overruns it is reported as TIMEOUT, never indexed half-way."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = PREPARE_TIMEOUT_S if seconds is None else seconds
        self.at = time.monotonic() + self.seconds

    def check(self, stage: str) -> None:
        if time.monotonic() > self.at:
            raise IngestFailure(
                "TIMEOUT", f"preparing the document took over {self.seconds:g} s (at {stage}); not indexed"
            )


# A body shorter than this whose language is only a guess is marked unsure: it takes its
# collection's dominant language (pipeline.settle_languages).  Longer documents hold
# enough text for their own verdict (and for per-block stemming).
SHORT_DOCUMENT_CHARS = 3000


def prepare(
    entry: WalkEntry,
    data: bytes,
    source_hash: str,
    language_hint: str | None,
    analyzers: AnalyzerSet,
    deadline: Deadline | None = None,
    ocr_later: bool = False,
    named: bool = False,
) -> PreparedDoc:
    """`source_hash`: the SHA-256 hex of `data` (or "": none known). `ocr_later`: a picture
    or scan that needs OCR is prepared without its text (found by its name) and marked
    `ocr_pending`, for gnod's OCR backlog to read. `named`: a Markdown note is titled by
    its file's name (obsidian.named_by_files)."""
    deadline = deadline or Deadline()
    try:
        # OCR reads in the hinted language.
        (markdown, placed), waiting = convert_lines(data, entry.rel_path, language_hint, ocr_later), False
    except IngestFailure as f:
        if f.code != ocr.LATER:
            raise
        markdown, placed, waiting = "", "", True
    canonical, line_shifts = canonicalize_lines(markdown)  # the shifts: where the canonical lines were
    line_shifts = composed(line_shifts, placed)  # and where the converter's were in the file (a table's rows)
    deadline.check("conversion")
    name = os.path.basename(entry.rel_path)
    # In code a `# line` is a comment (Python, shell, YAML…): such a file is titled by its name.
    ext = extension(uncompressed(name))  # a gzip file's: the kind of the file it holds
    script = not ext and canonical.startswith("#!")  # a program without an extension (a project's)
    code = ext in CODE_EXTENSIONS or script
    source = ext in SOURCE_EXTENSIONS or script
    # Frontmatter is a document's: in code a `---` line is the code's own (the first of a
    # YAML file's documents, a Kubernetes manifest's Service, was left out of its text).
    meta, body, fm_lines = ({}, canonical, 0) if code else split_frontmatter(canonical)
    if ext in MARKDOWN_EXTENSIONS and (inline := inline_tags(body)):  # a notes app's `#tags`: tags too
        meta = {**meta, "tags": list(dict.fromkeys([*as_tags(meta.get("tags")), *inline]))}
    outline = ext in org.ORG_EXTENSIONS
    if outline:  # Org's settings are its frontmatter, and its `# ` lines comments, not headings
        meta, body, fm_lines = org.metadata(canonical), canonical, 0
    title = extract_title(meta, "" if code or outline else body, name, named)
    deadline.check("frontmatter and title")
    sure = True
    language: str | None
    if language_hint:
        language = language_hint
    elif source:
        language, sure = SOURCE_LANGUAGE, False
    elif ext in CONFIG_EXTENSIONS or ext in TABLE_EXTENSIONS:
        language, sure = detect_language_sure(body)[0], False
    else:
        language, sure = detect_language_sure(prose(body, entry.rel_path))
        sure = sure or len(body) >= SHORT_DOCUMENT_CHARS
    deadline.check("language detection")
    # A collection's hint is authoritative: no block gets another language then.
    indexed = indexed_body(entry.rel_path, body)
    stemmed = stem_body(indexed, language, analyzers, per_block=not (language_hint or source), deadline=deadline.check)
    language = stemmed.language
    deadline.check("stemming")
    offset = len(canonical) - len(body)
    chunks = [
        ChunkRow(c.seq, c.pos + offset, len(c.text), c.start_line + fm_lines, c.end_line + fm_lines)
        for c in chunk_text(body, code=code)
    ]
    deadline.check("chunking")
    heading = indexed_title(title, meta)
    encoded = canonical.encode("utf-8")
    return PreparedDoc(
        rel_path=entry.rel_path,
        size=entry.size,
        mtime_ns=entry.mtime_ns,
        inode=entry.inode,
        source_hash=source_hash,
        # A file already canonical (most source files) has its bytes' hash for its text's.
        mirror_hash=source_hash if source_hash and encoded == data else mirror_hash(encoded),
        packed=compress(encoded),
        body_line=fm_lines + 1,
        title=title,
        language=language,
        metadata=meta,
        chunks=chunks,
        text=lexical_text(entry.rel_path, heading, indexed, stemmed, analyzers.get(language), meta),
        read_rules=READ_RULES,
        other_languages=stemmed.others,
        language_confident=sure,
        line_shifts=line_shifts,
        ocr_pending=waiting,
    )
