"""Shared benchmark plumbing: a throwaway gnod under a temp GNO_HOME, data extraction."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from gnoctl.client import Client, is_running  # noqa: E402
from gnod.paths import Paths  # noqa: E402

SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
CACHE = os.path.join(REPO, ".bench")


def compile_sources() -> None:
    """Byte-compile gnod and gnoctl as an install does: a stale .pyc under
    PYTHONDONTWRITEBYTECODE would be recompiled by every gnoctl process timed."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "gnod", "gnoctl"], cwd=REPO, check=True)


class Daemon:
    """A real gnod subprocess with its own GNO_HOME; stopped and removed on exit."""

    def __init__(self, config: str | None = None, home: str | None = None) -> None:
        """`home`: a GNO_HOME kept after exit (index and vectors reused by the next run)."""
        self.keep = home is not None
        self.home = home or tempfile.mkdtemp(prefix="gnob-", dir="/tmp")
        os.makedirs(self.home, exist_ok=True)
        self.env = {**os.environ, "GNO_HOME": self.home}
        self.paths = Paths(self.home)
        self.proc: subprocess.Popen | None = None
        if config:
            os.makedirs(self.paths.config_dir, exist_ok=True)
            if self.keep and os.path.exists(self.paths.config_file):
                config = _keep_collections(self.paths.config_file, config)
            with open(self.paths.config_file, "w") as f:
                f.write(config)

    def __enter__(self) -> Daemon:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gnod.server.main", "--quiet"],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while not is_running(self.paths):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"gnod did not start: {self.proc.stderr.read().decode()}")
            time.sleep(0.02)
        return self

    def client(self) -> Client:
        return Client(self.paths, autostart=False)

    def call(self, method: str, params: dict | None = None) -> dict:
        c = self.client()
        try:
            return c.call(method, params)
        finally:
            c.close()

    def __exit__(self, *exc) -> None:
        try:
            if self.proc and self.proc.poll() is None:
                self.call("shutdown")
                self.proc.wait(timeout=30)
        finally:
            if self.proc and self.proc.poll() is None:
                self.proc.kill()
            if not self.keep:
                shutil.rmtree(self.home, ignore_errors=True)


def _keep_collections(path: str, config: str) -> str:
    """`config`'s sections, plus the collections a kept home already has (else gnod drops them)."""
    import tomllib

    import tomli_w

    with open(path, "rb") as f:
        old = tomllib.load(f)
    new = tomllib.loads(config)
    if "collections" in old:
        new["collections"] = old["collections"]
    return tomli_w.dumps(new)


def tldr_pages(folder: str = "pages") -> str:
    """Extract `tldr/<folder>` from the shared tarball once; return its path."""
    dest = os.path.join(CACHE, "tldr")
    target = os.path.join(dest, "tldr", folder)
    if not os.path.isdir(target):
        os.makedirs(dest, exist_ok=True)
        with tarfile.open(os.path.join(SHARED, "tldr-pages.tar.gz")) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(f"tldr/{folder}/")]
            tar.extractall(dest, members=members, filter="data")
    return target


def test_model(name: str) -> str:
    """A model URI: minilm or e5 (the real test models testmodels/ builds), a preset model's
    random-weight twin by its file name (testmodels/twins.py; see benchmarks/presets.py),
    else as given."""
    from testmodels import build, twins

    builders = {
        "minilm": build.minilm_gguf,
        "e5": build.e5_gguf,
        "reranker": build.reranker_gguf,
        "smollm2": build.smollm2_gguf,
    }
    if name in builders:
        return f"file:{builders[name]()}"
    if name in twins.TWINS:
        return f"file:{build.twin_gguf(name, directory=twin_cache())}"
    return name


def twin_cache() -> Path:
    """Full-size twins: hundreds of MB each, kept out of the test models' cache."""
    return Path(os.environ.get("GNO_PRESETBENCH_DIR") or Path.home() / ".cache" / "gno-presetbench")


def models_config(
    embed_uri: str, threads: int = 1, rerank_uri: str | None = None, generate_uri: str | None = None
) -> str:
    lines = ["[models]", f'embed = "{embed_uri}"', f"threads = {threads}"]
    lines += [f'rerank = "{rerank_uri}"'] if rerank_uri else []
    lines += [f'generate = "{generate_uri}"'] if generate_uri else []
    return "\n".join(lines) + "\n"


def _family(pid: int) -> list:
    """A process and its living children (gnod's search process, any ingest worker)."""
    import psutil

    proc = psutil.Process(pid)
    return [proc, *proc.children(recursive=True)]


def tree_cpu(pid: int) -> float:
    """CPU seconds (user and system) a process and its living children have used so far."""
    import psutil

    total = 0.0
    for p in _family(pid):
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:  # exited since it was listed
            continue
        total += t.user + t.system
    return total


def tree_pss(pid: int) -> int:
    """Proportional resident bytes of a process and its children: a page that several of
    them map (the index's files) counts once."""
    return sum(p.memory_full_info().pss for p in _family(pid))


def cached_bytes(files: list[str]) -> tuple[int, int] | None:
    """How many of these files' bytes the OS holds in its page cache, and their size
    (util-linux's fincore); None where it cannot say. A search reads an index's pages
    from there or from the disk: on a machine that gives the cache back to its host
    (pages unread for a minute here), the first run of a query whose pages were not
    there took up to 23 times as long."""
    if not files or shutil.which("fincore") is None:
        return None
    run = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES,SIZE", *files],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        return None
    rows = [[int(n) for n in line.split()] for line in run.stdout.splitlines()]
    return sum(held for held, _size in rows), sum(size for _held, size in rows)


def cached_share(files: list[str]) -> float | None:
    """The share of these files' bytes in the page cache (cached_bytes)."""
    found = cached_bytes(files)
    return found[0] / found[1] if found is not None and found[1] else None


def percentile(values: list[float], q: float) -> float:
    """The value at quantile `q` of `values` (nearest rank, no interpolation)."""
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))]


def emit(**figures) -> None:
    for k, v in figures.items():
        print(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}", flush=True)
