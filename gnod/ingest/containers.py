"""Files that hold documents: archives (zip, tar) and mailboxes (mbox).

Each member is a document of its own, named `<file>!/<path inside>` (a message of a
mailbox: `<file>!/<n>.eml`, n counted from 1, so appending a message names none of the
others anew). A member is converted like a file of that name on disk and carries its
container's stat, which is what tells a changed container from an unchanged one; a
changed container is read again, and of its members only those whose bytes changed are
converted again. The stdlib reads them (zipfile, tarfile; 7z: PyPI py7zr); an archive inside an archive
is opened too, down to MAX_DEPTH, and the members share one budget against bombs:
MAX_MEMBERS members, MAX_EXPANDED_BYTES in all, and no member expanding more than
MAX_RATIO times its compressed size. A mailbox holds at most MAX_MESSAGES messages; one
bigger than MAILBOX_SHARD_BYTES is never read whole: its messages are found by reading it
a block at a time, and they are read and prepared in shards of about that size, each a
task of its own (so a mailbox has no size limit but its number of messages).
"""

from __future__ import annotations

import io
import posixpath
import re
import tarfile
import zipfile
from collections.abc import Callable, Iterator, Sequence

from gnod.config import ARCHIVE_SUFFIXES, CONTAINER_SUFFIXES, MEMBER_SEP
from gnod.ingest.convert import MiB
from gnod.ingest.failure import IngestFailure

MAX_MEMBERS = 10_000  # of an archive
MAX_MESSAGES = 1_000_000  # of a mailbox (bounded by the size a file may have: read whole)
MAX_EXPANDED_BYTES = 256 * MiB  # what one container's documents may hold in memory at once
MAX_RATIO = 200  # deflate reaches ~1000× only on data made to; real documents stay far below
MAX_DEPTH = 2  # a zip of zips is opened; a zip inside those is not
MAILBOX_SHARD_BYTES = 16 * MiB  # a bigger mailbox is read and prepared in shards of about this size
SCAN_BLOCK = 8 * MiB  # bytes of a mailbox searched for From lines at a time
MAX_FROM_LINE = 64 * 1024  # a From line this long or longer is not one (a block overlaps the next by this)
# A message starts at a "From " line at the start of the file or after a blank line. The
# pattern is the line alone (a literal start: searched at memchr speed, where the blank
# line's lookbehind made it ~30 MB/s); `_opens` checks what comes before.
_FROM_LINE_RE = re.compile(rb"From [^\n]*\n")
_QUOTED_FROM_RE = re.compile(rb"(?m)^>(>*From )")


# What a container's name can end with, in either case: most names are told apart by
# their last character alone (no character but these lowercases to one of them).
_LAST = frozenset(c for suffix in CONTAINER_SUFFIXES for c in (suffix[-1], suffix[-1].upper()))


def kind(rel_path: str) -> str | None:
    """ "archive" or "mailbox" when the name says the file holds documents, else None
    (a suffix holds no "/": the path's end is its name's; one set lookup for most
    files, as the stat-only pass asks this of every file)."""
    if rel_path[-1:] not in _LAST:
        return None
    name = rel_path.lower()
    if not name.endswith(CONTAINER_SUFFIXES):
        return None
    return "archive" if name.endswith(ARCHIVE_SUFFIXES) else "mailbox"


def file_of(rel_path: str) -> str:
    """The file on disk that holds `rel_path` (itself, unless it is a member)."""
    return rel_path.split(MEMBER_SEP, 1)[0]


class _Budget:
    def __init__(self) -> None:
        self.members = 0
        self.expanded = 0

    def take(self, container: str, size: int) -> int:
        """Count one member of `size` bytes; returns the bytes still allowed."""
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise IngestFailure("TOO_LARGE", f"{container} holds more than {MAX_MEMBERS:,} members")
        self.expanded += size
        if self.expanded > MAX_EXPANDED_BYTES:
            raise IngestFailure(
                "TOO_LARGE", f"{container} expands past {MAX_EXPANDED_BYTES // MiB} MiB (an archive bomb?)"
            )
        return MAX_EXPANDED_BYTES - self.expanded


def members(rel_path: str, data: bytes) -> Iterator[tuple[str, bytes | IngestFailure]]:
    """(path inside, its bytes or why it cannot be read) for each member, in order;
    IngestFailure when the container itself is unreadable or breaks the budget."""
    if kind(rel_path) == "mailbox":
        spans = message_spans(memoryview(data).__getitem__, len(data))
        yield from shard_messages(data, 0, (1, tuple(spans)))
    else:
        yield from _archive(rel_path, data, _Budget(), 1)


# One shard of a mailbox: the number of its first message, and each message's (body
# start, end) in the file.
Shard = tuple[int, tuple[tuple[int, int], ...]]


def message_spans(read: Callable[[slice], bytes | memoryview], size: int) -> list[tuple[int, int]]:
    """(body start, end) of each message of an mbox of `size` bytes, in order: a message
    starts at a From line at the start of the file or after a blank line, and its body
    after that line. `read(slice(start, stop))` gives bytes of the mailbox; SCAN_BLOCK
    of them are read at a time, so a mailbox of any size and one in memory are split
    alike. IngestFailure when it holds no message, or more than MAX_MESSAGES."""
    starts: list[tuple[int, int]] = []  # (From line start, body start)
    lo = 0
    while lo < size:
        hi = min(size, lo + SCAN_BLOCK)
        ctx = min(lo, 4)  # what `_opens` reads before the block
        data = read(slice(lo - ctx, hi))
        last = len(data) if hi == size else len(data) - MAX_FROM_LINE  # later ones: the next block's
        for m in _FROM_LINE_RE.finditer(data, ctx):
            at = m.start()
            if at >= last:
                break
            if not _opens(data, at, lo - ctx + at):
                continue
            starts.append((lo - ctx + at, lo - ctx + m.end()))
            if len(starts) > MAX_MESSAGES:  # before any message is converted
                raise IngestFailure("TOO_LARGE", f"the mailbox holds more than {MAX_MESSAGES:,} messages")
        lo = size if hi == size else lo - ctx + last
    if not starts:
        if bytes(read(slice(0, min(size, SCAN_BLOCK)))).strip():
            raise IngestFailure("CORRUPT", "not an mbox mailbox (no message starts with a From line)")
        return []
    ends = [line for line, _ in starts[1:]] + [size]
    return [(body, end) for (_, body), end in zip(starts, ends)]


def _opens(data: bytes | memoryview, at: int, offset: int) -> bool:
    """Whether the From line at `at` in `data` (`offset` in the file) opens a message: it
    is the file's first line, or a blank line comes before it."""
    return offset == 0 or (at >= 2 and data[at - 2 : at] == b"\n\n") or (at >= 4 and data[at - 4 : at] == b"\r\n\r\n")


def shards(spans: Sequence[tuple[int, int]]) -> list[Shard]:
    """A big mailbox's messages in shards of about MAILBOX_SHARD_BYTES, numbered from 1."""
    out: list[Shard] = []
    first, group = 1, []
    for span in spans:
        group.append(span)
        if span[1] - group[0][0] >= MAILBOX_SHARD_BYTES:
            out.append((first, tuple(group)))
            first, group = first + len(group), []
    if group:
        out.append((first, tuple(group)))
    return out


def shard_messages(data: bytes, lo: int, shard: Shard) -> Iterator[tuple[str, bytes | IngestFailure]]:
    """The messages of `shard` as members (`<n>.eml`), `data` being the mailbox's bytes
    from offset `lo` on."""
    first, spans = shard
    for n, (body, end) in enumerate(spans, start=first):
        text = data[body - lo : end - lo]
        if b">From " in text:  # mboxrd: ">From " was "From " (the search alone is cheaper than the regex)
            text = _QUOTED_FROM_RE.sub(rb"\1", text)
        yield f"{n}.eml", text


def _archive(name: str, data: bytes, budget: _Budget, depth: int) -> Iterator[tuple[str, bytes | IngestFailure]]:
    lower = name.lower()
    reader = _zip if lower.endswith(".zip") else _sevenzip if lower.endswith(".7z") else _tar
    for inner, body in reader(name, data, budget):
        if depth < MAX_DEPTH and not isinstance(body, IngestFailure) and kind(inner) == "archive":
            try:
                nested = list(_archive(inner, body, budget, depth + 1))
            except IngestFailure as f:
                yield inner, f
                continue
            yield from ((f"{inner}{MEMBER_SEP}{sub}", b) for sub, b in nested)
        else:
            yield inner, body


def _clean(name: str) -> str | None:
    """A member's name as a relative POSIX path, or None for one that cannot be a file
    of its own (a directory, empty, or climbing out with `..`)."""
    name = name.replace("\\", "/").lstrip("/")
    if not name or name.endswith("/"):
        return None
    parts = [p for p in posixpath.normpath(name).split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _zip(container: str, data: bytes, budget: _Budget) -> Iterator[tuple[str, bytes | IngestFailure]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise IngestFailure("CORRUPT", f"not a readable zip archive: {e}") from None
    if len(infos) > MAX_MEMBERS:  # before any member is read
        raise IngestFailure("TOO_LARGE", f"{container} holds more than {MAX_MEMBERS:,} members")
    with archive:
        for info in infos:
            name = _clean(info.filename)
            if name is None or info.is_dir():
                continue
            allowed = budget.take(container, info.file_size)
            if info.file_size > MAX_RATIO * max(info.compress_size, 1) + MiB:
                raise IngestFailure(
                    "TOO_LARGE",
                    f"{container}: {name} expands {info.file_size // max(info.compress_size, 1)}× (a bomb?)",
                )
            if info.flag_bits & 0x1:
                yield name, IngestFailure("ENCRYPTED", "password-protected archive member")
                continue
            try:
                with archive.open(info) as f:
                    body = f.read(min(info.file_size, allowed) + 1)  # never past what it declared
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as e:
                yield name, IngestFailure("CORRUPT", f"unreadable archive member: {e}")
                continue
            if len(body) > info.file_size:
                yield name, IngestFailure("CORRUPT", "archive member longer than its header says")
                continue
            yield name, body


def _tar(container: str, data: bytes, budget: _Budget) -> Iterator[tuple[str, bytes | IngestFailure]]:
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    except (tarfile.TarError, OSError, EOFError, ValueError) as e:
        raise IngestFailure("CORRUPT", f"not a readable tar archive: {e}") from None
    with archive:
        try:
            for info in archive:
                name = _clean(info.name)
                if name is None or not info.isfile():
                    continue
                allowed = budget.take(container, info.size)
                if info.size > MAX_RATIO * max(len(data), 1) + MiB:
                    raise IngestFailure("TOO_LARGE", f"{container}: {name} expands past {MAX_RATIO}× the archive")
                f = archive.extractfile(info)
                yield name, f.read(min(info.size, allowed)) if f is not None else b""
        except (tarfile.TarError, OSError, EOFError, ValueError) as e:
            raise IngestFailure("CORRUPT", f"the tar archive is cut short or damaged: {e}") from None


def _sevenzip(container: str, data: bytes, budget: _Budget) -> Iterator[tuple[str, bytes | IngestFailure]]:
    """A 7z archive (PyPI py7zr): its members' declared sizes pass the budget before any
    is expanded, as a solid archive is expanded whole."""
    import py7zr
    from py7zr.io import BytesIOFactory

    try:
        with py7zr.SevenZipFile(io.BytesIO(data), "r") as archive:
            if archive.needs_password():
                raise IngestFailure("ENCRYPTED", "password-protected 7z archive")
            infos = [i for i in archive.list() if not i.is_directory]
            if len(infos) > MAX_MEMBERS:
                raise IngestFailure("TOO_LARGE", f"{container} holds more than {MAX_MEMBERS:,} members")
            declared = sum(i.uncompressed for i in infos)
            if declared > MAX_RATIO * len(data) + MiB:
                raise IngestFailure("TOO_LARGE", f"{container} expands {declared // len(data)}× (a bomb?)")
            for info in infos:
                budget.take(container, info.uncompressed)
            factory = BytesIOFactory(MAX_EXPANDED_BYTES)
            archive.extractall(factory=factory)
    except IngestFailure:
        raise
    except Exception as e:  # the decompressors raise their own kinds on damaged data
        raise IngestFailure("CORRUPT", f"not a readable 7z archive: {type(e).__name__}: {e}"[:300]) from None
    for info in infos:
        name = _clean(info.filename)
        if name is None:
            continue
        product = factory.products.get(info.filename)
        body = product.read() if product is not None else b""
        if len(body) > info.uncompressed:
            yield name, IngestFailure("CORRUPT", "archive member longer than its header says")
        else:
            yield name, body
