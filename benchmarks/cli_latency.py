"""Whole-process `gnoctl search` latency against a running gnod (what an editor pays).

    python benchmarks/cli_latency.py [--corpus DIR] [--runs 40]

Indexes the corpus (default: English tldr pages) in a fresh gnod, then runs
`gnoctl search --json` as a new process per query and prints gnoctl_search_p50_ms=,
gnoctl_search_p90_ms= and, for scale on this (noisy, shared) machine, the floors
measured in the same run: python_startup_p50_ms= (`python -c pass`) and
stdlib_client_p50_ms= (a minimal client: stdlib socket + json, one search).
Byte-code is compiled first, as an installed package would have it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from common import REPO, Daemon, emit, tldr_pages

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

QUERIES = ["archive files", "list directory contents", "git commit", "compress", "network interface",
           "docker container logs", "search text in files", "copy files remotely", "disk usage",
           "process list", "kill process", "download file", "change permissions", "python package"]


def p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", help="folder to index (default: tldr pages/)")
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    corpus = args.corpus or tldr_pages("pages")
    gnoctl = os.path.join(os.path.dirname(sys.executable), "gnoctl")
    subprocess.run([sys.executable, "-m", "compileall", "-q", "gnod", "gnoctl"], cwd=REPO, check=True)
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
            subprocess.run([sys.executable, "-c", STDLIB_CLIENT, d.paths.socket_path, query], check=True,
                           capture_output=True)
            floor.append((time.perf_counter() - t0) * 1000)
    emit(runs=args.runs, gnoctl_search_p50_ms=p(wall, 0.5), gnoctl_search_p90_ms=p(wall, 0.9),
         python_startup_p50_ms=p(startup, 0.5), stdlib_client_p50_ms=p(floor, 0.5))


if __name__ == "__main__":
    main()
