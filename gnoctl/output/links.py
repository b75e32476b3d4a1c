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
    just means the defaults). Parsed only when the file names it: importing tomllib
    (and `re`) costs ~10 ms, more than half of a search on a terminal."""
    from gnod.paths import Paths

    try:
        with open(Paths.from_env().config_file, "rb") as f:
            data = f.read()
    except OSError:
        return {}
    if b"client" not in data:
        return {}
    import tomllib

    try:
        section = tomllib.loads(data.decode("utf-8")).get("client", {})
    except ValueError:  # not TOML, not UTF-8
        return {}
    return section if isinstance(section, dict) else {}


def editor_template() -> str:
    """The URL template `[client] editor_url` names; the default when it is unset or
    unusable (gnod reports a bad setting; links still open the file)."""
    from gnod import editor_url

    setting = _client_config().get("editor_url")
    if isinstance(setting, str):
        try:
            editor_url.check(setting)
            return editor_url.template(setting)
        except ValueError:
            pass
    return editor_url.template(None)


def linker(stdout_tty: bool | None = None) -> Link | None:
    """A function wrapping a path's text in its link, or None where links must not go."""
    if not (sys.stdout.isatty() if stdout_tty is None else stdout_tty) or os.environ.get("TERM") == "dumb":
        return None
    forced = os.environ.get("FORCE_HYPERLINK")
    if forced is not None and forced.strip() in ("0", "false", "no"):
        return None
    when = _client_config().get("hyperlinks", "auto")
    if when == "never" or (when != "always" and not forced and not known_terminal(os.environ)):
        return None
    from gnod import editor_url

    template = editor_template()

    def link(path: str, line: int, text: str) -> str:
        target = editor_url.url(template, path, line)
        return f"\033]8;;{target}\033\\{text}\033]8;;\033\\"

    return link
