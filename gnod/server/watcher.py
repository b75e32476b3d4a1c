"""Keep collections fresh: filesystem events → pending paths → targeted index jobs.

One watchfiles watch per collection root. Events only name paths; what they mean
(a save, an atomic rename-over, a deleted or renamed directory, a move between
collections) is decided by re-examining those paths against the disk and the index
(`index_paths`), so every event order ends in the right state. A `.gitignore` change,
a vanished root or an event storm falls back to one stat-only pass of the collection.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable

import apsw
import watchfiles

from gnod.config import CollectionConfig, same_files
from gnod.ingest.pipeline import Cancelled, index_paths
from gnod.protocol import Freshness, IndexStats
from gnod.server.jobs import StorageError, Writer

log = logging.getLogger("gnod.watch")

# watchfiles batching: a batch closes after STEP_MS without events, or DEBOUNCE_MS at most.
# watchfiles looks every STEP_MS, so a save waits 1–2 steps before gnod sees it: 10 ms
# instead of 20 took save→searchable from 52 to 32 ms on the kernel tree, for 0.1% more
# idle CPU per watched collection.
STEP_MS = 10
DEBOUNCE_MS = 400
# While clients' reads run or wait, a collection's flushes come at least this far apart
# (gather_seconds): each is a commit of both indexes (~14 ms of CPU) and empties the
# readers' page cache, so saves at 20 a second took a third of what searches had;
# gathered, they are four commits.
BUSY_GATHER_S = 0.2
STORAGE_RETRY_S = 2.0  # after a disk-full / I/O failure, how soon the same work is tried again
# Beyond this many pending paths one stat-only pass of the collection is cheaper.
STORM_PATHS = 1000


class _State:
    """Per-collection freshness, mutated only on the event loop."""

    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.full = False
        self.ready = asyncio.Event()  # the OS watch is established (or has failed)
        self.rescan_on_ready = False
        self.running = False
        self.watching = False
        self.files: int | None = None
        self.last_change_at: float | None = None
        self.last_indexed_at: float | None = None
        self.last_error: str | None = None
        self.flushed_at = float("-inf")  # time.monotonic() when the last flush ended


class Watcher:
    def __init__(
        self, writer: Writer, ignored_dirs: list[str], current: Callable[[str], CollectionConfig | None]
    ) -> None:
        self.writer = writer
        self._ignored = tuple(os.path.join(os.path.realpath(d), "") for d in ignored_dirs)
        self._current = current  # the collection's config now (None once removed)
        self._states: dict[str, _State] = {}
        self._watches: dict[str, tuple[CollectionConfig, asyncio.Task, asyncio.Event]] = {}
        self._flushers: dict[str, asyncio.Task] = {}
        self._changed = asyncio.Condition()

    # --- lifecycle ---------------------------------------------------------------------

    def sync(self, cols: list[CollectionConfig], rescan: bool = False) -> None:
        """Watch exactly these collections; (re)start changed ones and rescan them."""
        wanted = {c.name: c for c in cols}
        for name in list(self._watches):
            if name not in wanted or not same_files(self._watches[name][0], wanted[name]):
                self._stop(name)
        for name, col in wanted.items():
            if name not in self._watches:
                state = self._states[name] = self._states.get(name) or _State()
                state.ready.clear()
                state.rescan_on_ready = state.rescan_on_ready or rescan
                stop = asyncio.Event()
                task = asyncio.create_task(self._watch(col, stop), name=f"watch:{name}")
                self._watches[name] = (col, task, stop)
        for name in list(self._states):
            if name not in wanted:
                del self._states[name]

    def _stop(self, name: str) -> None:
        _, task, stop = self._watches.pop(name)
        stop.set()
        task.cancel()

    async def wait_ready(self, name: str, timeout: float = 10.0) -> None:
        """Until the collection's watch is live, so an index run after it misses nothing."""
        state = self._states.get(name)
        if state is not None:
            try:
                await asyncio.wait_for(state.ready.wait(), timeout)
            except asyncio.TimeoutError:
                log.warning("%s: watch not ready after %.0f s", name, timeout)

    async def close(self) -> None:
        for name in list(self._watches):
            self._stop(name)
        for t in list(self._flushers.values()):
            t.cancel()

    # --- events --------------------------------------------------------------------------

    async def _watch(self, col: CollectionConfig, stop: asyncio.Event) -> None:
        state = self._states[col.name]
        root = os.path.realpath(col.path)
        while not stop.is_set():
            try:
                if not os.path.isdir(root):
                    raise FileNotFoundError(root)
                changes_iter = watchfiles.awatch(
                    root,
                    stop_event=stop,
                    debounce=DEBOUNCE_MS,
                    step=STEP_MS,
                    recursive=True,
                    watch_filter=None,
                    ignore_permission_denied=True,
                    rust_timeout=1000,
                    yield_on_timeout=False,
                ).__aiter__()
                # The generator's first step creates the OS watches; once it has run,
                # every later change is buffered. Only then is the collection "watched".
                first = asyncio.ensure_future(changes_iter.__anext__())
                await asyncio.sleep(0)
                state.watching = True
                state.ready.set()
                if state.rescan_on_ready:
                    state.rescan_on_ready = False
                    self.request(col.name, full=True)
                try:
                    changes = await first
                    while True:
                        self._on_changes(col.name, root, {p for _, p in changes})
                        changes = await changes_iter.__anext__()
                except StopAsyncIteration:
                    pass
            except asyncio.CancelledError:
                raise
            except Exception as e:
                state.watching = False
                if _undecodable_path(e):
                    # watchfiles cannot name a file whose name is not UTF-8, and drops the
                    # whole batch: watch again at once and recover the batch with a rescan
                    # (stat-only), which reports that file instead of failing on it.
                    log.info("%s: a change to a file whose name is not UTF-8: rescanning", col.name)
                    state.rescan_on_ready = True
                    continue
                # Root missing or unwatchable: retry, visible in status.
                state.last_error = f"cannot watch {root}: {e}"
                log.warning("%s: %s", col.name, state.last_error)
            state.watching = False
            state.ready.set()  # nobody should wait for a watch that failed
            if not stop.is_set():
                try:
                    await asyncio.wait_for(stop.wait(), timeout=5)
                except asyncio.TimeoutError:
                    state.rescan_on_ready = True  # the root may be back: catch up once watched

    def _on_changes(self, name: str, root: str, paths: set[str]) -> None:
        rels: set[str] = set()
        full = False
        for p in paths:
            if p.startswith(self._ignored):
                continue  # our own database, logs, sockets
            if p == root or not p.startswith(root + os.sep):
                full = True
                continue
            rel = p[len(root) + 1 :].replace(os.sep, "/")
            if rel == ".gitignore" or rel.endswith("/.gitignore"):
                full = True  # what is in or out may have changed anywhere below it
            rels.add(rel)
        if rels or full:
            self.request(name, rels, full)

    def request(self, name: str, rels: set[str] | None = None, full: bool = False) -> None:
        """Queue work for a collection and make sure a flusher runs."""
        state = self._states.get(name)
        if state is None:
            return
        if rels:
            state.pending |= rels
            state.last_change_at = time.time()
        state.full = state.full or full or len(state.pending) > STORM_PATHS
        if name not in self._flushers:
            self._flushers[name] = asyncio.create_task(self._flush(name), name=f"flush:{name}")

    async def _flush(self, name: str) -> None:
        state = self._states.get(name)
        try:
            while state is not None and (state.pending or state.full):
                gather = gather_seconds(self.writer.pool.busy(), state.flushed_at, time.monotonic())
                if gather > 0:
                    await asyncio.sleep(gather)
                col = self._current(name)
                if col is None:
                    return
                full, paths = state.full, state.pending
                state.full, state.pending, state.running = False, set(), True
                retry = False
                try:
                    if full:
                        stats = await self.writer.index(col, None)
                        state.files = stats.scanned
                    else:

                        def job(
                            conn: apsw.Connection, col: CollectionConfig = col, paths: set[str] = paths
                        ) -> IndexStats:
                            return index_paths(
                                conn,
                                self.writer.analyzers,
                                col,
                                paths,
                                self.writer.stop,
                                self.writer.pool,
                                self.writer.on_changes,
                                self.writer.lexical,
                            )

                        stats = await self.writer.run_content(job, aside=name)
                    state.last_error = None
                    state.last_indexed_at = time.time()
                    if stats.added or stats.updated or stats.removed:
                        log.info(
                            "%s: %d added, %d updated, %d removed (%s)",
                            name,
                            stats.added,
                            stats.updated,
                            stats.removed,
                            "rescan" if full else f"{len(paths)} paths",
                        )
                except Cancelled:
                    return
                except StorageError as e:
                    # Keep the work and retry: the index resumes by itself once space returns.
                    state.pending |= paths
                    state.full = state.full or full
                    state.last_error = e.message
                    retry = True
                except Exception as e:
                    state.last_error = f"{type(e).__name__}: {e}"
                    log.exception("%s: indexing changes failed", name)
                finally:
                    state.running = False
                    state.flushed_at = time.monotonic()
                    async with self._changed:
                        self._changed.notify_all()
                if retry:
                    await asyncio.sleep(STORAGE_RETRY_S)
        finally:
            self._flushers.pop(name, None)
            async with self._changed:
                self._changed.notify_all()

    # --- reporting ----------------------------------------------------------------------

    def note_full_index(self, name: str, scanned: int) -> None:
        state = self._states.get(name)
        if state is not None:
            state.files = scanned
            state.last_indexed_at = time.time()

    def freshness(self, name: str) -> Freshness:
        s = self._states.get(name) or _State()
        return Freshness(
            collection=name,
            watching=s.watching,
            files=s.files,
            pending=len(s.pending) + (1 if s.full else 0),
            indexing=s.running,
            last_change_at=s.last_change_at,
            last_indexed_at=s.last_indexed_at,
            last_error=s.last_error,
        )

    def _busy(self, names: list[str]) -> bool:
        return any(
            (s := self._states.get(n)) is not None and (s.pending or s.full or s.running or n in self._flushers)
            for n in names
        )

    async def wait_idle(self, names: list[str], timeout: float) -> bool:
        """Wait until changes made before this call are indexed; False on timeout.

        Events reach us in batches (closed after STEP_MS of quiet, DEBOUNCE_MS at most),
        so first let one batch window pass: a file saved just before the call is then
        pending or done, never still unseen.
        """
        deadline = time.monotonic() + timeout
        await asyncio.sleep(min(timeout, (DEBOUNCE_MS + 2 * STEP_MS) / 1000))
        try:
            async with self._changed:
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: not self._busy(names)), max(0.0, deadline - time.monotonic())
                )
            return True
        except asyncio.TimeoutError:
            return False


def gather_seconds(busy: bool, flushed_at: float, now: float) -> float:
    """How long a flush waits for more changes first: while clients' reads run or wait
    (`busy`), until BUSY_GATHER_S after the collection's last flush ended, so a stream of
    saves is committed a few times a second; a save after a quiet spell, at once (a
    client polling for it kept it waiting 0.2 s whenever a read was in flight)."""
    return max(0.0, flushed_at + BUSY_GATHER_S - now) if busy else 0.0


def _undecodable_path(e: BaseException) -> bool:
    """Whether watchfiles failed on a path it cannot decode (raised inside a task group)."""
    if isinstance(e, BaseExceptionGroup):
        return any(_undecodable_path(sub) for sub in e.exceptions)
    return "decode path" in str(e)


def freshness_list(watcher: Watcher | None, names: list[str]) -> list[Freshness]:
    return [watcher.freshness(n) if watcher else Freshness(collection=n) for n in names]
