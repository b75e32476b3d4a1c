"""gnoctl entry point: a hand-parsed fast path for the hot commands, typer for the rest.

`gnoctl search`, `query` and `get` are what editors and agents call in a loop, so they
must not pay typer's import (90–300 ms here). Their options are parsed by hand from
`FAST_OPTIONS`, which a test keeps in step with the typer definitions; anything the
fast parser does not understand (`--help`, a typo, a new option) goes to typer,
which owns help, completion and error messages.
"""

from __future__ import annotations

import sys

FORMAT_FLAGS = {"--json": "json", "--jsonl": "jsonl", "--files": "files", "--csv": "csv", "--md": "md",
                "--xml": "xml", "--vimgrep": "vimgrep", "--human": "human"}
# `--format NAME` takes any of these (gnoctl.output.FORMATS, kept in step by a test).
FORMAT_NAMES = ("human", "json", "jsonl", "files", "csv", "md", "xml", "vimgrep")
COLOR_WHEN = ("auto", "always", "never")

# Options every search-like command takes.
_RETRIEVAL: dict[str, tuple[str, str]] = {
    "-n": ("limit", "int"), "--limit": ("limit", "int"),
    "--min-score": ("min_score", "float"),
    "-c": ("collections", "list"), "--collection": ("collections", "list"),
    "--no-autostart": ("no_autostart", "flag"),
    "--tag": ("tags", "list"), "--since": ("since", "str"), "--until": ("until", "str"),
    "--path": ("path", "str"), "--lang": ("lang", "str"),
    **{flag: ("format", "flag") for flag in FORMAT_FLAGS},
    "--format": ("format", "str"),
    "-0": ("null", "flag"), "--null": ("null", "flag"),
    "--color": ("color", "str"),
    "--no-pager": ("no_pager", "flag"),
}
FILTERS = ("tags", "since", "until", "path", "lang")
# command → {option: (destination, kind)}; kind is "int", "float", "str", "list" or "flag".
FAST_OPTIONS: dict[str, dict[str, tuple[str, str]]] = {
    "search": {**_RETRIEVAL, "--wait": ("wait_s", "float"), "--per-doc": ("per_doc", "int")},
    "vsearch": dict(_RETRIEVAL),
    "query": {
        **_RETRIEVAL, "--wait": ("wait_s", "float"),
        "--mode": ("mode", "str"),
        "--no-expand": ("no_expand", "flag"), "--no-rerank": ("no_rerank", "flag"),
        "--explain": ("explain", "flag"),
    },
    "get": {
        "--from-line": ("from_line", "int"), "-l": ("lines", "int"), "--lines": ("lines", "int"),
        "--no-autostart": ("no_autostart", "flag"),
        "--json": ("format", "flag"), "--human": ("format", "flag"),
    },
}


class _Fallback(Exception):
    """The fast parser gives up; typer parses (and explains) instead."""


# Commands whose single-dash words are negated query terms (`-staging`), not options.
WORD_COMMANDS = ("search", "vsearch", "query", "ask")


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
    """Options and words, or _Fallback for anything typer should judge."""
    spec = FAST_OPTIONS[command]
    options, words = classify(command, args)
    opts: dict = {"collections": []}
    it = iter(options)
    for arg in it:
        name, eq, inline = arg.partition("=")
        if name not in spec and arg[:2] in spec and not arg.startswith("--"):
            name, eq, inline = arg[:2], "=", arg[2:]  # -n5
        if name not in spec:
            raise _Fallback()
        dest, kind = spec[name]
        if kind == "flag":
            if eq or (dest == "format" and "format" in opts):
                raise _Fallback()
            opts[dest] = FORMAT_FLAGS.get(name, True) if dest == "format" else True
            continue
        value = inline if eq else next(it, None)
        if value is None or (dest == "format" and ("format" in opts or value not in FORMAT_NAMES)):
            raise _Fallback()
        if dest == "color" and value not in COLOR_WHEN:
            raise _Fallback()
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
            raise _Fallback() from None
    return opts, words


def _fast(argv: list[str]) -> int | None:
    try:
        opts, words = parse_fast(argv[0], argv[1:])
    except _Fallback:
        return None
    from gnoctl import commands
    from gnoctl.output import View

    autostart = False if opts.get("no_autostart") else None
    if argv[0] == "get":
        if len(words) != 1:
            return None
        return commands.get(words[0], opts.get("from_line"), opts.get("lines"), opts.get("format"), autostart)
    limit, score = opts.get("limit", 10), opts.get("min_score", 0.0)
    wait_s, mode, per_doc = opts.get("wait_s", 0.0), opts.get("mode", "standard"), opts.get("per_doc", 1)
    fmt = opts.get("format")
    # Out-of-range values go to typer, which says what the range is.
    if (not words or not 1 <= limit <= 1000 or not 0.0 <= score <= 1.0 or not 0.0 <= wait_s <= 600.0
            or mode not in ("standard", "deep") or not 1 <= per_doc <= 10 or (opts.get("null") and fmt != "files")):
        return None
    view = View(opts.get("color", "auto"), not opts.get("no_pager"), bool(opts.get("null")))
    query, cols = " ".join(words), opts["collections"]
    filters = {k: opts[k] for k in FILTERS if opts.get(k)}
    if argv[0] == "search":
        return commands.search(query, limit, score, cols, fmt, autostart, wait_s, view, filters, per_doc)
    if argv[0] == "vsearch":
        return commands.vsearch(query, limit, score, cols, fmt, autostart, view, filters)
    return commands.query(query, limit, mode, score, cols, not opts.get("no_expand"), not opts.get("no_rerank"),
                          bool(opts.get("explain")), fmt, autostart, wait_s, view, filters)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    code = None
    try:
        if argv and argv[0] in FAST_OPTIONS:
            code = _fast(argv)
            if code is None:  # typer explains; it sees the same words/options split
                options, words = classify(argv[0], argv[1:])
                argv = [argv[0], *options, "--", *words]
        if code is None:
            from gnoctl.cli import run

            code = run(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader stopped early (`| head`, `| grep -q`): not an error, as in ripgrep
        # (see gnoctl.commands._run); the status already decided stands.
        from gnoctl.output import quiet_stdout

        quiet_stdout()
        return code or 0
    return code


if __name__ == "__main__":
    sys.exit(main())
