"""In-memory exact KNN over one model's chunk vectors.

sqlite-vec stores the vectors durably, but its float scan costs ~120 ms at 100k × 384
here. One contiguous float32 matrix and a BLAS matrix-vector product cost ~5 ms for
the same set (benchmarks/vector_knn.py), with recall 1 by construction; a sign-bit
prefilter was measured too: it saved 2 ms and lost a third of the true top 20 at this
size. Filters arrive as the allowed chunk ids and are applied to the scores, not by
gathering rows (a copy that costs more than the product), so a filtered query still
returns a full k whenever k allowed vectors exist.
"""

from __future__ import annotations

import threading

import numpy as np


class VectorIndex:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._n = 0
        self._ids = np.zeros(0, dtype=np.int64)
        self._vecs = np.zeros((0, dim), dtype=np.float32)
        self._row_of = np.full(0, -1, dtype=np.int64)  # chunk id → row, -1 when absent
        self._lock = threading.Lock()  # search runs on reader threads, updates on the loop

    def __len__(self) -> int:
        return self._n

    def _reserve(self, rows: int, max_id: int) -> None:
        if rows > len(self._ids):
            cap = max(rows, 2 * len(self._ids), 1024)
            for name in ("_ids", "_vecs"):
                old = getattr(self, name)
                new = np.zeros((cap, *old.shape[1:]), dtype=old.dtype)
                new[: self._n] = old[: self._n]
                setattr(self, name, new)
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
        with self._lock:
            self._reserve(self._n + len(ids), int(ids.max()))
            rows = self._row_of[ids]
            new = rows < 0
            rows[new] = self._n + np.arange(int(new.sum()))
            self._n += int(new.sum())
            self._ids[rows] = ids
            self._vecs[rows] = vecs
            self._row_of[ids] = rows

    def remove(self, ids: np.ndarray) -> None:
        """Drop vectors by chunk id (unknown ids are ignored); the last row fills each hole."""
        ids = np.asarray(ids, dtype=np.int64)
        with self._lock:
            for cid in ids[(ids >= 0) & (ids < len(self._row_of))].tolist():
                row = int(self._row_of[cid])
                if row < 0:
                    continue
                last = self._n - 1
                if row != last:
                    moved = int(self._ids[last])
                    self._ids[row] = moved
                    self._vecs[row] = self._vecs[last]
                    self._row_of[moved] = row
                self._row_of[cid] = -1
                self._n = last

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """The vectors of those of `ids` the index holds (a document's chunks, for `similar`)."""
        with self._lock:
            rows = self._rows(ids)
            return self._vecs[rows].copy()

    def _rows(self, allowed: np.ndarray | None) -> np.ndarray | None:
        """Rows of the allowed ids (None: every row)."""
        if allowed is None:
            return None
        allowed = np.asarray(allowed, dtype=np.int64)
        allowed = allowed[(allowed >= 0) & (allowed < len(self._row_of))]
        rows = self._row_of[allowed]
        return rows[rows >= 0]

    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The k nearest chunk ids (best first) and their cosine similarities."""
        q = np.asarray(query, dtype=np.float32).reshape(self.dim)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        with self._lock:
            rows = self._rows(allowed)
            total = self._n if rows is None else len(rows)
            if k <= 0 or total == 0:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            sims = self._vecs[: self._n] @ q
            if rows is not None:
                sims = sims[rows]
            k = min(k, len(sims))
            top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
            top = top[np.argsort(-sims[top], kind="stable")]
            picked = top if rows is None else rows[top]
            return self._ids[picked].copy(), sims[top].astype(np.float32)
