"""Files asked into the OS's page cache: in order and within a budget; and gnod asks for
its index's files once it starts, so that a restart's first searches do not read them
from the disk one at a time."""

import os
import random
import subprocess

import pytest

from conftest import paths_for, start_gnod, wait_until
from gnod.store import page_cache

MB = 1 << 20
PAGE = 4096


def _write(path: str, size: int) -> str:
    with open(path, "wb") as f:
        f.write(random.Random(path).randbytes(size))
        f.flush()
        os.fsync(f.fileno())
    return path


def _drop(*paths: str) -> None:
    """Have the kernel drop these files' pages; skip where it keeps them (tmpfs)."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        if _held(path):
            pytest.skip(f"the page cache keeps {path} here")


def _held(path: str) -> int:
    """The bytes of the file the page cache holds (util-linux's fincore: a read to find
    out would have the kernel read ahead)."""
    run = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES", path],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(run.stdout)


def _whole(path: str) -> bool:
    return _held(path) >= os.path.getsize(path)


def test_files_are_read_into_the_page_cache_in_order_until_the_budget_is_spent(tmp_path):
    a, b, c = (_write(str(tmp_path / name), 3 * MB) for name in "abc")
    _drop(a, b, c)
    asked = page_cache.ask([str(tmp_path / "gone"), a, b, c], 4 * MB + PAGE)
    assert asked == 4 * MB + PAGE
    assert wait_until(lambda: _whole(a) and _held(b) >= MB + PAGE, 10)
    assert _held(b) < 3 * MB  # not past the budget
    assert _held(c) == 0


def test_gnod_asks_for_its_lexical_index_and_database_once_it_starts(env, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    rng = random.Random(7)
    for n in range(6):  # stored text that no start-up reads: a database of several MB
        words = (f"{rng.getrandbits(64):x}" for _ in range(60_000))
        (root / f"notes-{n}.md").write_text(f"# Notes {n}\n\n" + " ".join(words) + "\n")
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "docs", "path": str(root)})
    finally:
        d.stop()
    paths = paths_for(env)
    lexical = [e.path for e in os.scandir(paths.data_dir) if e.name.startswith("lexical-")]
    files = [paths.db_file, *(e.path for e in os.scandir(lexical[0]) if e.stat().st_size)]
    assert os.path.getsize(paths.db_file) > 3 * MB
    _drop(*files)
    d = start_gnod(env)
    try:
        assert wait_until(lambda: all(_whole(f) for f in files if os.path.exists(f)), 15), [
            f for f in files if os.path.exists(f) and not _whole(f)
        ]
    finally:
        d.stop()
