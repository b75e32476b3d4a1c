"""Unix manual pages (roff source: the man(7) macros, and mdoc(7)'s most common) as Markdown.

A man page's words are written among roff's requests and escapes: `\\fBProtectSystem=\\fR`
was indexed as the word `fbprotectsystem`, and `ProtectSystem` found nothing. Here the
requests that only lay a page out are dropped, its section headings become Markdown
headings (a hit names its section: `systemd.exec.5:700: OPTIONS`), and the escapes
become the characters they print. No Python library reads roff, and the pages' text
needs only this much of it: what a page computes (its own macros, conditionals) is left
out, not run.

A file named as a manual page (`ls.1`, `systemd.exec.5`) whose text does not start as
one (a rotated `syslog.1`) is read as plain text.
"""

from __future__ import annotations

import re

# A page opens with comments, then its title (.TH; mdoc's .Dd/.Dt), or points at another (.so).
_OPENING = re.compile(r"\A(?:[.'][ \t]*\\\"[^\n]*\n|[ \t]*\n)*[.'][ \t]*(?:TH|Dd|Dt|so)\b")
# A request: a control character, its name, its arguments (quoted ones may hold blanks).
_REQUEST = re.compile(r"[.'][ \t]*(\S*)[ \t]*(.*)")
_ARG = re.compile(r'"((?:[^"]|"")*)"?|(\S+)')
_FONT = re.compile(r"\\f(?:\[[^\]\n]*\]|\(..|.)")  # \fB, \fI, \fR, \fP, \f(CW, \f[B]
_SIZE = re.compile(r"\\s(?:[+-]?\d{1,2}|\(\d\d|\[[^\]\n]*\])")
_NAMED = re.compile(r"\\(?:\(|\*\()(..)|\\\[([^\]\n]*)\]|\\\*\[([^\]\n]*)\]|\\\*(.)")
_CHARACTERS = {
    "em": "—", "en": "–", "hy": "-", "mi": "-", "bu": "•", "aq": "'", "dq": '"', "lq": "“", "rq": "”",
    "oq": "‘", "cq": "’", "Lq": "“", "Rq": "”", "co": "©", "rg": "®", "tm": "™", "pl": "+", "mu": "×",
    "di": "÷", "<=": "≤", ">=": "≥", "!=": "≠", "->": "→", "<-": "←", "ti": "~", "ha": "^", "rs": "\\",
    "ga": "`", "sl": "/", "de": "°", "ba": "|", "or": "|", "lB": "[", "rB": "]", "R": "®", "Tm": "™", "Aq": "'",
}  # fmt: skip
_ESCAPES = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", ".": ".", "'": "'", "`": "`", "t": "\t"}
_ESCAPE = re.compile(r"\\(.)")
# Requests that break a paragraph, and those that only lay the page out (dropped).
_BREAKS = frozenset({"PP", "LP", "P", "sp", "TP", "TQ", "HP", "Pp", "Lp", "Bl", "El", "Bd", "Ed", "br"})
_HEADINGS = {"SH": "##", "Sh": "##", "SS": "###", "Ss": "###"}
# Requests whose arguments are text in one font each, joined without blanks (alternating fonts).
_ALTERNATING = frozenset({"BR", "BI", "IB", "IR", "RB", "RI"})
_TEXT = frozenset({"B", "I", "SM", "SB", "UR", "MT", "SY", "OP"})
_MDOC_TEXT = frozenset({"It", "Nd", "D1", "Dl"})  # mdoc's lines of text, which may call macros
# mdoc's macros called inside a line's arguments (`.Op Fl v Ar file`): dropped, and `Fl`
# prefixes its argument with the dash it stands for.
_MDOC_CALLS = frozenset(
    {"Ar", "Cm", "Dq", "Em", "Ev", "Fa", "Fl", "Ic", "Li", "Ms", "Nm", "No", "Ns", "Op", "Pa", "Ql", "Sq", "Sy", "Va"}
    | {"Aq", "Bq", "Brq", "Pq", "Qq", "Oo", "Oc", "Xo", "Xc", "Dv", "Er", "Fn", "Ft", "Cd", "Ad", "An", "Lk", "Mt"}
)
# Definitions and text roff skips: a macro's definition (.de … ..), an ignored block (.ig … ..).
_BLOCKS = frozenset({"de", "de1", "am", "ig", "ds"})


def is_page(text: str) -> bool:
    """Whether `text` starts as a manual page's roff source does."""
    return _OPENING.match(text) is not None


def page_markdown(text: str) -> str:
    """A manual page's roff source as Markdown: its title, its sections as headings,
    its text with roff's fonts and escapes read."""
    out: list[str] = []
    skipping = False
    name = ""
    heading = ""  # a heading request's level, its words on the next line (`.SH` alone)
    for raw in text.split("\n"):
        if skipping:
            skipping = raw.rstrip() not in ("..", ".")
        elif not raw.startswith((".", "'")):
            out.append(f"\n{heading} {_text(raw).strip()}\n" if heading else _text(raw))
            heading = ""
        elif (m := _REQUEST.match(raw)) is None or not m[1] or m[1].startswith('\\"'):
            continue  # a comment, or a lone dot
        elif m[1] in _BLOCKS:
            skipping = m[1] != "ds"  # a string's definition is its line
        else:
            request, args = m[1], _args(m[2])
            if request in ("TH", "Dt"):
                name = args[0] if args else ""
            if request in _HEADINGS and not args:
                heading = _HEADINGS[request]
            out += _request(request, args, name)
    markdown = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", markdown).strip() + "\n"


def _request(request: str, args: list[str], name: str) -> list[str]:
    """The Markdown lines of one request's line (`name`: the page's, from its title);
    none for one that only lays the page out (.RS, .nf, .in, .if …)."""
    if request in ("TH", "Dt"):
        return [f"# {_text(name)}{f'({args[1]})' if len(args) > 1 else ''}\n"]
    if request == "Nm":
        return [_text(" ".join(args) or name)]
    if request in _HEADINGS:
        return [f"\n{_HEADINGS[request]} {_text(' '.join(args)).strip()}\n"] if args else []
    if request in _BREAKS:
        return [""]
    if request in _ALTERNATING:
        return [_text("".join(args))]
    if request == "Xr" and args:
        return [_text(f"{args[0]}({args[1]})" if len(args) > 1 else args[0])]
    if request == "so" and args:
        return [f"See {args[0]}."]
    if request == "IP":  # its tag (a bullet, a term), not its indent
        return ["", _text(args[0])] if args else [""]
    if request in _MDOC_CALLS or request in _MDOC_TEXT:
        return [_text(" ".join(_mdoc_words([request, *args] if request in _MDOC_CALLS else args)))]
    if request in _TEXT:
        return [_text(" ".join(args))]
    return []


def _args(rest: str) -> list[str]:
    """A request's arguments: blank-separated, a quoted one whole (`""` a quote in it)."""
    return [m[2] if m[1] is None else m[1].replace('""', '"') for m in _ARG.finditer(rest)]


def _mdoc_words(words: list[str]) -> list[str]:
    """An mdoc line's words without its macro calls, a flag's with its dash (`Fl v` → `-v`)."""
    out: list[str] = []
    flag = False
    for word in words:
        if word in _MDOC_CALLS:
            flag = word == "Fl"
            continue
        out.append(f"-{word}" if flag else word)
        flag = False
    return out


def _text(line: str) -> str:
    """A line's text with roff's escapes read: fonts and sizes off, named characters as
    they print, `\\-` a hyphen, `\\&` and `\\c` nothing."""
    line = _SIZE.sub("", _FONT.sub("", line))
    line = _NAMED.sub(lambda m: _CHARACTERS.get(next(g for g in m.groups() if g is not None), ""), line)
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m[1], ""), line)
