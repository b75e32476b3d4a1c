"""The `ask` method: hybrid retrieval, a few diverse sources, a cited answer streamed as it is made."""

from __future__ import annotations

import logging
import time

from gnod import wire
from gnod.lines import file_line
from gnod.models import presets
from gnod.models.base import ModelUnavailable, TextGenerator
from gnod.protocol import AskParams, AskResult, QueryHit, QueryParams, Source, Token
from gnod.search import answer
from gnod.search.constants import ANSWER_MAX_CONTEXT_SHARE, ANSWER_SOURCE_CHARS, ANSWER_TEMPLATE_TOKENS
from gnod.search.passages import Passage
from gnod.server.query import run_query
from gnod.server.rpc import Call, Daemon, RpcError

log = logging.getLogger("gnod.ask")

# Results retrieved per wanted source: selection drops weak and repetitive ones.
RETRIEVE_FACTOR = 2


def _source(n: int, hit: QueryHit, passage: Passage, line_shifts: str) -> Source:
    return Source(
        n=n,
        docid=hit.docid,
        uri=hit.uri,
        title=hit.title,
        path=hit.path,
        abs_path=hit.abs_path,
        collection=hit.collection,
        start_line=file_line(line_shifts, passage.start_line),
        end_line=file_line(line_shifts, passage.end_line),
        score=hit.score,
        text=passage.text,
    )


async def ask(d: Daemon, p: AskParams, call: Call) -> AskResult:
    t0 = time.perf_counter()
    qp = QueryParams(
        query=p.query,
        limit=max(p.sources * RETRIEVE_FACTOR, 10),
        mode=p.mode,
        collections=p.collections,
        filters=p.filters,
        expand=p.expand,
        rerank=p.rerank,
        explain=p.explain,
        variants=p.variants,
    )
    run, result = await run_query(d, qp)

    def done(**kw) -> AskResult:
        return AskResult(query=p.query, retrieval=result, took_ms=round((time.perf_counter() - t0) * 1000, 3), **kw)

    if not result.hits:
        return done(
            answer=None,
            abstained=True,
            abstain_reason="nothing in your collections matches this question",
            sources=[],
            considered=[],
            model=None,
        )
    found = await run.passages_for(len(result.hits), ANSWER_SOURCE_CHARS)
    picks = answer.select([f.text for f in found], [h.score for h in result.hits], p.sources)
    shifts = [c.doc.line_shifts for c in run.kept[: len(found)]]
    considered = [_source(n, result.hits[i], found[i], shifts[i]) for n, i in enumerate(picks, 1)]
    if not p.answer:
        return done(answer=None, abstained=False, abstain_reason=None, sources=[], considered=considered, model=None)
    try:
        gen = await d.models.get("generate")
    except ModelUnavailable as e:
        raise RpcError(
            wire.MODEL_UNAVAILABLE,
            f"cannot answer: {e.text()}. The sources alone need no model: `answer: false` (gnoctl ask --no-answer)",
            {"role": "generate", "fix": e.fix, "reason": e.message},  # reason: for a page, which has no flags
        ) from None
    texts = [
        answer.SourceText(
            title=result.hits[i].title,
            location=f"{result.hits[i].collection}/{result.hits[i].path}:{file_line(shifts[i], found[i].start_line)}",
            text=found[i].text,
        )
        for i in picks
    ]
    family = presets.family(gen.uri)

    def fitted(m: TextGenerator) -> tuple[list[answer.SourceText], int]:
        """The sources that fit the model's context beside the answer, and the answer's
        most tokens (at most ANSWER_MAX_CONTEXT_SHARE of that context)."""
        if m.context is None:
            return texts, p.max_tokens
        most = min(p.max_tokens, int(m.context * ANSWER_MAX_CONTEXT_SHARE))
        room = m.context - most - ANSWER_TEMPLATE_TOKENS
        return answer.fit(texts, lambda kept: m.count_tokens(answer.SYSTEM + answer.prompt(p.query, kept)), room), most

    texts, max_tokens = await d.models.run("generate", fitted)
    considered = considered[: len(texts)]  # what the model was given
    messages = presets.chat(family, answer.SYSTEM, answer.prompt(p.query, texts))
    stream = p.stream and call.id is not None

    sent = 0

    def on_token(piece: str) -> None:
        nonlocal sent
        sent += 1
        call.notify_threadsafe("token", Token(id=call.id, text=piece))

    # A client that closed its socket cancels this call (its connection closes); one that
    # only stopped reading shows as a closed transport at the next token it misses.
    try:
        reply = await d.models.generate(
            messages, max_tokens=max_tokens, on_token=on_token if stream else None, gone=call.conn.writer.is_closing
        )
    finally:
        if call.conn.writer.is_closing():
            log.info("ask: the client hung up; stopped generating after %d tokens", sent)
    checked = answer.check(presets.strip_thinking(reply), len(considered))
    sources = [
        _source(new, result.hits[picks[old - 1]], found[picks[old - 1]], shifts[picks[old - 1]])
        for new, old in enumerate(checked.cited, 1)
    ]
    return done(
        answer=checked.answer,
        abstained=checked.abstained,
        abstain_reason=checked.reason,
        sources=sources,
        considered=considered,
        model=gen.uri,
    )
