"""Minimal edits of a JSON (or JSON-with-comments) file: one member set or removed, the
rest of the text as the user wrote it.

MCP clients keep their servers in files people edit by hand (Zed's settings, VS Code's
mcp.json: comments, trailing commas, their own indentation), so a parse-and-dump would
lose what they wrote. Instead the text is read with the comments blanked out (same
offsets), `json` finds each member's span, and only the spans of our member change.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_COMMENT = re.compile(_STRING + r"|//[^\n]*|/\*[\s\S]*?\*/")
_TRAILING_COMMA = re.compile(_STRING + r"|,(?=\s*[}\]])")
_WS = re.compile(r"[ \t\r\n]*")
_DECODER = json.JSONDecoder()
_DEFAULT_UNIT = "  "


class JsoncError(ValueError):
    """The text is not the JSON it should be (the message says where)."""


@dataclass
class _Member:
    key: str
    key_start: int
    value_start: int
    value_end: int
    comma: int | None  # the comma after the value, if any (a trailing one too)
    value: Any


@dataclass
class _Object:
    open: int
    close: int
    members: list[_Member]

    def get(self, key: str) -> _Member | None:
        """The member a JSON parser keeps: the last of that name."""
        return next((m for m in reversed(self.members) if m.key == key), None)


class _Text:
    """The text, and two views of it with the same offsets: comments blanked (to see
    commas), and trailing commas blanked too (what `json` can decode)."""

    def __init__(self, text: str, comments: bool) -> None:
        self.text = text
        self.blank = _COMMENT.sub(_blank_comment, text) if comments else text
        self.plain = _TRAILING_COMMA.sub(_blank_comma, self.blank) if comments else text
        self.nl = "\r\n" if "\r\n" in text else "\n"

    def skip(self, i: int) -> int:
        return _skip(self.plain, i)

    def object(self, open: int) -> _Object:
        members = []
        i = self.skip(open + 1)
        while self.plain[i] != "}":
            key, after_key = _DECODER.raw_decode(self.plain, i)
            start = self.skip(self.skip(after_key) + 1)  # past the colon
            value, end = _DECODER.raw_decode(self.plain, start)
            after = _skip(self.blank, end)
            comma = after if self.blank[after] == "," else None
            members.append(_Member(key, i, start, end, comma, value))
            i = self.skip(comma + 1) if comma is not None else self.skip(end)
        return _Object(open, i, members)

    def root(self) -> _Object | None:
        i = self.skip(0)
        return self.object(i) if i < len(self.plain) else None

    def unit(self, root: _Object) -> str:
        """The file's indentation step, read from the top object's first member."""
        if not root.members or not _starts_line(self.text, root.members[0].key_start):
            return _DEFAULT_UNIT
        outer, inner = _indent(self.text, root.open), _indent(self.text, root.members[0].key_start)
        return inner[len(outer) :] if inner.startswith(outer) and len(inner) > len(outer) else _DEFAULT_UNIT


def _skip(s: str, i: int) -> int:
    """The first offset from `i` on that is not JSON whitespace."""
    m = _WS.match(s, i)
    return m.end() if m else i


def _blank_comment(m: re.Match) -> str:
    s = m.group()
    return s if s.startswith('"') else re.sub(r"[^\n]", " ", s)


def _blank_comma(m: re.Match) -> str:
    return " " if m.group() == "," else m.group()


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _starts_line(text: str, pos: int) -> bool:
    return not text[_line_start(text, pos) : pos].strip(" \t")


def _indent(text: str, pos: int) -> str:
    start = _line_start(text, pos)
    line = text[start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _render(value: Any, indent: str, unit: str, nl: str) -> str:
    """Objects one member per line at the file's indentation; arrays and scalars inline."""
    if not isinstance(value, dict) or not value:
        return _dumps(value)
    inner = indent + unit
    body = ("," + nl).join(f"{inner}{_dumps(k)}: {_render(v, inner, unit, nl)}" for k, v in value.items())
    return "{" + nl + body + nl + indent + "}"


def _nest(path: list[str], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _parse(text: str, comments: bool) -> tuple[_Text, dict]:
    t = _Text(text, comments)
    if not t.plain.strip():
        return t, {}
    try:
        value = json.loads(t.plain)
    except json.JSONDecodeError as e:
        raise JsoncError(f"{e.msg} (line {e.lineno}, column {e.colno})") from None
    if not isinstance(value, dict):
        raise JsoncError("the top level is not an object")
    return t, value


def load(text: str, comments: bool) -> dict:
    """The file's top-level object ({} for an empty file); JsoncError when it is not valid."""
    return _parse(text, comments)[1]


def _parent(t: _Text, root: _Object, path: list[str]) -> tuple[_Object, int]:
    """The deepest existing object on `path` and how many keys of it exist."""
    obj = root
    for depth, key in enumerate(path[:-1]):
        member = obj.get(key)
        if member is None:
            return obj, depth
        if not isinstance(member.value, dict):
            raise JsoncError(f"{'.'.join(path[: depth + 1])} is not an object")
        obj = t.object(member.value_start)
    return obj, len(path) - 1


def put(text: str, path: list[str], value: Any, comments: bool) -> str:
    """`text` with the member at `path` set to `value`, creating the objects on the way."""
    t, _ = _parse(text, comments)
    root = t.root()
    if root is None:
        head = text.rstrip() + t.nl if text.strip() else ""
        return head + _render(_nest(path, value), "", _DEFAULT_UNIT, t.nl) + t.nl
    obj, depth = _parent(t, root, path)
    unit = t.unit(root)
    member = obj.get(path[depth])
    if member is None:
        return _apply(text, _insert(t, obj, path[depth], _nest(path[depth + 1 :], value), unit))
    one_line = "\n" not in text[obj.open : obj.close]
    new = _dumps(value) if one_line else _render(value, _indent(text, member.key_start), unit, t.nl)
    return _apply(text, [(member.value_start, member.value_end, new)])


def _insert(t: _Text, obj: _Object, key: str, value: Any, unit: str) -> list[tuple[int, int, str]]:
    """Add a member after the last one, in the object's own layout (one line, or one member
    per line at its members' indentation, keeping a trailing comma's style)."""
    text, last = t.text, (obj.members[-1] if obj.members else None)
    if last is not None and "\n" not in text[obj.open : obj.close]:
        return [(last.value_end, last.value_end, f", {_dumps(key)}: {_dumps(value)}")]
    first = obj.members[0].key_start if obj.members else None
    base = _indent(text, obj.open)
    indent = _indent(text, first) if first is not None and _starts_line(text, first) else base + unit
    at = obj.close
    while text[at - 1] in " \t\r\n":
        at -= 1
    trailing = last is not None and last.comma is not None
    new = t.nl + indent + f"{_dumps(key)}: {_render(value, indent, unit, t.nl)}" + ("," if trailing else "")
    if "\n" not in text[at : obj.close]:
        new += t.nl + base
    edits = []
    if last is not None and not trailing:
        if last.value_end == at:
            new = "," + new
        else:
            edits.append((last.value_end, last.value_end, ","))
    return [*edits, (at, at, new)]


def remove(text: str, path: list[str], comments: bool) -> str:
    """`text` without the member at `path` (unchanged when there is none)."""
    t, _ = _parse(text, comments)
    root = t.root()
    if root is None:
        return text
    obj, depth = _parent(t, root, path)
    member = obj.get(path[-1]) if depth == len(path) - 1 else None
    if member is None:
        return text
    return _apply(text, _cut(t, obj, member))


def _cut(t: _Text, obj: _Object, member: _Member) -> list[tuple[int, int, str]]:
    """The edits that take `member` out with its comma, leaving the lines around it whole."""
    text = t.text
    if member.comma is not None:
        own_line = _starts_line(text, member.key_start)
        start = _line_start(text, member.key_start) if own_line else member.key_start
        end = member.comma + 1
        while end < len(text) and text[end] in " \t":
            end += 1
        if own_line:
            end += len(t.nl) if text.startswith(t.nl, end) else 0
        return [(start, end, "")]
    start = member.key_start
    while text[start - 1] in " \t\r\n":
        start -= 1
    i = obj.members.index(member)
    if i > 0:
        comma = obj.members[i - 1].comma
        assert comma is not None  # a member follows it
        return [(comma, comma + 1, ""), (start, member.value_end, "")]
    if start == obj.open + 1 and not text[member.value_end : obj.close].strip():
        return [(obj.open + 1, obj.close, "")]  # the object is empty again: `{}`
    return [(start, member.value_end, "")]
