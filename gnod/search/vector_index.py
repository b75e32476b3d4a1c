"""KNN over one model's chunk vectors: an exact scan, or a graph's candidates re-scored.

sqlite-vec stores the vectors durably, but its float scan costs ~120 ms at 100k × 384
here. One contiguous float32 matrix and a BLAS matrix-vector product cost ~5 ms for
the same set (benchmarks/vector_knn.py), with recall 1 by construction; a sign-bit
prefilter was measured too: it saved 2 ms and lost a third of the true top 20 at this
size. From VECTOR_ANN_MIN vectors on, an int8 HNSW graph (gnod.search.ann) proposes
candidates and the float rows re-score them, so a million vectors still answer in
about a millisecond.

The float rows are appended, never moved (a removal marks its row dead, a compaction
writes a new matrix), and may live in a file mapped into memory (gnod.store.vector_folder):
the page cache holds them, not the daemon's heap, and a checkpoint of the first n rows
stays valid while rows are added after it. Filters arrive as the allowed chunk ids, so
a filtered query still returns a full k whenever k allowed vectors exist.
"""

from __future__ import annotations

import os
import threading
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from gnod.search.constants import (
    ANN_EXACT_ALLOWED,
    ANN_MAX_CANDIDATES,
    ANN_RESCORE_EXTRA,
    ANN_RESCORE_FACTOR,
    VECTOR_ANN_MIN,
    VECTOR_BUILD_SLICE,
    VECTOR_COMPACT_DEAD,
    VECTOR_PREAD_ROWS,
)

if TYPE_CHECKING:
    from gnod.search.ann import Ann


class Rows:
    """A growable float32 matrix, in memory or in a file; rows never move.

    A file's rows are written and read with pwrite/pread, and mapped only for what
    scans many rows (the exact scan, a filter's rows): a mapping counts every page it
    has touched, and the kernel maps a fault's neighbours with it, so re-scoring a
    graph's candidates through one would soon show the whole file as the daemon's
    memory. The page cache keeps the file either way.
    """

    def __init__(self, dim: int, path: str | None = None, used: int = 0) -> None:
        self.dim = dim
        self.path = path
        self.capacity = 0
        self._array = np.zeros((0, dim), dtype=np.float32)  # in memory: the rows; in a file: the mapping
        self._fd = -1
        if path is not None:
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            self.capacity = os.fstat(self._fd).st_size // (4 * dim)
            if self.capacity < used:
                os.close(self._fd)
                self._fd = -1
                raise ValueError(f"{path} holds {self.capacity} rows, not {used}")

    def __del__(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)

    def reserve(self, rows: int) -> None:
        if rows <= self.capacity:
            return
        capacity = max(rows, 2 * self.capacity, 1024)
        if self._fd >= 0:
            os.ftruncate(self._fd, capacity * 4 * self.dim)
        else:
            grown = np.zeros((capacity, self.dim), dtype=np.float32)
            grown[: self.capacity] = self._array
            self._array = grown
        self.capacity = capacity

    def write(self, start: int, vecs: np.ndarray) -> None:
        if self._fd < 0:
            self._array[start : start + len(vecs)] = vecs
        else:
            os.pwrite(self._fd, np.ascontiguousarray(vecs, dtype=np.float32).tobytes(), start * 4 * self.dim)

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows start..stop, copied."""
        if self._fd < 0:
            return self._array[start:stop].copy()
        size = 4 * self.dim
        data = os.pread(self._fd, (stop - start) * size, start * size)
        return np.frombuffer(data, dtype=np.float32).reshape(-1, self.dim)

    def take(self, rows: np.ndarray) -> np.ndarray:
        """These rows (ascending), copied: a few read one by one, many through the mapping.

        Each row is asked of the file before any is read, so that the rows the page cache
        lacks (after a restart, or once the system took back pages left unread a while)
        are read from the disk together: a graph's 120 candidates took 8.7 ms here read
        one after another, 3.5 ms asked first; cached, asking adds 55 µs to 140."""
        if self._fd < 0 or len(rows) > VECTOR_PREAD_ROWS:
            return np.asarray(self.matrix(int(rows[-1]) + 1 if len(rows) else 0)[rows])
        size = 4 * self.dim
        offsets = [r * size for r in rows.tolist()]
        for at in offsets if _ADVISE else ():
            os.posix_fadvise(self._fd, at, size, os.POSIX_FADV_WILLNEED)
        data = b"".join([os.pread(self._fd, size, at) for at in offsets])
        return np.frombuffer(data, dtype=np.float32).reshape(-1, self.dim)

    def matrix(self, used: int) -> np.ndarray:
        """The first `used` rows as one array (mapped from a file)."""
        if self._fd >= 0 and len(self._array) < used:
            assert self.path is not None
            self._array = np.memmap(self.path, dtype=np.float32, mode="r", shape=(self.capacity, self.dim))
        return self._array[:used]

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)


class VectorIndex:
    def __init__(
        self,
        dim: int,
        rows: Rows | None = None,
        ids: np.ndarray | None = None,
        ann: Ann | None = None,
        ann_min: int = VECTOR_ANN_MIN,
    ) -> None:
        """An empty index, or the state a checkpoint left: the first len(ids) of `rows`
        with their chunk ids (-1 for a dead row) and the graph over the live ones."""
        self.dim = dim
        self.ann_min = ann_min
        self._rows = rows if rows is not None else Rows(dim)
        self._ids = np.asarray(ids if ids is not None else np.zeros(0), dtype=np.int64)
        self._n = len(self._ids)
        live = self._ids[self._ids >= 0]
        self._live = len(live)
        self._row_of = np.full(int(live.max()) + 1 if len(live) else 0, -1, dtype=np.int64)
        self._row_of[live] = np.flatnonzero(self._ids >= 0)
        self._ann = ann
        self.changes = 0  # bumped by every add and remove: a checkpoint is due when it moved
        self._lock = threading.Lock()  # the arrays, between searches and changes
        # Changes, graph builds and checkpoints, one at a time; searches do not take it.
        self.changing = threading.Lock()
        self._stop_building = threading.Event()

    def __len__(self) -> int:
        return self._live

    @property
    def has_ann(self) -> bool:
        return self._ann is not None

    def wants_ann(self) -> bool:
        return self._ann is None and self._live >= self.ann_min

    def dead(self) -> int:
        return self._n - self._live

    def _reserve(self, rows: int, max_id: int) -> None:
        self._rows.reserve(rows)
        if rows > len(self._ids):
            grown = np.full(max(rows, 2 * len(self._ids), 1024), -1, dtype=np.int64)
            grown[: self._n] = self._ids[: self._n]
            self._ids = grown
        if max_id >= len(self._row_of):
            grown = np.full(max(max_id + 1, 2 * len(self._row_of)), -1, dtype=np.int64)
            grown[: len(self._row_of)] = self._row_of
            self._row_of = grown

    def add(self, ids: np.ndarray, vecs: np.ndarray) -> None:
        """Insert or replace vectors (normalized here, so cosine is a dot product)."""
        ids = np.asarray(ids, dtype=np.int64)
        if not len(ids):
            return
        vecs = np.asarray(vecs, dtype=np.float32).reshape(len(ids), self.dim)
        vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        # Last write wins for an id given twice in one call.
        _, last = np.unique(ids[::-1], return_index=True)
        keep = np.sort(len(ids) - 1 - last)
        ids, vecs = ids[keep], vecs[keep]
        with self.changing, self._lock:
            self._drop(ids)
            self._reserve(self._n + len(ids), int(ids.max()))
            rows = self._n + np.arange(len(ids))
            self._rows.write(self._n, vecs)
            self._ids[rows] = ids
            self._row_of[ids] = rows
            self._n += len(ids)
            self._live += len(ids)
            if self._ann is not None:
                self._ann.add(ids, vecs)
            self.changes += 1

    def remove(self, ids: np.ndarray) -> None:
        """Drop vectors by chunk id (unknown ids are ignored)."""
        with self.changing, self._lock:
            if self._drop(np.asarray(ids, dtype=np.int64)):
                self.changes += 1

    def _drop(self, ids: np.ndarray) -> int:
        ids = ids[(ids >= 0) & (ids < len(self._row_of))]
        rows = self._row_of[ids]
        held = rows >= 0
        ids, rows = ids[held], rows[held]
        self._ids[rows] = -1
        self._row_of[ids] = -1
        self._live -= len(ids)
        if self._ann is not None:
            self._ann.remove(ids)
        return len(ids)

    def ids(self) -> np.ndarray:
        """The chunk ids held, ascending."""
        with self._lock:
            held = self._ids[: self._n]
            return np.sort(held[held >= 0])

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """The vectors of those of `ids` the index holds (a document's chunks, for `similar`)."""
        with self._lock:
            return self._rows.take(np.sort(self._rows_of(ids)))

    def _rows_of(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        ids = ids[(ids >= 0) & (ids < len(self._row_of))]
        rows = self._row_of[ids]
        kept: np.ndarray = rows[rows >= 0]
        return kept

    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The k nearest chunk ids (best first) and their cosine similarities."""
        q = np.asarray(query, dtype=np.float32).reshape(self.dim)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        with self._lock:
            if k <= 0 or self._live == 0:
                return _empty()
            if allowed is not None:
                rows = self._rows_of(allowed)
                if self._ann is None or len(rows) <= ANN_EXACT_ALLOWED:
                    return self._best(rows, q, k)
                return self._ann_search(q, k, rows)
            if self._ann is None:
                return self._scan(q, k)
            return self._ann_search(q, k, None)

    def _scan(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Every live row scored: one matrix-vector product over the whole matrix."""
        sims = self._rows.matrix(self._n) @ q
        if self._live < self._n:
            sims[self._ids[: self._n] < 0] = -np.inf
        return self._top(np.arange(self._n), sims, min(k, self._live))

    def _best(self, rows: np.ndarray, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """These rows scored exactly (a filter's allowed set, or a graph's candidates)."""
        if not len(rows):
            return _empty()
        if len(rows) * 8 > self._n:  # most rows: one product over all beats gathering them
            sims = (self._rows.matrix(self._n) @ q)[rows]
        else:
            rows = np.sort(rows)
            sims = self._rows.take(rows) @ q
        return self._top(rows, sims, min(k, len(rows)))

    def _top(self, rows: np.ndarray, sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top], kind="stable")]
        return self._ids[rows[top]].copy(), sims[top].astype(np.float32)

    def _ann_search(self, q: np.ndarray, k: int, allowed_rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The graph's candidates re-scored; with a filter, asked for more until k pass it."""
        assert self._ann is not None
        want = max(k * ANN_RESCORE_FACTOR, k + ANN_RESCORE_EXTRA)
        if allowed_rows is not None:  # candidates pass the filter at about its share of rows
            want = int(want * self._live / max(1, len(allowed_rows)))
            passes = np.zeros(self._n, dtype=bool)
            passes[allowed_rows] = True
        exact = partial(self._scan, q, k) if allowed_rows is None else partial(self._best, allowed_rows, q, k)
        while True:
            # Every row asked for is an exact scan's work, and the graph may not give every
            # row back (a filter of 12 rows in 3,000 missed one of its best 5).
            if want >= self._live:
                return exact()
            rows = self._rows_of(self._ann.candidates(q, want))
            if allowed_rows is not None:
                rows = rows[passes[rows]]
            if len(rows) >= k:
                return self._best(rows, q, k)
            if want >= ANN_MAX_CANDIDATES:  # a filter the graph rarely meets
                return exact()
            want = min(4 * want, ANN_MAX_CANDIDATES)

    # --- the graph and checkpoints (gnod.store.vector_folder) -----------------------

    def build_ann(self) -> bool:
        """Build the graph over the live rows (slow: call it off the event loop); False
        when stop_building() cut it short. Searches scan exactly until it is in place;
        changes wait for it."""
        from gnod.search.ann import Ann

        with self.changing:
            with self._lock:
                n, ids = self._n, self._ids[: self._n].copy()
            ann = Ann(self.dim)
            for start in range(0, n, VECTOR_BUILD_SLICE):
                if self._stop_building.is_set():
                    return False
                part = ids[start : start + VECTOR_BUILD_SLICE]
                live = part >= 0
                ann.build(part[live], self._rows.read(start, start + len(part))[live])
            with self._lock:
                self._ann = ann
            return True

    def stop_building(self) -> None:
        """Make a graph build under way (and any later one) give up: the daemon is stopping."""
        self._stop_building.set()

    def snapshot(self) -> tuple[int, np.ndarray, Ann | None]:
        """What a checkpoint saves, taken while `changing` is held: rows in use, their
        ids, the graph; the rows are flushed to their file first."""
        self._rows.flush()
        with self._lock:
            return self._n, self._ids[: self._n].copy(), self._ann

    def wants_compaction(self) -> bool:
        dead = self.dead()
        return dead >= VECTOR_COMPACT_DEAD and dead * 4 > self._n

    def compact_into(self, rows: Rows) -> None:
        """Copy the live rows into `rows` (a new matrix) and serve from it; call with
        `changing` held."""
        with self._lock:
            n, ids = self._n, self._ids[: self._n].copy()
        kept = 0
        for start in range(0, n, VECTOR_BUILD_SLICE):
            live = ids[start : start + VECTOR_BUILD_SLICE] >= 0
            block = self._rows.read(start, start + len(live))[live]
            rows.reserve(kept + len(block))
            rows.write(kept, block)
            kept += len(block)
        with self._lock:
            ids = ids[ids >= 0]
            self._rows = rows
            self._ids = ids
            self._n = len(ids)
            self._row_of[:] = -1
            self._row_of[ids] = np.arange(len(ids))
            self.changes += 1


_ADVISE = hasattr(os, "posix_fadvise")  # not on macOS


def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
