"""Terminal hyperlinks (OSC 8) on a hit's path: a click opens the document at its line.

Only on a terminal (never in a pipe, a file or --json), only where links are known to
show (an unknown terminal could print the escape as text): FORCE_HYPERLINK=1 or
`[client] hyperlinks = "always"` says yes anyway, FORCE_HYPERLINK=0 or "never" no.
Where the link points is `[client] editor_url` (gnod.editor_url).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from gnod import editor_url

Link = Callable[[str, int, str], str]  # (absolute path, line, shown text) -> text

# Terminals that show OSC 8 links, by what they put in the environment.
_PROGRAMS = frozenset({"iTerm.app", "WezTerm", "vscode", "ghostty", "Hyper", "Tabby", "rio"})
_TERMS = frozenset({"xterm-kitty", "xterm-ghostty", "alacritty", "foot", "foot-extra", "wezterm", "contour"})
_MARKERS = ("KITTY_WINDOW_ID", "WT_SESSION", "KONSOLE_VERSION", "DOMTERM", "WEZTERM_PANE")
_VTE_MIN = 5000  # GNOME Terminal, Tilix, Terminator… (VTE 0.50)


def known_terminal(env: os._Environ | dict) -> bool:
    """Whether the environment names a terminal that shows OSC 8 links (tmux and screen
    pass them on only when configured to: not assumed)."""
    if env.get("TMUX") or env.get("STY"):
        return False
    if env.get("TERM_PROGRAM") in _PROGRAMS or env.get("TERM") in _TERMS:
        return True
    if any(env.get(k) for k in _MARKERS):
        return True
    vte = env.get("VTE_VERSION", "")
    return vte.isdigit() and int(vte) >= _VTE_MIN


def _client_config() -> dict:
    """`[client]` of config.toml, read directly (gnod validates it; a broken file here
    just means the defaults)."""
    import tomllib

    from gnod.paths import Paths

    try:
        with open(Paths.from_env().config_file, "rb") as f:
            section = tomllib.load(f).get("client", {})
    except (OSError, ValueError):
        return {}
    return section if isinstance(section, dict) else {}


def linker(stdout_tty: bool | None = None) -> Link | None:
    """A function wrapping a path's text in its link, or None where links must not go."""
    if not (sys.stdout.isatty() if stdout_tty is None else stdout_tty) or os.environ.get("TERM") == "dumb":
        return None
    forced = os.environ.get("FORCE_HYPERLINK")
    if forced is not None and forced.strip() in ("0", "false", "no"):
        return None
    config = _client_config()
    when = config.get("hyperlinks", "auto")
    if when == "never" or (when != "always" and not forced and not known_terminal(os.environ)):
        return None
    setting = config.get("editor_url")
    try:
        if isinstance(setting, str):
            editor_url.check(setting)
        template = editor_url.template(setting if isinstance(setting, str) else None)
    except ValueError:
        template = editor_url.template(None)  # gnod reports the bad setting; links still work
    host = os.uname().nodename if "{host}" in template else ""

    def link(path: str, line: int, text: str) -> str:
        target = editor_url.url(template, path, line, host)
        return f"\033]8;;{target}\033\\{text}\033]8;;\033\\"

    return link
