"""What an Obsidian vault says of its notes: a folder holding `.obsidian/` (the vault's
settings) is one, and so is each folder inside it. Obsidian names a note by its file,
whatever its first heading says, and its search leaves out the vault's Excluded files
(`userIgnoreFilters` in `.obsidian/app.json`): a folder's path such as `Templates/`, or
the start of a path."""

from __future__ import annotations

import json
import os
import re

SETTINGS = ".obsidian"  # the folder that makes a vault
_APP = "app.json"  # the vault's settings, its Excluded files among them
_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


def vault_root(folder: str) -> str | None:
    """The vault `folder` is, or is in; None outside any."""
    at = os.path.abspath(folder)
    while True:
        if os.path.isdir(os.path.join(at, SETTINGS)):
            return at
        parent = os.path.dirname(at)
        if parent == at:
            return None
        at = parent


def named_by_files(root: str) -> bool:
    """Whether the Markdown notes under `root` are named by their files' names: it is a
    vault, or in one (`# Meeting notes` titled each meeting's note)."""
    return vault_root(root) is not None


def excluded_globs(root: str) -> list[str]:
    """The vault's Excluded files under `root`, as exclude globs anchored there (a
    collection's): each a path's start, `Templates/` or `Archive/old`, matching as
    Obsidian's search does. A /regular expression/ is not read; nor are settings that
    cannot be read (the vault's files are still indexed then), nor one that covers all
    of `root`: a folder added as a collection is the user's choice."""
    vault = vault_root(root)
    if vault is None:
        return []
    try:
        with open(os.path.join(vault, SETTINGS, _APP), encoding="utf-8") as f:
            filters = json.load(f).get("userIgnoreFilters", [])
    except (OSError, ValueError, AttributeError):
        return []
    inside = os.path.relpath(os.path.abspath(root), vault)
    base = "" if inside == "." else inside.replace(os.sep, "/") + "/"
    out = []
    for start in filters if isinstance(filters, list) else []:
        if not isinstance(start, str) or not start.strip() or (len(start) > 1 and start[0] == start[-1] == "/"):
            continue
        start = start.strip().lstrip("/")
        if start.startswith(base) and (rest := start[len(base) :]):
            out.append("/" + _GLOB_SPECIAL.sub(r"\\\1", rest) + "*")
    return out
