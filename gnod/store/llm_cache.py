"""Persistent cache of model outputs that are slow to make and cheap to keep.

Query expansions (keyed by query + generator + prompt version) and rerank scores
(keyed by query + passage + reranker) live in their own small SQLite file under the
cache dir: losing it costs time, never data, and writing it never waits for the
index writer. Keys are SHA-256 of their parts, so no query text is stored in keys.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterable, Mapping

import apsw

from gnod.store.db import BUSY_TIMEOUT_MS

# Entries older than this are dropped at start (queries and models move on).
MAX_AGE_S = 90 * 24 * 3600


def key(*parts: str) -> str:
    """A stable cache key: parts are length-prefixed, so ("ab", "c") ≠ ("a", "bc")."""
    h = hashlib.sha256()
    for p in parts:
        b = p.encode("utf-8")
        h.update(len(b).to_bytes(8, "big"))
        h.update(b)
    return h.hexdigest()


class LlmCache:
    """Thread-safe (one connection behind a lock); every call is a single indexed statement."""

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._lock = threading.Lock()
        self._conn = apsw.Connection(path)
        self._conn.setbusytimeout(BUSY_TIMEOUT_MS)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS expansions(key TEXT PRIMARY KEY, value BLOB NOT NULL, at INTEGER NOT NULL)"
        )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS rerank(key TEXT PRIMARY KEY, score REAL NOT NULL, at INTEGER NOT NULL)"
        )
        cutoff = int(time.time()) - MAX_AGE_S
        self._conn.execute("DELETE FROM expansions WHERE at < ?", (cutoff,))
        self._conn.execute("DELETE FROM rerank WHERE at < ?", (cutoff,))

    def get_expansion(self, k: str) -> bytes | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM expansions WHERE key = ?", (k,)).fetchone()
        return bytes(row[0]) if row else None

    def put_expansion(self, k: str, value: bytes) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO expansions VALUES (?, ?, ?)", (k, value, int(time.time())))

    def get_scores(self, keys: Iterable[str]) -> dict[str, float]:
        ks = list(dict.fromkeys(keys))
        if not ks:
            return {}
        out: dict[str, float] = {}
        with self._lock:
            for i in range(0, len(ks), 500):
                part = ks[i : i + 500]
                marks = ",".join("?" * len(part))
                for k, score in self._conn.execute(f"SELECT key, score FROM rerank WHERE key IN ({marks})", part):
                    out[k] = score
        return out

    def put_scores(self, scores: Mapping[str, float]) -> None:
        if not scores:
            return
        now = int(time.time())
        with self._lock:
            with self._conn:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO rerank VALUES (?, ?, ?)", [(k, s, now) for k, s in scores.items()]
                )

    def clear(self) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM expansions")
            self._conn.execute("DELETE FROM rerank")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
