"""Documents, passages and answers as HTML: everything from a document is escaped.

Markdown goes through markdown-it with raw HTML off (a document cannot put markup or
script in the page); code is highlighted by Pygments into CSS classes (`code_css`).
A document's lines are those gnod stores (`get`), so the hit's line from a search is
found in the rendered page: the block holding it gets `id="hit"`.
"""

from __future__ import annotations

import os
import posixpath
import re
from functools import cache
from urllib.parse import unquote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name, get_lexer_for_filename
from pygments.util import ClassNotFound

from gnoctl.web import wiki
from gnoctl.web.urls import doc_href, file_href, wiki_href
from gnod.config import CONVERTED

# Shown as lines of text, not as Markdown.
PLAIN = frozenset({".txt", ".text", ".log", ".rtf"})
# Files gnod stores as Markdown (written so, or converted): rendered. reStructuredText is
# not: read as Markdown, a literal block's `---` line made the block a heading, and its
# directives and labels were text; it is shown as its source, highlighted (Pygments).
MARKDOWN = frozenset(
    {
        ".md",
        ".markdown",
        ".mdx",
        ".mkd",
        ".pdf",
        ".docx",
        ".odt",
        ".xlsx",
        ".pptx",
        ".epub",
        ".html",
        ".htm",
        ".json",
        ".ipynb",
        ".srt",
        ".vtt",
        ".ics",
        ".eml",
        ".org",
    }
)
IMAGES = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".gif", ".bmp"})  # their OCR text
# A table whose rows are its file's lines: shown as one (its rows were lines of pipes, wider
# than a phone), numbered as the file's lines, under its header row wherever the window starts.
TABLES = frozenset(CONVERTED["csv"])
_CELL_SEP = re.compile(r"(?<!\\) \| ")
CITATION = re.compile(r"\[(\d{1,2}(?:\s*,\s*\d{1,2})*)\]")
_FRONTMATTER_END = re.compile(r"^(---|\.\.\.)\s*$")


# What a passage of Markdown shows as its words: a heading's `#`s, bold's `**` (a mail's
# `**From:** … · **To:**`, its `# Subject` were shown as typed).
_MARKUP_RE = re.compile(r"^#{1,6}[ \t]+|\*\*", re.M)


def passage(text: str, matches: list[list[int]], markdown: bool = False) -> Markup:
    """`text` escaped, the `[start, end)` character ranges gnod matched in <mark>; with
    `markdown`, without the marks of its headings and bold (_MARKUP_RE)."""
    drops = [m.span() for m in _MARKUP_RE.finditer(text)] if markdown else []

    def shown(a: int, b: int) -> Markup:
        """text[a:b] escaped, without the drops in it."""
        kept, at = [], a
        for start, end in drops:
            if start < b and end > at:
                kept.append(text[at : max(start, at)])
                at = min(max(end, at), b)
        kept.append(text[at:b])
        return escape("".join(kept))

    out, at = [], 0
    for start, end in sorted(matches):
        if start < at or end > len(text):
            continue
        out += [shown(at, start), Markup("<mark>"), shown(start, end), Markup("</mark>")]
        at = end
    out.append(shown(at, len(text)))
    return Markup("").join(out)


def kind_of(path: str) -> str:
    """How a document is shown: `markdown`, `table`, `code` or `plain`."""
    return _kind_of(os.path.splitext(path)[1].lower())


@cache
def _kind_of(ext: str) -> str:
    """`kind_of` by the extension: Pygments looks a name up through every lexer's patterns
    (2 ms, for each hit of each search as you type)."""
    if ext in MARKDOWN or ext in IMAGES:
        return "markdown"
    if ext in TABLES:
        return "table"
    if ext in PLAIN or not ext:
        return "plain"
    try:
        get_lexer_for_filename("x" + ext)
    except ClassNotFound:
        return "plain"
    return "code"


# A tab's stops in a document shown with its line numbers: a browser counts them from
# the line's start, number and all (one tab of kernel code showed as 3 columns, two as 11).
TAB_COLUMNS = 8


def document(
    content: str,
    path: str,
    line: int | None,
    first: int = 1,
    collection: str | None = None,
    marks: tuple[str, ...] = (),
    header: str | None = None,
) -> Markup:
    """The document's HTML, the block (or line) holding `line` (1-based) marked `id="hit"`;
    `content` is its lines from `first` on (a long document's window). In Markdown of a
    `collection`, a link or picture by a relative path leads to that document's page or
    file (it led to /deploy.md, which this server does not know), and a `[[wiki link]]`
    to the note it names. `header`: a table's header row, for a window below it."""
    kind = kind_of(path)
    if kind == "table":
        return _table(content, line, first, header, marks)
    if kind == "code":
        return _code(content.expandtabs(TAB_COLUMNS), _lexer_for(path), first, line, numbers=True)
    if kind == "plain":
        return _plain(content.expandtabs(TAB_COLUMNS), line, first, marks)
    return _markdown(content, line, first, (collection, posixpath.dirname(path)) if collection else None, marks)


def _lexer_for(path: str):
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer()


def _code(text: str, lexer, first: int, line: int | None, numbers: bool = False) -> Markup:
    """Highlighted code whose first line is document line `first`; `line` marked."""
    hl = [line - first + 1] if line is not None and first <= line < first + text.count("\n") + 1 else []
    formatter = HtmlFormatter(
        cssclass="hl", hl_lines=hl, wrapcode=True, linenos="inline" if numbers else False, linenostart=first
    )
    html = highlight(text, lexer, formatter)
    if hl:
        html = html.replace('<span class="hll">', '<span class="hll" id="hit">', 1)
    return Markup(html)


def _plain(text: str, line: int | None, first: int = 1, marks: tuple[str, ...] = ()) -> Markup:
    rows = []
    for n, row in enumerate(text.split("\n"), first):
        mark = Markup(' class="hit" id="hit"') if n == line else Markup("")
        shown = passage(row, _spans(row, marks)) if n == line else row
        rows.append(Markup('<span{}><span class="ln">{}</span>{}</span>').format(mark, n, shown))
    return Markup('<pre class="plain">') + Markup("\n").join(rows) + Markup("</pre>")


def _table(content: str, line: int | None, first: int, header: str | None, marks: tuple[str, ...]) -> Markup:
    """A table's rows (gnod's Markdown rows of a CSV, each on its file's line) as an HTML
    table under its header row (the window's first line, or `header` for one starting
    below it: a deep hit's window was one paragraph of pipes), each row with its line's
    number, the row of `line` marked. A line holding no row (a blank one, a cell's line
    break) shows none."""
    rows = content.split("\n")
    # From the top, the first row is the header (after any blank lines the file opens with).
    at = next((i for i, r in enumerate(rows) if r.startswith("|")), None) if first == 1 else None
    head = rows[at] if at is not None else header
    out = [Markup('<table class="rows">')]
    if head:
        cells = Markup("").join(Markup("<th>{}</th>").format(c) for c in _cells(head))
        out.append(Markup('<thead><tr><th class="ln"></th>{}</tr></thead>').format(cells))
    out.append(Markup("<tbody>"))
    for i, row in enumerate(rows):
        n = first + i
        if i == at or not row.startswith("|"):
            continue
        hit = n == line
        shown = [passage(c, _spans(c, marks)) if hit else c for c in _cells(row)]
        cells = Markup("").join(Markup("<td>{}</td>").format(c) for c in shown)
        mark = Markup(' class="hit" id="hit"') if hit else Markup("")
        out.append(Markup('<tr{}><td class="ln">{}</td>{}</tr>').format(mark, n, cells))
    out.append(Markup("</tbody></table>"))
    return Markup("").join(out)


def _cells(row: str) -> list[str]:
    """A row's cells as gnod writes them (`| a | b |`, empty ones too), `\\|` back to `|`."""
    inner = row.removeprefix("| ").removesuffix(" |")
    return [c.strip().replace("\\|", "|") for c in _CELL_SEP.split(inner)]


def _frontmatter(text: str) -> tuple[str, int]:
    """(the frontmatter block, its line count) when `text` opens with a closed one."""
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if _FRONTMATTER_END.match(lines[i]):
                return "\n".join(lines[: i + 1]), i + 1
    return "", 0


def _markdown(
    text: str, line: int | None, first: int = 1, folder: tuple[str, str] | None = None, marks: tuple[str, ...] = ()
) -> Markup:
    front, skipped = _frontmatter(text) if first == 1 else ("", 0)
    out = []
    if front:
        marked = line is not None and line <= skipped
        attrs = Markup(' class="front hit" id="hit"') if marked else Markup(' class="front"')
        out.append(Markup("<pre{}>{}</pre>").format(attrs, front))
    before = first - 1 + skipped  # the document's lines before the Markdown parsed here
    env = {"hit": None if line is None else line - 1 - before, "first": before}
    md = _parser()
    tokens = md.parse("\n".join(text.split("\n")[skipped:]), env)
    _mark_words(tokens, _mark_hit(tokens, env["hit"]), marks)
    if folder is not None:
        _relink(tokens, *folder)
        _wikilinks(tokens, *folder)
    out.append(Markup(md.renderer.render(tokens, md.options, env)))
    return Markup("").join(out)


def _relink(tokens, collection: str, folder: str) -> None:
    """Links and pictures by a path relative to the document (`deploy.md`,
    `img/diagram.png`, `../guides/a.md#setup`) lead to that document of the collection:
    its page, or its file for a picture. A path out of the collection is left as it is."""
    for token in tokens:
        for t in token.children or ():
            name = "href" if t.type == "link_open" else "src" if t.type == "image" else None
            value = t.attrGet(name) if name else None
            if not isinstance(value, str) or urlsplit(value).scheme or value.startswith(("/", "#", "?")):
                continue
            path = posixpath.normpath(posixpath.join(folder, unquote(urlsplit(value).path)))
            if path.startswith("../") or path in (".", ".."):
                continue
            ref = f"{collection}/{path}"
            t.attrSet(name, file_href(ref) if name == "src" else doc_href(ref))


def _wikilinks(tokens, collection: str, folder: str) -> None:
    """`[[Note]]` in a note's text (not in code, nor in a link) is a link to the note of
    that name in the collection (gnoctl.web.wiki), showing its label or its name."""
    for token in tokens:
        if token.type != "inline" or not any(t.type == "text" and "[[" in t.content for t in token.children or ()):
            continue
        out: list[Token] = []
        depth = 0  # inside a link of the text's own
        for t in token.children:
            depth += t.type == "link_open"
            depth -= t.type == "link_close"
            if t.type != "text" or depth or "[[" not in t.content:
                out.append(t)
                continue
            at = 0
            for m in wiki.LINK.finditer(t.content):
                out.append(_text(t.content[at : m.start()]))
                opening = Token("link_open", "a", 1)
                opening.attrSet("href", wiki_href(collection, folder, m[2].strip()))
                opening.attrSet("class", "wiki")
                out += [opening, _text(wiki.label(m)), Token("link_close", "a", -1)]
                at = m.end()
            out.append(_text(t.content[at:]))
        token.children = [t for t in out if t.type != "text" or t.content]


def _text(content: str) -> Token:
    return Token("text", "", 0, content=content)


def _mark_hit(tokens, hit: int | None) -> Token | None:
    """Give the innermost block holding line `hit` (0-based) the hit's id: one that is
    shown (a tight list's items hold paragraphs that are never rendered); that block."""
    if hit is None:
        return None
    best = None
    for token in tokens:  # an inner block comes after its container: `<=` keeps the inner one
        block = (token.nesting == 1 and not token.hidden) or token.type in ("fence", "code_block", "hr")
        if block and token.map and token.map[0] <= hit < max(token.map[1], token.map[0] + 1):
            if best is None or token.map[1] - token.map[0] <= best.map[1] - best.map[0]:
                best = token
    if best is not None and best.type not in ("fence", "code_block"):  # code marks its own line
        best.attrJoin("class", "hit")
        best.attrSet("id", "hit")
    return best


def _mark_words(tokens: list[Token], block: Token | None, marks: tuple[str, ...]) -> None:
    """The search's matched words (`marks`) in <mark> where they stand in the hit's
    `block`: the page tinted the paragraph, the words not found in it."""
    if block is None or not marks or block.nesting != 1:
        return
    depth = 0
    for token in tokens[tokens.index(block) :]:
        depth += token.nesting
        if token.type == "inline" and token.children:
            token.children = [piece for child in token.children for piece in _marked(child, marks)]
        if depth == 0:
            return


def _marked(child: Token, marks: tuple[str, ...]) -> list[Token]:
    """A text token as text and marked pieces (any other token as it is)."""
    if child.type != "text":
        return [child]
    out, at = [], 0
    for start, end in _spans(child.content, marks):
        out += [_text(child.content[at:start]), Token("mark_open", "mark", 1), _text(child.content[start:end])]
        out.append(Token("mark_close", "mark", -1))
        at = end
    return [*out, _text(child.content[at:])] if out else [child]


def _spans(text: str, marks: tuple[str, ...]) -> list[list[int]]:
    """Where `marks` stand in `text` (in any case, whole words), apart from each other."""
    if not marks:
        return []
    pattern = "|".join(re.escape(m) for m in sorted(marks, key=len, reverse=True))
    found = re.finditer(rf"(?<!\w)(?:{pattern})(?!\w)", text, re.IGNORECASE)
    return [[m.start(), m.end()] for m in found]


def _fence(self, tokens, idx, options, env) -> str:
    token = tokens[idx]
    name = token.info.strip().split(" ")[0] if token.info else ""
    try:
        lexer = get_lexer_by_name(name, stripnl=False, ensurenl=False) if name else TextLexer()
    except ClassNotFound:
        lexer = TextLexer()
    # A fence's code starts on the line after its opening ``` (an indented block on its first line).
    start = token.map[0] + (2 if token.type == "fence" else 1) + env["first"] if token.map else 1
    hit = None if env["hit"] is None else env["hit"] + 1 + env["first"]
    return _code(token.content, lexer, start, hit)


@cache
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("fence", _fence)
    md.add_render_rule("code_block", _fence)
    return md


def answer(text: str, link) -> Markup:
    """The answer's Markdown, each `[n]` a link `link(n)` (None: left as text)."""
    html = _parser().render(text)

    def cite(m: re.Match) -> str:
        parts = []
        for n in (int(x) for x in m.group(1).split(",")):
            href = link(n)
            parts.append(f'<a class="cite" href="{escape(href)}">{n}</a>' if href else str(n))
        return "[" + ", ".join(parts) + "]"

    return Markup(CITATION.sub(cite, html))


@cache
def code_css() -> str:
    """Pygments' classes for light pages, and for dark ones under prefers-color-scheme."""
    light = HtmlFormatter(style="friendly").get_style_defs(".hl")
    dark = HtmlFormatter(style="github-dark").get_style_defs(".hl")
    return f"{light}\n@media (prefers-color-scheme: dark) {{\n{dark}\n}}\n"
