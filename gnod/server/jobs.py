"""The single writer: one thread, one write connection, every index mutation in order.

gnod is the only writer of the index, and inside gnod this thread is. Reads use
their own connections (WAL), so `search` and `status` answer while a job runs.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import apsw

from gnod import wire
from gnod.config import CollectionConfig
from gnod.ingest import reread, titles
from gnod.ingest.lexical_text import deriver
from gnod.ingest.pipeline import ChangeFn, Pace, ProgressFn, index_collection
from gnod.ingest.workers import PreparePool
from gnod.protocol import IndexStats, JobInfo
from gnod.store import documents as store
from gnod.store.db import connect, empty_wal, reclaim
from gnod.store.lexical_index import LexicalIndex
from gnod.store.migrations import migrate, pending
from gnod.text.analyzer import ingest_analyzers

T = TypeVar("T")
log = logging.getLogger("gnod")


class StorageError(Exception):
    """A write failed because the disk is full or failing; nothing half-written is kept
    (the transaction rolled back), and the same work succeeds once the cause is gone."""

    def __init__(self, code: int, message: str, path: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.path = path


def storage_error(exc: BaseException, db_path: str) -> StorageError | None:
    """The StorageError that `exc` stands for, or None when it is something else."""
    folder = os.path.dirname(db_path)
    if isinstance(exc, apsw.FullError) or (isinstance(exc, OSError) and exc.errno == errno.ENOSPC):
        return StorageError(
            wire.DISK_FULL,
            f"the disk holding {folder} is full: free some space there; "
            "indexing resumes by itself (searches keep working meanwhile)",
            folder,
        )
    if isinstance(exc, apsw.IOError) or (isinstance(exc, OSError) and exc.errno == errno.EIO):
        return StorageError(
            wire.IO_ERROR,
            f"I/O error writing the index in {folder} ({exc}): check the disk; "
            "indexing is retried by itself (searches keep working meanwhile)",
            folder,
        )
    return None


# While clients' reads run or wait, a long run (`collection add`, a rescan) pauses this
# long between its batches (a batch is ~0.25 s): it goes on at about half its speed and
# the searches get the cores it leaves.
BUSY_PAUSE_S = 0.25
# glibc's mallopt(M_MMAP_THRESHOLD): blocks at least this big get pages of their own.
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 1 << 20


def tune_malloc() -> None:
    """Keep big blocks (a document's text, a batch's buffers) in pages of their own,
    returned to the system when freed (call before any thread starts).

    glibc raises its threshold to the size of each such block freed, so after a few
    documents of a big ingest they came from the threads' heaps instead, and stayed
    resident there once freed (the kernel tree: 600 MB after indexing). Capping the
    heaps at two instead kept RSS down but made the writer's, the lexical index's and
    the loop's threads wait on each other's malloc: 62 s for that ingest, 56–58 s so.
    """
    try:
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    except (OSError, AttributeError):  # not glibc
        pass


def release_memory(conn: apsw.Connection) -> None:
    """Give the memory freed by a big job back to the system: `conn`'s page cache first
    (a big ingest fills it to cache_size: ~75 MB of the kernel tree's), then the
    heap pages glibc keeps for reuse, so gnod's RSS after an ingest would stay at its peak."""
    conn.execute("PRAGMA shrink_memory")
    trim_heap()


def trim_heap() -> None:
    """Hand the heap pages glibc keeps for reuse back to the system."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


# One batch of a start-up conversion (store.pack_old_content, titles.retitle): from the
# row after the id given, (the last id done, rows done), or None once none is left.
Batch = Callable[[apsw.Connection, int], tuple[int, int] | None]


class _Aside:
    """A short job of one collection, queued to run in order or between batches."""

    def __init__(self, collection: str, fn: Callable[[], Any]) -> None:
        self.collection = collection
        self.fn = fn
        self.future: Future = Future()


class Writer:
    def __init__(self, db_path: str, ingest_workers: int | None = None) -> None:
        self.db_path = db_path
        self.pool = PreparePool(ingest_workers)
        self.stop = threading.Event()
        self.job = JobInfo(running=False)
        # Bumped after every committed job, so readers can drop cached facts (languages).
        self.generation = 0
        self.storage_error: str | None = None  # disk full / I/O failure, until a content write succeeds
        self.upkeep: str | None = None  # a start-up conversion of what an older gno stored, as it goes
        self._conn: apsw.Connection | None = None
        self.analyzers = ingest_analyzers()
        self.lexical = LexicalIndex(os.path.dirname(db_path), deriver(self.analyzers, self.pool.spread))
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gnod-writer")
        self._aside: list[_Aside] = []  # short jobs that may run between a long run's batches
        self._aside_lock = threading.Lock()
        # Called on the event loop after a job that may have changed documents (the
        # embedding backlog listens); the embedder's own writes do not call it.
        self.on_content_change: Callable[[], None] = lambda: None
        # Called on this thread after each commit with the documents it added, changed or
        # removed, (collection, [(kind, rel_path)]); rel_path None: the whole collection.
        self.on_changes: ChangeFn = lambda _c, _ch: None

    def open(self) -> list[str]:
        """Open and migrate the database (on the writer thread); returns migrations applied."""
        return self._pool.submit(self._open).result()

    def _open(self) -> list[str]:
        self._conn = connect(self.db_path)
        due = pending(self._conn)
        if due:  # a big index takes a while: the log says why nothing answers yet
            log.info("migrating the index (%s): clients wait until it is done", ", ".join(due))
        applied = migrate(self._conn)
        if applied:  # a migration that rewrote a table leaves the old one's pages free
            reclaim(self._conn)
        with self._conn:
            marked = reread.mark(self._conn)
        if marked:
            log.info("%d documents read by an older gno's rules: the rescan reads them again", marked)
        self.lexical.open()
        return applied

    async def reconcile_lexical(self, serving: Callable[[], None]) -> None:
        """Make the lexical index agree with the database (the first job: a crash's
        leftovers are redone before anything new is written). `serving` is called on
        the writer thread once searches may use the index, which may be before the end
        (an index built from the database answers with what it holds so far)."""
        done = await self.run(lambda conn: self.lexical.reconcile(conn, serving=serving, stop=self.stop))
        log.info("%s", done)
        await self.run(self._rest)

    async def pack_old_content(self) -> None:
        """Compress the content an older gno stored as text, a batch per job (so other
        jobs run in between), then give the freed pages back to the file system. Until
        then both forms read the same (store.documents.unpack)."""
        batches = await self._in_batches(store.pack_old_content, "compressing the content an older gno stored")
        if batches:
            await self.run(reclaim)
            log.info("content stored before compression: compressed (%d batches)", batches)
        # Looking for such rows read the whole content table at every start, into the
        # page cache it then held at rest (the kernel tree's: 69 MB).
        await self.run(release_memory)

    async def retitle(self) -> None:
        """Take the prose documents' titles again where an older gno took them by other
        rules (gnod.ingest.titles), a batch per job, so other jobs run in between."""
        if not await self.run(titles.due):
            return
        batches = await self._in_batches(titles.retitle, "taking the prose documents' titles again")
        await self.run(self._rest)  # the lexical index's writer took the pages again
        log.info("prose documents' titles taken again by today's rules (%d batches)", batches)

    async def _in_batches(self, batch: Batch, what: str) -> int:
        """Run `batch` a transaction and a job at a time (so other jobs run in between)
        until nothing is left, `upkeep` saying `what` it does and how far it is; returns
        how many batches did some work."""

        def step(conn: apsw.Connection, after: int) -> tuple[int, int] | None:
            with conn:
                return batch(conn, after)

        last, batches, rows = 0, 0, 0
        try:
            while (done := await self.run(lambda conn: step(conn, last))) is not None:
                last, batches, rows = done[0], batches + 1, rows + done[1]
                self.upkeep = f"{what}: {rows:,} row{'s' if rows != 1 else ''} so far"
        finally:
            self.upkeep = None
        return batches

    def _rest(self, conn: apsw.Connection) -> None:
        """After a whole collection's run or the start-up reconcile (on the writer thread):
        the lexical index's writer gives back its heap once it has taken enough (a big run),
        and the memory the job freed goes back too, with the page cache it filled (a no-op
        run reads every document's state: 18 MB of the kernel tree's), which the OS's own
        cache serves again for microseconds a page. The WAL goes back to the file system too."""
        self.lexical.rest(then=trim_heap)  # the writer's heap, once its merges are over
        release_memory(conn)
        empty_wal(conn)

    def _call(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run `fn` on the writer thread's connection and bring the lexical index along."""
        assert self._conn is not None
        try:
            result = fn(self._conn)
            self.lexical.sync(self._conn)  # what `fn` committed, unless it did already
        except (apsw.FullError, apsw.IOError, OSError) as e:
            err = storage_error(e, self.db_path)
            if err is None:
                raise
            if self.storage_error != err.message:
                log.error("%s", err.message)
            self.storage_error = err.message
            raise err from None
        finally:
            self.generation += 1
        return result

    async def run(self, fn: Callable[[apsw.Connection], T], aside: str | None = None) -> T:
        """Run `fn(conn)` on the writer thread, after whatever is queued before it.
        `aside`: the one collection a short job changes; while a long run of another
        collection holds the writer, the job runs between that run's batches instead of
        after the whole run (an edit is not kept waiting behind a big `collection add`)."""
        if aside is None:
            return await asyncio.get_running_loop().run_in_executor(self._pool, lambda: self._call(fn))
        job = self._set_aside(aside, fn)
        self._pool.submit(self._run_aside, [job])
        return await asyncio.wrap_future(job.future)

    async def run_between(self, fn: Callable[[apsw.Connection], T], collection: str) -> T:
        """Run `fn(conn)` between the batches of a long run of a collection other than
        `collection`, if one comes before the call is cancelled; never in its turn (a look
        that a job queued before it makes moot, and would only repeat, is dropped)."""
        job = self._set_aside(collection, fn)
        job.future.add_done_callback(lambda _f: self._forget(job))
        return await asyncio.wrap_future(job.future)

    def _set_aside(self, collection: str, fn: Callable[[apsw.Connection], Any]) -> _Aside:
        """A job `_between` runs between another collection's batches."""
        job = _Aside(collection, lambda: self._call(fn))
        with self._aside_lock:
            self._aside.append(job)
        return job

    def _forget(self, job: _Aside) -> None:
        with self._aside_lock:
            if job in self._aside:
                self._aside.remove(job)

    def _run_aside(self, jobs: list[_Aside]) -> None:
        """Run those of `jobs` not run yet (each is queued twice: in order, and aside)."""
        with self._aside_lock:
            due = [j for j in jobs if j in self._aside]
            for j in due:
                self._aside.remove(j)
        for j in due:
            if j.future.set_running_or_notify_cancel():  # False: its caller has gone
                try:
                    j.future.set_result(j.fn())
                except BaseException as e:  # handed to the caller, as an executor does
                    j.future.set_exception(e)

    def _between(self, running: str) -> None:
        """A long run of `running` is between batches: run the short jobs of other
        collections, and while clients' reads run or wait, leave them the cores a while."""
        self._run_others(running)
        if self.pool.busy():
            time.sleep(BUSY_PAUSE_S)
            self._run_others(running)

    def _run_others(self, running: str) -> None:
        with self._aside_lock:
            jobs = [j for j in self._aside if j.collection != running]
        if jobs:
            self._run_aside(jobs)

    async def run_content(self, fn: Callable[[apsw.Connection], T], aside: str | None = None) -> T:
        """Like run, for jobs that change documents: listeners hear of it even on failure.
        One that succeeds clears a reported storage error: writing works again."""
        try:
            result = await self.run(fn, aside)
        finally:
            self.on_content_change()
        self.storage_error = None
        return result

    async def index(self, col: CollectionConfig, progress: ProgressFn | None) -> IndexStats:
        def job(conn: apsw.Connection) -> IndexStats:
            started = time.time()
            self.job = JobInfo(running=True, collection=col.name, started_at=started)

            def report(phase: str, done: int, total: int, path: str, pace: Pace) -> None:
                self.job = JobInfo(
                    running=phase != "done",
                    collection=col.name,
                    done=done,
                    total=total,
                    started_at=started,
                    **pace._asdict(),
                )
                if progress:
                    progress(phase, done, total, path, pace)

            try:
                return index_collection(
                    conn,
                    self.analyzers,
                    col,
                    report,
                    self.stop,
                    self.pool,
                    self.on_changes,
                    self.lexical,
                    lambda: self._between(col.name),
                )
            finally:
                self.job = JobInfo(running=False)
                self._rest(conn)

        return await self.run_content(job)

    async def sync_collections(self, cols: list[CollectionConfig]) -> list[str]:
        """Make the collections table match the config; returns names whose rows were removed."""

        def job(conn: apsw.Connection) -> list[str]:
            wanted = {c.name for c in cols}
            removed = [n for n in store.collection_ids(conn) if n not in wanted]
            for name in removed:
                self._compact(conn, store.delete_collection(conn, name))
                self.on_changes(name, [("removed", None)])
            with conn:
                for c in cols:
                    store.upsert_collection(conn, c.name, c.path, c.language)
            return removed

        return await self.run_content(job)

    async def remove_collection(self, name: str) -> int:
        def job(conn: apsw.Connection) -> int:
            removed = store.delete_collection(conn, name)
            self._compact(conn, removed)
            self.on_changes(name, [("removed", None)])
            reclaim(conn)
            return removed

        return await self.run_content(job)

    def _compact(self, conn: apsw.Connection, removed: int) -> None:
        """The lexical index after a collection's `removed` documents went (on the writer thread)."""
        again = self.lexical.compact(conn, removed)
        if again:
            log.info("lexical index: %d documents added again to give back the space of %d removed", again, removed)

    def close(self) -> None:
        self.stop.set()

        def shut() -> None:
            self.lexical.close()
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        self._pool.submit(shut).result()
        self._pool.shutdown(wait=True)
        self.pool.close()
