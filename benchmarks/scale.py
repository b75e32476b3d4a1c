"""A developer's whole source tree through a real gnod: Debian's Linux source (76k files).

    python benchmarks/scale.py                       # fetches linux-source-6.1 with apt-get download
    python benchmarks/scale.py --tree DIR            # any other tree
    python benchmarks/scale.py --save top10.json     # keep each query's top 10 ...
    python benchmarks/scale.py --compare top10.json  # ... and print overlap@10 against them
    python benchmarks/scale.py --home DIR            # keep the index in DIR; a second run skips the ingest

The tree is prepared once under .bench/kernel: `apt-get download linux-source-6.1`, the
.deb unpacked, its tarball extracted, and the top-level .gitignore cut before its
"# Debian packaging" lines (they ignore everything at the top). Not part of the tests.

Prints: ingest_seconds=, ingest_mb_per_s= (bytes of the indexed files over gnod's own
indexing time), ingest_cpu_seconds= and ingest_cores_busy= (gnod and its children's CPU
during the ingest, and that over its wall time, beside cores=: how near it is to using
the whole machine), ingest_rss_peak_mb= (gnod's own peak resident memory, which the
ingest sets: the lexical index's writer heap is in it), noop_update_seconds= (right
after the ingest, while its last merges and the definitions' parse run in the
background) and noop_update_at_rest_seconds= (once they are over), index_bytes= and
index_over_source= (SQLite plus the lexical index), rss_idle_mb= (gnod at rest after it all: the definitions parsed and
the ingest pool let go) and pss_idle_with_children_mb= (with its search process and any
worker, pages they share counted once), save_to_searchable_p50_ms=
(a new file in the tree → found by search), symbols_wait_seconds= (after the no-op
updates, until the background parse of definitions is done: the searches are timed
after it), symbol_took_ms_p50= and symbol_found_first= (share of SYMBOLS whose first
`search --symbol` hit is the expected file), system_calls= and system_calls_found= (the
tree's C system calls, `SYSCALL_DEFINEn(name, …)` at a line's start, and the share whose
`search --symbol name` lists their file: macro-made definitions the parser must read),
index_cached_share= (the share of the index's bytes in the OS's page cache as the
searches begin: what they find there is not read from the disk), took_ms_p50= /
took_ms_p99= (gnod's own
timing, every query of QUERIES × --rounds) and per kind, the first round's own p50 and
max (the index just written, its pages maybe not in memory yet), hard_took_ms_p50= and
hard_took_ms_max= (HARD × --rounds: words in nearly every file; each query's median on a
`# hard:` line), typing_took_ms_p50= and typing_took_ms_max= (TYPING, the same way:
identifiers being typed, as an editor's picker sends them), glob_took_ms_p50= and
glob_took_ms_max= (GLOBS, the same way: path
filters that no literal start or end narrows), hostile_took_ms_p50= and
hostile_took_ms_max= (HOSTILE, the same way: queries of 32,000 characters),
gnoctl_search_p50_ms= beside
python_startup_p50_ms= (`python -I -S -c pass`, the same loop) and bare_client_p50_ms= (the
same search from a client of a few lines, BARE_CLIENT: what is gnoctl's own is the
difference), with --compare,
overlap_at_10= (mean share of each query's top 10 that the saved run also had), and
calibration_ms= / calibration_end_ms= (one core's CPU time, in this process, to prepare
the tree's first CALIBRATION_BYTES of files as the ingest does, before gnod starts and
after everything: this machine's speed at that minute, so that runs minutes or days
apart can be compared).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

from common import CACHE, Daemon, cached_share, compile_sources, emit, tree_cpu, tree_pss
from common import percentile as pct
from gnod.config import load
from gnod.ingest.prepare import prepare
from gnod.ingest.walk import Filter, walk
from gnod.ingest.workers import POOL_IDLE_S
from gnod.paths import Paths
from gnod.text.analyzer import AnalyzerSet

# (kind, query, filters): identifiers, two- and three-word terms, questions full of common
# words, a stop word alone, phrases, negations, filters.
QUERIES: list[tuple[str, str, dict]] = [
    *(
        ("identifier", q, {})
        for q in (
            "spinlock",
            "kmalloc",
            "copy_from_user",
            "GFP_KERNEL",
            "rcu_read_lock",
            "struct page",
            "mutex_lock",
            "EXPORT_SYMBOL_GPL",
            "task_struct",
            "skb_put",
            "container_of",
            "pci_enable_device",
        )
    ),
    *(
        ("terms", q, {})
        for q in (
            "memory barrier",
            "page fault handler",
            "kmalloc GFP_KERNEL",
            "interrupt controller",
            "device tree binding",
            "scheduler load balancing",
            "file system journal",
            "network driver reset",
            "power management suspend",
        )
    ),
    *(
        ("question", q, {})
        for q in (
            "how to submit a patch",
            "use after free in the network stack",
            "what is the difference between a mutex and a spinlock",
            "how do I write a device tree binding for a new sensor",
            "why is the system slow when swapping",
            "where are the documents about coding style",
            "how does the kernel handle out of memory",
        )
    ),
    *(("stopword", q, {}) for q in ("the", "of", "a")),
    *(("phrase", q, {}) for q in ('"memory barrier"', '"page fault"', '"reference count"', '"dead lock"')),
    *(("negation", q, {}) for q in ("spinlock -raw", "interrupt -gpio", "scheduler -deadline", "usb -gadget")),
    *(
        ("filter", q, f)
        for q, f in (
            ("spinlock", {"filters": {"path": "Documentation/*"}}),
            ("interrupt controller", {"filters": {"path": "*.dts*"}}),
            ("memory barrier", {"filters": {"path": "arch/x86/*"}}),
            ("how to submit a patch", {"filters": {"path": "*.rst"}}),
            ("page fault", {"filters": {"path": "mm/*"}}),
        )
    ),
]
# Queries whose words are in nearly every file of the tree (phrases of common words,
# prefixes that expand to common words, nothing but function words): timed apart from
# QUERIES (the kinds, which the took_ms goals are over), as the worst a user
# meets.
HARD = [
    '"return 0"',
    '"of the"',
    '"if (ret)"',
    "un*",
    "dev*",
    "con*",
    "dev* -net*",
    "the of and to a in is it",
    "static const struct",
    "if else return",
]
# Identifiers being typed, as an editor's picker sends them keystroke after keystroke
# (the last word a prefix): timed apart as HARD is.
TYPING = [
    "of_pr*",
    "usb_su*",
    "spin_lock_ir*",
    "mmc_add*",
    "mutex_lo*",
    "wait_event_in*",
    "dev_err*",
    "list_for_each_en*",
    "pci_en*",
    "kmalloc_ar*",
]
# Path filters of the shapes people type, which no literal start or end narrows to a
# few paths (a folder anywhere, a folder under a pattern, an extension in such folders,
# a word in the path): timed apart as HARD is.
GLOBS: list[tuple[str, str]] = [
    ("page fault", "*/mm/*"),
    ("urb submit", "drivers/*/usb/*"),
    ("endpoint", "*/usb/*.c"),
    ("probe", "drivers/*/*.c"),
    ("how to submit a patch", "Documentation/*.rst"),
    ("spinlock", "*test*"),
]
# Queries as long as a query may be (32,000 characters), of the shapes that once took
# seconds to gigabytes (one word, a name of many words, a phrase of many words, with and
# without --symbol): timed apart as HARD is (`# hostile:` lines show their first letters).
HOSTILE: list[tuple[str, dict]] = [
    ("acgt" * 8000, {}),
    ("acgt" * 8000, {"symbol": True}),
    ("a_" * 16000, {}),
    ("a_" * 16000, {"symbol": True}),
    ('"' + "the " * 7999 + '"', {}),
    (" ".join(f'"page {w}"' for w in ("fault", "cache", "table", "size") * 250), {}),
]
# `search --symbol` names with the file that defines them (the canonical one, not a copy
# under tools/): what symbol_found_first= counts.
SYMBOLS: list[tuple[str, str]] = [
    ("kmalloc", "include/linux/slab.h"),
    ("list_add", "include/linux/list.h"),
    ("task_struct", "include/linux/sched.h"),
    ("spin_lock_irqsave", "include/linux/spinlock.h"),
    ("schedule", "kernel/sched/core.c"),
    ("copy_from_user", "include/linux/uaccess.h"),
]
PACKAGE = "linux-source-6.1"
# A search as the least any Python client pays for it: the interpreter's start-up, the
# request written to gnod's socket as bytes, the reply read and written out whole; no
# module imported but the socket's (bare_client_p50_ms=, beside gnoctl's).
BARE_CLIENT = """
import _socket, sys
s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
s.connect(sys.argv[1])
body = sys.argv[2].encode()
s.sendall(len(body).to_bytes(4, "big") + body)
head = b""
while len(head) < 4:
    head += s.recv(4 - len(head))
size, got = int.from_bytes(head, "big"), []
while size:
    got.append(s.recv(size))
    size -= len(got[-1])
sys.stdout.buffer.write(b"".join(got))
"""
# The files calibration() prepares: the tree's first ones in walk order, this many bytes.
CALIBRATION_BYTES = 8_000_000


def system_calls(tree: str) -> list[tuple[str, str]]:
    """(name, path) of each system call a C file of `tree` defines (`SYSCALL_DEFINE4(openat,`
    and `COMPAT_SYSCALL_DEFINE…` at a line's start), once per file."""
    pattern = re.compile(rb"^(?:COMPAT_)?SYSCALL_DEFINE\d\((\w+)", re.M)
    found: set[tuple[str, str]] = set()
    for folder, _dirs, files in os.walk(tree):
        for name in files:
            if name.endswith(".c"):
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    found.update((m.decode(), os.path.relpath(path, tree)) for m in pattern.findall(f.read()))
    return sorted(found)


def held_tree(home: str | None) -> str | None:
    """The folder a kept home's `tree` collection indexes: a run of another checkout (a
    worktree) on that home writes its fresh notes there, and reads no tree of its own (it
    wrote them into its own, which no collection watched: never searchable)."""
    if home is None:
        return None
    cols = load(Paths(os.path.abspath(home)).config_file).collections
    return next((c.path for c in cols if c.name == "tree"), None)


def kernel_tree() -> str:
    """The unpacked kernel source (prepared once)."""
    base = os.path.join(CACHE, "kernel")
    found = glob.glob(os.path.join(base, "tree", "linux-source-*"))
    if found:
        return found[0]
    os.makedirs(base, exist_ok=True)
    debs = glob.glob(os.path.join(base, f"{PACKAGE}_*.deb"))
    if not debs:
        subprocess.run(["apt-get", "download", PACKAGE], cwd=base, check=True)
        debs = glob.glob(os.path.join(base, f"{PACKAGE}_*.deb"))
    unpacked = os.path.join(base, "deb")
    subprocess.run(["dpkg-deb", "-x", debs[0], unpacked], check=True)
    tarball = glob.glob(os.path.join(unpacked, "usr", "src", "linux-source-*.tar.*"))[0]
    os.makedirs(os.path.join(base, "tree"), exist_ok=True)
    subprocess.run(["tar", "xf", tarball, "-C", os.path.join(base, "tree")], check=True)
    shutil.rmtree(unpacked)
    tree = glob.glob(os.path.join(base, "tree", "linux-source-*"))[0]
    ignore = os.path.join(tree, ".gitignore")
    with open(ignore, encoding="utf-8") as f:
        text = f.read()
    cut = text.find("# Debian packaging")
    if cut >= 0:
        with open(ignore, "w", encoding="utf-8") as f:
            f.write(text[:cut])
    return tree


def calibration(tree: str) -> float:
    """Milliseconds of CPU to prepare the tree's first CALIBRATION_BYTES of files (fresh
    stem caches, as a new ingest has; the median of three rounds): a fixed piece of the
    ingest's own work, which takes longer on a slower minute of a shared machine."""
    files, size = [], 0
    for entry in walk(tree, Filter([], [])):
        with open(entry.abs_path, "rb") as f:
            files.append((entry, f.read()))
        size += entry.size
        if size >= CALIBRATION_BYTES:
            break
    rounds = []
    for _ in range(3):
        analyzers = AnalyzerSet()
        t0 = time.process_time()
        for entry, data in files:
            prepare(entry, data, "", None, analyzers)
        rounds.append((time.process_time() - t0) * 1000)
    return statistics.median(rounds)


def rss_peak(pid: int) -> int | None:
    """A process's peak resident bytes (Linux's VmHWM), None where /proc does not say."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def folder_bytes(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def source_bytes(db_file: str) -> int:
    import apsw

    conn = apsw.Connection(db_file, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("SELECT total(size) FROM documents").fetchone()[0]
    finally:
        conn.close()


def noop_update(d: Daemon) -> float:
    """The median of three updates of the tree, nothing changed since."""
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        d.call("index", {"collection": "tree"})
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def apart(d: Daemon, name: str, queries: list[tuple[str, dict]], rounds: int) -> None:
    """Time `queries` apart from QUERIES: each one's median (and hits) on a `# name:`
    line, `name`_took_ms_p50= and `name`_took_ms_max= over them all."""
    took: dict[str, list[float]] = {}
    hits: dict[str, int] = {}
    for _ in range(rounds):
        for q, extra in queries:
            r = d.call("search", {"query": q, "limit": 10, **extra})
            shown = q if len(q) <= 60 else f"{q[:40]}… ({len(q):,} characters)"
            flags = [
                *(f"--{k} {v}" for k, v in extra.get("filters", {}).items()),
                *(["--symbol"] * extra.get("symbol", 0)),
            ]
            key = " ".join([shown, *flags])
            took.setdefault(key, []).append(r["took_ms"])
            hits[key] = len(r["hits"])
    for key, ts in took.items():
        print(f"# {name}: {statistics.median(ts):7.2f} ms  {key}  ({hits[key]} hits)")
    every = [t for ts in took.values() for t in ts]
    emit(**{f"{name}_took_ms_p50": pct(every, 0.5), f"{name}_took_ms_max": max(every)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", help="folder to index (default: the Debian kernel source, fetched once)")
    ap.add_argument("--rounds", type=int, default=5, help="times each query is sent (took_ms over all)")
    ap.add_argument("--cli-runs", type=int, default=20, help="gnoctl search processes timed")
    ap.add_argument("--home", help="GNO_HOME kept after the run; when it already holds the tree, no ingest")
    ap.add_argument("--save", help="write each query's top 10 paths to this JSON file")
    ap.add_argument("--compare", help="a --save file: print overlap@10 against it")
    args = ap.parse_args()
    tree = os.path.abspath(args.tree or held_tree(args.home) or kernel_tree())
    emit(calibration_ms=calibration(tree))
    with Daemon(home=args.home and os.path.abspath(args.home)) as d:
        stats: dict = {}
        if not any(c["name"] == "tree" for c in d.call("status")["collections"]):
            t0, cpu0 = time.perf_counter(), tree_cpu(d.proc.pid)
            res = d.call("collection.add", {"name": "tree", "path": tree, "index": True})
            wall = time.perf_counter() - t0
            cpu = tree_cpu(d.proc.pid) - cpu0
            stats = res["collections"][0]
        src = source_bytes(d.paths.db_file)
        if stats:
            emit(
                documents=stats["added"],
                errors=stats["errors"],
                ingest_seconds=stats["seconds"],
                ingest_wall_seconds=wall,
                ingest_mb_per_s=src / 1e6 / stats["seconds"],
                ingest_cpu_seconds=cpu,
                ingest_cores_busy=cpu / wall,
                cores=os.cpu_count() or 1,
            )
            peak = rss_peak(d.proc.pid)
            if peak is not None:
                emit(ingest_rss_peak_mb=peak / 1e6)
        emit(source_mb=src / 1e6)
        # The watcher rescans every collection when gnod starts: time updates after it.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(
            f["indexing"] or f["pending"] or not f["watching"] for f in d.call("status")["freshness"]
        ):
            time.sleep(0.1)
        emit(noop_update_seconds=noop_update(d))
        # Definitions are parsed in the background once the text is searchable: the
        # searches below are timed after it, and the index size includes them.
        t0 = time.perf_counter()
        while (sym := d.call("status")["symbols"])["pending"] or sym["parsing"]:
            time.sleep(0.5)
        emit(symbols_wait_seconds=time.perf_counter() - t0, symbols_parsed=sym["parsed"])
        emit(noop_update_at_rest_seconds=noop_update(d))
        at_rest = time.monotonic() + POOL_IDLE_S + 5  # the ingest pool's processes gone by then
        time.sleep(3)
        st = d.call("status")
        index_bytes = folder_bytes(d.paths.data_dir)
        emit(
            index_bytes=index_bytes,
            index_over_source=index_bytes / src,
            lexical_bytes=(st.get("lexical") or {}).get("bytes", 0),
        )

        data = d.paths.data_dir
        cached = cached_share([os.path.join(root, name) for root, _dirs, names in os.walk(data) for name in names])
        if cached is not None:
            emit(index_cached_share=cached)
        top: dict[str, list[str]] = {}
        took: dict[str, list[float]] = {}
        first_round: list[tuple[float, str]] = []
        for round_ in range(args.rounds):
            for kind, q, extra in QUERIES:
                r = d.call("search", {"query": q, "limit": 10, **extra})
                took.setdefault(kind, []).append(r["took_ms"])
                top[f"{q} {json.dumps(extra)}"] = [h["path"] for h in r["hits"]]
                if round_ == 0:
                    first_round.append((r["took_ms"], q))
        every = [t for ts in took.values() for t in ts]
        slowest = max(first_round)
        emit(
            queries=len(QUERIES),
            took_ms_p50=pct(every, 0.5),
            took_ms_p99=pct(every, 0.99),
            took_ms_max_first_round=slowest[0],
            took_ms_p50_first_round=pct([t for t, _ in first_round], 0.5),
            **{f"took_ms_p50_{k}": pct(v, 0.5) for k, v in took.items()},
            **{f"took_ms_max_{k}": max(v) for k, v in took.items()},
        )

        apart(d, "hard", [(q, {}) for q in HARD], args.rounds)
        apart(d, "typing", [(q, {}) for q in TYPING], args.rounds)
        apart(d, "glob", [(q, {"filters": {"path": g}}) for q, g in GLOBS], args.rounds)
        apart(d, "hostile", HOSTILE, args.rounds)

        sym_took, first = [], 0
        for _ in range(args.rounds):
            for name, path in SYMBOLS:
                r = d.call("search", {"query": name, "symbol": True, "limit": 10})
                sym_took.append(r["took_ms"])
                first += bool(r["hits"]) and r["hits"][0]["path"] == path
        print(f"# slowest of the first round: {slowest[1]!r}")
        emit(symbol_took_ms_p50=pct(sym_took, 0.5), symbol_found_first=first / args.rounds / len(SYMBOLS))
        calls = system_calls(tree)
        listed = sum(
            any(h["path"] == path for h in d.call("search", {"query": name, "symbol": True, "limit": 100})["hits"])
            for name, path in calls
        )
        emit(system_calls=len(calls), system_calls_found=listed / max(len(calls), 1))

        saved = []
        sub = os.path.join(tree, "gno-scale-bench")
        os.makedirs(sub, exist_ok=True)
        try:
            for i in range(20):
                word = f"zqxfreshword{os.getpid()}x{i}"
                t0 = time.perf_counter()
                with open(os.path.join(sub, f"note{i}.md"), "w") as f:
                    f.write(f"# Note {i}\n\n{word}\n")
                deadline = t0 + 30
                while not d.call("search", {"query": word, "limit": 1})["hits"]:
                    if time.perf_counter() > deadline:
                        raise SystemExit(f"{word} not searchable after 30 s")
                    time.sleep(0.002)
                saved.append((time.perf_counter() - t0) * 1000)
        finally:
            shutil.rmtree(sub, ignore_errors=True)
        emit(save_to_searchable_p50_ms=pct(saved, 0.5), save_to_searchable_max_ms=max(saved))

        gnoctl = os.path.join(os.path.dirname(sys.executable), "gnoctl")
        compile_sources()
        cli, py, bare = [], [], []
        for i in range(args.cli_runs):
            query = QUERIES[i % len(QUERIES)][1].strip('"')
            t0 = time.perf_counter()
            run = subprocess.run([gnoctl, "search", query, "-n", "10"], env=d.env, stdout=subprocess.DEVNULL)
            cli.append((time.perf_counter() - t0) * 1000)
            if run.returncode not in (0, 1):  # 1: nothing matched (another --tree)
                raise SystemExit(f"gnoctl search failed with status {run.returncode}")
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
            py.append((time.perf_counter() - t0) * 1000)
            request = json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "search", "params": {"query": query, "limit": 10}}
            )
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-I", "-S", "-c", BARE_CLIENT, d.paths.socket_path, request],
                stdout=subprocess.DEVNULL,
                check=True,
            )
            bare.append((time.perf_counter() - t0) * 1000)
        emit(
            gnoctl_search_p50_ms=pct(cli, 0.5),
            python_startup_p50_ms=pct(py, 0.5),
            gnoctl_over_python=pct(cli, 0.5) / pct(py, 0.5),
            bare_client_p50_ms=pct(bare, 0.5),
            bare_client_over_python=pct(bare, 0.5) / pct(py, 0.5),
        )
        time.sleep(max(0.0, at_rest - time.monotonic()))
        emit(
            rss_idle_mb=d.call("status")["rss_bytes"] / 1e6,
            pss_idle_with_children_mb=tree_pss(d.proc.pid) / 1e6,
        )

    emit(calibration_end_ms=calibration(tree))
    if args.save:
        with open(args.save, "w") as f:
            json.dump(top, f, indent=1)
    if args.compare:
        with open(args.compare) as f:
            before = json.load(f)
        shared = [k for k in top if k in before]
        overlaps = [len(set(top[k]) & set(before[k])) / max(1, min(10, len(before[k]))) for k in shared]
        emit(overlap_at_10=statistics.mean(overlaps) if overlaps else 0.0, compared=len(shared))
        for k in shared:
            print(f"# {len(set(top[k]) & set(before[k]))}/10  {k}  now: {top[k][:3]}  before: {before[k][:3]}")


if __name__ == "__main__":
    main()
