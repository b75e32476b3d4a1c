"""Document-level BM25 over FTS5: grammar → stemmed and exact MATCH → ranked, scored rows.

Two full-text indexes answer each query: `documents_fts` holds each document's stems
(in its own language), `documents_exact` its unstemmed words. A query is stemmed in
the languages that matter for it (`query_languages`), and matched as typed against
the exact forms; a document's bm25 is the weighted mean of the two, so the query's
own word forms rank first while an inflection still matches through its stem. Among
near-equal matches, `Preferences` puts first the page named as the query, and the
page in the query's language (or the index's main one).

Filters (collections, tags, dates, path, language) are applied after a materialized
FTS pass (FTS first, then filter), so the planner never walks documents before the
full-text index. Both MATCHes and their sum run in one statement; FTS5 computes bm25
for every match to order them anyway, so summing over all matches costs little more
than the two queries.
"""

from __future__ import annotations

import json
import math
import os
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import apsw

from gnod.search import filters
from gnod.search.constants import PIPELINE, Lexical
from gnod.search.grammar import Clause, compile_query, keep_informative, parse
from gnod.text.analyzer import AnalyzerSet, tokenize
from gnod.text.language import query_language, query_language_candidates, unstemmed_script
from gnod.text.stopwords import is_stopword

# bm25() column weights, in FTS column order (filepath, title, body): a title hit
# beats a path hit, which beats a body-only mention.
WEIGHT_FILEPATH = 1.5
WEIGHT_TITLE = 3.0
WEIGHT_BODY = 1.0
# Candidates fetched per query (seed: BM25 limit × 2).
POOL_FACTOR = 2
MIN_POOL = 20


def _bm25(table: str) -> str:
    return f"bm25({table}, {WEIGHT_FILEPATH}, {WEIGHT_TITLE}, {WEIGHT_BODY})"


def _sql(condition: str | None, exact_weight: float) -> str:
    """Every match of the stems (first MATCH) and of the exact forms (second), each
    document's bm25 the weighted mean of its two (0 where one has no match); the best
    LIMIT (-1: all) at or below a bm25 bound, passing `condition` (filters.where) when
    there is one. All in SQLite: Python only sees the pool."""
    w = float(exact_weight)
    both = (
        f"SELECT id, sum(x) AS s FROM ("
        f"SELECT rowid AS id, {_bm25('documents_fts')} * {1 / (1 + w)!r} AS x "
        "FROM documents_fts WHERE documents_fts MATCH ? UNION ALL "
        f"SELECT rowid AS id, {_bm25('documents_exact')} * {w / (1 + w)!r} AS x "
        "FROM documents_exact WHERE documents_exact MATCH ?) GROUP BY id"
    )
    if condition is None:
        return f"{both} HAVING s <= ? ORDER BY s, id LIMIT ?"
    return (
        f"WITH hits AS MATERIALIZED ({both}) "
        "SELECT hits.id, hits.s FROM hits JOIN documents d ON d.id = hits.id "
        f"JOIN collections c ON c.id = d.collection_id WHERE ({condition}) AND hits.s <= ? "
        "ORDER BY hits.s, hits.id LIMIT ?"
    )


def relative_scores(raw: Sequence[float]) -> list[float]:
    """Each hit's bm25 as a fraction of the best hit's: 1.0 for the best, and a hit half
    as relevant by BM25 scores 0.5 wherever it stands in the list (bm25 is negative,
    more negative is better)."""
    if not raw:
        return []
    best = min(raw)
    if best >= 0:
        return [1.0] * len(raw)
    return [min(1.0, max(0.0, s / best)) for s in raw]


def query_languages(
    query: str, counts: Mapping[str | None, int], lexical: Lexical = PIPELINE.lexical
) -> list[str | None]:
    """The languages a query is stemmed in: its own when it is clearly written in one the
    index holds; none (None: matched as written) when it is written in a script without
    a stemmer (CJK, Thai…) and the index holds unstemmed documents; else, among the
    languages holding `min_language_share` of the index, those whose function words it
    holds (Spanish, Catalan or Romanian for "es un alias de"), or all of them (largest
    first) when it holds none. Weak evidence ("in vitro") never stems a query in a
    language of a few stray documents. `counts` is documents per language
    (store.language_counts).

    Stems of other languages would only add false matches to a clear query (an English
    word cut by a Basque stemmer); its exact forms still find every document."""
    own = query_language(query)
    if own is not None and counts.get(own):
        return [own]
    if own is None and counts.get(None) and unstemmed_script(query):
        return [None]
    total = sum(counts.values())
    major = [lang for lang, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0] or ""))
             if n >= lexical.min_language_share * total]
    plausible: list[str | None] = [lang for lang in query_language_candidates(query) if lang in major]
    return plausible or major or ["english"]


def _fold(token: str) -> str:
    """A token as FTS5's unicode61 (remove_diacritics 2) stores it in the vocabulary."""
    if token.isascii():
        return token
    return "".join(ch for ch in unicodedata.normalize("NFD", token) if not unicodedata.combining(ch))


def doc_frequency(conn: apsw.Connection) -> Callable[[str], int]:
    """token → how many documents hold it as typed (from the exact-form index), memoized."""
    cache: dict[str, int] = {}

    def df(token: str) -> int:
        if token not in cache:
            row = conn.execute("SELECT doc FROM documents_exact_vocab WHERE term = ?",
                               (_fold(token),)).fetchone()
            cache[token] = row[0] if row else 0
        return cache[token]

    return df


class Row(NamedTuple):
    doc_id: int
    score: float  # relative to the best hit (relative_scores), rounded as shown
    bm25: float  # the raw weighted bm25 (negative: lower is better)


@dataclass(slots=True)
class Result:
    rows: list[Row]  # best first
    total_candidates: int  # matches fetched before `min_score` and `limit`
    terms: list[str]
    dropped_stopwords: list[str]
    languages: list[str | None]  # the query was stemmed in these
    stems: frozenset[str]  # what a snippet or a highlight should mark
    notes: list[str]


def _words(text: str) -> list[str]:
    return [_fold(t) for t in tokenize(text)]


def _phrase(clauses: Sequence[Clause], lexical: Lexical) -> str | None:
    """The query's words in order as one FTS5 phrase, for a query of plain words (no
    negation) of 2 to max_terms tokens; None otherwise."""
    if any(c.negated for c in clauses):
        return None
    tokens = [t for c in clauses for t in c.tokens]
    if not 2 <= len(tokens) <= lexical.max_terms:
        return None
    return '"' + " ".join(tokens) + '"'


class Preferences:
    """Preferences that scale a match's bm25; `best` applies them to every match they
    could lift into the results, so the results do not depend on how many are asked
    for. Name and language are small, deciding near-ties only; a
    phrase grows with its length, as a long line found word for word is the known item:
    - by phrase, × (1 + phrase_match × words after the first): the document holds the
      query's words in order, as typed (a pasted line, a description, an error message);
    - by name, × (1 + name_match): the document's title or file name is the query, word
      for word ("tar" → tar.md): it is the one asked for by name;
    - by language, × (1 + language_prior × share): the share of the document's language
      among the query's languages, relative to the largest. None (no stemmer: CJK, or
      not known) is many languages at once, so it earns no preference."""

    def __init__(self, query: str, clauses: Sequence[Clause], languages: Sequence[str | None],
                 counts: Mapping[str | None, int], lexical: Lexical) -> None:
        self.lexical = lexical
        self.weights: dict[str | None, int] = {lang: counts.get(lang, 0) for lang in languages if lang is not None}
        self.top = max(self.weights.values(), default=0)
        self.by_language = len(counts) > 1 and lexical.language_prior > 0 and self.top > 0
        self.words = _words(query) if lexical.name_match > 0 else []
        self.phrase = _phrase(clauses, lexical) if lexical.phrase_match > 0 else None
        # Words after the first: the phrase's tokens are joined by single spaces.
        self.phrase_bonus = lexical.phrase_match * self.phrase.count(" ") if self.phrase is not None else 0.0
        self.active = self.by_language or bool(self.words) or self.phrase is not None
        self._phrased: set[int] | None = None  # _holders
        self._names: set[int] | None = None  # _named

    def best(self, conn: apsw.Connection, sql: str, args: Sequence[object],
             pool: int) -> list[tuple[int, float, float]]:
        """The best `pool` of all matches by ranking bm25: (doc id, bm25, ranking bm25).
        `sql` (_sql) takes `args`, a bm25 bound and a limit. The first `preference_pool`
        matches by bm25 give the pool's last ranking value; when a match beyond them could
        still be lifted past it, every match that could is read and ranked as well."""
        if not self.active:
            return [(doc_id, raw, raw) for doc_id, raw in conn.execute(sql, (*args, math.inf, pool))]
        fetch = max(pool, self.lexical.preference_pool)
        fetched = conn.execute(sql, (*args, math.inf, fetch)).fetchall()
        ranked = self._rank(conn, fetched)
        if len(fetched) == fetch:
            # bm25 is negative: a match lifted by f passes `last` only if its bm25 · f < last.
            last = ranked[pool - 1][2]
            lift = self._max_lift(conn, {doc_id for doc_id, _ in fetched})
            if fetched[-1][1] * lift < last:
                ranked = self._rank(conn, conn.execute(sql, (*args, last / lift, -1)).fetchall())
        return ranked[:pool]

    def _max_lift(self, conn: apsw.Connection, fetched: set[int]) -> float:
        """The most a match not in `fetched` could be lifted by."""
        f = 1.0 + (self.lexical.language_prior if self.by_language else 0.0)
        f += self.lexical.name_match if not self._named(conn) <= fetched else 0.0
        return f + (self.phrase_bonus if not self._holders(conn) <= fetched else 0.0)

    def _holders(self, conn: apsw.Connection) -> set[int]:
        """The documents holding the phrase (all of them: few, and found once)."""
        if self._phrased is None:
            self._phrased = set() if self.phrase is None else {r[0] for r in conn.execute(
                "SELECT rowid FROM documents_exact WHERE documents_exact MATCH ?", (self.phrase,))}
        return self._phrased

    def _named(self, conn: apsw.Connection) -> set[int]:
        """The documents whose title or file name is the query, word for word: among those
        holding its words in order in either (the exact-form index), found once."""
        if self._names is None:
            self._names = set()
            if self.words and len(self.words) <= self.lexical.max_terms:
                match = '{filepath title} : "' + " ".join(self.words) + '"'
                for doc_id, title, rel_path in conn.execute(
                        "SELECT id, title, rel_path FROM documents WHERE id IN "
                        "(SELECT rowid FROM documents_exact WHERE documents_exact MATCH ?)", (match,)):
                    stem = os.path.splitext(os.path.basename(rel_path))[0]
                    if _words(title) == self.words or _words(stem) == self.words:
                        self._names.add(doc_id)
        return self._names

    def _rank(self, conn: apsw.Connection, found: list[tuple[int, float]]) -> list[tuple[int, float, float]]:
        """(doc id, bm25, ranking bm25), best first."""
        languages: dict[int, str | None] = {}
        if self.by_language and found:
            # The ids go as one JSON array: there may be more than SQLite takes as parameters.
            languages = dict(conn.execute(
                "SELECT id, language FROM documents WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([doc_id for doc_id, _ in found]),)))
        named, phrased = self._named(conn), self._holders(conn)
        ranked = []
        for doc_id, raw in found:
            f = 1.0 + (self.lexical.name_match if doc_id in named else 0.0)
            f += self.phrase_bonus if doc_id in phrased else 0.0
            if self.by_language:
                f += self.lexical.language_prior * self.weights.get(languages.get(doc_id), 0) / self.top
            ranked.append((doc_id, raw, raw * f))
        ranked.sort(key=lambda r: (r[2], r[0]))
        return ranked


def search(
    conn: apsw.Connection,
    analyzers: AnalyzerSet,
    query: str,
    counts: Mapping[str | None, int],
    limit: int,
    where: filters.Filter = filters.NO_FILTER,
    min_score: float = 0.0,
    lexical: Lexical = PIPELINE.lexical,
) -> Result:
    """The documents matching `query`, best first. Raises grammar.QuerySyntaxError for
    malformed queries.

    `counts` is documents per language in the index (store.language_counts): it picks
    the languages the query is stemmed in.
    """
    languages = query_languages(query, counts, lexical)
    stem_langs = [lang for lang in languages if lang] or ["english"]

    def stop(t: str) -> bool:
        return is_stopword(t, stem_langs)

    notes: list[str] = []
    parsed = parse(query)
    clauses, left_out = keep_informative(parsed, stop, lexical.max_terms, doc_frequency(conn))
    if left_out:
        first = sorted(left_out, key=stop)  # the words that would have counted, then function words
        shown = ", ".join(first[:10]) + (", …" if len(left_out) > 10 else "")
        notes.append(f"the query has more than {lexical.max_terms} terms: searched the "
                     f"{lexical.max_terms} rarest in the index; left out {len(left_out)} ({shown})")
    stemmed = compile_query(clauses, analyzers, languages, stop)
    exact = compile_query(clauses, analyzers, [None], stop)

    pool = max(limit * POOL_FACTOR, MIN_POOL)
    condition, args = None, list[object]()
    if filters.active(where):
        condition, args = filters.where(where)
    prefer = Preferences(query, parsed, languages, counts, lexical)
    found = prefer.best(conn, _sql(condition, lexical.exact_weight), (stemmed.match, exact.match, *args), pool)
    # Rounded as shown, so `--min-score` keeps exactly the hits shown at or above it.
    scores = [round(s, 6) for s in relative_scores([r[2] for r in found])]
    rows = [Row(doc_id, score, raw) for (doc_id, raw, _), score in zip(found, scores) if score >= min_score]
    return Result(
        rows=rows[:limit],
        total_candidates=len(found),
        terms=list(stemmed.terms),
        dropped_stopwords=list(stemmed.dropped_stopwords),
        languages=list(languages),
        stems=stemmed.positive_stems | exact.positive_stems,
        notes=notes,
    )
