"""The user's own git ignore file (`core.excludesFile`), which git and ripgrep apply in
every repository beside its .gitignore files and .git/info/exclude.

Where the user's git configuration (~/.gitconfig, or $XDG_CONFIG_HOME/git/config) names
none, it is $XDG_CONFIG_HOME/git/ignore (~/.config/git/ignore), as git's own default.
Only the `[core]` section's `excludesFile` is read; the file is looked up again whenever
a configuration file changes. It sits outside the collections, so gnod's watcher does not
see it change: an edit takes effect at the next walk (`gnoctl update`, a start).
"""

from __future__ import annotations

import os
import re

# `[core]`, `[Core]`: a section header; `[remote "origin"]` is another section.
_SECTION = re.compile(r"\s*\[\s*([A-Za-z0-9.-]+)(?:\s+\"[^\"]*\")?\s*\]")
_EXCLUDES_FILE = re.compile(r"\s*excludesfile\s*=\s*(.*)$", re.IGNORECASE)

_found: tuple[tuple[tuple[str, int, int], ...], str] | None = None


def _config_dir() -> str:
    return os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")


def _config_files() -> list[str]:
    """git's global configuration files, in the order git reads them (the last wins)."""
    return [os.path.join(_config_dir(), "git", "config"), os.path.join(os.path.expanduser("~"), ".gitconfig")]


def _value(raw: str) -> str:
    """A git config value: quotes removed, a comment after it cut."""
    out, quoted = [], False
    for ch in raw.strip():
        if ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
    return "".join(out).strip()


def _named(path: str) -> str | None:
    """The excludesFile a configuration file names, if it does."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    section, named = "", None
    for line in lines:
        if m := _SECTION.match(line):
            section = m.group(1).lower()
        elif section == "core" and (m := _EXCLUDES_FILE.match(line)):
            named = _value(m.group(1)) or None
    return named


def user_file() -> str:
    """The path of the user's excludes file (it may not exist)."""
    global _found
    stamps = []
    for path in _config_files():
        try:
            st = os.stat(path)
            stamps.append((path, st.st_mtime_ns, st.st_size))
        except OSError:
            continue
    key = tuple(stamps)
    if _found is not None and _found[0] == key:
        return _found[1]
    named = None
    for path, _, _ in stamps:
        named = _named(path) or named
    found = os.path.expanduser(named) if named else os.path.join(_config_dir(), "git", "ignore")
    _found = (key, found)
    return found
