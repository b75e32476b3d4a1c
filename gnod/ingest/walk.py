"""Walk a collection root: include/exclude globs, .gitignore files, one stat per file.

The stat (size, mtime_ns, inode) is what lets an unchanged file cost nothing more:
the pipeline compares it with the index before reading a byte.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import NamedTuple

import msgspec
import pathspec

from gnod.config import (
    CONTAINER_SUFFIXES,
    DEFAULT_EXCLUDE,
    INDEXED_BY_DEFAULT,
    OUTPUT_DIRS,
    CollectionConfig,
    extension,
    uncompressed,
)
from gnod.ingest import git_excludes, obsidian

_NAME = attrgetter("name")
_DEFAULT_EXCLUDED_DIRS = frozenset(p.rstrip("/") for p in DEFAULT_EXCLUDE if p.endswith("/"))
# (st_dev, st_ino) of directories that are never content: gnod's own data, state and
# runtime dirs, which may sit inside a collection (GNO_HOME under a notes folder).
_own_dirs: set[tuple[int, int]] = set()


def set_own_dirs(dirs: list[str]) -> None:
    """Register gnod's own directories so no walk ever indexes them."""
    _own_dirs.clear()
    _listings.clear()
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


class WalkEntry(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """A file the walk admits, with its stat (a Struct: a walk makes one per file, and a
    NamedTuple's Python-level constructor was ~20 ms of a ~450 ms no-op update)."""

    rel_path: str  # POSIX-style, relative to the collection root
    abs_path: str
    size: int
    mtime_ns: int
    inode: int


class WalkIssue(NamedTuple):
    """Something under the root that is not indexed, and why (shown by `status`)."""

    rel_path: str  # display form: undecodable bytes of a name as \\xNN
    code: str  # NOT_ACCESSIBLE, BAD_NAME, OUTSIDE_ROOT, LOOP, SPECIAL
    reason: str


def valid_name(rel_path: str) -> bool:
    """Whether a path decoded from the file system is valid UTF-8 text.

    Names are bytes on Linux; Python shows undecodable bytes as lone surrogates, which
    neither SQLite nor JSON can carry, so such a file is reported instead of indexed."""
    if rel_path.isascii():
        return True
    try:
        rel_path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(rel_path: str) -> str:
    """A path as text that can be stored and printed: undecodable bytes become `\\xNN`."""
    return rel_path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def bad_name(rel_path: str) -> WalkIssue:
    return WalkIssue(shown(rel_path), "BAD_NAME", "the file name is not valid UTF-8: rename it to index it")


def special_reason(mode: int) -> str:
    kind = (
        "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )
    return f"{kind}: only regular files are indexed"


def _matches(spec: pathspec.PathSpec, path: str) -> bool:
    """`spec.match_file(path)` for any name the file system gives: bytes of a name that
    are not UTF-8 (kept as surrogate escapes, which the matcher cannot encode: adding the
    collection failed) are read as U+FFFD, as a .gitignore's own lines are."""
    if not path.isascii():
        path = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return bool(spec.match_file(path))


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip("/") + "/")


class Filter:
    """Decides what belongs to a collection: include globs (or default extensions) and
    `also` globs besides them, exclude globs, default junk directories and, optionally,
    .gitignore files."""

    def __init__(
        self,
        include: list[str],
        exclude: list[str],
        gitignore: bool = True,
        also: Sequence[str] = (),
        project: bool = False,
        root: str | None = None,
    ) -> None:
        self.key = (tuple(include), tuple(exclude), gitignore, tuple(also), project, root)
        self.include = pathspec.GitIgnoreSpec.from_lines(include) if include else None
        self.exclude = pathspec.GitIgnoreSpec.from_lines(exclude) if exclude else None
        self.also = pathspec.GitIgnoreSpec.from_lines(also) if also else None
        self.gitignore = gitignore
        # A project's tree: its .gitignore files say what build output is, and files
        # without an extension are taken too (_default_kind).
        self.project = project
        # The collection's folder, where a file without an extension is looked into: a
        # script is taken (_default_kind). None: by its name alone.
        self.root = root
        self._scripts: dict[str, bool] = {}  # rel_path → whether `#!` opens it, read once
        self.excluded_dirs = _DEFAULT_EXCLUDED_DIRS - OUTPUT_DIRS if project else _DEFAULT_EXCLUDED_DIRS

    @classmethod
    def of(cls, col: CollectionConfig) -> Filter:
        """The collection's filter; `project` (build/, dist/ taken as any folder, for the
        .gitignore files to judge, and files without an extension taken) where it follows
        .gitignore files and is a project's tree: a git work tree, or one with a
        .gitignore at its top (a release tarball)."""
        project = col.gitignore and any(os.path.exists(os.path.join(col.path, f)) for f in (".git", ".gitignore"))
        exclude = [*col.exclude, *obsidian.excluded_globs(col.path)]  # an Obsidian vault's Excluded files
        return cls(col.include, exclude, col.gitignore, col.also, project, col.path)

    def wants_dir(self, name: str, rel_dir: str) -> bool:
        if name in self.excluded_dirs:
            return False
        return not (self.exclude and _matches(self.exclude, rel_dir + "/"))

    def output_dir(self, name: str, rel_dir: str) -> bool:
        """Whether a folder is left out as build output for its name alone (outside a
        project's tree, OUTPUT_DIRS), not by an exclude glob: what the user hears of."""
        return (
            name in OUTPUT_DIRS
            and name in self.excluded_dirs
            and not (self.exclude and _matches(self.exclude, rel_dir + "/"))
        )

    def wants_file(self, name: str, rel_path: str) -> bool:
        if name in _DEFAULT_EXCLUDED_FILES:
            return False
        taken = (
            _matches(self.include, rel_path)
            if self.include is not None
            else _default_kind(name, rel_path, self.project, self._script)
        )
        if not (taken or (self.also is not None and _matches(self.also, rel_path))):
            return False
        return not (self.exclude and _matches(self.exclude, rel_path))

    def _script(self, rel_path: str) -> bool:
        """Whether `#!` opens the file (read once: wants_file, then other_kind, ask it of
        a file that is no script); False without the collection's folder."""
        if self.root is None:
            return False
        if rel_path not in self._scripts:
            self._scripts[rel_path] = _opens_as_script(os.path.join(self.root, rel_path))
        return self._scripts[rel_path]

    def kind_left_out(self, name: str, rel_path: str) -> bool:
        """Whether the default kinds of files (no include globs) and the `also` globs
        leave this one out."""
        return (
            self.include is None
            and not _default_kind(name, rel_path, self.project, self._script)
            and not (self.also is not None and _matches(self.also, rel_path))
        )

    def other_kind(self, name: str, rel_path: str) -> bool:
        """Whether a file that `wants_file` refused was refused for its kind alone: no
        include globs, a name that is not hidden, no exclude glob of its own. What the
        defaults leave out is then counted, so that the user hears of it."""
        return (
            not name.startswith(".")
            and name not in _DEFAULT_EXCLUDED_FILES
            and self.kind_left_out(name, rel_path)
            and not (self.exclude and _matches(self.exclude, rel_path))
        )


def anchored_nowhere(root: str, globs: Sequence[str]) -> list[str]:
    """The globs anchored at the top of `root` (a `/` before their end, as .gitignore
    reads them) whose first folder, named without wildcards, is not there: a user's
    `sites-available/*` meant the folder at any depth, and took no file."""
    out = []
    for glob in globs:
        path = glob.removeprefix("!").removeprefix("/").rstrip("/")  # `old/`: a folder at any depth
        first, slash, _ = path.partition("/")
        if slash and first and first != "**" and not _WILDCARD.search(first):
            if not os.path.lexists(os.path.join(root, first)):
                out.append(glob)
    return out


_WILDCARD = re.compile(r"[*?\[\\]")


def _default_kind(name: str, rel_path: str, project: bool = False, script: Callable[[str], bool] | None = None) -> bool:
    """Whether a collection without include globs takes the file, by its kind. In a
    project's tree (`project`, Filter.of) a file without an extension is a script or a
    document (the kernel's 1,087: Documentation/ABI's sysfs pages, scripts/), while its
    .gitignore files leave out what a build makes; not one hidden (a tool's settings) or
    an editor's backup (`notes~`, `#notes#`). Elsewhere such a name may be anything, and
    is taken where it is a script (`#!` opens it: ~/bin's `backup`, a `healthcheck`), as
    `script` says. A gzip file is taken where the file it holds would be by its
    extension (`notes.md.gz`; not `syslog.2.gz` or a project's `testdata/blob.gz`,
    which an `also` glob takes)."""
    ext = extension(rel_path)
    if ext in INDEXED_BY_DEFAULT or name.lower().endswith(CONTAINER_SUFFIXES):
        return True
    if (inner := uncompressed(rel_path)) != rel_path:
        return extension(inner) in INDEXED_BY_DEFAULT
    if ext or name.startswith(".") or name.endswith(("~", "#")):
        return False
    return project or (script is not None and script(rel_path))


def _opens_as_script(path: str) -> bool:
    """Whether the file at `path` opens with `#!` (unreadable: no)."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


# A directory → (the stats of its ignore files, their compiled spec): each is compiled
# once while its files stay the same, not on every walk or watcher event (a big
# repository's root .gitignore costs ~4 ms to compile).
_specs: dict[str, tuple[tuple[tuple[int, int, int], ...], pathspec.GitIgnoreSpec]] = {}
_MAX_SPECS = 4096
# A repository's own ignore rules, beside its .gitignore files (`git help gitignore`): at
# the top of its work tree, read before the .gitignore there, whose lines win.
GIT_EXCLUDE = ".git/info/exclude"


class Ignore(NamedTuple):
    """The ignore rules in force from a directory down: the directory (relative, with
    "/"), their spec, and the stats of the files they were compiled from (what a kept
    listing below it depends on)."""

    base: str
    spec: pathspec.GitIgnoreSpec
    stamp: tuple[tuple[int, int, int], ...]


def _load_gitignore(abs_dir: str, base: str) -> Ignore | None:
    """The rules of the directory's .gitignore and, at a repository's top, of
    .git/info/exclude and the user's excludes file (gnod.ingest.git_excludes), in git's
    order: the later a line, the more it decides."""
    exclude = os.path.join(abs_dir, GIT_EXCLUDE)
    stats = [(exclude, k)] if (k := _file_stamp(exclude)) else []
    if stats and (k := _file_stamp(user := git_excludes.user_file())):
        stats.insert(0, (user, k))
    if k := _file_stamp(gitignore := os.path.join(abs_dir, ".gitignore")):
        stats.append((gitignore, k))
    if not stats:
        _specs.pop(abs_dir, None)
        return None
    key = tuple(k for _, k in stats)
    known = _specs.get(abs_dir)
    if known is not None and known[0] == key:
        return Ignore(base, known[1], key)
    lines: list[str] = []
    for path, _ in stats:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines += f.read().splitlines()
        except (FileNotFoundError, PermissionError, IsADirectoryError):
            continue
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    if len(_specs) >= _MAX_SPECS:
        _specs.clear()
    _specs[abs_dir] = (key, spec)
    return Ignore(base, spec, key)


def _file_stamp(path: str) -> tuple[int, int, int] | None:
    """The stat of the regular file at `path` a kept spec depends on; None for none (a
    FIFO would block the open, and the writer with it)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _ignored(ignores: list[Ignore], rel: str) -> bool:
    for base, spec, _ in ignores:
        if _matches(spec, rel[len(base) :] if base else rel):
            return True
    return False


def _chain(root: str, flt: Filter, rel_dir: str) -> list[Ignore] | None:
    """The .gitignore specs in force inside `rel_dir` (from the root down, exclusive), or
    None when `rel_dir` itself or one of its ancestors is excluded."""
    ignores: list[Ignore] = []
    parts = rel_dir.split("/") if rel_dir else []
    for depth in range(len(parts)):
        here = "/".join(parts[:depth])
        if flt.gitignore:
            ignore = _load_gitignore(os.path.join(root, here), here + "/" if here else "")
            if ignore is not None:
                ignores.append(ignore)
        sub = "/".join(parts[: depth + 1])
        if not flt.wants_dir(parts[depth], sub) or (ignores and _ignored(ignores, sub + "/")):
            return None
    return ignores


def admit(
    root: str, flt: Filter, rel_path: str, issues: list[WalkIssue] | None = None, follow_symlinks: bool = False
) -> WalkEntry | None:
    """The entry for one file if it exists and belongs to the collection (watcher events).
    A file that belongs but cannot be indexed (bad name, link, special file) goes to
    `issues`, as does a link to a folder out of the collection."""
    rel_dir, _, name = rel_path.rpartition("/")
    ignores = _chain(root, flt, rel_dir)
    if ignores is None:
        return None
    if flt.gitignore:
        ignore = _load_gitignore(os.path.join(root, rel_dir), rel_dir + "/" if rel_dir else "")
        if ignore is not None:
            ignores = [*ignores, ignore]
    abs_path = os.path.join(root, rel_path)
    if not follow_symlinks and os.path.islink(abs_path) and os.path.isdir(abs_path):
        _report_folder_link(root, flt, rel_path, abs_path, ignores, issues)
        return None
    if not flt.wants_file(name, rel_path) or (ignores and _ignored(ignores, rel_path)):
        return None
    try:
        st = os.lstat(abs_path)
        if stat.S_ISLNK(st.st_mode):
            if _report_link(root, rel_path, abs_path, issues) or not follow_symlinks:
                return None
            st = os.stat(abs_path)
    except OSError:
        return None
    issue = None
    if not stat.S_ISREG(st.st_mode):
        issue = None if stat.S_ISDIR(st.st_mode) else WalkIssue(shown(rel_path), "SPECIAL", special_reason(st.st_mode))
    elif not valid_name(rel_path):
        issue = bad_name(rel_path)
    if issue is not None or not stat.S_ISREG(st.st_mode):
        if issue is not None and issues is not None:
            issues.append(issue)
        return None
    return WalkEntry(rel_path, abs_path, st.st_size, st.st_mtime_ns, st.st_ino)


def through_link(root: str, real_root: str, rel_path: str) -> bool:
    """Whether `rel_path` is a link to a folder, or lies in a folder reached through one:
    a path a walk that does not follow links never gives (the watcher is told of
    `misc/notes-link`, a link just made, and of files through it). `real_root`: the
    realpath of `root`."""
    abs_path = os.path.join(root, rel_path)
    if os.path.islink(abs_path) and os.path.isdir(abs_path):
        return True
    folder = os.path.dirname(rel_path)
    return os.path.realpath(os.path.join(root, folder)) != os.path.join(real_root, folder).rstrip("/")


def _link_issue(root: str, rel_path: str, abs_path: str) -> WalkIssue | None:
    """Why the symlink at `rel_path` is never followed, or None when it leads inside the
    collection: followed when the collection follows links, else left out unreported, as
    git and ripgrep do: its target is indexed under its own path (the kernel tree's 56
    links all lead inside it)."""
    real = os.path.realpath(abs_path)
    if not _inside(real, os.path.realpath(root)):
        return WalkIssue(
            shown(rel_path), "OUTSIDE_ROOT", "symbolic link to a place outside the collection: not followed"
        )
    return None


class _Listing(NamedTuple):
    """What a directory holds for a collection: the names its filters admit (files, to be
    stat'ed; subdirectories, to be walked) and what it reports."""

    key: tuple | None  # what the listing depends on; None: not kept
    files: tuple[str, ...]
    subdirs: tuple[str, ...]
    issues: tuple[WalkIssue, ...]
    gitignore: bool = True  # whether the directory held a .gitignore (or a .git) when listed
    others: tuple[tuple[str, int], ...] = ()  # files of other kinds (Filter.other_kind), by extension
    outputs: tuple[str, ...] = ()  # folders taken for build output (Filter.output_dir), by name


# Directory path → its last listing, reused while the directory's mtime, the filters and
# the .gitignore files above it are the same (git's untracked cache does this): a no-op
# rescan then lists no directory and matches no name, only stats each file (65k files:
# 0.77 → 0.4 s). A directory changed within RACY_NS of its listing is listed again next
# time, since a change within the same clock tick would leave its mtime as it was.
_listings: dict[str, _Listing] = {}
_MAX_LISTINGS = 100_000
RACY_NS = 2_000_000_000


def walk(
    root: str,
    flt: Filter,
    issues: list[WalkIssue] | None = None,
    start: str = "",
    follow_symlinks: bool = False,
    others: Counter[str] | None = None,
    outputs: Counter[str] | None = None,
) -> Iterator[WalkEntry]:
    """Yield every file under `root` (or under its subdirectory `start`) that the filter
    admits, depth first, sorted by name.

    Symbolic links are not followed unless `follow_symlinks`, and then only to targets
    inside the root, each directory once (no loops). What the filter wants but cannot be
    indexed (unreadable directories, undecodable names, links out of the root, loops,
    FIFOs and other special files) is reported into `issues` rather than skipped
    silently; a link inside the root that is not followed is not reported (its target is
    walked as itself). `others` counts the files left out for their kind alone, by
    extension ("" for none); `outputs` the folders left out for their name alone, as build
    output (OUTPUT_DIRS, outside a project's tree), by name.
    """
    ignores0 = _chain(root, flt, start)
    if ignores0 is None:
        return
    report = issues.append if issues is not None else lambda _issue: None
    top = os.path.join(root, start) if start else root
    visited: set[tuple[int, int]] | None = None
    if follow_symlinks:
        visited = set()
        try:
            top_st = os.stat(top)
            visited.add((top_st.st_dev, top_st.st_ino))
        except OSError:
            pass
    stack: list[tuple[str, str, list[Ignore]]] = [(top, start, ignores0)]
    while stack:
        abs_dir, rel_dir, ignores = stack.pop()
        prefix = rel_dir + "/" if rel_dir else ""
        st = _dir_stat(abs_dir) if visited is None else None
        if flt.gitignore and not _none_to_load(abs_dir, st):
            ignore = _load_gitignore(abs_dir, prefix)
            if ignore is not None:
                ignores = [*ignores, ignore]
        listing = _listing(root, abs_dir, prefix, flt, ignores, visited, st)
        for issue in listing.issues:
            report(issue)
        if others is not None and listing.others:
            others.update(dict(listing.others))
        if outputs is not None and listing.outputs:
            outputs.update(listing.outputs)
        here = abs_dir if abs_dir.endswith("/") else abs_dir + "/"  # os.path.join, without its cost per file
        if listing.files:
            yield from _stat_files(here, prefix, listing.files, report)
        stack.extend((here + name, prefix + name, ignores) for name in reversed(listing.subdirs))


# A directory opened only to stat what it holds: O_PATH needs no read permission
# (where there is no O_PATH, a directory that cannot be read is stat'ed into by path).
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC


def _stat_files(
    here: str, prefix: str, names: tuple[str, ...], report: Callable[[WalkIssue], None]
) -> Iterator[WalkEntry]:
    """An entry for each of a directory's regular files among `names`. Each is stat'ed
    by its name in the directory held open (the kernel then resolves one name, not the
    whole path: a tenth less time for a no-op update's 65k stats); by its path when no
    descriptor is to be had (the process is at its limit of open files)."""
    try:
        fd: int | None = os.open(here, _DIR_FLAGS)
        base = ""
    except OSError:
        fd, base = None, here
    try:
        for name in names:
            try:
                st = os.stat(base + name, dir_fd=fd)
            except OSError:
                continue  # vanished or a dangling symlink
            if not stat.S_ISREG(st.st_mode):
                report(WalkIssue(shown(prefix + name), "SPECIAL", special_reason(st.st_mode)))
                continue
            yield WalkEntry(prefix + name, here + name, st.st_size, st.st_mtime_ns, st.st_ino)
    finally:
        if fd is not None:
            os.close(fd)


def _dir_stat(abs_dir: str) -> os.stat_result | None:
    try:
        return os.stat(abs_dir)
    except OSError:
        return None


def _dir_stamp(st: os.stat_result) -> tuple[int, int, int]:
    """What a kept listing's directory must still be: a change inside moves its mtime."""
    return (st.st_mtime_ns, st.st_ino, st.st_dev)


def _none_to_load(abs_dir: str, st: os.stat_result | None) -> bool:
    """Whether the directory surely holds no .gitignore, without a stat of one: its kept
    listing had none and it is unchanged since (a file added would change its mtime)."""
    kept = _listings.get(abs_dir)
    if st is None or kept is None or kept.gitignore or kept.key is None:
        return False
    return kept.key[0] == _dir_stamp(st)


def _listing(
    root: str,
    abs_dir: str,
    prefix: str,
    flt: Filter,
    ignores: list[Ignore],
    visited: set[tuple[int, int]] | None,
    st: os.stat_result | None,
) -> _Listing:
    """The directory's listing, kept from the last walk when nothing it depends on changed
    (never when links are followed: which directories were seen decides what a link is).
    `st`: the directory's stat (None when links are followed, or it could not be read)."""
    key = None
    racy = True
    if st is not None:
        key = (_dir_stamp(st), flt.key, tuple(i.stamp for i in ignores))
        kept = _listings.get(abs_dir)
        if kept is not None and kept.key == key:
            return kept
        racy = st.st_mtime_ns > time.time_ns() - RACY_NS
    listing = _scan(root, abs_dir, prefix, flt, ignores, visited, key)
    if listing.key is not None and not racy:
        if len(_listings) >= _MAX_LISTINGS:
            _listings.clear()
        _listings[abs_dir] = listing
    return listing


def _scan(
    root: str,
    abs_dir: str,
    prefix: str,
    flt: Filter,
    ignores: list[Ignore],
    visited: set[tuple[int, int]] | None,
    key: tuple | None,
) -> _Listing:
    """List the directory now: the files and sub-directories to walk, and what was refused."""
    try:
        with os.scandir(abs_dir) as it:
            entries = sorted(it, key=_NAME)
    except OSError as e:
        return _Listing(
            None,
            (),
            (),
            (
                WalkIssue(
                    shown(prefix[:-1]) if prefix else ".", "NOT_ACCESSIBLE", f"cannot list directory: {e.strerror or e}"
                ),
            ),
        )
    files: list[str] = []
    subdirs: list[str] = []
    issues: list[WalkIssue] = []
    others: Counter[str] = Counter()
    outputs: list[str] = []
    for entry in entries:
        rel = prefix + entry.name
        try:
            kind = _entry_kind(root, entry, rel, flt, ignores, visited, issues)
        except OSError:
            continue  # vanished
        if kind == "dir":
            subdirs.append(entry.name)
        elif kind == "file":
            if valid_name(rel):
                files.append(entry.name)
            else:
                issues.append(bad_name(rel))
        elif kind == "other":
            others[extension(rel)] += 1
        elif kind == "output":
            outputs.append(entry.name)
    gitignore = any(entry.name in (".gitignore", ".git") for entry in entries)
    return _Listing(key, tuple(files), tuple(subdirs), tuple(issues), gitignore, tuple(others.items()), tuple(outputs))


def _entry_kind(
    root: str,
    entry: os.DirEntry,
    rel: str,
    flt: Filter,
    ignores: list[Ignore],
    visited: set[tuple[int, int]] | None,
    issues: list[WalkIssue],
) -> str | None:
    """ "dir" or "file" for an entry to walk, "other" for a regular file left out for its
    kind alone (Filter.other_kind), "output" for a folder left out as build output for its
    name alone (Filter.output_dir), None for one left out otherwise (with its issue, if any)."""
    name = entry.name
    link = entry.is_symlink()
    follow = visited is not None
    if entry.is_dir(follow_symlinks=link and follow):
        if _wanted_dir(root, entry, rel, link, flt, ignores, visited, issues):
            return "dir"
        output = not link and flt.output_dir(name, rel) and not (ignores and _ignored(ignores, rel + "/"))
        return "output" if output else None
    if link and not follow and entry.is_dir():
        _report_folder_link(root, flt, rel, entry.path, ignores, issues)
        return None
    if not flt.wants_file(name, rel):
        if link or not flt.other_kind(name, rel) or not entry.is_file(follow_symlinks=False):
            return None
        return None if ignores and _ignored(ignores, rel) else "other"
    if ignores and _ignored(ignores, rel):
        return None
    if link and (_report_link(root, rel, entry.path, issues) or not follow):
        return None
    return "file"


def _report_folder_link(
    root: str, flt: Filter, rel: str, abs_path: str, ignores: list[Ignore] | None, issues: list[WalkIssue] | None
) -> None:
    """Report a link to a folder (not followed) where the folder would be walked."""
    if flt.wants_dir(rel.rpartition("/")[2], rel) and not (ignores and _ignored(ignores, rel + "/")):
        _report_link(root, rel, abs_path, issues)


def _report_link(root: str, rel: str, abs_path: str, issues: list[WalkIssue] | None) -> bool:
    """Report the link at `rel` if it is never followed; whether it was."""
    issue = _link_issue(root, rel, abs_path)
    if issue is not None and issues is not None:
        issues.append(issue)
    return issue is not None


def _wanted_dir(
    root: str,
    entry: os.DirEntry,
    rel: str,
    link: bool,
    flt: Filter,
    ignores: list[Ignore],
    visited: set[tuple[int, int]] | None,
    issues: list[WalkIssue],
) -> bool:
    """Whether to walk into a sub-directory (or a followed link to one)."""
    if not flt.wants_dir(entry.name, rel) or (ignores and _ignored(ignores, rel + "/")) or _is_own(entry):
        return False
    if not valid_name(rel):
        issues.append(WalkIssue(shown(rel), "BAD_NAME", "the directory name is not valid UTF-8: rename it to index it"))
        return False
    if visited is not None:
        # Followed links must not lead back to a directory on the way down.
        st = entry.stat()
        issue = _link_issue(root, rel, entry.path) if link else None
        if issue is None and link and (st.st_dev, st.st_ino) in visited:
            issue = WalkIssue(shown(rel), "LOOP", "symbolic link to a directory already indexed")
        if issue is not None:
            issues.append(issue)
            return False
        visited.add((st.st_dev, st.st_ino))
    return True
