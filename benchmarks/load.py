"""Under load: many clients searching one gnod while a collection is added and files are edited.

    python benchmarks/load.py [--clients 50] [--searches 200] [--edits-per-s 20]

gnod first indexes all tldr pages (every language, ~38k files; kept between runs in
.bench/load-home). Then, at once:
- --clients threads each send --searches searches back to back over their own
  connection: two to four words from tldr's own vocabulary or a question, limit 5, 10 or
  20, one in five filtered by collection;
- a second collection of 5,000 generated files is added;
- files of the tldr copy are edited at --edits-per-s (a fixed rate, whether or not the
  earlier edits are searchable yet), and the time until gnod announces each change to
  a `watch` subscriber (after its commit: a search then finds it) is measured;
- `status` is sampled every 100 ms, and one more client sends one search a second.
The clients are threads of this process, each with its own socket; their own work is
small beside gnod's, but it shares the two cores.

Prints searches_per_s=, search_p50_ms= / search_p90_ms= / search_p99_ms= (round trip),
status_p50_ms= / status_p99_ms=, probe_p50_ms= / probe_p99_ms= (the one-a-second client),
edit_to_searchable_p50_ms= and _max_ms= (with the wait of an edit still unseen at the
end), edits=, edits_unfinished=, errors=, errors_<NAME>= per error, rss_mb= (gnod, at the
end), gnod_cpu_ms_per_search= and switches_per_search= (gnod's CPU time and its threads'
context switches over the run, its child processes' included, per search).
`--generated 0 --edits-per-s 0`: searches only.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tarfile
import threading
import time
from collections import Counter

from common import CACHE, SHARED, Daemon, emit
from gnoctl.client import DaemonError

QUESTIONS = [
    "how do I list files sorted by size",
    "how to compress a folder into an archive",
    "what is the command to show open ports",
    "how can I change the owner of a file",
    "how do I find text inside files recursively",
    "how to download a file from a url",
]


def all_tldr_pages() -> str:
    """Every language's pages from the shared tarball, extracted once."""
    dest = os.path.join(CACHE, "tldr-all")
    if not os.path.isdir(dest):
        os.makedirs(dest + ".tmp", exist_ok=True)
        with tarfile.open(os.path.join(SHARED, "tldr-pages.tar.gz")) as tar:
            tar.extractall(
                dest + ".tmp", members=[m for m in tar.getmembers() if m.name.startswith("tldr/pages")], filter="data"
            )
        os.rename(dest + ".tmp", dest)
    return os.path.join(dest, "tldr")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * len(s)))], 2) if s else float("nan")


def cpu_and_switches(pid: int) -> tuple[float, int]:
    """(CPU seconds, context switches of all its threads so far) of process `pid` and of
    its child processes (the search process, ingest workers) (Linux /proc)."""
    cpu, switches = 0.0, 0
    for p in [str(pid), *children(pid)]:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/status") as f:
                    switches += sum(int(line.split()[1]) for line in f if "ctxt_switches" in line)
        except OSError:  # it (or a thread) ended meanwhile
            pass
    return cpu, switches


def children(pid: int) -> list[str]:
    out = []
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/stat") as f:
                if p.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(p)
        except (OSError, ValueError):
            pass
    return out


def vocabulary(root: str) -> list[str]:
    """Command names of the English pages: words that the pages hold."""
    names = [os.path.splitext(n)[0] for n in os.listdir(os.path.join(root, "pages", "common"))]
    return [n for n in names if n.isalpha()][:2000] or ["tar", "git", "ls"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--searches", type=int, default=200, help="per client")
    ap.add_argument("--edits-per-s", type=float, default=20.0)
    ap.add_argument("--generated", type=int, default=5000, help="files in the collection added under load")
    args = ap.parse_args()
    rng = random.Random(5)
    home = os.path.join(CACHE, "load-home")
    work = os.path.join(CACHE, "load-work")
    tldr = os.path.join(work, "tldr")
    if not os.path.isdir(tldr):
        shutil.copytree(all_tldr_pages(), tldr)
    words = vocabulary(tldr)
    generated = os.path.join(work, "generated")
    shutil.rmtree(generated, ignore_errors=True)
    os.makedirs(generated)
    for i in range(args.generated):
        with open(os.path.join(generated, f"g{i:05d}.md"), "w") as f:
            f.write(f"# Generated {i}\n\n" + " ".join(rng.choice(words) for _ in range(120)) + "\n")
    # Pages gno indexes by default (a name like "..md" is a hidden file, never indexed).
    edited = sorted(
        os.path.join(dp, n)
        for dp, _, ns in os.walk(os.path.join(tldr, "pages", "common"))
        for n in ns
        if n[0].isalnum()
    )[:500]

    with Daemon(home=home) as d:
        collections = {c["name"] for c in d.call("status")["collections"]}
        if "tldr" not in collections:
            d.call("collection.add", {"name": "tldr", "path": tldr, "index": True})
        if "generated" in collections:
            d.call("collection.remove", {"name": "generated"})
        stop = threading.Event()
        lock = threading.Lock()
        search_ms: list[float] = []
        status_ms: list[float] = []
        probe_ms: list[float] = []
        edit_ms: list[float] = []
        errors: Counter[str] = Counter()

        def timed(client, method: str, params: dict, into: list[float]) -> None:
            t0 = time.perf_counter()
            try:
                client.call(method, params)
            except DaemonError as e:
                with lock:
                    errors[e.name] += 1
                return
            with lock:
                into.append((time.perf_counter() - t0) * 1000)

        def searcher(seed: int) -> None:
            r = random.Random(seed)
            c = d.client()
            for _ in range(args.searches):
                q = r.choice(QUESTIONS) if r.random() < 0.3 else " ".join(r.sample(words, r.randint(2, 4)))
                params: dict = {"query": q, "limit": r.choice((5, 10, 20))}
                if r.random() < 0.2:
                    params["collections"] = ["tldr"]
                timed(c, "search", params, search_ms)
            c.close()

        def sampler(method: str, every: float, params: dict, into: list[float]) -> None:
            c = d.client()
            while not stop.wait(every):
                timed(c, method, params, into)
            c.close()

        written: dict[str, float] = {}  # edited file → when, while its change is not announced

        def editor() -> None:
            """Edits at a fixed rate, whether or not the earlier ones are searchable yet."""
            i = 0
            while not stop.is_set():
                t0 = time.perf_counter()
                path = edited[i % len(edited)]
                with open(path, "a") as f:
                    f.write(f"\nzqloadedit{os.getpid()}x{i}\n")
                with lock:
                    written.setdefault(path, t0)
                i += 1
                stop.wait(max(0.0, 1 / args.edits_per_s - (time.perf_counter() - t0)))

        def checker() -> None:
            """Times each edit until gnod announces it (`watch`): a change is announced once
            it is committed, so a search made then finds it. Searching for each edit's word
            instead timed this client's own wait among the 50 (~0.1 s a search) as well."""
            for change in d.client().watch("tldr"):
                now = time.perf_counter()
                with lock:
                    t0 = written.pop(getattr(change, "abs_path", None) or "", None)
                    if t0 is not None:
                        edit_ms.append((now - t0) * 1000)

        def adder() -> None:
            c = d.client()
            try:
                c.call("collection.add", {"name": "generated", "path": generated, "index": True})
            except DaemonError as e:
                with lock:
                    errors[e.name] += 1
            c.close()

        background = [
            threading.Thread(target=sampler, args=("status", 0.1, {}, status_ms)),
            threading.Thread(target=sampler, args=("search", 1.0, {"query": "extract archive"}, probe_ms)),
        ]
        if args.edits_per_s > 0:
            background.append(threading.Thread(target=editor))
            # Ends with gnod (its subscription does): not joined.
            threading.Thread(target=checker, daemon=True).start()
        if args.generated > 0:
            background.append(threading.Thread(target=adder))
        clients = [threading.Thread(target=searcher, args=(i,)) for i in range(args.clients)]
        pid = d.call("status")["pid"]
        cpu0, switches0 = cpu_and_switches(pid)
        t0 = time.perf_counter()
        for t in background + clients:
            t.start()
        for t in clients:
            t.join()
        took = time.perf_counter() - t0
        cpu1, switches1 = cpu_and_switches(pid)
        stop.set()
        for t in background:
            t.join()
        with lock:
            unfinished = [(time.perf_counter() - t0) * 1000 for t0 in written.values()]
        rss = d.call("status").get("rss_bytes") or 0
        emit(
            searches_per_s=round(len(search_ms) / took, 1),
            search_p50_ms=pct(search_ms, 0.5),
            search_p90_ms=pct(search_ms, 0.9),
            search_p99_ms=pct(search_ms, 0.99),
            status_p50_ms=pct(status_ms, 0.5),
            status_p99_ms=pct(status_ms, 0.99),
            probe_p50_ms=pct(probe_ms, 0.5),
            probe_p99_ms=pct(probe_ms, 0.99),
            edit_to_searchable_p50_ms=round(statistics.median(edit_ms), 1) if edit_ms else float("nan"),
            edit_to_searchable_max_ms=round(max(edit_ms + unfinished, default=float("nan")), 1),
            edits=len(edit_ms),
            edits_unfinished=len(unfinished),
            errors=sum(errors.values()),
            rss_mb=round(rss / 1e6),
            gnod_cpu_ms_per_search=round((cpu1 - cpu0) * 1000 / max(1, len(search_ms)), 2),
            switches_per_search=round((switches1 - switches0) / max(1, len(search_ms)), 1),
            **{f"errors_{name}": n for name, n in sorted(errors.items())},
        )


if __name__ == "__main__":
    main()
