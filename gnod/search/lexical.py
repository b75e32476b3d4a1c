"""Document-level BM25 over FTS5: grammar → stemmed MATCH → ranked, normalized hits.

The collection filter is applied after a materialized FTS pass (FTS first, then
filter), so the planner never walks documents before the full-text index.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import apsw

from gnod.protocol import SearchHit, SearchParams, SearchResult
from gnod.search.grammar import compile_query, parse
from gnod.search.snippet import best_snippet
from gnod.store import documents as store
from gnod.text.analyzer import AnalyzerSet
from gnod.text.language import SECTION_LANGUAGES_META
from gnod.text.stopwords import is_stopword

# bm25() column weights, in FTS column order (filepath, title, body): a title hit
# beats a path hit, which beats a body-only mention.
WEIGHT_FILEPATH = 1.5
WEIGHT_TITLE = 3.0
WEIGHT_BODY = 1.0
# Candidates fetched per query: the normalization pool (seed: BM25 limit × 2).
POOL_FACTOR = 2
MIN_POOL = 20

_BM25 = f"bm25(documents_fts, {WEIGHT_FILEPATH}, {WEIGHT_TITLE}, {WEIGHT_BODY})"
_SQL_ALL = (
    f"SELECT rowid, {_BM25} AS s FROM documents_fts WHERE documents_fts MATCH ? ORDER BY s LIMIT ?"
)


def _sql_filtered(n_collections: int) -> str:
    marks = ",".join("?" * n_collections)
    return (
        f"WITH hits AS MATERIALIZED (SELECT rowid AS id, {_BM25} AS s FROM documents_fts "
        "WHERE documents_fts MATCH ?) "
        "SELECT hits.id, hits.s FROM hits JOIN documents d ON d.id = hits.id "
        f"JOIN collections c ON c.id = d.collection_id WHERE c.name IN ({marks}) "
        "ORDER BY hits.s LIMIT ?"
    )


def normalize(raw: Sequence[float]) -> list[float]:
    """Per-query min-max: best (most negative) → 1.0, worst in the pool → 0.0."""
    if not raw:
        return []
    best, worst = min(raw), max(raw)
    if worst == best:
        return [1.0] * len(raw)
    span = worst - best
    return [(worst - s) / span for s in raw]


def with_section_languages(
    conn: apsw.Connection, languages: Sequence[str | None]
) -> list[str | None]:
    """`languages` plus those that blocks of mixed-language documents were stemmed in
    (recorded by ingestion), so a query meets a German section of an English page."""
    row = conn.execute(
        "SELECT value FROM schema_meta WHERE key = ?", (SECTION_LANGUAGES_META,)
    ).fetchone()
    if not row:
        return list(languages)
    return list(dict.fromkeys([*languages, *row[0].split()]))


def search(
    conn: apsw.Connection,
    analyzers: AnalyzerSet,
    params: SearchParams,
    languages: Sequence[str | None],
) -> SearchResult:
    """Raises grammar.QuerySyntaxError for malformed queries.

    `languages` are the documents' languages; the languages that blocks of
    mixed-language documents were stemmed in are added here.
    """
    t0 = time.perf_counter()
    languages = with_section_languages(conn, languages)
    stem_langs = [lang for lang in languages if lang] or ["english"]
    compiled = compile_query(
        parse(params.query), analyzers, list(languages) or ["english"],
        lambda t: is_stopword(t, stem_langs),
    )
    pool = max(params.limit * POOL_FACTOR, MIN_POOL)
    if params.collections:
        rows = list(conn.execute(_sql_filtered(len(params.collections)),
                                 (compiled.match, *params.collections, pool)))
    else:
        rows = list(conn.execute(_SQL_ALL, (compiled.match, pool)))
    scores = normalize([r[1] for r in rows])
    ranked = [
        (doc_id, raw, score)
        for (doc_id, raw), score in zip(rows, scores)
        if score >= params.min_score
    ][: params.limit]
    docs = store.docs_by_ids(conn, [r[0] for r in ranked])
    hits = []
    for doc_id, raw, score in ranked:
        d = docs.get(doc_id)
        if d is None:  # deleted between the two statements
            continue
        snippet = None
        if params.snippets:
            content = store.content_of(conn, d.mirror_hash)
            if content is not None:
                snippet = best_snippet(content[0], content[1], analyzers.get(d.language),
                                       compiled.positive_stems)
        hits.append(
            SearchHit(
                docid=d.id, uri=f"gno://{d.collection}/{d.rel_path}", collection=d.collection,
                path=d.rel_path, abs_path=f"{d.root.rstrip('/')}/{d.rel_path}", title=d.title,
                score=round(score, 6), bm25=raw, language=d.language, snippet=snippet,
            )
        )
    return SearchResult(
        query=params.query,
        hits=hits,
        total_candidates=len(rows),
        terms=list(compiled.terms),
        dropped_stopwords=list(compiled.dropped_stopwords),
        languages=list(languages),
        took_ms=round((time.perf_counter() - t0) * 1000, 3),
    )
