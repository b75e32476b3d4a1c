"""Search filters (collections, tags, dates, path, file type, language, sender): what they mean, checked once.

Each retriever applies them inside its own query (lexical: the engine's query, built in
gnod.search.lexical from these helpers; vectors: the SQL condition of `where`, over
`documents d` joined with `collections c`, gives the KNN's allowed ids), so a filtered
search still returns `limit` results when that many documents pass.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from datetime import date
from typing import Any, NamedTuple

from gnod.config import DOCUMENT_EXTENSIONS, FILE_TYPES, MEMBER_SEP
from gnod.search.constants import PATH_ANY_FOLDERS_READ, PATH_BRACE_GLOBS_MAX
from gnod.store.db import DAY_FUNCTION, FOLD_FUNCTION, NAMED_DAY_FUNCTION, TAG_FUNCTION
from gnod.store.documents import DATE_KEYS, sender_key
from gnod.store.tags import tag_key
from gnod.text.dates import NAMED_DAY_GLOBS
from gnod.text.language import normalize_language
from gnod.wire import said

# A document's date, in SQL: an ISO frontmatter date (its day: DATE_KEYS, the first one
# there), else the day its file's name starts with, else the file's mtime (UTC day); as
# lexical_index.document_day reads it.
_WRITTEN = "COALESCE(" + ", ".join(f"NULLIF(json_extract(d.metadata, '$.{k}'), '')" for k in DATE_KEYS) + ")"
_NAMED_MAY = " OR ".join(f"d.rel_path GLOB '{glob}'" for glob in NAMED_DAY_GLOBS)
_NAMED = f"(CASE WHEN {_NAMED_MAY} THEN {NAMED_DAY_FUNCTION}(d.rel_path) END)"
DOC_DATE = (
    f"(CASE WHEN {_WRITTEN} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' "
    f"THEN substr({_WRITTEN}, 1, 10) "
    f"ELSE coalesce({DAY_FUNCTION}({_WRITTEN}), {_NAMED}, date(d.mtime_ns / 1000000000, 'unixepoch')) END)"
)


NOT = "!"  # before a path glob: what it matches is left out, as in ripgrep's `-g '!tests/'`


@dataclass(frozen=True, slots=True)
class Filter:
    """Which documents a search may return; empty fields filter nothing."""

    collections: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # every one among the frontmatter tags (case-insensitive)
    since: str | None = None  # ISO day: the document's date ≥
    until: str | None = None  # ISO day: the document's date ≤
    path: tuple[str, ...] = ()  # globs over the path inside its collection: any of them; `!GLOB`: none of those
    types: tuple[str, ...] = ()  # config.FILE_TYPES names: a file of any of them (and of `path`)
    lang: str | None = None  # a Snowball name once resolved; an ISO code is accepted
    sender: str | None = None  # part of the frontmatter `from` (a message's "Name <address>"), any case


NO_FILTER = Filter()


class FilterError(ValueError):
    """A filter value the index cannot use; the message is meant for a person."""


def resolve(f: Filter) -> Filter:
    """`f` with its language as the index stores it (a Snowball name); FilterError for a
    value that would silently match nothing (an impossible day, an unclosed `[` in the
    glob, a file type of no name known, an empty tag)."""
    for name, day in (("since", f.since), ("until", f.until)):
        try:
            if day is not None:
                date.fromisoformat(day)
        except ValueError:
            raise FilterError(f"{name}: {day} is not a day of the calendar (YYYY-MM-DD)") from None
    for glob in f.path:
        _check_glob(glob)
    types = tuple(dict.fromkeys(map(type_named, f.types)))
    unknown = [t for t in types if t not in FILE_TYPES and not (t[:1] == "." and _EXTENSION.fullmatch(t[1:]))]
    if unknown:
        near = _near(unknown[0].lower())
        meant = f"did you mean {said(near)}? " if near else ""
        dotted = "." + unknown[0].strip().lower()
        alone = (
            f"; files of an extension no type holds, with its dot: {said(dotted)}"
            if _EXTENSION.fullmatch(dotted[1:])
            else ""
        )
        raise FilterError(f"type: no file type named {said(unknown[0])} ({meant}types: {', '.join(FILE_TYPES)}{alone})")
    # `--tag work,legal`: both, as two --tag say (no tag holds a comma: tags.listed).
    f = replace(f, types=types, tags=tuple(part for tag in f.tags for part in tag.split(",")))
    if any(not tag.strip("# ") for tag in f.tags):
        raise FilterError("tag: empty")
    if f.sender is not None and not f.sender.strip():
        raise FilterError("from: empty")
    if f.since and f.until and f.since > f.until:
        raise FilterError(f"since {f.since} is after until {f.until}: no document can match")
    if f.lang is None:
        return f
    try:
        lang = normalize_language(f.lang)
    except ValueError as e:
        raise FilterError(f"lang: {e}") from None
    return replace(f, lang=lang)


# An extension → the file type holding it (`png` → image, `eml` → mail, `yml` → yaml),
# where no type is named so: the first in FILE_TYPES' order.
_TYPE_OF_EXTENSION = {
    glob[2:].lower(): name
    for name, globs in reversed(FILE_TYPES.items())
    for glob in globs
    if glob.startswith("*.") and "*" not in glob[2:]
}


# A language's, format's or program's own name → the file type of its files (`-t python`,
# `-t excel` were no type).
_TYPE_OF_NAME = {
    "python": "py",
    "javascript": "js",
    "typescript": "ts",
    "golang": "go",
    "csharp": "cs",
    "c#": "cs",
    "c++": "cpp",
    "shell": "sh",
    "bash": "sh",
    "assembly": "asm",
    "makefile": "make",
    "dockerfile": "docker",
    "markdown": "md",
    "restructuredtext": "rst",
    "asciidoc": "adoc",
    "latex": "tex",
    "bibtex": "tex",
    "biblatex": "tex",
    "text": "txt",
    "jupyter": "ipynb",
    "notebook": "ipynb",
    "email": "mail",
    "mbox": "mail",  # a mailbox's messages
    "outlook": "mail",
    "word": "docx",
    "excel": "xlsx",
    "powerpoint": "pptx",
    "spreadsheet": "xlsx",
    "ical": "calendar",
    "icalendar": "calendar",
}


def type_named(given: str) -> str:
    """A `-t` value as FILE_TYPES names it: a type's name, a language's or a program's
    (`python`, `excel`), or an extension (with its dot or not, in any case: `.PDF`,
    `png`) as the type holding it; an extension no type holds, given with its dot, as
    itself (`.litmus`: its files alone; without its dot, `cobol` may be a language's
    name, `pyhton` a mistyped one: an error says so); else as given."""
    name = given.strip().removeprefix(".").lower()
    if name in FILE_TYPES:
        return name
    known = _TYPE_OF_NAME.get(name) or _TYPE_OF_EXTENSION.get(name)
    if known is not None:
        return known
    return "." + name if given.strip().startswith(".") and _EXTENSION.fullmatch(name) else given


_EXTENSION = re.compile(r"[a-z0-9][a-z0-9_+-]*")


def _near(name: str) -> str | None:
    """The type's name, or a language's or a program's (`python`), that `name` may be
    mistyped for."""
    near = difflib.get_close_matches(name, [*FILE_TYPES, *_TYPE_OF_NAME], 1)
    return near[0] if near else None


def _check_glob(glob: str) -> None:
    """FilterError for a path glob that names nothing or cannot be read."""
    if not glob.removeprefix(NOT):
        raise FilterError(f"path: {said(glob)} names no path")
    if _unclosed_class(glob):
        raise FilterError(f"path: {said(glob)} opens a [character class] it does not close")
    if _group_end(glob, glob.find("{")) < 0:
        raise FilterError(f"path: {said(glob)} opens a {{group,of,alternatives}} it does not close")
    if len(braces(glob)) > PATH_BRACE_GLOBS_MAX:
        raise FilterError(f"path: {said(glob)} stands for more than {PATH_BRACE_GLOBS_MAX} globs")


def globs(f: Filter) -> tuple[list[str], list[str]]:
    """The path globs a document must match one of (none: any path), and those it must
    match none of (their `!` taken off), each `{a,b}` group read as its alternatives."""
    taken = [b for g in f.path if not g.startswith(NOT) for b in braces(g)]
    return taken, [b for g in f.path if g.startswith(NOT) for b in braces(g[1:])]


def type_globs(f: Filter) -> list[str]:
    """The path globs of the file types `f` asks for, a document matching one of them
    (none: any file); a converted format's extension in upper case too, as scanners and
    Windows write them (SCAN0001.PDF, IMG_2041.JPG), where in code the case may say
    another language (`.C` is C++)."""
    found = [glob for name in f.types for glob in _type_globs(name)]
    upper = [g.upper() for g in found if g.startswith("*.") and g[1:] in DOCUMENT_EXTENSIONS]
    return list(dict.fromkeys(found + upper))


def _type_globs(name: str) -> tuple[str, ...]:
    """A type's path globs; an extension no type holds (type_named: `.litmus`), its own
    files', in lower or upper case."""
    return (f"*{name}", f"*{name.upper()}") if name.startswith(".") else FILE_TYPES[name]


def braces(glob: str) -> list[str]:
    """The globs `glob` stands for, each `{a,b}` group read as one of its alternatives, as
    ripgrep and the shells read them (`drivers/usb/{serial,core}/**`, `*.{c,h}`; groups
    nest): SQLite's GLOB has no such groups. A glob whose group is not closed is itself."""
    start = glob.find("{")
    end = _group_end(glob, start)
    if start < 0 or end < 0:
        return [glob]
    alternatives, depth, at = [], 0, start + 1
    for i in range(start + 1, end):
        depth += {"{": 1, "}": -1}.get(glob[i], 0)
        if glob[i] == "," and depth == 0:
            alternatives.append(glob[at:i])
            at = i + 1
    alternatives.append(glob[at:end])
    head, tail = glob[:start], glob[end + 1 :]
    return list(dict.fromkeys(b for alt in alternatives for b in braces(head + alt + tail)))


def _group_end(glob: str, start: int) -> int:
    """Where the `{` at `start` closes (its `}`), or -1 where it does not; `start` -1
    (no group) gives the glob's length."""
    if start < 0:
        return len(glob)
    depth = 0
    for i in range(start, len(glob)):
        depth += {"{": 1, "}": -1}.get(glob[i], 0)
        if depth == 0:
            return i
    return -1


def _unclosed_class(glob: str) -> bool:
    """Whether `glob` has a `[` with no `]` to close it (SQLite's GLOB: a `]` first in the
    class, after an optional `^`, is one of its characters)."""
    i = glob.find("[")
    while i >= 0:
        j = i + 1 + (glob[i + 1 : i + 2] == "^")
        j += glob[j : j + 1] == "]"
        end = glob.find("]", j)
        if end < 0:
            return True
        i = glob.find("[", end + 1)
    return False


def regex_literal(text: str) -> str:
    """`text` as a regex (tantivy's syntax) that matches exactly it."""
    return "".join("\\" + c if c in _REGEX_META else c for c in text)


def day_number(day: str) -> int:
    """An ISO day as the lexical index stores dates (date.toordinal)."""
    return date.fromisoformat(day).toordinal()


# Characters with a meaning in a regex (tantivy's regex syntax) outside a class, and inside one.
_REGEX_META = frozenset("\\.+*?()|[]{}^$#&-~")
_CLASS_META = frozenset("\\[]&~-^")


class GlobAtom(NamedTuple):
    regex: str  # what it matches: one character, or any run of them for `*`
    char: str | None  # the character itself when it is a literal one


def glob_atoms(glob: str) -> list[GlobAtom]:
    """A GLOB (SQLite's: `*` and `?` match `/` too, `[...]` and `[^...]` are classes,
    case-sensitive) as regex pieces, in order: each matches one character, or a run."""
    out: list[GlobAtom] = []
    i, n = 0, len(glob)
    while i < n:
        ch = glob[i]
        if ch == "*":
            out.append(GlobAtom(".*", None))
        elif ch == "?":
            out.append(GlobAtom(".", None))
        elif ch == "[":
            j = i + 1
            negate = glob[j : j + 1] == "^"
            j += negate
            members: list[str] = []
            if glob[j : j + 1] == "]":  # a `]` first is one of the class's characters
                members.append("\\]")
                j += 1
            while glob[j] != "]":  # resolve() refused an unclosed class
                c = glob[j]
                if c == "-" and members and glob[j + 1] != "]":
                    members.append("-")
                else:
                    members.append("\\" + c if c in _CLASS_META else c)
                j += 1
            out.append(GlobAtom("[" + ("^" if negate else "") + "".join(members) + "]", None))
            i = j
        else:
            out.append(GlobAtom("\\" + ch if ch in _REGEX_META else ch, ch))
        i += 1
    return out


# `**/` where it starts the glob or follows a `/`.
_ANY_FOLDERS = re.compile(r"(?:^|(?<=/))\*\*/")
_WILDCARD = re.compile(r"[*?\[]")


def path_globs(glob: str) -> list[str]:
    """The path glob as SQLite's GLOB reads it, once for each way its `**/` may stand for
    no folder at all: in gitignore's globs and ripgrep's `**/Kconfig` is also the
    Kconfig at the top. (`*` runs over `/` here, so `**/` is otherwise `*/`.) A path
    without wildcards is also a folder, as git reads it (`drivers/usb`: the file of that
    name, or what the folder holds), or a mailbox or archive (`mail/archive.mbox`: its
    documents, `mail/archive.mbox!/3.eml`); one that ends in `/` is a folder only."""
    if glob.endswith("/"):
        return [glob + "*"]
    if _WILDCARD.search(glob) is None:
        return [glob, glob + "/*", glob + MEMBER_SEP + "*"]
    pieces = _ANY_FOLDERS.split(glob)
    if len(pieces) == 1:
        return [glob]
    out = [pieces[0]]
    for i, piece in enumerate(pieces[1:]):
        ways = ("", "*/") if i < PATH_ANY_FOLDERS_READ else ("*/",)
        out = [head + way + piece for head in out for way in ways]
    return list(dict.fromkeys(out))


def glob_regex(glob: str, reverse: bool = False) -> str:
    """The glob as a regex matching the whole path; with `reverse`, the reversed path
    (each piece matches one character or a run, so reversing them reverses the match)."""
    atoms = glob_atoms(glob)
    return "".join(a.regex for a in (reversed(atoms) if reverse else atoms))


def active(f: Filter) -> bool:
    return bool(f.collections or f.tags or f.since or f.until or f.path or f.types or f.lang or f.sender)


def describe(f: Filter) -> str:
    """The active filters as the CLI names them: `path *.dts*, tag ops, since 2024-01-01`."""
    parts = [f"collection {', '.join(f.collections)}"] if f.collections else []
    parts += [f"tag {tag}" for tag in f.tags]
    parts += [f"{name} {value}" for name, value in (("since", f.since), ("until", f.until)) if value]
    parts += [f"path {glob}" for glob in f.path]
    parts += [f"type {name}" for name in f.types]
    parts += [f"{name} {value}" for name, value in (("lang", f.lang), ("from", f.sender)) if value]
    return ", ".join(parts)


def none_pass(f: Filter) -> str:
    """The note for a search that found nothing because no document passes `f`: else
    "no results" reads as "no such words there" (a file type not indexed, a typo in the path)."""
    return f"no indexed document passes the filters ({describe(f)}), whatever the query"


def where(f: Filter) -> tuple[str, list[Any]]:
    """(SQL condition over `d` and `c`, its arguments); "1" when nothing is filtered."""
    parts: list[str] = []
    args: list[Any] = []
    if f.collections:
        parts.append(f"c.name IN ({','.join('?' * len(f.collections))})")
        args += list(f.collections)
    for tag in f.tags:
        parts.append(f"{TAG_FUNCTION}(d.metadata, ?)")
        args.append(tag_key(tag))
    if f.since:
        parts.append(f"{DOC_DATE} >= ?")
        args.append(f.since)
    if f.until:
        parts.append(f"{DOC_DATE} <= ?")
        args.append(f.until)
    taken, left_out = globs(f)
    for each, sql in ((taken, "({})"), (type_globs(f), "({})"), (left_out, "NOT ({})")):
        readings = [g for glob in each for g in path_globs(glob)]
        if readings:
            parts.append(sql.format(" OR ".join(["d.rel_path GLOB ?"] * len(readings))))
            args += readings
    if f.lang:
        parts.append("d.language = ?")
        args.append(f.lang)
    if f.sender:  # `from` is a list of senders, or one (json_each reads a lone string as one)
        parts.append(
            f"EXISTS (SELECT 1 FROM json_each(d.metadata, '$.from') s WHERE instr({FOLD_FUNCTION}(s.value), ?) > 0)"
        )
        args.append(sender_key(f.sender))  # as documents.senders_of gives them
    return (" AND ".join(parts) or "1"), args
