"""A document's lexical text (stems and exact forms of its path, title and body): made
once at ingest from the converted file, and made again from what SQLite stores when the
lexical index must be rebuilt or repaired (nothing is read from disk again)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import apsw

from gnod.ingest.sections import stem_body
from gnod.store import documents as store
from gnod.store.documents import LexicalText
from gnod.text.analyzer import Analyzer, AnalyzerSet, exact_text, tokenize


def lexical_text(rel_path: str, heading: str, tokens: list[str], stems: str, analyzer: Analyzer) -> LexicalText:
    """`heading` is the indexed title (documents.indexed_title), `tokens` the body's and
    `stems` its stemmed text (sections.stem_body), `analyzer` the document's language's."""
    return LexicalText(
        analyzer.index_text(rel_path),
        analyzer.index_text(heading),
        stems,
        exact_text(rel_path),
        exact_text(heading),
        " ".join(tokens),
    )


def deriver(analyzers: AnalyzerSet) -> Callable[[apsw.Connection, Sequence[int]], dict[int, LexicalText]]:
    """ids → their lexical text, from the stored Markdown and the stored language: a body
    that was stemmed per block (it had other languages) is stemmed per block again."""

    def derive(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, LexicalText]:
        out = {}
        for doc_id, rel_path, title, metadata, markdown, body_line, language, others in store.lexical_sources(
            conn, ids
        ):
            body = "\n".join(markdown.split("\n")[body_line - 1 :])
            tokens = tokenize(body)
            stems = stem_body(body, language, analyzers, per_block=bool(others), tokens=tokens).text
            heading = store.indexed_title(title, json.loads(metadata))
            out[doc_id] = lexical_text(rel_path, heading, tokens, stems, analyzers.get(language))
        return out

    return derive
