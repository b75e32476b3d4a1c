"""`[[wiki links]]` as Obsidian and other notes apps write them: `[[Note]]`,
`[[folder/Note]]`, `[[Note#Heading]]`, `[[Note|shown text]]`, `![[picture.png]]`.

A link names a note by its file name, without `.md`, in any case and any folder of the
collection: the note in the linking note's own folder first, then the one nearest the
collection's top (Obsidian's "shortest path"). The page finds it when the link is
followed, by a path filter of `ls` (one SQL scan of the collection's paths).
"""

from __future__ import annotations

import posixpath
import re

from gnod.config import NOTE_SUFFIX

# `!`, the target (no brackets, `|` or `#`), a `#heading`, a `|label`.
LINK = re.compile(r"(!?)\[\[([^\[\]|#\n]+)(#[^\[\]|\n]*)?(?:\|([^\[\]\n]+))?\]\]")
# Characters a path glob reads as its own: each is written as a class of itself.
_GLOB_SPECIAL = frozenset("*?[]{}\\")


def label(m: re.Match[str]) -> str:
    """What a link shows: its label, else its target and heading as Obsidian shows them."""
    if m[4]:
        return m[4].strip()
    heading = (m[3] or "#").lstrip("#").strip()
    return m[2].strip() + (f" › {heading}" if heading else "")


def patterns(name: str) -> list[str]:
    """The path globs (as `filters.path` takes them) of the files a link's `name` may
    be, in any case: `name` itself (`diagram.png`) and its note, `name.md`, in any
    folder, or under the folders it names (`projects/Plan`)."""
    glob = "".join(_any_case(c) for c in name.strip().strip("/"))
    return [f"**/{glob}", f"**/{glob}{NOTE_SUFFIX}"]


def _any_case(c: str) -> str:
    if c in _GLOB_SPECIAL:
        return f"[{c}]"
    low, up = c.lower(), c.upper()
    return f"[{low}{up}]" if low != up and len(low) == len(up) == 1 else c


def chosen(name: str, folder: str, paths: list[str]) -> str | None:
    """The path among `paths` (a collection's, matching `patterns`) that a link in a note
    of `folder` names: one whose last parts are `name`'s, or `name.md`'s, in any case;
    in `folder` first, then the fewest folders deep, then the first by path."""
    want = name.strip().strip("/").casefold()
    fits = [
        p for p in paths if any(p.casefold() == w or p.casefold().endswith("/" + w) for w in (want, want + NOTE_SUFFIX))
    ]
    if not fits:
        return None
    return min(fits, key=lambda p: (posixpath.dirname(p) != folder, p.count("/"), p))
