"""Keep collections fresh: filesystem events → pending paths → targeted index jobs.

One watchfiles watch covers every collection's root: its loop wakes every STEP_MS, so
gnod at rest costs the same with one collection or ten. Events only name paths; what
they mean (a save, an atomic rename-over, a deleted or renamed directory, a move between
collections) is decided by re-examining those paths against the disk and the index
(`index_paths`), so every event order ends in the right state. A `.gitignore` change,
a vanished root or an event storm falls back to one stat-only pass of the collection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from functools import partial

import apsw
import watchfiles

from gnod.config import CollectionConfig, same_files
from gnod.ingest.pipeline import Cancelled, index_paths, stale_paths
from gnod.ingest.walk import GIT_EXCLUDE
from gnod.protocol import Freshness, IndexStats
from gnod.server.jobs import StorageError, Writer

log = logging.getLogger("gnod.watch")

# Paths whose change may put anything below them in or out (walk.GIT_EXCLUDE: git's
# own; a repository's folders, made with it at once: the watch may miss a file written
# into a folder new to it).
_IGNORE_FILES = (".gitignore", GIT_EXCLUDE, ".git", ".git/info")
_IGNORE_FILES_BELOW = tuple("/" + name for name in _IGNORE_FILES)

# watchfiles batching: a batch closes after STEP_MS without events, or DEBOUNCE_MS at most.
# watchfiles looks every STEP_MS, so a save waits 1–2 steps before gnod sees it: 10 ms
# instead of 20 took save→searchable from 52 to 32 ms on the kernel tree; the loop's
# wake-ups are most of gnod's CPU at rest (~1 % of a core, one loop for all collections).
STEP_MS = 10
DEBOUNCE_MS = 400
# While clients' reads keep running or waiting, a collection's flushes come at least this
# far apart (gather): each is a commit of both indexes (~14 ms of CPU) and empties the
# readers' page cache, so saves at 20 a second took a third of what searches had;
# gathered, they are four commits.
BUSY_GATHER_S = 0.2
GATHER_POLL_S = 0.005  # how often a gathering flush looks whether the reads are over
RETRY_S = 5.0  # how soon a missing collection folder is looked for, or a failed watch retried
STORAGE_RETRY_S = 2.0  # after a disk-full / I/O failure, how soon the same work is tried again
# Beyond this many pending paths one stat-only pass of the collection is cheaper.
STORM_PATHS = 1000
# A changed file this big is indexed after the rest of its flush, in a commit of its own:
# preparing it takes long (17 MB of generated JavaScript: ~1 s), and a note saved with
# it waited 2.1 s instead of ~40 ms.
ALONE_BYTES = 1 << 20
# Such a file that keeps changing (a log written to, read again whole for each line)
# rests this many times as long as its last indexing took before it is indexed again;
# its definitions' parse comes on top of that indexing. A 5 MB file taking a line a
# second kept 1.5 cores busy, 0.9 resting 4 times as long, 0.5 resting 8 (its newest
# lines 4.5 s late: benchmarks/freshness.py). A note saved beside it does not wait.
REST_FACTOR = 8.0
REST_MIN_S = 0.1  # a flush shorter than this lets nothing rest


class _State:
    """Per-collection freshness, mutated only on the event loop."""

    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.joined = asyncio.Event()  # set when paths join `pending`
        self.full = False
        self.ready = asyncio.Event()  # the OS watch is established (or has failed)
        self.rescan_on_ready = False
        self.running = False
        self.taken = 0  # changed paths the running flush indexes
        self.watching = False
        self.files: int | None = None
        self.last_change_at: float | None = None
        self.last_indexed_at: float | None = None
        self.last_error: str | None = None  # of the last indexing of its changes
        self.watch_error: str | None = None  # why its folder is not watched, while it is not
        self.flushed_at = float("-inf")  # time.monotonic() when the last flush ended
        self.resting: dict[str, float] = {}  # big path → time.monotonic() it may be indexed again


class _Watch:
    """One running watchfiles watch: the roots it covers (realpath → collection names),
    the task reading its events, and how to stop it."""

    def __init__(self, roots: dict[str, list[str]], task: asyncio.Task, stop: asyncio.Event) -> None:
        self.roots, self.task, self.stop = roots, task, stop


class Watcher:
    def __init__(
        self, writer: Writer, ignored_dirs: list[str], current: Callable[[str], CollectionConfig | None]
    ) -> None:
        self.writer = writer
        self._ignored = tuple(os.path.join(os.path.realpath(d), "") for d in ignored_dirs)
        self._current = current  # the collection's config now (None once removed)
        self._states: dict[str, _State] = {}
        self._cols: dict[str, CollectionConfig] = {}  # the collections watched, by name
        self._roots_changed = asyncio.Event()  # the watch must cover other roots
        self._loop: asyncio.Task | None = None  # _watch_all, once a collection is watched
        self._flushers: dict[str, asyncio.Task] = {}
        self._changed = asyncio.Condition()

    # --- lifecycle ---------------------------------------------------------------------

    def sync(self, cols: list[CollectionConfig], rescan: bool = False) -> None:
        """Watch exactly these collections; (re)start changed ones and rescan them."""
        wanted = {c.name: c for c in cols}
        for name in list(self._cols):
            if name not in wanted or not same_files(self._cols[name], wanted[name]):
                del self._cols[name]
        for name, col in wanted.items():
            if name not in self._cols:
                state = self._states[name] = self._states.get(name) or _State()
                state.ready.clear()
                state.rescan_on_ready = state.rescan_on_ready or rescan
                self._cols[name] = col
        for name in list(self._states):
            if name not in wanted:
                del self._states[name]
        self._roots_changed.set()
        if self._loop is None:
            self._loop = asyncio.create_task(self._watch_all(), name="watch")

    async def wait_ready(self, name: str, timeout: float = 10.0) -> None:
        """Until the collection's watch is live, so an index run after it misses nothing."""
        state = self._states.get(name)
        if state is not None:
            try:
                await asyncio.wait_for(state.ready.wait(), timeout)
            except asyncio.TimeoutError:
                log.warning("%s: watch not ready after %.0f s", name, timeout)

    async def close(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
        for t in list(self._flushers.values()):
            t.cancel()

    # --- events --------------------------------------------------------------------------

    async def _watch_all(self) -> None:
        """Keep one watch over every collection's root. When the roots change, the watch
        is replaced: the old one stops first (two at once would hold twice the OS watches,
        against the user's limit) and the collections it watched are rescanned, stat-only,
        for what changed in between. A missing root is looked for again every RETRY_S, and
        a watch that failed is retried as often."""
        watch: _Watch | None = None
        try:
            while True:
                self._roots_changed.clear()
                roots, missing = self._roots()
                if watch is None or watch.task.done() or roots != watch.roots:
                    if watch is not None:
                        watch.stop.set()
                        watch.task.cancel()
                        for name in (n for names in watch.roots.values() for n in names):
                            if (state := self._states.get(name)) is not None:
                                state.rescan_on_ready = True
                    watch = await self._start(roots) if roots else None
                self._settle(watch)
                changed = asyncio.ensure_future(self._roots_changed.wait())
                waits = [changed] if watch is None else [changed, watch.task]
                await asyncio.wait(waits, timeout=RETRY_S if missing else None, return_when=asyncio.FIRST_COMPLETED)
                if watch is not None and watch.task.done() and not self._failed(watch):
                    await asyncio.wait([changed], timeout=RETRY_S)
                changed.cancel()
        finally:
            if watch is not None:
                watch.stop.set()
                watch.task.cancel()

    def _roots(self) -> tuple[dict[str, list[str]], bool]:
        """The roots to watch (realpath → the collections there), and whether a
        collection's folder is missing (it is told so in its status)."""
        roots: dict[str, list[str]] = {}
        missing = False
        for name, col in self._cols.items():
            root = os.path.realpath(col.path)
            if os.path.isdir(root):
                roots.setdefault(root, []).append(name)
                continue
            missing = True
            state = self._states[name]
            error = f"cannot watch {root}: no such folder"
            if state.watch_error != error:
                log.warning("%s: %s", name, error)
            state.watch_error, state.watching = error, False
            state.rescan_on_ready = True  # catch up once it is there
            state.ready.set()  # nobody should wait for a watch that cannot start
        return roots, missing

    async def _start(self, roots: dict[str, list[str]]) -> _Watch:
        """A watch over `roots`, its OS watches in place (every later change is buffered)."""
        stop = asyncio.Event()
        changes_iter = watchfiles.awatch(
            *roots,
            stop_event=stop,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            recursive=True,
            watch_filter=None,
            ignore_permission_denied=True,
            rust_timeout=1000,
            yield_on_timeout=False,
        ).__aiter__()
        # The generator's first step creates the OS watches; once it has run, every later
        # change is buffered. Only then are the collections "watched".
        first = asyncio.ensure_future(changes_iter.__anext__())
        await asyncio.sleep(0)

        async def read() -> None:
            try:
                changes = await first
                while True:
                    self._dispatch(roots, {p for _, p in changes})
                    changes = await changes_iter.__anext__()
            except StopAsyncIteration:  # ended by itself: _failed restarts it
                pass

        return _Watch(roots, asyncio.create_task(read(), name="watch:read"), stop)

    def _settle(self, watch: _Watch | None) -> None:
        """After a (re)start: the collections under `watch` are watched and ready, and
        those that asked for it are rescanned (changes made while none watched them)."""
        for names in watch.roots.values() if watch is not None else []:
            for name in names:
                state = self._states.get(name)
                if state is None:
                    continue
                state.watching, state.watch_error = True, None
                state.ready.set()
                if state.rescan_on_ready:
                    state.rescan_on_ready = False
                    self.request(name, full=True)

    def _failed(self, watch: _Watch) -> bool:
        """The watch ended on an error: its collections are not watched until it is
        restarted, and are rescanned then. True when it may be restarted at once."""
        e = watch.task.exception() if not watch.task.cancelled() else None
        again = e is not None and _undecodable_path(e)
        for root, names in watch.roots.items():
            for name in names:
                state = self._states.get(name)
                if state is None:
                    continue
                state.watching = False
                state.rescan_on_ready = True
                state.ready.set()
                if not again:
                    state.watch_error = f"cannot watch {root}: {e or 'the watch ended'}"
        if again:
            # watchfiles cannot name a file whose name is not UTF-8, and drops the whole
            # batch: watch again at once and recover the batch with a rescan (stat-only),
            # which reports that file instead of failing on it.
            log.info("a change to a file whose name is not UTF-8: rescanning")
        else:
            log.warning(
                "cannot watch the collections' folders (%s): retrying in %.0f s", e or "the watch ended", RETRY_S
            )
        return again

    def _dispatch(self, roots: dict[str, list[str]], paths: set[str]) -> None:
        """A batch of changed paths to the collections whose roots hold them."""
        for root, names in roots.items():
            inside = root + os.sep
            mine = {p for p in paths if p == root or p.startswith(inside)}
            if root in mine and not os.path.isdir(root):
                self._roots_changed.set()  # gone: watched again once it is back
            if mine:
                for name in names:
                    self._on_changes(name, root, mine)

    def _on_changes(self, name: str, root: str, paths: set[str]) -> None:
        rels: set[str] = set()
        full = False
        col = self._cols.get(name)
        through_links = col is not None and col.follow_symlinks  # a link's path is a document's too
        real_dirs: dict[str, str] = {}
        for changed in paths:
            if changed.startswith(self._ignored):
                continue  # our own database, logs, sockets
            if changed == root:  # the folder itself: moved, deleted, its permissions changed
                full = True
                continue
            real = unlinked(root, changed, real_dirs)
            for p in ([real] if real is not None else []) + ([changed] if through_links and real != changed else []):
                rel = p[len(root) + 1 :].replace(os.sep, "/")
                if rel in _IGNORE_FILES or rel.endswith(_IGNORE_FILES_BELOW):
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
            state.joined.set()
        state.full = state.full or full or len(state.pending) > STORM_PATHS
        if name not in self._flushers:
            self._flushers[name] = asyncio.create_task(self._flush(name), name=f"flush:{name}")

    async def _flush(self, name: str) -> None:
        state = self._states.get(name)
        try:
            while state is not None and (state.pending or state.full):
                await gather(self.writer.pool.busy, state.flushed_at)
                col = self._current(name)
                if col is None:
                    return
                ready, wake = rested(state.pending, state.resting, time.monotonic())
                if not (ready or state.full):  # every path pending rests: until one may go, or another joins
                    state.joined.clear()
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(state.joined.wait(), wake - time.monotonic())
                    continue
                full, paths = state.full, state.pending if state.full else ready
                state.full, state.pending, state.running = False, state.pending - paths, True
                state.taken = 0 if full else len(paths)
                retry = False
                started = time.monotonic()
                try:
                    if full:
                        if paths:  # what is gone goes first: the pass removes it only at its end
                            await self.writer.run_content(partial(self._paths, col, paths, gone=True), aside=name)
                        stats = await self._rescan(col, state)
                        state.files = stats.scanned
                    else:
                        stats = await self.writer.run_content(partial(self._paths, col, paths), aside=name)
                        if state.files is not None:  # it stayed at the last full pass's (28 of 150)
                            state.files = max(0, state.files + stats.added - stats.removed)
                    state.last_error = None
                    state.last_indexed_at = time.time()
                    _logged(name, stats, "rescan" if full else f"{len(paths)} paths")
                    spent = time.monotonic() - started
                    if not full and spent >= REST_MIN_S:
                        big = [p for p in paths if _size(os.path.join(col.path, p)) >= ALONE_BYTES]
                        state.resting.update(dict.fromkeys(big, time.monotonic() + REST_FACTOR * spent))
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
                    state.running, state.taken = False, 0
                    state.flushed_at = time.monotonic()
                    async with self._changed:
                        self._changed.notify_all()
                if retry:
                    await asyncio.sleep(STORAGE_RETRY_S)
        finally:
            self._flushers.pop(name, None)
            async with self._changed:
                self._changed.notify_all()

    async def _rescan(self, col: CollectionConfig, state: _State) -> IndexStats:
        """A stat-only pass of the whole collection. It waits its turn behind a long run
        of another collection (a `collection add` restarts the watch, and the collections
        it watched are rescanned): the changes seen meanwhile are indexed between that
        run's batches, as without the pass, not after the whole run; and so are those
        made while nothing watched, which a look between the batches finds by the files'
        stats (pipeline.stale_paths; an edit made as the watch restarted waited out the
        run: 26 s under benchmarks/load.py). With no such run, the pass alone looks."""
        run = asyncio.ensure_future(self.writer.index(col, None))
        look = asyncio.ensure_future(self.writer.run_between(partial(stale_paths, col=col), col.name))
        look.add_done_callback(partial(self._looked, col.name))
        try:
            return await self._beside(col, state, run)
        finally:
            look.cancel()

    def _looked(self, name: str, look: asyncio.Future) -> None:
        """What a look found joins the collection's pending paths; one that failed leaves
        it to the pass."""
        if look.cancelled():
            return
        if look.exception() is not None:
            log.warning("%s: looking for changes made while unwatched failed: %s", name, look.exception())
        elif paths := look.result():
            self.request(name, paths)

    async def _beside(self, col: CollectionConfig, state: _State, run: asyncio.Future) -> IndexStats:
        """The pass `run`'s stats, once it ends; the paths pending meanwhile are indexed
        between another collection's batches while it waits."""
        while not run.done():
            state.joined.clear()
            if not state.pending:
                joined = asyncio.ensure_future(state.joined.wait())
                await asyncio.wait((run, joined), return_when=asyncio.FIRST_COMPLETED)
                joined.cancel()
                continue
            paths, state.pending = state.pending, set()
            state.taken = len(paths)
            try:
                stats = await self.writer.run_content(partial(self._paths, col, paths), aside=col.name)
            except Cancelled:
                raise
            except Exception:  # taken again after the pass, where a failure is handled
                state.pending |= paths
                break
            finally:
                state.taken = 0
            state.last_indexed_at = time.time()
            _logged(col.name, stats, f"{len(paths)} paths")
        return await run

    def _paths(self, col: CollectionConfig, paths: set[str], conn: apsw.Connection, gone: bool = False) -> IndexStats:
        """Bring `paths` of the collection up to date (the writer's job); with `gone`,
        only those no longer there: an event storm's deletions and renames, removed
        before the stat-only pass that takes the rest (and removes what is gone only
        when its walk is over: a renamed folder was listed under both names meanwhile)."""
        if gone:
            paths = {p for p in paths if not os.path.lexists(os.path.join(col.path, p))}
            if not paths:
                return IndexStats(collection=col.name)
        w = self.writer
        big = {p for p in paths if _size(os.path.join(col.path, p)) >= ALONE_BYTES}
        parts = [paths - big, big] if big and big != paths else [paths]
        done = [index_paths(conn, w.analyzers, col, part, w.stop, w.pool, w.on_changes, w.lexical) for part in parts]
        return _summed(done)

    # --- reporting ----------------------------------------------------------------------

    async def note_full_index(self, name: str, scanned: int) -> None:
        """A whole run of the collection (`collection add`, `update`) ended: a `--wait`
        on it may be over."""
        state = self._states.get(name)
        if state is not None:
            state.files = scanned
            state.last_indexed_at = time.time()
        async with self._changed:
            self._changed.notify_all()

    def freshness(self, name: str) -> Freshness:
        s = self._states.get(name) or _State()
        return Freshness(
            collection=name,
            watching=s.watching,
            files=s.files,
            pending=len(s.pending) + (1 if s.full else 0),
            indexing=s.running or self._run_of(name),
            last_change_at=s.last_change_at,
            last_indexed_at=s.last_indexed_at,
            last_error=s.watch_error or s.last_error,
            changes=s.taken,
        )

    def _run_of(self, name: str) -> bool:
        """Whether the writer is running a whole run of the collection (`collection add`,
        `update`): the watcher's own flushes set `running`."""
        job = self.writer.job
        return job.running and job.collection == name

    def _busy(self, names: list[str]) -> bool:
        return any(
            (s := self._states.get(n)) is not None
            and (s.pending or s.full or s.running or n in self._flushers or self._run_of(n))
            for n in names
        )

    def lag_notes(self, names: list[str], waited_out: float = 0.0) -> list[str]:
        """What a search of these collections cannot see yet: those being indexed (their
        changes are searchable a batch at a time), those with changes seen and not yet
        indexed, and those not watched (their folder gone, moved, unreadable);
        `waited_out`: a `--wait` of this many seconds ran out first."""
        notes = []
        job = self.writer.job
        for f in map(self.freshness, names):
            if f.indexing and job.running and job.collection == f.collection and job.total:
                notes.append(
                    f"{f.collection!r} is being indexed ({job.done:,} of {job.total:,} files): "
                    "results may be incomplete or out of date"
                )
            elif f.indexing:
                notes.append(f"{f.collection!r} is being indexed: results may be incomplete or out of date")
            elif f.pending:
                notes.append(f"{f.collection!r} has changes not indexed yet: results may be out of date")
            elif (s := self._states.get(f.collection)) is not None and s.watch_error:
                notes.append(f"{f.collection!r} is not watched ({s.watch_error}): its documents are as last indexed")
        if notes and waited_out:
            notes[0] = f"not up to date after waiting {waited_out:g} s: {notes[0]}"
        return notes

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


def unlinked(root: str, path: str, real_dirs: dict[str, str]) -> str | None:
    """The changed `path` by the folders it is really in. inotify watches a folder once,
    and names its changes by the last path it was watched through: a folder that a link
    in the collection leads to (`misc/notes-link` → `notes`, `self` → `.`) has its files
    named through the link. None when the folder is outside `root` (such a link is not
    followed). `real_dirs` keeps the folders resolved for a batch (a few stats each)."""
    folder, name = os.path.split(path)
    real = real_dirs.get(folder)
    if real is None:
        real = real_dirs[folder] = os.path.realpath(folder)
    if real == folder:
        return path
    return os.path.join(real, name) if real == root or real.startswith(root + os.sep) else None


def _size(path: str) -> int:
    """A file's size (a link's own); 0 when it is gone."""
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _summed(parts: list[IndexStats]) -> IndexStats:
    """The stats of runs over parts of one collection's changed paths, as one run's."""
    first, *rest = parts
    for s in rest:
        first.scanned += s.scanned
        first.added += s.added
        first.updated += s.updated
        first.unchanged += s.unchanged
        first.removed += s.removed
        first.errors += s.errors
        first.seconds += s.seconds
    return first


def _logged(name: str, stats: IndexStats, what: str) -> None:
    if stats.added or stats.updated or stats.removed:
        log.info("%s: %d added, %d updated, %d removed (%s)", name, stats.added, stats.updated, stats.removed, what)


def rested(pending: set[str], resting: dict[str, float], now: float) -> tuple[set[str], float]:
    """The `pending` paths that may be indexed at `now` (none resting till later), and
    when the first of the others may; `resting` loses the paths whose rest is over."""
    for path in [p for p, until in resting.items() if until <= now]:
        del resting[path]
    ready = {p for p in pending if p not in resting}
    return ready, min((resting[p] for p in pending - ready), default=now)


def gather_seconds(busy: bool, flushed_at: float, now: float) -> float:
    """How long a flush waits for more changes first: while clients' reads run or wait
    (`busy`), until BUSY_GATHER_S after the collection's last flush ended, so a stream of
    saves is committed a few times a second; a save after a quiet spell, at once (a
    client polling for it kept it waiting 0.2 s whenever a read was in flight)."""
    return max(0.0, flushed_at + BUSY_GATHER_S - now) if busy else 0.0


async def gather(busy: Callable[[], bool], flushed_at: float) -> None:
    """Hold a flush back as gather_seconds says, looking again every GATHER_POLL_S: it
    goes ahead as soon as no read runs or waits (a client that saves and polls for
    each save kept it waiting 0.2 s whenever one of its reads was in flight: on the
    kernel tree, 2 saves in 20 took 220 ms instead of 35), while many clients' reads
    keep it back for the whole spacing."""
    while (left := gather_seconds(busy(), flushed_at, time.monotonic())) > 0:
        await asyncio.sleep(min(left, GATHER_POLL_S))


def _undecodable_path(e: BaseException) -> bool:
    """Whether watchfiles failed on a path it cannot decode (raised inside a task group)."""
    if isinstance(e, BaseExceptionGroup):
        return any(_undecodable_path(sub) for sub in e.exceptions)
    return "decode path" in str(e)


def freshness_list(watcher: Watcher | None, names: list[str]) -> list[Freshness]:
    return [watcher.freshness(n) if watcher else Freshness(collection=n) for n in names]
