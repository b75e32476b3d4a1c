"""KNN latency of the daemon's vector index on synthetic clustered 384-d chunks.

    python benchmarks/vector_knn.py                # 10k and 100k
    python benchmarks/vector_knn.py --sizes 100000 300000 --queries 200

Per size: unfiltered and filtered (a third of the chunks allowed, as a collection
filter gives) p50/p99 for k=60 (what vsearch asks for -n 20), recall@20 against a
float64 brute force, and sqlite-vec's own float KNN on the same vectors for
comparison. Prints knn_p50_ms_<size>=, knn_p99_ms_<size>=, knn_filtered_p50_ms_<size>=,
recall@20=, sqlite_vec_p50_ms_<size>=.
"""

from __future__ import annotations

import argparse
import time

import apsw
import numpy as np

from common import emit  # puts the repo on sys.path
from gnod.search.vector_index import VectorIndex
from gnod.store.vectors import load_extension

DIM = 384
K = 60


def clustered(n: int, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors around 1,000 topics: neighbours exist, as with real embeddings."""
    centers = rng.standard_normal((1000, DIM)).astype(np.float32)
    x = centers[rng.integers(0, 1000, n)] + 0.8 * rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def pct(xs: list[float], p: float) -> float:
    return round(float(np.percentile(xs, p)) * 1000, 3)


def timed(fn, queries) -> tuple[list[float], list]:
    times, out = [], []
    for q in queries:
        t0 = time.perf_counter()
        out.append(fn(q))
        times.append(time.perf_counter() - t0)
    return times, out


def sqlite_vec_p50(x: np.ndarray, queries: np.ndarray) -> float:
    conn = apsw.Connection(":memory:")
    conn.enable_load_extension(True)
    if load_extension(conn):
        return float("nan")
    conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{DIM}] distance_metric=cosine)")
    with conn:
        conn.executemany("INSERT INTO v(rowid, embedding) VALUES (?, ?)",
                         ((i + 1, row.tobytes()) for i, row in enumerate(x)))
    sql = "SELECT rowid, distance FROM v WHERE embedding MATCH ? AND k = ?"
    times, _ = timed(lambda q: conn.execute(sql, (q.tobytes(), K)).fetchall(), queries[:20])
    return pct(times, 50)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--no-sqlite-vec", action="store_true", help="skip the sqlite-vec comparison")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    for n in args.sizes:
        x = clustered(n, rng)
        ids = np.arange(1, n + 1, dtype=np.int64)
        index = VectorIndex(DIM)
        t0 = time.perf_counter()
        index.add(ids, x)
        load_s = time.perf_counter() - t0
        near = x[rng.integers(0, n, args.queries)] + 0.3 * rng.standard_normal((args.queries, DIM)).astype(np.float32)
        queries = near / np.linalg.norm(near, axis=1, keepdims=True)
        allowed = ids[::3]
        index.search(queries[0], K)  # warm caches
        plain, results = timed(lambda q: index.search(q, K), queries)
        filtered, fresults = timed(lambda q: index.search(q, K, allowed), queries)
        x64 = x.astype(np.float64)
        recall, full = [], []
        for q, (got, _), (fgot, _) in zip(queries, results, fresults):
            exact = ids[np.argsort(-(x64 @ q), kind="stable")[:20]]
            recall.append(len(set(got[:20].tolist()) & set(exact.tolist())) / 20)
            full.append(len(fgot) == K and bool(np.all((fgot - 1) % 3 == 0)))
        sv = float("nan") if args.no_sqlite_vec else sqlite_vec_p50(x, queries)
        emit(**{f"knn_p50_ms_{n}": pct(plain, 50), f"knn_p99_ms_{n}": pct(plain, 99),
                f"knn_filtered_p50_ms_{n}": pct(filtered, 50), f"knn_filtered_p99_ms_{n}": pct(filtered, 99),
                f"filtered_full_k_{n}": all(full), f"recall@20_{n}": round(float(np.mean(recall)), 4),
                f"index_load_s_{n}": round(load_s, 3), f"sqlite_vec_p50_ms_{n}": sv})
        if n == max(args.sizes):
            emit(**{"recall@20": round(float(np.mean(recall)), 4)})


if __name__ == "__main__":
    main()
