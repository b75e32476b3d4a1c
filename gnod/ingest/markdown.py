"""Markdown structure that ingestion needs: frontmatter, fenced code spans and the title.

Input is canonical text (see `canonical`), so lines are "\\n"-separated and have no
trailing whitespace. Frontmatter is parsed by a small tolerant reader for the subset
that notes actually use, rather than by a YAML dependency that would reject (raise
on) the malformed blocks real note collections are full of.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import tomllib

from gnod.config import extension
from gnod.text.fences import fenced_spans, in_spans
from gnod.text.headings import MARKDOWN_EXTENSIONS
from gnod.text.rst import RST_EXTENSIONS, section_titles

# Keys whose values are lists of labels however they were written.
LIST_KEYS = frozenset({"tags", "tag", "keywords", "aliases"})
# Those whose labels hold no space, a notes app's tags: a value without a comma lists
# them apart by spaces (Obsidian's `tags: meeting urgent`); a keyword may be words.
SPACED_KEYS = frozenset({"tags", "tag"})

_CLOSING_FENCE_RE = re.compile(r"\n(?:---|\.\.\.)(?:\n|\Z)")
_TOML_FENCE_RE = re.compile(r"\n\+\+\+(?:\n|\Z)")
_ITEM_RE = re.compile(r"[ \t]*-(?:[ \t]+(.*))?")
_INLINE_ITEM_RE = re.compile(r"""\s*(?:"[^"]*"|'[^']*'|[^,]+)""")
_BLOCK_SCALAR_RE = re.compile(r"[|>][+-]?")

_PLAIN_TEXT = frozenset({".txt", ".text"})  # prose that is not Markdown: a `#` line is rarely a heading
_H1_RE = re.compile(r"^ {0,3}#(?:[ \t]+(.*))?$", re.M)
# Markdown's other level-1 heading (setext): a line of text over a line of `=`.
_SETEXT_H1_RE = re.compile(r"^ {0,3}(\S.*)\n {0,3}=+[ \t]*$", re.M)
# Bump when extract_title gives another title for the same text: an index written
# before takes its prose documents' titles again (gnod.ingest.titles).
# 3: a Markdown note of an Obsidian vault is titled by its file's name (obsidian.named_by_files).
TITLE_RULES = 3


# Markdown, where a `#word` in the text is a tag (Obsidian, Logseq, Bear): `#meeting`,
# `#project/alpha`, not a heading's `# `, a link's `(#anchor)`, a URL's `/#part`, `#123`.
_INLINE_TAG_RE = re.compile(r"(?<!\S)#([\w/-]*[^\W\d_][\w/-]*)")
_CODE_SPAN_RE = re.compile(r"(`+)[^`]*?\1")


def inline_tags(body: str) -> list[str]:
    """The `#tags` written in a Markdown note's text, in order, once each (in any case),
    not in code (fenced or a `span`)."""
    fences = fenced_spans(body) if "```" in body or "~~~" in body else []
    found: dict[str, str] = {}
    for line_start, line in _lines_with_hash(body):
        if fences and in_spans(fences, line_start):
            continue
        for m in _INLINE_TAG_RE.finditer(_CODE_SPAN_RE.sub(" ", line)):
            tag = m[1].strip("/-")
            if tag:
                found.setdefault(tag.casefold(), tag)
    return list(found.values())


def _lines_with_hash(text: str) -> list[tuple[int, str]]:
    """(offset, line) of each line of `text` holding a `#`."""
    out, at = [], 0
    for line in text.split("\n"):
        if "#" in line:
            out.append((at, line))
        at += len(line) + 1
    return out


def split_frontmatter(text: str) -> tuple[dict, str, int]:
    """Split leading frontmatter off `text`: YAML's between `---` lines, or TOML's
    between `+++` lines (Hugo, Zola), read by tomllib.

    Returns (metadata, body after the closing fence, lines used by the block including
    both fences), or ({}, text, 0) when the text has no closed frontmatter block (or a
    TOML block that is not TOML).
    """
    if text.startswith("+++\n"):
        return _split_toml(text)
    if not text.startswith("---\n"):
        return {}, text, 0
    close = _CLOSING_FENCE_RE.search(text, 3)
    if close is None:
        return {}, text, 0
    meta = _parse_block(text[4 : close.start()].split("\n"))
    return meta, text[close.end() :], text.count("\n", 0, close.start()) + 2


def _split_toml(text: str) -> tuple[dict, str, int]:
    close = _TOML_FENCE_RE.search(text, 3)
    if close is None:
        return {}, text, 0
    try:
        table = tomllib.loads(text[4 : close.start()])
    except tomllib.TOMLDecodeError:
        return {}, text, 0
    # Zola keeps tags (and any taxonomy) in a [taxonomies] table: its keys are read as
    # top-level ones, where the block has none so named.
    taxonomies = table.get("taxonomies")
    items = [*table.items(), *(taxonomies.items() if isinstance(taxonomies, dict) else ())]
    meta: dict = {}
    for key, value in items:
        if key.lower() in meta:
            continue  # a taxonomy the top level names too
        if isinstance(value, list):
            value = [_toml_text(v) for v in value if not isinstance(v, dict | list)]
        elif isinstance(value, dict):
            continue  # a table ([params]): no key gno reads
        else:
            value = _toml_text(value)
        meta[key.lower()] = _labels(key.lower(), value) if key.lower() in LIST_KEYS else value
    return meta, text[close.end() :], text.count("\n", 0, close.start()) + 2


def _toml_text(value: object) -> str:
    """A TOML value as frontmatter's text: a date or time in ISO form, true as `true`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return str(value)


def _parse_block(lines: list[str]) -> dict:
    """Parse frontmatter lines, ignoring any line that does not fit the subset."""
    meta: dict = {}
    key: str | None = None  # the last key, which `- item` lines extend
    scalar: list[str] | None = None  # lines of the `|` / `>` block scalar being read
    bare: set[str] = set()  # keys written as `key:`, which are "" unless items follow
    for line in lines:
        if scalar is not None and (not line or line[0] in " \t"):
            scalar.append(line.strip())
            continue
        scalar = None
        item = _ITEM_RE.fullmatch(line)
        if item:
            if key is not None and isinstance(meta[key], list) and item[1]:
                meta[key].append(_unquote(item[1].strip()))
            continue
        pair = _key_value(line)
        if pair is None:
            key = None
            continue
        key = pair[0].lower()
        value = pair[1].strip()
        bare.discard(key)
        if not value:
            meta[key] = []
            bare.add(key)
        elif _BLOCK_SCALAR_RE.fullmatch(value):
            scalar = []
            meta[key] = (" " if value[0] == ">" else "\n", scalar)
        elif value.startswith("["):  # a list, its `]` maybe forgotten
            meta[key] = _inline_list(value[1:].removesuffix("]"))
        else:
            meta[key] = _unquote(value)
    for k, v in meta.items():
        if isinstance(v, tuple):
            v = v[0].join(v[1]).strip()
        if k in LIST_KEYS:
            v = _labels(k, v)
        elif k in bare and not v:
            v = ""
        meta[k] = v
    return meta


def _key_value(line: str) -> tuple[str, str] | None:
    """`key: value` (or `key:`) split at the first colon; None when the line is not one.

    String operations rather than a regex: a backtracking pattern for this shape is
    quadratic on long runs of blanks, and frontmatter comes from untrusted files."""
    name, colon, rest = line.partition(":")
    if not colon or not name or name[0].isspace() or name[0] in "#:-[{":
        return None
    if rest and rest[0] not in " \t":
        return None
    return name.rstrip(" \t"), rest


def _heading(body: str, plain: bool) -> str | None:
    """The first level-1 heading's text outside fenced code: `# Title`, or in Markdown
    `Title` over `===`; in plain text (`plain`) only a `#` line that opens it."""
    spans = fenced_spans(body)
    found: list[tuple[int, str]] = []
    for m in _H1_RE.finditer(body):
        if plain and body[: m.start()].strip():
            break
        text = _strip_closing_hashes((m[1] or "").strip()).strip()
        if text and not in_spans(spans, m.start()):
            found.append((m.start(), text))
            break
    if not plain:
        for m in _SETEXT_H1_RE.finditer(body, 0, found[0][0] if found else len(body)):
            text = m[1].strip()
            if not in_spans(spans, m.start()) and not _H1_RE.fullmatch(m[1]):
                found.append((m.start(), text))
                break
    return min(found)[1] if found else None


def _strip_closing_hashes(text: str) -> str:
    """Drop an ATX heading's closing `#`s (and the blanks before them): `Title ##` → `Title`.

    Linear in the length of the line, whatever its blanks (untrusted input)."""
    bare = text.rstrip("#")
    if bare == text:
        return text
    if bare and bare[-1] not in " \t":
        return text  # `C#` is part of the title
    return bare.rstrip(" \t")


def yaml_scalar(value: str) -> str:
    """A quoted YAML scalar that gno's frontmatter reader (which only strips the quotes)
    also reads unchanged whenever it can: single quotes, else double quotes, and JSON's
    escapes (valid in YAML's double quotes) only for a value holding ' and " or \\."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value and "\\" not in value:
        return f'"{value}"'
    return json.dumps(value, ensure_ascii=False)


def _unquote(value: str) -> str:
    """The value without its quotes; a quote left open (`"unterminated`) is dropped too."""
    if value[:1] in ('"', "'"):
        return value[1:-1] if len(value) >= 2 and value[-1] == value[0] else value[1:]
    return value


def _inline_list(inner: str) -> list[str]:
    items = (_unquote(item.strip()) for item in _INLINE_ITEM_RE.findall(inner))
    return [item for item in items if item]


def _as_list(value: str | list[str]) -> list[str]:
    if isinstance(value, list):
        return value
    return [part for part in (p.strip() for p in value.split(",")) if part]


def _labels(key: str, value: str | list[str]) -> list[str]:
    """The value of one of LIST_KEYS as a list: apart by commas, or by spaces for one
    of SPACED_KEYS written without a comma."""
    if key in SPACED_KEYS and isinstance(value, str) and "," not in value:
        return value.split()
    return _as_list(value)


def extract_title(meta: dict, body: str, filename: str, named: bool = False) -> str:
    """Title from frontmatter, else the first level-1 heading (`# Title`, or `Title` over
    a line of `=`; in reStructuredText the first section title), else the file name
    without its extension; a Markdown note `named` by its file (obsidian.named_by_files)
    skips the heading.

    Headings inside fenced code (shell `# comments`, Python) are not titles; in plain
    text, only a `#` heading on its first line is (the kernel's CREDITS was titled by a
    `# Don't add your name here…` comment on line 4,279).
    """
    title = meta.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    ext = extension(filename)
    if named and ext in MARKDOWN_EXTENSIONS:
        heading = None
    elif ext in RST_EXTENSIONS:  # its first section's title
        heading = next((title for _, _, title in section_titles(body)), None)
    else:
        heading = _heading(body, ext in _PLAIN_TEXT)
    if heading:
        return heading
    name = os.path.basename(filename)
    stem, suffix = os.path.splitext(name)
    # Kconfig.debug, CMakeLists.txt: a name that stands for its kind keeps what follows its dot.
    return stem if suffix.lower() == extension(name) else name
