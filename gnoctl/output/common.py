"""What every renderer shares: how output reaches a person's terminal (colour, the
pager, a closed pipe, progress on stderr), the error shape, the formats that are the
same for every result (JSON, JSON Lines, file lists, CSV), and Markdown and XML escaping."""

from __future__ import annotations

import posix
import sys

from gnoctl import fastjson
from gnod.paths import env

TYPE_CHECKING = False  # typing itself imports re: too slow for the hot path (mypy reads it as True)
if TYPE_CHECKING:
    from gnoctl.output.links import Link


class View:
    """How a person's terminal gets the output: `--color`, `--no-pager`, `-0`."""

    def __init__(self, color: str = "auto", pager: bool = True, null: bool = False) -> None:
        self.color_when = color
        self.pager = pager
        self.null = null

    def color(self) -> bool:
        """`--color auto` (the default) paints only a terminal, and never with NO_COLOR
        set (no-color.org) or TERM=dumb."""
        if self.color_when != "auto":
            return self.color_when == "always"
        if env("NO_COLOR") or env("TERM") == "dumb":
            return False
        return sys.stdout.isatty()

    def links(self) -> Link | None:
        """Terminal hyperlinks for hits' paths, or None (gnoctl.output.links says where)."""
        from gnoctl.output.links import linker

        return linker()

    def page(self, text: str) -> bool:
        """Whether `text` went to the pager (human output taller than the terminal)."""
        return self.pager and _page(text)

    def emit(self, text: str, fmt: str) -> None:
        """Print a rendered result; long human text on a terminal goes through $PAGER.
        A reader that stops early is not an error: the command's exit status stands."""
        try:
            if fmt == "files" and self.null:
                sys.stdout.write(text)
            elif fmt == "human" and self.page(text):
                return
            elif text:
                print(text)
            sys.stdout.flush()
        except BrokenPipeError:
            quiet_stdout()


def _page(text: str) -> bool:
    """Show `text` in $GNO_PAGER or $PAGER (default `less -FRX`) when it is taller than
    the terminal; False when it was not paged (short, not a terminal, pager `cat`)."""
    if not sys.stdout.isatty():
        return False
    try:
        rows = posix.get_terminal_size(sys.stdout.fileno()).lines
    except OSError:
        return False
    if rows <= 0 or text.count("\n") + 1 < rows:
        return False
    import os
    import shlex
    import subprocess

    cmd = os.environ.get("GNO_PAGER") or os.environ.get("PAGER") or "less -FRX"
    if cmd.strip() in ("", "cat"):
        return False
    sys.stdout.flush()
    try:
        proc = subprocess.Popen(
            shlex.split(cmd), stdin=subprocess.PIPE, env={**os.environ, "LESS": os.environ.get("LESS", "FRX")}
        )
    except (OSError, ValueError):
        return False
    try:
        proc.communicate((text + "\n").encode())
    except (BrokenPipeError, KeyboardInterrupt):  # the pager was quit early
        proc.wait()
    return True


def quiet_stdout() -> None:
    """The reader of our stdout is gone (`| head`, `| grep -q`): send the rest nowhere,
    so neither a later write nor the interpreter's final flush complains."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def print_error(err, fmt: str) -> None:
    """The error on stderr; in JSON also on stdout, in the shape {"error": {code, message,
    details}} a script reading it expects (JSON is the default off a terminal, and
    `gnoctl … > out.json` had hidden the error in the file)."""
    if fmt == "json":
        print(fastjson.dumps({"error": {"code": err.name, "message": err.message, "details": err.details}}, indent=2))
    print(f"gnoctl: {err.message}", file=sys.stderr)


def dump(obj) -> None:
    """A result as the daemon sent it, as indented JSON."""
    print(fastjson.dumps(obj, indent=2))


def show(result, fmt: str, human) -> None:
    """The commands with one human rendering: JSON as it came, else the lines of
    `human(result)`."""
    if fmt == "json":
        dump(result)
        return
    for line in human(result):
        print(line)


def size(n: int | None) -> str:
    """Bytes for people: MiB, one decimal below 10; "-" for unknown."""
    if n is None:
        return "-"
    mib = n / 1048576
    return f"{mib:.1f} MiB" if mib < 10 else f"{mib:.0f} MiB"


def file_list(paths, null: bool = False) -> str:
    """Absolute paths, one per line, or each ended by NUL with `-0` (for `xargs -0`); each
    once, where first named (an archive's or mailbox's members all name its file)."""
    unique = dict.fromkeys(paths)
    if null:
        return "".join(p + "\0" for p in unique)
    return "\n".join(unique)


def json_lines(items) -> str:
    """One compact JSON object per line (JSON Lines), for streaming tools."""
    return "\n".join(fastjson.dumps(x) for x in items)


def painter(enabled: bool):
    """`paint(code, text)`: `text` in the SGR colour `code`, or plain when not enabled."""

    def paint(code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if enabled else text

    return paint


_CONTROL = {i: None for i in range(0x20) if chr(i) not in "\t\n"} | {0x7F: None}


def clean(s: str) -> str:
    """Text from documents and models, safe for a terminal (no escape sequences)."""
    return s.translate(_CONTROL)


def one_line(s: str) -> str:
    return " ".join(s.split())


def csv_text(rows: list[list]) -> str:
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().rstrip("\n")


def duration(seconds: float) -> str:
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def pace(progress: dict) -> str:
    """An index run's ` (N files/s, ETA …)`, as gnod measures it (files read and prepared,
    the time left by their bytes), once it does; else nothing."""
    if progress.get("rate") is None or progress.get("eta_s") is None:
        return ""
    return f" ({progress['rate']:.0f} files/s, ETA {duration(progress['eta_s'])})"


def char_columns(ch: str) -> int:
    """Terminal columns a character takes: none for a combining mark, two for a wide
    one (CJK, full-width forms)."""
    import unicodedata

    return 0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def columns(text: str) -> int:
    """Terminal columns `text` takes (its length, for ASCII)."""
    return len(text) if text.isascii() else sum(map(char_columns, text))


def pad(text: str, width: int) -> str:
    """`text` and spaces to `width` terminal columns (as str.ljust counts characters)."""
    return text + " " * (width - columns(text))


def path_tail(path: str, width: int) -> str:
    """The end of `path` in at most `width` characters, cut at a folder (…/usb/core.c),
    not inside a name."""
    if len(path) <= width:
        return path
    cut = path[len(path) - width + 1 :]
    slash = cut.find("/")
    return "…" + (cut[slash:] if slash >= 0 else cut)


class ProgressLine:
    """A single self-rewriting status line on a terminal's stderr; silent elsewhere."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._shown = False

    def __call__(self, method: str, params: dict | None) -> None:
        if not self.enabled or method != "progress" or not params:
            return
        total, done = params.get("total", 0), params.get("done", 0)
        pct = f"{100 * done // total:3d}%" if total else "   "
        phase = params.get("phase", "")
        path = path_tail(params.get("path", ""), 50)
        where = f"{params['collection']}: " if params.get("collection") else ""
        sys.stderr.write(f"\r\033[K{where}{phase} {pct} {done}/{total}{pace(params)} {path}")
        sys.stderr.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self._shown = False


# --- Markdown and XML ---------------------------------------------------------------------

# Markdown punctuation that would turn a title into markup (or break a table cell).
_MD_ESCAPES = str.maketrans({ch: "\\" + ch for ch in "\\`*_[]<>|#"})


def md(s: str) -> str:
    """Inline Markdown text (e.g. a table cell): one line, punctuation escaped."""
    return one_line(clean(s)).translate(_MD_ESCAPES)


def md_inline(s: str) -> str:
    """A piece of an inline Markdown text: whitespace runs as one space, punctuation escaped."""
    flat = " ".join(s.split())
    flat = (" " if s[:1].isspace() else "") + flat + (" " if s[-1:].isspace() and flat else "")
    return clean(flat).translate(_MD_ESCAPES)


def md_code(s: str) -> str:
    """An inline code span that survives backticks and pipes inside (GFM tables)."""
    s = one_line(clean(s)).replace("|", "\\|")
    fence = "`"
    while fence in s:
        fence += "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def xml_escape(s: str) -> str:
    s = "".join(ch for ch in s if ch in "\t\n\r" or ord(ch) >= 0x20)
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def num(x, digits: int = 4) -> str:
    """A score for people: fixed decimals without trailing zeros; "-" for none."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "true" if x else "false"
    if not isinstance(x, float):
        return str(x)
    return f"{x:.{digits}f}".rstrip("0").rstrip(".") if x == x else "nan"


def xml_attrs(**kw) -> str:
    """XML attributes from keyword arguments, skipping None; floats to 4 decimals."""
    out = []
    for key, val in kw.items():
        if val is None:
            continue
        if isinstance(val, bool):
            val = "true" if val else "false"
        elif isinstance(val, float):
            val = f"{val:.4f}"
        out.append(f'{key.rstrip("_")}="{xml_escape(str(val))}"')
    return " ".join(out)


def marked(text: str, spans: list, before: str, after: str, escape=lambda s: s) -> str:
    """`text` with each matched [start, end) span wrapped in `before`…`after` (the rest
    passed through `escape`): terminal bold, Markdown `**`."""
    out, pos = [], 0
    for start, end in spans:
        if start < pos or end > len(text):
            continue
        out += [escape(text[pos:start]), before, escape(text[start:end]), after]
        pos = end
    out.append(escape(text[pos:]))
    return "".join(out)
