"""Fenced code blocks (``` and ~~~), which readers of prose skip: their lines are code, not
sentences, headings or paragraphs. One reading for all of them: the language sample,
the blocks stemmed apart, chunk breaks, titles, mail bodies."""

from __future__ import annotations

import re
from bisect import bisect_right
from operator import itemgetter

# CommonMark fences: up to 3 spaces of indent, 3+ backticks or tildes, then an info
# string; a backtick fence's info string may not contain backticks. The pattern starts
# with "\n" rather than `^` because `re` scans for a literal first character far faster;
# it is matched against "\n" + text, so a match's start is its line's offset in text.
_FENCE_RE = re.compile(r"\n {0,3}(`{3,}|~{3,})(.*)")


def fenced_spans(text: str) -> list[tuple[int, int]]:
    """Character ranges [start, end) of fenced code blocks, fence lines included.

    An unclosed fence runs to the end of the text, as in CommonMark. A line of four or
    more tildes alone, at least as long as the line of text right above it, underlines
    that line as a heading (reStructuredText's `Title` over `~~~~~`): it opens nothing.
    (Three, the usual fence, after a one-word line still opens one.)
    """
    spans: list[tuple[int, int]] = []
    opening: re.Match[str] | None = None
    lines = "\n" + text
    for m in _FENCE_RE.finditer(lines):
        fence, info = m[1], m[2]
        if opening is None:
            if not (fence[0] == "`" and "`" in info) and not _underline(lines, m):
                opening = m
        elif fence[0] == opening[1][0] and len(fence) >= len(opening[1]) and not info.strip():
            spans.append((opening.start(), m.end() - 1))
            opening = None
    if opening is not None:
        spans.append((opening.start(), len(text)))
    return spans


def _underline(lines: str, m: re.Match[str]) -> bool:
    if m[1][0] != "~" or m[2].strip():
        return False
    above = lines[lines.rfind("\n", 0, m.start()) + 1 : m.start()].strip()
    return bool(above) and len(m[1]) >= max(len(above), 4) and not _FENCE_RE.match("\n" + above)


def in_spans(spans: list[tuple[int, int]], pos: int) -> bool:
    """Whether `pos` falls inside one of the sorted, disjoint `spans`."""
    i = bisect_right(spans, pos, key=itemgetter(0)) - 1
    return i >= 0 and pos < spans[i][1]


def without_fenced(text: str) -> str:
    """`text` with its fenced code blocks taken out."""
    spans = fenced_spans(text)
    if not spans:
        return text
    kept, at = [], 0
    for start, end in spans:
        kept.append(text[at:start])
        at = end
    kept.append(text[at:])
    return "".join(kept)
