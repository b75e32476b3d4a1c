"""The hybrid query pipeline, stage by stage, as plain code over small ports.

    BM25(original) → strong signal? → expansion (cached) → BM25 per lexical variant
      ‖ vectors for original, semantic variants and HyDE → fusion → content-hash dedup
      → rerank the best passages (cached) or smart skip → keyword floor → blend
      → score floor → previews

Every stage is timed; a stage that does not run says why. A missing model never
fails a query: the stage is skipped and `degraded` says so once. The pipeline reaches
the daemon only through `Ports` (reads, models, the LLM cache), so it runs the same
under gnod (server/query.py adapts the daemon and builds the wire result) and under
tests with ports of their own. The tuning numbers all come from `PIPELINE`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol, TypeVar

import msgspec

from gnod.models import presets
from gnod.models.base import ModelUnavailable, Reranker, TextGenerator
from gnod.search import expand, filters, fusion, lexical, passages, vector
from gnod.search.constants import PIPELINE, Mode
from gnod.search.grammar import QuerySyntaxError
from gnod.search.snippet import match_spans
from gnod.store import documents as docstore
from gnod.store import symbols as symstore
from gnod.store.llm_cache import key as cache_key
from gnod.text.language import detect_language
from gnod.text.stopwords import is_stopword
from gnod.wire import said

if TYPE_CHECKING:
    import apsw
    import numpy as np

    from gnod.search.vector_index import VectorIndex
    from gnod.store.lexical_index import LexicalIndex
    from gnod.text.analyzer import AnalyzerSet

log = logging.getLogger("gnod.query")
T = TypeVar("T")


class VectorSource(NamedTuple):
    """What vector search runs on: the embedder whose vectors are served, and their index."""

    uri: str
    vector_index: VectorIndex
    lag: str | None  # what the vectors cannot see yet (chunks still to embed), if anything
    # The share of the chunks that have vectors: a list drawn from 1 % of a collection
    # being embedded ranked that 1 % first, above the words' best matches, so a vector
    # list weighs in the fusion by that share (fully embedded: its kind's weight).
    coverage: float = 1.0


class Cache(Protocol):
    """The LLM cache (gnod.store.llm_cache.LlmCache): expansions and rerank scores."""

    def get_expansion(self, k: str) -> bytes | None: ...
    def put_expansion(self, k: str, value: bytes) -> None: ...
    def get_scores(self, keys: Sequence[str]) -> dict[str, float]: ...
    def put_scores(self, scores: dict[str, float]) -> None: ...


class Ports(Protocol):
    """What the pipeline needs of gnod. Model ports raise ModelUnavailable for a model
    that cannot be had (the stage is then skipped and the result says why)."""

    @property
    def cache(self) -> Cache: ...

    async def read(self, fn: Callable[[apsw.Connection, AnalyzerSet], T]) -> T:
        """`fn` with a read connection and the analyzers, off the event loop."""

    async def lexical(self) -> LexicalIndex: ...

    def language_counts(self, conn: apsw.Connection) -> dict[str | None, int]: ...

    def vectors(self) -> VectorSource | str:
        """What vector search runs on, or why it cannot run (with the fix)."""

    async def embed(self, uri: str, queries: Sequence[str], documents: Sequence[str]) -> list[np.ndarray]:
        """Vectors of `queries` (as queries), then of `documents`, by the embedder `uri`."""

    async def reranker(self) -> Reranker: ...

    async def rerank(self, model: Reranker, query: str, texts: Sequence[str]) -> list[float]: ...

    async def generator(self) -> TextGenerator: ...

    async def generate(self, messages: list[dict[str, str]], max_tokens: int) -> str: ...


class Given(NamedTuple):
    """Variants a client wrote itself (an agent), searched whatever the BM25 signal."""

    lexical: list[str]
    semantic: list[str]
    hyde: str | None


@dataclass(frozen=True)
class Request:
    query: str
    limit: int
    mode: str = "standard"
    min_score: float = 0.0
    expand: bool = True
    rerank: bool = True
    given: Given | None = None
    where: filters.Filter = filters.NO_FILTER
    scope: int = 1  # collections searched: with several, dedup may eat slots


@dataclass
class Candidate:
    """A pool member with what later stages learn about it."""

    fused: fusion.Fused
    doc: docstore.DocRow
    position: int  # 1-based, in fused order after dedup
    chunks: list[passages.Chunk] | None = None
    vector_best: int | None = None  # seq of the chunk vector search matched best
    similarity: float | None = None  # that chunk's (1 + cos) / 2
    passage: passages.Passage | None = None
    focus: passages.Focus | None = None  # the preview window of the passage
    rerank: float | None = None
    rerank_cached: bool = False
    floor: float = 0.0


@dataclass(frozen=True)
class Preview:
    text: str
    start_line: int
    end_line: int
    complete: bool  # the whole document
    truncated: bool = False
    matches: list[list[int]] = field(default_factory=list)
    symbol: str | None = None  # in source code: the definition the passage starts in


@dataclass(frozen=True)
class Ranked:
    """A result: its candidate, final score and preview."""

    candidate: Candidate
    score: float
    preview: Preview


@dataclass(frozen=True)
class StageTime:
    name: str
    ms: float
    skipped: str | None = None  # why it did not run


@dataclass(frozen=True)
class ExpansionUsed:
    """The variants searched beside the query, and where they came from."""

    lexical: list[str]
    semantic: list[str]
    hyde: str | None
    model: str  # the generator; "" when the client gave them
    prompt: str
    prompt_version: str
    cached: bool
    source: Literal["generator", "client"] = "generator"


@dataclass
class Outcome:
    mode: str
    hits: list[Ranked]
    candidates: int  # documents in any list, after fusion
    pool: int  # after dedup, at most the mode's pool
    reranked: int
    expansion: ExpansionUsed | None
    degraded: list[str]
    notes: list[str]
    stages: list[StageTime]
    lists: list[fusion.RankedList]
    strong: dict[str, Any]  # the strong-signal check's inputs and verdict
    models: dict[str, str]  # role → the model that served it
    blended: dict[fusion.DocId, fusion.Blended]
    synthetic: dict[fusion.DocId, fusion.Synthetic] | None  # smart-skip scores


class _Clock:
    """Stage timings, in order."""

    def __init__(self) -> None:
        self.stages: list[StageTime] = []

    async def time(self, name: str, aw: Awaitable[T]) -> T:
        t0 = time.perf_counter()
        try:
            return await aw
        finally:
            self.stages.append(StageTime(name=name, ms=round((time.perf_counter() - t0) * 1000, 3)))

    def skip(self, name: str, why: str) -> None:
        self.stages.append(StageTime(name=name, ms=0.0, skipped=why))


def _fetch(limit: int, factor: int, collections: int) -> int:
    """Per-list candidates; over-fetched when several collections may share content (dedup eats slots)."""
    n = max(limit * factor, PIPELINE.limits.min_fetch)
    return n * PIPELINE.dedup_overfetch if collections > 1 else n


def _ranked(
    kind: fusion.ListKind,
    source: fusion.Source,
    label: str,
    rows: Sequence[lexical.Row] | Sequence[vector.Row],
    asked: int,
    share: float = 1.0,
) -> fusion.RankedList:
    """A retrieval list for fusion; fewer rows than asked means it holds every match.
    `share`: of its weight, for a list that saw only part of the documents."""
    return fusion.RankedList(
        kind=kind,
        source=source,
        label=label,
        doc_ids=[r.doc_id for r in rows],
        scores=[r.score for r in rows],
        exhaustive=len(rows) < asked,
        share=share,
    )


def _model_message(role: str, e: ModelUnavailable, consequence: str) -> str:
    return f"no {role} model: {e.text()}; {consequence}"


class Hybrid:
    """One hybrid query: `run()` gives its Outcome; `passages_for` then serves `ask`."""

    def __init__(self, ports: Ports, request: Request) -> None:
        self.ports = ports
        self.r = request
        self.mode: Mode = PIPELINE.mode(request.mode)
        self.limit = min(request.limit, self.mode.max_results)
        self.clock = _Clock()
        self.notes: list[str] = []
        self.degraded: list[str] = []
        self.models: dict[str, str] = {}
        self.lists: list[fusion.RankedList] = []
        self.expansion: ExpansionUsed | None = None
        self.strong: dict[str, Any] = {}
        self.counts: dict[str | None, int] = {}  # documents per language in the index
        self.kept: list[Candidate] = []
        self.words: list[str] = []  # what passages and previews look for
        # The line where each document defining the query's one name defines it (the
        # original query's BM25: lexical.Result.defined): its passage opens there.
        self.defined_at: dict[int, int] = {}
        self._budget = PIPELINE.previews.passage_chars
        self.synthetic: dict[fusion.DocId, fusion.Synthetic] | None = None
        self.blended: dict[fusion.DocId, fusion.Blended] = {}

    # --- retrieval -----------------------------------------------------------------------

    async def _bm25(self, query: str, kind: fusion.ListKind, factor: int) -> tuple[fusion.RankedList, lexical.Result]:
        limit = _fetch(self.limit, factor, self.r.scope)
        index = await self.ports.lexical()
        res = await self.ports.read(
            lambda conn, an: lexical.search(index, conn, an, query, self.counts, limit, self.r.where)
        )
        return _ranked(kind, "bm25", query, res.rows, limit), res

    async def _expand(self, bm25_scores: list[float], absent: list[str]) -> expand.Expansion:
        """The query's expansion, none where BM25 alone is sure (fusion.strong_signal) of a
        query whose every word some document holds: one holding a single word of a
        question whose other words no document has (`year` in a .bib, for `how to keep
        motivation during the final year of a doctorate`) is no strong signal of it."""
        top = sorted(bm25_scores, reverse=True)[:2]
        strong = fusion.strong_signal(bm25_scores) and not absent
        self.strong = {
            "normalization": "|bm25| / (1 + |bm25|)",
            "top": top[0] if top else None,
            "second": top[1] if len(top) > 1 else None,
            "min_top": PIPELINE.strong_signal.min_top,
            "min_gap": PIPELINE.strong_signal.min_gap,
            "absent": absent,
            "skip_expansion": strong,
        }
        q = self.r.query
        if self.r.given is not None:
            return self._given(self.r.given)
        if not self.r.expand:
            self.clock.skip("expand", "--no-expand")
            return expand.Expansion()
        if len(q) > PIPELINE.expansion.max_query_chars:
            why = f"the query is long ({len(q):,} characters): searched as written"
            self.clock.skip("expand", why)
            self.notes.append(f"expansion skipped: {why}")
            return expand.Expansion()
        if strong:
            why = f"strong BM25 signal (top {top[0]:.2f}, gap {top[0] - (top[1] if len(top) > 1 else 0):.2f})"
            self.clock.skip("expand", why)
            self.notes.append(f"expansion skipped: {why}")
            return expand.Expansion()
        try:
            gen = await self.ports.generator()
        except ModelUnavailable as e:
            self.degraded.append(_model_message("generate", e, "queries are not expanded"))
            self.clock.skip("expand", "no generator")
            return expand.Expansion()
        self.models["generate"] = gen.uri
        lang = expand.prompt_language(detect_language(q))
        k = cache_key(" ".join(q.split()), gen.uri, expand.PROMPT_VERSION, lang)
        raw = self.ports.cache.get_expansion(k)
        if raw is not None:
            exp = msgspec.json.decode(raw, type=expand.Expansion)
            self.clock.skip("expand", "cached reply (no generation)")
        else:
            messages = presets.chat(presets.family(gen.uri), "", expand.expansion_prompt(q, lang))
            try:
                reply = await self.clock.time("expand", self.ports.generate(messages, PIPELINE.expansion.max_tokens))
            except Exception as e:  # a broken generation degrades to no expansion
                log.warning("query expansion failed: %s: %s", type(e).__name__, e)
                self.notes.append(f"expansion failed ({type(e).__name__}): searched without variants")
                return expand.Expansion()
            exp = expand.parse_expansion(presets.strip_thinking(reply), q)
            self.ports.cache.put_expansion(k, msgspec.json.encode(exp))
        if exp.empty:
            self.notes.append("the generator gave no usable variants: searched without them")
        self.expansion = ExpansionUsed(
            lexical=exp.lexical,
            semantic=exp.semantic,
            hyde=exp.hyde,
            model=gen.uri,
            prompt=lang,
            prompt_version=expand.PROMPT_VERSION,
            cached=raw is not None,
        )
        return exp

    def _given(self, v: Given) -> expand.Expansion:
        """The client's own variants (an agent wrote them): searched whatever the BM25 signal."""
        exp, dropped = expand.given(v.lexical, v.semantic, v.hyde, self.r.query)
        self.clock.skip("expand", "variants given by the client")
        if dropped:
            lim = PIPELINE.expansion
            self.notes.append(
                f"{dropped} given variants left out (repeats, the query itself, or past the caps: "
                f"{lim.max_lexical} lexical of ≤ {lim.max_lexical_chars} characters, "
                f"{lim.max_semantic} semantic of ≤ {lim.max_semantic_chars})"
            )
        self.expansion = ExpansionUsed(
            lexical=exp.lexical,
            semantic=exp.semantic,
            hyde=exp.hyde,
            model="",
            prompt="",
            prompt_version="",
            cached=False,
            source="client",
        )
        return exp

    async def _lexical_variants(self, exp: expand.Expansion) -> list[fusion.RankedList]:
        async def one(q: str) -> fusion.RankedList | None:
            try:
                ranked, _ = await self._bm25(q, "variant", PIPELINE.limits.bm25_variant)
            except QuerySyntaxError:
                self.notes.append(f"lexical variant dropped (not a valid query): {said(q)}")
                return None
            return ranked

        out = await asyncio.gather(*(one(q) for q in exp.lexical))
        return [r for r in out if r is not None]

    async def _vectors(self, exp: expand.Expansion) -> tuple[list[fusion.RankedList], dict[int, tuple[int, float]]]:
        """Vector lists, and per document its best chunk (seq) and similarity."""
        source = self.ports.vectors()
        if isinstance(source, str):
            self.degraded.append(f"no vector search: {source}; lexical only")
            self.clock.skip("vector", "no vectors")
            return [], {}
        queries: list[tuple[fusion.ListKind, str]] = [("original", self.r.query)]
        queries += [("variant", q) for q in exp.semantic]
        hyde = [presets.document_prompt(presets.family(source.uri), "", exp.hyde)] if exp.hyde else []
        try:
            vecs = await self.clock.time("embed", self.ports.embed(source.uri, [q for _, q in queries], hyde))
        except ModelUnavailable as e:
            self.degraded.append(_model_message("embed", e, "lexical only"))
            self.clock.skip("vector", "no embedder")
            return [], {}
        self.models["embed"] = source.uri
        if source.lag:
            self.notes.append(source.lag)
        if source.coverage < 1.0:
            share = int(source.coverage * 100)
            held = f"{share}%" if share else "under 1%"
            self.notes.append(f"vector results weigh in as the share of chunks embedded so far ({held})")
        labelled = queries + ([("hyde", exp.hyde)] if exp.hyde else [])
        factors = {
            "original": PIPELINE.limits.vector_original,
            "variant": PIPELINE.limits.vector_variant,
            "hyde": PIPELINE.limits.vector_hyde,
        }

        def knn(conn: apsw.Connection, _an: AnalyzerSet) -> list[tuple[fusion.ListKind, str, list[vector.Row], int]]:
            out = []
            for (kind, q), v in zip(labelled, vecs):
                limit = _fetch(self.limit, factors[kind], self.r.scope)
                out.append((kind, q, vector.search(conn, source.vector_index, v, limit, self.r.where), limit))
            return out

        results = await self.clock.time("vector", self.ports.read(knn))
        lists: list[fusion.RankedList] = []
        best: dict[int, tuple[int, float]] = {}
        for kind, q, rows, limit in results:
            lists.append(_ranked(kind, "vector", q, rows, limit, source.coverage))
            for r in rows:
                if r.doc_id not in best or r.score > best[r.doc_id][1]:
                    best[r.doc_id] = (r.chunk.seq, r.score)
        return lists, best

    async def _retrieve(self) -> tuple[expand.Expansion, dict[int, tuple[int, float]]]:
        """BM25 for the query, expansion, then BM25 and vector lists for everything at once."""
        ranked, bm25 = await self.clock.time(
            "bm25", self._bm25(self.r.query, "original", PIPELINE.limits.bm25_original)
        )
        self.notes += bm25.notes
        self.lists.append(ranked)
        self.defined_at = {doc_id: symbol.start_line for doc_id, symbol in bm25.defined.items()}
        # Strong signal needs an absolute confidence: search scores are relative to the best
        # hit, so #1 is always at 1.0 however weak the match.
        exp = await self._expand([abs(r.bm25) / (1.0 + abs(r.bm25)) for r in bm25.rows], bm25.absent)
        if exp.lexical:
            variants, (vlists, vbest) = await asyncio.gather(
                self.clock.time("bm25_variants", self._lexical_variants(exp)), self._vectors(exp)
            )
        else:
            self.clock.skip("bm25_variants", "no lexical variants")
            variants, (vlists, vbest) = [], await self._vectors(exp)
        self.lists += variants + vlists
        return exp, vbest

    # --- scoring -----------------------------------------------------------------------

    async def _pool(self, vbest: dict[int, tuple[int, float]]) -> tuple[list[fusion.Fused], list[Candidate]]:
        """Fusion of every list, then one candidate per content hash, at most the mode's pool."""
        t0 = time.perf_counter()
        fused = fusion.fuse(self.lists)
        found = await self.ports.read(lambda conn, _a: docstore.docs_by_ids(conn, [int(f.doc_id) for f in fused]))
        docs: dict[fusion.DocId, docstore.DocRow] = {doc_id: doc for doc_id, doc in found.items()}
        fused = [f for f in fused if f.doc_id in docs]  # deleted since the lists were read
        pool = fusion.dedup_by_content_hash(fused, lambda f: docs[f.doc_id].mirror_hash, self.mode.pool)
        cands = [Candidate(fused=f, doc=docs[f.doc_id], position=i) for i, f in enumerate(pool, 1)]
        for c in cands:
            if c.fused.doc_id in vbest:
                c.vector_best, c.similarity = vbest[int(c.fused.doc_id)]
        self.clock.stages.append(StageTime(name="fusion", ms=round((time.perf_counter() - t0) * 1000, 3)))
        return fused, cands

    async def _load_chunks(self, cands: list[Candidate]) -> None:
        """Chunks and best passages of candidates that lack them (one read)."""
        todo = [c for c in cands if c.chunks is None]
        if not todo:
            return

        def load(conn: apsw.Connection, analyzers: AnalyzerSet) -> None:
            for c in todo:
                c.chunks = [
                    passages.Chunk(seq=s, text=t, start_line=a, end_line=b)
                    for _id, s, t, a, b in docstore.chunks_of(conn, c.doc.mirror_hash)
                ]
                an = analyzers.get(c.doc.language)
                stems = passages.query_stems(self.words, an)
                at = self.defined_at.get(c.doc.id)
                c.passage = passages.best_passage(c.chunks, stems, an, self._budget, c.vector_best, at)
                c.focus = passages.focus(c.passage, stems, an, PIPELINE.previews.passage_chars, at)

        await self.ports.read(load)

    async def _rerank(self, cands: list[Candidate], reranker: Reranker) -> None:
        """Rerank scores for `cands`: from the cache, the rest from the model within the
        rerank budget (best candidates first), in batches each at most as many as were
        scored before, the speed measured again after each: a first passage scored fast
        promised room for 14 more, which took 8.6 s of a 4 s budget. A candidate left out
        keeps `rerank` None."""
        bodies = [c.passage.text if c.passage else "" for c in cands]  # loaded for every candidate
        texts = [f"{c.doc.title}\n\n{body}" if c.doc.title else body for c, body in zip(cands, bodies)]
        query = passages.rerank_query(self.r.query, reranker.max_tokens)
        keys = [cache_key(query, t, reranker.uri) for t in texts]
        cached = self.ports.cache.get_scores(keys)
        miss = [i for i, k in enumerate(keys) if k not in cached]

        async def score(idx: list[int]) -> None:
            if idx:
                scores = await self.ports.rerank(reranker, query, [texts[i] for i in idx])
                fresh = {keys[i]: float(s) for i, s in zip(idx, scores)}
                self.ports.cache.put_scores(fresh)
                cached.update(fresh)

        t0 = time.perf_counter()
        done, todo = 0, miss
        while todo:
            seconds = time.perf_counter() - t0
            fits = fusion.rerank_quota(done, seconds, len(todo), PIPELINE) if done else PIPELINE.limits.rerank_min_k
            if fits <= 0:
                break
            batch = min(fits, max(done, PIPELINE.limits.rerank_min_k))
            await score(todo[:batch])
            done, todo = done + batch, todo[batch:]
        if todo:
            self.notes.append(
                f"reranked {len(cands) - len(todo)} of the {len(cands)} best candidates: the reranker scored "
                f"{done / (time.perf_counter() - t0):.1f} passages/s here, and a query spends about "
                f"{PIPELINE.limits.rerank_budget_s:g} s on it; the rest keep their fusion order"
            )
        for i, c in enumerate(cands):
            if keys[i] in cached:
                c.rerank = cached[keys[i]]
                c.rerank_cached = i not in miss

    async def _reranker(self, cands: list[Candidate]) -> Reranker | None:
        """The reranker, or None when this query goes without (smart skip sets synthetic scores)."""
        if not self.r.rerank:
            self.clock.skip("rerank", "--no-rerank")
            return None
        if fusion.should_skip_rerank(self.mode, len(cands)):
            why = f"smart skip: {len(cands)} candidates (< {PIPELINE.smart_skip.min_candidates})"
            self.clock.skip("rerank", why)
            n, cap = len(cands), PIPELINE.smart_skip.cap
            # Said to people: the stage's own `why` (smart skip, candidates) is for --explain.
            self.notes.append(
                f"{n} match{'es' if n != 1 else ''}, too few to rerank: scores are at most {cap:.2f}, "
                "unchecked by the reranker"
            )
            sims = {c.fused.doc_id: c.similarity for c in cands if c.similarity is not None}
            self.synthetic = {s.doc_id: s for s in fusion.smart_skip_scores([c.fused for c in cands], self.lists, sims)}
            return None
        try:
            reranker = await self.ports.reranker()
        except ModelUnavailable as e:
            self.degraded.append(_model_message("rerank", e, "fusion scores are used"))
            self.clock.skip("rerank", "no reranker")
            return None
        self.models["rerank"] = reranker.uri
        return reranker

    async def _score(self, cands: list[Candidate], keywords: list[str]) -> tuple[list[tuple[Candidate, float]], int]:
        """Final scores, best first: blended with the reranker, synthetic (smart skip) or fusion
        alone; and how many candidates have a rerank score."""
        reranker = await self._reranker(cands)
        if reranker is not None and cands:
            top = cands[: PIPELINE.limits.rerank_top_k]
            self._budget = passages.rerank_budget_chars(
                reranker.max_tokens, passages.rerank_query(self.r.query, reranker.max_tokens)
            )
            await self._load_chunks(top)
            try:
                await self.clock.time("rerank", self._rerank(top, reranker))
            except Exception as e:  # a failing reranker degrades to fusion scores
                log.warning("rerank failed: %s: %s", type(e).__name__, e)
                self.degraded.append(f"the reranker failed ({type(e).__name__}: {e}); fusion scores are used")
                for c in top:
                    c.rerank = None
        scored = [c for c in cands if c.rerank is not None]

        # The keyword floor lifts whatever stands in for relevance: rerank or synthetic scores.
        floored = cands if self.synthetic is not None else scored
        await self._load_chunks(floored)
        for c in floored:
            text = c.doc.title + "\n" + "\n".join(ch.text for ch in c.chunks or [])
            c.floor = fusion.keyword_floor(keywords, text)

        final: list[tuple[Candidate, float]]
        if self.synthetic is not None:
            synthetic = self.synthetic
            final = [(c, max(synthetic[c.fused.doc_id].score, c.floor)) for c in cands]
            final.sort(key=lambda cs: (-cs[1], cs[0].position))
        elif scored:
            by_id = {c.fused.doc_id: c for c in cands}
            blended = fusion.blend(
                [c.fused for c in cands], {c.fused.doc_id: max(c.rerank or 0.0, c.floor) for c in scored}
            )
            self.blended = {b.doc_id: b for b in blended}
            final = [(by_id[b.doc_id], b.score) for b in blended]
        else:
            ceiling = fusion.fusion_ceiling(self.lists)
            final = [(c, min(1.0, c.fused.score / ceiling) if ceiling else 0.0) for c in cands]
        return final, len(scored)

    # --- the pipeline ------------------------------------------------------------------

    async def run(self) -> Outcome:
        """Raises grammar.QuerySyntaxError for a malformed query (fusion.DeepQueryError for
        a deep query with too few keywords)."""
        r = self.r
        if r.limit > self.mode.max_results:
            self.notes.append(
                f"a limit of {r.limit} is above {self.mode.name} mode's maximum: "
                f"at most {self.mode.max_results} results"
            )
        self.counts = await self.ports.read(lambda conn, _a: self.ports.language_counts(conn))
        langs = [lang for lang in lexical.query_languages(r.query, self.counts) if lang] or ["english"]
        keywords = (
            fusion.deep_mode_check(r.query, langs) if self.mode.min_keywords else fusion.query_keywords(r.query, langs)
        )
        exp, vbest = await self._retrieve()
        self.words = passages.query_words([r.query, *exp.lexical], lambda t: is_stopword(t, langs))
        fused, cands = await self._pool(vbest)
        final, reranked = await self._score(cands, keywords)

        min_score = max(r.min_score, PIPELINE.score_floor)
        kept = fusion.apply_score_floor(final, min_score, key=lambda cs: cs[1])
        dropped = len(final) - len(kept)
        if dropped:
            self.notes.append(f"{dropped} candidates below the score floor {min_score:.2f} dropped")
        kept = kept[: self.limit]
        self.kept = [c for c, _ in kept]
        hits = await self.clock.time("previews", self._previews(kept))
        return Outcome(
            mode=self.mode.name,
            hits=hits,
            candidates=len(fused),
            pool=len(cands),
            reranked=reranked,
            expansion=self.expansion,
            degraded=self.degraded,
            notes=self.notes,
            stages=self.clock.stages,
            lists=self.lists,
            strong=self.strong,
            models=self.models,
            blended=self.blended,
            synthetic=self.synthetic,
        )

    async def _previews(self, kept: list[tuple[Candidate, float]]) -> list[Ranked]:
        """Each result's preview: its best passage, or the whole of a short document the
        reranker is confident of; with the query's words marked."""
        self._budget = PIPELINE.previews.passage_chars
        await self._load_chunks([c for c, _ in kept])
        contents = await self.ports.read(
            lambda conn, _a: {
                c.doc.mirror_hash: docstore.content_of(conn, c.doc.mirror_hash)
                for c, _ in kept[: self.mode.preview_expand_top]
            }
        )
        shown = [
            (c, score, self._preview(c, rank, contents.get(c.doc.mirror_hash)))
            for rank, (c, score) in enumerate(kept, 1)
        ]

        def mark(conn: apsw.Connection, analyzers: AnalyzerSet) -> list[Ranked]:
            """Offsets of the query's words (stems in each document's language, or as typed)."""
            typed = frozenset(self.words)
            # A whole document is in no one definition.
            parts = [c.doc for c, _, (_, _, _, complete, _) in shown if not complete]
            defined = symstore.of_documents(conn, [(doc.rel_path, doc.mirror_hash) for doc in parts])
            out = []
            for c, score, (text, start, end, complete, truncated) in shown:
                an = analyzers.get(c.doc.language)
                matches = match_spans(text, an, typed | passages.query_stems(self.words, an))
                symbol = (
                    None
                    if complete
                    else symstore.label(defined.get(c.doc.mirror_hash, []), start, end)
                    or _section(conn, c.doc, start, contents.get(c.doc.mirror_hash))
                )
                out.append(Ranked(c, score, Preview(text, start, end, complete, truncated, matches, symbol)))
            return out

        return await self.ports.read(mark)

    def _preview(self, c: Candidate, rank: int, content: tuple[str, int] | None) -> tuple[str, int, int, bool, bool]:
        """(text, first line, last line, the whole document, cut short)."""
        rerank_final = max(c.rerank, c.floor) if c.rerank is not None else None
        if content is not None and fusion.auto_expand_preview(self.mode, rank, rerank_final, len(content[0])):
            text = content[0]
            return text, 1, text.count("\n") + 1, True, False
        f = c.focus or passages.Focus(text="", start_line=1, end_line=1, truncated=False)
        return f.text, f.start_line, f.end_line, False, f.truncated

    async def passages_for(self, n: int, budget_chars: int) -> list[passages.Passage]:
        """Best passages of the first `n` results, `budget_chars` each (for `ask`)."""
        cands = self.kept[:n]
        await self._load_chunks(cands)

        def pick(_conn: apsw.Connection, analyzers: AnalyzerSet) -> list[passages.Passage]:
            out = []
            for c in cands:
                an = analyzers.get(c.doc.language)
                stems = passages.query_stems(self.words, an)
                at = self.defined_at.get(c.doc.id)
                out.append(passages.best_passage(c.chunks or [], stems, an, budget_chars, c.vector_best, at))
            return out

        return await self.ports.read(pick)


def _section(conn: apsw.Connection, doc: docstore.DocRow, line: int, content: tuple[str, int] | None) -> str | None:
    """docstore.section_at, from the text read already for the top previews where it was."""
    return (
        docstore.section_label(doc, content[0], line) if content is not None else docstore.section_at(conn, doc, line)
    )
