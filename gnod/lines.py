"""A document's lines as its file has them, from the canonical text's: what results and
`get` number lines by.

The canonical text keeps one blank line of each run (gnod.ingest.canonical), and a
document records where it dropped the others as `line_shifts`: "stored:extra" pairs,
each saying that from that stored line on, the file's line is `extra` further. ''
means the two agree. An extra smaller than the one before is a stored line with no line
of its own in the file: a CSV table's Markdown delimiter row, on its header's line
(gnod.ingest.convert.convert_csv); the earlier stored line is that file line's.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence


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
    the canonical text dropped, the blank line it kept of that run; for one that two
    stored lines share, the first."""
    if not line_shifts:
        return line
    starts, extras = _shifts(line_shifts)
    i = bisect.bisect_right([s + e for s, e in zip(starts, extras)], line) - 1
    while i >= 0 and line <= starts[i] - 1 + (extras[i - 1] if i else 0):  # the stored line before has it too
        i -= 1
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
        at, before = i + max(before - extra, 0), extra  # a line of no line of the file's is left out
    out += lines[at:]
    return "\n".join(out)


def shifts(file_lines: Sequence[int]) -> str:
    """The line shifts of a text whose stored line n (from 1) is the file's line
    `file_lines[n - 1]`."""
    out, extra = [], 0
    for stored, line in enumerate(file_lines, 1):
        if line - stored != extra:
            extra = line - stored
            out.append(f"{stored}:{extra}")
    return " ".join(out)


def composed(first: str, then: str) -> str:
    """The line shifts of `first` (stored → an intermediate text's line) and then `then`
    (that text's line → the file's): a converted document's canonical text."""
    if not then:
        return first
    if not first:
        return then
    # Where either changes: `first`'s starts, and the stored lines reaching each of `then`'s.
    reached = (stored_line(first, t) for t in _shifts(then)[0])
    out, extra = [], 0
    for stored in sorted({*_shifts(first)[0], *(s + k for s in reached for k in (0, 1))}):
        if (at := file_line(then, file_line(first, stored)) - stored) != extra:
            extra = at
            out.append(f"{stored}:{extra}")
    return " ".join(out)
