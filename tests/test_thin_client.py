"""gnoctl stays thin: its hot path imports nothing heavy, and the hand-written fast
parser (gnoctl.args) stays in step with the typer command definitions."""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
import time

import pytest

import gnoctl.output
from gnoctl.args import (
    COLOR_WHEN,
    FAST_OPTIONS,
    FORMAT_FLAGS,
    FORMATS,
    LS_LIMIT_MAX,
    MULTI_GET_REFS_MAX,
    PLAIN,
    Fallback,
    parse_fast,
)
from gnoctl.client import DaemonError
from gnod import wire

HEAVY = [
    "llama_cpp",
    "sqlite_vec",
    "tantivy",
    "usearch",
    "tree_sitter",
    "zstandard",
    "watchfiles",
    "markitdown",
    "numpy",
    "lingua",
    "Stemmer",
    "apsw",
    "msgspec",
    "gnod.store",
    "gnod.ingest",
    "gnod.search",
    "gnod.server",
    "gnod.protocol",
    "gnod.config",
    "gnod.text",
    "mcp",
    "mcp_types",
    "gnoctl.mcp",
]
NOT_ON_FAST_PATH = ["typer", "click", "pydantic", "rich"]

_PROBE = r"""
import json, sys
for name in sys.argv[1].split(","):
    __import__(name)
code = None
if len(sys.argv) > 2:
    from gnoctl.main import main
    code = main(json.loads(sys.argv[2]))
loaded = sorted(m for m in sys.modules)
print("\n@@PROBE@@" + json.dumps({"modules": loaded, "code": code}))
"""


def probe(modules: list[str], argv: list[str] | None = None, env: dict | None = None) -> dict:
    """Import `modules` (and optionally run gnoctl.main.main(argv)) in a fresh interpreter;
    return the loaded module names and main's exit status."""
    args = [sys.executable, "-c", _PROBE, ",".join(modules)]
    if argv is not None:
        args.append(json.dumps(argv))
    r = subprocess.run(args, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.rsplit("@@PROBE@@", 1)[1])
    out["modules"] = set(out["modules"])
    out["stdout"] = r.stdout.rsplit("\n@@PROBE@@", 1)[0]
    return out


def heavy_loaded(modules: set[str], names: list[str]) -> list[str]:
    return sorted(m for m in modules for n in names if m == n or m.startswith(n + "."))


FAST_MODULES = [
    "gnoctl.main",
    "gnoctl.args",
    "gnoctl.client",
    "gnoctl.commands",
    "gnoctl.output.common",
    "gnoctl.output.hits",
]
# Every renderer; the commands import those of the slow commands where they are used.
RENDERERS = [f"gnoctl.output.{m.name}" for m in pkgutil.iter_modules(gnoctl.output.__path__)]


def test_fast_path_imports_nothing_heavy():
    loaded = probe(FAST_MODULES)["modules"]
    assert heavy_loaded(loaded, HEAVY + NOT_ON_FAST_PATH) == []
    assert "gnod.wire" in loaded and "gnod.paths" in loaded  # the stdlib-only contract core


def test_renderers_import_nothing_heavy():
    loaded = probe(RENDERERS)["modules"]
    assert "gnoctl.output.doctor" in loaded and "gnoctl.output.status" in loaded
    assert heavy_loaded(loaded, HEAVY + NOT_ON_FAST_PATH) == []


def test_cli_module_imports_nothing_heavy():
    loaded = probe([*FAST_MODULES, *RENDERERS, "gnoctl.cli"])["modules"]
    assert "typer" in loaded  # the slow path may use typer, and nothing heavier
    assert heavy_loaded(loaded, HEAVY) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "foo", "--json"],
        ["search", "deploy", "-staging", "-n", "3", "-c", "notes", "--csv"],
        ["get", "notes/a.md:3", "--json"],
        ["get", "notes/a.md", "--from-line", "2", "-l", "1"],
    ],
)
def test_fast_commands_run_without_typer(argv, tmp_path):
    # No daemon and no autostart: the command runs all the way to its "not running" error.
    env = {**os.environ, "GNO_HOME": str(tmp_path), "GNO_NO_AUTOSTART": "1"}
    out = probe(["gnoctl.main"], argv, env)
    assert out["code"] == 3
    assert heavy_loaded(out["modules"], HEAVY + NOT_ON_FAST_PATH) == []
    renderers = {m for m in out["modules"] if m.startswith("gnoctl.output.")}
    assert renderers <= {"gnoctl.output.common", "gnoctl.output.hits", "gnoctl.output.documents"}


@pytest.mark.parametrize(
    "argv",
    [
        ["status"],
        ["status", "--json"],
        ["ls", "-n", "5"],
        ["ls", "notes", "--tag", "meeting", "--since", "yesterday", "-t", "md", "--path", "./x"],
        ["update", "notes"],
        ["collection", "list"],
        ["multi-get", "notes/a.md:3", "notes/b.md", "-p", "notes/*.md", "--files"],
    ],
)
def test_plain_commands_run_without_typer(argv, tmp_path):
    """`status` and its neighbours answer without typer: it cost 0.4 s of CPU a call, and
    seconds while gnod was busy, when a person most needs them."""
    env = {**os.environ, "GNO_HOME": str(tmp_path), "GNO_NO_AUTOSTART": "1"}
    out = probe(["gnoctl.main"], argv, env)
    assert out["code"] == 3
    assert heavy_loaded(out["modules"], HEAVY + NOT_ON_FAST_PATH) == []


def test_not_running_says_how_to_start_gnod_by_what_kept_it_from_starting(tmp_path):
    """`--no-autostart` was told to unset GNO_NO_AUTOSTART, a variable it had not set."""
    env = {k: v for k, v in os.environ.items() if k != "GNO_NO_AUTOSTART"}
    out = probe(["gnoctl.main"], ["status", "--no-autostart", "--json"], {**env, "GNO_HOME": str(tmp_path)})
    error = json.loads(out["stdout"])["error"]
    assert out["code"] == 3 and error["code"] == "DAEMON_NOT_RUNNING"
    assert error["message"] == "gnod is not running (start it with `gnoctl daemon start`)"
    out = probe(["gnoctl.main"], ["status", "--json"], {**env, "GNO_HOME": str(tmp_path), "GNO_NO_AUTOSTART": "1"})
    assert json.loads(out["stdout"])["error"]["message"].endswith(", or unset GNO_NO_AUTOSTART)")


def test_daemon_status_runs_without_typer(tmp_path):
    out = probe(["gnoctl.main"], ["daemon", "status", "--json"], {**os.environ, "GNO_HOME": str(tmp_path)})
    assert out["code"] == 3 and json.loads(out["stdout"])["running"] is False
    assert heavy_loaded(out["modules"], HEAVY + NOT_ON_FAST_PATH) == []


def test_help_falls_back_to_typer(tmp_path):
    env = {**os.environ, "GNO_HOME": str(tmp_path), "GNO_NO_AUTOSTART": "1"}
    out = probe(["gnoctl.main"], ["search", "--help"], env)
    assert out["code"] == 0
    assert "typer" in out["modules"]
    assert "--min-score" in out["stdout"]


# --- fast parser ↔ typer definitions -------------------------------------------------------


def _typer_command(name: str):
    import typer.main

    import gnoctl.cli

    return typer.main.get_command(gnoctl.cli.app).commands[name]


def _typer_options(name: str) -> dict[str, object]:
    """option string → click Option, for every option of the typer command."""
    out = {}
    for p in _typer_command(name).params:
        if getattr(p, "param_type_name", None) == "option":
            for opt in [*p.opts, *p.secondary_opts]:
                out[opt] = p
    return out


@pytest.mark.parametrize("command", ["search", "vsearch", "query", "get"])
def test_fast_options_match_typer_options(command):
    typer_opts = _typer_options(command)
    typer_names = set(typer_opts) - {"--help"}
    fast_names = set(FAST_OPTIONS[command])
    assert fast_names - typer_names == set(), "the fast parser knows options typer does not"
    assert typer_names - fast_names == set(), "typer has options the fast parser does not know"
    # Kinds agree too: flags are flags, lists repeat, numbers are numbers.
    for opt, (_dest, kind) in FAST_OPTIONS[command].items():
        p = typer_opts[opt]
        assert p.is_flag == (kind == "flag") and p.multiple == (kind == "list"), (opt, kind)
        if kind in ("int", "float"):
            assert p.bare_type() == kind, (opt, kind)


def _typer_plain(words: tuple[str, ...]):
    import typer.main

    import gnoctl.cli

    command = typer.main.get_command(gnoctl.cli.app)
    for word in words:
        command = command.commands[word]
    return command


@pytest.mark.parametrize("words", list(PLAIN))
def test_plain_options_match_typer_options(words):
    params = _typer_plain(words).params
    typer_opts = {o: p for p in params if p.param_type_name == "option" for o in [*p.opts, *p.secondary_opts]}
    spec, most = PLAIN[words]
    assert set(spec) == set(typer_opts) - {"--help"}
    for opt, (_dest, kind) in spec.items():
        assert typer_opts[opt].is_flag == (kind == "flag"), opt
    arguments = [p for p in params if p.param_type_name == "argument"]
    assert most == sum(MULTI_GET_REFS_MAX if p.nargs == -1 else p.nargs for p in arguments)


def test_ls_limit_is_the_daemons():
    import msgspec

    from gnod.protocol import LsParams

    msgspec.convert({"limit": LS_LIMIT_MAX}, LsParams)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"limit": LS_LIMIT_MAX + 1}, LsParams)


def test_fast_format_flags_are_typer_search_flags():
    assert set(FORMAT_FLAGS) <= set(_typer_options("search"))


def test_typer_choices_are_the_fast_parsers():
    import gnoctl.cli

    assert tuple(f.value for f in gnoctl.cli.Format) == FORMATS
    assert tuple(c.value for c in gnoctl.cli.Color) == COLOR_WHEN


def _handed(monkeypatch, path: str, argv: list[str]):
    """What one path (`fast`: gnoctl.main's parser; `typer`: gnoctl.cli) hands the command
    for `argv`: (method, params, format, autostart, color, pager, null), or "fallback"
    (the fast parser leaves it to typer), or "error" (typer refuses it: exit 1)."""
    from gnoctl import commands, main

    seen = []

    def record(method: str):
        def command(*args, **kw):
            if method == "get":
                p, fmt, autostart, view = args
            else:
                _, p, fmt, autostart, view = args
            seen.append((method, p, fmt, autostart, view.color_when, view.pager, view.null))
            return 0

        return command

    monkeypatch.setenv("GNO_HOME", "/nonexistent/gno-test-home")  # no daemon: the early send finds none
    monkeypatch.setattr(commands, "retrieve", lambda *a, **kw: record(a[0])(*a, **kw))
    monkeypatch.setattr(commands, "get", record("get"))
    return _outcome(main._fast if path == "fast" else None, argv, seen)


def _outcome(fast, argv: list[str], seen: list):
    """What the fast parser `fast` (None: typer) handed the command it recorded in `seen`
    for `argv`, or "fallback" / "error" as `_handed` says."""
    from gnoctl import cli

    if fast is not None:
        if fast(list(argv)) is None:
            return "fallback"
    elif cli.run(list(argv)) != 0:
        return "error"
    assert len(seen) == 1
    return seen[0]


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("search", ["deploy", "-n", "5"]),
        ("search", ["-n", "5", "deploy", "prod"]),
        ("search", ["deploy", "--limit=5"]),
        ("search", ["deploy", "--limit", "7", "--min-score", "0.25"]),
        ("search", ["deploy", "--min-score=0.5"]),
        ("search", ["deploy", "-c", "a", "-c", "b"]),
        ("search", ["deploy", "--collection=a", "--collection", "b"]),
        ("search", ["deploy", "--json"]),
        ("search", ["deploy", "--md"]),
        ("search", ["deploy", "--jsonl"]),
        ("search", ["deploy", "--vimgrep", "--color", "never"]),
        ("search", ["deploy", "--format", "vimgrep"]),
        ("search", ["deploy", "--format=human", "--no-pager", "--color=always"]),
        ("search", ["deploy", "--files", "-0"]),
        ("search", ["deploy", "--human"]),
        ("search", ["deploy", "--", "-n", "--json"]),
        ("search", ["deploy", "-quux"]),
        ("search", ["deploy", "-"]),
        ("query", ["deploy", "-staging", "-n", "5", "--no-expand", "--json"]),
        ("query", ["deploy", "--mode", "deep", "--no-rerank", "--explain", "-c", "a", "--wait=2"]),
        ("query", ["deploy", "--mode=deep", "--min-score", "0.2", "--md"]),
        ("search", ["deploy", "--tag", "ops", "--tag=infra", "--since", "2024-01-01", "--until=2024-12-31"]),
        ("search", ["deploy", "--per-doc", "3", "--md"]),
        ("query", ["deploy", "--path", "guides/*", "--lang", "de", "-n", "3"]),
        ("get", ["notes/a.md"]),
        ("get", ["notes/a.md:12", "--json"]),
        ("get", ["notes/a.md:12", "--human"]),
        ("get", ["notes/a.md", "--from-line", "3", "-l", "2"]),
        ("get", ["notes/a.md", "--from-line=3", "--lines=2"]),
    ],
)
def test_fast_parser_agrees_with_typer(monkeypatch, command, args):
    fast = _handed(monkeypatch, "fast", [command, *args])
    assert fast != "fallback"
    assert fast == _handed(monkeypatch, "typer", [command, *args])


def _plain_handed(monkeypatch, path: str, argv: list[str]):
    """What one path hands a PLAIN command for `argv` (its name and arguments, a View as
    its fields), or "fallback" / "error" as `_handed` says."""
    from gnoctl import commands, main

    seen = []

    def record(name: str):
        def command(*args):
            seen.append((name, *(vars(a) if isinstance(a, commands.View) else a for a in args)))
            return 0

        return command

    for name in ("status", "ls", "update", "collection_list", "daemon_status"):
        monkeypatch.setattr(commands, name, record(name))
    return _outcome(main._plain if path == "fast" else None, argv, seen)


@pytest.mark.parametrize(
    "argv",
    [
        ["status"],
        ["status", "-w", "--json"],
        ["status", "--watch", "--human"],
        ["status", "--no-autostart", "--json"],
        ["status", "-e", "--human"],
        ["ls"],
        ["ls", "notes", "-n5", "--prefix=guides/"],
        ["ls", "--prefix", "notes/guides", "--limit", "100000", "--files", "-0"],
        ["ls", "--jsonl", "--color", "never", "--no-pager"],
        ["ls", "--", "-odd-name"],
        ["update"],
        ["update", "notes", "--json"],
        ["collection", "list", "--human"],
        ["daemon", "status", "--json"],
    ],
)
def test_plain_parser_agrees_with_typer(monkeypatch, argv):
    fast = _plain_handed(monkeypatch, "fast", argv)
    assert fast != "fallback"
    assert fast == _plain_handed(monkeypatch, "typer", argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "--bogus"],
        ["status", "extra"],
        ["status", "--errors", "--watch"],
        ["ls", "-n", "0"],
        ["ls", "-n", "100001"],
        ["ls", "-n", "many"],
        ["ls", "-0"],
        ["ls", "--json", "--files"],
        ["ls", "a", "b"],
        ["ls", "--color", "sometimes"],
        ["update", "--json=yes"],
    ],
)
def test_plain_commands_leave_what_is_wrong_to_typer(monkeypatch, capsys, argv):
    assert _plain_handed(monkeypatch, "fast", argv) == "fallback"
    assert _plain_handed(monkeypatch, "typer", argv) == "error"
    assert capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "limit", "query"),
    [
        # Regression: `-n5` used to be the negated word "n5" on the fast path, --limit 5 on typer's.
        (["deploy", "-n5"], 5, "deploy"),
        # Only numeric short options take an attached value; `-cnotes` is a negated word.
        (["deploy", "-cnotes"], None, "deploy -cnotes"),
    ],
)
def test_attached_short_values(monkeypatch, args, limit, query):
    fast = _handed(monkeypatch, "fast", ["search", *args])
    assert fast == _handed(monkeypatch, "typer", ["search", *args])
    sent = fast[1]
    assert (sent.get("limit"), "collections" in sent, sent["query"]) == (limit, False, query)


@pytest.mark.parametrize("args", [["deploy", "-production"], ["deploy", "-staging"], ["deploy", "-xy"]])
def test_typer_keeps_negated_words(monkeypatch, args):
    # Regression: click used to split `-production` into short options (`-c` took 'tion').
    typer_side = _handed(monkeypatch, "typer", ["search", *args])
    assert typer_side == _handed(monkeypatch, "fast", ["search", *args])
    assert typer_side[1]["query"] == " ".join(args)


@pytest.mark.parametrize("args", [["deploy", "-z", "5"], ["deploy", "-x"], ["deploy", "-q3"]])
def test_one_letter_options_are_options_not_words(monkeypatch, capsys, args):
    # `gnoctl search deploy -z 5` used to search for "deploy -z 5": an unknown short option
    # is an error on both paths (after `--` it is a word again).
    assert _handed(monkeypatch, "fast", ["search", *args]) == "fallback"
    assert _handed(monkeypatch, "typer", ["search", *args]) == "error"
    assert "No such option" in capsys.readouterr().err
    assert _handed(monkeypatch, "fast", ["search", "deploy", "--", *args[1:]])[1]["query"] == " ".join(args)


def test_both_paths_send_the_params_the_daemon_takes(monkeypatch):
    import msgspec

    from gnod.protocol import GetParams, QueryParams

    argv = ["query", "deploy", "-staging", "-n", "5", "--no-expand", "--mode", "deep", "--tag", "ops"]
    argv += ["--from", "ann@example.org", "--lex", "ship it", "--wait=2", "--json", "--no-autostart"]
    sent = {
        "query": "deploy -staging",
        "limit": 5,
        "mode": "deep",
        "filters": {"tags": ["ops"], "from": "ann@example.org"},
        "expand": False,
        "wait_s": 2.0,
        "variants": {"lexical": ["ship it"]},
    }
    handed = _handed(monkeypatch, "fast", argv)
    assert handed == ("query", sent, "json", False, "auto", True, False)
    assert handed == _handed(monkeypatch, "typer", argv)
    msgspec.convert(sent, QueryParams)
    get = _handed(monkeypatch, "fast", ["get", "notes/a.md:3", "-l", "2", "--no-pager"])
    assert get == ("get", {"ref": "notes/a.md:3", "lines": 2}, None, None, "auto", False, False)
    msgspec.convert(get[1], GetParams)


def test_both_paths_send_a_day_given_as_git_reads_one_as_the_daemon_takes_it(monkeypatch):
    import datetime

    yesterday = (datetime.date.today() - datetime.timedelta(days=1)).isoformat()
    argv = ["search", "deploy", "--since", "yesterday", "--until", "2024-03-31", "--no-autostart"]
    handed = _handed(monkeypatch, "fast", argv)
    assert handed[1]["filters"] == {"since": yesterday, "until": "2024-03-31"}
    assert handed == _handed(monkeypatch, "typer", argv)
    # A month: from its first day, to its last (an office tryout's `--since 'october 2024'` was refused).
    argv = ["search", "deploy", "--since", "october 2024", "--until", "2024-11", "--no-autostart"]
    handed = _handed(monkeypatch, "fast", argv)
    assert handed[1]["filters"] == {"since": "2024-10-01", "until": "2024-11-30"}
    assert handed == _handed(monkeypatch, "typer", argv)


def test_days_as_git_reads_them():
    import datetime

    from gnoctl.days import iso_day

    today = datetime.date(2024, 3, 31)
    for text, day in (
        ("2024-01-02", "2024-01-02"),
        ("today", "2024-03-31"),
        (" Yesterday ", "2024-03-30"),
        ("last week", "2024-03-24"),
        ("3.days.ago", "2024-03-28"),
        ("2 weeks ago", "2024-03-17"),
        ("1.month.ago", "2024-02-29"),  # the month's last day where it is shorter
        ("13 months ago", "2023-02-28"),
        ("last year", "2023-03-31"),
        ("14.03.2025", "2025-03-14"),  # the day first, as German and others write it
        ("4. 3. 2025", "2025-03-04"),
        ("2025/03/14", "2025-03-14"),
        ("2024-10", "2024-10-01"),  # a month or a year: its first day (`--since`)
        ("October 2024", "2024-10-01"),
        ("sept. 2024", "2024-09-01"),
        ("2024", "2024-01-01"),
    ):
        assert iso_day(text, today) == day, text
    # `--until`: its last day.
    assert [iso_day(t, today, end=True) for t in ("2024-02", "feb 2023", "2024", "2024-03-05")] == [
        "2024-02-29",
        "2023-02-28",
        "2024-12-31",
        "2024-03-05",
    ]
    for text in (
        "someday",
        "2024-13",
        "smarch 2024",
        "2024-1-2",
        "3 fortnights ago",
        "-1 days ago",
        "9999 years ago",
        "31.02.2025",
        "03/14/2025",
    ):
        with pytest.raises(ValueError, match="not a day|before the first year"):
            iso_day(text, today)


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "x", "-n", "0"],
        ["search", "x", "--since", "someday"],
        ["search", "x", "--per-doc", "11"],
        ["query", "x", "--min-score", "1.5"],
        ["query", "x", "--mode", "wide"],
        ["query", "x", "--wait", "601"],
        ["get", "a.md", "--lines", "0"],
        ["get", "a.md", "b.md"],
        ["search"],
    ],
)
def test_out_of_range_values_are_left_to_typer_which_refuses_them(monkeypatch, capsys, argv):
    assert _handed(monkeypatch, "fast", argv) == "fallback"
    assert _handed(monkeypatch, "typer", argv) == "error"
    assert capsys.readouterr().err


def test_parse_fast_examples():
    assert parse_fast("search", ["-n", "5", "deploy"]) == ({"collections": [], "limit": 5}, ["deploy"])
    assert parse_fast("search", ["deploy", "--limit=5"])[0]["limit"] == 5
    assert parse_fast("search", ["x", "-c", "a", "-c", "b"])[0]["collections"] == ["a", "b"]
    assert parse_fast("search", ["x", "--json"])[0]["format"] == "json"
    assert parse_fast("search", ["x", "--xml"])[0]["format"] == "xml"
    assert parse_fast("search", ["x", "--min-score", "0.5"])[0]["min_score"] == 0.5
    assert parse_fast("search", ["x", "--no-autostart"])[0]["no_autostart"] is True
    # `--` ends the options: everything after it is query text.
    assert parse_fast("search", ["x", "--", "-n", "5", "--json"]) == ({"collections": []}, ["x", "-n", "5", "--json"])
    # `-word` is a negated query word, not an option (a one-letter `-x` is an option: see above).
    assert parse_fast("search", ["deploy", "-production", '-"big bang"', "-xy"]) == (
        {"collections": []},
        ["deploy", "-production", '-"big bang"', "-xy"],
    )
    assert parse_fast("search", ["deploy", "-n5"]) == ({"collections": [], "limit": 5}, ["deploy"])
    assert parse_fast("get", ["a/b.md", "--from-line", "3", "-l", "2", "--json"]) == (
        {"collections": [], "from_line": 3, "lines": 2, "format": "json"},
        ["a/b.md"],
    )


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("search", ["x", "--help"]),
        ("search", ["x", "-n"]),
        ("search", ["x", "-n", "five"]),
        ("search", ["x", "--min-score", "high"]),
        ("search", ["x", "--json=yes"]),
        ("search", ["x", "--bogus"]),
        ("search", ["x", "--json", "--csv"]),  # typer explains the conflict
        ("search", ["x", "--limit=5=6"]),
        ("search", ["x", "-h"]),
        ("search", ["x", "-z", "5"]),
        ("search", ["x", "--format", "yaml"]),
        ("search", ["x", "--color", "sometimes"]),
        ("search", ["x", "--format", "json", "--csv"]),
        ("get", ["a.md", "-production"]),
        ("get", ["a.md", "--csv"]),
        ("get", ["a.md", "--lines"]),
    ],
)
def test_parse_fast_falls_back_to_typer(command, args):
    with pytest.raises(Fallback):
        parse_fast(command, args)


_BARE_PROBE = r"""
import sys
from gnoctl.main import main
code = main(sys.argv[1:])
sys.stdout.write("\n@@MODULES@@" + ",".join(sorted(sys.modules)) + "@@" + str(code))
"""


def test_fast_search_imports_neither_json_nor_socket(tmp_path):
    """`json` and `socket` (with re, enum…) cost more than a whole search here: fastjson
    and _socket replace them on the hot path, down to the error output."""
    env = {**os.environ, "GNO_HOME": str(tmp_path), "GNO_NO_AUTOSTART": "1"}
    r = subprocess.run(
        [sys.executable, "-c", _BARE_PROBE, "search", "deploy", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    body, _, tail = r.stdout.rpartition("\n@@MODULES@@")
    modules, _, code = tail.partition("@@")
    assert code == "3"
    assert json.loads(body)["error"]["code"] == "DAEMON_NOT_RUNNING"
    loaded = set(modules.split(","))
    assert {"json", "socket", "struct", "re", "enum", "subprocess"} & loaded == set()


_ORDER_PROBE = r"""
import sys
sys.path += sys.argv.pop(1).split(":")  # run without site, as the gnoctl script is
seen = []
sys.addaudithook(lambda e, a: seen.append(e if e != "import" else a[0]) if e in ("import", "socket.connect") else None)
from gnoctl.main import main
code = main(sys.argv[1:])
sys.stderr.write(",".join(seen))
sys.exit(code)
"""


@pytest.mark.parametrize("argv", [["search", "deploy"], ["get", "notes/deploy.md"]])
def test_fast_commands_send_their_request_before_loading_their_renderer(daemon, env, argv):
    """gnod works while gnoctl loads the rest of itself: the connection is made (and the
    request sent) before the commands and the renderers are imported."""
    from gnoctl.launcher import site_paths

    r = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _ORDER_PROBE, os.pathsep.join(site_paths()), *argv, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    seen = r.stderr.rsplit("\n", 1)[-1].split(",")  # the probe's list is its last line
    assert r.returncode == (1 if argv[0] == "search" else 2)  # an empty home: no match, or not found (an error)
    out = json.loads(r.stdout)
    assert out["hits"] == [] if argv[0] == "search" else out["error"]["code"] == "NOT_FOUND"
    assert seen.count("socket.connect") == 1
    assert seen.index("socket.connect") < seen.index("gnoctl.commands")
    assert "os" not in seen  # ~1 ms, which the fast path does without
    # What is imported before the request goes out delays the answer: only what parses
    # the command and sends it (gnoctl.days is loaded for a --since or --until).
    assert set(seen[: seen.index("socket.connect")]) == {
        "gnoctl",
        "gnoctl.main",
        "__future__",
        "gnoctl.args",
        "gnoctl.spec",
        "gnoctl.client",
        "gnoctl.fastjson",
        "_json",
        "_socket",
        "gnod",
        "gnod.wire",
        "gnod.paths",
    }


def _launch(script: str, tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GNO_HOME": str(tmp_path / "home"), "GNO_NO_AUTOSTART": "1"}
    return subprocess.run([script, *args], capture_output=True, text=True, env=env, timeout=60)


def test_launcher_runs_gnoctl_without_site(tmp_path):
    """The script scripts/setup.sh installs as gnoctl: a working gnoctl whose interpreter
    never runs `site` (nor the .pth hooks it would import)."""
    target = tmp_path / "gnoctl"
    subprocess.run([sys.executable, "-I", "-m", "gnoctl.launcher", str(target)], check=True, timeout=60)
    assert target.read_text().startswith(f"#!{sys.executable} -IS\n")
    r = _launch(str(target), tmp_path, "search", "deploy", "--json")
    assert r.returncode == 3 and json.loads(r.stdout)["error"]["code"] == "DAEMON_NOT_RUNNING"
    timed = subprocess.run(
        [sys.executable, "-IS", "-X", "importtime", str(target), "search", "deploy", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "GNO_HOME": str(tmp_path / "home"), "GNO_NO_AUTOSTART": "1"},
        timeout=60,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in timed.stderr.splitlines() if "|" in line}
    assert "gnoctl.client" in imported
    assert {"site", "_distutils_hack", "sitecustomize"} & imported == set()


def test_launcher_starts_through_sh_when_the_interpreter_path_has_a_space(tmp_path):
    from gnoctl.launcher import script, site_paths

    spaced = tmp_path / "a b"
    spaced.mkdir()
    (spaced / "python").symlink_to(os.path.realpath(sys.executable))
    target = tmp_path / "gnoctl"
    target.write_text(script(str(spaced / "python"), site_paths()))
    target.chmod(0o755)
    assert target.read_text().startswith("#!/bin/sh\n")
    r = _launch(str(target), tmp_path, "search", "deploy", "--json")
    assert r.returncode == 3 and json.loads(r.stdout)["error"]["code"] == "DAEMON_NOT_RUNNING"


def test_a_file_list_asks_the_daemon_for_no_passages(monkeypatch):
    """`search --files` shows paths only: its passages were read and thrown away
    (`search mutex_lock -n 1000 --files` on the kernel tree: 0.36 s, 0.04 s without)."""
    for argv, snippets in (
        (["search", "deploy", "--files"], False),
        (["search", "deploy", "--format", "files", "-0"], False),
        (["search", "deploy", "--json"], None),
        (["query", "deploy", "--files"], None),  # query reads no passages
    ):
        handed = _handed(monkeypatch, "fast", argv)
        assert handed[1].get("snippets") is snippets, argv
        assert handed == _handed(monkeypatch, "typer", argv), argv


def test_a_call_refused_as_overloaded_is_sent_again_once_after_the_wait_named():
    """50 busy agents made `gnoctl search` fail in 0.03 s with "retry in 1071 ms": it waits
    that long and asks again, once; a longer wait, a second refusal or another error is said."""
    from gnoctl.client import BUSY_RETRY_MAX_S
    from gnoctl.commands import _unless_busy

    calls: list[float] = []

    def refused(after_ms: int):
        def call():
            calls.append(time.monotonic())
            if len(calls) == 1:
                raise DaemonError(wire.BUSY, "gnod is overloaded", {"retry_after_ms": after_ms})
            return {"hits": []}

        return call

    assert _unless_busy(None, refused(50)) == {"hits": []}
    assert len(calls) == 2 and calls[1] - calls[0] >= 0.05
    calls.clear()

    def sent():  # the reply to the request the fast path sent first
        raise DaemonError(wire.BUSY, "gnod is overloaded", {"retry_after_ms": 20})

    assert _unless_busy(sent, lambda: {"hits": ["again"]}) == {"hits": ["again"]}
    with pytest.raises(DaemonError):  # refused again: said
        _unless_busy(sent, refused(20))
    calls.clear()
    too_long = int(BUSY_RETRY_MAX_S * 1000) + 1
    with pytest.raises(DaemonError):
        _unless_busy(None, refused(too_long))
    assert len(calls) == 1
    with pytest.raises(DaemonError):  # a connection refused past the cap names no wait
        _unless_busy(None, lambda: (_ for _ in ()).throw(DaemonError(wire.BUSY, "too many connections")))


def test_a_bridge_s_burst_of_calls_waits_its_turn_in_the_bridge_not_at_gnod(daemon, env):
    """8 agents each sending 40 calls at once through MCP took more than the sockets
    gnod serves at once, and some calls heard BUSY: a bridge has CALLS_MAX calls in
    flight, and the rest wait their turn in it."""
    import asyncio

    from conftest import paths_for
    from gnoctl.mcp.daemon import CALLS_MAX, DaemonLink

    assert CALLS_MAX * 8 < wire.MAX_CONNECTIONS
    link = DaemonLink(paths_for(env), autostart=False)

    async def burst() -> list:
        calls = [link.call("status", {}) for _ in range(2 * wire.MAX_CONNECTIONS)]
        return await asyncio.gather(*calls, return_exceptions=True)

    results = asyncio.run(burst())
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert {r["pid"] for r in results} == {daemon.proc.pid}


def test_the_mcp_bridge_sends_a_read_refused_as_overloaded_again_once(monkeypatch):
    """Through MCP, 10 of 10 calls behind 50 busy agents were refused, a `get` of three
    lines among them. A read is sent again once after the wait named; a write is not."""
    import asyncio

    from gnoctl.mcp.daemon import DaemonLink

    sent: list[str] = []

    async def answer(self, method, params, on_notify, start):
        sent.append(method)
        if len(sent) % 2:
            raise DaemonError(wire.BUSY, "gnod is overloaded", {"retry_after_ms": 10})
        return {"ok": True}

    monkeypatch.setattr(DaemonLink, "_call", answer)
    link = DaemonLink(autostart=False)
    assert asyncio.run(link.call("get", {"ref": "a.md"})) == {"ok": True} and sent == ["get", "get"]
    sent.clear()
    with pytest.raises(DaemonError):
        asyncio.run(link.call("collection.add", {"name": "x", "path": "/x"}))
    assert sent == ["collection.add"]
