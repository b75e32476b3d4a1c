"""gnoctl behaves like the command-line tools people know (issue 14): help and version,
unknown options, grep's exit statuses, pipes, output formats, colour, pager, status,
collections that overlap, config edits that keep comments, space given back.

Everything runs through the real CLI against a real gnod; terminal behaviour through a
pseudo-terminal.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from conftest import (
    PtyCli,
    _run_cli,
    cli_json,
    make_env,
    run_cli_tty,
    running_gnod,
    socket_accepts,
    write_tree,
)
from gnod.config import FILE_TYPES

pytestmark = pytest.mark.timeout(180)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ESC = "\x1b["
# An awkward name: spaces and colons (vimgrep parsers must cope), in an awkward folder.
ODD_REL = "odd dir/meeting: notes 10:30.md"
DOCS = {
    "deploy.md": "# Deployment guide\n\nHow to deploy the billing service.\nRoll back when errors climb.\n",
    "staging.md": "# Staging\n\nDeploy any branch to staging without review.\n",
    ODD_REL: "# Meeting\n\nWe talked about the kettle.\nThe kettle descaling schedule is weekly.\n",
}


def cli(*args: str, env, expect: int = 0) -> subprocess.CompletedProcess:
    r = _run_cli(*args, env=env)
    assert r.returncode == expect, f"gnoctl {' '.join(args)} → {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    return r


def many_files(root: str, n: int, words: int = 40) -> str:
    os.makedirs(root, exist_ok=True)
    for i in range(n):
        with open(os.path.join(root, f"doc{i:05d}.md"), "w") as f:
            f.write(f"# Document {i}\n\n" + " ".join(f"term{(i * 7 + j) % 997} filler{j}" for j in range(words)))
    return root


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """One gnod with a small corpus (and the MiniLM test embedder, so vsearch answers)."""
    from testmodels.build import minilm_gguf

    with running_gnod(f'[models]\nembed = "file:{minilm_gguf()}"\nthreads = 1\n') as (env, d):
        root = write_tree(str(tmp_path_factory.mktemp("corpus")), DOCS)
        cli_json("collection", "add", root, "--name", "docs", "--json", env=env)
        assert d.result("embed", {}, timeout=180)["pending"] == 0
        yield SimpleNamespace(daemon=d, env=env, root=root)


# --- help, version, options ------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["-h"],
        ["--help"],
        ["search", "-h"],
        ["search", "deploy", "-h"],
        ["vsearch", "-h"],
        ["query", "x", "-h"],
        ["ask", "-h"],
        ["get", "-h"],
        ["ls", "-h"],
        ["status", "-h"],
        ["collection", "add", "-h"],
        ["models", "-h"],
        ["daemon", "logs", "-h"],
    ],
)
def test_dash_h_is_help_everywhere_and_starts_nothing(argv, env):
    r = cli(*argv, env=env)
    assert r.stdout.startswith("Usage: gnoctl") and "-h, --help" in r.stdout
    assert not socket_accepts(os.path.join(env["GNO_HOME"], "run", "gnod.sock"))  # no gnod was started


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_the_installed_packages(flag, env):
    from importlib.metadata import version

    installed = version("gno")  # what packaging read from gnod/__init__.py
    assert cli(flag, env=env).stdout == f"gnoctl {installed}\n"
    # Beside other options typer answers it, the same way.
    assert cli(flag, "status", env=env).stdout == f"gnoctl {installed}\n"
    r = subprocess.run([sys.executable, "-m", "gnod.server.main", "--version"], capture_output=True, text=True, env=env)
    assert r.stdout == f"gnod {installed}\n"


def test_unknown_options_are_errors_and_negated_words_still_work(live):
    for argv in (
        ["search", "deploy", "-z", "5"],
        ["search", "deploy", "--bogus"],
        ["query", "deploy", "-x"],
        ["ls", "--bogus"],
        ["status", "-q"],
    ):
        r = _run_cli(*argv, env=live.env)
        assert r.returncode == 2, (argv, r)
        assert r.stdout == "" and "No such option" in r.stderr, (argv, r)
    r = _run_cli("search", "deploy", "-z", "5", env=live.env)
    assert "(to search for -z as text, quote it after `--`: gnoctl search WORDS -- '\"-z\"';" in r.stderr
    # A long option nothing is near may be text too (a flag of a command pasted); a typo is not.
    r = _run_cli("search", "deploy", "--max-old-space-size", env=live.env)
    assert "quote it after `--`: gnoctl search WORDS -- '\"--max-old-space-size\"'" in r.stderr, r.stderr
    assert "after `--`" not in _run_cli("search", "deploy", "--jsn", env=live.env).stderr
    # As the hint says, a flag quoted is searched for; unquoted beside another word, `-Wall`
    # left out what holds it (a kernel tryout's `-- -slab`).
    quoted = cli_json("search", "--json", "deploy", "--", '"-Wall"', env=live.env)
    bare = cli_json("search", "--json", "deploy", "--", "-Wall", env=live.env)
    assert len(quoted["terms"]) == 2 and bare["terms"] == ["deploy"], (quoted["terms"], bare["terms"])
    # Another command's option says which (click's suggestion for `--explain` was `--lang`).
    r = _run_cli("search", "deploy", "--explain", env=live.env)
    assert r.returncode == 2 and "(--explain is an option of gnoctl query and ask)" in r.stderr, r.stderr
    assert "is an option of" not in _run_cli("search", "deploy", "--bogus", env=live.env).stderr
    # Filters without words: `ls` lists what passes them (`search -t pdf` said only that a query was missing).
    r = _run_cli("search", "-t", "pdf", "--tag=my notes", "-n", "3", env=live.env)
    assert r.returncode == 2 and "Missing argument" in r.stderr
    assert "(to list the documents that pass filters: gnoctl ls -t pdf '--tag=my notes')" in r.stderr
    assert "gnoctl ls" not in _run_cli("search", "-n", "3", env=live.env).stderr
    # After `--`, `-l` is a query word again; `-staging` (a word, not one letter) never stopped being one.
    res = cli_json("search", "deploy", "--json", "--", "-l", env=live.env)
    assert res["query"] == "deploy -l"
    res = cli_json("search", "deploy", "-staging", "--json", env=live.env)
    assert res["query"] == "deploy -staging"
    assert [h["path"] for h in res["hits"]] == ["deploy.md"]


def test_a_usage_error_with_json_is_a_json_error_on_stdout(live):
    """As the README says, and as gnod's errors are: a script that asked for JSON reads
    the error from stdout (it got nothing there, and click's text on stderr)."""
    for argv, option in (
        (["search", "deploy", "--json", "--bogus"], "--bogus"),
        (["search", "x", "-n", "0", "--json"], ""),
    ):
        r = _run_cli(*argv, env=live.env)
        error = json.loads(r.stdout)["error"]
        assert r.returncode == 2 and error["code"] == "INVALID_PARAMS" and error["details"]["usage"] is True, r
        assert error["details"].get("option", "") == option and error["message"] in r.stderr
    r = _run_cli("search", "deploy", "--", "--json", "-x", env=live.env)  # words after `--`
    assert "error" not in json.loads(r.stdout)


# --- exit statuses -------------------------------------------------------------------------------


def test_exit_status_found_no_match_error_no_daemon(live, tmp_path):
    assert cli("search", "kettle", "--json", env=live.env).returncode == 0
    for command in ("search", "query", "vsearch"):
        # No match: 1, and the result (empty) is still printed in the format asked for.
        # (vectors always have a nearest document: a score floor makes them find none.)
        floor = ["--min-score", "0.99"] if command != "search" else []
        r = cli(command, "zzyzx", "--json", *floor, env=live.env, expect=1)
        assert json.loads(r.stdout)["hits"] == []
        r = cli(command, "zzyzx", "--files", *floor, env=live.env, expect=1)
        assert r.stdout == ""
    # An error is 2, bad input (with the error object) as a failure; no daemon 3.
    r = cli("search", '"unclosed', "--json", env=live.env, expect=2)
    assert json.loads(r.stdout)["error"]["code"] == "INVALID_QUERY"
    r = cli("ask", "what is the kettle schedule", "--json", env=live.env, expect=2)  # no generate model
    assert json.loads(r.stdout)["error"]["code"] == "MODEL_UNAVAILABLE"
    nowhere = {**live.env, "GNO_HOME": str(tmp_path)}
    r = cli("search", "kettle", "--no-autostart", "--json", env=nowhere, expect=3)
    assert json.loads(r.stdout)["error"]["code"] == "DAEMON_NOT_RUNNING"


# --- pipes ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["collection", "list", "--json"],
        ["search", "kettle", "--json"],
        ["ls", "--files"],
        ["status", "--human"],
        ["search", "zzyzx", "--json"],
    ],
)
def test_a_closed_pipe_is_a_quiet_exit(live, argv):
    # The reader is gone before gnoctl writes a byte: every write fails with EPIPE.
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run(
            [sys.executable, "-m", "gnoctl.main", *argv], env=live.env, stdout=w, stderr=subprocess.PIPE, timeout=60
        )
    finally:
        os.close(w)
    assert p.stderr == b""  # no traceback, no "Broken pipe"
    assert p.returncode == (1 if "zzyzx" in argv else 0)  # the status the command decided stands


@pytest.mark.parametrize("argv", [["search", "kettle", "--json"], ["status", "--human"]])
def test_output_to_a_full_disk_is_a_clear_error(live, argv):
    with open("/dev/full", "wb") as full:
        p = subprocess.run(
            [sys.executable, "-m", "gnoctl.main", *argv], env=live.env, stdout=full, stderr=subprocess.PIPE, timeout=60
        )
    assert p.stderr.decode() == "gnoctl: No space left on device\n"  # one line, no traceback
    assert p.returncode == 2


def test_grep_q_under_pipefail_never_fails(live):
    # A script under pipefail: grep -q exits at the first match, gnoctl may still be writing.
    script = f'{sys.executable} -m gnoctl.main collection list --json | grep -q \'"name": "docs"\''
    for _ in range(15):
        p = subprocess.run(["bash", "-o", "pipefail", "-c", script], env=live.env, capture_output=True, timeout=60)
        assert p.returncode == 0 and p.stderr == b"", p


# --- formats ------------------------------------------------------------------------------------------


def test_human_text_in_a_pipe(live):
    for flags in (["--human"], ["--format", "human"], ["--format=human", "--color", "never"]):
        r = cli("search", "kettle", *flags, env=live.env)
        assert r.stdout.lstrip().startswith("1.") and "kettle" in r.stdout
        assert ESC not in r.stdout
    r = cli("status", "--human", env=live.env)
    assert r.stdout.startswith("gnod ")
    r = cli("search", "kettle", "--human", "--color", "always", env=live.env)
    assert ESC in r.stdout
    # Colour asked for alone is for a person (`| less -R`): human text, not the pipe's JSON.
    r = cli("search", "kettle", "--color", "always", env=live.env)
    assert r.stdout.startswith(ESC + "2m 1.") and "kettle" in r.stdout
    assert cli("search", "kettle", "--color", "never", env=live.env).stdout.startswith("{")
    r = cli("search", "kettle", "--json", "--format", "csv", env=live.env, expect=2)
    assert "pick one output format" in r.stderr


@pytest.mark.parametrize(
    ("extra_env", "flags", "coloured"),
    [
        ({}, [], True),
        ({"NO_COLOR": "1"}, [], False),
        ({"TERM": "dumb"}, [], False),
        ({}, ["--color", "never"], False),
        ({"NO_COLOR": "1"}, ["--color", "always"], True),
    ],
)
def test_colour_on_a_terminal(live, extra_env, flags, coloured):
    code, out = run_cli_tty("search", "kettle", *flags, env={**live.env, "TERM": "xterm", **extra_env})
    assert code == 0 and "kettle" in out
    assert (ESC in out) is coloured, out


def test_a_gno_uri_made_a_url_reads_the_same_document(live):
    """A client that normalises URLs sends `gno://docs/odd%20dir/…`: it was NOT_FOUND."""
    from urllib.parse import quote

    doc = cli_json("get", f"gno://docs/{quote(ODD_REL)}", "--json", env=live.env)
    assert doc["path"] == ODD_REL and "kettle" in doc["content"]
    assert cli_json("get", f"gno://docs/{ODD_REL}", "--json", env=live.env)["path"] == ODD_REL


def test_files_are_absolute_paths_everywhere_and_nul_separated_with_0(live):
    odd = os.path.join(live.root, ODD_REL)
    ls_files = cli("ls", "--files", env=live.env).stdout.splitlines()
    assert sorted(ls_files) == sorted(os.path.join(live.root, rel) for rel in DOCS)
    search_files = cli("search", "kettle", "--files", env=live.env).stdout.splitlines()
    assert search_files == [odd]
    assert cli("search", "kettle", "-l", env=live.env).stdout.splitlines() == search_files  # as rg -l
    for argv in (
        ["ls", "--files", "-0"],
        ["search", "kettle", "deploy", "--files", "--null"],
        ["query", "kettle", "--files", "-0"],
        ["multi-get", "-p", "docs/**", "--files", "-0"],
    ):
        out = cli(*argv, env=live.env).stdout
        assert out.endswith("\0") and "\n" not in out, argv
        paths = out[:-1].split("\0")
        assert all(os.path.isfile(p) for p in paths) and (odd in paths), argv
    r = cli("search", "kettle", "-0", env=live.env, expect=2)
    assert "-0" in r.stderr and "--files" in r.stderr


def test_jsonl_is_one_hit_per_line(live):
    for command in ("search", "query", "vsearch"):
        lines = cli(command, "kettle deploy", "--jsonl", env=live.env).stdout.splitlines()
        hits = [json.loads(line) for line in lines]
        assert hits and all(os.path.isabs(h["abs_path"]) for h in hits), command
    entries = [json.loads(line) for line in cli("ls", "--jsonl", env=live.env).stdout.splitlines()]
    assert sorted(e["path"] for e in entries) == sorted(DOCS)


def test_search_csv_has_the_absolute_path(live):
    rows = list(csv.DictReader(io.StringIO(cli("search", "kettle", "--csv", env=live.env).stdout)))
    assert [r["abs_path"] for r in rows] == [os.path.join(live.root, ODD_REL)]
    rows = list(csv.DictReader(io.StringIO(cli("query", "kettle", "--csv", env=live.env).stdout)))
    assert rows[0]["abs_path"] == os.path.join(live.root, ODD_REL)


# Non-greedy path: what quickfix's %f:%l:%c:%m and ripgrep-style parsers do with colons in a name.
VIMGREP = re.compile(r"^(.+?):(\d+):(\d+):(.*)$")


@pytest.mark.parametrize("command", ["search", "vsearch", "query"])
def test_vimgrep_lines_parse_with_spaces_and_colons_in_paths(live, command):
    out = cli(command, "kettle descaling", "--vimgrep", env=live.env).stdout
    lines = out.splitlines()
    assert lines
    by_path = {}
    for line in lines:
        m = VIMGREP.match(line)
        assert m, line
        path, lnum, col, text = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        assert os.path.isabs(path) and os.path.isfile(path), line
        assert lnum >= 1 and col >= 1 and "\n" not in text
        by_path[path] = (lnum, col, text)
    odd = os.path.join(live.root, ODD_REL)
    assert odd in by_path
    lnum, col, text = by_path[odd]
    with open(odd, encoding="utf-8") as f:
        file_line = f.read().split("\n")[lnum - 1]
    assert text == file_line  # the text is the line the number points at
    if command == "search":  # the column points at the first query word, 1-based, in bytes
        assert file_line.encode()[col - 1 :].lower().startswith(b"kettle")


def test_vimgrep_points_into_a_window_of_a_long_line(tmp_path):
    """A long line's passage is a window cut from it ("…" first, the bytes before it
    not shown): the column is still the word's in the file's line, in bytes."""
    line = "Größe und Gewicht " * 60 + "the kettle descaling schedule " + "tail " * 100
    root = write_tree(str(tmp_path / "notes"), {"long.md": f"# Long\n\n{line}\n"})
    with running_gnod() as (env, _):
        cli_json("collection", "add", root, "--json", env=env)
        out = cli("search", "descaling", "--vimgrep", env=env).stdout
    m = VIMGREP.match(out.splitlines()[0])
    assert m, out
    path, lnum, col, text = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
    with open(path, encoding="utf-8") as f:
        file_line = f.read().split("\n")[lnum - 1]
    assert text.startswith("…") and file_line == line
    assert file_line.encode()[col - 1 :].startswith(b"descaling")


def test_ls_is_aligned_and_says_when_it_stops(live, tmp_path):
    out = cli("ls", "--human", env=live.env).stdout.splitlines()
    titles = {"Deployment guide", "Staging", "Meeting"}
    starts = {line.index(t) for line in out for t in titles if line.endswith(t)}
    assert len(out) == 3 and len(starts) == 1  # titles in one column
    r = cli("ls", "--human", "-n", "2", env=live.env)
    assert len(r.stdout.splitlines()) == 2
    assert "listed 2 of 3 documents" in r.stderr
    r = cli("ls", "--files", "-n", "2", env=live.env)
    assert "listed 2 of 3" in r.stderr and len(r.stdout.splitlines()) == 2
    assert cli("ls", "--human", env=live.env).stderr == ""


def test_ls_lists_every_document_in_the_formats_a_program_reads(live, monkeypatch, capsys):
    """`ls --files` stopped at 1,000 paths (`gnoctl ls --files | xargs …` missed the rest
    of the kernel tree): in --files and --jsonl it lists every document, a page of
    LS_PAGE at a time (here one), unless -n says; people's formats keep the default."""
    from gnoctl import commands

    monkeypatch.setenv("GNO_HOME", live.env["GNO_HOME"])
    monkeypatch.setattr(commands, "LS_LIMIT", 1)
    monkeypatch.setattr(commands, "LS_PAGE", 1)
    assert commands.ls(None, "", None, "files") == 0
    out, err = capsys.readouterr()
    assert sorted(out.splitlines()) == sorted(os.path.join(live.root, rel) for rel in DOCS) and err == ""
    assert commands.ls(None, "", None, "jsonl") == 0
    assert len(capsys.readouterr().out.splitlines()) == len(DOCS)
    assert commands.ls(None, "", None, "human") == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and f"listed 1 of {len(DOCS)} documents" in err
    assert commands.ls(None, "", 2, "files") == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_long_human_output_pages_on_a_terminal(live, tmp_path):
    pager = tmp_path / "pager.sh"
    pager.write_text("#!/bin/sh\nsed 's/^/PAGED:/'\n")
    pager.chmod(0o755)
    env = {**live.env, "PAGER": str(pager)}
    code, out = run_cli_tty("ls", env=env, rows=3)  # 3 documents: as tall as the terminal
    assert code == 0 and out.count("PAGED:") == 3, out
    code, out = run_cli_tty("ls", "--no-pager", env=env, rows=3)
    assert code == 0 and "PAGED:" not in out and "deploy.md" in out
    code, out = run_cli_tty("ls", env=env, rows=40)  # fits: no pager
    assert code == 0 and "PAGED:" not in out
    code, out = run_cli_tty("search", "kettle", "deploy", "staging", env=env, rows=3)
    assert code == 0 and "PAGED:" in out
    # A document taller than the terminal, alone or several at once, as `git show` does.
    for argv in (["get", "docs/deploy.md"], ["multi-get", "docs/deploy.md", "docs/staging.md"]):
        code, out = run_cli_tty(*argv, env=env, rows=3)
        assert code == 0 and "PAGED:How to deploy the billing service." in out, out
        code, out = run_cli_tty(*argv, "--no-pager", env=env, rows=3)
        assert code == 0 and "PAGED:" not in out and "How to deploy the billing service." in out, out


def test_get_past_the_end_says_so(live):
    r = cli("get", "docs/deploy.md:200", env=live.env, expect=2)
    assert "line 200 is past the end of docs/deploy.md (4 lines)" in r.stderr and r.stdout == ""
    r = cli("get", "docs/deploy.md", "--from-line", "5", "--json", env=live.env, expect=2)
    err = json.loads(r.stdout)["error"]
    assert "past the end" in err["message"] and err["details"]["total_lines"] == 4
    assert cli("get", "docs/deploy.md:4", env=live.env).stdout == "Roll back when errors climb.\n"


# --- collections -----------------------------------------------------------------------------------


def test_overlapping_collections_are_refused(daemon, tmp_path):
    env = daemon.env
    root = write_tree(str(tmp_path / "notes"), {"a.md": "# A\n\nalpha\n", "sub/b.md": "# B\n\nbeta\n"})
    cli_json("collection", "add", root, "--name", "notes", "--json", env=env)
    for path, name, how in (
        (root, "again", "is already the collection"),
        (os.path.join(root, "sub"), "sub", "is inside the collection"),
        (str(tmp_path), "parent", "contains the collection"),
    ):
        r = cli("collection", "add", path, "--name", name, "--json", env=env, expect=2)
        err = json.loads(r.stdout)["error"]
        assert err["code"] == "INVALID_PARAMS" and how in err["message"] and "'notes'" in err["message"], err
        assert err["details"]["collection"] == "notes"
        r = cli("collection", "add", path, "--name", name, "--human", env=env, expect=2)
        assert "--allow-overlap" in r.stderr
    names = [c["name"] for c in cli_json("collection", "list", "--json", env=env)["collections"]]
    assert names == ["notes"]
    # Insisting works; then a hit repeats, as the refusal warned.
    cli_json("collection", "add", os.path.join(root, "sub"), "--name", "sub", "--allow-overlap", "--json", env=env)
    hits = cli_json("search", "beta", "--json", env=env)["hits"]
    assert sorted(h["collection"] for h in hits) == ["notes", "sub"]


def test_completion_offers_collection_names(daemon, tmp_path):
    env = daemon.env
    for name in ("notes", "novels", "work"):
        folder = write_tree(str(tmp_path / name), {"a.md": f"# {name}\n"})
        cli_json("collection", "add", folder, "--name", name, "--json", env=env)

    def complete(words: str) -> list[str]:
        cword = len(words.split(" ")) - 1
        r = subprocess.run(
            [sys.executable, "-m", "gnoctl.main"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**env, "_GNOCTL_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)},
        )
        assert r.returncode == 0, r
        return r.stdout.split()

    assert complete("gnoctl collection remove no") == ["notes", "novels"]
    assert complete("gnoctl search deploy -c ") == ["notes", "novels", "work"]
    assert complete("gnoctl ls w") == ["work"]
    assert complete("gnoctl update ") == ["notes", "novels", "work"]
    # File types, as -t takes them.
    assert complete("gnoctl search deploy -t kc") == ["kconfig"]
    assert complete("gnoctl query deploy --type c") == sorted(t for t in FILE_TYPES if t.startswith("c"))


# --- status ------------------------------------------------------------------------------------------


def _status_line(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.strip().startswith(name + " "))


def test_status_is_one_truthful_line_per_collection(daemon, tmp_path):
    env = daemon.env
    small = write_tree(str(tmp_path / "small"), {"a.md": "# A\n\nalpha\n"})
    cli_json("collection", "add", small, "--name", "small", "--json", env=env)
    big = many_files(str(tmp_path / "big"), 3000)
    add = subprocess.Popen(
        [sys.executable, "-m", "gnoctl.main", "collection", "add", big, "--name", "big", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            job = daemon.result("status")["job"]
            # Its pace once files have been prepared for PACE_SETTLE_S (before: `indexing 129/3,000`).
            if job["running"] and job["collection"] == "big" and job["done"] > 0 and job["eta_s"] is not None:
                break
            time.sleep(0.02)
        out = cli("status", "--human", env=env).stdout
        line = _status_line(out, "big")
        assert re.search(r"indexing [\d,]+/3,000 \(\d+ files/s, ETA \d+[smh]", line), line
        assert "up to date" not in line
        assert "up to date" in _status_line(out, "small")
        assert "None" not in out and "languages: " in out
        # Models and vectors are there, each missing one with its fix.
        assert re.search(r"^vectors: unavailable: .*fix: gnoctl models pull embed", out, re.M), out
        for role in ("embed", "rerank", "generate"):
            assert re.search(rf"^  {role} +missing .*\(fix: gnoctl models pull {role}\)", out, re.M), out
        assert re.search(r"^index: .*\((\d+\.\d|\d+) MiB\)", out, re.M)
    finally:
        add.communicate(timeout=120)
    assert add.returncode == 0
    line = _status_line(cli("status", "--human", env=env).stdout, "big")
    assert "3,000 docs" in line and "up to date" in line, line


def test_status_watch_redraws_in_place_until_ctrl_c(daemon, tmp_path):
    # A collection path wider than the 80-column terminal: each line must still take one row.
    root = write_tree(str(tmp_path / ("a-folder-with-a-long-name-" * 4)), {"a.md": "# A\n\nalpha\n"})
    cli_json("collection", "add", root, "--name", "wide", "--json", env=daemon.env)
    session = PtyCli("status", "--watch", env=daemon.env, cols=80)
    try:
        assert session.read_until(lambda t: t.count("gnod ") >= 3, timeout=20), session.text
    finally:
        session.interrupt()
        code, out = session.finish()
    assert code == 0, session.stderr
    frames = re.split(r"\x1b\[(\d+)F\x1b\[J", out)  # back up to the first line, clear, redraw
    assert len(frames) >= 5, out
    for frame, up in zip(frames[0::2], frames[1::2]):
        lines = frame.split("\n")[:-1]
        assert int(up) == len(lines) and all(len(line) < 80 for line in lines), lines
    assert any(line.endswith("…") for line in frames[0].split("\n"))
    assert "Traceback" not in session.stderr and "interrupted" not in session.stderr


def test_status_watch_ends_as_watch_does_when_gnod_stops(daemon):
    """It printed "lost the connection to gnod: [Errno 32] Broken pipe" and exited 2."""
    piped = subprocess.Popen(
        [sys.executable, "-m", "gnoctl.main", "status", "--watch", "--json"],
        env=daemon.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert json.loads(piped.stdout.readline())["pid"] == daemon.proc.pid
    daemon.stop()
    assert piped.wait(20) == 3
    err = piped.stderr.read()
    assert "gnod stopped: nothing more to watch" in err and "lost the connection" not in err, err


def test_ctrl_c_during_collection_add_says_indexing_goes_on(daemon, tmp_path):
    env = daemon.env
    big = many_files(str(tmp_path / "big"), 3000)
    add = subprocess.Popen(
        [sys.executable, "-m", "gnoctl.main", "collection", "add", big, "--name", "big"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not daemon.result("status")["job"]["running"]:
        time.sleep(0.01)
    add.send_signal(2)  # SIGINT, as Ctrl-C
    out, err = add.communicate(timeout=30)
    assert add.returncode == 130
    assert "goes on indexing big in the background" in err and "gnoctl status" in err, err
    # It does go on: the run completes and everything is indexed.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and daemon.result("status")["job"]["running"]:
        time.sleep(0.05)
    cols = {c["name"]: c for c in daemon.result("collection.list")["collections"]}
    assert cols["big"]["documents"] == 3000


# --- config, models, space ------------------------------------------------------------------------------


def test_config_edits_keep_comments_and_layout(daemon, tmp_path):
    env = daemon.env
    kept = write_tree(str(tmp_path / "kept"), {"a.md": "# A\n"})
    config = os.path.join(env["GNO_HOME"], "config", "config.toml")
    original = (
        "# My gno config: hand-written, please keep this comment.\n\n"
        "[[collections]]\n"
        f'name = "kept"   # the folder I care about\n'
        f'path = "{kept}/"\n'
        "\n[daemon]\n"
        'log_level = "info"  # explicit default, kept as written\n'
    )
    os.makedirs(os.path.dirname(config), exist_ok=True)
    with open(config, "w") as f:
        f.write(original)
    other = write_tree(str(tmp_path / "other"), {"b.md": "# B\n"})
    gone = write_tree(str(tmp_path / "gone"), {"c.md": "# C\n"})
    cli_json("collection", "add", other, "--name", "other", "--exclude", "tmp/", "--json", env=env)
    cli_json("collection", "add", gone, "--name", "gone", "--json", env=env)
    cli_json("collection", "remove", "gone", "--json", env=env)
    cli_json("models", "use", "balanced", "--json", env=env)
    with open(config) as f:
        text = f.read()
    lines = iter(text.splitlines())
    assert all(line in lines for line in original.splitlines()), text  # every line, in order, as written
    assert text.endswith('\n\n[models]\npreset = "balanced"\n') and "\n\n[daemon]" in text, text
    assert 'name = "other"' in text and 'exclude = ["tmp/"]' in text and 'preset = "balanced"' in text
    assert "gone" not in text
    names = [c["name"] for c in cli_json("collection", "list", "--json", env=env)["collections"]]
    assert names == ["kept", "other"]


def test_models_use_a_missing_file_is_refused(daemon):
    env = daemon.env
    r = cli("models", "use", "embed=file:/missing/model.gguf", "--json", env=env, expect=2)
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "INVALID_PARAMS" and "/missing/model.gguf" in err["message"]
    r = cli("models", "use", "embed=file:/missing/model.gguf", "--human", env=env, expect=2)
    assert "no model file" in r.stderr
    # A file that is no GGUF model (it was taken, and `doctor` then advised downloading it).
    fake = os.path.join(daemon.env["GNO_HOME"], "fake.gguf")
    with open(fake, "w") as f:
        f.write("not a model")
    r = cli("models", "use", f"embed=file:{fake}", "--json", env=env, expect=2)
    assert "is not a GGUF model file" in json.loads(r.stdout)["error"]["message"]
    embed = next(m for m in daemon.result("models.list")["models"] if m["role"] == "embed")
    assert "missing" not in embed["uri"] and "fake" not in embed["uri"]  # nothing was switched or saved


def test_models_use_sets_several_roles_at_once_or_none(daemon):
    """It took one ROLE=URI a call: a second was an unexpected extra argument."""
    env = daemon.env
    home = daemon.env["GNO_HOME"]
    for name in ("e.gguf", "r.gguf"):
        with open(os.path.join(home, name), "wb") as f:
            f.write(b"GGUF" + bytes(60))

    def uris() -> dict:
        return {m["role"]: m["uri"] for m in daemon.result("models.list")["models"]}

    before = uris()
    # One refused (a missing file): neither is switched.
    r = cli("models", "use", f"embed=file:{home}/e.gguf", "rerank=file:/missing/r.gguf", "--json", env=env, expect=2)
    assert "/missing/r.gguf" in json.loads(r.stdout)["error"]["message"]
    assert uris() == before
    cli("models", "use", "light", f"embed=file:{home}/e.gguf", f"rerank=file:{home}/r.gguf", "--json", env=env)
    after = uris()
    assert (after["embed"], after["rerank"]) == (f"file:{home}/e.gguf", f"file:{home}/r.gguf")
    with open(os.path.join(home, "config", "config.toml")) as f:
        assert 'preset = "light"' in f.read()
    r = cli("models", "use", "light", "slim", env=env, expect=2)
    assert "one preset at a time, not light and slim" in r.stderr
    r = cli("models", "use", "embed=file:/a.gguf", "embed=file:/b.gguf", env=env, expect=2)
    assert "embed is given twice" in r.stderr


def test_models_use_says_no_vectors_come_while_the_embed_model_is_missing(daemon):
    """It said "new vectors are made in the background" with no embed model downloaded."""
    out = cli("models", "use", "light", "--human", env=daemon.env).stdout
    assert "not downloaded: no new vectors until `gnoctl models pull embed`" in out, out
    assert "made in the background" not in out


def test_models_list_shows_preset_sizes_before_download(daemon):
    out = cli("models", "list", "--human", env=daemon.env).stdout
    sizes = re.findall(r"not downloaded, ~(\d+) MiB", out)
    assert len(sizes) == 3 and all(int(s) > 100 for s in sizes), out
    models = cli_json("models", "list", "--json", env=daemon.env)["models"]
    assert all(m["size_bytes"] and not m["cached"] for m in models)


def test_removing_a_collection_gives_the_space_back(daemon, tmp_path):
    env = daemon.env
    cli_json(
        "collection", "add", many_files(str(tmp_path / "big"), 1500, words=900), "--name", "big", "--json", env=env
    )
    before = cli_json("status", "--json", env=env)["db_bytes"]
    assert before > 3 * 1048576  # ~4 MiB, give or take what the WAL holds at the time
    cli_json("collection", "remove", "big", "--json", env=env)
    after = cli_json("status", "--json", env=env)["db_bytes"]
    assert after < before / 5, (before, after)
    out = cli("status", "--human", env=env).stdout
    assert re.search(r"^index: .*MiB\)", out, re.M)


# --- scripts/quickstart.sh ----------------------------------------------------------------------------------


@pytest.mark.timeout(300)
def test_quickstart_is_idempotent_and_shows_the_repository(gno_home):
    env = {**make_env(gno_home), "GNOCTL": f"{sys.executable} -m gnoctl.main", "PYTHONPATH": ROOT}
    runs = []
    for _ in range(2):
        p = subprocess.run(
            ["bash", os.path.join(ROOT, "scripts", "quickstart.sh")],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert p.returncode == 0, p.stdout + p.stderr
        runs.append(p.stdout)
    first, second = runs
    # The demo indexes the README, the docs and the code, and both queries find something in them.
    st = cli_json("status", "--json", env=env)
    assert [c["name"] for c in st["collections"]] == ["gno"] and st["documents"] > 20
    for out in runs:
        assert "README.md" in out and "docs/protocol.md" in out
        assert "gnod/" in out or "gnoctl/" in out
        assert "degraded:" in out  # the hybrid query ran without downloaded models, and said so
    assert "documents 0 added," not in first and "documents 0 added," in second  # the second run only re-checked


@pytest.mark.timeout(300)
def test_quickstart_from_another_clone_indexes_that_clone(gno_home, tmp_path):
    env = {**make_env(gno_home), "GNOCTL": f"{sys.executable} -m gnoctl.main", "PYTHONPATH": ROOT}
    clones = [tmp_path / "a" / "gno", tmp_path / "b" / "gno"]
    for clone in clones:  # what the demo reads of a clone
        for part in ("scripts", "docs", "gnod", "gnoctl"):
            shutil.copytree(os.path.join(ROOT, part), clone / part, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(os.path.join(ROOT, "README.md"), clone / "README.md")
    outs = []
    for clone in clones:
        p = subprocess.run(
            ["bash", str(clone / "scripts" / "quickstart.sh")],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert p.returncode == 0, p.stdout + p.stderr
        outs.append(p.stdout)
    assert f"collection gno indexed {clones[0].resolve()}; indexing {clones[1].resolve()} instead" in outs[1]
    cols = cli_json("collection", "list", "--json", env=env)["collections"]
    assert [(c["name"], c["path"]) for c in cols] == [("gno", str(clones[1].resolve()))]
    assert cols[0]["documents"] > 20 and cols[0]["errors"] == 0


def test_watch_prints_each_change_as_it_is_committed(daemon, tmp_path):
    root = write_tree(str(tmp_path / "notes"), {"a.md": "# A\n\nalpha\n"})
    cli_json("collection", "add", root, "--name", "notes", "--json", env=daemon.env)
    # In a pipe: JSON Lines, one notification each.
    piped = subprocess.Popen(
        [sys.executable, "-m", "gnoctl.main", "watch", "notes"],
        env=daemon.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # On a terminal: a line for a person.
    session = PtyCli("watch", env=daemon.env, cols=80)
    try:
        time.sleep(1.0)  # both subscribed
        with open(os.path.join(root, "b.md"), "w") as f:
            f.write("# B\n\nbeta\n")
        event = json.loads(piped.stdout.readline())
        assert (event["event"], event["kind"], event["collection"], event["path"]) == (
            "change",
            "added",
            "notes",
            "b.md",
        )
        assert cli("search", "beta", "--files", env=daemon.env).stdout.strip().endswith("b.md")  # already seen
        assert session.read_until(lambda t: re.search(r"\d\d:\d\d:\d\d  added    notes/b\.md", t), 10), session.text
    finally:
        session.interrupt()
        code, _ = session.finish()
    assert code == 0 and "Traceback" not in session.stderr  # Ctrl-C ends it
    daemon.stop()
    assert piped.wait(20) == 3 and "gnod stopped" in piped.stderr.read()
