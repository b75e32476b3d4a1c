"""The single writer: one thread, one write connection, every index mutation in order.

gnod is the only writer of the index, and inside gnod this thread is. Reads use
their own connections (WAL), so `search` and `status` answer while a job runs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import apsw

from gnod.config import CollectionConfig
from gnod.ingest.pipeline import ProgressFn, index_collection
from gnod.ingest.workers import PreparePool
from gnod.protocol import IndexStats, JobInfo
from gnod.store import documents as store
from gnod.store.db import connect
from gnod.store.migrations import migrate
from gnod.text.analyzer import AnalyzerSet

T = TypeVar("T")


class Writer:
    def __init__(self, db_path: str, ingest_workers: int | None = None) -> None:
        self.db_path = db_path
        self.pool = PreparePool(ingest_workers)
        self.stop = threading.Event()
        self.job = JobInfo(running=False)
        # Bumped after every committed job, so readers can drop cached facts (languages).
        self.generation = 0
        self._conn: apsw.Connection | None = None
        self.analyzers = AnalyzerSet()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gnod-writer")
        # Called on the event loop after a job that may have changed documents (the
        # embedding backlog listens); the embedder's own writes do not call it.
        self.on_content_change: Callable[[], None] = lambda: None
        # Called on this thread after each commit with the documents it added, changed or
        # removed, (collection, [(kind, rel_path)]); rel_path None: the whole collection.
        self.on_changes: Callable[[str, list[tuple[str, str | None]]], None] = lambda _c, _ch: None

    def open(self) -> list[str]:
        """Open and migrate the database (on the writer thread); returns migrations applied."""
        return self._pool.submit(self._open).result()

    def _open(self) -> list[str]:
        self._conn = connect(self.db_path)
        return migrate(self._conn)

    async def run(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run `fn(conn)` on the writer thread, after whatever is queued before it."""
        loop = asyncio.get_running_loop()

        def call() -> T:
            assert self._conn is not None
            try:
                return fn(self._conn)
            finally:
                self.generation += 1

        return await loop.run_in_executor(self._pool, call)

    async def run_content(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Like run, for jobs that change documents: listeners hear of it even on failure."""
        try:
            return await self.run(fn)
        finally:
            self.on_content_change()

    async def index(self, col: CollectionConfig, progress: ProgressFn | None) -> IndexStats:
        def job(conn: apsw.Connection) -> IndexStats:
            self.job = JobInfo(running=True, collection=col.name)

            def report(phase: str, done: int, total: int, path: str) -> None:
                self.job = JobInfo(running=phase != "done", collection=col.name, done=done, total=total)
                if progress:
                    progress(phase, done, total, path)

            try:
                return index_collection(conn, self.analyzers, col, report, self.stop, self.pool, self.on_changes)
            finally:
                self.job = JobInfo(running=False)

        return await self.run_content(job)

    async def sync_collections(self, cols: list[CollectionConfig]) -> list[str]:
        """Make the collections table match the config; returns names whose rows were removed."""

        def job(conn: apsw.Connection) -> list[str]:
            wanted = {c.name for c in cols}
            removed = [n for n in store.collection_ids(conn) if n not in wanted]
            for name in removed:
                store.delete_collection(conn, name)
                self.on_changes(name, [("removed", None)])
            with conn:
                for c in cols:
                    store.upsert_collection(conn, c.name, c.path, c.language)
            return removed

        return await self.run_content(job)

    async def remove_collection(self, name: str) -> int:
        def job(conn: apsw.Connection) -> int:
            removed = store.delete_collection(conn, name)
            self.on_changes(name, [("removed", None)])
            return removed

        return await self.run_content(job)

    def close(self) -> None:
        self.stop.set()

        def shut() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        self._pool.submit(shut).result()
        self._pool.shutdown(wait=True)
        self.pool.close()
