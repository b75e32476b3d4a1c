"""A `search` answered from a read connection and the lexical index: its hits with
snippets, as the wire gives them. The daemon's reader thread and the search process
(gnod.server.search_process) both answer with this, so both give the same result."""

from __future__ import annotations

import time
from collections.abc import Mapping

import apsw

from gnod.protocol import SearchHit, SearchParams, SearchResult, Snippet
from gnod.search import filters, lexical
from gnod.search.snippet import best_snippets
from gnod.server.hits import identity
from gnod.store import documents as docstore
from gnod.store.lexical_index import LexicalIndex
from gnod.text.analyzer import AnalyzerSet


def answer(
    index: LexicalIndex,
    conn: apsw.Connection,
    analyzers: AnalyzerSet,
    p: SearchParams,
    counts: Mapping[str | None, int],
    where: filters.Filter,
) -> SearchResult:
    """The result of `p` (without freshness, which the daemon adds); raises
    grammar.QuerySyntaxError for a malformed query."""
    t0 = time.perf_counter()
    res = lexical.search(index, conn, analyzers, p.query, counts, p.limit, where, p.min_score)
    docs = docstore.docs_with_contents(conn, [r.doc_id for r in res.rows], read=p.snippets)
    hits = []
    for r in res.rows:
        if r.doc_id not in docs:  # deleted between the two statements
            continue
        doc, markdown, body_line = docs[r.doc_id]
        found: list[Snippet] = []
        if markdown is not None:
            found = [
                Snippet(line=s.line, text=s.text, matches=s.matches)
                for s in best_snippets(markdown, body_line, analyzers.get(doc.language), res.stems, p.per_doc)
            ]
        hits.append(
            SearchHit(
                **identity(doc),
                score=r.score,
                bm25=r.bm25,
                language=doc.language,
                snippet=found[0] if found else None,
                snippets=found if p.per_doc > 1 else [],
            )
        )
    return SearchResult(
        query=p.query,
        hits=hits,
        total_candidates=res.total_candidates,
        terms=res.terms,
        dropped_stopwords=res.dropped_stopwords,
        languages=res.languages,
        took_ms=round((time.perf_counter() - t0) * 1000, 3),
        notes=res.notes,
    )
