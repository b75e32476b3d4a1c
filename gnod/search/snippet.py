"""Snippets with line numbers, cut from the stored Markdown (FTS5 holds only stems).

The best line is the one matching the most distinct query stems; cheap substring
probes skip lines that cannot match, so a large document costs little.
"""

from __future__ import annotations

from gnod.protocol import Snippet
from gnod.text.analyzer import Analyzer, tokenize

MAX_LINES = 3
MAX_CHARS = 320


def best_snippet(markdown: str, body_line: int, analyzer: Analyzer, stems: frozenset[str]) -> Snippet | None:
    lines = markdown.split("\n")
    start = max(body_line - 1, 0)
    probes = {s[:3] for s in stems if s}
    best_i, best_score, best_col = -1, 0, 0

    def scan(use_probes: bool) -> None:
        nonlocal best_i, best_score, best_col
        for i in range(start, len(lines)):
            line = lines[i]
            if not line:
                continue
            lower = line.lower()
            if use_probes and not any(p in lower for p in probes):
                continue
            hit = stems.intersection(analyzer.stems(tokenize(line)))
            if len(hit) > best_score:
                best_i, best_score = i, len(hit)
                best_col = min((lower.find(h[:3]) for h in hit if lower.find(h[:3]) >= 0), default=0)

    if stems:
        scan(True)
        if best_i < 0:
            scan(False)
    if best_i < 0:
        best_i = next((i for i in range(start, len(lines)) if lines[i].strip()), -1)
        if best_i < 0:
            return None
    return Snippet(line=best_i + 1, text=_window(lines, best_i, best_col))


def _window(lines: list[str], i: int, col: int) -> str:
    first = lines[i]
    if len(first) > MAX_CHARS:
        lo = max(0, min(col - MAX_CHARS // 3, len(first) - MAX_CHARS))
        text = first[lo : lo + MAX_CHARS]
        return ("…" if lo else "") + text + ("…" if lo + MAX_CHARS < len(first) else "")
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
    return "\n".join(out)
