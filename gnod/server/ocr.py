"""The OCR backlog: the text of pictures and scans, read in the background.

OCR takes seconds a page, so an index run does not wait for it: a picture or a PDF
without a text layer is indexed by its name at once and joins the backlog
(gnod.store.ocr). This task reads the backlog's files oldest first, one per worker
process at a time, while no collection is being indexed (an ingest keeps both cores),
and stores each through the single writer as an index run reading it then would have:
its text, or its failure (EMPTY, TIMEOUT, NEEDS_OCR) in its place. It wakes when
documents change; the backlog is in the database, so a restart goes on with it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterator
from functools import partial

from gnod.config import CollectionConfig
from gnod.ingest.pipeline import store_ocr
from gnod.ingest.walk import WalkEntry
from gnod.ingest.workers import Expanded, Task, Unchanged, run_task
from gnod.search.constants import OCR_WAIT_POLL_S, OCR_WAIT_RECENT_S
from gnod.server.background import IDLE_CHECK_S, in_worker, not_indexing, serve
from gnod.server.jobs import Writer
from gnod.store import ocr as store
from gnod.store.ocr import Waiting

log = logging.getLogger("gnod.ocr")


class OcrBacklog:
    """The backlog's task and what `status` and searches say of it."""

    def __init__(self, writer: Writer, read: Callable, collection: Callable[[str], CollectionConfig | None]) -> None:
        self.writer = writer
        self._read = read  # Daemon.read on the background lane: fn(conn, analyzers)
        self._collection = collection  # the configured collection of that name, if any
        self.wake = asyncio.Event()
        self.pending = 0  # as of the last look, less what was read since
        self.reading: list[str] = []  # collection/path of the files being read now
        self.read = 0  # files read (stored with their text or failure) since gnod started
        self.failed: str | None = None

    def lag_note(self) -> str | None:
        """What a search cannot find yet."""
        if not self.pending:
            return None
        what = "1 picture or scan is" if self.pending == 1 else f"{self.pending:,} pictures or scans are"
        return f"{what} still waiting for OCR: only their names are searchable yet"

    async def wait_recent(self, names: list[str], timeout: float) -> bool:
        """Wait until the pictures and scans of collections `names` modified in the last
        OCR_WAIT_RECENT_S are read and searchable (a scan saved just now, as a search's
        `wait_s` asks); False on timeout."""
        deadline = time.monotonic() + timeout
        since = time.time_ns() - int(OCR_WAIT_RECENT_S * 1e9)
        while await self._read(lambda conn, _a: store.unread_since(conn, names, since)):
            if time.monotonic() + OCR_WAIT_POLL_S > deadline:
                return False
            self.wake.set()
            await asyncio.sleep(OCR_WAIT_POLL_S)
        return True

    async def run(self, stopping: asyncio.Event) -> None:
        await serve(
            self.wake, stopping, IDLE_CHECK_S, lambda: self._cycle(stopping), self._failed, "OCR in the background", log
        )

    def _failed(self, why: str | None) -> None:
        self.failed = why

    async def _cycle(self, stopping: asyncio.Event) -> None:
        backlog = await self._read(lambda conn, _a: store.backlog(conn))
        self.pending = len(backlog)
        queue = iter(backlog)  # shared by the lanes: each takes the next file when it is free
        lanes = self.writer.pool.lanes
        await asyncio.gather(*(self._lane(queue, stopping) for _ in range(lanes)))

    async def _lane(self, queue: Iterator[Waiting], stopping: asyncio.Event) -> None:
        for waited in queue:
            if not await not_indexing(lambda: self.writer.job.running, stopping):
                return
            await self._ocr(waited)
            self.pending = max(0, self.pending - 1)

    async def _ocr(self, waited: Waiting) -> None:
        col = self._collection(waited.collection)
        if col is None:
            return  # its collection is being removed
        path = os.path.join(col.path, waited.rel_path)
        try:
            st = os.stat(path, follow_symlinks=col.follow_symlinks)
        except OSError:
            return  # gone: the watcher or the next update removes it
        stat = (st.st_size, st.st_mtime_ns, st.st_ino)
        task = Task(WalkEntry(waited.rel_path, path, *stat), None, col.language, col.follow_symlinks, ocr_now=True)
        name = f"{waited.collection}/{waited.rel_path}"
        self.reading.append(name)  # until stored and counted: with none pending, `read` is final
        try:
            outcome = await in_worker(self.writer.pool, partial(run_task, task))
            assert not isinstance(outcome, (Expanded, Unchanged))  # a file (not a container), no old hash
            stored = await self.writer.run_content(
                lambda conn: store_ocr(conn, col, waited, stat, outcome, self.writer.on_changes, self.writer.lexical),
                aside=col.name,
            )
            if stored:
                self.read += 1
                log.info("OCR read %s", name)
        finally:
            self.reading.remove(name)
