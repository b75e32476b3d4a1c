"""A Markdown text's sections by their ATX headings (`## Page 2`, `# Results`), an Org
file's by its headlines (`** TODO Results :tag:`, text.org), or a reStructuredText
page's by its section titles (text.rst): the one a line is in, and the lines of the one
a heading names. A converted PDF's pages are such sections
(`## Page N`, ingest.ocr.paged), as are a slide deck's slides (each under its title)
and a document's chapters; a heading inside fenced code is code, not a heading."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gnod.text import org
from gnod.text.analyzer import fold
from gnod.text.fences import fenced_spans, in_spans
from gnod.text.rst import RST_EXTENSIONS, section_titles

HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.M)

# How a text marks its headings.
MARKDOWN, ORG, RST = "markdown", "org", "rst"
MARKDOWN_EXTENSIONS = frozenset({".md", ".markdown", ".mdx", ".rmd", ".qmd"})


def markup(ext: str) -> str | None:
    """How a file with the extension `ext` (config.extension) marks its headings; None
    for one of no markup (code, plain text: a `#` line is a comment, or text)."""
    if ext in MARKDOWN_EXTENSIONS:
        return MARKDOWN
    return ORG if ext in org.ORG_EXTENSIONS else RST if ext in RST_EXTENSIONS else None


def headings(text: str, marked: str = MARKDOWN) -> list[tuple[int, int, str]]:
    """(0-based line, level, title) of each heading of `text`, in order, as `marked`
    says: ORG, an Org file's headlines, their titles without TODO keyword, priority or
    tags; RST, a reStructuredText page's section titles."""
    return list(_heads(text, marked))


def _heads(text: str, marked: str) -> Iterator[tuple[int, int, str]]:
    """headings, read as they are asked for."""
    if marked == ORG:
        yield from ((h.line, h.level, h.title) for h in org.outline(text).headlines)
        return
    if marked == RST:
        yield from section_titles(text)
        return
    fences = fenced_spans(text) if "```" in text or "~~~" in text else []
    line, counted = 0, 0
    for m in HEADING_RE.finditer(text):
        if fences and in_spans(fences, m.start()):
            continue
        line += text.count("\n", counted, m.start())
        counted = m.start()
        yield line, len(m[1]), m[2].strip()


def section_of(text: str, line: int, marked: str = MARKDOWN) -> str | None:
    """The title of the heading that `line` (1-based) is under, or on; None above the
    first. The text is read up to that heading only."""
    found = None
    for at, _, title in _heads(text, marked):
        if at >= line:
            break
        found = title
    return found


def section_lines(text: str, name: str, marked: str = MARKDOWN) -> tuple[int, int] | None:
    """The 1-based first and last line of the section whose heading's title is `name`
    (in any case, spaces and punctuation aside: `page2` is `Page 2`, `action-items` is
    `Action items`; a title `A: B` is also named by A and by B, a slide's `Slide 4:
    Results` by `Slide 4` and `Results`; a numbered one, `3 Methodik`, `2.1. Data`,
    `IV. Discussion`, without its number too, as a paper's are named), up to the next
    heading of its level or above; the first such section (section_spans: all of them);
    None where none is. `marked`: how the text marks its headings (headings)."""
    spans = section_spans(text, name, marked)
    return spans[0] if spans else None


def section_spans(text: str, name: str, marked: str = MARKDOWN) -> list[tuple[int, int]]:
    """section_lines of every section whose heading `name` names, in order (a page may
    have two `## Options`)."""
    want = title_key(name)
    heads = headings(text, marked)
    lines: list[str] = []
    out = []
    for i, (at, level, title) in enumerate(heads):
        if want not in {title_key(t) for t in (title, _NUMBER.sub("", title), *title.split(": ", 1))}:
            continue
        end = next((a for a, lv, _ in heads[i + 1 :] if lv <= level), text.count("\n") + 1)
        last = end  # the line before the next section's heading, 1-based
        lines = lines or text.split("\n")
        while last > at + 1 and not lines[last - 1].strip():  # its blank lines at the end left out
            last -= 1
        out.append((at + 1, last))
    return out


def title_key(title: str) -> str:
    """A heading's title as a name of it is compared: letters and digits, in any case (a
    GitHub or Obsidian anchor, `action-items`, names `Action items`), accents off as a
    search's words (`Marz` names `März`)."""
    return fold(_NOT_WORD.sub("", title).casefold())


_NOT_WORD = re.compile(r"[\W_]+")
# A section's number before its title: `3`, `2.1`, `2.1.`, `IV.`.
_NUMBER = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVXLC]+\.)\s+")
