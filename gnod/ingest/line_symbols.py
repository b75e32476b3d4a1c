"""Definitions that a line declares, in languages no tree-sitter grammar of ours reads:
Kconfig's options, assembler's entry points, device trees' labelled nodes, LaTeX's
chapters and sections, BibTeX's entries, the sections of INI files (systemd units, TOML).

Each is declared on its line by a fixed form (`config NAME`, `SYM_FUNC_START(name)`, a
global `name:` label, `label: node@addr {`), so a regular expression reads them exactly,
where a parser would add nothing. gnod.ingest.symbols runs these as it runs its
grammars: in the background, stored with the file's content.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable

# An option, or an option that opens a menu; its entry runs over the indented lines
# after it (attributes, help text, blank lines between them).
_KCONFIG = re.compile(r"^[ \t]*(?:menu)?config[ \t]+(\w+)[ \t]*$", re.M)
_KCONFIG_NEXT = re.compile(r"^\S", re.M)  # the next entry, or the end of a block

# The kernel's linkage macros (include/linux/linkage.h) and the older ENTRY/GLOBAL/WEAK,
# each naming what it opens; SYM_*_END, END or ENDPROC of the same name close it.
_ASM_OPEN = re.compile(
    r"^[ \t]*(SYM_(?:TYPED_)?FUNC_START\w*|SYM_CODE_START\w*|SYM_DATA_START\w*|SYM_INNER_LABEL\w*|SYM_DATA"
    r"|SYM_DATA_LOCAL|ENTRY|GLOBAL|WEAK)[ \t]*\([ \t]*([A-Za-z_.$][\w.$]*)",
    re.M,
)
_ASM_CLOSE = re.compile(r"^[ \t]*(?:SYM_\w*_END\w*|ENDPROC|END)[ \t]*\([ \t]*([A-Za-z_.$][\w.$]*)", re.M)
# A label at a line's start that the file exports (`.globl name`, `.global name`).
_ASM_LABEL = re.compile(r"^([A-Za-z_.$][\w.$]*):", re.M)
_ASM_GLOBAL = re.compile(r"^[ \t]*\.glob(?:a)?l[ \t]+([^\n;#]+)", re.M)
_ASM_WORD = re.compile(r"[A-Za-z_.$][\w.$]*")

# The kinds a line declares beside "function": a Kconfig option, a label jumped to (or
# entered from outside, as an interrupt entry), data.
CONFIG = "config"
LABEL = "label"
DATA = "data"

# A device tree node with its labels (`gic: interrupt-controller@f9010000 {`): each label
# is what `&gic` refers to elsewhere; the node runs to its closing brace.
_DTS_NODE = re.compile(r"^[ \t]*((?:[A-Za-z_]\w*[ \t]*:[ \t]*)+)(?:[\w,.+\-]+(?:@[\w,.+\-]+)?|/)[ \t]*\{", re.M)
_DTS_LABEL = re.compile(r"[A-Za-z_]\w*")
_BRACE = re.compile(r"[{}]")

# A LaTeX sectioning command (`\section*[short]{Title}`) at a line's start, by its level;
# its section runs to the next of its level or above. The title is read to its closing
# brace (`\section{The \emph{big} idea}`), its commands and braces dropped.
_LATEX_LEVELS = {"part": 0, "chapter": 1, "section": 2, "subsection": 3, "subsubsection": 4, "paragraph": 5}
_LATEX_SECTION = re.compile(r"^[ \t]*\\(" + "|".join(_LATEX_LEVELS) + r")\*?[ \t]*(?:\[[^\]\n]*\])?[ \t]*\{", re.M)
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+\*?|[{}~]")
_LATEX_END = re.compile(r"^[ \t]*\\end\{document\}", re.M)
# A BibTeX entry (`@article{mueller2019,`) at a line's start: named by its citation key,
# its kind its type; it runs to the next entry. @string, @preamble and @comment are none.
_BIB_ENTRY = re.compile(r"^[ \t]*@[ \t]*([A-Za-z]+)[ \t]*[{(][ \t]*([^,\s{}()]+)[ \t]*,", re.M)
_BIB_NOT_ENTRIES = frozenset({"string", "preamble", "comment"})

# A section of an INI file (`[Service]` of a systemd unit, git's `[remote "origin"]`,
# TOML's `[server.http]` and `[[servers]]`) at a line's start, named as its brackets hold
# it; it runs to the next. A line an array starts (`[1, 2],`) holds more than brackets.
_INI_SECTION = re.compile(r"^[ \t]*\[\[?[ \t]*([^\[\]\n]*[^\[\]\s])[ \t]*\]\]?[ \t]*(?:[#;][^\n]*)?$", re.M)
SECTION = "section"

KCONFIG = "kconfig"
GRAMMARS = frozenset({KCONFIG, "asm", "dts", "latex", "bibtex", "ini"})
# How C, Makefiles and .config name a Kconfig option: `config SLUB_DEBUG` is CONFIG_SLUB_DEBUG.
CONFIG_PREFIX = "CONFIG_"


def parse(text: str, grammar: str) -> list[tuple[str, str, int, int]]:
    """(name, kind, first line, last line) of each definition in `text`, in order."""
    newlines = [m.start() for m in re.finditer("\n", text)]
    line = lambda at: bisect_left(newlines, at) + 1  # noqa: E731  (1-based, of the offset `at`)
    if grammar == "dts":
        return _dts(text, line)
    if grammar == "latex":
        return _latex(text, line)
    if grammar == "bibtex":
        return _bibtex(text, line)
    if grammar == "ini":
        return _ini(text, line)
    return _kconfig(text, line) if grammar == KCONFIG else _asm(text, line)


def _kconfig(text: str, line: Callable[[int], int]) -> list[tuple[str, str, int, int]]:
    out = []
    for m in _KCONFIG.finditer(text):
        nxt = _KCONFIG_NEXT.search(text, m.end())
        end = len(text[: nxt.start() if nxt else len(text)].rstrip())
        out.append((m[1], CONFIG, line(m.start()), line(max(end - 1, m.start()))))
    return out


def _asm(text: str, line: Callable[[int], int]) -> list[tuple[str, str, int, int]]:
    closes: dict[str, list[int]] = {}
    for m in _ASM_CLOSE.finditer(text):
        closes.setdefault(m[1], []).append(m.start())
    found: dict[tuple[str, int], tuple[str, str, int, int]] = {}
    for m in _ASM_OPEN.finditer(text):
        macro, name = m[1], m[2]
        kind = "function"
        if macro.startswith("SYM_DATA"):
            kind = DATA
        elif macro.startswith(("SYM_CODE", "SYM_INNER")):
            kind = LABEL
        ends = closes.get(name, [])
        at = bisect_left(ends, m.end())
        end = ends[at] if at < len(ends) and not macro.startswith("SYM_INNER") else m.start()
        found[(name, line(m.start()))] = (name, kind, line(m.start()), line(end))
    exported = {w for g in _ASM_GLOBAL.finditer(text) for w in _ASM_WORD.findall(g[1])}
    for m in _ASM_LABEL.finditer(text) if exported else ():
        if m[1] in exported:
            start = line(m.start())
            found.setdefault((m[1], start), (m[1], LABEL, start, start))
    return sorted(found.values(), key=lambda s: (s[2], s[0]))


def _dts(text: str, line: Callable[[int], int]) -> list[tuple[str, str, int, int]]:
    out = []
    for m in _DTS_NODE.finditer(text):
        depth, at = 1, len(text)
        for brace in _BRACE.finditer(text, m.end()):
            depth += 1 if brace[0] == "{" else -1
            if not depth:
                at = brace.end()
                break
        start, end = line(m.start()), line(max(at - 1, m.start()))
        out += [(label, LABEL, start, end) for label in _DTS_LABEL.findall(m[1])]
    return out


def _latex(text: str, line: Callable[[int], int]) -> list[tuple[str, str, int, int]]:
    found = []  # (kind, title, level, start offset)
    for m in _LATEX_SECTION.finditer(text):
        depth, at = 1, m.end()
        while depth and at < len(text) and text[at] != "\n":
            depth += {"{": 1, "}": -1}.get(text[at], 0)
            at += 1
        title = " ".join(_LATEX_COMMAND.sub(" ", text[m.end() : at - 1 if not depth else at]).split())
        if title:
            found.append((m[1], title, _LATEX_LEVELS[m[1]], m.start()))
    end = _LATEX_END.search(text)
    last = end.start() if end else len(text.rstrip())
    out = []
    for i, (kind, title, level, start) in enumerate(found):
        stop = next((s for _, _, lv, s in found[i + 1 :] if lv <= level), last)
        out.append((title, kind, line(start), line(max(stop - 1, start))))
    return out


def _bibtex(text: str, line: Callable[[int], int]) -> list[tuple[str, str, int, int]]:
    starts = [m for m in _BIB_ENTRY.finditer(text) if m[1].lower() not in _BIB_NOT_ENTRIES]
    out = []
    for i, m in enumerate(starts):
        stop = starts[i + 1].start() if i + 1 < len(starts) else len(text.rstrip())
        out.append((m[2], m[1].lower(), line(m.start()), line(max(stop - 1, m.start()))))
    return out


def _ini(text: str, line: Callable[[int], int]) -> list[tuple[str, str, int, int]]:
    starts = list(_INI_SECTION.finditer(text))
    out = []
    for i, m in enumerate(starts):
        stop = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        while stop > m.end() and text[stop - 1].isspace():  # the blank lines before the next are none of it
            stop -= 1
        out.append((m[1], SECTION, line(m.start()), line(max(stop - 1, m.start()))))
    return out
