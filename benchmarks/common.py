"""Shared benchmark plumbing: a throwaway gnod under a temp GNO_HOME, data extraction."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from gnod.paths import Paths  # noqa: E402
from gnoctl.client import Client, is_running  # noqa: E402

SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
CACHE = os.path.join(REPO, ".bench")


class Daemon:
    """A real gnod subprocess with its own GNO_HOME; stopped and removed on exit."""

    def __init__(self, config: str | None = None) -> None:
        self.home = tempfile.mkdtemp(prefix="gnob-", dir="/tmp")
        self.env = {**os.environ, "GNO_HOME": self.home}
        self.paths = Paths(self.home)
        self.proc: subprocess.Popen | None = None
        if config:
            os.makedirs(self.paths.config_dir, exist_ok=True)
            with open(self.paths.config_file, "w") as f:
                f.write(config)

    def __enter__(self) -> Daemon:
        self.proc = subprocess.Popen([sys.executable, "-m", "gnod.server.main", "--quiet"], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
            shutil.rmtree(self.home, ignore_errors=True)


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
    """A model URI: minilm or e5 (the real test models testmodels/ builds), else as given."""
    if name in ("minilm", "e5"):
        from testmodels.build import e5_gguf, minilm_gguf

        return f"file:{(minilm_gguf if name == 'minilm' else e5_gguf)()}"
    return name


def models_config(embed_uri: str, threads: int = 1) -> str:
    return f'[models]\nembed = "{embed_uri}"\nthreads = {threads}\n'


def emit(**figures) -> None:
    for k, v in figures.items():
        print(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}", flush=True)
