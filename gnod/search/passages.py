"""A document's best passage for a query: what the reranker reads and what a preview shows.

A document is longer than a reranker's context, and its first chunk is rarely the
part that matched. Chunks are ranked by how many distinct query stems they hold (in
the document's language), the chunk that vector search found best breaks ties, and
the best chunks are taken up to a character budget, then put back in document order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from msgspec import Struct

from gnod.search.constants import PASSAGE_CHARS_PER_TOKEN
from gnod.text.analyzer import Analyzer, tokenize


class Chunk(Struct, frozen=True):
    seq: int
    text: str
    start_line: int
    end_line: int


class Passage(Struct, frozen=True):
    chunks: list[Chunk]  # in document order

    @property
    def text(self) -> str:
        return "\n\n".join(c.text.strip() for c in self.chunks)

    @property
    def seqs(self) -> list[int]:
        return [c.seq for c in self.chunks]

    @property
    def start_line(self) -> int:
        return self.chunks[0].start_line if self.chunks else 1

    @property
    def end_line(self) -> int:
        return self.chunks[-1].end_line if self.chunks else 1


def query_words(query_texts: Sequence[str], stop: Callable[[str], bool]) -> list[str]:
    """The words of every query text (original and lexical variants) but function words,
    which search leaves out too; all of them when nothing else is left ("to be or not")."""
    tokens = [t for q in query_texts for t in tokenize(q)]
    return [t for t in tokens if not stop(t)] or tokens


def query_stems(words: Iterable[str], analyzer: Analyzer) -> frozenset[str]:
    """Stems of the query's words in one language."""
    return frozenset(analyzer.stems(words))


def best_passage(
    chunks: Sequence[Chunk],
    stems: frozenset[str],
    analyzer: Analyzer,
    budget_chars: int,
    vector_best: int | None = None,
    defined_at: int | None = None,
) -> Passage:
    """The highest-scoring chunks that fit `budget_chars` (at least one), in document order.

    Score: distinct query stems in the chunk; the vector's best chunk gets +0.5, and
    earlier chunks win ties (titles and summaries come first). The chunk holding line
    `defined_at`, where the document defines the name the query is (`mutex_lock`), comes
    first, as `search` shows that definition (the file's opening comment held the words).
    """
    if not chunks:
        return Passage(chunks=[])

    def score(c: Chunk) -> float:
        if defined_at is not None and c.start_line <= defined_at <= c.end_line:
            return math.inf
        found = len(stems.intersection(analyzer.stems(tokenize(c.text)))) if stems else 0
        return found + (0.5 if c.seq == vector_best else 0.0)

    ranked = sorted(chunks, key=lambda c: (-score(c), c.seq))
    picked: list[Chunk] = []
    used = 0
    for c in ranked:
        size = len(c.text)
        if picked and used + size > budget_chars:
            continue
        picked.append(c)
        used += size
        if used >= budget_chars:
            break
    picked.sort(key=lambda c: c.seq)
    return Passage(chunks=picked)


def rerank_query(query: str, max_tokens: int) -> str:
    """The query as the reranker reads it: a pasted page is cut (at a word) to half the
    reranker's context, so the passage keeps the other half."""
    limit = max_tokens * PASSAGE_CHARS_PER_TOKEN // 2
    if len(query) <= limit:
        return query
    cut = query.rfind(" ", 0, limit)
    return query[: cut if cut > limit // 2 else limit]


def rerank_budget_chars(max_tokens: int, query: str) -> int:
    """Characters of document that fit beside the query in the reranker's context."""
    query_tokens = len(query) // PASSAGE_CHARS_PER_TOKEN + 8  # + the pair's special tokens
    return max(200, (max_tokens - query_tokens) * PASSAGE_CHARS_PER_TOKEN)


class Focus(Struct, frozen=True):
    text: str
    start_line: int
    end_line: int
    truncated: bool


def focus(
    passage: Passage, stems: frozenset[str], analyzer: Analyzer, limit: int, defined_at: int | None = None
) -> Focus:
    """About `limit` characters of the passage, starting just before its best-matching line,
    or at line `defined_at` (best_passage) where the passage holds it.

    A chunk is larger than a preview, and its first lines are often not what matched;
    so the preview opens one line before the line holding the most query stems.
    """
    numbered = [(c.start_line + k, line) for c in passage.chunks for k, line in enumerate(c.text.split("\n"))]
    if not numbered:
        return Focus(text="", start_line=1, end_line=1, truncated=False)
    at = next((i for i, (n, _) in enumerate(numbered) if n == defined_at), None)
    if len(passage.text) <= limit and at is None:
        # From its first line of text: a chunk opening with the blank line after a
        # frontmatter had its preview, and an editor's jump, start there.
        first = passage.chunks[0].text
        text = passage.text.lstrip("\n")
        start_line = passage.start_line + len(first) - len(first.lstrip("\n"))
        return Focus(
            text=text, start_line=min(start_line, passage.end_line), end_line=passage.end_line, truncated=False
        )
    best, best_score = (at, 0) if at is not None else (0, 0)
    if stems and at is None:
        for i, (_, line) in enumerate(numbered):
            score = len(stems.intersection(analyzer.stems(tokenize(line)))) if line.strip() else 0
            if score > best_score:
                best, best_score = i, score
    start = best - 1 if best > 0 and at is None and numbered[best - 1][1].strip() else best
    out: list[str] = []
    used = 0
    end = start
    for i in range(start, len(numbered)):
        line = numbered[i][1]
        if out and used + len(line) + 1 > limit:
            break
        if not out and not line.strip():  # blank lines before its text: not where it starts
            start += 1
            continue
        out.append(line)
        used += len(line) + 1
        end = i
    start = min(start, end)
    text, cut = preview_text("\n".join(out).strip("\n"), limit)
    truncated = cut or start > 0 or end < len(numbered) - 1
    return Focus(text=text, start_line=numbered[start][0], end_line=numbered[end][0], truncated=truncated)


def preview_text(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut at a word boundary near `limit` characters; True when it was cut."""
    if len(text) <= limit:
        return text, False
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + " …", True
