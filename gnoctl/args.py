"""The hot commands' options, the word/option split every search command uses, and
the params a command's parsed values make.

`gnoctl search`, `vsearch`, `query` and `get` are what editors and agents call in a
loop, so gnoctl.main parses them here by hand (stdlib only: no typer import) from
`FAST_OPTIONS`, and `status` and its neighbours from `PLAIN`; anything this parser does
not understand (`--help`, a typo, a value out of range) falls back to typer in
gnoctl.cli, which owns help, completion and error messages. Both read a command's
params options from gnoctl.spec (generated from gnod/protocol.py) and the client's own
options (output, daemon start) from `OUTPUT`, and both turn the values into params
with `params`.
"""

from __future__ import annotations

from gnoctl.spec import COMMANDS

# The output formats every search command renders (`--format NAME`); each also has its
# own flag (`--json`, `--md`, …).
FORMATS = ("human", "json", "jsonl", "files", "csv", "md", "xml", "vimgrep")
FORMAT_FLAGS = {"--" + name: name for name in FORMATS} | {"-l": "files"}  # -l: the files, as rg -l
COLOR_WHEN = ("auto", "always", "never")
BENCH_MODES = ("search", "vsearch", "query")  # what `gnoctl bench` measures

# The client's own options of the search commands: how to show the result, whether to
# start gnod. {option: (destination, kind)}; kind is "str" or "flag".
OUTPUT: dict[str, tuple[str, str]] = {
    "--no-autostart": ("no_autostart", "flag"),
    **{flag: ("format", "flag") for flag in FORMAT_FLAGS},
    "--format": ("format", "str"),
    "-0": ("null", "flag"),
    "--null": ("null", "flag"),
    "--color": ("color", "str"),
    "--no-pager": ("no_pager", "flag"),
}
GET_OUTPUT: dict[str, tuple[str, str]] = {
    "--no-autostart": ("no_autostart", "flag"),
    "--no-pager": ("no_pager", "flag"),
    "--json": ("format", "flag"),
    "--human": ("format", "flag"),
}


def options(command: str) -> dict[str, tuple[str, str]]:
    """A command's params options: {flag: (params field, kind)} (gnoctl.spec's kinds)."""
    return {flag: (o["dest"], o["kind"]) for o in COMMANDS[command] for flag in o["flags"]}


# command → {option: (destination, kind)}: the params options, then the client's own.
FAST_OPTIONS: dict[str, dict[str, tuple[str, str]]] = {
    "search": {**options("search"), **OUTPUT},
    "vsearch": {**options("vsearch"), **OUTPUT},
    "query": {**options("query"), **OUTPUT},
    "get": {**options("get"), **GET_OUTPUT},
}


# The other commands that must answer at once: `status` is what a person runs when gnod
# seems slow, where typer's import alone took 0.4 s of CPU on two busy cores (seconds
# under load), and `ls`, `multi-get` (an agent's or a script's, 0.25 s for one file
# through typer), `update`, `collection list` and `daemon status` beside it.
# Their options are the client's own: {command's words: ({option: (destination, kind)},
# arguments at most)}; anything else (help, a typo, a value out of range) goes to typer.
LS_LIMIT_MAX = 100_000
MULTI_GET_REFS_MAX = 100_000
_FORMAT = ("format", "flag")
_JSON_HUMAN = {"--json": _FORMAT, "--human": _FORMAT}
PLAIN: dict[tuple[str, ...], tuple[dict[str, tuple[str, str]], int]] = {
    ("status",): (
        {
            "-w": ("watch", "flag"),
            "--watch": ("watch", "flag"),
            "-e": ("errors", "flag"),
            "--errors": ("errors", "flag"),
            "--no-autostart": ("no_autostart", "flag"),
            **_JSON_HUMAN,
        },
        0,
    ),
    ("ls",): (
        {
            "-c": ("collection", "str"),
            "--collection": ("collection", "str"),
            "--prefix": ("prefix", "str"),
            "-n": ("limit", "int"),
            "--limit": ("limit", "int"),
            "-d": ("folders", "flag"),
            "--folders": ("folders", "flag"),
            **_JSON_HUMAN,
            "--jsonl": _FORMAT,
            "--files": _FORMAT,
            "-0": ("null", "flag"),
            "--null": ("null", "flag"),
            "--color": ("color", "str"),
            "--no-pager": ("no_pager", "flag"),
            **options("ls"),
        },
        1,
    ),
    ("multi-get",): (
        {
            "-p": ("pattern", "list"),
            "--pattern": ("pattern", "list"),
            "--max-bytes": ("max_bytes", "int"),
            **_JSON_HUMAN,
            "--files": _FORMAT,
            "-0": ("null", "flag"),
            "--null": ("null", "flag"),
            "--no-pager": ("no_pager", "flag"),
        },
        MULTI_GET_REFS_MAX,
    ),
    ("update",): (_JSON_HUMAN, 1),
    ("collection", "list"): (_JSON_HUMAN, 0),
    ("daemon", "status"): (_JSON_HUMAN, 0),
}


PATH_FILTER = "filters.path"
# A `--path` that starts as a path from here does (`.`, `..`, `./drivers/usb`, `../mm/*`)
# names this machine's folders: it is sent absolute, and gnod searches the collection
# whose folder holds them (gnod.server.checks.search_filter).
_FROM_HERE = (".", "..")


def from_here(glob: str) -> str:
    """`glob` made absolute where it starts from the working directory (after the `!`
    that leaves what it matches out), else as given."""
    bang, rest = ("!", glob[1:]) if glob.startswith("!") else ("", glob)
    if rest.split("/", 1)[0] not in _FROM_HERE:
        return glob
    import os  # only here: the fast path runs without it (~1 ms)

    return bang + os.path.abspath(rest)


def ref_from_here(ref: str) -> str | None:
    """`ref` as an absolute path (its `:line` kept; gnod resolves `..`) where it is a path
    from the working directory to a file (`hub.c:120` in a kernel's drivers/usb/core), as
    git and editors give paths; None for any other. With `posix`, loaded at start, not
    `os` (~1 ms, which the fast path does without)."""
    import posix

    def is_file(path: str) -> bool:
        try:
            return posix.stat(path).st_mode & 0o170000 == 0o100000
        except (OSError, ValueError):
            return False

    if ref.startswith(("#", "/", "~", "gno://")):
        return None
    head = ref if is_file(ref) else ref.split(":", 1)[0]
    return f"{posix.getcwd()}/{head}{ref[len(head) :]}" if is_file(head) else None


def params(command: str, values: dict, words: list[str]) -> dict:
    """The params of `command` for parsed option values ({params field: value}; a flag's
    value is whether it was given) and its words; fields left at their defaults are
    not sent, and a dotted field goes inside its Struct."""
    out: dict = {}
    for o in COMMANDS[command]:
        kind, value = o["kind"], values.get(o["dest"])
        if o["dest"] == PATH_FILTER and value is not None:
            value = [from_here(glob) for glob in value]
        if kind == "words":
            value = " ".join(words)
        elif kind == "arg":
            value = words[0]
        elif kind == "flag":
            value = (not o["default"]) if value else None
        if value is None or value == [] or (value == o["default"] and kind not in ("words", "arg")):
            continue
        *inside, name = o["dest"].split(".")
        place = out
        for part in inside:
            place = place.setdefault(part, {})
        place[name] = value
    return out


def for_format(command: str, p: dict, fmt: str | None) -> dict:
    """`p` as the output format needs it: a list of files shows no passages, so a search
    reads none (`search mutex_lock -n 1000 --files`: 0.36 → 0.04 s on the kernel tree);
    `--vimgrep` is a line per match, no context around it."""
    if command == "search" and fmt == "files":
        return {**p, "snippets": False}
    if fmt == "vimgrep" and "context" in p:
        return {k: v for k, v in p.items() if k != "context"}
    return p


def out_of_range(command: str, values: dict, words: list[str]) -> str | None:
    """What is wrong with a command's words or values (its ranges, its choices), or None."""
    for o in COMMANDS[command]:
        kind, value = o["kind"], values.get(o["dest"])
        if kind == "words" and not words:
            return "no words"
        if kind == "arg" and len(words) != 1:
            return f"{len(words)} arguments where one is wanted"
        if value is None or kind not in ("int", "float", "choice"):
            continue
        if ("lo" in o and value < o["lo"]) or ("hi" in o and value > o["hi"]):
            return f"{o['flags'][-1]} {value} is out of range"
        if kind == "choice" and value not in o["choices"]:
            return f"{o['flags'][-1]} {value} is not one of {', '.join(o['choices'])}"
    return None


# Commands whose single-dash words are negated query terms (`-staging`), not options.
WORD_COMMANDS = ("search", "vsearch", "query", "ask")


class Fallback(Exception):
    """The fast parser gives up; typer parses (and explains) instead."""


class MissingValue(Fallback):
    """An option that takes a value has none: it ends the arguments, or another option
    follows it, or `--` (`--tag --human`; click would take `--human`, or the `--` before
    the words, for the tag). `options`: the option tokens up to it, for click to explain."""

    def __init__(self, options: list[str]) -> None:
        super().__init__(options[-1])
        self.options = options


def split_args(kinds: dict[str, str], args: list[str], negated_words: bool) -> tuple[list[str], list[str]]:
    """Split arguments into option tokens (each with its value) and words.

    `kinds` maps each option to "flag" or a value kind. With `negated_words`, a
    single-dash word is a negated query word (`-staging`; click would read it as
    `-s -t -a …`), unless it has the shape of a short option: one letter, maybe with
    digits (`-h`, `-l`, `-n5`). Those are options, so `-h` is help and a mistyped
    `-l 5` is an error rather than two more query words; `--` ends the options.
    """
    options: list[str] = []
    words: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            words.extend(args[i:])
            break
        if not arg.startswith("-") or arg == "-":
            words.append(arg)
            continue
        name, eq, _ = arg.partition("=")
        if arg.startswith("--") or arg in kinds:
            options.append(arg)
            takes_value = name in kinds and kinds[name] != "flag"
            if takes_value and not eq:
                if i == len(args) or args[i] in kinds or args[i] == "--":
                    raise MissingValue(options)
                options.append(args[i])
                i += 1
        elif kinds.get(arg[:2]) == "int" and arg[2:].isdigit():
            options.append(arg)
        elif negated_words and not _short_option_shape(arg):
            words.append(arg)
        else:
            options.append(arg)
    return options, words


def _short_option_shape(arg: str) -> bool:
    """`-x` or `-x5`: a (maybe unknown) short option, never a negated query word."""
    return arg[1:2].isascii() and arg[1:2].isalpha() and (len(arg) == 2 or arg[2:].isdigit())


def classify(command: str, args: list[str]) -> tuple[list[str], list[str]]:
    """`split_args` with a fast-path command's own options."""
    kinds = {opt: kind for opt, (_dest, kind) in FAST_OPTIONS[command].items()}
    return split_args(kinds, args, command in WORD_COMMANDS)


def parse_fast(command: str, args: list[str]) -> tuple[dict, list[str]]:
    """Options and words, or Fallback for anything typer should judge."""
    options, words = classify(command, args)
    return _values(FAST_OPTIONS[command], options, {"collections": []}), words


def parse_plain(argv: list[str]) -> tuple[tuple[str, ...], dict, list[str]]:
    """A PLAIN command (its words), its options and its arguments, or Fallback."""
    command = next((c for c in PLAIN if tuple(argv[: len(c)]) == c), None)
    if command is None:
        raise Fallback()
    spec, most = PLAIN[command]
    options, words = split_args({opt: kind for opt, (_dest, kind) in spec.items()}, argv[len(command) :], False)
    if len(words) > most:
        raise Fallback()
    return command, _values(spec, options, {}), words


def _values(spec: dict[str, tuple[str, str]], options: list[str], opts: dict) -> dict:
    """`opts` with the values of `options` (split_args's option tokens) by `spec`."""
    it = iter(options)
    for arg in it:
        name, eq, inline = arg.partition("=")
        if name not in spec and arg[:2] in spec and not arg.startswith("--"):
            name, eq, inline = arg[:2], "=", arg[2:]  # -n5
        if name not in spec:
            raise Fallback()
        dest, kind = spec[name]
        if kind == "flag":
            if eq or (dest == "format" and "format" in opts):
                raise Fallback()
            opts[dest] = FORMAT_FLAGS.get(name, True) if dest == "format" else True
            continue
        value = inline if eq else next(it, None)
        if value is None or (dest == "format" and ("format" in opts or value not in FORMATS)):
            raise Fallback()
        if dest == "color" and value not in COLOR_WHEN:
            raise Fallback()
        try:
            if kind == "int":
                opts[dest] = int(value)
            elif kind == "float":
                opts[dest] = float(value)
            elif kind == "list":
                opts.setdefault(dest, []).append(value)
            elif kind == "day":  # gnoctl.days is loaded by the searches that give one
                from gnoctl.days import filter_day

                opts[dest] = filter_day(dest, value)
            else:
                opts[dest] = value
        except ValueError:
            raise Fallback() from None
    return opts
