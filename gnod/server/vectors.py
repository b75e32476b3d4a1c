"""The embedding backlog and the vectors vsearch serves.

A background task embeds chunks that have no vector for the configured model, in
small batches at background priority (a query embeds between two batches), writes
them through the single writer and adds them to the model's index. When the
model changes, the old model's vectors keep serving until the new backlog is empty.
Each index is checkpointed in a folder beside the database (gnod.store.vector_folder)
and brought level with the vec0 table at start: what the checkpoint lacks is read
from SQLite, never embedded again.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from collections.abc import Callable

import numpy as np

from gnod.models import presets
from gnod.models.base import Embedder, ModelUnavailable, with_fix
from gnod.models.manager import Models
from gnod.models.uri import REMOTE_PREFIX
from gnod.models.worker import BACKGROUND
from gnod.protocol import VectorInfo
from gnod.search.constants import EMBED_CALL_S, VECTOR_CHECKPOINT_S
from gnod.search.vector_index import VectorIndex
from gnod.server.background import woken
from gnod.server.jobs import Writer
from gnod.store import vector_folder
from gnod.store import vectors as store

log = logging.getLogger("gnod.vectors")

# Chunks per model call at most: big enough to batch; fewer where a call of them would
# take longer than EMBED_CALL_S (_call_size).
BATCH = 16
IDLE_CHECK_S = 60.0  # with nothing changed, how often the backlog is looked at anyway
MODEL_RETRY_S = 5.0  # after the embedding server failed, how soon it is tried again
LOAD_BATCH = 10_000  # vectors read from SQLite per step while an index is brought level


class Vectors:
    def __init__(
        self, writer: Writer, models: Models, read: Callable, enabled: Callable[[], bool], data_dir: str
    ) -> None:
        self.writer = writer
        self.data_dir = data_dir
        self.models = models
        self._read = read  # Daemon.read: fn(conn, analyzers) on a reader thread
        self._enabled = enabled
        self.ext_error: str | None = None  # sqlite-vec failed to load: vsearch is off
        self.model_error: str | None = None
        self.target: store.VecModel | None = None
        self.serving: store.VecModel | None = None
        self.indexes: dict[str, VectorIndex] = {}
        self.folders: dict[str, vector_folder.VectorFolder] = {}
        self.wake = asyncio.Event()
        self.changed = asyncio.Condition()
        self.embedding = False
        # Cycles of the embedding loop begun and ended: `wait_idle` waits for one that began
        # after it asked (the one running then may have read the backlog before the ask).
        self.cycles_begun = 0
        self.cycles_ended = 0
        self.loading = True  # until start() has mapped the checkpoints and read what they lack
        self.force_uri: str | None = None
        self.requested = False  # `embed` asked for a cycle even if background embedding is off
        self.done = 0
        self.pending = 0
        self.chunks = 0
        self.rate: float | None = None

    # --- state -----------------------------------------------------------------

    def info(self) -> VectorInfo:
        available = self.serving is not None and self.ext_error is None
        served = self.index()
        return VectorInfo(
            available=available,
            reason=None if available else self.missing_reason(),
            model=self.target.uri if self.target else self.models.uri("embed"),
            serving=self.serving.uri if self.serving else None,
            chunks=self.chunks,
            embedded=self.done,
            pending=self.pending,
            embedding=self.embedding,
            rate_per_s=self.rate,
            knn=None if served is None else "graph" if served[1].has_ann else "exact",
        )

    def missing_reason(self) -> str:
        """Why vector search cannot run, with the fix or how far the first embedding is."""
        return with_fix(*self.missing())

    def missing(self) -> tuple[str, str | None]:
        """Why vector search cannot run, and the command that fixes it, if one does."""
        if self.ext_error:
            return f"sqlite-vec is not available ({self.ext_error})", None
        if self.model_error:
            return self.model_error, None
        if self.loading:
            return "the vectors are being loaded (vector search starts in a moment)", None
        if self.embedding and self.chunks:
            eta = f", about {_duration(self.pending / self.rate)} left" if self.rate else ""
            return f"the first embedding is under way ({self.done:,} of {self.chunks:,} chunks{eta})", None
        if self.done and not self._enabled():
            return (
                f"background embedding is off ([models] embed_in_background = false): {self.done:,} of "
                f"{self.chunks:,} chunks embedded",
                "gnoctl embed",
            )
        # The embedding loop may not have tried the model yet: a missing file is the better answer.
        uri = self.models.uri("embed")
        for m in self.models.infos():
            if m.role == "embed" and m.uri == uri and m.error:
                return m.error, m.fix
        return "no vectors yet", "gnoctl embed"

    def coverage(self) -> float:
        """The share of the chunks that the served vectors hold: 1.0 once all are embedded,
        and while another model's vectors serve (they were whole when it was switched)."""
        if self.serving is None or self.target is None or self.serving.uri != self.target.uri or not self.chunks:
            return 1.0
        return min(1.0, self.done / self.chunks)

    def lag_note(self) -> str | None:
        """What vector results cannot see yet: chunks still to embed, or a model switch in progress."""
        if self.serving is None or self.target is None or not self.pending:
            return None
        if self.serving.uri != self.target.uri:
            return (
                f"vector search uses {self.serving.uri} while {self.target.uri} embeds "
                f"({self.done:,} of {self.chunks:,} chunks)"
            )
        waiting = "1 chunk is" if self.pending == 1 else f"{self.pending:,} chunks are"
        return f"{waiting} not embedded yet: vector search may miss the newest documents"

    def index(self) -> tuple[store.VecModel, VectorIndex] | None:
        if self.serving is None:
            return None
        return self.serving, self.indexes[self.serving.uri]

    # --- the loop ----------------------------------------------------------------

    async def _load_index(self, model: store.VecModel) -> VectorIndex:
        """The model's checkpoint, brought level with its vec0 table."""
        folder = vector_folder.VectorFolder(vector_folder.folder_for(self.data_dir, model.table), model.uri, model.dim)
        index, _loaded = await asyncio.to_thread(folder.open)

        def level(conn, _a) -> tuple[int, int]:
            stored = store.stored_ids(conn, model)
            held = index.ids()
            gone = np.setdiff1d(held, stored, assume_unique=True)
            index.remove(gone)
            missing = np.setdiff1d(stored, held, assume_unique=True)
            scan = len(missing) * 10 > len(stored)  # one pass over the table beats many point reads
            for ids, vecs in store.read_vectors(conn, model, None if scan else missing, LOAD_BATCH):
                if scan:
                    keep = np.isin(ids, missing, assume_unique=True)
                    ids, vecs = ids[keep], vecs[keep]
                index.add(ids, vecs)
            return len(missing), len(gone)

        t0 = time.monotonic()
        added, removed = await self._read(level)
        if added or removed:
            log.info(
                "vectors of %s: %d read from the database, %d removed (%.1f s)",
                model.uri,
                added,
                removed,
                time.monotonic() - t0,
            )
        self.indexes[model.uri], self.folders[model.uri] = index, folder
        await self._checkpoint(model.uri)
        return index

    async def _checkpoint(self, uri: str) -> None:
        index, folder = self.indexes.get(uri), self.folders.get(uri)
        if index is None or folder is None:
            return
        try:
            await asyncio.to_thread(folder.checkpoint, index)
        except OSError as e:  # a full disk: the next start reads more from SQLite, nothing is lost
            log.warning("could not checkpoint the vectors of %s: %s", uri, e)

    async def close(self) -> None:
        """Checkpoint every index (at shutdown: the next start maps them as they are; a
        graph being built is given up and built again then)."""
        for index in self.indexes.values():
            index.stop_building()
        for uri in list(self.indexes):
            await self._checkpoint(uri)

    def _forget(self, uri: str) -> None:
        self.indexes.pop(uri, None)
        folder = self.folders.pop(uri, None)
        if folder is not None:
            shutil.rmtree(folder.path, ignore_errors=True)

    async def start(self) -> None:
        """Load the vectors of models already in the index (the complete one serves)."""
        self.ext_error = await self.writer.run(store.load_extension)
        if self.ext_error:
            log.warning("sqlite-vec unavailable, vector search is off: %s", self.ext_error)
            self.loading = False
            return
        known = await self._read(lambda conn, _a: store.models(conn))
        vector_folder.remove_others(self.data_dir, {m.table for m in known})
        want = self.models.uri("embed")
        complete = [m for m in known if m.complete_at]
        # The configured model if it is complete, else the latest complete one; it serves
        # as soon as it is loaded, before the configured one still embedding.
        serving = next((m for m in complete if m.uri == want), complete[-1] if complete else None)
        self.target = next((m for m in known if m.uri == want), None)
        try:
            if serving is not None:
                await self._load_index(serving)
                self.serving = serving
            if self.target is not None and self.target.uri not in self.indexes:
                await self._load_index(self.target)
        finally:
            self.loading = False

    async def run(self, stopping: asyncio.Event) -> None:
        self.wake.set()
        while True:
            # A model server that failed is tried again soon, not at the next change (a model
            # not downloaded waits for the pull, which wakes this loop).
            retry = self.model_error and self.models.uri("embed").startswith(REMOTE_PREFIX)
            if not await woken(self.wake, stopping, MODEL_RETRY_S if retry else IDLE_CHECK_S):
                return
            self.cycles_begun += 1
            if self.ext_error:
                self.cycles_ended = self.cycles_begun
                continue
            try:
                await self._cycle(stopping)
            except ModelUnavailable as e:
                self.model_error = e.text()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("embedding failed; retrying on the next change")
            finally:
                self.embedding = False
                self.cycles_ended = self.cycles_begun
                async with self.changed:
                    self.changed.notify_all()
            await self._settle()

    async def _settle(self) -> None:
        """Build the graph of an index that has grown to need one, then checkpoint what changed."""
        for uri, index in list(self.indexes.items()):
            if index.wants_ann():
                t0 = time.monotonic()
                try:
                    built = await asyncio.to_thread(index.build_ann)
                except Exception:  # searches go on scanning every vector
                    log.exception("could not build the vector graph of %s", uri)
                else:
                    if built:
                        log.info(
                            "vector graph of %s built over %d vectors in %.1f s", uri, len(index), time.monotonic() - t0
                        )
            await self._checkpoint(uri)

    async def _cycle(self, stopping: asyncio.Event) -> None:
        removed = await self.writer.run(store.apply_tombstones)
        if removed:
            ids = np.asarray(removed, dtype=np.int64)
            for index in self.indexes.values():
                index.remove(ids)
        forced = self.force_uri
        requested, self.requested = self.requested, False
        if not (self._enabled() or requested) and forced is None:
            target = self.target
            if target is not None:  # keep the backlog figures true for status and notes
                self.chunks, self.done = await self._read(lambda conn, _a: store.counts(conn, target))
                self.pending = max(0, self.chunks - self.done)
            return
        embedder = await self.models.get("embed")
        self.model_error = None
        uri = embedder.uri
        if forced == uri:
            await self._drop(uri)
        model = await self.writer.run(lambda conn: store.ensure_model(conn, uri, embedder.dim))
        self.target = model
        if uri not in self.indexes:
            await self._load_index(model)
        self.chunks, self.done = await self._read(lambda conn, _a: store.counts(conn, model))
        self.pending = max(0, self.chunks - self.done)
        await self._embed_backlog(model, stopping, lambda: requested or forced is not None or self._enabled())
        if stopping.is_set():
            return
        self.chunks, self.done = await self._read(lambda conn, _a: store.counts(conn, model))
        self.pending = max(0, self.chunks - self.done)
        if self.pending == 0:
            await self._complete(model)

    async def _drop(self, uri: str) -> None:
        """`embed --force`: this model's vectors go, to be made again."""
        await self.writer.run(lambda conn: store.drop_model(conn, uri))
        self._forget(uri)
        if self.serving and self.serving.uri == uri:
            self.serving = None
        self.force_uri = None

    async def _embed_backlog(self, model: store.VecModel, stopping: asyncio.Event, wanted: Callable[[], bool]) -> None:
        """Embed the chunks without vectors, a batch at a time, until none is left, gnod
        stops, or they are no longer `wanted` (background embedding turned off in the
        config mid-backlog: it went on until a restart)."""
        uri, index, family = model.uri, self.indexes[model.uri], presets.family(model.uri)
        after = 0
        t0, n0 = time.monotonic(), 0
        saved = t0
        size = 1  # chunks in the next call: the first measures the model's speed
        while not stopping.is_set() and wanted():
            batch = await self._read(lambda conn, _a: store.pending(conn, model, after, size))
            if not batch:
                break
            if not self.embedding:
                self.embedding = True
                if model.complete_at:
                    await self.writer.run(lambda conn: store.set_complete(conn, uri, False))
            texts = [presets.document_prompt(family, c.title, c.text) for c in batch]
            vecs, size = await self.models.run("embed", lambda m: _embed(m, texts), BACKGROUND, uri=uri)
            chunk_ids = [c.chunk_id for c in batch]
            await self.writer.run(lambda conn: store.put(conn, model, chunk_ids, vecs))
            await asyncio.to_thread(index.add, np.asarray(chunk_ids, dtype=np.int64), vecs)
            if index.wants_ann() or time.monotonic() - saved > VECTOR_CHECKPOINT_S:
                await self._settle()
                saved = time.monotonic()
            after = chunk_ids[-1]
            n0 += len(chunk_ids)
            self.done += len(chunk_ids)
            self.pending = max(0, self.pending - len(chunk_ids))
            self.rate = round(n0 / max(1e-6, time.monotonic() - t0), 2)
            async with self.changed:
                self.changed.notify_all()

    async def _complete(self, model: store.VecModel) -> None:
        """Every chunk has its vector: the model is marked complete and serves searches."""
        uri = model.uri
        await self.writer.run(lambda conn: store.set_complete(conn, uri, True))
        if self.serving is None or self.serving.uri != uri:
            old = self.serving
            self.serving = model
            if old is not None:
                self.indexes.pop(old.uri, None)
                self.folders.pop(old.uri, None)
                log.info("vector search now uses %s (was %s)", uri, old.uri)

    async def wait_idle(
        self, timeout: float | None = None, on_progress: Callable[[int, int], None] | None = None
    ) -> bool:
        """Wait until nothing is pending (or the model is unusable); False on timeout.

        Settled means a cycle that began after this call has ended (one already running
        may have counted the backlog before it grew) and no other is due."""
        asked = self.cycles_begun

        async def settled() -> None:
            async with self.changed:
                while True:
                    if on_progress:
                        on_progress(self.done, self.chunks)
                    if self.cycles_ended > asked and not self.embedding and not self.wake.is_set():
                        return
                    await self.changed.wait()

        self.wake.set()
        try:
            await asyncio.wait_for(settled(), timeout)
            return True
        except asyncio.TimeoutError:
            return False


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _embed(m: Embedder, texts: list[str]) -> tuple[np.ndarray, int]:
    """`texts`' vectors, and how many chunks the next call takes (_call_size): a server's
    calls do not hold the model thread, so they take the most."""
    t0 = time.perf_counter()
    vecs = m.embed_documents(texts)
    return vecs, BATCH if m.remote else _call_size(len(texts), time.perf_counter() - t0)


def _call_size(chunks: int, took: float) -> int:
    """Chunks a call may take for it to last at most EMBED_CALL_S, at the speed a call of
    `chunks` that took `took` seconds showed; between 1 and BATCH."""
    return max(1, min(BATCH, int(chunks * EMBED_CALL_S / max(took, 1e-6))))
