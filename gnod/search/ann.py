"""An approximate nearest-neighbour graph over one model's vectors (usearch HNSW, int8).

Above VECTOR_ANN_MIN vectors an exact scan stops being fast (75 ms at a million
384-d vectors here), so the index asks this graph for candidates and re-scores them
with the float vectors: int8 storage keeps the graph small (about 0.5 KB a vector at
384-d) and the re-scoring gives back the order int8 loses between near ties. usearch
is a maintained library made for exactly this, adds and removes in place (removed
slots are reused), and saves to one file; it is imported only when a model has that
many vectors. Keys are chunk ids.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gnod.search.constants import ANN_BUILD_THREADS, ANN_CONNECTIVITY, ANN_EXPANSION_ADD, ANN_EXPANSION_SEARCH


class Ann:
    def __init__(self, dim: int, index: Any = None) -> None:
        from usearch.index import Index

        self.dim = dim
        self._index = (
            index
            if index is not None
            else Index(
                ndim=dim, metric="cos", dtype="i8", connectivity=ANN_CONNECTIVITY, expansion_add=ANN_EXPANSION_ADD
            )
        )
        # Not saved with the graph. A search for more keys than this explores that many.
        self._index.expansion_search = ANN_EXPANSION_SEARCH  # type: ignore[misc]  # (a setter mypy misses)

    @classmethod
    def load(cls, path: str, dim: int) -> Ann:
        """The graph saved at `path` (ValueError when it is not one of `dim` dimensions)."""
        from usearch.index import Index

        index = Index.restore(path)
        if index is None or index.ndim != dim:
            raise ValueError(f"{path} is not a {dim}-dimension vector graph")
        return cls(dim, index)

    def __len__(self) -> int:
        return len(self._index)

    def add(self, keys: np.ndarray, vecs: np.ndarray, threads: int = 1) -> None:
        if len(keys):
            self._index.add(np.asarray(keys, dtype=np.uint64), vecs, threads=threads)

    def build(self, keys: np.ndarray, vecs: np.ndarray) -> None:
        self.add(keys, vecs, threads=ANN_BUILD_THREADS)

    def remove(self, keys: np.ndarray) -> None:
        if len(keys):
            self._index.remove(np.asarray(keys, dtype=np.uint64))

    def keys(self) -> np.ndarray:
        return np.asarray(self._index.keys, dtype=np.int64)

    def candidates(self, query: np.ndarray, count: int) -> np.ndarray:
        """Up to `count` keys near `query`, nearest first by the int8 distance."""
        return np.asarray(self._index.search(query, count).keys, dtype=np.int64)

    def save(self, path: str) -> None:
        self._index.save(path)
