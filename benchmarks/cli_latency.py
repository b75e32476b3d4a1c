"""Whole-process `gnoctl search` latency against a running gnod (what an editor pays).

    python benchmarks/cli_latency.py [--corpus DIR] [--runs 40]
    python benchmarks/cli_latency.py --hybrid [--runs 40] [--stage-queries 20]

Indexes the corpus (default: English tldr pages) in a fresh gnod, then runs
`gnoctl search --json` as a new process per query and prints gnoctl_search_p50_ms=,
gnoctl_search_p90_ms= and, for scale on this (noisy, shared) machine, the floors
measured in the same run: python_startup_p50_ms= (`python -c pass`) and
stdlib_client_p50_ms= (a minimal client: stdlib socket + json, one search).
Byte-code is compiled first, as an installed package would have it.

--hybrid indexes SciFact with the MiniLM test embedder (plus the SmolLM2 generator
and the random test reranker) and prints gnoctl_query_p50_ms= / _p90_ms= for
`gnoctl query --no-expand --no-rerank --json` (embedder warm), then runs the full
pipeline (expansion generated, not cached; rerank) over the socket and prints the
mean milliseconds of each stage as stage_<name>_ms= and full_query_p50_ms=.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time

from common import CACHE, SHARED, Daemon, compile_sources, emit, models_config, test_model, tldr_pages
from common import percentile as p
from gnod.paths import Paths

STDLIB_CLIENT = """
import json, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
b = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "search", "params": {"query": sys.argv[2]}, "gno": 1}).encode()
s.sendall(struct.pack(">I", len(b)) + b)
n = struct.unpack(">I", s.recv(4))[0]
d = b""
while len(d) < n:
    d += s.recv(n - len(d))
sys.stdout.write(json.dumps(json.loads(d)["result"], indent=2))
"""

QUERIES = [
    "archive files",
    "list directory contents",
    "git commit",
    "compress",
    "network interface",
    "docker container logs",
    "search text in files",
    "copy files remotely",
    "disk usage",
    "process list",
    "kill process",
    "download file",
    "change permissions",
    "python package",
]


def hybrid(runs: int, stage_queries: int) -> None:
    from quality import corpus_key, load_beir, materialize

    data = os.path.join(SHARED, "scifact")
    corpus, queries, qrels = load_beir(data)
    folder = materialize(corpus_key(data), corpus)
    texts = [queries[q] for q in qrels]
    gnoctl = os.path.join(os.path.dirname(sys.executable), "gnoctl")
    config = models_config(test_model("minilm"), 1, test_model("reranker"), test_model("smollm2"))
    home = os.path.join(CACHE, "homes", f"{os.path.basename(folder)}-minilm")  # shared with quality.py
    # The index is reused; the expansions and rerank scores of an earlier run are not.
    with contextlib.suppress(FileNotFoundError):
        os.remove(Paths(home).llm_cache_file)
    with Daemon(config, home) as d:
        if not any(c["name"] == "beir" for c in d.call("collection.list")["collections"]):
            d.call("collection.add", {"name": "beir", "path": folder, "index": True})
        d.call("embed", {})
        env = {**d.env, "GNO_NO_AUTOSTART": "1"}
        cmd = [gnoctl, "query", "--no-expand", "--no-rerank", "--json"]
        for q in texts[:3]:  # warm the embedder and the page cache
            subprocess.run([*cmd, q], env=env, capture_output=True, check=True)
        wall = []
        for i in range(runs):
            t0 = time.perf_counter()
            out = subprocess.run([*cmd, texts[i % len(texts)]], env=env, capture_output=True)
            wall.append((time.perf_counter() - t0) * 1000)
            if out.returncode != 0:
                raise SystemExit(f"gnoctl failed: {out.stderr.decode()}")
        emit(runs=runs, gnoctl_query_p50_ms=p(wall, 0.5), gnoctl_query_p90_ms=p(wall, 0.9))
        stages: dict[str, list[float]] = {}
        total = []
        client = d.client()
        for q in texts[runs : runs + stage_queries]:
            res = client.call("query", {"query": q, "explain": True})
            total.append(res["took_ms"])
            for st in res["explain"]["stages"]:
                if st["skipped"] is None:
                    stages.setdefault(st["name"], []).append(st["ms"])
        client.close()
        emit(
            full_queries=len(total),
            full_query_p50_ms=p(total, 0.5),
            **{f"stage_{k}_ms": sum(v) / len(v) for k, v in stages.items()},
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", help="folder to index (default: tldr pages/)")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--hybrid", action="store_true", help="gnoctl query on SciFact, and full-pipeline stages")
    ap.add_argument("--stage-queries", type=int, default=20)
    args = ap.parse_args()
    if args.hybrid:
        compile_sources()
        hybrid(args.runs, args.stage_queries)
        return
    corpus = args.corpus or tldr_pages("pages")
    gnoctl = os.path.join(os.path.dirname(sys.executable), "gnoctl")
    compile_sources()
    with Daemon() as d:
        d.call("collection.add", {"name": "bench", "path": corpus, "index": True})
        env = {**d.env, "GNO_NO_AUTOSTART": "1"}
        for q in QUERIES[:3]:  # warm the page cache and the daemon
            subprocess.run([gnoctl, "search", q, "--json"], env=env, capture_output=True, check=True)
        wall, startup, floor = [], [], []
        for i in range(args.runs):
            query = QUERIES[i % len(QUERIES)]
            t0 = time.perf_counter()
            out = subprocess.run([gnoctl, "search", query, "--json"], env=env, capture_output=True)
            wall.append((time.perf_counter() - t0) * 1000)
            if out.returncode != 0:
                raise SystemExit(f"gnoctl failed: {out.stderr.decode()}")
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            startup.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", STDLIB_CLIENT, d.paths.socket_path, query], check=True, capture_output=True
            )
            floor.append((time.perf_counter() - t0) * 1000)
    emit(
        runs=args.runs,
        gnoctl_search_p50_ms=p(wall, 0.5),
        gnoctl_search_p90_ms=p(wall, 0.9),
        python_startup_p50_ms=p(startup, 0.5),
        stdlib_client_p50_ms=p(floor, 0.5),
    )


if __name__ == "__main__":
    main()
