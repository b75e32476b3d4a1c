"""The `query` method: the hybrid pipeline, stage by stage, with its explanation.

    BM25(original) → strong signal? → expansion (cached) → BM25 per lexical variant
      ‖ vectors for original, semantic variants and HyDE → fusion → content-hash dedup
      → rerank the best passages (cached) or smart skip → keyword floor → blend
      → score floor → previews

Every stage is timed; a stage that does not run says why. A missing model never
fails a query: the stage is skipped and the result's `degraded` says so once.
The tuning numbers all come from `gnod.search.constants.PIPELINE`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Sequence
from typing import Any, Literal, TypeVar, overload

import msgspec

from gnod import wire
from gnod.models import presets
from gnod.models.base import Model, ModelUnavailable, Reranker, Role, TextGenerator
from gnod.models.worker import INTERACTIVE
from gnod.protocol import (
    Distribution,
    ExpansionInfo,
    HitExplain,
    ListContribution,
    ListInfo,
    Preview,
    QueryCounts,
    QueryExplain,
    QueryHit,
    QueryParams,
    QueryResult,
    RerankInput,
    Stage,
    Variants,
)
from gnod.search import expand, filters, fusion, lexical, passages, vector
from gnod.search.constants import PIPELINE, Mode
from gnod.search.grammar import QuerySyntaxError
from gnod.search.snippet import match_spans
from gnod.server.checks import search_filter
from gnod.server.hits import identity
from gnod.server.rpc import Call, Daemon, RpcError
from gnod.server.watcher import freshness_list
from gnod.store import documents as docstore
from gnod.store.llm_cache import key as cache_key
from gnod.text.language import detect_language
from gnod.text.stopwords import is_stopword

log = logging.getLogger("gnod.query")
T = TypeVar("T")


class _Clock:
    """Stage timings for --explain, in order."""

    def __init__(self) -> None:
        self.stages: list[Stage] = []

    async def time(self, name: str, aw: Awaitable[T]) -> T:
        t0 = time.perf_counter()
        try:
            return await aw
        finally:
            self.stages.append(Stage(name=name, ms=round((time.perf_counter() - t0) * 1000, 3)))

    def skip(self, name: str, why: str) -> None:
        self.stages.append(Stage(name=name, ms=0.0, skipped=why))


class _Candidate(msgspec.Struct):
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
) -> fusion.RankedList:
    """A retrieval list for fusion; fewer rows than asked means it holds every match."""
    return fusion.RankedList(
        kind=kind,
        source=source,
        label=label,
        doc_ids=[r.doc_id for r in rows],
        scores=[r.score for r in rows],
        exhaustive=len(rows) < asked,
    )


def _model_message(role: str, e: ModelUnavailable, consequence: str) -> str:
    return f"no {role} model: {e.text()}; {consequence}"


class QueryRun:
    """One hybrid query; `run()` returns the QueryResult (and keeps its pieces for `ask`)."""

    def __init__(self, d: Daemon, p: QueryParams, where: filters.Filter) -> None:
        self.d = d
        self.p = p
        self.where = where
        self.mode: Mode = PIPELINE.mode(p.mode)
        self.limit = min(p.limit, self.mode.max_results)
        self.clock = _Clock()
        self.notes: list[str] = []
        self.degraded: list[str] = []
        self.models: dict[str, str] = {}
        self.lists: list[fusion.RankedList] = []
        self.expansion: ExpansionInfo | None = None
        self.strong: dict[str, Any] = {}
        self.counts: dict[str | None, int] = {}  # documents per language in the index
        self.kept: list[_Candidate] = []
        self.words: list[str] = []  # what passages and previews look for (run)
        self.scope = len(p.collections) or len(d.config.collections)  # collections searched
        self._budget = PIPELINE.previews.passage_chars
        self.synthetic: dict[fusion.DocId, fusion.Synthetic] | None = None  # smart-skip scores
        self.blended: dict[fusion.DocId, fusion.Blended] = {}

    # --- helpers ---------------------------------------------------------------------

    @overload
    async def _model(self, role: Literal["rerank"], consequence: str) -> Reranker | None: ...
    @overload
    async def _model(self, role: Literal["generate"], consequence: str) -> TextGenerator | None: ...
    async def _model(self, role: Role, consequence: str) -> Model | None:
        try:
            m = await self.d.models.get(role)
        except ModelUnavailable as e:
            self.degraded.append(_model_message(role, e, consequence))
            return None
        self.models[role] = m.uri
        return m

    async def _bm25(self, query: str, kind: fusion.ListKind, factor: int) -> tuple[fusion.RankedList, lexical.Result]:
        limit = _fetch(self.limit, factor, self.scope)
        index = await self.d.lexical()
        res = await self.d.read(lambda conn, an: lexical.search(index, conn, an, query, self.counts, limit, self.where))
        return _ranked(kind, "bm25", query, res.rows, limit), res

    # --- stages ----------------------------------------------------------------------

    async def _expand(self, bm25_scores: list[float]) -> expand.Expansion:
        top = sorted(bm25_scores, reverse=True)[:2]
        self.strong = {
            "normalization": "|bm25| / (1 + |bm25|)",
            "top": top[0] if top else None,
            "second": top[1] if len(top) > 1 else None,
            "min_top": PIPELINE.strong_signal.min_top,
            "min_gap": PIPELINE.strong_signal.min_gap,
        }
        strong = fusion.strong_signal(bm25_scores)
        self.strong["skip_expansion"] = strong
        if self.p.variants is not None:
            return self._given(self.p.variants)
        if not self.p.expand:
            self.clock.skip("expand", "--no-expand")
            return expand.Expansion()
        if len(self.p.query) > PIPELINE.expansion.max_query_chars:
            why = f"the query is long ({len(self.p.query):,} characters): searched as written"
            self.clock.skip("expand", why)
            self.notes.append(f"expansion skipped: {why}")
            return expand.Expansion()
        if strong:
            why = f"strong BM25 signal (top {top[0]:.2f}, gap {top[0] - (top[1] if len(top) > 1 else 0):.2f})"
            self.clock.skip("expand", why)
            self.notes.append(f"expansion skipped: {why}")
            return expand.Expansion()
        gen = await self._model("generate", "queries are not expanded")
        if gen is None:
            self.clock.skip("expand", "no generator")
            return expand.Expansion()
        lang = expand.prompt_language(detect_language(self.p.query))
        k = cache_key(" ".join(self.p.query.split()), gen.uri, expand.PROMPT_VERSION, lang)
        raw = self.d.llm_cache.get_expansion(k)
        cached = raw is not None
        if raw is not None:
            exp = msgspec.json.decode(raw, type=expand.Expansion)
            self.clock.skip("expand", "cached reply (no generation)")
        else:
            prompt = expand.expansion_prompt(self.p.query, lang)
            messages = presets.chat(presets.family(gen.uri), "", prompt)
            try:
                reply = await self.clock.time(
                    "expand", self.d.models.generate(messages, max_tokens=PIPELINE.expansion.max_tokens)
                )
            except Exception as e:  # a broken generation degrades to no expansion
                log.warning("query expansion failed: %s: %s", type(e).__name__, e)
                self.notes.append(f"expansion failed ({type(e).__name__}): searched without variants")
                return expand.Expansion()
            exp = expand.parse_expansion(presets.strip_thinking(reply), self.p.query)
            self.d.llm_cache.put_expansion(k, msgspec.json.encode(exp))
        if exp.empty:
            self.notes.append("the generator gave no usable variants: searched without them")
        self.expansion = ExpansionInfo(
            lexical=exp.lexical,
            semantic=exp.semantic,
            hyde=exp.hyde,
            model=gen.uri,
            prompt=lang,
            prompt_version=expand.PROMPT_VERSION,
            cached=cached,
        )
        return exp

    def _given(self, v: Variants) -> expand.Expansion:
        """The client's own variants (an agent wrote them): searched whatever the BM25 signal."""
        exp, dropped = expand.given(v.lexical, v.semantic, v.hyde, self.p.query)
        self.clock.skip("expand", "variants given by the client")
        if dropped:
            lim = PIPELINE.expansion
            self.notes.append(
                f"{dropped} given variants left out (repeats, the query itself, or past the caps: "
                f"{lim.max_lexical} lexical of ≤ {lim.max_lexical_chars} characters, "
                f"{lim.max_semantic} semantic of ≤ {lim.max_semantic_chars})"
            )
        self.expansion = ExpansionInfo(
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
                self.notes.append(f"lexical variant dropped (not a valid query): {q!r}")
                return None
            return ranked

        out = await asyncio.gather(*(one(q) for q in exp.lexical))
        return [r for r in out if r is not None]

    async def _vectors(self, exp: expand.Expansion) -> tuple[list[fusion.RankedList], dict[int, tuple[int, float]]]:
        """Vector lists, and per document its best chunk (seq) and similarity."""
        served = self.d.vectors.index()
        if served is None:
            self.degraded.append(f"no vector search: {self.d.vectors.missing_reason()}; lexical only")
            self.clock.skip("vector", "no vectors")
            return [], {}
        model, index = served
        fam = presets.family(model.uri)
        queries = [("original", self.p.query)] + [("variant", q) for q in exp.semantic]

        def embed(m: Any) -> list:
            vecs = [m.embed_query(q) for _, q in queries]
            if exp.hyde:
                vecs.append(m.embed_documents([presets.document_prompt(fam, "", exp.hyde)])[0])
            return vecs

        try:
            vecs = await self.clock.time("embed", self.d.models.run("embed", embed, INTERACTIVE, uri=model.uri))
        except ModelUnavailable as e:
            self.degraded.append(_model_message("embed", e, "lexical only"))
            self.clock.skip("vector", "no embedder")
            return [], {}
        self.models["embed"] = model.uri
        lag = self.d.vectors.lag_note()
        if lag:
            self.notes.append(lag)
        labelled = queries + ([("hyde", exp.hyde)] if exp.hyde else [])
        factors = {
            "original": PIPELINE.limits.vector_original,
            "variant": PIPELINE.limits.vector_variant,
            "hyde": PIPELINE.limits.vector_hyde,
        }

        def knn(conn, _an) -> list:
            out = []
            for (kind, q), v in zip(labelled, vecs):
                limit = _fetch(self.limit, factors[kind], self.scope)
                out.append((kind, q, vector.search(conn, index, v, limit, self.where), limit))
            return out

        results = await self.clock.time("vector", self.d.read(knn))
        lists: list[fusion.RankedList] = []
        best: dict[int, tuple[int, float]] = {}
        for kind, q, rows, limit in results:
            lists.append(_ranked(kind, "vector", q, rows, limit))
            for r in rows:
                if r.doc_id not in best or r.score > best[r.doc_id][1]:
                    best[r.doc_id] = (r.chunk.seq, r.score)
        return lists, best

    async def _load_chunks(self, cands: list[_Candidate], words: list[str]) -> None:
        """Chunks and best passages of candidates that lack them (one read)."""
        todo = [c for c in cands if c.chunks is None]
        if not todo:
            return

        def load(conn, analyzers) -> None:
            for c in todo:
                c.chunks = [
                    passages.Chunk(seq=s, text=t, start_line=a, end_line=b)
                    for _id, s, t, a, b in docstore.chunks_of(conn, c.doc.mirror_hash)
                ]
                an = analyzers.get(c.doc.language)
                stems = passages.query_stems(words, an)
                c.passage = passages.best_passage(c.chunks, stems, an, self._budget, c.vector_best)
                c.focus = passages.focus(c.passage, stems, an, PIPELINE.previews.passage_chars)

        await self.d.read(load)

    async def _rerank(self, cands: list[_Candidate], reranker: Any) -> None:
        """Rerank scores for `cands`: from the cache, the rest from the model within the
        rerank budget (best candidates first); a candidate left out keeps `rerank` None."""
        bodies = [c.passage.text if c.passage else "" for c in cands]  # loaded for every candidate
        texts = [f"{c.doc.title}\n\n{body}" if c.doc.title else body for c, body in zip(cands, bodies)]
        query = passages.rerank_query(self.p.query, reranker.max_tokens)
        keys = [cache_key(query, t, reranker.uri) for t in texts]
        cached = self.d.llm_cache.get_scores(keys)
        miss = [i for i, k in enumerate(keys) if k not in cached]

        async def score(idx: list[int]) -> None:
            if idx:
                scores = await self.d.models.run(
                    "rerank", lambda m: m.score(query, [texts[i] for i in idx]), INTERACTIVE, uri=reranker.uri
                )
                fresh = {keys[i]: float(s) for i, s in zip(idx, scores)}
                self.d.llm_cache.put_scores(fresh)
                cached.update(fresh)

        first, rest = miss[: PIPELINE.limits.rerank_min_k], miss[PIPELINE.limits.rerank_min_k :]
        t0 = time.perf_counter()
        await score(first)
        seconds = time.perf_counter() - t0
        quota = fusion.rerank_quota(len(first), seconds, len(rest)) if rest else 0
        await score(rest[:quota])
        if len(rest) > quota:
            self.notes.append(
                f"reranked {len(cands) - len(rest) + quota} of {len(cands)} candidates: the reranker scored "
                f"{len(first) / seconds:.1f} passages/s here, and a query spends about "
                f"{PIPELINE.limits.rerank_budget_s:g} s on it; the rest keep their fusion order"
            )
        for i, c in enumerate(cands):
            if keys[i] in cached:
                c.rerank = cached[keys[i]]
                c.rerank_cached = i not in miss

    # --- the pipeline ------------------------------------------------------------------

    async def run(self) -> QueryResult:
        t0 = time.perf_counter()
        p = self.p
        if p.limit > self.mode.max_results:
            self.notes.append(
                f"a limit of {p.limit} is above {self.mode.name} mode's maximum: "
                f"at most {self.mode.max_results} results"
            )
        self.counts = await self.d.read(lambda conn, _a: self.d.language_counts(conn))
        langs = [lang for lang in lexical.query_languages(p.query, self.counts) if lang] or ["english"]
        keywords = (
            fusion.deep_mode_check(p.query, langs) if self.mode.min_keywords else fusion.query_keywords(p.query, langs)
        )
        exp, vbest = await self._retrieve()
        self.words = passages.query_words([p.query, *exp.lexical], lambda t: is_stopword(t, langs))
        fused, cands = await self._pool(vbest)
        final, scored = await self._score(cands, keywords, self.words)

        min_score = max(p.min_score, PIPELINE.score_floor)
        kept = fusion.apply_score_floor(final, min_score, key=lambda cs: cs[1])
        dropped = len(final) - len(kept)
        if dropped:
            self.notes.append(f"{dropped} candidates below the score floor {min_score:.2f} dropped")
        kept = kept[: self.limit]
        self.kept = [c for c, _ in kept]
        hits = await self.clock.time("previews", self._hits(kept, self.words))
        names = p.collections or [c.name for c in self.d.config.collections]
        return QueryResult(
            query=p.query,
            mode=self.mode.name,
            hits=hits,
            counts=QueryCounts(candidates=len(fused), pool=len(cands), reranked=scored, returned=len(hits)),
            distribution=_distribution(self.kept),
            expansion=self.expansion,
            degraded=self.degraded,
            notes=self.notes,
            took_ms=round((time.perf_counter() - t0) * 1000, 3),
            explain=self._explain() if p.explain else None,
            freshness=freshness_list(self.d.watcher, names),
        )

    async def _retrieve(self) -> tuple[expand.Expansion, dict[int, tuple[int, float]]]:
        """BM25 for the query, expansion, then BM25 and vector lists for everything at once."""
        ranked, bm25 = await self.clock.time(
            "bm25", self._bm25(self.p.query, "original", PIPELINE.limits.bm25_original)
        )
        self.notes += bm25.notes
        self.lists.append(ranked)
        # Strong signal needs an absolute confidence: search scores are relative to the best
        # hit, so #1 is always at 1.0 however weak the match.
        exp = await self._expand([abs(r.bm25) / (1.0 + abs(r.bm25)) for r in bm25.rows])
        if exp.lexical:
            variants, (vlists, vbest) = await asyncio.gather(
                self.clock.time("bm25_variants", self._lexical_variants(exp)), self._vectors(exp)
            )
        else:
            self.clock.skip("bm25_variants", "no lexical variants")
            variants, (vlists, vbest) = [], await self._vectors(exp)
        self.lists += variants + vlists
        return exp, vbest

    async def _pool(self, vbest: dict[int, tuple[int, float]]) -> tuple[list[fusion.Fused], list[_Candidate]]:
        """Fusion of every list, then one candidate per content hash, at most the mode's pool."""
        t0 = time.perf_counter()
        fused = fusion.fuse(self.lists)
        found = await self.d.read(lambda conn, _a: docstore.docs_by_ids(conn, [int(f.doc_id) for f in fused]))
        docs: dict[fusion.DocId, docstore.DocRow] = {doc_id: doc for doc_id, doc in found.items()}
        fused = [f for f in fused if f.doc_id in docs]  # deleted since the lists were read
        pool = fusion.dedup_by_content_hash(fused, lambda f: docs[f.doc_id].mirror_hash, self.mode.pool)
        cands = [_Candidate(fused=f, doc=docs[f.doc_id], position=i) for i, f in enumerate(pool, 1)]
        for c in cands:
            if c.fused.doc_id in vbest:
                c.vector_best, c.similarity = vbest[c.fused.doc_id]
        self.clock.stages.append(Stage(name="fusion", ms=round((time.perf_counter() - t0) * 1000, 3)))
        return fused, cands

    async def _score(
        self, cands: list[_Candidate], keywords: list[str], words: list[str]
    ) -> tuple[list[tuple[_Candidate, float]], int]:
        """Final scores, best first: blended with the reranker, synthetic (smart skip) or fusion
        alone; and how many candidates have a rerank score."""
        p = self.p
        reranker = None
        if not p.rerank:
            self.clock.skip("rerank", "--no-rerank")
        elif fusion.should_skip_rerank(self.mode, len(cands)):
            why = f"smart skip: {len(cands)} candidates (< {PIPELINE.smart_skip.min_candidates})"
            self.clock.skip("rerank", why)
            self.notes.append(f"{why}; synthetic scores capped at {PIPELINE.smart_skip.cap:.2f}")
            sims = {c.fused.doc_id: c.similarity for c in cands if c.similarity is not None}
            self.synthetic = {s.doc_id: s for s in fusion.smart_skip_scores([c.fused for c in cands], self.lists, sims)}
        else:
            reranker = await self._model("rerank", "fusion scores are used")
            if reranker is None:
                self.clock.skip("rerank", "no reranker")
        if reranker is not None and cands:
            top = cands[: PIPELINE.limits.rerank_top_k]
            self._budget = passages.rerank_budget_chars(
                reranker.max_tokens, passages.rerank_query(p.query, reranker.max_tokens)
            )
            await self._load_chunks(top, words)
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
        await self._load_chunks(floored, words)
        for c in floored:
            text = c.doc.title + "\n" + "\n".join(ch.text for ch in c.chunks or [])
            c.floor = fusion.keyword_floor(keywords, text)

        if self.synthetic is not None:
            final = [(c, max(self.synthetic[c.fused.doc_id].score, c.floor)) for c in cands]
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

    async def _hits(self, kept: list[tuple[_Candidate, float]], words: list[str]) -> list[QueryHit]:
        """Previews (best passage, or the whole of a short confident document) and explanations."""
        self._budget = PIPELINE.previews.passage_chars
        await self._load_chunks([c for c, _ in kept], words)
        contents = await self.d.read(
            lambda conn, _a: {
                c.doc.mirror_hash: docstore.content_of(conn, c.doc.mirror_hash)
                for c, _ in kept[: self.mode.preview_expand_top]
            }
        )
        hits = [self._hit(c, score, rank, contents.get(c.doc.mirror_hash)) for rank, (c, score) in enumerate(kept, 1)]

        def mark(_conn, analyzers) -> None:
            """Offsets of the query's words (stems in each document's language, or as typed)."""
            typed = frozenset(words)
            for (c, _), h in zip(kept, hits):
                an = analyzers.get(c.doc.language)
                h.preview.matches = match_spans(h.preview.text, an, typed | passages.query_stems(words, an))

        await self.d.read(mark)
        return hits

    def _hit(self, c: _Candidate, score: float, rank: int, content: tuple[str, int] | None) -> QueryHit:
        blended = self.blended.get(c.fused.doc_id)
        synth = self.synthetic.get(c.fused.doc_id) if self.synthetic is not None else None
        rerank_final = max(c.rerank, c.floor) if c.rerank is not None else None
        if content is not None and fusion.auto_expand_preview(self.mode, rank, rerank_final, len(content[0])):
            text = content[0]
            lines = text.count("\n") + 1
            preview = Preview(text=text, start_line=1, end_line=lines, complete=True)
        else:
            f = c.focus or passages.Focus(text="", start_line=1, end_line=1, truncated=False)
            preview = Preview(
                text=f.text, start_line=f.start_line, end_line=f.end_line, complete=False, truncated=f.truncated
            )
        explain = None
        if self.p.explain:
            fz = c.fused
            floors = []
            if c.rerank is not None and c.floor > c.rerank:
                floors.append(f"keyword floor raised rerank {c.rerank:.3f} → {c.floor:.3f}")
            if synth is not None and c.floor > synth.score:
                floors.append(f"keyword floor raised synthetic {synth.score:.3f} → {c.floor:.3f}")
            explain = HitExplain(
                fused_position=c.position,
                contributions=[
                    ListContribution(
                        list=x.list_index,
                        source=x.source,
                        kind=x.kind,
                        rank=x.rank,
                        score=x.score,
                        weight=x.weight,
                        standard=round(x.standard, 6),
                        contribution=round(x.contribution, 6),
                    )
                    for x in fz.contributions
                ],
                fusion=round(fz.score, 6),
                fusion_norm=round(blended.fusion_norm if blended else score if synth is None else synth.x, 6),
                rerank=round(c.rerank, 6) if c.rerank is not None else None,
                keyword_floor=round(c.floor, 6),
                synthetic=round(synth.score, 6) if synth is not None else None,
                fusion_weight=blended.fusion_weight if blended else (0.0 if synth else 1.0),
                rerank_weight=blended.rerank_weight if blended else 0.0,
                floors=floors,
                rerank_input=(
                    RerankInput(chunks=c.passage.seqs, chars=len(c.passage.text), cached=c.rerank_cached)
                    if c.rerank is not None and c.passage is not None
                    else None
                ),
            )
        return QueryHit(
            **identity(c.doc),
            language=c.doc.language,
            score=round(score, 6),
            sources=sorted({x.source for x in c.fused.contributions}),
            preview=preview,
            explain=explain,
        )

    async def passages_for(self, n: int, budget_chars: int) -> list[passages.Passage]:
        """Best passages of the first `n` results, `budget_chars` each (for `ask`)."""
        cands = self.kept[:n]
        await self._load_chunks(cands, self.words)

        def pick(_conn, analyzers) -> list[passages.Passage]:
            out = []
            for c in cands:
                an = analyzers.get(c.doc.language)
                out.append(
                    passages.best_passage(
                        c.chunks or [], passages.query_stems(self.words, an), an, budget_chars, c.vector_best
                    )
                )
            return out

        return await self.d.read(pick)

    def _explain(self) -> QueryExplain:
        return QueryExplain(
            constants=PIPELINE.explain(),
            prompt_version=expand.PROMPT_VERSION,
            stages=self.clock.stages,
            lists=[
                ListInfo(
                    source=x.source,
                    kind=x.kind,
                    query=x.label,
                    hits=len(x.doc_ids),
                    weight=x.effective_weight(),
                    floor=round(sc.floor, 6),
                    deviation=round(sc.deviation, 6),
                )
                for x, sc in ((x, fusion.scale(x)) for x in self.lists)
            ],
            strong_signal=self.strong,
            models=self.models,
        )


def _distribution(cands: list[_Candidate]) -> Distribution:
    cols: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    for c in cands:
        cols[c.doc.collection] += 1
        try:
            meta = json.loads(c.doc.metadata) if c.doc.metadata else {}
        except ValueError:
            meta = {}
        tags.update(docstore.tags_of(meta) if isinstance(meta, dict) else [])
    return Distribution(collections=dict(cols.most_common()), tags=dict(tags.most_common()))


async def run_query(d: Daemon, p: QueryParams) -> tuple[QueryRun, QueryResult]:
    where = search_filter(d, p.collections, p.filters)
    if p.wait_s and d.watcher is not None:
        names = p.collections or [c.name for c in d.config.collections]
        await d.watcher.wait_idle(names, p.wait_s)
    run = QueryRun(d, p, where)
    try:
        return run, await run.run()
    except QuerySyntaxError as e:
        raise RpcError(wire.INVALID_QUERY, e.message, {"query": p.query}) from None


async def query(d: Daemon, p: QueryParams, call: Call) -> QueryResult:
    return (await run_query(d, p))[1]
