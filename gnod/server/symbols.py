"""The parsing backlog: definitions found in source code after its text is searchable.

A background task finds the contents of source files not parsed yet, parses them a batch
at a time in the prepare pool's worker processes (tree-sitter holds the GIL while it
parses: on gnod's threads it would hold searches up) and stores what it found through
the single writer. It waits while a collection is being indexed, so a big ingest keeps
both cores, and it wakes when documents change. Until a file is parsed, `search
--symbol` does not find its definitions and says how many files are left.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from functools import partial

from gnod.ingest.symbols import parse_batch
from gnod.protocol import SymbolInfo
from gnod.server.background import IDLE_CHECK_S, in_worker, not_indexing, serve
from gnod.server.jobs import Writer, release_memory
from gnod.store import symbols as store
from gnod.store.db import empty_wal, reclaim_freed

log = logging.getLogger("gnod.symbols")

BATCH_CONTENTS = 64  # contents per worker call
BATCH_BYTES = 8 << 20  # stored (compressed) bytes per worker call, whichever comes first

Source = tuple[int, str, bytes | str]  # content id, grammar, stored markdown (store.symbols.sources)


class Symbols:
    def __init__(self, writer: Writer, read: Callable) -> None:
        self.writer = writer
        self._read = read  # Daemon.read on the background lane: fn(conn, analyzers)
        self.wake = asyncio.Event()
        self.parsing = False
        # Documents changed since the backlog was last looked at: status says `parsing`
        # until it is (a look at a big tree's backlog takes a while, and `pending` said
        # nothing was left meanwhile).
        self.due = False
        self.parsed = 0
        self.pending = 0
        self.rate: float | None = None  # contents parsed a second by this cycle, while it parses
        self.failed: str | None = None
        # Documents indexed from then on (unix seconds) are what the next look at the
        # backlog reads; None: every document (at start, and after a cycle that failed).
        self._since: int | None = None

    def info(self) -> SymbolInfo:
        return SymbolInfo(
            parsed=self.parsed,
            pending=self.pending,
            parsing=self.parsing or self.due,
            error=self.failed,
            rate=self.rate,
            eta_s=self._eta(),
        )

    def _eta(self) -> float | None:
        """Seconds until the backlog is parsed at this cycle's rate (while a collection is
        being indexed it waits: that is not counted)."""
        return self.pending / self.rate if self.pending and self.rate else None

    def lag_note(self) -> str | None:
        """What `search --symbol` cannot see yet."""
        if not self.pending:
            return (
                "source files just indexed are still being parsed: their definitions may not be found yet"
                if self.due
                else None
            )
        eta = self._eta()
        left = f" (about {round(eta)} s left)" if eta is not None else ""
        if self.pending == 1:
            return f"1 source file is still being parsed: its definitions are not found yet{left}"
        return f"{self.pending:,} source files are still being parsed: their definitions are not found yet{left}"

    async def run(self, stopping: asyncio.Event) -> None:
        await serve(
            self.wake, stopping, IDLE_CHECK_S, lambda: self._cycle(stopping), self._failed, "parsing source files", log
        )

    def changed(self) -> None:
        """Documents changed: the backlog is looked at again."""
        self.due = True
        self.wake.set()

    def _failed(self, why: str | None) -> None:
        self.failed = why
        if why is not None:
            self._since = None  # the next look reads the whole backlog again

    async def _cycle(self, stopping: asyncio.Event) -> None:
        self.due = False  # a change from here on is looked at by the next cycle
        self.parsing = True
        try:
            await self._parse_backlog(stopping)
        finally:
            self.parsing = False

    async def _parse_backlog(self, stopping: asyncio.Event) -> None:
        # Documents indexed during the last look may have been missed by it: a second of overlap.
        since, started = self._since, int(time.time()) - 1
        backlog = await self._read(lambda conn, _a: store.backlog(conn, since))
        if since is None:
            self.parsed = await self._read(lambda conn, _a: store.counts(conn))
        self.pending = len(backlog)
        self.rate = None
        cycle = _Cycle(len(backlog), time.monotonic())
        heads = (backlog[at : at + BATCH_CONTENTS] for at in range(0, len(backlog), BATCH_CONTENTS))
        # One lane per background worker, each taking the next batch when it is free.
        await asyncio.gather(*(self._lane(heads, cycle, stopping) for _ in range(self.writer.pool.lanes)))
        if not stopping.is_set():
            self._since = started
        if cycle.done:
            await self.writer.run(release_memory)  # the batches' buffers and their writes' pages, freed
            await self.writer.run(reclaim_freed)  # what definitions parsed again (an upgrade) left free
            await self.writer.run(empty_wal)
            self.parsed = await self._read(lambda conn, _a: store.counts(conn))
            log.info("definitions read from %d source file(s) in %.1f s", cycle.done, time.monotonic() - cycle.began)

    async def _lane(self, heads: Iterator[list[tuple[int, str]]], cycle: _Cycle, stopping: asyncio.Event) -> None:
        for head in heads:
            if not await not_indexing(lambda: self.writer.job.running, stopping):
                return
            self.parsing = True
            batch = await self._read(lambda conn, _a: store.sources(conn, head))
            for part in _by_size(batch, BATCH_BYTES):
                found = await in_worker(self.writer.pool, partial(parse_batch, part))
                grammar = {content_id: g for content_id, g, _ in part}
                stored = await self.writer.run(
                    lambda conn: store.put(conn, [(i, grammar[i], symbols) for i, symbols in found])
                )
                cycle.done += stored
                self.parsed += stored
            cycle.taken += len(head)
            self.pending = cycle.total - cycle.taken
            self.rate = cycle.rate(time.monotonic())


class _Cycle:
    """One look at the backlog, which the lanes share: contents stored, and the batches'
    contents taken off it (stored, gone meanwhile, or not parsable)."""

    def __init__(self, total: int, began: float) -> None:
        self.total = total
        self.began = began
        self.done = 0
        self.taken = 0
        self._first: tuple[float, int] | None = None  # when the first batch ended, and `done` then

    def rate(self, now: float) -> float | None:
        """Contents stored a second since the first batch ended: that one's time was mostly
        the workers starting (it gave an ETA of 20 h, for 4 min)."""
        if self._first is None:
            self._first = (now, self.done)
            return None
        at, done = self._first
        return (self.done - done) / (now - at) if now > at and self.done > done else None


def _by_size(batch: list[Source], limit: int) -> Iterator[list[Source]]:
    """`batch` in runs of at most `limit` stored bytes (a bigger content alone)."""
    part: list[Source] = []
    size = 0
    for item in batch:
        if part and size + len(item[2]) > limit:
            yield part
            part, size = [], 0
        part.append(item)
        size += len(item[2])
    if part:
        yield part
