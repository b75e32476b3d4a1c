"""reStructuredText's section titles: a line of text flush left with a line of one
punctuation character under it (and maybe the same line over it), at least as long as
the text. It has no `#` headings (a `# ` line is a shell comment in a literal block, which
is indented, as are a directive's lines: neither is ever read as a title). One reading
for the page's title (ingest.markdown) and its sections (text.headings)."""

from __future__ import annotations

import re
from collections.abc import Iterator

RST_EXTENSIONS = frozenset({".rst", ".rest"})

# An adornment line: one punctuation character repeated (found from the line break before
# it: the regex engine looks for a literal first character far faster than for a line).
_ADORNMENT_RE = re.compile(r"\n([!-/:-@\[-`{-~])\1*[ \t]*$", re.M)


def section_titles(text: str) -> Iterator[tuple[int, int, str]]:
    """(0-based line, level, title) of each section title of `text`, in order; the line
    is its overline's where it has one (where its section starts). A title's level is
    its adornment's (the underline's character, with or without an overline), numbered
    in the order the styles first appear, as reStructuredText ranks them."""
    styles: dict[tuple[str, bool], int] = {}
    line, counted = 0, 0
    for m in _ADORNMENT_RE.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        title = text[start : m.start()].strip()
        if text[start : start + 1] in ("", " ", "\t", "\\") or len(m[0]) - 1 < len(title):
            continue
        if not any(c.isalnum() for c in title):
            continue
        line += text.count("\n", counted, start)
        counted = start
        above = text[text.rfind("\n", 0, max(start - 1, 0)) + 1 : max(start - 1, 0)].rstrip(" \t")
        over = start > 0 and len(above) >= len(title) and above == m[1] * len(above)
        level = styles.setdefault((m[1], over), len(styles) + 1)
        yield line - over, level, title
