"""Org mode's structure (Emacs's outline notes, `.org`): its headlines, with their TODO
keyword, priority and tags apart from their titles, and its in-buffer settings
(`#+TITLE:`, `#+FILETAGS:`, `#+DATE:`). A `*` line inside a block (`#+BEGIN_SRC` …
`#+END_SRC`) is the block's text, as Org reads it. One pass over the lines: a file is
untrusted input."""

from __future__ import annotations

import re
from typing import NamedTuple

ORG_EXTENSIONS = frozenset({".org"})

_HEADLINE_RE = re.compile(r"(\*+)[ \t]+(.*)")
_KEYWORD_RE = re.compile(r"#\+(\w+):[ \t]*(.*)")
_BLOCK_RE = re.compile(r"[ \t]*#\+(begin|end)_(\w+)", re.I)
_TAGS_RE = re.compile(r"(?:^|[ \t]+)(:(?:[\w@#%]+:)+)$")
_PRIORITY_RE = re.compile(r"\[#[A-Za-z0-9]\][ \t]*")
_DAY_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
# The TODO keywords Org knows unless `#+TODO:` (or SEQ_TODO, TYP_TODO) names others.
DEFAULT_TODO = ("TODO", "DONE")
_TODO_SETTINGS = frozenset({"todo", "seq_todo", "typ_todo"})


class Headline(NamedTuple):
    line: int  # 0-based
    level: int  # its stars
    title: str  # without its TODO keyword, priority and tags
    tags: tuple[str, ...]


class Outline(NamedTuple):
    headlines: list[Headline]
    settings: dict[str, str]  # `#+KEY: value`, the key lower-case, the first of each


def outline(text: str) -> Outline:
    """The headlines and in-buffer settings of an Org text, outside its blocks."""
    raw: list[tuple[int, int, str]] = []
    settings: dict[str, str] = {}
    todo: list[str] = []
    block: str | None = None  # the name of the block the line is in
    for i, line in enumerate(text.split("\n")):
        if "#+" in line[:12] and (b := _BLOCK_RE.match(line)) is not None:
            kind, name = b[1].lower(), b[2].lower()
            if block is None and kind == "begin":
                block = name
            elif block == name and kind == "end":
                block = None
            continue
        if block is not None:
            continue
        if line.startswith("*") and (h := _HEADLINE_RE.fullmatch(line)) is not None:
            raw.append((i, len(h[1]), h[2].strip()))
        elif line.startswith("#+") and (k := _KEYWORD_RE.fullmatch(line)) is not None:
            key = k[1].lower()
            if key in _TODO_SETTINGS:
                todo += [w.split("(", 1)[0] for w in k[2].split() if w != "|"]
            else:
                settings.setdefault(key, k[2].strip())
    keywords = frozenset(todo or DEFAULT_TODO)
    return Outline([_headline(i, level, rest, keywords) for i, level, rest in raw], settings)


def _headline(line: int, level: int, rest: str, keywords: frozenset[str]) -> Headline:
    """A headline from what follows its stars: `TODO [#A] Title :tag:other:`."""
    tags: tuple[str, ...] = ()
    m = _TAGS_RE.search(rest)
    if m is not None:
        tags = tuple(t for t in m[1].split(":") if t)
        rest = rest[: m.start()]
    first, _, after = rest.partition(" ")
    if first in keywords:
        rest = after.lstrip()
    rest = _PRIORITY_RE.sub("", rest, count=1) if rest.startswith("[#") else rest
    return Headline(line, level, rest.strip(), tags)


def metadata(text: str) -> dict[str, object]:
    """What gno reads of an Org file as a note's frontmatter: its `title`, its `date` (a
    timestamp's day, `<2022-05-03 Tue>` → 2022-05-03), and its `tags`: `#+FILETAGS:`
    and every headline's (Org's tag inheritance makes them the file's)."""
    found = outline(text)
    meta: dict[str, object] = {}
    title = found.settings.get("title", "")
    if title:
        meta["title"] = title
    for key in ("date", "created"):
        value = found.settings.get(key, "")
        if value:
            day = _DAY_RE.search(value)
            meta[key] = day[0] if day else value
    filetags = re.split(r"[:\s]+", found.settings.get("filetags", ""))
    tags = [t for t in filetags if t] + [t for h in found.headlines for t in h.tags]
    if tags:
        meta["tags"] = list(dict.fromkeys(tags))
    return meta
