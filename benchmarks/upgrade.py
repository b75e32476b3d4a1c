"""The first start of this gno on an index an older one wrote: searches while it converts.

    python benchmarks/upgrade.py --home DIR          # DIR: a GNO_HOME an older gno indexed
    python benchmarks/upgrade.py --home DIR --copy   # work on a copy, DIR stays as it was

Make DIR with an older checkout, e.g. `scale.py --home DIR` run from a worktree of an
earlier commit. gnod is started on it and a search is sent every 0.1 s until the lexical
index is whole. Prints: start_seconds= (gnod answering `status`: the SQLite migrations
ran before it), first_hits_seconds= (the first search with hits), build_seconds= (until
`status` says the lexical index is ready), searches= / with_hits= / busy= (searches
sent meanwhile, those answered with hits, those refused as BUSY), and the documents the
index held at the first hits beside the total.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from common import Daemon, emit
from gnoctl.client import DaemonError

QUERY = "memory barrier"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", required=True, help="a GNO_HOME written by an older gno")
    ap.add_argument("--copy", action="store_true", help="convert a copy of it")
    ap.add_argument("--query", default=QUERY)
    args = ap.parse_args()
    home = os.path.abspath(args.home)
    if args.copy:
        copy = tempfile.mkdtemp(prefix="gno-upgrade-", dir=os.path.dirname(home))
        shutil.copytree(home, copy, dirs_exist_ok=True)
        home = copy
    try:
        t0 = time.perf_counter()
        with Daemon(home=home) as d:
            emit(start_seconds=time.perf_counter() - t0)
            searches = with_hits = busy = 0
            first: float | None = None
            held_at_first = 0
            while True:
                lexical = d.call("status")["lexical"]
                if lexical["ready"]:
                    break
                searches += 1
                try:
                    hits = d.call("search", {"query": args.query, "limit": 10})["hits"]
                except DaemonError as e:
                    busy += e.name == "BUSY"
                    hits = []
                if hits:
                    with_hits += 1
                    if first is None:
                        first = time.perf_counter() - t0
                        held_at_first = d.call("status")["lexical"]["documents"]
                time.sleep(0.1)
            emit(
                build_seconds=time.perf_counter() - t0,
                first_hits_seconds=first if first is not None else -1.0,
                searches=searches,
                with_hits=with_hits,
                busy=busy,
                documents_at_first_hits=held_at_first,
                documents=lexical["documents"],
            )
    finally:
        if args.copy:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
