"""Where a hit's link points: the `[client] editor_url` template and its named forms.

Clients (terminal hyperlinks in gnoctl, later the web page) turn a hit's absolute
path and line into a URL with it; gnod only checks the setting when it loads the
config, so a typo is reported like any other config error. Standard library only:
gnoctl's fast path imports it.
"""

from __future__ import annotations

import re

# Named templates. `file` is the default: every terminal opens it, and some (kitty) read
# the line from the fragment.
ALIASES = {
    "file": "file://{host}{path}#{line}",
    "vscode": "vscode://file{path}:{line}",
    "vscode-insiders": "vscode-insiders://file{path}:{line}",
    "vscodium": "vscodium://file{path}:{line}",
    "cursor": "cursor://file{path}:{line}",
    "idea": "idea://open?file={path}&line={line}",
    "macvim": "mvim://open?url=file://{path}&line={line}",
    "textmate": "txmt://open?url=file://{path}&line={line}",
}
DEFAULT = "file"
PLACEHOLDERS = ("path", "line", "host")
_FIELD = re.compile(r"\{([^{}]*)\}")


def template(value: str | None) -> str:
    """The template a setting names: an alias, a template of its own, or the default."""
    value = value or DEFAULT
    return ALIASES.get(value, value)


def check(value: str) -> None:
    """ValueError unless `value` is an alias or a template with {path} and known fields."""
    if value in ALIASES:
        return
    fields = _FIELD.findall(value)
    unknown = sorted(set(fields) - set(PLACEHOLDERS))
    if unknown or "path" not in fields:
        raise ValueError(
            f"{value!r} is neither a name ({', '.join(ALIASES)}) nor a template with {{path}} "
            f"(and optionally {{line}}, {{host}})" + (f"; unknown: {', '.join(unknown)}" if unknown else "")
        )


def url(template: str, path: str, line: int, host: str | None = None) -> str:
    """The template filled in: the path percent-encoded (slashes kept), the line 1-based,
    the host this machine's name unless given."""
    import os
    from urllib.parse import quote

    if host is None:
        host = os.uname().nodename if "{host}" in template else ""
    fill = {"path": quote(path, safe="/"), "line": str(max(1, line)), "host": host}
    return _FIELD.sub(lambda m: fill[m.group(1)], template)
