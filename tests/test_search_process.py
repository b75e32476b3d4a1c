"""The search process: a real gnod answers searches from a process of its own beside its
reader thread, with the same results, sees what the writer commits, and goes on (in
the daemon, then with a new process) when that process is killed."""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from gnod import wire
from gnod.paths import Paths
from gnod.protocol import SearchParams
from gnod.search.filters import NO_FILTER
from gnod.server.search_process import RESTART_AFTER_S
from gnod.server.searching import answer
from gnod.store import documents as store
from gnod.store.db import connect
from gnod.store.lexical_index import LexicalIndex
from gnod.text.analyzer import AnalyzerSet

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="gnod starts a search process only on 2+ cores")

DOCS = {
    "kettle.md": "# Kettle\n\nDescale the kettle every week.\nThe kettle whistles when the water boils.\n",
    "deploy.md": "# Deploying\n\nDeploy the billing service on Fridays, never the kettle.\n",
    "notes/tea.md": "# Tea\n\nBrewing green tea needs water below boiling.\n",
}


@pytest.fixture
def served(daemon, tmp_path):
    root = tmp_path / "docs"
    for rel, text in DOCS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    daemon.result("collection.add", {"name": "docs", "path": str(root), "index": True})
    return daemon, root


def process_load(daemon) -> dict:
    return daemon.result("status")["load"]


def until_the_process_answers(daemon, query: str = "kettle") -> dict:
    """Search until the search process answers one (it may still be starting)."""
    deadline = time.monotonic() + 30
    before = process_load(daemon)["search_process_searches"]
    while time.monotonic() < deadline:
        result = daemon.result("search", {"query": query})
        if process_load(daemon)["search_process_searches"] > before:
            return result
        time.sleep(0.05)
    raise AssertionError(f"the search process answered nothing: {process_load(daemon)}")


def in_this_process(daemon, query: str) -> dict:
    """The same search answered here, from the daemon's files, by the same code."""
    paths = Paths(daemon.env["GNO_HOME"])
    conn = connect(paths.db_file, readonly=True)
    index = LexicalIndex.for_search(paths.data_dir)
    index.refresh()
    index.progress = None
    result = answer(index, conn, AnalyzerSet(), SearchParams(query=query), store.language_counts(conn), NO_FILTER)
    conn.close()
    return {"hits": [(h.path, h.score, h.snippet.text if h.snippet else None) for h in result.hits]}


def shown(result: dict) -> dict:
    return {"hits": [(h["path"], h["score"], (h["snippet"] or {}).get("text")) for h in result["hits"]]}


def test_the_search_process_answers_as_the_daemon_would(served):
    daemon, _ = served
    result = until_the_process_answers(daemon, "kettle water")
    assert process_load(daemon)["search_process_pid"] not in (None, daemon.proc.pid)
    assert [h["path"] for h in result["hits"]][0] == "kettle.md"
    assert shown(result) == in_this_process(daemon, "kettle water")
    bad = daemon.rpc("search", {"query": 'kettle "unclosed'})
    assert bad["error"]["code"] == wire.INVALID_QUERY


def test_the_search_process_starts_with_the_daemon_and_answers_its_first_search(served):
    daemon, _ = served
    deadline = time.monotonic() + 30
    while process_load(daemon)["search_process_pid"] is None:  # no search was made yet
        assert time.monotonic() < deadline, process_load(daemon)
        time.sleep(0.05)
    assert process_load(daemon)["search_process_searches"] == 0
    result = daemon.result("search", {"query": "kettle"})
    assert [h["path"] for h in result["hits"]][0] == "kettle.md"
    assert process_load(daemon)["search_process_searches"] == 1


def test_status_shows_the_search_process(served, run_cli):
    daemon, _ = served
    until_the_process_answers(daemon)
    load = process_load(daemon)
    human = run_cli("status", "--human", env=daemon.env).stdout
    line = next(x for x in human.splitlines() if x.startswith("readers: "))
    assert re.search(rf"; search process: \d+ searches \(pid {load['search_process_pid']}\)$", line), line


def test_the_search_process_finds_what_was_just_saved(served):
    daemon, root = served
    until_the_process_answers(daemon)
    for i in range(3):
        (root / f"new{i}.md").write_text(f"# New {i}\n\nzebracorn{i} arrived today.\n")
        before = process_load(daemon)["search_process_searches"]
        result = daemon.result("search", {"query": f"zebracorn{i}", "wait_s": 10})
        assert process_load(daemon)["search_process_searches"] == before + 1  # the process answered it
        assert [h["path"] for h in result["hits"]] == [f"new{i}.md"]


def test_a_killed_search_process_is_replaced_and_no_search_fails(served):
    daemon, _ = served
    until_the_process_answers(daemon)
    pid = process_load(daemon)["search_process_pid"]
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + RESTART_AFTER_S + 30
    while time.monotonic() < deadline:
        result = daemon.result("search", {"query": "kettle"})  # answered, by whichever can
        assert [h["path"] for h in result["hits"]][0] == "kettle.md"
        now = process_load(daemon)["search_process_pid"]
        if now not in (None, pid):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"no new search process: {process_load(daemon)}")
    until_the_process_answers(daemon)
    assert daemon.alive()
