"""A document's lines as its file has them, from the canonical text's: what results and
`get` number lines by.

The canonical text keeps one blank line of each run (gnod.ingest.canonical), and a
document records where it dropped the others as `line_shifts`: "stored:extra" pairs,
each saying that from that stored line on, the file's line is `extra` further. ''
means the two agree.
"""

from __future__ import annotations

import bisect
import functools


@functools.lru_cache(maxsize=4096)
def _shifts(line_shifts: str) -> tuple[list[int], list[int]]:
    """(stored lines where a shift starts, the shift from there)."""
    pairs = [tuple(map(int, p.split(":"))) for p in line_shifts.split()]
    return [s for s, _ in pairs], [e for _, e in pairs]


def file_line(line_shifts: str, line: int) -> int:
    """A line of the canonical text → the line of the file it came from."""
    if not line_shifts:
        return line
    starts, extras = _shifts(line_shifts)
    i = bisect.bisect_right(starts, line) - 1
    return line + extras[i] if i >= 0 else line


def stored_line(line_shifts: str, line: int) -> int:
    """A line of the file → the line of the canonical text that holds it: for a blank line
    the canonical text dropped, the blank line it kept of that run."""
    if not line_shifts:
        return line
    starts, extras = _shifts(line_shifts)
    i = bisect.bisect_right([s + e for s, e in zip(starts, extras)], line) - 1
    stored = line - (extras[i] if i >= 0 else 0)
    if i + 1 < len(starts) and stored >= starts[i + 1]:  # in the run dropped before the next shift
        return starts[i + 1] - 1
    return stored


def expand(text: str, line_shifts: str) -> str:
    """A stored text with the blank lines its file has put back: the file's lines, as
    many as it has. Work per shift, not per line (`get` of a big file)."""
    if not line_shifts:
        return text
    starts, extras = _shifts(line_shifts)
    lines = text.split("\n")
    out: list[str] = []
    at = before = 0  # the line up to which `lines` are taken, and the shift in force there
    for start, extra in zip(starts, extras):
        i = start - 1  # the index of the stored line before which the file has more blank lines
        if i >= len(lines):
            break
        out += lines[at:i]
        out += [""] * (extra - before)
        at, before = i, extra
    out += lines[at:]
    return "\n".join(out)
