"""Markdown's pipe tables, as gno writes a spreadsheet's sheets, a CSV file and a Word
table (`| a | b |` over `| --- | --- |`): the header row of the table a line is in, for a
passage of its rows far below it (`| L-10090 | … | 21 | 777.77 |` says nothing of its
columns)."""

from __future__ import annotations

import re

# The row under a table's header: `| --- | :-: |`.
SEPARATOR = r"\|(?:[ \t]*:?-+:?[ \t]*\|)+"
_SEPARATOR_RE = re.compile(SEPARATOR)


def is_row(line: str) -> bool:
    """Whether `line` is a row of a pipe table."""
    return line.startswith("|") and line.rstrip().endswith("|")


def header_of(lines: list[str], index: int, look_back: int) -> tuple[int, str] | None:
    """The header row (its index, its text) of the table whose row is `lines[index]`,
    looking back over `look_back` of its rows at most; None where that line is no
    table's row, or the table has no header and separator above it (that near)."""
    if not (0 <= index < len(lines)) or not is_row(lines[index]):
        return None
    at = index
    while at > 0 and index - at < look_back and is_row(lines[at - 1]):
        at -= 1
        if _SEPARATOR_RE.fullmatch(lines[at].strip()) and at > 0 and is_row(lines[at - 1]):
            return at - 1, lines[at - 1]
    return None
