"""The `query` method: the hybrid pipeline (gnod.search.hybrid) over the daemon's
reads and models, and its outcome as the wire's QueryResult, explanation included."""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TypeVar

import apsw
import numpy as np

from gnod import wire
from gnod.lines import file_line
from gnod.models.base import Embedder, Reranker, TextGenerator
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
)
from gnod.search import expand, fusion, hybrid
from gnod.search.constants import PIPELINE
from gnod.search.grammar import QuerySyntaxError
from gnod.search.hybrid import Candidate, Given, Hybrid, Outcome, Ranked, Request, VectorSource
from gnod.server.checks import search_filter
from gnod.server.hits import config_notes, failing_notes, identity
from gnod.server.retrieval import caught_up
from gnod.server.rpc import Call, Daemon, RpcError
from gnod.server.watcher import freshness_list
from gnod.store import documents as docstore
from gnod.store.lexical_index import LexicalIndex
from gnod.store.llm_cache import LlmCache
from gnod.store.tags import tags_of
from gnod.text.analyzer import AnalyzerSet

T = TypeVar("T")


class DaemonPorts:
    """The pipeline's ports (gnod.search.hybrid.Ports) served by the daemon: reads on the
    clients' readers, models on the model thread at interactive priority."""

    def __init__(self, d: Daemon) -> None:
        self.d = d

    @property
    def cache(self) -> LlmCache:
        return self.d.llm_cache

    async def read(self, fn: Callable[[apsw.Connection, AnalyzerSet], T]) -> T:
        return await self.d.read(fn)

    async def lexical(self) -> LexicalIndex:
        return await self.d.lexical()

    def language_counts(self, conn: apsw.Connection) -> dict[str | None, int]:
        return self.d.language_counts(conn)

    def vectors(self) -> VectorSource | str:
        served = self.d.vectors.index()
        if served is None:
            return self.d.vectors.missing_reason()
        model, index = served
        return VectorSource(model.uri, index, self.d.vectors.lag_note(), self.d.vectors.coverage())

    async def embed(self, uri: str, queries: Sequence[str], documents: Sequence[str]) -> list[np.ndarray]:
        def embed(m: Embedder) -> list[np.ndarray]:
            vecs = [m.embed_query(q) for q in queries]
            return vecs + list(m.embed_documents(documents)) if documents else vecs

        return await self.d.models.run("embed", embed, INTERACTIVE, uri=uri)

    async def reranker(self) -> Reranker:
        return await self.d.models.get("rerank")

    async def rerank(self, model: Reranker, query: str, texts: Sequence[str]) -> list[float]:
        return await self.d.models.run("rerank", lambda m: m.score(query, texts), INTERACTIVE, uri=model.uri)

    async def generator(self) -> TextGenerator:
        return await self.d.models.get("generate")

    async def generate(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        return await self.d.models.generate(messages, max_tokens=max_tokens)


def _request(d: Daemon, p: QueryParams) -> Request:
    v = p.variants
    return Request(
        query=p.query,
        limit=p.limit,
        mode=p.mode,
        min_score=p.min_score,
        expand=p.expand,
        rerank=p.rerank,
        given=Given(v.lexical, v.semantic, v.hyde) if v is not None else None,
        where=search_filter(d, p.collections, p.filters),
        scope=len(p.collections) or len(d.config.collections),
    )


async def run_query(d: Daemon, p: QueryParams) -> tuple[Hybrid, QueryResult]:
    """The pipeline run (`ask` reads its passages) and its result."""
    request = _request(d, p)
    names = p.collections or [c.name for c in d.config.collections]
    waited = await caught_up(d, names, p.wait_s)
    run = Hybrid(DaemonPorts(d), request)
    t0 = time.perf_counter()
    try:
        out = await run.run()
    except QuerySyntaxError as e:
        raise RpcError(wire.INVALID_QUERY, e.message, {"query": p.query}) from None
    shown = [h.candidate.doc.id for h in out.hits]
    failing = await d.read(lambda conn, _a: docstore.failing(conn, shown)) if shown else []
    return run, QueryResult(
        query=p.query,
        mode=out.mode,
        hits=[_hit(out, h, p.explain) for h in out.hits],
        counts=QueryCounts(candidates=out.candidates, pool=out.pool, reranked=out.reranked, returned=len(out.hits)),
        distribution=_distribution([h.candidate for h in out.hits]),
        expansion=ExpansionInfo(**dataclasses.asdict(out.expansion)) if out.expansion else None,
        degraded=out.degraded,
        notes=out.notes
        + failing_notes(failing)
        + (d.watcher.lag_notes(names, 0.0 if waited else p.wait_s) if d.watcher is not None else [])
        + [lag for lag in [d.ocr.lag_note()] if lag]
        + config_notes(d.config_error),
        took_ms=round((time.perf_counter() - t0) * 1000, 3),
        explain=_explain(out) if p.explain else None,
        freshness=freshness_list(d.watcher, names),
    )


def _hit(out: Outcome, h: Ranked, explain: bool) -> QueryHit:
    c = h.candidate
    return QueryHit(
        **identity(c.doc),
        language=c.doc.language,
        score=round(h.score, 6),
        sources=sorted({x.source for x in c.fused.contributions}),
        preview=_preview(h.preview, c.doc.line_shifts),
        explain=_hit_explain(out, c, h.score) if explain else None,
    )


def _preview(p: hybrid.Preview, line_shifts: str) -> Preview:
    """The wire's preview, at the file's lines."""
    return Preview(
        **{
            **dataclasses.asdict(p),
            "start_line": file_line(line_shifts, p.start_line),
            "end_line": file_line(line_shifts, p.end_line),
        }
    )


def _hit_explain(out: Outcome, c: Candidate, score: float) -> HitExplain:
    """How a hit's score was made: its lists' votes, fusion, the reranker, blend, floors."""
    blended = out.blended.get(c.fused.doc_id)
    synth = out.synthetic.get(c.fused.doc_id) if out.synthetic is not None else None
    floors = []
    if c.rerank is not None and c.floor > c.rerank:
        floors.append(f"keyword floor raised rerank {c.rerank:.3f} → {c.floor:.3f}")
    if synth is not None and c.floor > synth.score:
        floors.append(f"keyword floor raised synthetic {synth.score:.3f} → {c.floor:.3f}")
    return HitExplain(
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
            for x in c.fused.contributions
        ],
        fusion=round(c.fused.score, 6),
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


def _explain(out: Outcome) -> QueryExplain:
    return QueryExplain(
        constants=PIPELINE.explain(),
        prompt_version=expand.PROMPT_VERSION,
        stages=[Stage(name=s.name, ms=s.ms, skipped=s.skipped) for s in out.stages],
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
            for x, sc in ((x, fusion.scale(x)) for x in out.lists)
        ],
        strong_signal=out.strong,
        models=out.models,
    )


def _distribution(cands: list[Candidate]) -> Distribution:
    cols: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    for c in cands:
        cols[c.doc.collection] += 1
        try:
            meta = json.loads(c.doc.metadata) if c.doc.metadata else {}
        except ValueError:
            meta = {}
        tags.update(tags_of(meta) if isinstance(meta, dict) else [])
    return Distribution(collections=dict(cols.most_common()), tags=dict(tags.most_common()))


async def query(d: Daemon, p: QueryParams, call: Call) -> QueryResult:
    return (await run_query(d, p))[1]
