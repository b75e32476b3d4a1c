"""gnoctl end to end: a live gnod, a real folder of documents, the real CLI."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from conftest import (
    BINARY_FILE,
    INDEXABLE,
    _run_cli,
    build_corpus,
    cli_json,
    run_cli_tty,
    running_gnod,
    wait_until,
    write_tree,
)
from gnod.config import CollectionConfig

pytestmark = pytest.mark.timeout(120)

OTHER_DOCS = {
    "checklist.md": "# Release checklist\n\nBefore you deploy, tag the release and update the changelog.\n",
    "lunch.md": "# Lunch options\n\nThe canteen serves soup on Mondays.\n",
}


def cli(*args: str, env, expect: int = 0) -> subprocess.CompletedProcess:
    r = _run_cli(*args, env=env)
    assert r.returncode == expect, f"gnoctl {' '.join(args)} → {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    return r


def search(env, *args: str, expect: int = 0) -> dict:
    """`gnoctl search --json`; exit 0 when something matched, 1 when nothing did."""
    return cli_json("search", *args, "--json", env=env, expect=expect)


def hit_paths(result: dict) -> list[str]:
    return [f"{h['collection']}/{h['path']}" for h in result["hits"]]


def cli_error(*args: str, env, expect: int = 2) -> dict:
    """Run a failing command with --json; check the error shape (and that stderr says it
    too: a script's stdout may go to a file); return the error object."""
    r = _run_cli(*args, "--json", env=env)
    assert r.returncode == expect, f"{r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    doc = json.loads(r.stdout)
    assert list(doc) == ["error"]
    err = doc["error"]
    assert set(err) == {"code", "message", "details"}, err
    assert isinstance(err["message"], str) and err["message"]
    assert isinstance(err["details"], dict)
    assert err["message"].splitlines()[0] in r.stderr, r.stderr
    return err


# --- a shared, indexed daemon for the read-only tests --------------------------------------


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    with running_gnod() as (env, d):
        corpus = build_corpus(str(tmp_path_factory.mktemp("corpus")))
        other = write_tree(str(tmp_path_factory.mktemp("other")), OTHER_DOCS)
        add = cli_json("collection", "add", corpus.root, "--name", "docs", "--json", env=env)
        add_other = cli_json("collection", "add", other, "--name", "other", "--json", env=env)
        yield SimpleNamespace(daemon=d, env=env, corpus=corpus, other=other, add=add, add_other=add_other)


def test_collection_add_summary(indexed):
    (stats,) = indexed.add["collections"]
    if stats["added"] != 5 or stats["errors"] != 1:
        st = indexed.daemon.result("status")
        pytest.fail(f"unexpected add summary {stats}; ingest errors: {st['recent_errors']}")
    assert stats["collection"] == "docs"
    assert stats["added"] == len(INDEXABLE) == 5
    assert stats["errors"] == 1  # the binary .txt
    assert stats["scanned"] == len(INDEXABLE) + 1
    assert stats["updated"] == stats["removed"] == stats["unchanged"] == 0
    assert indexed.add_other["collections"][0]["added"] == len(OTHER_DOCS)


def test_collection_add_over_the_protocol_wants_an_absolute_path(indexed):
    """The MCP bridge sent an agent's `relative/dir` on, and gnod took it from its own
    working directory; gnoctl makes the path absolute from the user's."""
    err = indexed.daemon.rpc("collection.add", {"name": "rel", "path": "relative/dir"})["error"]
    assert err["data"]["name"] == "INVALID_PARAMS" and "not an absolute path" in err["message"], err


def test_collection_add_tells_what_the_default_kinds_left_out(tmp_path):
    """Files of kinds gno does not read by default are counted by extension, so the user
    hears of them; hidden, ignored and excluded ones are left out on purpose, and with
    include globs the user chose."""
    tree = write_tree(
        str(tmp_path / "tree"),
        {
            "notes.md": "# Notes\n\nkettle\n",
            "logo.svg": "<svg/>",
            "art/icon.svg": "<svg/>",
            "run.log": "started",
            "tools/frobnicate": "data of no kind",  # no extension, no #!: no script
            ".clang-format": "BasedOnStyle: LLVM",
            "obj/.gitignore": "*.o\n",  # not at the top: no project's tree, whose files without an extension count
            "obj/main.o": "object",
            "old/notes.bak": "x",
            "node_modules/m.md": "# Module",
            **{f"data/{n}.parquet": "PAR1" for n in "abc"},
            "analysis.Rmd": "# Analysis",
        },
    )
    with running_gnod() as (env, _d):
        add = cli_json("collection", "add", tree, "--name", "t", "--exclude", "old/", "--json", env=env)
        assert add["collections"][0]["other_kinds"] == {".parquet": 3, ".svg": 2, ".log": 1, "": 1}
        text = cli("update", "t", "--human", env=env).stdout
        assert "not indexed: 7 files of other kinds (.parquet 3, .svg 2, " in text, text
        # The glob suggested is one of a kind gno reads as text (not .parquet's, which fails as BINARY).
        assert (
            "--also globs take them besides the default kinds (gnoctl collection set t --also '*.svg', "
            "with those it has)"
        ) in text
        cli("collection", "remove", "t", "--json", env=env)
        add = cli_json("collection", "add", tree, "--name", "t", "--include", "*.md", "--json", env=env)
        assert add["collections"][0]["other_kinds"] == {}
        # --also takes some of them besides the default kinds, and the config keeps it.
        cli("collection", "remove", "t", "--json", env=env)
        add = cli_json(
            "collection",
            "add",
            tree,
            "--name",
            "t",
            "--exclude",
            "old/",
            "--also",
            "*.svg",
            "--also",
            "tools/*",
            "--json",
            env=env,
        )
        assert add["collections"][0]["other_kinds"] == {".log": 1, ".parquet": 3}
        listed = {e["path"] for e in cli_json("ls", "t", "--json", env=env)["entries"]}
        # R Markdown is Markdown: a default kind (a data project's analysis.Rmd was left out).
        assert {"notes.md", "logo.svg", "art/icon.svg", "tools/frobnicate", "analysis.Rmd"} <= listed
        assert "run.log" not in listed
        (info,) = cli_json("collection", "list", "--json", env=env)["collections"]
        assert info["also"] == ["*.svg", "tools/*"]
        # `get` of such a file says why it is not there.
        cli("collection", "remove", "t", "--json", env=env)
        cli_json("collection", "add", tree, "--name", "t", "--exclude", "old/", "--json", env=env)
        for ref, why in (("t/logo.svg", "KIND"), ("obj/main.o", "FILTERED"), (f"{tree}/old/notes.bak", "FILTERED")):
            err = cli_error("get", ref, env=env)
            assert (err["code"], err["details"]["why"], err["details"]["collection"]) == ("NOT_FOUND", why, "t"), ref
        assert cli_error("get", "t/logo.svg:3", env=env)["message"] == (
            "'t/logo.svg' is in the folder of collection 't' but not indexed: its kind of file is not indexed "
            'by default; an `also` glob in the collection\'s config takes it besides the default kinds: also = ["*.svg"]'
        )
        assert 'also = ["tools/frobnicate"]' in cli_error("get", "t/tools/frobnicate", env=env)["message"]
        assert cli_error("get", "t/node_modules/m.md", env=env)["message"].endswith(
            "not indexed: it is in a folder named node_modules/, which gnod never indexes"
        )
        # build/ is output in a folder that no .gitignore at its top says more of.
        plain = write_tree(str(tmp_path / "plain"), {"a.md": "# A\n", "build/out.md": "# Output\n"})
        cli_json("collection", "add", plain, "--name", "p", "--json", env=env)
        assert cli_error("get", "p/build/out.md", env=env)["message"].endswith(
            "not indexed: it is in a folder named build/, left out as build output where no .gitignore "
            "at the collection's top (or its git work tree) says what the output is"
        )


def test_collection_add_tells_which_folders_it_took_for_build_output(tmp_path):
    """A plain folder's build/ and dist/ are taken for a build's output by their names:
    the user hears of them and how to let them in, and then they are indexed."""
    tree = write_tree(
        str(tmp_path / "notes"),
        {
            "a.md": "# A\n\nalpha\n",
            "build/shed.md": "# Building the shed\n\nplanks\n",
            "garden/build/beds.md": "# Raised beds\n\nplanks\n",
            "dist/x.md": "# Distances\n\nplanks\n",
            "node_modules/m.md": "# Module\n\nplanks\n",
        },
    )
    with running_gnod() as (env, _d):
        add = cli_json("collection", "add", tree, "--name", "n", "--json", env=env)
        assert add["collections"][0]["output_folders"] == {"build": 2, "dist": 1}
        text = cli("update", "n", "--human", env=env).stdout
        assert (
            "not indexed: 3 folders taken for build output by name (build/ 2, dist/ 1); a .gitignore at the "
            "collection's top (an empty one will do) lets them in"
        ) in text
        open(os.path.join(tree, ".gitignore"), "w").close()
        update = cli_json("update", "n", "--json", env=env)
        assert update["collections"][0]["output_folders"] == {}
        found = cli_json("search", "planks", "--json", env=env)["hits"]  # the watcher may have taken them first
        assert sorted(h["path"] for h in found) == ["build/shed.md", "dist/x.md", "garden/build/beds.md"]


def test_a_file_the_index_has_not_taken_yet_is_pending(tmp_path):
    """The watcher indexes a new file within a second, so the one case a running gnod
    cannot hold still is read here on a collection whose index is empty."""
    from types import SimpleNamespace

    from conftest import migrated_db
    from gnod.server import unindexed

    tree = write_tree(str(tmp_path / "tree"), {"notes.md": "# Notes\n", "logo.svg": "<svg/>"})
    col = CollectionConfig(name="t", path=tree)
    daemon = SimpleNamespace(config=SimpleNamespace(collections=[col]), collection={"t": col}.get)
    conn = migrated_db(str(tmp_path / "index.sqlite"))
    message, details = unindexed.explain(daemon, conn, "notes.md")
    assert details == {"ref": "notes.md", "collection": "t", "path": "notes.md", "why": "PENDING"}
    assert "gnoctl update" in message
    assert unindexed.explain(daemon, conn, f"{tree}/logo.svg")[1]["why"] == "KIND"
    assert unindexed.explain(daemon, conn, "t/nope.md") is None


def test_ignored_and_excluded_files_are_not_indexed(indexed):
    ls = cli_json("ls", "docs", "--json", env=indexed.env)
    paths = sorted(e["path"] for e in ls["entries"])
    assert paths == INDEXABLE
    for skipped in indexed.corpus.skipped + [BINARY_FILE]:
        assert skipped not in paths
    # Text that only the ignored files contain is not searchable.
    res = search(indexed.env, "hunter2", expect=1)
    assert res["hits"] == []
    res = search(indexed.env, "vendored", expect=1)
    assert res["hits"] == []


def test_binary_file_is_a_recorded_ingest_error(indexed):
    st = cli_json("status", "--json", env=indexed.env)
    errs = [e for e in st["recent_errors"] if e["collection"] == "docs"]
    assert [(e["path"], e["code"]) for e in errs] == [(BINARY_FILE, "BINARY")]
    assert errs[0]["reason"]
    docs = {c["name"]: c for c in st["collections"]}
    assert docs["docs"]["documents"] == 5 and docs["docs"]["errors"] == 1
    assert docs["other"]["documents"] == 2
    assert st["documents"] == 7
    assert set(st["languages"]) >= {"english", "german"}
    assert st["job"]["running"] is False
    # doctor counts them in words ("1 errors" read as a slip).
    by = {c["component"]: c for c in cli_json("doctor", "--json", env=indexed.env)["checks"]}
    assert by["collection docs"]["detail"].startswith(
        "5 documents, 1 file that could not be read (gnoctl status --errors lists them), "
    )


def test_collection_list(indexed):
    # Regression: --json used to print the human lines after the JSON document.
    res = json.loads(cli("collection", "list", "--json", env=indexed.env).stdout)
    cols = {c["name"]: c for c in res["collections"]}
    assert set(cols) == {"docs", "other"}
    assert cols["docs"]["path"] == indexed.corpus.root
    assert cols["docs"]["gitignore"] is True
    assert (cols["docs"]["documents"], cols["other"]["documents"]) == (5, 2)


# --- search output formats -----------------------------------------------------------------


def test_search_json_schema(indexed):
    res = search(indexed.env, "deploy")
    assert set(res) == {
        "query",
        "hits",
        "total_candidates",
        "terms",
        "dropped_stopwords",
        "languages",
        "took_ms",
        "freshness",
        "notes",
        "instead",
    }
    assert res["instead"] is None
    assert "docs" in [f["collection"] for f in res["freshness"]]
    assert res["query"] == "deploy"
    assert res["terms"] == ["deploy"]
    assert res["hits"], res
    for h in res["hits"]:
        assert set(h) == {
            "docid",
            "uri",
            "collection",
            "path",
            "abs_path",
            "title",
            "converted",
            "date",
            "sender",
            "score",
            "bm25",
            "language",
            "snippet",
            "snippets",
        }
        assert h["uri"] == f"gno://{h['collection']}/{h['path']}"
        assert 0.0 <= h["score"] <= 1.0
        assert set(h["snippet"]) == {"line", "text", "matches", "symbol", "offset", "before", "table_header"}
        assert h["snippet"]["symbol"] is None  # Markdown: no definitions
    assert res["hits"][0]["score"] == 1.0
    scores = [h["score"] for h in res["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert "docs/guides/deploy.md" in hit_paths(res)


def test_search_defaults_to_json_when_not_a_tty(indexed):
    r = cli("search", "deploy", env=indexed.env)
    assert json.loads(r.stdout)["query"] == "deploy"


def test_search_files(indexed):
    r = cli("search", "deploy", "--files", env=indexed.env)
    lines = r.stdout.splitlines()
    assert lines
    for line in lines:
        assert os.path.isabs(line) and os.path.isfile(line), line
    assert indexed.corpus.path("guides/deploy.md") in lines


def test_search_without_snippets(indexed):
    with_lines = search(indexed.env, "deploy")
    bare = search(indexed.env, "deploy", "--no-snippets")
    assert hit_paths(bare) == hit_paths(with_lines) and with_lines["hits"][0]["snippet"]
    assert all(h["snippet"] is None and h["snippets"] == [] for h in bare["hits"])
    files = cli("search", "deploy", "--no-snippets", "--files", env=indexed.env).stdout.splitlines()
    assert indexed.corpus.path("guides/deploy.md") in files
    human = cli("search", "deploy", "--no-snippets", "--human", "--no-pager", env=indexed.env).stdout
    assert "guides/deploy.md" in human


def test_search_csv(indexed):
    r = cli("search", "deploy", "--csv", env=indexed.env)
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert rows[0] == ["rank", "score", "collection", "path", "line", "title", "snippet", "symbol", "abs_path"]
    body = rows[1:]
    assert body and [row[0] for row in body] == [str(i) for i in range(1, len(body) + 1)]
    assert ("docs", "guides/deploy.md") in {(row[2], row[3]) for row in body}


def test_csv_names_the_definition_a_passage_of_code_is_in(tmp_path):
    """The other formats say which function a passage is in (`fetch()`); CSV had no column for it."""
    (tmp_path / "tool.py").write_text("import os\n\n\ndef fetch(url):\n    return zqxretry(url)\n")
    with running_gnod() as (env, _d):
        cli_json("collection", "add", str(tmp_path), "--name", "code", "--json", env=env)
        assert wait_until(lambda: cli_json("status", "--json", env=env)["symbols"]["parsed"] > 0, 30)
        for command in ("search", "query"):
            rows = list(csv.DictReader(io.StringIO(cli(command, "zqxretry", "--csv", env=env).stdout)))
            assert [(r["path"], r["symbol"]) for r in rows] == [("tool.py", "fetch()")], command
            assert list(rows[0])[-1] == "abs_path"  # still the last column


def test_a_list_of_files_is_not_of_a_respelling(tmp_path):
    """`vim $(gnoctl search --symbol init_task -l)` opened the file defining `init_mask`,
    the name one edit away, with exit status 0 and a note on stderr: a list a program
    reads lists none of a respelling's hits, and exits 1; JSON and text show them."""
    files = {f"n{i}.md": f"# Note {i}\n\nkubernetes cluster {i}\n" for i in range(3)}
    files["tool.py"] = "def load(path):\n    return open(path).read()\n"
    with running_gnod() as (env, _d):
        cli_json("collection", "add", write_tree(str(tmp_path / "t"), files), "--name", "t", "--json", env=env)
        assert wait_until(lambda: cli_json("status", "--json", env=env)["symbols"]["parsed"] > 0, 30)
        for argv, meant in ((["kubernetse"], "kubernetes"), (["--symbol", "laod"], "load")):
            res = search(env, *argv)
            assert res["instead"] == meant and res["hits"], argv
            for fmt in ("--files", "--vimgrep", "--jsonl", "--csv"):
                r = _run_cli("search", *argv, fmt, env=env)
                assert (r.returncode, r.stdout) == (1, ""), (argv, fmt, r.stdout)
                assert f"search '{meant}' for them" in r.stderr, r.stderr
        assert search(env, "kubernetes")["instead"] is None
        assert cli("search", "kubernetes", "--files", env=env).stdout.count("\n") == 3


def test_search_md(indexed):
    r = cli("search", "deploy", "--md", env=indexed.env)
    lines = r.stdout.splitlines()
    assert lines[0] == "| # | score | document | title | match |"
    assert lines[1] == "|---|---|---|---|---|"
    assert len(lines) > 2
    assert all(line.startswith("| ") and line.endswith(" |") for line in lines[2:])
    assert any("`docs/guides/deploy.md:" in line for line in lines[2:])


def test_search_xml(indexed):
    r = cli("search", "deploy", "--xml", env=indexed.env)
    root = ET.fromstring(r.stdout)
    assert root.tag == "results"
    assert root.get("query") == "deploy"
    results = root.findall("result")
    assert results and int(root.get("count")) == len(results)
    first = results[0]
    assert first.get("rank") == "1" and first.find("title").text
    assert ("docs", "guides/deploy.md") in {(e.get("collection"), e.get("path")) for e in results}


def test_search_xml_escapes_the_query(indexed):
    r = cli("search", 'deploy <&> "x"', "--xml", env=indexed.env)
    assert ET.fromstring(r.stdout).get("query") == 'deploy <&> "x"'


def test_two_format_flags_conflict(indexed):
    # Regression: the fast parser used to let the last flag win (exit 0) where typer refuses.
    for flags in (("--json", "--csv"), ("--md", "--xml", "--files")):
        r = _run_cli("search", "deploy", *flags, env=indexed.env)
        assert r.returncode == 2, r
        assert r.stdout == ""
        assert "pick one output format" in r.stderr


# --- search options ----------------------------------------------------------------------


def test_limit(indexed):
    assert len(search(indexed.env, "deploy")["hits"]) >= 3
    assert len(search(indexed.env, "deploy", "-n", "1")["hits"]) == 1
    assert len(search(indexed.env, "deploy", "--limit=2")["hits"]) == 2
    assert len(search(indexed.env, "deploy", "--limit", "2")["hits"]) == 2


def test_limit_out_of_range_is_a_usage_error(indexed):
    r = _run_cli("search", "deploy", "-n", "0", env=indexed.env)
    assert r.returncode == 2
    assert "limit" in r.stderr.lower() or "-n" in r.stderr


@pytest.mark.parametrize(
    "args",
    [("deploy", "--tag"), ("deploy", "--tag", "--json"), ("deploy", "--since", "-n", "3"), ("--tag", "--", "deploy")],
)
def test_an_option_without_its_value_is_a_usage_error(indexed, args):
    """`--tag` last took the `--` before the words for its value (no document passed the
    filter "tag --"), and `--tag --json` took `--json`: a search that said nothing."""
    r = _run_cli("search", *args, env=indexed.env)
    assert r.returncode == 2
    option = next(a for a in args if a in ("--tag", "--since"))
    assert f"Option '{option}' requires an argument." in r.stderr
    assert "to search for" not in r.stderr  # the option is known: no hint to quote it


def test_min_score(indexed):
    every = search(indexed.env, "deploy production")["hits"]
    some = search(indexed.env, "deploy production", "--min-score", "0.5")["hits"]
    assert 0 < len(some) < len(every)
    assert all(h["score"] >= 0.5 for h in some)
    assert search(indexed.env, "deploy production", "--min-score=1.0")["hits"][0]["score"] == 1.0


def test_collection_filter(indexed):
    both = search(indexed.env, "deploy")
    assert {h["collection"] for h in both["hits"]} == {"docs", "other"}
    only_other = search(indexed.env, "deploy", "-c", "other")
    assert hit_paths(only_other) == ["other/checklist.md"]
    only_docs = search(indexed.env, "deploy", "--collection", "docs")
    assert {h["collection"] for h in only_docs["hits"]} == {"docs"}
    again = search(indexed.env, "deploy", "-c", "docs", "-c", "other")
    assert sorted(hit_paths(again)) == sorted(hit_paths(both))


def test_unknown_collection_is_not_found(indexed):
    err = cli_error("search", "deploy", "-c", "nope", env=indexed.env)
    assert err["code"] == "NOT_FOUND"
    assert "nope" in err["message"]
    assert err["details"] == {"name": "nope"}


def test_german_query_finds_the_german_doc(indexed):
    for query in ("Bereitstellung", "Anleitungen"):  # the second only matches through stemming
        res = search(indexed.env, query)
        assert res["hits"], query
        top = res["hits"][0]
        assert top["path"] == "german/anleitung.md", res
        assert top["language"] == "german"


def test_negation(indexed):
    # gnoctl's fast parser keeps `-production` as a negated query word, not an option.
    res = search(indexed.env, "deploy", "-production")
    paths = hit_paths(res)
    assert res["query"] == "deploy -production"
    assert "docs/guides/staging.md" in paths and "other/checklist.md" in paths
    assert "docs/guides/deploy.md" not in paths
    # A quoted negated phrase works the same way.
    res = search(indexed.env, "deploy", '-"billing service"')
    assert "docs/guides/deploy.md" not in hit_paths(res)
    assert "docs/guides/staging.md" in hit_paths(res)


def test_negation_with_single_letter_and_attached_values(indexed):
    # A one-letter `-x` is an option (unknown: an error) unless after `--`; a known short
    # option keeps an attached number (`-n1`).
    res = cli_json("search", "deploy", "-production", "-n1", "--json", "--", "-x", env=indexed.env)
    assert len(res["hits"]) == 1
    assert res["query"] == "deploy -production -x"
    assert hit_paths(res)[0] != "docs/guides/deploy.md"


def test_negated_words_survive_the_typer_fallback(indexed):
    # Regression: when the fast parser hands over to typer (here: a bad --limit), click used
    # to split `-production` into short options (`-c` swallowing 'tion'). The error must be
    # about the real problem.
    r = _run_cli("search", "deploy", "-production", "--limit", "0", env=indexed.env)
    assert r.returncode == 2
    assert "tion" not in r.stdout + r.stderr
    assert "limit" in r.stderr.lower()


def test_malformed_query(indexed):
    # An empty query with filters: what lists the documents passing them is said.
    err = cli_error("search", "", "--tag", "meeting", env=indexed.env)
    assert err["code"] == "INVALID_QUERY" and err["message"].endswith(
        "; `gnoctl ls` with the same filters lists what passes them"
    )
    assert cli_error("search", " ", env=indexed.env)["message"] == "empty query: give some words to search for"
    err = cli_error("search", '"unclosed', env=indexed.env)
    assert err["code"] == "INVALID_QUERY"
    assert "quote" in err["message"]
    assert err["details"] == {"query": '"unclosed'}
    # Human formats: the message on stderr, exit 2, nothing on stdout.
    r = _run_cli("search", '"unclosed', "--csv", env=indexed.env)
    assert r.returncode == 2 and r.stdout == "" and "quote" in r.stderr


def test_a_query_of_negations_alone_is_searched_as_text_and_says_so(indexed):
    """Nothing to leave `-deploy` out of: a flag's words (`-Wall`) are what such a query
    looks for, not an error."""
    res = cli_json("search", "--json", "--", "-deploy", env=indexed.env)
    assert res["hits"] and res["terms"] == ["-deploy"]
    assert res["notes"][0].startswith("-deploy: searched as text, since the query holds nothing else")
    r = _run_cli("search", "--", "-deploy", "-nowhere", env=indexed.env)
    assert r.returncode == 0 and "-deploy, -nowhere: searched as text" in r.stderr + r.stdout


# --- get, multi-get, ls ----------------------------------------------------------------------


def get_json(env, *args: str) -> dict:
    return cli_json("get", *args, "--json", env=env)


def test_get_takes_a_path_from_the_working_directory(indexed):
    """As git and editors give paths: `deploy.md:3` typed in the collection's guides/
    folder, a name no collection's document has from its top."""
    here = os.path.dirname(indexed.corpus.path("guides/deploy.md"))

    def from_here(*argv: str) -> dict:
        r = subprocess.run(
            [sys.executable, "-m", "gnoctl.main", *argv, "--json"],
            env=indexed.env,
            cwd=here,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        return json.loads(r.stdout)

    for ref in ("deploy.md:3", "./deploy.md", "../guides/deploy.md:3-4"):
        assert from_here("get", ref)["uri"] == "gno://docs/guides/deploy.md", ref
    # From elsewhere, the one document of that name in any folder.
    assert get_json(indexed.env, "deploy.md")["uri"] == "gno://docs/guides/deploy.md"
    # `..` in a collection's path leads where it leads (it was "in the folder … but not indexed").
    assert get_json(indexed.env, "docs/notes/../guides/deploy.md:3")["uri"] == "gno://docs/guides/deploy.md"
    assert cli_error("get", "docs/../elsewhere.md", env=indexed.env)["code"] == "NOT_FOUND"
    # `similar` takes it too (it said no indexed document matches).
    for ref in ("deploy.md", "./deploy.md"):
        assert from_here("similar", ref)["uri"] == "gno://docs/guides/deploy.md", ref


def test_get_by_collection_path(indexed):
    code, out = run_cli_tty("get", "docs/guides/deploy.md", env=indexed.env)
    assert code == 0
    with open(indexed.corpus.path("guides/deploy.md")) as f:
        assert out == f.read()
    doc = get_json(indexed.env, "docs/guides/deploy.md")
    assert doc["uri"] == "gno://docs/guides/deploy.md"
    assert doc["abs_path"] == indexed.corpus.path("guides/deploy.md")
    assert doc["title"] == "Deployment guide"
    assert doc["from_line"] == 1 and doc["to_line"] == doc["total_lines"] == 6
    assert doc["language"] == "english"


def test_get_by_path_and_line(indexed):
    doc = get_json(indexed.env, "docs/guides/deploy.md:3")
    assert doc["from_line"] == 3
    assert doc["content"].startswith("How to deploy the billing service")


def test_get_refuses_line_0_and_two_first_lines(indexed):
    """Each used to print something else than asked, without a word: the whole file for
    `:0`, `--from-line`'s lines for `:3 --from-line 5`; a range must run forward and agree
    with `--lines`."""
    err = cli_error("get", "docs/guides/deploy.md:0", env=indexed.env)
    assert err["code"] == "INVALID_PARAMS" and "lines start at 1" in err["message"]
    err = cli_error("get", "docs/guides/deploy.md:3", "--from-line", "5", env=indexed.env)
    assert err["code"] == "INVALID_PARAMS" and "names line 3, and from_line (--from-line) is 5" in err["message"]
    assert get_json(indexed.env, "docs/guides/deploy.md:3", "--from-line", "3")["from_line"] == 3
    err = cli_error("get", "docs/guides/deploy.md:5-3", env=indexed.env)
    assert err["code"] == "INVALID_PARAMS" and "last line before its first" in err["message"]
    err = cli_error("get", "docs/guides/deploy.md:3-4", "-l", "1", env=indexed.env)
    assert err["code"] == "INVALID_PARAMS" and "names 2 lines, and lines (--lines) is 1" in err["message"]


def test_get_takes_the_line_forms_of_grep_and_editors(indexed):
    """`:LINE:COLUMN` as vimgrep gives it (the column dropped), `:LINE:` as pasted from the
    human output (`path:LINE: text`), `:FIRST-LAST` a range."""
    for ref in ("docs/guides/deploy.md:3:12", "docs/guides/deploy.md:3:"):
        doc = get_json(indexed.env, ref)
        assert (doc["from_line"], doc["content"].splitlines()[0]) == (
            3,
            "How to deploy the billing service to production.",
        ), ref
    doc = get_json(indexed.env, "docs/guides/deploy.md:1-3")
    assert (doc["from_line"], doc["to_line"]) == (1, 3)
    assert doc["content"].splitlines()[0] == "# Deployment guide"
    # As GitHub links lines (an agent copies them from a link).
    doc = get_json(indexed.env, "docs/guides/deploy.md#L3-L4")
    assert (doc["from_line"], doc["to_line"]) == (3, 4)
    assert get_json(indexed.env, "docs/guides/deploy.md#L3")["content"].startswith("How to deploy the billing")


def test_get_takes_a_path_inside_the_one_collection_that_has_it(tmp_path):
    """As grep and editors give paths: no collection in front, when only one has it."""
    with running_gnod() as (env, _d):
        a = write_tree(
            str(tmp_path / "a"),
            {"notes.md": "# A\n\nalpha\n", "src/only.c": "int only;\n", "src/x/dup.c": "int x;\n"},
        )
        b = write_tree(str(tmp_path / "b"), {"notes.md": "# B\n\nbeta\n", "lib/dup.c": "int y;\n"})
        cli_json("collection", "add", a, "--name", "a", "--json", env=env)
        cli_json("collection", "add", b, "--name", "b", "--json", env=env)
        doc = get_json(env, "src/only.c:1")
        assert (doc["collection"], doc["path"], doc["content"]) == ("a", "src/only.c", "int only;\n")
        assert get_json(env, "b/notes.md")["content"].startswith("# B")  # a collection in front wins
        err = cli_error("get", "notes.md", env=env)
        assert err["code"] == "INVALID_PARAMS" and "in collections a, b: name one (a/notes.md)" in err["message"]
        assert err["details"] == {"ref": "notes.md", "collections": ["a", "b"]}
        assert cli_error("get", "src/none.c", env=env)["code"] == "NOT_FOUND"
        # A file named as it was seen elsewhere (a traceback's `only.c`): the one document
        # of that name, in any folder; where several are, NOT_FOUND names them.
        doc = get_json(env, "only.c:1")
        assert (doc["collection"], doc["path"], doc["content"]) == ("a", "src/only.c", "int only;\n")
        err = cli_error("get", "dup.c:1", env=env)
        assert err["code"] == "NOT_FOUND" and err["message"] == (
            "'dup.c:1': more than one document is called 'dup.c' (a/src/x/dup.c, b/lib/dup.c): name one by its path"
        )
        assert err["details"] == {"ref": "dup.c:1", "named": ["a/src/x/dup.c", "b/lib/dup.c"]}
        # A definition in it (it named none), or a path in no folder: the documents of its name.
        err = cli_error("get", "dup.c:main", env=env)
        assert err["details"] == {"ref": "dup.c:main", "named": ["a/src/x/dup.c", "b/lib/dup.c"]}, err
        # A section of it (`coding-style.rst#Indentation` said no indexed document matched).
        err = cli_error("get", "dup.c#Usage", env=env)
        assert err["message"].startswith("'dup.c#Usage': more than one document is called 'dup.c' ("), err
        err = cli_error("get", "src/y/dup.c", env=env)
        assert err["message"] == (
            "no indexed document matches 'src/y/dup.c'; documents of that name: a/src/x/dup.c, b/lib/dup.c"
        )


def test_a_file_from_the_working_directory_comes_before_another_collection_s_path(tmp_path):
    """`get hub.c:5015` in a kernel's drivers/usb/core printed that line of another
    collection's hub.c, at its top: a file here is the one meant. One here in no
    collection's folder leaves the ref to gnod; one gnod leaves out is not taken for the
    other collection's."""
    with running_gnod() as (env, _d):
        top = write_tree(str(tmp_path / "top"), {"hub.c": "int top;\n", "skip.md": "# Top skip\n"})
        deep = write_tree(
            str(tmp_path / "deep"),
            {".gitignore": "sub/skip.md\n", "sub/hub.c": "int deep;\n", "sub/skip.md": "# Deep skip\n"},
        )
        elsewhere = write_tree(str(tmp_path / "elsewhere"), {"hub.c": "int none;\n"})
        cli_json("collection", "add", top, "--name", "top", "--json", env=env)
        cli_json("collection", "add", deep, "--name", "deep", "--json", env=env)

        def from_dir(cwd: str, *argv: str, expect: int = 0) -> dict:
            r = subprocess.run(
                [sys.executable, "-m", "gnoctl.main", *argv, "--json"],
                env=env,
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert r.returncode == expect, r.stdout + r.stderr
            return json.loads(r.stdout)

        here = os.path.join(deep, "sub")
        for ref in ("hub.c", "hub.c:1", "./hub.c:1"):
            doc = from_dir(here, "get", ref)
            assert (doc["uri"], doc["content"]) == ("gno://deep/sub/hub.c", "int deep;\n"), ref
        assert from_dir(here, "similar", "hub.c")["uri"] == "gno://deep/sub/hub.c"
        # Here but in no collection's folder: the ref as gnod reads it, from a collection's top.
        assert from_dir(elsewhere, "get", "hub.c")["content"] == "int top;\n"
        # Here, in a collection's folder, but not indexed: why, not top's skip.md.
        err = from_dir(here, "get", "skip.md", expect=2)["error"]
        assert err["code"] == "NOT_FOUND" and err["details"]["why"] == "FILTERED", err


def test_get_takes_a_note_s_name_without_md_as_a_wiki_link_names_it(tmp_path):
    """`get "Project Alpha"` found nothing where `Projects/Project Alpha.md` was indexed."""
    with running_gnod() as (env, _d):
        root = write_tree(
            str(tmp_path / "vault"),
            {"Projects/Project Alpha.md": "# Alpha\n\nPlan.\n", "bin/tool": "#!/bin/sh\necho tool\n"},
        )
        cli_json("collection", "add", root, "--name", "v", "--json", env=env)
        assert get_json(env, "Project Alpha")["path"] == "Projects/Project Alpha.md"
        assert get_json(env, "tool")["path"] == "bin/tool"  # a file so named first
        assert cli_error("get", "Project Beta", env=env)["code"] == "NOT_FOUND"


def test_get_gives_the_files_lines_blank_ones_too(tmp_path):
    """The stored text keeps one blank line of a run; `get` and `multi-get` put the others
    back, so that a line's number in what they give is the file's (an agent edits by it)."""
    source = "int a;\n\n\n\nint b;\n\n\nint c;\n"
    with running_gnod() as (env, _d):
        tree = write_tree(str(tmp_path / "t"), {"gaps.c": source})
        cli_json("collection", "add", tree, "--name", "t", "--json", env=env)
        doc = get_json(env, "t/gaps.c")
        assert (doc["content"], doc["from_line"], doc["to_line"], doc["total_lines"]) == (source, 1, 8, 8)
        doc = get_json(env, "t/gaps.c:2", "-l", "4")
        assert (doc["content"], doc["from_line"], doc["to_line"]) == ("\n\n\nint b;\n", 2, 5)
        assert get_json(env, "t/gaps.c:8")["content"] == "int c;\n"
        (multi,) = cli_json("multi-get", "t/gaps.c", "--json", env=env)["documents"]
        assert multi["content"] == source


def test_get_line_from_a_search_snippet(indexed):
    hit = search(indexed.env, "spaghetti")["hits"][0]
    ref = f"{hit['collection']}/{hit['path']}:{hit['snippet']['line']}"
    doc = get_json(indexed.env, ref)
    assert doc["from_line"] == hit["snippet"]["line"]
    assert "spaghetti" in doc["content"].splitlines()[0]


def test_get_by_uri_and_absolute_path(indexed):
    by_uri = get_json(indexed.env, "gno://docs/guides/staging.md")
    by_abs = get_json(indexed.env, indexed.corpus.path("guides/staging.md"))
    by_id = get_json(indexed.env, f"#{by_uri['docid']}")
    assert by_uri["docid"] == by_abs["docid"] == by_id["docid"]
    assert by_uri["content"] == by_abs["content"]


def test_get_line_range(indexed):
    code, out = run_cli_tty("get", "docs/guides/deploy.md", "--from-line", "3", "--lines", "1", env=indexed.env)
    assert (code, out) == (0, "How to deploy the billing service to production.\n")
    code, out = run_cli_tty("get", "docs/guides/deploy.md", "--from-line=1", "-l", "2", env=indexed.env)
    assert (code, out) == (0, "# Deployment guide\n\n")
    doc = get_json(indexed.env, "docs/guides/deploy.md", "--from-line", "3", "--lines", "1")
    assert doc["content"] == "How to deploy the billing service to production.\n"
    assert (doc["from_line"], doc["to_line"]) == (3, 3)
    doc = get_json(indexed.env, "docs/guides/deploy.md", "--from-line", "5", "--lines", "50")
    assert (doc["from_line"], doc["to_line"], doc["total_lines"]) == (5, 6, 6)


@pytest.mark.parametrize(
    "ref, why",
    [
        ("docs/nope.md", "MISSING"),  # a file of a collection named: not in its folder
        ("nope/guides/deploy.md", None),
        ("gno://docs/nope.md", "MISSING"),
        ("/definitely/not/indexed.md", None),
        ("#999999", None),
    ],
)
def test_get_unknown_is_not_found(indexed, ref, why):
    err = cli_error("get", ref, env=indexed.env)
    assert err["code"] == "NOT_FOUND"
    assert err["details"]["ref"] == ref and err["details"].get("why") == why


def test_a_ref_leading_out_of_a_collection_s_folder_names_none_of_its_files(indexed):
    """`docs/../../../etc/passwd` was said to be a file in the folder of docs that its
    globs leave out (and how to take it in); a path leading out is no file of it."""
    for ref in ("docs/" + "../" * 12 + "etc/passwd", "docs/../" + os.path.basename(indexed.other) + "/x.md"):
        err = indexed.daemon.rpc("get", {"ref": ref})["error"]
        assert err["data"]["name"] == "NOT_FOUND" and "why" not in err["data"]["details"], err
        assert "in the folder of collection" not in err["message"], err


def test_similar_of_a_ref_naming_no_document_says_what_it_names(indexed):
    """`similar` explains a ref that names no document as `get` does (it said only that
    no indexed document matched): the documents of that file name, a folder."""
    err = cli_error("similar", "old/deploy.md", env=indexed.env)
    assert err["code"] == "NOT_FOUND" and err["details"]["named"] == ["docs/guides/deploy.md"], err
    assert cli_json("similar", "deploy.md", "--json", env=indexed.env)["uri"] == "gno://docs/guides/deploy.md"
    err = cli_error("similar", "docs/guides", env=indexed.env)
    assert err["code"] == "NOT_FOUND" and err["details"] == {"ref": "docs/guides", "documents": 2}


def test_similar_takes_a_hit_s_path_and_line_as_the_whole_document(indexed):
    """An agent passes on a hit as it has it, `docs/guides/deploy.md:3`: `similar` said
    the file was in the folder of docs but not indexed yet; the suffix `get` reads (a
    line, lines, a definition) names the whole document to it."""
    whole = indexed.daemon.result("similar", {"ref": "docs/guides/deploy.md"})
    for ref in ("docs/guides/deploy.md:3", "docs/guides/deploy.md:2-4", "gno://docs/guides/deploy.md:1"):
        found = indexed.daemon.result("similar", {"ref": ref})
        assert found["uri"] == "gno://docs/guides/deploy.md" and found["hits"] == whole["hits"], ref


def test_a_ref_with_a_dot_folder_names_the_file_as_a_shell_does(indexed):
    """`./guides/deploy.md` and `docs/./guides/deploy.md` were said to be files of docs
    not indexed yet."""
    for ref in ("./guides/deploy.md", "docs/./guides/deploy.md", "docs/guides/./deploy.md:2"):
        doc = indexed.daemon.result("get", {"ref": ref})
        assert doc["uri"] == "gno://docs/guides/deploy.md", ref


def test_a_file_uri_names_the_file_as_its_path_does(indexed):
    """Editors and language servers name a file by its `file://` URI: an agent's `get`
    of one was NOT_FOUND, while suggesting the path it names."""
    path = indexed.corpus.path("guides/deploy.md")
    for ref in (
        f"file://{path}",
        f"file://localhost{path}:2",
        "file://" + path.replace("/", "%2F").replace("%2F", "/", 1),
    ):
        assert indexed.daemon.result("get", {"ref": ref})["uri"] == "gno://docs/guides/deploy.md", ref
    assert indexed.daemon.result("similar", {"ref": f"file://{path}"})["uri"] == "gno://docs/guides/deploy.md"
    err = indexed.daemon.rpc("get", {"ref": f"file://elsewhere{path}"})["error"]
    assert err["data"]["name"] == "NOT_FOUND", err


def test_get_of_a_file_moved_since_names_where_its_name_is_now(daemon, tmp_path):
    """An agent's `get` of a hit it had, the note moved or deleted since: it said only that
    no indexed document matched, as for a typo."""
    root = tmp_path / "notes"
    (root / "inbox").mkdir(parents=True)
    (root / "inbox" / "plan.md").write_text("# Plan\n\nthe garden plan\n")
    cli_json("collection", "add", str(root), "--name", "notes", "--json", env=daemon.env)
    (root / "done").mkdir()
    os.rename(root / "inbox" / "plan.md", root / "done" / "plan.md")

    def listed() -> list[str]:
        return [e["path"] for e in json.loads(_run_cli("ls", "notes", "--json", env=daemon.env).stdout)["entries"]]

    assert wait_until(lambda: listed() == ["done/plan.md"], 10)
    err = cli_error("get", "notes/inbox/plan.md", env=daemon.env)
    assert err["message"] == (
        "'notes/inbox/plan.md': no such file in the folder of collection 'notes' (moved or deleted?); "
        "notes has notes/done/plan.md"
    )
    assert err["details"]["why"] == "MISSING" and err["details"]["named"] == ["notes/done/plan.md"]
    os.unlink(root / "done" / "plan.md")
    assert wait_until(lambda: listed() == [], 10)
    err = cli_error("get", "notes/done/plan.md", env=daemon.env)
    assert err["message"].endswith("(moved or deleted?)") and err["details"]["named"] == []


def test_get_of_a_folder_says_ls_lists_it(indexed):
    guides = indexed.corpus.path("guides")
    for ref, shown in (("docs/guides", "docs/guides"), ("guides/", "guides"), (guides + "/", guides)):
        err = cli_error("get", ref, env=indexed.env)
        assert err["code"] == "NOT_FOUND" and err["details"] == {"ref": ref, "documents": 2}
        assert (
            f"is a folder of 2 indexed documents, not a document: `ls` with `folders` lists it (gnoctl ls {shown} -d)"
            in err["message"]
        )
    # The collection's own folder, absolute (it said no indexed document matches it).
    err = cli_error("get", indexed.corpus.root, env=indexed.env)
    assert err["details"] == {"ref": indexed.corpus.root, "documents": 5}, err


def test_get_ignored_file_is_not_found(indexed):
    """A file in the collection's folder that the index lacks: NOT_FOUND saying why."""
    err = cli_error("get", indexed.corpus.path("secret/passwords.md"), env=indexed.env)
    assert err["code"] == "NOT_FOUND"
    assert err["details"]["why"] == "FILTERED" and "a .gitignore" in err["message"]
    err = cli_error("get", f"docs/{BINARY_FILE}", env=indexed.env)
    assert (err["details"]["why"], err["details"]["collection"], err["details"]["path"]) == (
        "FAILED",
        "docs",
        BINARY_FILE,
    )
    assert "BINARY" in err["message"]


def test_multi_get_with_a_glob(indexed):
    res = cli_json("multi-get", "-p", "docs/guides/*.md", "--json", env=indexed.env)
    assert sorted(d["path"] for d in res["documents"]) == ["guides/deploy.md", "guides/staging.md"]
    assert res["missing"] == [] and res["truncated"] is False
    r = cli("multi-get", "--pattern", "other/*", "--files", env=indexed.env)
    assert sorted(r.stdout.splitlines()) == sorted(os.path.join(indexed.other, n) for n in OTHER_DOCS)
    # A list of files reads no text, so no byte budget cuts it short.
    res = cli_json("multi-get", "-p", "docs/**", "--max-bytes", "1", "--json", env=indexed.env)
    assert len(res["documents"]) == 1 and res["truncated"] is True
    r = cli("multi-get", "-p", "docs/**", "--max-bytes", "1", "--files", env=indexed.env)
    assert len(r.stdout.splitlines()) == 5 and not r.stderr
    # A pattern whose first folder is no collection's: a path inside them (as grep gives it).
    res = cli_json("multi-get", "-p", "guides/*.md", "--json", env=indexed.env)
    assert sorted(f"{d['collection']}/{d['path']}" for d in res["documents"]) == [
        "docs/guides/deploy.md",
        "docs/guides/staging.md",
    ]


def test_multi_get_takes_several_globs_and_brace_groups_and_says_which_match_nothing(indexed):
    """A second -p replaced the first, `{a,b}` (as search's --path reads it) matched
    nothing, and a glob matching nothing printed nothing and exited 0."""
    env = indexed.env
    r = cli("multi-get", "-p", "docs/guides/deploy.md", "-p", "other/*", "--files", env=env)
    assert sorted(r.stdout.splitlines()) == sorted(
        [
            os.path.join(indexed.corpus.root, "guides", "deploy.md"),
            *(os.path.join(indexed.other, n) for n in OTHER_DOCS),
        ]
    )
    res = cli_json("multi-get", "-p", "docs/guides/{deploy,staging}.md", "-p", "docs/guides/*", "--json", env=env)
    assert [d["path"] for d in res["documents"]] == ["guides/deploy.md", "guides/staging.md"]  # each once
    r = _run_cli("multi-get", "-p", "docs/nothing/*", "-p", "other/lunch.md", "--files", env=env)
    assert r.returncode == 1 and r.stdout == os.path.join(indexed.other, "lunch.md") + "\n"
    assert r.stderr == "gnoctl: no document matches -p 'docs/nothing/*'\n"
    res = cli_json("multi-get", "-p", "docs/nothing/*", "--json", env=env, expect=1)
    assert res["documents"] == [] and res["missing"] == ["docs/nothing/*"]


def test_multi_get_says_a_glob_given_as_a_reference_goes_after_p(indexed):
    r = _run_cli("multi-get", "docs/guides/*.md", "--human", env=indexed.env)
    assert r.returncode == 1
    assert "gnoctl: not found: docs/guides/*.md (a glob: multi-get -p 'docs/guides/*.md')" in r.stderr


def test_multi_get_glob_star_stays_in_one_directory(indexed):
    # Regression: fnmatch's `*` used to cross '/', so 'docs/*.md' matched every depth.
    res = cli_json("multi-get", "--pattern", "*/*.md", "--json", env=indexed.env)
    assert {f"{d['collection']}/{d['path']}" for d in res["documents"]} == {
        "docs/README.md",
        "other/checklist.md",
        "other/lunch.md",
    }
    # `**` spans directories (zero or more).
    res = cli_json("multi-get", "--pattern", "docs/**/*.md", "--json", env=indexed.env)
    assert sorted(d["path"] for d in res["documents"]) == [
        "README.md",
        "german/anleitung.md",
        "guides/deploy.md",
        "guides/staging.md",
    ]


def test_multi_get_refs_and_missing(indexed):
    """A definition the file does not have is missing, as a file that is not there: it
    failed the whole call, and the documents found were not printed."""
    refs = ["docs/README.md", "docs/nope.md", "docs/guides/deploy.md:no_such_name"]
    r = _run_cli("multi-get", *refs, "--json", env=indexed.env)
    assert r.returncode == 1
    res = json.loads(r.stdout)
    assert [d["path"] for d in res["documents"]] == ["README.md"]
    assert res["missing"] == ["docs/nope.md", "docs/guides/deploy.md:no_such_name"]


def test_multi_get_takes_line_references_as_get_does(indexed):
    """`path:LINE`, `path:FIRST-LAST` and vimgrep's `path:LINE:COLUMN`: those lines, each
    as `get` gives them; a name that ends so with no such document is missing."""
    refs = ["docs/guides/deploy.md:3", "docs/guides/deploy.md:3-4", "guides/deploy.md:5:7", "docs/nope.md:2"]
    r = _run_cli("multi-get", *refs, "--json", env=indexed.env)
    assert r.returncode == 1
    res = json.loads(r.stdout)
    for doc, ref in zip(res["documents"], refs):
        assert doc == cli_json("get", ref, "--json", env=indexed.env), ref
    assert [(d["from_line"], d["to_line"]) for d in res["documents"]] == [(3, 6), (3, 4), (5, 6)]  # from LINE on
    assert res["missing"] == ["docs/nope.md:2"]
    err = cli_error("multi-get", "docs/guides/deploy.md:0", env=indexed.env)
    assert err["code"] == "INVALID_PARAMS" and "line 0" in err["message"]


def test_multi_get_max_bytes(indexed):
    res = cli_json("multi-get", "-p", "docs/*", "--max-bytes", "100", "--json", env=indexed.env)
    assert res["truncated"] is True
    assert sum(len(d["content"].encode()) for d in res["documents"]) <= 100


@pytest.mark.parametrize("fmt", ["--vimgrep", "--files", "--csv", "--jsonl"])
def test_line_formats_say_the_results_notes_on_stderr(indexed, fmt):
    """A format of one line per hit has no place for a note (a definition not parsed yet,
    a collection being indexed, a word taken for syntax): stderr says it, stdout stays
    lines to parse."""
    r = _run_cli("search", "deploy", "AND", "staging", fmt, env=indexed.env)
    assert r.returncode == 0 and "guides/" in r.stdout
    assert "note" not in r.stdout
    assert "gnoctl: note: AND: a word here, not an operator" in r.stderr
    r = _run_cli("search", "deploy", "staging", fmt, env=indexed.env)
    assert r.stderr == ""


@pytest.mark.parametrize("fmt", ["--vimgrep", "--files", "--csv", "--jsonl"])
def test_line_formats_say_when_the_limit_left_matches_out(indexed, fmt):
    """`search --files | xargs` listed the best -n documents and said nothing of the rest
    (10 of 5,199 files calling mutex_lock in the kernel): stderr says the list is cut."""
    r = _run_cli("search", "deploy", "-n", "1", fmt, env=indexed.env)
    assert r.returncode == 0 and len(r.stdout.splitlines()) >= 1
    most = "100,000" if fmt == "--files" else "1,000"  # a list of files reads no passages
    assert f"gnoctl: listed the best document; more match (-n N lists more, up to {most})" in r.stderr
    every = _run_cli("search", "deploy", "-n", "1000", fmt, env=indexed.env)
    assert every.returncode == 0 and every.stderr == ""
    # A cut made by --min-score is not the limit's: nothing to say.
    scores = [h["score"] for h in search(indexed.env, "deploy", "-n", "1000")["hits"]]
    assert scores[-1] < 0.9
    r = _run_cli("search", "deploy", "--min-score", "0.9", fmt, env=indexed.env)
    assert r.returncode == 0 and "listed the best" not in r.stderr


def test_human_output_says_when_the_limit_left_matches_out(indexed):
    """A person reading the hits is told as a script is (`search E1042 -n 3` on a terminal
    printed 3 hits and nothing of the others): a note after them, as the search's own."""
    r = cli("search", "deploy", "-n", "1", "--human", env=indexed.env)
    assert (
        r.stdout.rstrip().splitlines()[-1]
        == "note: listed the best document; more match (-n N lists more, up to 1,000)"
    )
    assert r.stderr == ""
    every = cli("search", "deploy", "-n", "1000", "--human", env=indexed.env)
    assert "listed the best" not in every.stdout


def test_a_list_of_files_may_hold_every_match(indexed):
    """`-n` stopped at 1,000 whatever the format: `search mutex_lock --files` could not
    list the kernel's 5,904 files. Without passages (a list of files) it goes to 100,000;
    with them, more than 1,000 is INVALID_PARAMS saying so."""
    r = cli("search", "deploy", "-n", "5000", "--files", env=indexed.env)
    assert len(r.stdout.splitlines()) == len(search(indexed.env, "deploy", "-n", "1000")["hits"])
    res = search(indexed.env, "deploy", "-n", "100000", "--no-snippets")
    assert res["hits"] and all(h["snippet"] is None for h in res["hits"])
    err = cli_error("search", "deploy", "-n", "5000", env=indexed.env)
    assert err["code"] == "INVALID_PARAMS" and "at most 1,000 results with their passages" in err["message"]
    r = _run_cli("search", "deploy", "-n", "100001", "--files", env=indexed.env)
    assert r.returncode == 2 and "100000" in r.stderr


def test_a_path_glob_may_begin_with_the_collection_as_paths_are_printed(indexed):
    """`--path 'docs/guides/*'` (a path as gnoctl prints it) found nothing: the glob is
    over the path inside a collection. A first folder that names a collection searched
    names it, as in `get` and `ls`."""
    env = indexed.env
    assert hit_paths(search(env, "deploy", "--path", "guides/*")) == ["docs/guides/deploy.md", "docs/guides/staging.md"]
    for args in (["--path", "docs/guides/*"], ["--path", "docs/guides"], ["-c", "docs", "--path", "docs/guides/*"]):
        assert hit_paths(search(env, "deploy", *args)) == ["docs/guides/deploy.md", "docs/guides/staging.md"], args
    assert hit_paths(search(env, "deploy", "--path", "other/*")) == ["other/checklist.md"]
    assert search(env, "deploy", "-c", "other", "--path", "docs/guides/*", expect=1)["hits"] == []


def test_path_repeats_for_any_of_its_globs_and_a_bang_leaves_out(indexed):
    """A second `--path` replaced the first, silently, and no glob could leave a folder
    out: now each `--path` admits what it matches, `--path '!GLOB'` leaves out what it
    does (ripgrep's `-g`), in searches and definitions alike; globs naming two
    collections are an error, as is one leaving everything out."""
    env = indexed.env
    both = ["docs/guides/deploy.md", "docs/guides/staging.md"]
    assert hit_paths(search(env, "deploy", "--path", "guides/deploy.md", "--path", "guides/staging.md")) == both
    assert hit_paths(search(env, "deploy", "--path", "guides", "--path", "!*staging*")) == both[:1]
    assert hit_paths(search(env, "deploy", "--path", "docs/guides/*", "--path", "!docs/guides/d*")) == both[1:]
    left = hit_paths(search(env, "deploy", "--path", "!guides/*"))
    assert left and not set(left) & set(both)
    err = cli_error("search", "deploy", "--path", "docs/guides", "--path", "other/*", env=env)
    assert err["code"] == "INVALID_PARAMS" and "name different collections (docs, other)" in err["message"]
    # A `!` before a collection's whole folder leaves that collection out (it left every
    # document out, and the search said none passed the filters).
    for glob in ("!docs/*", "!docs/", "!" + indexed.corpus.root):
        assert {h["collection"] for h in search(env, "deploy", "--path", glob)["hits"]} == {"other"}, glob
    err = cli_error("search", "deploy", "--path", "!docs/*", "--path", "!other/**", env=env)
    assert err["code"] == "INVALID_PARAMS" and "leaves every collection searched out" in err["message"]
    err = cli_error("search", "deploy", "-c", "docs", "--path", "!docs/*", env=env)
    assert err["code"] == "INVALID_PARAMS" and "leaves every collection searched out" in err["message"]


def test_a_path_glob_from_the_working_directory_or_absolute_names_the_folder(indexed, tmp_path):
    """`--path ./mm` matched nothing (no path inside a collection starts with `./`), nor
    did an absolute path. A path from here, `.` or `./x` as a shell gives it, is that
    folder of the collection holding it, as is an absolute one; one in no collection's
    folder is an error, not an empty result."""
    env = indexed.env
    guides = ["docs/guides/deploy.md", "docs/guides/staging.md"]

    def search_in(cwd: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "gnoctl.main", "search", "deploy", *args, "--json"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert hit_paths(json.loads(search_in(indexed.corpus.path("guides"), "--path", ".").stdout)) == guides
    assert hit_paths(json.loads(search_in(indexed.corpus.path("guides"), "--path", "./st*").stdout)) == guides[1:]
    assert hit_paths(json.loads(search_in(indexed.corpus.root, "--path", "./guides").stdout)) == guides
    assert hit_paths(search(env, "deploy", "--path", indexed.corpus.path("guides"))) == guides
    assert hit_paths(search(env, "deploy", "--path", indexed.corpus.path("guides") + "/*")) == guides
    r = search_in(str(tmp_path), "--path", ".")
    assert r.returncode == 2
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "INVALID_PARAMS" and f"{tmp_path} is in no collection's folder" in err["message"]


def test_ls(indexed):
    res = cli_json("ls", "--json", env=indexed.env)
    assert res["total"] == len(res["entries"]) == 7
    e = next(e for e in res["entries"] if e["path"] == "guides/deploy.md")
    assert e["uri"] == "gno://docs/guides/deploy.md" and e["title"] == "Deployment guide"
    assert e["size"] == os.path.getsize(indexed.corpus.path("guides/deploy.md"))
    r = cli("ls", "other", "--files", env=indexed.env)
    assert r.stdout.splitlines() == [os.path.join(indexed.other, name) for name in ("checklist.md", "lunch.md")]
    # -c names it as a search does (`ls -c NAME` was "No such option"); typer's path says
    # when two collections are named.
    for args in (("-c", "other"), ("--collection=other", "other"), ("-c", "other", "--path", "*")):
        named = cli("ls", *args, "--files", env=indexed.env)
        assert named.stdout == r.stdout, args
    bad = cli("ls", "-c", "other", "docs", env=indexed.env, expect=2)
    assert "list one collection: other or docs" in bad.stderr
    # The prefix from the collection's top, or as `ls` prints paths, the collection named
    # again (it listed nothing under docs/docs/guides/).
    for prefix in ("guides/", "docs/guides/"):
        res = cli_json("ls", "docs", "--prefix", prefix, "--json", env=indexed.env)
        assert [e["path"] for e in res["entries"]] == ["guides/deploy.md", "guides/staging.md"], prefix
    # The prefix as `ls` prints a path (collection/path), or as a glob, which it is not.
    for prefix in ("docs/guides/", "gno://docs/guides/st"):
        res = cli_json("ls", "--prefix", prefix, "--json", env=indexed.env)
        assert [(e["collection"], e["path"]) for e in res["entries"]][-1] == ("docs", "guides/staging.md"), prefix
    # Or as every hit gives it, an absolute path (an agent's listed nothing, and no note said why).
    for params in (
        {"prefix": indexed.corpus.path("guides") + "/"},
        {"collection": "docs", "prefix": indexed.corpus.path("guides/st")},
    ):
        res = indexed.daemon.result("ls", params)
        assert [(e["collection"], e["path"]) for e in res["entries"]][-1] == ("docs", "guides/staging.md"), params
    err = cli_error("ls", "--prefix", "docs/guides/*.md", env=indexed.env)
    assert err["code"] == "INVALID_PARAMS" and "(`gnoctl ls --path 'docs/guides/*.md'`" in err["message"]
    assert "ls's filters.path" in err["message"]  # an agent's words too
    listed = cli_json("ls", "--path", "docs/guides/*.md", "--json", env=indexed.env)["entries"]  # as it says
    assert [e["path"] for e in listed] == ["guides/deploy.md", "guides/staging.md"]
    err = cli_error("ls", "nope", env=indexed.env)
    assert err["code"] == "NOT_FOUND"
    # A folder of a collection, as `ls` prints paths (`ls docs/guides` listed nothing: no
    # collection has that name); a first folder that names no collection is still NOT_FOUND.
    res = cli_json("ls", "docs/guides", "--json", env=indexed.env)
    assert [(e["collection"], e["path"]) for e in res["entries"]] == [
        ("docs", "guides/deploy.md"),
        ("docs", "guides/staging.md"),
    ]
    err = cli_error("ls", "nope/guides", env=indexed.env)
    assert err["code"] == "NOT_FOUND"
    # A glob as the argument: the same word on it.
    err = cli_error("ls", "*/guides", env=indexed.env)
    assert err["code"] == "INVALID_PARAMS" and "no path begins with '*/guides'" in err["message"]
    # A folder inside the collections, as `get` takes a path (`ls mm` in the kernel tree
    # said there was no collection of that name).
    for ref in ("guides", "guides/"):
        res = cli_json("ls", ref, "--json", env=indexed.env)
        assert [(e["collection"], e["path"]) for e in res["entries"]] == [
            ("docs", "guides/deploy.md"),
            ("docs", "guides/staging.md"),
        ]


def test_ls_prefix_naming_the_collection_is_its_folder_of_that_name_where_it_has_one(tmp_path):
    """A repository holding a folder of its own name (`requests/requests/`): `ls pkg
    --prefix pkg/` is that folder; a prefix it has no folder for names the collection."""
    with running_gnod() as (env, _d):
        tree = write_tree(str(tmp_path / "pkg"), {"pkg/mod.py": "x = 1\n", "tests/test_mod.py": "y = 2\n"})
        cli_json("collection", "add", tree, "--name", "pkg", "--json", env=env)

        def listed(*argv: str) -> list[str]:
            return [e["path"] for e in cli_json("ls", *argv, "--json", env=env)["entries"]]

        assert listed("pkg", "--prefix", "pkg/") == ["pkg/mod.py"]
        assert listed("pkg", "--prefix", "pkg/tests") == ["tests/test_mod.py"]
        assert listed("--prefix", "pkg/tests") == ["tests/test_mod.py"]


def test_ls_lists_the_documents_that_pass_the_search_filters(tmp_path):
    """`ls` takes a search's filters: a writer asked for the notes tagged `meeting` from
    this month and had to search for a word every one of them held."""
    notes = write_tree(
        str(tmp_path / "notes"),
        {
            "standup.md": "---\ntags: [meeting, work]\ndate: 2026-03-10\n---\n# Standup\n\nBlockers.\n",
            "retro.md": "---\ntags: [Meeting]\ndate: 2025-06-01\n---\n# Retro\n\nWhat went well.\n",
            "scripts/tally.py": "def tally(votes):\n    return len(votes)\n",
            "ideas.md": "# Ideas\n\nA garden. #someday #Garden\n",
            "paper.md": "---\nkeywords: [wetlands, garden]\n---\n# Paper\n\nNitrate.\n",
        },
    )
    typer_ls = [sys.executable, "-c", "from gnoctl.cli import run; import sys; sys.exit(run(sys.argv[1:]))", "ls"]
    with running_gnod() as (env, _d):
        cli_json("collection", "add", notes, "--name", "notes", "--json", env=env)

        def paths(*args: str, expect: int = 0) -> list[str]:
            fast = cli_json("ls", *args, "--json", env=env, expect=expect)
            # typer parses the same options the same way (`--help`, a typo: it takes over).
            slow = subprocess.run([*typer_ls, *args, "--json"], env=env, capture_output=True, text=True, timeout=60)
            assert json.loads(slow.stdout) == fast, slow.stderr
            assert fast["total"] == len(fast["entries"])
            return [e["path"] for e in fast["entries"]]

        assert paths("--tag", "meeting") == ["retro.md", "standup.md"]  # in any case, as search's
        assert paths("notes", "--tag", "meeting", "--since", "2026-01-01") == ["standup.md"]
        assert paths("--tag", "meeting", "--tag", "work") == ["standup.md"]
        # A note's `#tags` in its text, and `keywords`, are tags too (Obsidian's, pandoc's).
        assert paths("--tag", "someday") == ["ideas.md"]
        assert paths("--tag", "garden") == ["ideas.md", "paper.md"]
        assert sorted(h["path"] for h in search(env, "garden", "--tag", "garden")["hits"]) == ["ideas.md", "paper.md"]
        assert paths("-t", "py") == ["scripts/tally.py"]
        assert paths("--path", "!*.md") == ["scripts/tally.py"]
        assert paths("notes/scripts", "--type", "md", expect=1) == []
        # A document named: listed if it passes, else nothing (exit 1, as search finding nothing).
        assert paths("notes/retro.md", "--until", "2025-12-31") == ["retro.md"]
        r = _run_cli("ls", "notes/retro.md", "--since", "2026-01-01", "--human", env=env)
        assert r.returncode == 1 and r.stdout == ""
        assert "gnoctl: no document under 'notes/retro.md' passes the filters" in r.stderr
        r = _run_cli("ls", "--tag", "holiday", "--files", env=env)
        assert r.returncode == 1 and r.stdout == "" and "no document passes the filters" in r.stderr
        # A listing by folder counts what is under each folder: it takes no filters.
        err = cli_error("ls", "notes", "-d", "--tag", "meeting", env=env)
        assert err["code"] == "INVALID_PARAMS" and "without `folders` (gnoctl ls without -d)" in err["message"]
        err = cli_error("ls", "--type", "nosuchtype", env=env)
        assert err["code"] == "INVALID_PARAMS"


def test_ls_folders_shows_one_level(indexed):
    """`ls -d` is what is in a folder, as ls(1) shows it: the folders right in it with
    the documents under each, then its own documents (a helper browsing the kernel tree
    had only a flat list of every file under drivers/, 31,482 of them)."""
    env = indexed.env
    res = cli_json("ls", "docs", "-d", "--json", env=env)
    assert [(f["collection"], f["path"], f["documents"]) for f in res["folders"]] == [
        ("docs", "german/", 1),
        ("docs", "guides/", 2),
        ("docs", "notes/", 1),
    ]
    assert [e["path"] for e in res["entries"]] == ["README.md"] and res["total"] == 1
    assert cli_json("ls", "docs", "--prefix", "/", "-d", "--json", env=env)["folders"] == res["folders"]
    for ref in ("docs/guides", "docs/guides/"):
        res = cli_json("ls", ref, "--folders", "--json", env=env)
        assert res["folders"] == [] and [e["path"] for e in res["entries"]] == ["guides/deploy.md", "guides/staging.md"]
    # Every collection's top: its folders, then the documents in it; titles in one column.
    r = cli("ls", "-d", "--human", env=env)
    rows = [line.split() for line in r.stdout.splitlines()]
    assert [row[0] for row in rows] == [
        "docs/german/",
        "docs/guides/",
        "docs/notes/",
        "docs/README.md",
        "other/checklist.md",
        "other/lunch.md",
    ]
    assert rows[0][1:] == ["1", "document"] and rows[1][1:] == ["2", "documents"]
    assert len({line.index(line.split()[1]) for line in r.stdout.splitlines()}) == 1 and r.stderr == ""
    r = cli("ls", "-d", "-n", "1", "--human", env=env)
    assert r.stdout.splitlines()[-1].startswith("docs/README.md") and "listed 1 of 3 documents" in r.stderr
    # Nothing there is said, not an empty list alone, and is no match (exit 1), as a
    # collection that does not exist is an error: a script tells a typo from a listing.
    for argv in (["docs/nowhere"], ["docs/nowhere", "-d"], ["--prefix", "docs/nowhere/"], ["docs/guide"]):
        r = _run_cli("ls", *argv, "--human", env=env)
        assert r.returncode == 1 and r.stdout == "" and "nothing indexed under 'docs/" in r.stderr, argv
    # A folder of no collection, by its path inside one (a folder renamed since): not "no collection named".
    err = cli_error("ls", "guides/lesen", env=env)
    assert err["code"] == "NOT_FOUND" and err["message"].startswith(
        "no folder or document 'guides/lesen' in the collections (moved or deleted?) (collections: "
    )
    # A path that `ls` printed names a folder, or a document (as ls(1) lists a file).
    assert cli_json("ls", "docs/guides/deploy.md", "-d", "--json", env=env)["entries"][0]["path"] == "guides/deploy.md"
    assert [e["path"] for e in cli_json("ls", "docs/README.md", "--json", env=env)["entries"]] == ["README.md"]
    # A prefix is still any path starting so.
    assert cli_json("ls", "docs", "--prefix", "guides/st", "--json", env=env)["total"] == 1


# --- mutations (each with its own daemon) -------------------------------------------------


def add_docs(env, corpus) -> dict:
    return cli_json("collection", "add", corpus.root, "--name", "docs", "--json", env=env)["collections"][0]


def update(env, *args: str) -> dict:
    res = cli_json("update", *args, "--json", env=env)
    return {s["collection"]: s for s in res["collections"]}


def test_similar_reads_a_long_document_s_beginning_for_its_words(daemon, tmp_path):
    """A 24 MB register header took 2-3 s to find its similar documents by words (the
    web page of a document waits for them): as Lucene's MoreLikeThis parses at most
    5,000 tokens, the words are read from the first SIMILAR_TEXT_CHARS."""
    from gnod.search.constants import SIMILAR_TEXT_CHARS

    head = "Flamingos wade in the salty lagoon at dawn.\n" * 20
    tail = "Zeppelins moor at the hangar mast.\n" * 20
    filler = "".join(f"filler{i} " for i in range(SIMILAR_TEXT_CHARS // 8)) + "\n"
    write_tree(
        str(tmp_path / "long"),
        {
            "long.md": f"# Long\n\n{head}{filler}{tail}",
            "birds.md": f"# Birds\n\n{head}",
            "airships.md": f"# Airships\n\n{tail}",
            "lonely.md": "# Lonely\n\nQuokkas grin on Rottnest.\n",
        },
    )
    cli_json("collection", "add", str(tmp_path / "long"), "--name", "long", "--json", env=daemon.env)
    res = cli_json("similar", "long/long.md", "--json", env=daemon.env)
    assert res["method"] == "terms" and {"flamingos", "lagoon"} <= set(res["terms"])
    assert not {"zeppelins", "hangar"} & set(res["terms"]) and [h["path"] for h in res["hits"]] == ["birds.md"]
    # Nothing like it: exit 1, as a search that matched nothing.
    r = _run_cli("similar", "long/lonely.md", env=daemon.env)
    assert r.returncode == 1 and json.loads(r.stdout)["hits"] == [], r.stdout + r.stderr


def test_update_after_modify_add_delete(daemon, corpus):
    env = daemon.env
    add_docs(env, corpus)
    with open(corpus.path("guides/deploy.md"), "a") as f:
        f.write("\nAlways page the on-call narwhal before a deploy.\n")
    corpus.write("guides/rollback.md", "# Rollback\n\nUse the platypus switch to roll back.\n")
    os.unlink(corpus.path("notes/pasta.txt"))

    s = update(env)["docs"]
    # The watcher may have indexed some of these changes already; update finishes the rest.
    assert s["added"] <= 1 and s["updated"] <= 1 and s["removed"] <= 1
    assert s["errors"] == 1  # the binary file is still not a document
    assert s["scanned"] == 6

    assert hit_paths(search(env, "narwhal")) == ["docs/guides/deploy.md"]
    assert hit_paths(search(env, "platypus")) == ["docs/guides/rollback.md"]
    assert search(env, "spaghetti", expect=1)["hits"] == []
    err = cli_error("get", "docs/notes/pasta.txt", env=env)
    assert err["code"] == "NOT_FOUND"

    s = update(env, "docs")["docs"]
    assert (s["added"], s["updated"], s["removed"], s["unchanged"]) == (0, 0, 0, 5)
    err = cli_error("update", "nope", env=env)
    assert err["code"] == "NOT_FOUND"


def test_touch_without_change_is_unchanged(daemon, corpus):
    env = daemon.env
    add_docs(env, corpus)
    later = time.time() + 60
    for rel in INDEXABLE:
        os.utime(corpus.path(rel), (later, later))
    s = update(env)["docs"]
    assert (s["added"], s["updated"], s["removed"], s["unchanged"]) == (0, 0, 0, 5)
    # The new stat was recorded: the next run is as cheap as ever, still unchanged.
    s = update(env)["docs"]
    assert (s["updated"], s["unchanged"]) == (0, 5)
    assert hit_paths(search(env, "spaghetti")) == ["docs/notes/pasta.txt"]


def test_collection_remove(daemon, corpus):
    env = daemon.env
    add_docs(env, corpus)
    assert search(env, "deploy")["hits"]
    res = cli_json("collection", "remove", "docs", "--json", env=env)
    assert res == {"name": "docs", "documents_removed": 5}
    assert search(env, "deploy", expect=1)["hits"] == []
    assert cli_error("ls", "docs", env=env)["code"] == "NOT_FOUND"
    # Post-conditions straight from the daemon (these commands have their own CLI tests).
    assert daemon.result("ls")["entries"] == []
    st = daemon.result("status")
    assert st["documents"] == 0 and st["collections"] == []
    assert [e for e in st["recent_errors"] if e["collection"] == "docs"] == []
    assert cli_error("collection", "remove", "docs", env=env)["code"] == "NOT_FOUND"


def test_collection_description_is_kept_shown_and_changed_without_reindexing(daemon, corpus):
    env = daemon.env
    cli_json("collection", "add", corpus.root, "--name", "docs", "--description", "Deploy guides", "--json", env=env)
    before = cli_json("collection", "list", "--json", env=env)["collections"][0]
    assert before["description"] == "Deploy guides"
    info = cli_json("collection", "describe", "docs", "Runbooks  and\n  guides for the team", "--json", env=env)
    assert info["description"] == "Runbooks and guides for the team"  # one line, as clients show it
    assert info["last_indexed_at"] == before["last_indexed_at"] and info["documents"] == before["documents"]
    with open(os.path.join(env["GNO_HOME"], "config", "config.toml")) as f:
        assert 'description = "Runbooks and guides for the team"' in f.read()  # kept across restarts
    code, out = run_cli_tty("collection", "list", env=env)
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("docs "))
    # Under the collection's folder (it was under its count of documents).
    column = lines[at].index(corpus.root)
    assert code == 0 and lines[at + 1] == " " * column + "Runbooks and guides for the team", out
    code, out = run_cli_tty("status", env=env)
    assert code == 0 and re.search(r"docs .*\n +Runbooks and guides for the team", out), out
    assert (
        cli("collection", "describe", "docs", "--human", env=env).stdout == "docs: Runbooks and guides for the team\n"
    )
    # The watch goes on: a file saved after the change is indexed.
    with open(corpus.path("guides/rollback.md"), "w") as f:
        f.write("# Rollback\n\nUndo a bad release with the previous image.\n")
    assert search(env, "rollback", "--wait", "10")["hits"]
    # "" removes it; bad input is a usage error that changes nothing.
    assert cli_json("collection", "describe", "docs", "", "--json", env=env)["description"] is None
    with open(os.path.join(env["GNO_HOME"], "config", "config.toml")) as f:
        assert "description =" not in f.read()
    assert "no description" in cli("collection", "describe", "docs", "--human", env=env).stdout
    assert cli_error("collection", "describe", "nope", "x", env=env)["code"] == "NOT_FOUND"
    assert cli_error("collection", "describe", "nope", env=env)["code"] == "NOT_FOUND"
    assert cli_error("collection", "describe", "docs", "x" * 501, env=env)["code"] == "INVALID_PARAMS"


def test_collection_set_changes_which_files_are_indexed(tmp_path):
    """Changing a collection's globs meant editing config.toml by hand: `collection set`
    replaces the settings given, keeps the others, and indexes what they take in or
    leave out; the watch follows the new settings."""
    tree = write_tree(
        str(tmp_path / "notes"),
        {"plan.md": "# Plan\n\nheron plan\n", "drafts/d1.md": "heron draft\n", "run.log": "heron log\n"},
    )
    with running_gnod() as (env, _d):
        cli_json("collection", "add", tree, "--name", "n", "--language", "en", "--json", env=env)
        res = cli_json("collection", "set", "n", "--exclude", "drafts/", "--also", "*.log", "--json", env=env)
        (stats,) = res["collections"]
        assert (stats["added"], stats["removed"]) == (1, 1)
        assert sorted(h["path"] for h in search(env, "heron")["hits"]) == ["plan.md", "run.log"]
        with open(os.path.join(env["GNO_HOME"], "config", "config.toml")) as f:
            saved = f.read()
        assert 'exclude = ["drafts/"]' in saved and 'also = ["*.log"]' in saved and 'language = "english"' in saved
        write_tree(tree, {"drafts/d2.md": "heron second draft\n", "b.log": "heron again\n"})
        assert [h["path"] for h in search(env, "again", "--wait", "10")["hits"]] == ["b.log"]
        assert search(env, "second", expect=1)["hits"] == []  # the watch leaves the new draft out
        # '' empties a list; what is not given stays; a terminal hears the settings now.
        out = cli("collection", "set", "n", "--exclude", "", "--language", "auto", "--human", env=env).stdout
        assert out.splitlines()[-1] == "  now: also *.log; language auto; gitignore on"
        assert len(search(env, "heron")["hits"]) == 5
        # A new language: the files already indexed are read in it (they kept their English stems).
        write_tree(tree, {"pruefung.md": "# Prüfungen\n\nDie Prüfungen der Vorlesungen sind im Februar.\n"})
        assert search(env, "Februar", "--wait", "10")["hits"]
        res = cli_json("collection", "set", "n", "--language", "de", "--json", env=env)
        assert res["collections"][0]["updated"] == 6, res
        assert {h["language"] for h in search(env, "heron")["hits"]} == {"german"}
        # Bad input changes nothing.
        assert cli_error("collection", "set", "nope", "--exclude", "x", env=env)["code"] == "NOT_FOUND"
        assert cli_error("collection", "set", "n", "--language", "klingon", env=env)["code"] == "INVALID_PARAMS"
        (info,) = cli_json("collection", "list", "--json", env=env)["collections"]
        assert (info["exclude"], info["also"], info["language"]) == ([], ["*.log"], "german")


OSC8 = re.compile(r"\x1b]8;;([^\x1b]*)\x1b\\(.*?)\x1b]8;;\x1b\\")
TERMINAL_MARKERS = (
    "TERM_PROGRAM",
    "KITTY_WINDOW_ID",
    "WT_SESSION",
    "KONSOLE_VERSION",
    "VTE_VERSION",
    "TMUX",
    "STY",
    "FORCE_HYPERLINK",
    "DOMTERM",
    "WEZTERM_PANE",
)


def test_hit_paths_are_terminal_hyperlinks_where_the_terminal_shows_them(daemon, corpus):
    plain = {k: v for k, v in daemon.env.items() if k not in TERMINAL_MARKERS} | {"TERM": "xterm-256color"}
    add_docs(plain, corpus)
    deploy = os.path.realpath(corpus.path("guides/deploy.md"))
    host = os.uname().nodename
    # A terminal known to show links: each hit's location opens the file at its line.
    code, out = run_cli_tty("search", "deploy", env={**plain, "TERM_PROGRAM": "WezTerm"})
    links = dict((text, target) for target, text in OSC8.findall(out))
    location = next(t for t in links if "guides/deploy.md:" in t)
    line = int(re.sub(r"\x1b\[[0-9;]*m", "", location).rsplit(":", 1)[1])
    assert code == 0 and links[location] == f"file://{host}{deploy}#{line}"
    code, out = run_cli_tty("query", "deploy", "--no-expand", env={**plain, "KITTY_WINDOW_ID": "1"})
    assert code == 0 and f"file://{host}{deploy}#" in "".join(t for t, _ in OSC8.findall(out))
    # An unknown terminal, tmux, a pipe, JSON: no escape a reader could see as text.
    for env in (plain, {**plain, "TERM_PROGRAM": "WezTerm", "TMUX": "/tmp/tmux-0/default,1,0"}):
        code, out = run_cli_tty("search", "deploy", env=env)
        assert code == 0 and "deploy.md" in out and "\x1b]8" not in out
    piped = _run_cli("search", "deploy", "--human", "--color", "always", env={**plain, "FORCE_HYPERLINK": "1"})
    assert piped.returncode == 0 and "\x1b]8" not in piped.stdout
    # FORCE_HYPERLINK=1 says yes on any terminal; the config names the editor.
    cfg = os.path.join(plain["GNO_HOME"], "config", "config.toml")
    with open(cfg, "a") as f:
        f.write('\n[client]\neditor_url = "vscode"\n')
    code, out = run_cli_tty("search", "deploy", env={**plain, "FORCE_HYPERLINK": "1"})
    assert code == 0 and f"vscode://file{deploy}:" in "".join(t for t, _ in OSC8.findall(out))
    with open(cfg, "a") as f:
        f.write('hyperlinks = "never"\n')
    assert "\x1b]8" not in run_cli_tty("search", "deploy", env={**plain, "FORCE_HYPERLINK": "1"})[1]
    # A template gnod cannot use is a config error it reports; gnoctl keeps the default links.
    with open(cfg) as f:
        text = f.read().replace('editor_url = "vscode"', 'editor_url = "myeditor://{file}"')
    with open(cfg, "w") as f:
        f.write(text.replace('hyperlinks = "never"\n', ""))
    err = cli_error("update", env=plain)
    assert err["code"] == "CONFIG_ERROR" and "client.editor_url" in err["message"], err
    code, out = run_cli_tty("search", "deploy", env={**plain, "FORCE_HYPERLINK": "1"})
    assert f"file://{host}{deploy}#" in "".join(t for t, _ in OSC8.findall(out))


def test_duplicate_collection_name_is_rejected(daemon, corpus):
    env = daemon.env
    add_docs(env, corpus)
    err = cli_error("collection", "add", corpus.root, "--name", "docs", env=env)
    assert err["code"] == "INVALID_PARAMS" and "already exists" in err["message"]
    assert "`gnoctl update docs` indexes what changed in it" in err["message"]  # the same folder again
    other = os.path.join(corpus.root, "guides")
    err = cli_error("collection", "add", other, "--name", "docs", "--allow-overlap", env=env)
    assert "pick another name (--name)" in err["message"] and "gnoctl update" not in err["message"]


def test_config_file_typo(daemon, corpus):
    env = daemon.env
    cfg = os.path.join(env["GNO_HOME"], "config", "config.toml")
    os.makedirs(os.path.dirname(cfg), exist_ok=True)
    with open(cfg, "w") as f:
        f.write('[[collections]]\nname="x"\npaht="/tmp"\n')
    r = _run_cli("update", env=env)
    assert r.returncode == 2, r
    assert "paht" in r.stdout + r.stderr
    err = cli_error("update", env=env)
    assert err["code"] == "CONFIG_ERROR" and "paht" in err["message"]
    assert daemon.alive()
    assert daemon.result("status")["pid"] == daemon.proc.pid
    # Fixing the file is picked up by the next call.
    with open(cfg, "w") as f:
        f.write(f'[[collections]]\nname = "x"\npath = "{corpus.root}"\n')
    assert (
        update(env)["x"]["scanned"] == 6
    )  # 5 documents + the binary file (the config watcher may have indexed them first)
    assert search(env, "deploy")["hits"]


def test_status_answers_while_a_big_update_runs(daemon, tmp_path):
    n = 3000
    env = daemon.env
    folder = tmp_path / "big"
    folder.mkdir()
    for i in range(n):
        (folder / f"n{i:05d}.md").write_text(f"# Note {i}\n\nThe heron number {i} waits by the quiet river.\n")
    cli_json("collection", "add", str(folder), "--name", "big", "--no-index", "--json", env=env)

    proc = subprocess.Popen(
        [sys.executable, "-m", "gnoctl.main", "update", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        saw_running = cli_saw_running = search_saw_indexing = False
        cli_polls = 0
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            # A raw `status` every few ms: catches the job even if it is quick.
            job = daemon.result("status", timeout=2)["job"]
            if job["running"]:
                saw_running = True
                assert job["collection"] == "big"
                assert 0 <= job["done"] <= job["total"] <= n
            if not saw_running:
                time.sleep(0.02)
                continue
            # Once the job runs: the real CLI must answer `status` (and `search`) quickly.
            t0 = time.monotonic()
            r = _run_cli("status", "--json", env=env, timeout=10)
            took = time.monotonic() - t0
            assert r.returncode == 0, r.stderr
            assert took < 2.0, f"status took {took:.2f}s during an update"
            cli_polls += 1
            cli_saw_running = cli_saw_running or json.loads(r.stdout)["job"]["running"]
            t0 = time.monotonic()
            r = _run_cli("search", "heron", "-n", "3", "--json", env=env, timeout=10)
            assert r.returncode in (0, 1) and time.monotonic() - t0 < 2.0
            # While the run goes, a search says it sees part of the collection.
            res = json.loads(r.stdout)
            if next(f for f in res["freshness"] if f["collection"] == "big")["indexing"]:
                search_saw_indexing = True
                assert any(n.startswith("'big' is being indexed") for n in res["notes"]), res["notes"]
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert saw_running, "status never saw the update running"
    assert cli_polls >= 1, "the update ended before gnoctl status could be asked"
    assert search_saw_indexing, "no search said the collection was being indexed"
    res = json.loads(out)
    big = next(s for s in res["collections"] if s["collection"] == "big")
    assert big["scanned"] == n  # added by this update or by the background pass --no-index started
    st = daemon.result("status")
    assert st["job"]["running"] is False
    assert st["documents"] == n
    res = search(env, "heron", "-c", "big")
    assert res["notes"] == [] and not res["freshness"][0]["indexing"]


def test_a_search_during_collection_add_says_the_collection_is_being_indexed(daemon, tmp_path):
    """`collection add` indexes in the call: a search meanwhile finds part of the files and
    must say so (its freshness said `indexing: false`, with no note, as if complete)."""
    n = 2000
    env = daemon.env
    folder = tmp_path / "big"
    folder.mkdir()
    for i in range(n):
        (folder / f"n{i:05d}.md").write_text(f"# Note {i}\n\nThe heron number {i} waits by the quiet river.\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gnoctl.main", "collection", "add", str(folder), "--name", "big", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        seen = None
        while proc.poll() is None and seen is None:
            res = daemon.result("search", {"query": "heron", "limit": 3}, timeout=10)
            if res["freshness"] and res["freshness"][0]["indexing"]:
                seen = res
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert seen is not None, "no search saw the collection being indexed"
    assert any(n.startswith("'big' is being indexed") and "results may be incomplete" in n for n in seen["notes"])
    res = daemon.result("search", {"query": "heron", "limit": 3, "wait_s": 1})
    assert not res["freshness"][0]["indexing"] and res["notes"] == []


def test_status_says_the_files_are_being_listed_before_their_count_is_known():
    """While an index run walks the folder the job's total is 0: no "indexing 0/0"."""
    from gnoctl.output.status import _collection_state

    c = {"name": "tree", "last_indexed_at": None}
    job = {"running": True, "collection": "tree", "done": 0, "total": 0, "started_at": time.time()}
    assert _collection_state(c, job, None) == "indexing: listing the files"
    walked = _collection_state(c, {**job, "done": 10, "total": 65_285, "started_at": time.time() - 1}, None)
    assert walked == "indexing 10/65,285"  # no pace before gnod has one
    paced = {**job, "done": 60_010, "total": 65_285, "rate": 612.4, "eta_s": 65.3}
    assert _collection_state(c, paced, None) == "indexing 60,010/65,285 (612 files/s, ETA 1m05s)"


def test_status_says_how_many_changed_paths_the_watcher_is_indexing():
    """300 documents copied in showed `0 pending, indexing` for 40 s: the watcher's batch
    had taken them all, and no job counted them."""
    from gnoctl.output.status import _collection_state

    c = {"name": "docs", "last_indexed_at": None}
    idle = {"running": False}
    f = {"collection": "docs", "watching": True, "pending": 0, "indexing": True, "changes": 300}
    assert _collection_state(c, idle, f) == "indexing 300 changed paths"
    assert _collection_state(c, idle, {**f, "pending": 12}) == "indexing 300 changed paths, 12 more pending"
    assert _collection_state(c, idle, {**f, "changes": 0}) == "0 pending, indexing"  # a rescan's job not begun


def test_the_watcher_says_how_many_changed_paths_it_indexes(daemon, tmp_path):
    """freshness.changes: the batch it took, while it indexes it; 0 once done."""
    notes = tmp_path / "notes"
    notes.mkdir()
    daemon.result("collection.add", {"name": "n", "path": str(notes)})
    daemon.result("status")  # its first call is slow (~80 ms): the batch could be indexed meanwhile
    for i in range(500):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nA line about herons {i}.\n")
    seen = []

    def indexed() -> bool:
        st = daemon.result("status")
        seen.append(st["freshness"][0]["changes"])
        return st["documents"] == 500 and not st["freshness"][0]["indexing"]

    assert wait_until(indexed, 30, 0.002)
    assert max(seen) > 0 and seen[-1] == 0, seen


def test_status_while_the_lexical_index_is_built_after_an_upgrade():
    """Searches answer from what the lexical index holds while it is built (it said they
    wait), and the rescan queued behind the build waits for it (it said "indexing" for
    the build's whole minute, before any file was read)."""
    from gnoctl.output.status import status_lines

    st = {
        "version": "1", "pid": 1, "uptime_s": 5, "protocol": 1, "db_path": "/i.sqlite", "db_bytes": 1 << 20,
        "documents": 65_312, "config_path": "/c.toml", "languages": ["english"], "recent_errors": [],
        "lexical": {"ready": False, "done": 8_000, "total": 65_312, "documents": 0, "bytes": 0},
        "job": {"running": False},
        "collections": [{"name": "kernel", "documents": 65_312, "errors": 0, "path": "/k", "last_indexed_at": 0}],
        "freshness": [{"collection": "kernel", "watching": True, "pending": 0, "indexing": True}],
    }  # fmt: skip
    lines = status_lines(st)
    assert (
        "lexical index: being built from the stored documents, 8,000 of 65,312 (searches answer from what it holds so far)"
        in lines
    )
    assert "  kernel   65,312 docs  rescan waits for the lexical index to be built  /k" in lines
    built = status_lines({**st, "lexical": {**st["lexical"], "ready": True, "documents": 65_312}})
    assert "  kernel   65,312 docs  0 pending, indexing  /k" in built


def test_progress_line_shows_the_pace_and_a_path_cut_at_a_folder(monkeypatch, capsys):
    """`collection add` on a terminal: the pace gnod measures, and the path being read cut
    at a folder (it was cut inside a name: `ftests/powerpc/pmu/sampling_tests/…`)."""
    from gnoctl.output.common import ProgressLine, path_tail

    deep = "tools/testing/selftests/powerpc/pmu/sampling_tests/mmcr0_exceptionbits_test.c"
    assert path_tail(deep, 50) == "…/pmu/sampling_tests/mmcr0_exceptionbits_test.c"
    assert path_tail("mm/memory.c", 50) == "mm/memory.c"
    assert path_tail("a/" + "x" * 60, 20) == "…" + "x" * 19
    line = ProgressLine(True)
    params = {"collection": "tree", "phase": "index", "done": 500, "total": 1000, "path": deep}
    line("progress", {**params, "rate": 250.0, "eta_s": 2.4})
    assert capsys.readouterr().err.endswith(
        "tree: index  50% 500/1000 (250 files/s, ETA 2s) …/pmu/sampling_tests/mmcr0_exceptionbits_test.c"
    )


def test_status_vectors_line_shows_a_slow_rate_and_the_eta():
    """A large model embeds < 1 chunk/s on a small CPU: status keeps the digits that show it,
    and the time left is the backlog over that running rate (gnod: embedded / elapsed)."""
    from gnoctl.output.status import _vectors_line

    vec = {
        "available": True,
        "embedded": 100,
        "chunks": 10_100,
        "model": "hf:a/b/e5.gguf",
        "serving": None,
        "pending": 10_000,
        "embedding": True,
        "rate_per_s": 0.52,
    }
    assert _vectors_line(vec).endswith("10000 pending (embedding, 0.52 chunks/s, ETA 5h20m)")
    assert _vectors_line({**vec, "rate_per_s": 25.0}).endswith("(embedding, 25 chunks/s, ETA 6m40s)")
    assert _vectors_line({**vec, "rate_per_s": None}).endswith("10000 pending (embedding)")


def test_status_reports_the_readers_load(daemon, tmp_path):
    env = daemon.env
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "heron.md").write_text("# Heron\n\nThe heron waits by the river.\n")
    cli_json("collection", "add", str(folder), "--name", "notes", "--json", env=env)
    cli_json("search", "heron", "--json", env=env)
    load = cli_json("status", "--json", env=env)["load"]
    assert load["running"] >= 0 and load["queued"] >= 0
    assert load["calls"] >= 1 and 0 <= load["p50_ms"] <= load["p99_ms"]
    assert re.search(
        r"^readers: \d+ running, \d+ waiting; last minute: \d+ calls, p50 \d+ ms, p99 \d+ ms"
        r"(; search process: \d+ searches \(pid \d+\))?$",
        cli("status", "--human", env=env).stdout,
        re.M,
    )


def test_type_narrows_a_search_to_kinds_of_files_as_ripgreps_t(tmp_path):
    """`-t c` as `rg -t c`: there was only `--path '*.{c,h}'`. A type is its files' globs,
    any of several types, and a document must pass `--path` too; an unknown type names
    the known ones."""
    files = {
        "src/kettle.c": "int kettle_boil(void) { return 1; }\n",
        "src/kettle.h": "int kettle_boil(void);\n",
        "tools/kettle.py": "def kettle_boil():\n    return 1\n",
        "docs/kettle.md": "# Kettle\n\nHow the kettle boils.\n",
        "drivers/Kconfig": "config KETTLE\n\tbool 'A kettle'\n",
        "lib/kettle.c": "int kettle_pour(void) { return 2; }\n",
        "lib/kettle.C": "int kettle_fill() { return 3; }\n",  # C++, as its case says
        "scans/KETTLE.CSV": "item,price\nkettle,30\n",  # a Windows export: a csv all the same
        "scans/kettle.csv": "item,price\nkettle lid,5\n",
        # An extension no type holds (the kernel's litmus tests: `-t .litmus` was refused).
        "tests/kettle.litmus": "C kettle\n{ kettle=1; }\n",
        "tests/KETTLE2.LITMUS": "C kettle2\n{ kettle=2; }\n",
    }
    with running_gnod() as (env, _):
        cli_json("collection", "add", write_tree(str(tmp_path), files), "--name", "k", "--json", env=env)

        def found(*args: str) -> set[str]:
            return set(hit_paths(search(env, "kettle", "-n", "20", *args)))

        assert found("-t", "c") == {"k/src/kettle.c", "k/src/kettle.h", "k/lib/kettle.c"}
        assert found("--type", "py", "-t", "kconfig") == {"k/tools/kettle.py", "k/drivers/Kconfig"}
        assert found("-t", "c", "--path", "src/*") == {"k/src/kettle.c", "k/src/kettle.h"}  # both
        assert found("-t", "md") == {"k/docs/kettle.md"}
        assert found("-t", "csv") == {"k/scans/KETTLE.CSV", "k/scans/kettle.csv"}
        # An extension names its type, with its dot or not, in any case (`-t .PDF`, `-t yml`).
        assert found("-t", ".CSV") == found("-t", "Csv") == {"k/scans/KETTLE.CSV", "k/scans/kettle.csv"}
        assert found("-t", ".py", "-t", "PY") == {"k/tools/kettle.py"}
        assert found("-t", "h") == {"k/src/kettle.h"}
        r = cli("query", "kettle", "-t", "py", "--no-expand", "--no-rerank", "--json", env=env)
        assert [h["path"] for h in json.loads(r.stdout)["hits"]] == ["tools/kettle.py"]
        assert found("-t", ".litmus") == found("-t", ".LITMUS") == {"k/tests/kettle.litmus", "k/tests/KETTLE2.LITMUS"}
        err = cli_error("search", "kettle", "-t", "cobol", env=env)
        assert err["code"] == "INVALID_PARAMS" and "no file type named 'cobol' (types: c, cpp" in err["message"]
        assert err["message"].endswith("; files of an extension no type holds, with its dot: '.cobol')")
        err = cli_error("search", "kettle", "-t", "pyy", env=env)
        assert "no file type named 'pyy' (did you mean 'py'? types: c, cpp" in err["message"]


def test_status_says_how_many_files_failed_and_errors_lists_them_all(daemon, tmp_path):
    """`status` named the last 5 files not indexed and said nothing of the others, which
    no command listed (`status --json` stopped at 20)."""
    files = {f"bin{i}.txt": "text\x00\x01\x02 binary " * 50 for i in range(7)}
    root = write_tree(str(tmp_path / "blobs"), {**files, "ok.md": "# Ok\n\nfine\n"})
    cli_json("collection", "add", root, "--name", "blobs", "--json", env=daemon.env)
    lines = cli("status", "--human", env=daemon.env).stdout.splitlines()
    assert sum(line.startswith("  ! blobs/bin") for line in lines) == 5
    assert "  … 2 more files not indexed: `gnoctl status --errors` lists them" in lines
    listed = cli("status", "--errors", "--human", env=daemon.env).stdout.splitlines()
    assert sorted(line.split(":")[0] for line in listed) == [f"  ! blobs/bin{i}.txt" for i in range(7)]
    st = cli_json("status", "--errors", "--json", env=daemon.env)
    assert st["errors_total"] == 7 and len(st["recent_errors"]) == 7
    assert cli_json("status", "--json", env=daemon.env)["errors_total"] == 7
    r = _run_cli("status", "--errors", "--watch", env=daemon.env)
    assert r.returncode == 2 and "does not go with --watch" in r.stderr


def test_ls_takes_a_folder_from_the_working_directory(indexed, tmp_path):
    """`gnoctl ls .` in a collection's folder said "no collection named '.'", though
    `get` and `--path` read a path from there."""

    def ls_in(cwd: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "gnoctl.main", "ls", *args, "--json"],
            cwd=cwd,
            env=indexed.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def listed(r: subprocess.CompletedProcess) -> list[str]:
        assert r.returncode == 0, r.stderr + r.stdout
        return sorted(f"{e['collection']}/{e['path']}" for e in json.loads(r.stdout)["entries"])

    guides = ["docs/guides/deploy.md", "docs/guides/staging.md"]
    assert listed(ls_in(indexed.corpus.path("guides"), ".")) == guides
    assert listed(ls_in(indexed.corpus.root, "./guides")) == guides
    assert listed(ls_in(indexed.corpus.path("guides"), "..")) == listed(ls_in(str(tmp_path), "docs"))
    assert listed(ls_in(str(tmp_path), indexed.corpus.path("guides/deploy.md"))) == guides[:1]
    outside = ls_in(str(tmp_path), ".")
    assert outside.returncode == 2 and json.loads(outside.stdout)["error"]["code"] == "NOT_FOUND"


def test_get_takes_a_name_in_either_unicode_form(daemon, tmp_path):
    """A name typed or pasted decomposed (i + ¨, as macOS writes names) named nothing when
    the file's was composed, and the other way round."""
    import unicodedata

    root = tmp_path / "notes"
    root.mkdir()
    composed, decomposed = "naïve café.md", unicodedata.normalize("NFD", "crème brûlée.md")
    (root / composed).write_text("# Naive\n\nan idea\n")
    (root / decomposed).write_text("# Dessert\n\na recipe\n")
    cli_json("collection", "add", str(root), "--name", "notes", "--json", env=daemon.env)
    for name in (composed, decomposed):
        for form in ("NFC", "NFD"):
            asked = "notes/" + unicodedata.normalize(form, name)
            assert get_json(daemon.env, asked)["path"] == name, (name, form)


@contextmanager
def _folder_added(tmp_path, name: str, files: dict[str, str | bytes]):
    """A gnod of its own with the folder `name` (`files` written in it) added as a
    collection of that name: (env, folder)."""
    folder = tmp_path / name
    folder.mkdir()
    for rel, data in files.items():
        (folder / rel).write_bytes(data if isinstance(data, bytes) else data.encode())
    with running_gnod() as (env, _d):
        cli_json("collection", "add", str(folder), "--name", name, "--json", env=env)
        yield env, folder


def test_a_file_whose_day_changed_with_its_bytes_the_same_is_found_by_its_new_day(tmp_path):
    """A runbook restored with `rsync -t` (or `touch -d`) keeps its bytes: its new mtime
    was stored, and `ls --until` listed it, but `search` still dated it by the day it was
    indexed, so `--until` left it out and `--since` kept it."""
    runbooks = {"ssh.md": "# SSH hardening\n\nPermitRootLogin no\n", "other.md": "# O\n\nPermitRootLogin yes\n"}
    with _folder_added(tmp_path, "ops", runbooks) as (env, folder):
        old = datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp()
        os.utime(folder / "ssh.md", (old, old))
        assert cli_json("update", "ops", "--json", env=env)["collections"][0]["unchanged"] == 2
        before = search(env, "PermitRootLogin", "--until", "2024-06-01")["hits"]
        assert [h["path"] for h in before] == ["ssh.md"]
        assert [h["path"] for h in search(env, "PermitRootLogin", "--since", "2025-01-01")["hits"]] == ["other.md"]
        listed = cli_json("ls", "ops", "--until", "2024-06-01", "--json", env=env)
        assert [d["path"] for d in listed["entries"]] == ["ssh.md"]


def test_a_hit_is_shown_where_the_query_is_as_typed(tmp_path):
    """`certbot renew` pointed at "Certbot renews it" (both words, by their stems) above
    the command `certbot renew --cert-name …`; the line holding the words as typed is
    shown, and with the words apart in no line, the first line holding both still is."""
    runbook = "# TLS\n\nCertbot renews it every night.\n\nSteps:\n\n1. Run `certbot renew --cert-name edge`.\n"
    with _folder_added(tmp_path, "ops", {"tls.md": runbook}) as (env, _folder):
        (hit,) = search(env, "certbot renew")["hits"]
        assert (hit["snippet"]["line"], hit["snippet"]["text"]) == (7, "1. Run `certbot renew --cert-name edge`.")
        (hit,) = search(env, "renew certbot")["hits"]
        assert hit["snippet"]["line"] == 3


def test_a_systemd_units_hit_names_its_section_and_get_reads_one(tmp_path):
    """`get 'myapp.service#Service'` said the unit had no headings: an INI file's
    sections are its definitions (parsed in the background once it is indexed)."""
    unit = "[Unit]\nDescription=My app\n\n[Service]\nExecStart=/usr/bin/app\nMemoryMax=1G\n\n[Install]\nWantedBy=x\n"
    with _folder_added(tmp_path, "units", {"myapp.service": unit}) as (env, _folder):
        wait_until(lambda: search(env, "MemoryMax")["hits"][0]["snippet"]["symbol"] is not None, timeout=20)
        assert search(env, "MemoryMax")["hits"][0]["snippet"]["symbol"] == "section Service"
        got = cli_json("get", "units/myapp.service#Service", "--json", env=env)
        assert got["content"] == "[Service]\nExecStart=/usr/bin/app\nMemoryMax=1G\n" and got["from_line"] == 4


def test_gzip_files_are_searched_as_the_files_they_hold(tmp_path):
    """A sysadmin's rotated logs and old notes are gzipped: they failed as binary. Each is
    read as the file it holds: a gzipped note is taken by default and named by its
    title, a log by an `also` glob, its lines the log's own; a gzipped PDF's hit names
    its page, a log's or a note's no section (it was the note's title twice)."""
    import gzip

    from fpdf import FPDF

    report = FPDF()
    for text in ("Quarterly uptime was fine.", "The certbot timer failed twice."):
        report.add_page()
        report.set_font("helvetica", size=12)
        report.multi_cell(0, 10, text=text)
    log = b"Nov 29 10:00:01 edge1 kernel: eth0 link down\nNov 29 10:00:05 edge1 sshd[123]: Failed password\n"
    page = b".TH APP 5\n.SH NAME\napp \\- options\n.SH OPTIONS\n.PP\n\\fIProtectSystem=\\fR\nMounts /usr read-only.\n"
    files = {
        "rotate.md.gz": b"# TLS runbook\n\nRun certbot renew on the edge hosts.\n",
        "syslog.2.gz": log,
        "review.pdf.gz": bytes(report.output()),
        "app.5.gz": page,  # a manual page as /usr/share/man keeps it
    }
    with _folder_added(tmp_path, "ops", {name: gzip.compress(data) for name, data in files.items()}) as (env, _f):
        hits = {h["path"]: h for h in search(env, "certbot")["hits"]}
        assert set(hits) == {"rotate.md.gz", "review.pdf.gz"}
        note, pdf = hits["rotate.md.gz"], hits["review.pdf.gz"]
        assert (note["title"], note["converted"], note["snippet"]["symbol"]) == ("TLS runbook", True, None)
        assert pdf["snippet"]["symbol"] == "Page 2"
        assert cli_json("search", "sshd", "--json", env=env, expect=1)["hits"] == []
        cli_json("collection", "set", "ops", "--also", "*.gz", "--json", env=env)
        (hit,) = search(env, '"failed password"')["hits"]
        assert (hit["path"], hit["snippet"]["line"], hit["snippet"]["symbol"]) == ("syslog.2.gz", 2, None)
        got = cli_json("get", "ops/syslog.2.gz:2", "--json", env=env)
        assert got["content"] == "Nov 29 10:00:05 edge1 sshd[123]: Failed password\n"
        (hit,) = search(env, "ProtectSystem")["hits"]
        assert (hit["path"], hit["title"], hit["snippet"]["symbol"]) == ("app.5.gz", "APP(5)", "OPTIONS")
        assert [h["path"] for h in search(env, "mounts OR certbot", "-t", "man")["hits"]] == ["app.5.gz"]


def test_a_converted_documents_passage_names_its_page_and_get_reads_a_section(tmp_path):
    """A thesis writer cites "p. 3" or a slide: a PDF hit said only its Markdown line
    (`smith2021.pdf:13`), and `get 'smith2021.pdf:Page 2'` found no such file. A hit in a
    converted document names the section it is in (a PDF's `## Page N`, a slide's title);
    `get REF:HEADING` or `REF#HEADING` reads that section, of any Markdown document."""
    from fpdf import FPDF
    from pptx import Presentation

    folder = tmp_path / "thesis"
    folder.mkdir()
    report = FPDF()
    for text in ("Sediment cores were taken in spring.", "Zinc chloride was added to the samples."):
        report.add_page()
        report.set_font("helvetica", size=12)
        report.multi_cell(0, 10, text=text)
    (folder / "smith2021.pdf").write_bytes(bytes(report.output()))
    memo = FPDF()
    memo.add_page()
    memo.set_font("helvetica", size=12)
    memo.multi_cell(0, 10, text="One page about the zqxmemo budget.")
    (folder / "memo.pdf").write_bytes(bytes(memo.output()))
    (folder / "note.eml").write_bytes(
        b"From: Hans <hans@example.de>\r\nSubject: Rechnung Q3\r\nDate: Tue, 05 Nov 2024 09:12:00 +0100\r\n\r\n"
        b"The zqxinvoice is attached.\r\n"
    )
    deck = Presentation()
    for title, body in (("Roadmap", "Fieldwork in May."), ("Budget", "The centrifuge costs too much.")):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    deck.save(str(folder / "talk.pptx"))
    (folder / "guide.md").write_text("# Guide\n\nIntro.\n\n## Install\n\nRun setup.\n\n## Use\n\nSearch.\n")
    (folder / "tool.py").write_text("# Install\n\ndef install():\n    return 1\n")
    # A reStructuredText page's sections are its titles over a line of punctuation (the
    # kernel's documentation: `get submitting-patches.rst#Backtraces` said it had no headings).
    (folder / "patches.rst").write_text(
        "==========\nSubmitting\n==========\n\nIntro.\n\nBacktraces\n----------\n\n"
        "Trim the zqxtrace, as so::\n\n  Signed-off-by: A\n  ---\n\nReviews\n-------\n\nBe patient.\n"
    )
    with running_gnod() as (env, _d):
        cli_json("collection", "add", str(folder), "--name", "thesis", "--json", env=env)
        (hit,) = search(env, "zinc chloride")["hits"]
        assert (hit["path"], hit["snippet"]["symbol"]) == ("smith2021.pdf", "Page 2")
        r = cli("search", "zinc chloride", "--vimgrep", env=env)
        assert r.stdout.startswith(str(folder / "smith2021.pdf") + ":")
        r = cli("search", "zinc chloride", "--human", "--color", "never", env=env)
        assert f"thesis/smith2021.pdf:{hit['snippet']['line']}: Page 2" in r.stdout
        assert search(env, "centrifuge")["hits"][0]["snippet"]["symbol"] == "Slide 2: Budget"
        # The section a document's title heads names no passage: a mail's hit said its subject twice.
        (mail,) = search(env, "zqxinvoice")["hits"]
        assert (mail["title"], mail["snippet"]["symbol"]) == ("Rechnung Q3", None)
        # A PDF of one page has no page sections: its `Page 1` is all of it.
        got = cli_json("get", "thesis/memo.pdf#Page 1", "--json", env=env)
        assert "zqxmemo" in got["content"] and got["from_line"] == 1
        # A document's own text names no section: a Python comment is no heading. A
        # Markdown or reStructuredText page's passage is named by the heading it is under.
        found = {h["path"]: h["snippet"]["symbol"] for h in search(env, "install")["hits"]}
        assert found["guide.md"] == "Install" and found["tool.py"] in (None, "install()")
        assert search(env, "zqxtrace")["hits"][0]["snippet"]["symbol"] == "Backtraces"
        got = cli_json("get", "thesis/patches.rst#backtraces", "--json", env=env)
        assert (got["from_line"], got["content"]) == (
            7,
            "Backtraces\n----------\n\nTrim the zqxtrace, as so::\n\n  Signed-off-by: A\n  ---\n",
        )
        r = cli("get", "thesis/patches.rst#Budget", env=env, expect=2)
        assert "(its headings: Submitting, Backtraces, Reviews)" in r.stderr
        for ref in ("thesis/smith2021.pdf:Page 2", "thesis/smith2021.pdf#page2"):
            got = cli_json("get", ref, "--json", env=env)
            assert got["content"].startswith("## Page 2\n") and "Zinc chloride" in got["content"], ref
            assert "Sediment" not in got["content"], ref
        got = cli_json("get", "thesis/guide.md:Install", "--json", env=env)
        assert got["content"] == "## Install\n\nRun setup.\n" and got["from_line"] == 5
        # As a GitHub or Obsidian anchor names it.
        assert cli_json("get", "thesis/guide.md#install", "--json", env=env)["content"] == got["content"]
        # A heading that two sections have: the first, and a note saying where the other is
        # (`get guide/config.md#Options` gave the first without a word of the second).
        (folder / "config.md").write_text("# Config\n\n## Options\n\nA.\n\n## Other\n\nB.\n\n## Options\n\nC.\n")
        (folder / "sync.md").write_text("# Sync\n\n## Action items\n\n- Ship it.\n")
        cli_json("update", "thesis", "--json", env=env)
        assert (
            cli_json("get", "thesis/sync.md#action-items", "--json", env=env)["content"]
            == "## Action items\n\n- Ship it.\n"
        )
        got = cli_json("get", "thesis/config.md#options", "--json", env=env)
        assert (got["from_line"], got["content"]) == (3, "## Options\n\nA.\n")
        assert got["notes"] == ["2 sections are named 'options', at lines 3, 11: this is the first"]
        assert cli_json("get", "thesis/sync.md#action-items", "--json", env=env)["notes"] == []
        budget = cli_json("get", "thesis/talk.pptx#Budget", "--json", env=env)["content"]
        assert budget.startswith("## Slide 2: Budget") and "Roadmap" not in budget
        assert cli_json("get", "thesis/talk.pptx:Slide 2", "--json", env=env)["content"] == budget
        err = cli_error("get", "thesis/guide.md#Uninstall", env=env)
        assert err["code"] == "NOT_FOUND"
        assert "no section named 'Uninstall' in thesis/guide.md (its headings: Guide, Install, Use)" in err["message"]
        # Code's `:NAME` is still a definition (once parsed, in the background).
        assert wait_until(lambda: cli_json("status", "--json", env=env)["symbols"]["parsed"] > 0, 30)
        assert cli_json("get", "thesis/tool.py:install", "--json", env=env)["content"].startswith("def install():")


def test_a_collection_named_as_its_folder_is_says_the_name_it_has(tmp_path):
    """`collection add "Lit Review"` names it Lit-Review; `-c "Lit Review"` then said only
    that no collection has that name."""
    folder = tmp_path / "Lit Review"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nSediment.\n")
    with running_gnod() as (env, _d):
        added = cli_json("collection", "add", str(folder), "--json", env=env)
        assert added["collections"][0]["collection"] == "Lit-Review"
        err = cli_error("search", "sediment", "-c", "Lit Review", env=env)
        assert err["code"] == "NOT_FOUND"
        assert "no collection named 'Lit Review' (did you mean 'Lit-Review'? collections: Lit-Review)" in err["message"]
        err = cli_error("search", "x", "-c", "Lit-Reveiw", env=env)  # typed wrong
        assert "(did you mean 'Lit-Review'? collections: Lit-Review)" in err["message"]
        err = cli_error("search", "x", "-c", "zzz", env=env)
        assert "no collection named 'zzz' (collections: Lit-Review)" in err["message"]


def test_context_shows_the_lines_around_a_passages_matching_line_as_grep_c(tmp_path):
    """ripgrep's -C: a passage as the N file lines before its matching line, that line
    and the N after, numbered as the file is (its runs of blank lines kept)."""
    folder = tmp_path / "src"
    folder.mkdir()
    lines = [
        "def setup():",
        "    pass",
        "",
        "",
        "",
        "def teardown():",
        "    # the kettle boils",
        "    return 0",
        "x = 1",
    ]
    (folder / "app.py").write_text("\n".join(lines) + "\n")
    with running_gnod() as (env, _d):
        cli_json("collection", "add", str(folder), "--name", "src", "--json", env=env)
        (hit,) = search(env, "kettle", "-C", "2")["hits"]
        snip = hit["snippet"]
        assert snip["line"] == 5 and snip["text"].split("\n") == lines[4:9]
        (start, end), *_ = snip["matches"]
        assert snip["text"][start:end] == "kettle"
        assert search(env, "kettle", "--context", "0")["hits"][0]["snippet"]["text"] == "    # the kettle boils"
        (top,) = search(env, "setup", "-C", "3")["hits"]  # at the top: from the first line
        assert top["snippet"]["line"] == 1 and top["snippet"]["text"].split("\n") == lines[:4]
        r = cli("search", "kettle", "-C", "2", "--vimgrep", env=env)  # a line per match: its own
        assert r.stdout == f"{folder / 'app.py'}:7:11:    # the kettle boils\n"
        # On a terminal: every line, under the line it was found by (a tryout's -C 5 showed
        # three lines, named by the first).
        assert snip["before"] == 2 and search(env, "kettle")["hits"][0]["snippet"]["before"] == 0
        r = cli("search", "kettle", "-C", "3", "--human", "--color", "never", env=env)
        assert "src/app.py:7" in r.stdout
        assert "\n".join(f"      {ln}" for ln in lines[3:9]) in r.stdout


def test_a_passage_of_a_tables_rows_says_its_header_row(tmp_path):
    """An office tryout's spreadsheet hits showed `| HH-NL 107 | Scania R450 | 2018 | … |`
    with no word of what the columns are: the header row comes with them."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    rows = [f"HH-NL {100 + i},Truck {i},{2010 + i % 10},Driver {i}" for i in range(40)]
    rows[30] = "HH-NL 130,Scania R450,2018,Mehmet Zqxsahin"
    (folder / "fleet.csv").write_text("plate,model,year,driver\n" + "\n".join(rows) + "\n")
    with running_gnod() as (env, _d):
        cli_json("collection", "add", str(folder), "--name", "fleet", "--json", env=env)
        (hit,) = search(env, "zqxsahin")["hits"]
        assert hit["snippet"]["table_header"] == "| plate | model | year | driver |"
        assert hit["snippet"]["text"].startswith("| HH-NL 130 | Scania R450 | 2018 | Mehmet Zqxsahin |")
        out = cli("search", "zqxsahin", "--human", "--color", "never", env=env).stdout.splitlines()
        assert out[1].strip() == "| plate | model | year | driver |" and "Zqxsahin" in out[2]
        # A passage that starts on the header row shows it already.
        (head,) = search(env, "plate")["hits"]
        assert head["snippet"]["text"].startswith("| plate |") and head["snippet"]["table_header"] is None
