"""Snippets with line numbers and match offsets, cut from the stored Markdown (the
lexical index holds only stems).

A line's score is the number of distinct query terms it holds (stems in the
document's language, or the exact words typed); cheap substring probes skip lines
that cannot match, so a large document costs little. The best lines open the
snippets, which never overlap; in each, the matched words are given as offsets.
"""

from __future__ import annotations

from typing import NamedTuple

from gnod.text.analyzer import CJK_RUN_RE, TOKEN_RE, Analyzer, tokenize

MAX_LINES = 3
MAX_CHARS = 320


class Snippet(NamedTuple):
    line: int  # 1-based line of the stored Markdown where `text` starts
    text: str
    matches: list[list[int]]  # [start, end) character offsets in `text` of the matched words


def _line_terms(line: str, analyzer: Analyzer, terms: frozenset[str]) -> frozenset[str]:
    tokens = tokenize(line)
    return terms.intersection(tokens).union(terms.intersection(analyzer.stems(tokens)))


def match_spans(text: str, analyzer: Analyzer, terms: frozenset[str]) -> list[list[int]]:
    """[start, end) character offsets in `text` of the words a query matched: a word
    whose stem (in `analyzer`'s language) or whose own lowercase form is among `terms`;
    in CJK runs, each matching character bigram (adjacent ones merged)."""
    spans: list[list[int]] = []
    if not terms:
        return spans
    for m in TOKEN_RE.finditer(text):
        word = m.group().lower()
        if word in terms or analyzer.stem(word) in terms:
            spans.append([m.start(), m.end()])
            continue
        for run in CJK_RUN_RE.finditer(m.group()):
            s = run.group()
            for k in range(len(s) - 1):
                if s[k : k + 2] in terms:
                    start = m.start() + run.start() + k
                    if spans and spans[-1][1] >= start:
                        spans[-1][1] = start + 2
                    else:
                        spans.append([start, start + 2])
    return spans


def best_snippets(
    markdown: str, body_line: int, analyzer: Analyzer, terms: frozenset[str], n: int = 1
) -> list[Snippet]:
    """Up to `n` non-overlapping snippets, best first (more distinct terms, then earlier);
    a document without a matching line gets its first non-empty line."""
    lines = markdown.split("\n")
    start = max(body_line - 1, 0)
    probes = {t[:3] for t in terms if t}
    scored: list[tuple[int, int, int]] = []  # (-distinct terms, line index, column)

    def scan(use_probes: bool) -> None:
        for i in range(start, len(lines)):
            line = lines[i]
            if not line:
                continue
            lower = line.lower()
            if use_probes and not any(p in lower for p in probes):
                continue
            hit = _line_terms(line, analyzer, terms)
            if hit:
                col = min((lower.find(h[:3]) for h in hit if lower.find(h[:3]) >= 0), default=0)
                scored.append((-len(hit), i, col))

    if terms:
        scan(True)
        if not scored:
            scan(False)
    if not scored:
        first = next((i for i in range(start, len(lines)) if lines[i].strip()), -1)
        if first < 0:
            return []
        scored.append((0, first, 0))
    out: list[Snippet] = []
    taken: list[tuple[int, int]] = []  # line ranges of the snippets so far
    for _, i, col in sorted(scored):
        if any(a <= i <= b for a, b in taken):
            continue
        text, last = _window(lines, i, col)
        if any(a <= last and i <= b for a, b in taken):
            continue
        taken.append((i, last))
        out.append(Snippet(line=i + 1, text=text, matches=match_spans(text, analyzer, terms)))
        if len(out) >= n:
            break
    return out


def _window(lines: list[str], i: int, col: int) -> tuple[str, int]:
    """The snippet text starting at line `i`, and the index of its last line."""
    first = lines[i]
    if len(first) > MAX_CHARS:
        lo = max(0, min(col - MAX_CHARS // 3, len(first) - MAX_CHARS))
        text = first[lo : lo + MAX_CHARS]
        return ("…" if lo else "") + text + ("…" if lo + MAX_CHARS < len(first) else ""), i
    out = [first]
    size = len(first)
    for j in range(i + 1, min(i + MAX_LINES, len(lines))):
        nxt = lines[j]
        if size + len(nxt) + 1 > MAX_CHARS:
            break
        out.append(nxt)
        size += len(nxt) + 1
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out), i + max(len(out), 1) - 1
