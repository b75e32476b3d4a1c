"""A model's vectors beside the database: float rows mapped from a file, checkpointed.

SQLite (the model's vec0 table) is the source of truth; this folder is derived from it
so that a start-up maps the vectors instead of reading a million rows out of vec0, and
finds the graph already built. It holds the float rows (appended, never rewritten in
place), and per checkpoint generation the rows' chunk ids and the graph; `meta.json`,
replaced atomically last, names the generation that is whole. A crash leaves the last
checkpoint readable; start-up then brings it level with vec0 (gnod.server.vectors).
"""

from __future__ import annotations

import json
import logging
import os
import shutil

import numpy as np

from gnod.search.vector_index import Rows, VectorIndex

log = logging.getLogger("gnod.vectors")

PREFIX = "vectors-"
LAYOUT = 1
META = "meta.json"


def folder_for(data_dir: str, table: str) -> str:
    return os.path.join(data_dir, PREFIX + table)


def remove_others(data_dir: str, tables: set[str]) -> None:
    """Delete the folders of models the database no longer holds."""
    for name in os.listdir(data_dir) if os.path.isdir(data_dir) else []:
        if name.startswith(PREFIX) and name[len(PREFIX) :] not in tables:
            shutil.rmtree(os.path.join(data_dir, name), ignore_errors=True)


def remove(data_dir: str, table: str) -> None:
    shutil.rmtree(folder_for(data_dir, table), ignore_errors=True)


class VectorFolder:
    def __init__(self, path: str, uri: str, dim: int) -> None:
        self.path = path
        self.uri = uri
        self.dim = dim
        self.generation = 0
        self.rows_file = "rows-0.f32"
        self.saved_changes = -1  # the index's change count at the last checkpoint

    def _file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def open(self) -> tuple[VectorIndex, bool]:
        """The last checkpoint as an index, or an empty one; True when it was loaded."""
        try:
            return self._load(), True
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warning("vectors in %s unreadable (%s): rebuilding them from the database", self.path, e)
        shutil.rmtree(self.path, ignore_errors=True)
        os.makedirs(self.path)
        self.generation, self.rows_file = 0, "rows-0.f32"
        return VectorIndex(self.dim, Rows(self.dim, self._file(self.rows_file))), False

    def _load(self) -> VectorIndex:
        from gnod.search.ann import Ann

        with open(self._file(META)) as f:
            meta = json.load(f)
        if (meta["layout"], meta["uri"], meta["dim"]) != (LAYOUT, self.uri, self.dim):
            raise ValueError("written for another model or layout")
        generation, rows_file, used = int(meta["generation"]), str(meta["rows_file"]), int(meta["rows"])
        ids = np.load(self._file(f"ids-{generation}.npy"))
        if ids.shape != (used,) or ids.dtype != np.int64:
            raise ValueError(f"{used} rows but ids of shape {ids.shape}")
        rows = Rows(self.dim, self._file(rows_file), used)
        ann = None
        if meta["ann"]:
            ann = Ann.load(self._file(f"ann-{generation}.usearch"), self.dim)
            if len(ann) != int((ids >= 0).sum()):
                raise ValueError(f"the graph holds {len(ann)} vectors, the rows {int((ids >= 0).sum())}")
        self.generation, self.rows_file = generation, rows_file
        index = VectorIndex(self.dim, rows, ids, ann)
        self.saved_changes = index.changes
        return index

    def checkpoint(self, index: VectorIndex) -> bool:
        """Save what changed since the last checkpoint (slow at a million vectors: call it
        off the event loop); False when nothing had."""
        with index.changing:
            if index.changes == self.saved_changes:
                return False
            generation = self.generation + 1
            rows_file = self.rows_file
            if index.wants_compaction():
                rows_file = f"rows-{generation}.f32"
                index.compact_into(Rows(self.dim, self._file(rows_file)))
            used, ids, ann = index.snapshot()
            np.save(self._file(f"ids-{generation}.npy"), ids)
            if ann is not None:
                ann.save(self._file(f"ann-{generation}.usearch"))
            _fsync_all(self.path)
            meta = {
                "layout": LAYOUT,
                "uri": self.uri,
                "dim": self.dim,
                "generation": generation,
                "rows_file": rows_file,
                "rows": used,
                "ann": ann is not None,
            }
            tmp = self._file(META + ".tmp")
            with open(tmp, "w") as f:
                json.dump(meta, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._file(META))
            self.generation, self.rows_file, self.saved_changes = generation, rows_file, index.changes
        keep = {META, rows_file, f"ids-{generation}.npy", f"ann-{generation}.usearch"}
        for name in os.listdir(self.path):
            if name not in keep:
                os.unlink(self._file(name))
        return True


def _fsync_all(path: str) -> None:
    for name in os.listdir(path):
        fd = os.open(os.path.join(path, name), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
