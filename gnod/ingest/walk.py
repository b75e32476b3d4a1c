"""Walk a collection root: include/exclude globs, .gitignore files, one stat per file.

The stat (size, mtime_ns, inode) is what lets an unchanged file cost nothing more:
the pipeline compares it with the index before reading a byte.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import NamedTuple

import pathspec

from gnod.config import DEFAULT_EXCLUDE, DEFAULT_EXTENSIONS

_DEFAULT_EXCLUDED_DIRS = frozenset(p.rstrip("/") for p in DEFAULT_EXCLUDE if p.endswith("/"))
# (st_dev, st_ino) of directories that are never content: gnod's own data, state and
# runtime dirs, which may sit inside a collection (GNO_HOME under a notes folder).
_own_dirs: set[tuple[int, int]] = set()


def set_own_dirs(dirs: list[str]) -> None:
    """Register gnod's own directories so no walk ever indexes them."""
    _own_dirs.clear()
    for d in dirs:
        try:
            st = os.stat(d)
        except OSError:
            continue
        _own_dirs.add((st.st_dev, st.st_ino))


def _is_own(entry: os.DirEntry) -> bool:
    if not _own_dirs or not any(ino == entry.inode() for _, ino in _own_dirs):
        return False
    st = entry.stat(follow_symlinks=False)
    return (st.st_dev, st.st_ino) in _own_dirs
_DEFAULT_EXCLUDED_FILES = frozenset(p for p in DEFAULT_EXCLUDE if not p.endswith("/"))


class WalkEntry(NamedTuple):
    rel_path: str  # POSIX-style, relative to the collection root
    abs_path: str
    size: int
    mtime_ns: int
    inode: int


class Filter:
    """Decides what belongs to a collection: include globs (or default extensions),
    exclude globs, default junk directories and, optionally, .gitignore files."""

    def __init__(self, include: list[str], exclude: list[str], gitignore: bool = True) -> None:
        self.include = pathspec.GitIgnoreSpec.from_lines(include) if include else None
        self.exclude = pathspec.GitIgnoreSpec.from_lines(exclude) if exclude else None
        self.gitignore = gitignore

    def wants_dir(self, name: str, rel_dir: str) -> bool:
        if name in _DEFAULT_EXCLUDED_DIRS:
            return False
        return not (self.exclude and self.exclude.match_file(rel_dir + "/"))

    def wants_file(self, name: str, rel_path: str) -> bool:
        if name in _DEFAULT_EXCLUDED_FILES:
            return False
        if self.include is not None:
            if not self.include.match_file(rel_path):
                return False
        elif os.path.splitext(name)[1].lower() not in DEFAULT_EXTENSIONS:
            return False
        return not (self.exclude and self.exclude.match_file(rel_path))


def _load_gitignore(abs_dir: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(os.path.join(abs_dir, ".gitignore"), encoding="utf-8", errors="replace") as f:
            return pathspec.GitIgnoreSpec.from_lines(f.read().splitlines())
    except (FileNotFoundError, NotADirectoryError, PermissionError, IsADirectoryError):
        return None


def _ignored(ignores: list[tuple[str, pathspec.GitIgnoreSpec]], rel: str) -> bool:
    for base, spec in ignores:
        if spec.match_file(rel[len(base):] if base else rel):
            return True
    return False


def _chain(root: str, flt: Filter, rel_dir: str) -> list[tuple[str, pathspec.GitIgnoreSpec]] | None:
    """The .gitignore specs in force inside `rel_dir` (from the root down, exclusive), or
    None when `rel_dir` itself or one of its ancestors is excluded."""
    ignores: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    parts = rel_dir.split("/") if rel_dir else []
    for depth in range(len(parts)):
        here = "/".join(parts[:depth])
        if flt.gitignore:
            spec = _load_gitignore(os.path.join(root, here))
            if spec is not None:
                ignores.append((here + "/" if here else "", spec))
        sub = "/".join(parts[: depth + 1])
        if not flt.wants_dir(parts[depth], sub) or (ignores and _ignored(ignores, sub + "/")):
            return None
    return ignores


def admit(root: str, flt: Filter, rel_path: str) -> WalkEntry | None:
    """The entry for one file if it exists and belongs to the collection (watcher events)."""
    rel_dir, _, name = rel_path.rpartition("/")
    ignores = _chain(root, flt, rel_dir)
    if ignores is None:
        return None
    if flt.gitignore:
        spec = _load_gitignore(os.path.join(root, rel_dir))
        if spec is not None:
            ignores = [*ignores, (rel_dir + "/" if rel_dir else "", spec)]
    if not flt.wants_file(name, rel_path) or (ignores and _ignored(ignores, rel_path)):
        return None
    abs_path = os.path.join(root, rel_path)
    try:
        st = os.stat(abs_path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return WalkEntry(rel_path, abs_path, st.st_size, st.st_mtime_ns, st.st_ino)


def walk(
    root: str, flt: Filter, errors: list[tuple[str, str]] | None = None, start: str = ""
) -> Iterator[WalkEntry]:
    """Yield every file under `root` (or under its subdirectory `start`) that the filter
    admits, depth first, sorted by name.

    Directory symlinks are not followed (no loops); file symlinks are. Unreadable
    directories are reported into `errors` as (rel_path, reason) and skipped.
    """
    ignores0 = _chain(root, flt, start)
    if ignores0 is None:
        return
    stack: list[tuple[str, str, list[tuple[str, pathspec.GitIgnoreSpec]]]] = [
        (os.path.join(root, start) if start else root, start, ignores0)
    ]
    while stack:
        abs_dir, rel_dir, ignores = stack.pop()
        if flt.gitignore:
            spec = _load_gitignore(abs_dir)
            if spec is not None:
                ignores = [*ignores, (rel_dir + "/" if rel_dir else "", spec)]
        try:
            with os.scandir(abs_dir) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            if errors is not None:
                errors.append((rel_dir or ".", f"cannot list directory: {e.strerror or e}"))
            continue
        subdirs = []
        for entry in entries:
            name = entry.name
            rel = f"{rel_dir}/{name}" if rel_dir else name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if flt.wants_dir(name, rel) and not (ignores and _ignored(ignores, rel + "/")) \
                            and not _is_own(entry):
                        subdirs.append((entry.path, rel, ignores))
                    continue
                if not flt.wants_file(name, rel) or (ignores and _ignored(ignores, rel)):
                    continue
                st = entry.stat()
            except OSError:
                continue  # vanished or a dangling symlink
            if not stat.S_ISREG(st.st_mode):
                continue
            yield WalkEntry(rel, entry.path, st.st_size, st.st_mtime_ns, st.st_ino)
        stack.extend(reversed(subdirs))
