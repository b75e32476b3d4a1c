"""Ingest throughput through a real gnod: a fresh index of a folder, then a no-op pass.

    python benchmarks/ingest.py                 # English tldr pages (7,4xx files)
    python benchmarks/ingest.py --corpus DIR

Prints docs=, seconds=, docs_per_s= (fresh; the daemon's own timing of the index
run) and noop_seconds= (second pass, nothing changed), plus wall-clock figures.
"""

from __future__ import annotations

import argparse
import time

from common import Daemon, emit, tldr_pages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", help="folder to index (default: tldr pages/, English)")
    ap.add_argument("--noop-runs", type=int, default=5, help="no-op passes; the median is printed")
    args = ap.parse_args()
    corpus = args.corpus or tldr_pages("pages")
    with Daemon() as d:
        t0 = time.perf_counter()
        res = d.call("collection.add", {"name": "bench", "path": corpus, "index": True})
        wall = time.perf_counter() - t0
        s = res["collections"][0]
        docs = s["added"]
        emit(docs=docs, errors=s["errors"], seconds=s["seconds"], docs_per_s=docs / s["seconds"],
             wall_seconds=wall)
        noop = []
        for _ in range(args.noop_runs):
            r = d.call("index", {"collection": "bench"})["collections"][0]
            assert r["added"] == r["updated"] == 0, r
            noop.append(r["seconds"])
        noop.sort()
        emit(noop_seconds=noop[len(noop) // 2], noop_min_seconds=noop[0])


if __name__ == "__main__":
    main()
