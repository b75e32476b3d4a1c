"""The one-list retrievals: `search` (BM25) and `vsearch` (vectors).

The retrievers in `search/` return document ids and scores; here they become hits,
with snippets for `search` (gnod.server.searching, on a reader thread or in the search
process) and the best chunk for `vsearch`.
"""

from __future__ import annotations

import time

from gnod import wire
from gnod.lines import file_line
from gnod.models.base import ModelUnavailable, with_fix
from gnod.models.worker import INTERACTIVE
from gnod.protocol import SearchParams, SearchResult, VSearchHit, VSearchParams, VSearchResult
from gnod.search import vector
from gnod.search.grammar import QuerySyntaxError
from gnod.server.checks import search_filter
from gnod.server.hits import config_notes, failing_notes, identity
from gnod.server.rpc import Call, Daemon, RpcError, model_unavailable
from gnod.server.searching import UNDEFINED, answer
from gnod.server.watcher import freshness_list
from gnod.store import documents as docstore
from gnod.store import symbols as symstore


async def search(d: Daemon, p: SearchParams, call: Call) -> SearchResult:
    if p.snippets and p.limit > wire.SEARCH_RESULTS_MAX:
        raise RpcError(
            wire.INVALID_PARAMS,
            f"limit: at most {wire.SEARCH_RESULTS_MAX:,} results with their passages; a list of files "
            f"without them (`gnoctl search --files`; `snippets: false` in the protocol) takes up to "
            f"{wire.FILE_LIST_MAX:,}",
            {"limit": p.limit, "max": wire.SEARCH_RESULTS_MAX},
        )
    where = search_filter(d, p.collections, p.filters)
    names = p.collections or [c.name for c in d.config.collections]
    waited = await caught_up(d, names, p.wait_s)
    index = await d.lexical()

    def run(conn, analyzers) -> SearchResult:
        return answer(index, conn, analyzers, p, d.language_counts(conn), where)

    try:
        result = await d.read(run, remote=d.search_remote(p, where))
    except QuerySyntaxError as e:
        raise RpcError(wire.INVALID_QUERY, e.message, {"query": p.query}) from None
    result.freshness = freshness_list(d.watcher, names)
    if d.watcher is not None:
        result.notes += d.watcher.lag_notes(names, 0.0 if waited else p.wait_s)
    lag = d.symbols.lag_note() if p.symbol else d.ocr.lag_note()
    if lag:
        if p.symbol:  # what is not parsed yet may define it
            result.notes = [n for n in result.notes if not n.endswith(UNDEFINED)]
        result.notes.append(lag)
    result.notes += config_notes(d.config_error)
    return result


async def caught_up(d: Daemon, names: list[str], wait_s: float) -> bool:
    """Wait up to `wait_s` for what was saved in collections `names` before the call to
    be indexed, and for the pictures and scans saved just now to be read by OCR (a
    search's read-your-writes); False when the time ran out first."""
    if not wait_s:
        return True
    deadline = time.monotonic() + wait_s
    if d.watcher is not None and not await d.watcher.wait_idle(names, wait_s):
        return False
    return await d.ocr.wait_recent(names, max(0.0, deadline - time.monotonic()))


async def vsearch(d: Daemon, p: VSearchParams, call: Call) -> VSearchResult:
    t0 = time.perf_counter()
    where = search_filter(d, p.collections, p.filters)
    served = d.vectors.index()
    if served is None:
        # The reason carries its own fix where there is one (a model to pull, vectors to embed),
        # in `details` too, as every other MODEL_UNAVAILABLE gives it.
        reason, fix = d.vectors.missing()
        details = {"role": "embed", **({"fix": fix} if fix else {})}
        raise RpcError(wire.MODEL_UNAVAILABLE, f"vector search is unavailable: {with_fix(reason, fix)}", details)
    model, index = served
    try:
        qvec = await d.models.run("embed", lambda m: m.embed_query(p.query), INTERACTIVE, uri=model.uri)
    except ModelUnavailable as e:
        raise model_unavailable(e) from None

    def run(conn, _a) -> tuple[list[VSearchHit], list[str]]:
        rows = vector.search(conn, index, qvec, p.limit, where, p.min_score)
        docs = docstore.docs_by_ids(conn, [r.doc_id for r in rows])
        defined = symstore.of_documents(conn, [(doc.rel_path, doc.mirror_hash) for doc in docs.values()])
        hits = [
            VSearchHit(
                **identity(doc),
                score=r.score,
                cosine=r.cosine,
                chunk=r.chunk.seq,
                start_line=file_line(doc.line_shifts, r.chunk.start_line),
                end_line=file_line(doc.line_shifts, r.chunk.end_line),
                text=r.chunk.text,
                symbol=symstore.label(defined.get(doc.mirror_hash, []), r.chunk.start_line, r.chunk.end_line)
                or docstore.section_at(conn, doc, r.chunk.start_line),
            )
            for r in rows
            if (doc := docs.get(r.doc_id)) is not None
        ]
        return hits, failing_notes(docstore.failing(conn, [h.docid for h in hits]))

    hits, notes = await d.read(run)
    lag = d.vectors.lag_note()
    return VSearchResult(
        query=p.query,
        model=model.uri,
        hits=hits,
        took_ms=round((time.perf_counter() - t0) * 1000, 3),
        notes=notes + ([lag] if lag else []) + config_notes(d.config_error),
    )
