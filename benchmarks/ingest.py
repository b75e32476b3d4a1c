"""Ingest throughput through a real gnod: a fresh index of a folder, then a no-op pass.

    python benchmarks/ingest.py                 # English tldr pages (7,4xx files)
    python benchmarks/ingest.py --corpus DIR

Prints docs=, seconds=, docs_per_s= (fresh index: the daemon's own timing, median of
--runs, each into a new collection; first_run_seconds= includes starting the worker
process) and noop_seconds= (median pass with nothing changed), plus wall-clock figures.
"""

from __future__ import annotations

import argparse
import time

from common import Daemon, emit, tldr_pages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", help="folder to index (default: tldr pages/, English)")
    ap.add_argument(
        "--runs",
        type=int,
        default=5,
        help="fresh index runs (a new collection each) and no-op passes; medians are printed",
    )
    args = ap.parse_args()
    corpus = args.corpus or tldr_pages("pages")
    with Daemon() as d:
        fresh, walls = [], []
        for i in range(args.runs):
            name = f"bench{i}"
            t0 = time.perf_counter()
            res = d.call("collection.add", {"name": name, "path": corpus, "index": True})
            walls.append(time.perf_counter() - t0)
            s = res["collections"][0]
            fresh.append(s["seconds"])
            docs, errors = s["added"], s["errors"]
            if i < args.runs - 1:
                d.call("collection.remove", {"name": name})
        med = sorted(fresh)[len(fresh) // 2]
        emit(
            docs=docs,
            errors=errors,
            seconds=med,
            docs_per_s=docs / med,
            first_run_seconds=fresh[0],
            min_seconds=min(fresh),
            wall_seconds=sorted(walls)[len(walls) // 2],
        )
        noop = []
        for _ in range(args.runs):
            r = d.call("index", {"collection": name})["collections"][0]
            assert r["added"] == r["updated"] == 0, r
            noop.append(r["seconds"])
        noop.sort()
        emit(noop_seconds=noop[len(noop) // 2], noop_min_seconds=noop[0])


if __name__ == "__main__":
    main()
