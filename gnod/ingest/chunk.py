"""Split document text into overlapping chunks that end at natural boundaries.

Chunks are sized for embedding models (about 800 tokens) and overlap by ~15% so a
passage cut by a boundary is still whole in one of its two chunks. Each chunk is a
verbatim slice of the input, so offsets and line numbers point back into the file.

Source code breaks before its top-level blocks (an unindented line after a blank one:
a function, a class, a type, the comment above it), so a chunk holds whole
definitions where they fit. That rule needs no parser: tree-sitter would find the same
boundaries at 23 times the chunker's cost (benchmarks/ingest_formats.py
--kernel-symbols), and runs after indexing instead (gnod.server.symbols).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from gnod.text.fences import fenced_spans, in_spans

MAX_CHARS = 3200  # 800 tokens x ~4 chars per token
OVERLAP = 480  # 15% of MAX_CHARS

# Matched against "\n" + text: a literal first character is much faster to scan for
# than `^`, and a match's start is then the heading's offset in text.
_HEADING_RE = re.compile(r"\n#{1,6} ")
_PARAGRAPH_RE = re.compile(r"\n[ \t]*\n")
_SENTENCE_RE = re.compile(r"[.!?][ \n]")
_WORD_START_RE = re.compile(r"(?<!\S)\S")
# A blank line, then an unindented one that does not close a block: a definition's start.
_TOP_LEVEL_RE = re.compile(r"\n[ \t]*\n(?=[^\s)\]}])")
_NON_SPACE_RE = re.compile(r"\S")


@dataclass(frozen=True, slots=True)
class Chunk:
    """`text == input[pos:pos + len(text)]`; lines are 1-based and inclusive."""

    seq: int
    pos: int
    text: str
    start_line: int
    end_line: int


def chunk_text(text: str, max_chars: int = MAX_CHARS, overlap: int = OVERLAP, code: bool = False) -> list[Chunk]:
    """Greedy chunking: each chunk ends at the best break in the second half of its window.

    Break preference: before a heading (outside fenced code), paragraph break, sentence
    end, line break, space, hard cut; the last candidate of the best kind wins. The
    next chunk starts `overlap` characters earlier at a word start, except after a
    heading break, where it starts at the heading. A whitespace-only tail is dropped.
    `code`: source code, where `#` lines are comments, not headings, and a top-level
    block's start takes the heading's place (the sentence rule is left out).
    """
    if not 0 <= overlap < max_chars:
        raise ValueError(f"need 0 <= overlap < max_chars, got {overlap=} {max_chars=}")
    if _NON_SPACE_RE.search(text) is None:
        return []
    headings = _Blocks(text) if code else _Headings(text)
    chunks: list[Chunk] = []
    pos, line = 0, 1
    while True:
        if len(text) - pos <= max_chars:
            end, at_heading = len(text), False
        else:
            end, at_heading = _best_break(text, headings, pos + max_chars // 2, pos + max_chars, code)
        end_line = line + text.count("\n", pos, end - 1)
        chunks.append(Chunk(len(chunks), pos, text[pos:end], line, end_line))
        if end == len(text):
            return chunks
        start = end if at_heading else _word_start(text, max(end - overlap, pos + 1), end)
        line += text.count("\n", pos, start)
        pos = start
        if _NON_SPACE_RE.search(text, pos) is None:
            return chunks


class _Headings:
    """Offsets of Markdown heading lines that are not `#` lines inside fenced code."""

    __slots__ = ("_starts", "_fences")

    def __init__(self, text: str) -> None:
        self._starts = [m.start() for m in _HEADING_RE.finditer("\n" + text)]
        self._fences = fenced_spans(text) if self._starts else []

    def last_in(self, lo: int, hi: int) -> int | None:
        """The last heading offset in (lo, hi], checking fences only for candidates."""
        i = bisect_right(self._starts, hi) - 1
        while i >= 0 and self._starts[i] > lo:
            if not in_spans(self._fences, self._starts[i]):
                return self._starts[i]
            i -= 1
        return None


class _Blocks:
    """Offsets of the top-level blocks of source code (the lines _TOP_LEVEL_RE finds)."""

    __slots__ = ("_starts",)

    def __init__(self, text: str) -> None:
        self._starts = [m.end() for m in _TOP_LEVEL_RE.finditer(text)]

    def last_in(self, lo: int, hi: int) -> int | None:
        """The last block start in (lo, hi]."""
        i = bisect_right(self._starts, hi) - 1
        return self._starts[i] if i >= 0 and self._starts[i] > lo else None


def _best_break(text: str, headings: _Headings | _Blocks, lo: int, hi: int, code: bool = False) -> tuple[int, bool]:
    """Chunk end in (lo, hi] and whether it falls right before a heading (or a block)."""
    heading = headings.last_in(lo, hi)
    if heading is not None:
        return heading, True
    for pattern in (_PARAGRAPH_RE,) if code else (_PARAGRAPH_RE, _SENTENCE_RE):
        end = 0
        for m in pattern.finditer(text, lo, hi):
            end = m.end()
        if end:
            return end, False
    for seps in (("\n",), (" ", "\t")):
        i = max(text.rfind(sep, lo, hi) for sep in seps)
        if i >= 0:
            return i + 1, False
    return hi, False


def _word_start(text: str, start: int, end: int) -> int:
    """First word start in [start, end), else `end`: a chunk cut inside one long token
    (no whitespace to restart after) is followed without overlap, never mid-token."""
    m = _WORD_START_RE.search(text, start, end)
    return m.start() if m else end
