"""The gnoctl command tree (typer): help, completion and every command's options.

The options that set a method's params come from gnoctl.spec (generated from
gnod/protocol.py), for the typer commands here as for the fast path (gnoctl.args), so
the two parse alike by construction.
"""

from __future__ import annotations

import inspect
import shlex
import sys
from collections.abc import Callable
from enum import Enum
from functools import partial
from typing import Annotated, Any, Optional

import typer

from gnoctl import commands, fastjson
from gnoctl.args import (
    BENCH_MODES,
    FAST_OPTIONS,
    LS_LIMIT_MAX,
    WORD_COMMANDS,
    MissingValue,
    for_format,
    params,
    split_args,
)
from gnoctl.days import filter_day
from gnoctl.spec import COMMANDS as SPEC
from gnod import wire

# `-h` as well as `--help`, on every command (click passes this down to subcommands).
HELP = {"help_option_names": ["-h", "--help"]}
POSITIONAL, KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY

app = typer.Typer(
    name="gnoctl",
    help="Search your own documents through the gno daemon (gnod). The daemon is started "
    "on first use; GNO_HOME sets one root for config, data and runtime files.\n\n"
    "Output is human text on a terminal and JSON otherwise (but `get`, which prints the document's "
    "text either way); --human or --format picks. "
    "Exit status: 0 ok (for search, vsearch, query and similar: something matched), 1 no match, "
    "2 an error (bad input included: a usage error, an unknown collection), 3 daemon not running.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings=HELP,
)
collection_app = typer.Typer(
    help="Add, list, describe and remove collections (folders that are indexed).",
    no_args_is_help=True,
    context_settings=HELP,
)
daemon_app = typer.Typer(
    help="Start, stop and inspect the gnod daemon; run it at login; read its log.",
    no_args_is_help=True,
    context_settings=HELP,
)
models_app = typer.Typer(
    help="See, download and switch the models gnod uses (embed, rerank, generate).",
    no_args_is_help=True,
    context_settings=HELP,
)
app.add_typer(collection_app, name="collection")
app.add_typer(daemon_app, name="daemon")
app.add_typer(models_app, name="models")


def _version(value: bool) -> None:
    if value:
        from gnod import __version__

        print(f"gnoctl {__version__}")
        raise typer.Exit(0)


def _collection_names(incomplete: str) -> list[str]:
    """Shell completion: collection names from the config file (no daemon needed)."""
    import tomllib

    from gnod.paths import Paths

    try:
        with open(Paths.from_env().config_file, "rb") as f:
            cols = tomllib.load(f).get("collections", [])
    except (OSError, ValueError):
        return []
    return [c["name"] for c in cols if isinstance(c, dict) and str(c.get("name", "")).startswith(incomplete)]


def _type_names(incomplete: str) -> list[str]:
    """Shell completion: the file types `-t` takes (gnod.config, read when completing)."""
    from gnod.config import FILE_TYPES

    return sorted(t for t in FILE_TYPES if t.startswith(incomplete))


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print gnoctl's version and exit.")
    ] = False,
) -> None:
    """Options that come before any command (the app's help text is the Typer's)."""


# `--format` and `--color` choices: gnoctl.args.FORMATS and COLOR_WHEN, as the fast parser
# takes them (kept in step by a test: mypy needs the members spelled out).
class Format(str, Enum):
    human = "human"
    json = "json"
    jsonl = "jsonl"
    files = "files"
    csv = "csv"
    md = "md"
    xml = "xml"
    vimgrep = "vimgrep"


class Color(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
HumanOpt = Annotated[bool, typer.Option("--human", help="Human text even when stdout is not a terminal.")]
# Options shared by the search commands (one definition: help and limits stay in step).
FormatOpt = Annotated[
    Optional[Format], typer.Option("--format", help="Output format (the flags below are shortcuts for it).")
]
JsonlOpt = Annotated[bool, typer.Option("--jsonl", help="JSON Lines: one hit per line, for streaming tools.")]
FilesOpt = Annotated[bool, typer.Option("--files", help="One absolute path per line.")]
# A search's files, as ripgrep's and grep's `-l` list those with matches.
ResultFilesOpt = Annotated[bool, typer.Option("--files", "-l", help="One absolute path per line (as rg -l).")]
NullOpt = Annotated[
    bool, typer.Option("-0", "--null", help="With --files: end each path with NUL, not a newline (for xargs -0).")
]
CsvOpt = Annotated[bool, typer.Option("--csv", help="CSV with a header row (the last column: the absolute path).")]
MdOpt = Annotated[bool, typer.Option("--md", help="A Markdown table.")]
XmlOpt = Annotated[bool, typer.Option("--xml", help="An XML document.")]
VimgrepOpt = Annotated[
    bool,
    typer.Option(
        "--vimgrep",
        help="abs_path:line:col:text, a line per matching line of a passage, 1-based (vim quickfix, fzf, telescope).",
    ),
]
ColorOpt = Annotated[
    Color,
    typer.Option(
        "--color",
        help="Colour the human text: auto (a terminal, unless NO_COLOR is set or TERM=dumb), "
        "always (human text, in a pipe too), never.",
    ),
]
NoPagerOpt = Annotated[
    bool,
    typer.Option(
        "--no-pager",
        help="Do not page long human output on a terminal through $GNO_PAGER or $PAGER (default: less -FRX).",
    ),
]
NoAutostartOpt = Annotated[bool, typer.Option("--no-autostart", help="Fail (exit 3) instead of starting gnod.")]


def _fmt(
    json_: bool = False,
    files: bool = False,
    csv: bool = False,
    md: bool = False,
    xml: bool = False,
    *,
    human: bool = False,
    jsonl: bool = False,
    vimgrep: bool = False,
    format: Format | None = None,
) -> str | None:
    chosen = [
        name
        for name, on in (
            ("human", human),
            ("json", json_),
            ("jsonl", jsonl),
            ("files", files),
            ("csv", csv),
            ("md", md),
            ("xml", xml),
            ("vimgrep", vimgrep),
        )
        if on
    ]
    shown = ["--" + c for c in chosen] + ([f"--format {format.value}"] if format else [])
    if len(shown) > 1:
        raise typer.BadParameter(f"pick one output format, not {' and '.join(shown)}")
    return format.value if format else chosen[0] if chosen else None


def _view(fmt: str | None, color: Color = Color.auto, no_pager: bool = False, null: bool = False):
    from gnoctl.output.common import View

    if null and fmt != "files":
        raise typer.BadParameter("-0 (--null) goes with --files")
    return View(color.value, not no_pager, null)


def _exit(code: int) -> None:
    raise typer.Exit(code)


# --- the commands whose options come from gnoctl.spec --------------------------------
#
# search, vsearch, similar, query, ask and get take their params options from gnoctl.spec
# (generated from gnod/protocol.py): `_spec_command` builds each typer command from them,
# beside the client's own options listed here, and turns what was given into params with
# gnoctl.args.params, as the fast path does.

_KINDS: dict[str, Any] = {"int": int, "float": float, "str": str, "day": str, "list": list[str]}
_COMPLETIONS = {"collections": _collection_names, "types": _type_names}


def _day(text: str, dest: str) -> str:
    """A `--since`/`--until` value (`dest`: its field) as the daemon takes it (gnoctl.days)."""
    try:
        return filter_day(dest, text)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


def _param_name(o: dict) -> str:
    """The typer parameter of a gnoctl.spec option (a Python name: a dotted field's dots as _)."""
    return o["dest"].replace(".", "_")


def _spec_parameters(command: str) -> list[inspect.Parameter]:
    """The typer parameters of a command's params options, in gnoctl.spec's order."""
    out = []
    for o in SPEC[command]:
        name, kind, default = _param_name(o), o["kind"], o["default"]
        if kind in ("words", "arg"):
            tp: Any = list[str] if kind == "words" else str
            out.append(inspect.Parameter(name, POSITIONAL, annotation=Annotated[tp, typer.Argument(help=o["help"])]))
            continue
        if kind == "flag":
            tp, default = bool, False  # given or not; gnoctl.args.params sends the opposite of the field's default
        elif kind == "choice":
            choices = Enum(name.title(), {c: c for c in o["choices"]}, type=str)  # type: ignore[misc]
            tp, default = choices, choices(default)
        else:
            tp = _KINDS[kind] if default is not None else Optional[_KINDS[kind]]
        option = typer.Option(
            *o["flags"],
            min=o.get("lo"),
            max=o.get("hi"),
            metavar=o.get("metavar"),
            help=o["help"],
            autocompletion=_COMPLETIONS.get(o.get("complete", "")),
            parser=partial(_day, dest=o["dest"]) if kind == "day" else None,
        )
        out.append(inspect.Parameter(name, KEYWORD, default=default, annotation=Annotated[tp, option]))
    return out


def _spec_command(command: str, client: list[inspect.Parameter], doc: str, run: Callable[[dict, dict], int]) -> None:
    """Add `command` to the app: its params options (gnoctl.spec), then `client`, its
    own; `run(params, client values)` gives the exit status."""
    spec = SPEC[command]

    def call(**given: Any) -> None:
        values: dict[str, Any] = {}
        words: list[str] = []
        for o in spec:
            value = given.pop(_param_name(o))
            if o["kind"] in ("words", "arg"):
                words = value if o["kind"] == "words" else [value]
            else:
                values[o["dest"]] = value.value if isinstance(value, Enum) else value
        _exit(run(params(command, values, words), given))

    call.__signature__ = inspect.Signature([*_spec_parameters(command), *client])  # type: ignore[attr-defined]
    call.__doc__ = doc
    app.command(command)(call)


def _client(*options: tuple[str, Any, Any]) -> list[inspect.Parameter]:
    return [inspect.Parameter(name, KEYWORD, default=default, annotation=tp) for name, tp, default in options]


# The output options every search command takes, by the name `_fmt` and `_view` know them.
_FORMATS = (
    ("format", FormatOpt, None),
    ("human", HumanOpt, False),
    ("json_", JsonOpt, False),
    ("jsonl", JsonlOpt, False),
    ("files", ResultFilesOpt, False),
    ("null", NullOpt, False),
    ("csv", CsvOpt, False),
    ("md", MdOpt, False),
    ("xml", XmlOpt, False),
)
_TERMINAL = (("color", ColorOpt, Color.auto), ("no_pager", NoPagerOpt, False))
_AUTOSTART = ("no_autostart", NoAutostartOpt, False)
_RESULTS = _client(*_FORMATS, ("vimgrep", VimgrepOpt, False), *_TERMINAL, _AUTOSTART)


def _autostart(c: dict) -> bool | None:
    return False if c["no_autostart"] else None


def _chosen(c: dict) -> str | None:
    """The output format the client options `c` pick (those of the flags a command has)."""
    flags = {k: c.get(k, False) for k in ("human", "jsonl", "vimgrep")}
    return _fmt(*(c.get(k, False) for k in ("json_", "files", "csv", "md", "xml")), **flags, format=c.get("format"))


def _results(method: str) -> Callable[[dict, dict], int]:
    """Run a search-like command with the output options of _RESULTS."""

    def run(p: dict, c: dict) -> int:
        fmt = _chosen(c)
        view = _view(fmt, c["color"], c["no_pager"], c["null"])
        return commands.retrieve(method, for_format(method, p, fmt), fmt, _autostart(c), view)

    return run


SEARCH_HELP = """Lexical (BM25) search: exact words first, then their stems in the query's languages.

    Every word is optional, as in web search engines: the documents holding more of the
    words, and the rarer ones, rank first; "quotes" ask for a phrase, and filters (--tag,
    --path, -t, --since) do what other tools' `tag:` or `path:` do. A word starting
    with a single dash and a letter is a negated term (`-staging`); in capitals, or
    with no letter after the dash, it is text as code writes it (`-EINVAL`, `-DDEBUG`,
    `-1`, `->next`). One letter (`-l`) is an option, and an unknown option is an error;
    words after `--` are all the query's, never options (`gnoctl search deploy -- -x`:
    deploy, x left out).

    Score: BM25 relative to the best hit (1.0), in (0, 1]; among near-equal matches the
    page named as the query, holding its words in order, or in its language ranks first
    (docs/protocol.md). Matched words are bold on
    a terminal, `**bold**` with --md, offsets (`matches`) in JSON. Output is human text
    on a terminal and JSON otherwise unless a format is given. Exit: 0 ok (something
    matched), 1 no match (the empty result is still printed), 2 an error (bad input
    included), 3 daemon not running (with --no-autostart).
    """
VSEARCH_HELP = """Vector (semantic) search: documents whose meaning is nearest to the query.

    Uses the embedding model's vectors of every chunk (see `gnoctl embed`, `gnoctl
    models`); each document is scored by its best chunk, shown as the snippet. Score is
    (1 + cosine) / 2. With a collection filter you still get the full -n results.
    Exit: 0 ok (something matched), 1 no match, 2 bad input, no vectors or model
    unavailable (see `gnoctl doctor`), 3 daemon not running.
    """
SIMILAR_HELP = """Documents like REF: nearest by meaning when it has vectors, else found by its
    most informative words (rare in the index, frequent in it); `method` says which.

    The document itself and identical copies are left out. Exit: 0 ok, 1 nothing
    like it, 2 an error (NOT_FOUND when REF is not indexed), 3 daemon not running.
    """
_spec_command("search", _RESULTS, SEARCH_HELP, _results("search"))
_spec_command("vsearch", _RESULTS, VSEARCH_HELP, _results("vsearch"))
_spec_command(
    "similar",
    _client(
        ("human", HumanOpt, False),
        ("json_", JsonOpt, False),
        ("files", FilesOpt, False),
        ("csv", CsvOpt, False),
        ("md", MdOpt, False),
        ("xml", XmlOpt, False),
        *_TERMINAL,
        _AUTOSTART,
    ),
    SIMILAR_HELP,
    lambda p, c: commands.similar(p, _chosen(c), _autostart(c), _view(_chosen(c), c["color"], c["no_pager"])),
)


BenchMode = Enum("BenchMode", {m: m for m in BENCH_MODES}, type=str)  # type: ignore[misc]


@app.command()
def bench(
    fixture: Annotated[str, typer.Argument(help="Queries with their expected documents: a JSON or YAML file.")],
    mode: Annotated[
        Optional[list[BenchMode]], typer.Option("--mode", help="Only this mode (repeatable); default: all three.")
    ] = None,
    k: Annotated[int, typer.Option("-k", min=1, max=100, help="Recall is measured in the first K results.")] = 10,
    json_: JsonOpt = False,
    human: HumanOpt = False,
    no_autostart: NoAutostartOpt = False,
) -> None:
    """Measure search quality on your own documents: nDCG@10, MRR@10, recall@K and latency
    (p50, p95) of search, vsearch and query over a fixture of queries and the documents
    they should find.

    The fixture: {"collections": ["notes"], "queries": [{"query": "how do we deploy",
    "relevant": ["notes/deploy.md"]}]} (`relevant` may map documents to grades). A mode
    the daemon cannot serve (vsearch without vectors) is reported as skipped. Exit: 0
    ok, 2 a bad fixture or input, or a runtime error, 3 daemon not running.
    """
    modes = [m.value for m in mode] if mode else list(BENCH_MODES)
    _exit(
        commands.bench(
            fixture, list(dict.fromkeys(modes)), k, _fmt(json_, human=human), False if no_autostart else None
        )
    )


QUERY_HELP = """Hybrid search: BM25 and vectors, LLM query variants, fused and reranked.

    The best documents for the query, each with its best passage (or the whole
    document when it is short and clearly relevant). A confident BM25 match skips
    the expansion; a missing model does not fail the query: that part is skipped
    and named in a "degraded" line (see `gnoctl doctor`). Scores are in [0, 1].
    Variants you write (--lex, --vec, --hyde) replace the LLM's: the full pipeline
    without a local generator. As in `search`, `-word` is a negated term, a one-letter
    `-x` an option; words after `--` are all the query's, never options.

    Exit: 0 ok (something matched), 1 no match, 2 an error: bad input (including --mode
    deep with fewer than 2 keywords: INVALID_QUERY), a model or runtime error; 3 daemon
    not running (with --no-autostart).
    """
ASK_HELP = """Answer a question from your documents, citing them as [1], [2]…

    Retrieves as `gnoctl query` does, then the generate model answers from the best
    sources only. On a terminal the answer streams as it is written; the final text,
    with its citations numbered in order, then replaces it, followed by the sources.
    When the sources do not answer the question it says so instead (exit 0).

    Exit: 0 ok (also when it abstains), 2 bad input, no generate model (see `gnoctl
    doctor`; --no-answer needs none) or another error, 3 daemon not running (with
    --no-autostart).
    """
_spec_command("query", _RESULTS, QUERY_HELP, _results("query"))


def _ask(p: dict, c: dict) -> int:
    fmt = _chosen(c)
    if fmt == "vimgrep":
        raise typer.BadParameter("ask lists sources: use --files, --jsonl, --csv, --md or --xml")
    return commands.ask(p, fmt, _autostart(c), _view(fmt, c["color"], c["no_pager"], c["null"]))


_spec_command(
    "ask",
    _client(
        ("format", FormatOpt, None),
        ("human", HumanOpt, False),
        ("json_", JsonOpt, False),
        ("jsonl", Annotated[bool, typer.Option("--jsonl", help="JSON Lines: one source per line.")], False),
        ("files", Annotated[bool, typer.Option("--files", help="The cited sources' absolute paths.")], False),
        ("null", NullOpt, False),
        ("csv", Annotated[bool, typer.Option("--csv", help="The sources as CSV with a header row.")], False),
        ("md", Annotated[bool, typer.Option("--md", help="The answer and a Markdown table of its sources.")], False),
        ("xml", XmlOpt, False),
        *_TERMINAL,
        _AUTOSTART,
    ),
    ASK_HELP,
    _ask,
)


@app.command()
def embed(
    force: Annotated[
        bool, typer.Option("--force", help="Drop this model's vectors and embed everything again.")
    ] = False,
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Embed every chunk that has no vector yet, and wait for it (progress on a terminal).

    gnod does this in the background anyway after each change; this command waits for
    the backlog to be empty. Ctrl-C stops waiting, not the embedding.
    """
    _exit(commands.embed(force, _fmt(json_, human=human)))


@app.command()
def doctor(json_: JsonOpt = False, human: HumanOpt = False) -> None:
    """Check each component (daemon, config, collections, vectors, models) and say how to fix it.

    Exit 2 when a component fails.
    """
    _exit(commands.doctor(_fmt(json_, human=human)))


@models_app.command("list")
def models_list(json_: JsonOpt = False, human: HumanOpt = False) -> None:
    """The preset, each role's model, whether it is downloaded and loaded."""
    _exit(commands.models_list(_fmt(json_, human=human)))


@models_app.command("pull")
def models_pull(
    target: Annotated[
        str, typer.Argument(help="embed, rerank, generate, all, or a model URI (hf:org/repo/file.gguf).")
    ] = "all",
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Download models into the cache (resumes an interrupted download; HF_ENDPOINT and HF_TOKEN apply)."""
    _exit(commands.models_pull(target, _fmt(json_, human=human)))


@models_app.command("use")
def models_use(
    choices: Annotated[
        list[str],
        typer.Argument(
            help="A preset (light, slim, balanced, quality), ROLE=URI (embed, rerank, generate; "
            "e.g. embed=file:/models/e5.gguf), or a preset and ROLE=URI overrides, applied at once.",
            show_default=False,
        ),
    ],
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Switch preset and/or roles' models (saved in config.toml); vectors are re-made in the background.

    `gnoctl models use embed=file:/m/e5.gguf rerank=file:/m/rr.gguf` sets both, or
    neither if one is refused."""
    presets = [c for c in choices if "=" not in c]
    if len(presets) > 1:
        raise typer.BadParameter(f"one preset at a time, not {' and '.join(presets)}")
    roles: dict[str, str] = {}
    for role, _, uri in (c.partition("=") for c in choices if "=" in c):
        if role in roles:
            raise typer.BadParameter(f"{role} is given twice")
        roles[role] = uri
    params: dict = {"roles": roles, **({"preset": presets[0]} if presets else {})}
    _exit(commands.models_use(params, _fmt(json_, human=human)))


@models_app.command("path")
def models_path(json_: JsonOpt = False, human: HumanOpt = False) -> None:
    """Where models are cached, and each role's file."""
    _exit(commands.models_path(_fmt(json_, human=human)))


@models_app.command("clear")
def models_clear(
    uri: Annotated[Optional[str], typer.Argument(help="Only this model (default: every cached file).")] = None,
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Delete downloaded model files from the cache."""
    _exit(commands.models_clear(uri, _fmt(json_, human=human)))


GET_HELP = """Print one indexed document (its canonical Markdown), whole or a line range.

    `path:LINE` prints from that line on (`-l N`: N lines), `path:FIRST-LAST` those
    lines, `path:NAME` the definition NAME in it (`kernel/fork.c:copy_process`,
    `parser.py:Parser.parse`), or by its qualified name alone
    (`http.client.HTTPConnection.request`), and `path:Heading` or `path#Heading` a
    section (`notes.md#Install`, a PDF's `report.pdf#Page 3`, an Org headline). A file
    is also named by its name alone, in any folder (`fetcher.py`), and a note by its
    name without `.md`, as a wiki link names it (`"Project Alpha"`). Lines are numbered
    as in the file, but the text is what was indexed, not a copy of its bytes: trailing
    whitespace and control characters are dropped (and a PDF or Office file is its
    Markdown). Read the file itself to diff or patch it.
    """
_spec_command(
    "get",
    _client(("json_", JsonOpt, False), ("human", HumanOpt, False), _AUTOSTART, ("no_pager", NoPagerOpt, False)),
    GET_HELP,
    lambda p, c: commands.get(p, _chosen(c), _autostart(c), _view(None, no_pager=c["no_pager"])),
)


@app.command("multi-get")
def multi_get(
    refs: Annotated[
        Optional[list[str]],
        typer.Argument(
            help="Documents, as for `get` (path:LINE, path:FIRST-LAST: those lines; path:NAME: a definition)."
        ),
    ] = None,
    pattern: Annotated[
        Optional[list[str]],
        typer.Option(
            "-p",
            "--pattern",
            help="Glob over collection/path, e.g. 'notes/2024/*.md' or 'notes/*.{md,txt}'; or over the paths "
            "inside every collection, when its first folder is no collection's name ('include/linux/slab*.h'). "
            "Repeat it for the documents of any of them.",
        ),
    ] = None,
    max_bytes: Annotated[
        int, typer.Option("--max-bytes", min=1, help="Stop after this much content.")
    ] = commands.MULTI_GET_MAX_BYTES,
    json_: JsonOpt = False,
    human: HumanOpt = False,
    files: FilesOpt = False,
    null: NullOpt = False,
    no_pager: NoPagerOpt = False,
) -> None:
    """Print several documents at once (by reference and/or glob)."""
    fmt = _fmt(json_, files, human=human)
    _exit(commands.multi_get(refs or [], pattern, max_bytes, fmt, _view(fmt, no_pager=no_pager, null=null)))


def ls(
    collection: Annotated[
        Optional[str],
        typer.Argument(
            help="Collection to list, or a folder of one as `ls` prints paths (tree/mm) or inside them (mm), "
            "or from here (., ../mm); default: all.",
            autocompletion=_collection_names,
        ),
    ] = None,
    named: Annotated[
        Optional[str],
        typer.Option(
            "-c",
            "--collection",
            help="The collection to list, as a search names it (the same as the argument).",
            autocompletion=_collection_names,
        ),
    ] = None,
    prefix: Annotated[
        str,
        typer.Option(
            "--prefix", help="Only paths starting with this, as `ls` prints them (collection/path) or inside any."
        ),
    ] = "",
    limit: Annotated[
        Optional[int],
        typer.Option(
            "-n",
            "--limit",
            min=1,
            max=LS_LIMIT_MAX,
            help="List at most this many (more: a note on stderr says so). "
            f"Default: {commands.LS_LIMIT:,}; with --files or --jsonl, every document.",
        ),
    ] = None,
    folders: Annotated[
        bool,
        typer.Option(
            "-d",
            "--folders",
            help="One level, as ls(1): the folders in it (each with its documents at any depth), "
            "then the documents directly in it.",
        ),
    ] = False,
    json_: JsonOpt = False,
    human: HumanOpt = False,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="JSON Lines: one document per line.")] = False,
    files: FilesOpt = False,
    null: NullOpt = False,
    color: ColorOpt = Color.auto,
    no_pager: NoPagerOpt = False,
    **filters: Any,
) -> None:
    """List indexed documents: collection/path and title, aligned.

    When there are more than -n documents, the first -n are listed and stderr says how
    many there are (JSON has `total`); --files and --jsonl list them all unless -n
    says. `gnoctl ls tree/drivers -d` shows what is in a folder, one level: its folders
    first (`tree/drivers/usb/  1,204 documents`). The search filters choose which
    documents are listed: `gnoctl ls notes --tag meeting --since 2.weeks.ago`; nothing
    passing them exits 1.
    """
    if named is not None and collection is not None and named != collection:
        raise typer.BadParameter(f"list one collection: {named} or {collection}", param_hint="'-c'")
    collection = collection if named is None else named
    fmt = _fmt(json_, files, human=human, jsonl=jsonl)
    chosen = params("ls", {o["dest"]: filters[_param_name(o)] for o in SPEC["ls"]}, []).get("filters")
    _exit(commands.ls(collection, prefix, limit, fmt, _view(fmt, color, no_pager, null), folders, chosen))


# `ls`'s own options, then the filters' (gnoctl.spec), which typer passes as `filters`.
ls.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [*list(inspect.signature(ls, eval_str=True).parameters.values())[:-1], *_spec_parameters("ls")]
)
app.command()(ls)


@app.command()
def status(
    watch: Annotated[
        bool,
        typer.Option(
            "-w",
            "--watch",
            help=(
                "Refresh every second, in place on a terminal (JSON: one status per line), until Ctrl-C "
                "or gnod stops (exit 3; a gnod started again is followed)."
            ),
        ),
    ] = False,
    errors: Annotated[
        bool,
        typer.Option(
            "-e", "--errors", help="Every file that could not be indexed, with the reason (status names the last 5)."
        ),
    ] = False,
    json_: JsonOpt = False,
    human: HumanOpt = False,
    no_autostart: NoAutostartOpt = False,
) -> None:
    """Daemon, index file and size, one line per collection, vectors, models, recent ingest errors.

    Each collection's line says what is true now: `indexing done/total` with its rate
    and ETA while a run goes, `N pending` for changes the watcher saw, or `up to date`.
    While chunks are embedded, the vectors line shows the rate and ETA too. The threads
    line says how many llama.cpp threads the local models use: set by [models] threads,
    or measured (gnod tries 1, half and all the cores on the embedding backlog and keeps
    the fastest). Missing models and vectors come with the command that fixes them.
    """
    if errors and watch:
        raise typer.BadParameter("--errors lists them once; it does not go with --watch", param_hint="'--errors'")
    _exit(commands.status(_fmt(json_, human=human), watch, False if no_autostart else None, errors))


@app.command()
def watch(
    collections: Annotated[
        Optional[list[str]],
        typer.Argument(
            help="Collections to follow (default: all, and any added later).", autocompletion=_collection_names
        ),
    ] = None,
    json_: Annotated[bool, typer.Option("--json", "--jsonl", help="One JSON object per change (JSON Lines).")] = False,
    human: HumanOpt = False,
) -> None:
    """Print each change of the index as it is committed, until Ctrl-C.

    A line says the time, added / changed / removed and the document (collection/path);
    a search made when it is printed already sees the change. `lagged` says changes were
    missed (gnoctl read too slowly): refresh what you show. Exits 3 when gnod stops.
    """
    _exit(commands.watch(collections or [], "json" if json_ else "human" if human else None))


@app.command()
def update(
    collection: Annotated[
        Optional[str], typer.Argument(help="Collection to re-index (default: all).", autocompletion=_collection_names)
    ] = None,
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Re-index collections now: only changed files are read (unchanged ones cost a stat)."""
    _exit(commands.update(collection, _fmt(json_, human=human)))


@collection_app.command("add")
def collection_add(
    path: Annotated[str, typer.Argument(help="Folder to index.")],
    name: Annotated[Optional[str], typer.Option("--name", help="Collection name (default: folder name).")] = None,
    include: Annotated[
        Optional[list[str]],
        typer.Option(
            "--include",
            help=(
                "gitignore-style glob to index (repeatable), instead of the default kinds: Markdown, text, "
                "source and build files, documents (what those leave out is counted in what it prints; "
                "what --include leaves out is not)."
            ),
        ),
    ] = None,
    also: Annotated[
        Optional[list[str]],
        typer.Option(
            "--also",
            help="Glob of files to index besides the default kinds or the --include globs (repeatable): "
            "--also '*.tc' --also 'Documentation/ABI/**'.",
        ),
    ] = None,
    exclude: Annotated[Optional[list[str]], typer.Option("--exclude", help="Glob to skip (repeatable).")] = None,
    language: Annotated[
        Optional[str],
        typer.Option("--language", help="Language of the documents (e.g. en, de); default: detected per document."),
    ] = None,
    no_gitignore: Annotated[bool, typer.Option("--no-gitignore", help="Index files .gitignore excludes.")] = False,
    follow_symlinks: Annotated[
        bool,
        typer.Option(
            "--follow-symlinks",
            help="Follow symbolic links whose targets are inside the folder (links out of it are never followed).",
        ),
    ] = False,
    no_index: Annotated[bool, typer.Option("--no-index", help="Only register it; index later.")] = False,
    allow_overlap: Annotated[
        bool,
        typer.Option(
            "--allow-overlap",
            help="Add it even though another collection "
            "covers this folder, a parent or a "
            "sub-folder (results then repeat).",
        ),
    ] = False,
    description: Annotated[
        Optional[str],
        typer.Option("--description", "-d", help="What it holds, in a sentence (see `collection describe`)."),
    ] = None,
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Add a folder as a collection and index it (progress on a terminal).

    A folder that another collection already covers (the same folder, a parent or a
    sub-folder) is refused, naming that collection; --allow-overlap insists.

    Ctrl-C stops waiting, not the indexing: gnod finishes the run in the background
    (`gnoctl status` shows its progress; `gnoctl collection remove NAME` undoes the add).
    """
    _exit(
        commands.collection_add(
            path,
            name,
            include or [],
            exclude or [],
            language,
            not no_gitignore,
            follow_symlinks,
            not no_index,
            _fmt(json_, human=human),
            allow_overlap,
            description,
            also or [],
        )
    )


@collection_app.command("list")
def collection_list(json_: JsonOpt = False, human: HumanOpt = False) -> None:
    """List collections with their document counts."""
    _exit(commands.collection_list(_fmt(json_, human=human)))


@collection_app.command("describe")
def collection_describe(
    name: Annotated[str, typer.Argument(help="Collection name.", autocompletion=_collection_names)],
    description: Annotated[
        Optional[str],
        typer.Argument(help='What it holds, in a sentence or two (at most 500 characters); "" removes it.'),
    ] = None,
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Say what a collection holds, so people and agents know where to search.

    The description is shown by `status` and `collection list`, and told to AI agents by
    `gnoctl mcp` (its instructions and the search tools' `collections` argument). Without
    DESCRIPTION, prints the one in force. It is kept in config.toml; no file is re-indexed.
    """
    _exit(commands.collection_describe(name, description, _fmt(json_, human=human)))


@collection_app.command("set")
def collection_set(
    name: Annotated[str, typer.Argument(help="Collection name.", autocompletion=_collection_names)],
    include: Annotated[
        Optional[list[str]],
        typer.Option("--include", help="Glob to index instead of the default kinds (repeatable); '' for the defaults."),
    ] = None,
    also: Annotated[
        Optional[list[str]],
        typer.Option("--also", help="Glob to index besides the default kinds or --include (repeatable); '' for none."),
    ] = None,
    exclude: Annotated[
        Optional[list[str]], typer.Option("--exclude", help="Glob to skip (repeatable); '' for none.")
    ] = None,
    language: Annotated[
        Optional[str],
        typer.Option("--language", help="Language of the documents (e.g. en, de); auto: detected per document."),
    ] = None,
    gitignore: Annotated[
        Optional[bool],
        typer.Option("--gitignore/--no-gitignore", help="Leave out what .gitignore excludes, or index it."),
    ] = None,
    follow_symlinks: Annotated[
        Optional[bool],
        typer.Option(
            "--follow-symlinks/--no-follow-symlinks",
            help="Follow symbolic links whose targets are inside the folder, or not.",
        ),
    ] = None,
    no_index: Annotated[bool, typer.Option("--no-index", help="Only change the settings; index later.")] = False,
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Change which files a collection indexes, then index it (progress on a terminal).

    Each option given replaces that setting (`--exclude build/ --exclude '*.log'` is the
    whole list of excludes); the others stay. What the new settings take in is indexed,
    what they leave out is removed. The settings are kept in config.toml, as `collection
    add` wrote them. Ctrl-C stops waiting, not the indexing.
    """
    settings = {
        "include": include,
        "also": also,
        "exclude": exclude,
        "language": language,
        "gitignore": gitignore,
        "follow_symlinks": follow_symlinks,
    }
    _exit(commands.collection_set(name, settings, not no_index, _fmt(json_, human=human)))


@collection_app.command("remove")
def collection_remove(
    name: Annotated[str, typer.Argument(help="Collection name.", autocompletion=_collection_names)],
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Remove a collection and everything indexed from it (files on disk are untouched)."""
    _exit(commands.collection_remove(name, _fmt(json_, human=human)))


@daemon_app.command("start")
def daemon_start(json_: JsonOpt = False, human: HumanOpt = False) -> None:
    """Start gnod in the background (no-op if it is running)."""
    _exit(commands.daemon_start(_fmt(json_, human=human)))


@daemon_app.command("stop")
def daemon_stop(
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.0, help="Seconds to wait for a clean stop before killing gnod.")
    ] = 20.0,
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Stop gnod cleanly (in-flight work is finished or committed first); past --timeout it is killed."""
    _exit(commands.daemon_stop(_fmt(json_, human=human), timeout))


@daemon_app.command("status")
def daemon_status(json_: JsonOpt = False, human: HumanOpt = False) -> None:
    """Is gnod running? Exit 0 if so, 3 if not."""
    _exit(commands.daemon_status(_fmt(json_, human=human)))


@daemon_app.command("restart")
def daemon_restart(json_: JsonOpt = False, human: HumanOpt = False) -> None:
    """Stop and start gnod (e.g. after an upgrade)."""
    _exit(commands.daemon_restart(_fmt(json_, human=human)))


@daemon_app.command("install")
def daemon_install(
    print_: Annotated[
        bool,
        typer.Option("--print", help="Print the file that would be written (and where, with --json); change nothing."),
    ] = False,
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Run gnod at login, as a systemd user service (Linux) or launchd agent (macOS).

    Writes ~/.config/systemd/user/gnod.service (honouring XDG_CONFIG_HOME) or
    ~/Library/LaunchAgents/dev.gno.gnod.plist for the gnod installed with this gnoctl,
    recording GNO_HOME when it is set, then enables and starts it. A gnod started by
    gnoctl is stopped once the service manager has answered, so that it owns the
    running one.

    If systemctl or launchctl is missing or fails (e.g. no user session bus in a
    container), the file is still written, a gnod running keeps running, and the
    commands to run by hand are printed: exit 2.
    """
    _exit(commands.daemon_install(print_, _fmt(json_, human=human)))


@daemon_app.command("uninstall")
def daemon_uninstall(json_: JsonOpt = False, human: HumanOpt = False) -> None:
    """Stop running gnod at login: undo `daemon install`.

    Stops and disables the service and removes its file. Exit 2, with the commands to run
    by hand, if systemctl or launchctl fails.
    """
    _exit(commands.daemon_uninstall(_fmt(json_, human=human)))


@daemon_app.command("logs")
def daemon_logs(
    follow: Annotated[
        bool, typer.Option("-f", "--follow", help="Keep printing new lines, across log rotation, until Ctrl-C.")
    ] = False,
    lines: Annotated[int, typer.Option("-n", "--lines", min=0, help="Print this many of the last lines first.")] = 50,
) -> None:
    """Print (or follow) the end of gnod's log.

    The log is gnod.log in the state dir (reaching into the rotated gnod.log.1 for
    older lines); gnod writes it whether gnoctl, systemd or launchd started it. With no log yet,
    says where it will be (and with --follow waits for it).
    """
    _exit(commands.daemon_logs(follow, lines))


# `gnoctl mcp` serves; its subcommands set up the MCP clients that will run it.
mcp_app = typer.Typer(context_settings=HELP)
app.add_typer(mcp_app, name="mcp")


@mcp_app.callback(invoke_without_command=True)
def mcp(
    ctx: typer.Context,
    enable_write: Annotated[
        bool, typer.Option("--enable-write", help="Also offer collection_add, collection_remove, update and embed.")
    ] = False,
    http: Annotated[
        Optional[str],
        typer.Option(
            "--http",
            metavar="[HOST:]PORT",
            help="Serve streamable HTTP on HOST:PORT (default host 127.0.0.1) instead of stdio.",
        ),
    ] = None,
    token_file: Annotated[
        Optional[str],
        typer.Option(
            "--token-file",
            help="HTTP bearer token file (created 0600 if missing; default: mcp-token in the state dir).",
        ),
    ] = None,
    no_token: Annotated[bool, typer.Option("--no-token", help="HTTP without a token (loopback only).")] = False,
) -> None:
    """Serve gno to AI agents over MCP (Model Context Protocol), as a thin bridge to gnod.

    Tools: search, vsearch, query, ask, get, similar, multi_get, ls, status (and the write tools with
    --enable-write); documents are resources gno://collection/path. Every agent shares the one
    gnod (started when absent), its warm models and its fresh index. Over stdio (an MCP
    client's `command: gnoctl, args: [mcp]`) it exits when stdin closes.

    `gnoctl mcp install --target CLIENT` writes that client's config to run it.
    """
    if ctx.invoked_subcommand is not None:
        if enable_write or http or token_file or no_token:
            raise typer.BadParameter(
                f"serving options go with `gnoctl mcp` alone, not with `mcp {ctx.invoked_subcommand}`"
            )
        return
    from gnoctl.mcp.run import run as run_mcp

    _exit(run_mcp(http, enable_write, token_file, no_token))


# The clients `mcp install` knows: gnoctl.mcp.install.TARGETS (kept in step by a test).
class McpTarget(str, Enum):
    claude_desktop = "claude-desktop"
    claude_code = "claude-code"
    cursor = "cursor"
    vscode = "vscode"
    zed = "zed"
    windsurf = "windsurf"
    codex = "codex"


class McpScope(str, Enum):
    user = "user"
    project = "project"


McpTargetOpt = Annotated[McpTarget, typer.Option("--target", "-t", help="The MCP client whose config file to edit.")]
McpScopeOpt = Annotated[
    McpScope,
    typer.Option(
        "--scope",
        help="user: the client's own file in your home; "
        "project: the file in the current directory "
        "(claude-code .mcp.json, cursor .cursor/mcp.json, "
        "vscode .vscode/mcp.json).",
    ),
]
McpNameOpt = Annotated[str, typer.Option("--name", help="The server's name in the client's config.")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print the change as a unified diff; write nothing.")]


@mcp_app.command("install")
def mcp_install(
    target: McpTargetOpt,
    scope: McpScopeOpt = McpScope.user,
    name: McpNameOpt = "gno",
    enable_write: Annotated[
        bool, typer.Option("--enable-write", help="The entry runs `gnoctl mcp --enable-write`.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an entry of that name that runs something else.")
    ] = False,
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Configure an MCP client to run this gnoctl's `gnoctl mcp` (by its absolute path).

    Edits the client's own file (created when absent): the other servers, comments and
    layout stay as they are. Run again: nothing changes ("already configured"). An entry
    of that name that runs something else is kept unless --force. A file that is not
    valid JSON/TOML is left untouched: exit 2. Restart the client afterwards.
    """
    _exit(commands.mcp_install(target.value, scope.value, name, enable_write, force, dry_run, _fmt(json_, human=human)))


@mcp_app.command("uninstall")
def mcp_uninstall(
    target: McpTargetOpt,
    scope: McpScopeOpt = McpScope.user,
    name: McpNameOpt = "gno",
    dry_run: DryRunOpt = False,
    json_: JsonOpt = False,
    human: HumanOpt = False,
) -> None:
    """Remove gno's entry from an MCP client's config file, and nothing else."""
    _exit(commands.mcp_uninstall(target.value, scope.value, name, dry_run, _fmt(json_, human=human)))


@mcp_app.command("status")
def mcp_status(name: McpNameOpt = "gno", json_: JsonOpt = False, human: HumanOpt = False) -> None:
    """Where gno is configured: every known client's config file (yours, and the current
    directory's project files), whether it has the entry, what it runs and whether that is
    on disk."""
    _exit(commands.mcp_status(name, _fmt(json_, human=human)))


@app.command()
def web(
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="The port to serve on (0: any free one).")
    ] = 8780,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the page in the default browser.")] = False,
    host: Annotated[
        str, typer.Option("--host", help="The address to serve on (loopback unless --allow-remote).")
    ] = "127.0.0.1",
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="Allow a --host other machines can reach (plain HTTP).")
    ] = False,
) -> None:
    """A local web page over gnod: search as you type, documents, answers, collections and
    status, live. Prints its address with a key (kept in `web-key` in the state dir); the
    first visit trades the key for a cookie. Serves until Ctrl-C."""
    from gnoctl.web.run import run as run_web

    _exit(run_web(host, port, open_browser, allow_remote))


def split_words(command, args: list[str], negated_words: bool = True) -> tuple[list[str], list[str]]:
    """Option tokens (with their values) and words of a click command's arguments, split
    by `split_args` from the command's own options (`-staging` stays a query word)."""
    kinds: dict[str, str] = {}
    for p in command.params:
        if getattr(p, "param_type_name", None) == "option":
            numeric = isinstance(p.default, int) and not isinstance(p.default, bool)
            kind = "flag" if p.is_flag else "int" if numeric else "str"
            kinds.update(dict.fromkeys([*p.opts, *p.secondary_opts], kind))
    return split_args(kinds, args, negated_words)


def _having(group: Any, option: str) -> list[str]:
    """The commands (at the top level) that take `option`."""
    return [
        name
        for name, command in group.commands.items()
        if any(option in getattr(p, "opts", ()) for p in getattr(command, "params", ()))
    ]


# What asks for an output format: a usage error prints as JSON where --json alone did.
_FORMAT_FLAGS = frozenset(
    {"--format", "--human", "--json", "--jsonl", "--files", "-l", "--csv", "--md", "--xml", "--vimgrep"}
)


# The options of the filters, which `ls` takes without words too.
_FILTER_FLAGS = frozenset(flag for o in SPEC["ls"] for flag in o["flags"])


def _filter_options(options: list[str]) -> list[str]:
    """The filters' options among a command's, each with its value."""
    out: list[str] = []
    for i, option in enumerate(options):
        if option.split("=")[0] in _FILTER_FLAGS:
            out += options[i : i + (1 if "=" in option else 2)]
    return out


def run(argv: list[str]) -> int:
    """Run the typer app on `argv`; usage errors exit 2 (wire.EXIT_ERROR), like the daemon's.

    The search commands and `get` are handed to click split as the fast parser splits
    them: options, then `--`, then the words."""
    group: Any = typer.main.get_command(app)  # a group: it has .commands
    missing = False  # an option without its value: click's error says all there is to say
    if argv and (argv[0] in WORD_COMMANDS or argv[0] in FAST_OPTIONS):
        try:
            options, words = split_words(group.commands[argv[0]], argv[1:], argv[0] in WORD_COMMANDS)
            argv = [argv[0], *options, "--", *words]
        except MissingValue as e:
            argv, missing = [argv[0], *e.options], True  # ending with the option: click says it needs a value
    try:
        result = group.main(args=argv, prog_name="gnoctl", standalone_mode=False)
    except typer.Abort:
        return 130
    except Exception as e:
        # click's UsageError/BadParameter (typer vendors click; duck-typed to stay version-proof).
        if hasattr(e, "show") and hasattr(e, "exit_code"):
            e.show()
            option = getattr(e, "option_name", "") or ""
            options = argv[: argv.index("--") if "--" in argv else len(argv)]
            if [o for o in options if o.split("=")[0] in _FORMAT_FLAGS] == ["--json"]:
                # As gnod's errors are: a script reading stdout sees the error it asked for.
                details = {"usage": True, **({"option": option} if option else {})}
                message = getattr(e, "format_message", e.__str__)()
                error = {"code": wire.ERROR_NAMES[wire.INVALID_PARAMS], "message": message, "details": details}
                print(fastjson.dumps({"error": error}, indent=2))
            # An option nothing is near (click offered no other) may be text: `--max-old-space-size`.
            if missing:
                return wire.EXIT_ERROR
            if argv and argv[0] in WORD_COMMANDS and option.startswith("-") and not getattr(e, "possibilities", None):
                print(
                    f"(to search for {option} as text, quote it after `--`: gnoctl {argv[0]} WORDS -- "
                    f"'\"{option}\"'; unquoted beside other words, it leaves out what holds it)",
                    file=sys.stderr,
                )
            words = argv[argv.index("--") + 1 :] if "--" in argv else []
            filtered = _filter_options(options[1:])
            if argv and argv[0] == "search" and not words and filtered:
                print(f"(to list the documents that pass filters: gnoctl ls {shlex.join(filtered)})", file=sys.stderr)
            others = _having(group, option) if option.startswith("--") else []
            if others and argv[0] not in others:  # `search --explain`: click suggested --lang
                print(f"({option} is an option of gnoctl {' and '.join(others)})", file=sys.stderr)
            return wire.EXIT_ERROR
        raise
    return result if isinstance(result, int) else 0
