"""The hot commands' options, and the word/option split every search command uses.

`gnoctl search`, `vsearch`, `query` and `get` are what editors and agents call in a
loop, so gnoctl.main parses them here by hand (stdlib only: no typer import) from
`FAST_OPTIONS`; anything this parser does not understand (`--help`, a typo, an option
missing from the table) falls back to typer in gnoctl.cli, which owns help, completion
and error messages and splits words from options with the same `split_args`.
tests/test_thin_client.py checks that the table and the typer definitions agree.
"""

from __future__ import annotations

# The output formats every search command renders (`--format NAME`); each also has its
# own flag (`--json`, `--md`, …).
FORMATS = ("human", "json", "jsonl", "files", "csv", "md", "xml", "vimgrep")
FORMAT_FLAGS = {"--" + name: name for name in FORMATS}
COLOR_WHEN = ("auto", "always", "never")
BENCH_MODES = ("search", "vsearch", "query")  # what `gnoctl bench` measures

# Options every search-like command takes.
_RETRIEVAL: dict[str, tuple[str, str]] = {
    "-n": ("limit", "int"),
    "--limit": ("limit", "int"),
    "--min-score": ("min_score", "float"),
    "-c": ("collections", "list"),
    "--collection": ("collections", "list"),
    "--no-autostart": ("no_autostart", "flag"),
    "--tag": ("tags", "list"),
    "--since": ("since", "str"),
    "--until": ("until", "str"),
    "--path": ("path", "str"),
    "--lang": ("lang", "str"),
    "--from": ("from", "str"),
    **{flag: ("format", "flag") for flag in FORMAT_FLAGS},
    "--format": ("format", "str"),
    "-0": ("null", "flag"),
    "--null": ("null", "flag"),
    "--color": ("color", "str"),
    "--no-pager": ("no_pager", "flag"),
}
FILTERS = ("tags", "since", "until", "path", "lang", "from")
# command → {option: (destination, kind)}; kind is "int", "float", "str", "list" or "flag".
FAST_OPTIONS: dict[str, dict[str, tuple[str, str]]] = {
    "search": {**_RETRIEVAL, "--wait": ("wait_s", "float"), "--per-doc": ("per_doc", "int")},
    "vsearch": dict(_RETRIEVAL),
    "query": {
        **_RETRIEVAL,
        "--wait": ("wait_s", "float"),
        "--mode": ("mode", "str"),
        "--no-expand": ("no_expand", "flag"),
        "--no-rerank": ("no_rerank", "flag"),
        "--explain": ("explain", "flag"),
        "--lex": ("lexical", "list"),
        "--vec": ("semantic", "list"),
        "--hyde": ("hyde", "str"),
    },
    "get": {
        "--from-line": ("from_line", "int"),
        "-l": ("lines", "int"),
        "--lines": ("lines", "int"),
        "--no-autostart": ("no_autostart", "flag"),
        "--no-pager": ("no_pager", "flag"),
        "--json": ("format", "flag"),
        "--human": ("format", "flag"),
    },
}

# Commands whose single-dash words are negated query terms (`-staging`), not options.
WORD_COMMANDS = ("search", "vsearch", "query", "ask")


class Fallback(Exception):
    """The fast parser gives up; typer parses (and explains) instead."""


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
            if takes_value and not eq and i < len(args):
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
    spec = FAST_OPTIONS[command]
    options, words = classify(command, args)
    opts: dict = {"collections": []}
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
            else:
                opts[dest] = value
        except ValueError:
            raise Fallback() from None
    return opts, words
