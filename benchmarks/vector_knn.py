"""KNN latency, recall and memory of the daemon's vector index on synthetic 384-d chunks.

    python benchmarks/vector_knn.py                       # 10k and 100k
    python benchmarks/vector_knn.py --sizes 1000000 --queries 200 --no-sqlite-vec

The vectors are topics in a low-dimensional space (a 32-d latent mapped to 384-d, with
a little noise), as sentence embeddings are: neighbours mean something. Per size, the
index is built as gnod builds it (rows in a file beside a temp "database", the graph
from VECTOR_ANN_MIN vectors on), checkpointed, dropped and mapped back from the
checkpoint as a restarted gnod maps it; then queries near stored vectors ask for k=60
(what vsearch asks for -n 20). Prints per size: build and graph seconds, checkpoint
and reopen seconds, the share of the float rows in the OS's page cache as the queries
begin (rows_cached_share_<size>=: a machine that gives back pages unread for a minute
has dropped most of them during a long graph build, and a re-scored candidate the cache
lacks is read from the disk), p50/p99 unfiltered and filtered (a third of the chunks
allowed, as a collection filter gives), the unfiltered p50 of other queries once every
row is in the cache (knn_cached_p50_ms_<size>=: the graph's own cost), recall@10
against a float64 brute force, whether every filtered query filled k, the reopened
index's resident memory (anonymous: the graph and ids; file: the pages of float rows
the queries touched), and sqlite-vec's own float KNN for comparison. Names:
knn_p50_ms_<size>=, recall@10_<size>=, resident_anon_mb_<size>=…
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time

import apsw
import numpy as np

from common import cached_bytes, emit  # puts the repo on sys.path
from gnod.store.vector_folder import VectorFolder
from gnod.store.vectors import load_extension

DIM = 384
LATENT = 32
K = 60
STEP = 10_000  # vectors added per call, as gnod adds them when it reads vec0 at start


def embeddings(n: int, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors spanned mostly by a 32-d latent space, plus a little isotropic noise."""
    mix = rng.standard_normal((LATENT, DIM)).astype(np.float32)
    out = np.empty((n, DIM), dtype=np.float32)
    for lo in range(0, n, 100_000):
        m = min(100_000, n - lo)
        x = rng.standard_normal((m, LATENT)).astype(np.float32) @ mix
        x += 0.1 * np.sqrt(LATENT) * rng.standard_normal((m, DIM)).astype(np.float32)
        out[lo : lo + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def near_queries(x: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """Unit queries near stored vectors, as a query near the chunks it is about."""
    near = x[rng.integers(0, len(x), count)] + 0.03 * rng.standard_normal((count, DIM)).astype(np.float32)
    return near / np.linalg.norm(near, axis=1, keepdims=True)


def read_whole(path: str) -> None:
    """Read a file through the page cache, so that it holds it."""
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(1 << 20)
        while f.readinto(buf):
            pass


def pct(xs: list[float], p: float) -> float:
    return round(float(np.percentile(xs, p)) * 1000, 3)


def timed(fn, queries) -> tuple[list[float], list]:
    times, out = [], []
    for q in queries:
        t0 = time.perf_counter()
        out.append(fn(q))
        times.append(time.perf_counter() - t0)
    return times, out


def resident_mb() -> tuple[float, float]:
    """(anonymous, file-backed) resident memory of this process, in MB."""
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value
    return tuple(int(fields[k].split()[0]) / 1024 for k in ("RssAnon", "RssFile"))  # type: ignore[return-value]


def sqlite_vec_p50(x: np.ndarray, queries: np.ndarray) -> float:
    conn = apsw.Connection(":memory:")
    conn.enable_load_extension(True)
    if load_extension(conn):
        return float("nan")
    conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{DIM}] distance_metric=cosine)")
    with conn:
        conn.executemany(
            "INSERT INTO v(rowid, embedding) VALUES (?, ?)", ((i + 1, row.tobytes()) for i, row in enumerate(x))
        )
    sql = "SELECT rowid, distance FROM v WHERE embedding MATCH ? AND k = ?"
    times, _ = timed(lambda q: conn.execute(sql, (q.tobytes(), K)).fetchall(), queries[:20])
    return pct(times, 50)


def measure(n: int, args: argparse.Namespace, rng: np.random.Generator, tmp: str) -> None:
    x = embeddings(n, rng)
    ids = np.arange(1, n + 1, dtype=np.int64)
    folder = VectorFolder(f"{tmp}/vectors-{n}", "file:/bench.gguf", DIM)
    index, _ = folder.open()
    t0 = time.perf_counter()
    for lo in range(0, n, STEP):
        index.add(ids[lo : lo + STEP], x[lo : lo + STEP])
    add_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    if index.wants_ann():
        index.build_ann()
    graph_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    folder.checkpoint(index)
    checkpoint_s = time.perf_counter() - t0
    del index
    gc.collect()
    anon0, file0 = resident_mb()
    t0 = time.perf_counter()
    index, _ = VectorFolder(folder.path, folder.uri, DIM).open()
    reopen_s = time.perf_counter() - t0

    queries, others = (near_queries(x, args.queries, rng) for _ in range(2))
    allowed = ids[::3]
    index.search(queries[0], K)  # warm caches
    rows_file = os.path.join(folder.path, folder.rows_file)
    cached = cached_bytes([rows_file])  # of the rows in use (the file has room for more)
    plain, results = timed(lambda q: index.search(q, K), queries)
    filtered, fresults = timed(lambda q: index.search(q, K, allowed), queries)
    read_whole(rows_file)
    in_cache, _ = timed(lambda q: index.search(q, K), others)
    anon1, file1 = resident_mb()
    recall, full = [], []
    for q, (got, _), (fgot, _) in zip(queries[: args.recall_queries], results, fresults):
        exact = ids[np.argsort(-(x @ q).astype(np.float64), kind="stable")[:10]]
        recall.append(len(set(got[:10].tolist()) & set(exact.tolist())) / 10)
        full.append(len(fgot) == K and bool(np.all((fgot - 1) % 3 == 0)))
    sv = float("nan") if args.no_sqlite_vec else sqlite_vec_p50(x, queries)
    emit(
        **{
            f"add_s_{n}": round(add_s, 2),
            f"graph_build_s_{n}": round(graph_s, 2),
            f"graph_{n}": index.has_ann,
            f"checkpoint_s_{n}": round(checkpoint_s, 2),
            f"reopen_s_{n}": round(reopen_s, 3),
            f"rows_cached_share_{n}": round(cached[0] / (n * 4 * DIM), 3) if cached else float("nan"),
            f"knn_p50_ms_{n}": pct(plain, 50),
            f"knn_p99_ms_{n}": pct(plain, 99),
            f"knn_cached_p50_ms_{n}": pct(in_cache, 50),
            f"knn_filtered_p50_ms_{n}": pct(filtered, 50),
            f"knn_filtered_p99_ms_{n}": pct(filtered, 99),
            f"filtered_full_k_{n}": all(full),
            f"recall@10_{n}": round(float(np.mean(recall)), 4),
            f"resident_anon_mb_{n}": round(anon1 - anon0, 1),
            f"resident_file_mb_{n}": round(file1 - file0, 1),
            f"sqlite_vec_p50_ms_{n}": sv,
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--recall-queries", type=int, default=100, help="queries checked against a brute force")
    ap.add_argument("--no-sqlite-vec", action="store_true", help="skip the sqlite-vec comparison")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="gno-knn-") as tmp:
        for n in args.sizes:
            measure(n, args, rng, tmp)


if __name__ == "__main__":
    main()
