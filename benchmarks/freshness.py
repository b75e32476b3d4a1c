"""Save-to-searchable latency with gnod watching a folder (no command run by the user).

    python benchmarks/freshness.py [--corpus DIR] [--edits 60]

Copies the corpus (default: English tldr pages) to a temp folder, adds it as a
collection, then performs edits of four kinds (new file, modify, rename, delete),
each carrying a unique word, and polls `search` until the change is visible.
Prints save_to_searchable_p50_ms=, save_to_searchable_p95_ms= (and per kind), then
burst_5000_seconds= for 5,000 new files appearing at once until all are listed, then
busy_file_cpu_share= (gnod's CPU seconds per second while a 5 MB file takes a line a
second for --busy-seconds, as a log being written does) and busy_file_last_line_ms=
(from its last line to that line searchable).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from common import Daemon, emit, tldr_pages, tree_cpu
from common import percentile as p

POLL_S = 0.005
TIMEOUT_S = 30.0


def visible(client, word: str, present: bool) -> float:
    """Seconds until a search for `word` finds (or no longer finds) a document."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < TIMEOUT_S:
        hits = client.call("search", {"query": word, "limit": 1, "snippets": False})["hits"]
        if bool(hits) == present:
            return time.perf_counter() - t0
        time.sleep(POLL_S)
    raise SystemExit(f"change for {word!r} not visible after {TIMEOUT_S}s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", help="folder to copy and watch (default: tldr pages/)")
    ap.add_argument("--edits", type=int, default=60, help="edits to time (≥ 50 for the report)")
    ap.add_argument("--burst", type=int, default=5000)
    ap.add_argument("--busy-seconds", type=int, default=20, help="how long the big file takes a line a second")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gno-fresh-", dir="/tmp")
    root = os.path.join(work, "corpus")
    shutil.copytree(args.corpus or tldr_pages("pages"), root)
    try:
        with Daemon() as d:
            d.call("collection.add", {"name": "fresh", "path": root, "index": True})
            client = d.client()
            kinds = ["new", "modify", "rename", "delete"]
            lat: dict[str, list[float]] = {k: [] for k in kinds}
            live: list[tuple[str, str]] = []  # (path, word) of files we created
            for i in range(args.edits):
                kind = kinds[i % 4] if live or i % 4 == 0 else "new"
                word = f"freshword{i}x"
                if kind == "new" or not live:
                    path = os.path.join(root, "bench", f"n{i}.md")
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "w") as f:
                        f.write(f"# Note {i}\n\nThe {word} appears here.\n")
                    live.append((path, word))
                    lat["new"].append(visible(client, word, True))
                elif kind == "modify":
                    path, old = live.pop(0)
                    with open(path, "w") as f:
                        f.write(f"# Note {i}\n\nNow it says {word}.\n")
                    live.append((path, word))
                    lat["modify"].append(visible(client, word, True))
                elif kind == "rename":
                    path, old = live.pop(0)
                    new_path = path[:-3] + "-renamed.md"
                    os.replace(path, new_path)
                    live.append((new_path, old))
                    t = visible(client, old, True)  # still findable, under the new name
                    t0 = time.perf_counter()
                    while time.perf_counter() - t0 < TIMEOUT_S:
                        hits = client.call("search", {"query": old, "limit": 5, "snippets": False})["hits"]
                        if [h["path"] for h in hits] == [os.path.relpath(new_path, root)]:
                            break
                        time.sleep(POLL_S)
                    lat["rename"].append(t + time.perf_counter() - t0)
                else:
                    path, old = live.pop(0)
                    os.unlink(path)
                    lat["delete"].append(visible(client, old, False))
            every = [x for k in kinds for x in lat[k]]
            emit(
                edits=len(every),
                save_to_searchable_p50_ms=p(every, 0.5) * 1000,
                save_to_searchable_p95_ms=p(every, 0.95) * 1000,
                **{f"{k}_p50_ms": p(lat[k], 0.5) * 1000 for k in kinds if lat[k]},
            )

            burst = os.path.join(root, "burst")
            os.makedirs(burst)
            t0 = time.perf_counter()
            for i in range(args.burst):
                with open(os.path.join(burst, f"b{i:05d}.md"), "w") as f:
                    f.write(f"# Burst {i}\n\nburst file number {i}\n")
            written = time.perf_counter() - t0
            while time.perf_counter() - t0 < 120:
                if d.call("ls", {"collection": "fresh", "prefix": "burst/", "limit": 1})["total"] == args.burst:
                    break
                time.sleep(0.02)
            emit(burst_files=args.burst, burst_write_seconds=written, burst_5000_seconds=time.perf_counter() - t0)

            busy = os.path.join(root, "busy", "app.js")
            os.makedirs(os.path.dirname(busy))
            with open(busy, "w") as f:
                f.writelines(
                    f"var handler_{i} = function(e) {{ return dispatch_{i % 97}(e); }};\n" for i in range(90_000)
                )
            visible(client, "handler_89999", True)
            cpu0, t0 = tree_cpu(d.proc.pid), time.perf_counter()
            for i in range(args.busy_seconds):
                time.sleep(max(0.0, t0 + i - time.perf_counter()))
                with open(busy, "a") as f:
                    f.write(f"var busyline{i}x = {i};\n")
            last = visible(client, f"busyline{args.busy_seconds - 1}x", True)
            share = (tree_cpu(d.proc.pid) - cpu0) / (time.perf_counter() - t0)
            emit(busy_file_cpu_share=share, busy_file_last_line_ms=last * 1000)
            client.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
