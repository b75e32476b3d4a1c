"""A document's lexical text (stems and exact forms of its path, title and body): made
once at ingest from the converted file, and made again from what SQLite stores when the
lexical index must be rebuilt or repaired (nothing is read from disk again)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import apsw

from gnod.config import CAMEL_CASE_EXTENSIONS, CODE_EXTENSIONS, TEX_EXTENSIONS, extension
from gnod.ingest.sections import StemmedBody, stem_body
from gnod.search.constants import INDEXING
from gnod.store import documents as store
from gnod.store.documents import LexicalText
from gnod.text.analyzer import (
    SEPARATOR,
    Analyzer,
    AnalyzerSet,
    exact_text,
    identifier_parts,
    ingest_analyzers,
    path_text,
)
from gnod.text.compounds import COMPOUNDING, parts
from gnod.text.headings import MARKDOWN_EXTENSIONS
from gnod.text.tex import decode_accents


def indexed_body(rel_path: str, body: str) -> str:
    """A document's text as its words are indexed: a TeX file's with its accented letters
    as letters (text.tex), as its passages are read (server.searching) so that they hold
    the matches; its lines stay the file's."""
    return decode_accents(body) if extension(rel_path) in TEX_EXTENSIONS else body


def lexical_text(
    rel_path: str, heading: str, body: str, stemmed: StemmedBody, analyzer: Analyzer, meta: dict[str, Any]
) -> LexicalText:
    """`heading` is the indexed title (documents.indexed_title), `stemmed` the body's
    stems and exact forms (sections.stem_body), `analyzer` the document's language's,
    `meta` its frontmatter. A Markdown note's body goes on with its other properties'
    values (documents.properties_text): `Freelance` finds the note whose `company` it is.
    In a language of camelCase names, the stems end with each name's parts, a group at a
    time between separators (no phrase runs from one into another): `node` finds
    `kmallocNode`, which its whole name (an exact form) still finds first. In a language
    of compounds, the stems end with each compound's parts, so: `Frist` finds
    `Kündigungsfrist` and `Steuer` `Steuerberater`, after the documents holding the
    word itself."""
    stems, words = stemmed.text, stemmed.words
    if extension(rel_path) in MARKDOWN_EXTENSIONS and (properties := store.properties_text(meta)):
        stems = SEPARATOR.join([stems, analyzer.index_text(properties)])
        words = SEPARATOR.join([words, exact_text(properties)])
    groups: list[str] = []
    if extension(rel_path) in CAMEL_CASE_EXTENSIONS:
        groups = [" ".join(analyzer.stems(parts)) for parts in identifier_parts(body)]
    elif analyzer.language in COMPOUNDING and extension(rel_path) not in CODE_EXTENSIONS:
        groups = compound_parts(f"{exact_text(heading)} {words}", analyzer)
    if groups:
        stems = SEPARATOR.join([stems, *groups])
    return LexicalText(
        path_text(rel_path, analyzer.index_text),
        analyzer.index_text(heading),
        stems,
        path_text(rel_path, exact_text),
        exact_text(heading),
        words,
    )


def compound_parts(words: str, analyzer: Analyzer) -> list[str]:
    """The stems of the parts (text.compounds) of each distinct word of `words`
    (space-separated tokens) that has some, space-joined: a group a word."""
    found = (parts(w, INDEXING.compound_part_min, INDEXING.compound_rest_min) for w in dict.fromkeys(words.split()))
    return [" ".join(analyzer.stems(pieces)) for pieces in found if pieces]


# A rebuild's documents are derived in batches of this many, spread over the ingest
# pool's processes and the writer thread (stemming is most of a rebuild's time).
DERIVE_BATCH = 50

Rows = list[tuple[Any, ...]]  # of store.lexical_sources
Derived = list[tuple[int, LexicalText]]
# Runs `fn` over each batch, on other processes too; the results in the batches' order
# (gnod.ingest.workers.PreparePool.spread).
Spread = Callable[[Callable[[Rows], Derived], list[Rows]], list[Derived]]


def deriver(
    analyzers: AnalyzerSet, spread: Spread | None = None
) -> Callable[[apsw.Connection, Sequence[int]], dict[int, LexicalText]]:
    """ids → their lexical text, from the stored Markdown and the stored language: a body
    that was stemmed per block (it had other languages) is stemmed per block again. With
    `spread`, more than a batch of documents is derived in parallel."""

    def derive(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, LexicalText]:
        if spread is None or len(ids) <= DERIVE_BATCH:
            return dict(derive_rows(store.lexical_sources(conn, ids), analyzers))
        rows = store.lexical_sources(conn, ids, packed=True)
        batches = [rows[i : i + DERIVE_BATCH] for i in range(0, len(rows), DERIVE_BATCH)]
        return {doc_id: text for part in spread(derive_packed, batches) for doc_id, text in part}

    return derive


def derive_packed(rows: Rows) -> Derived:
    """derive_rows for rows whose markdown is as stored, in whichever process runs it."""
    return derive_rows([(*r[:4], store.unpack(r[4]), *r[5:]) for r in rows], ingest_analyzers())


def derive_rows(rows: Rows, analyzers: AnalyzerSet) -> Derived:
    """Each row of store.lexical_sources → (its id, its lexical text)."""
    out = []
    for doc_id, rel_path, title, metadata, markdown, body_line, language, others in rows:
        body = indexed_body(rel_path, store.body_of(markdown, body_line))
        stemmed = stem_body(body, language, analyzers, per_block=bool(others))
        meta = json.loads(metadata)
        heading = store.indexed_title(title, meta)
        out.append((doc_id, lexical_text(rel_path, heading, body, stemmed, analyzers.get(language), meta)))
    return out
