"""gnod's CPU at rest: nothing asked, nothing changing, its collections watched.

    python benchmarks/idle.py [--collections 1,10] [--seconds 30]

For each count N, a fresh gnod watches N small collections (copies of the repository's
docs/), is left to settle (its first index, the ingest pool let go), and its CPU time
and that of its children are read before and after --seconds of rest.
Prints idle_cpu_pct_N= (percent of one core) for each N: an always-on daemon should
cost the same at rest whatever the number of folders it watches.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from common import REPO, Daemon, emit, tree_cpu
from gnod.ingest.workers import POOL_IDLE_S

SETTLE_S = POOL_IDLE_S + 5  # the ingest pool is let go after POOL_IDLE_S without work


def at_rest(count: int, seconds: float) -> float:
    """Percent of a core gnod uses at rest with `count` watched collections."""
    folders = tempfile.mkdtemp(prefix="gnob-idle-", dir="/tmp")
    try:
        with Daemon() as d:
            for i in range(count):
                folder = shutil.copytree(os.path.join(REPO, "docs"), os.path.join(folders, f"c{i}"))
                d.call("collection.add", {"name": f"c{i}", "path": folder})
            time.sleep(SETTLE_S)
            assert d.proc is not None
            before, t0 = tree_cpu(d.proc.pid), time.monotonic()
            time.sleep(seconds)
            return 100 * (tree_cpu(d.proc.pid) - before) / (time.monotonic() - t0)
    finally:
        shutil.rmtree(folders, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--collections", default="1,10", help="comma-separated collection counts")
    ap.add_argument("--seconds", type=float, default=30.0, help="rest measured per count")
    args = ap.parse_args()
    for count in (int(c) for c in args.collections.split(",")):
        emit(**{f"idle_cpu_pct_{count}": at_rest(count, args.seconds)})


if __name__ == "__main__":
    main()
