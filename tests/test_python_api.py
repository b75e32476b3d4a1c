"""The Python API (gnoctl.client.Client, docs/python.md) against a real gnod: typed
results, errors by name, a watch beside searches; and every example of the doc runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import msgspec
import pytest

from conftest import paths_for, wait_until
from gnoctl.client import Client, DaemonError
from gnod import protocol as P

pytestmark = pytest.mark.timeout(120)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "python.md")


def examples() -> list[str]:
    with open(DOC) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


@pytest.fixture
def notes(daemon, corpus):
    daemon.result("collection.add", {"name": "notes", "path": corpus.root})
    return daemon


def test_calls_return_the_protocols_types(notes):
    with Client(paths_for(notes.env), autostart=False) as gno:
        found = gno.search("deploy", limit=3, collections=["notes"])
        assert isinstance(found, P.SearchResult) and isinstance(found.hits[0], P.SearchHit)
        assert found.hits[0].path == "guides/deploy.md" and found.hits[0].snippet.line >= 1
        doc = gno.get(f"notes/guides/deploy.md:{found.hits[0].snippet.line}", lines=2)
        assert isinstance(doc, P.Document) and doc.to_line - doc.from_line == 1
        assert [d.path for d in gno.multi_get(pattern="notes/guides/*.md").documents] == [
            "guides/deploy.md",
            "guides/staging.md",
        ]
        given = gno.query("roll back a release", variants={"lexical": ["error rate dashboards"]}, rerank=False)
        assert given.expansion.source == "client" and given.hits[0].path == "guides/deploy.md"
        assert gno.ask("how do I deploy to staging", answer=False).considered
        assert gno.status().collections[0].name == "notes"
        assert gno.ls("notes").total == len(gno.ls().entries)
        # Errors carry gnod's stable names, whatever the method.
        with pytest.raises(DaemonError) as bad:
            gno.search('"unclosed')
        assert bad.value.name == "INVALID_QUERY" and bad.value.exit_code == 2
        with pytest.raises(DaemonError) as typo:
            gno.search("deploy", limt=3)
        assert typo.value.name == "INVALID_PARAMS" and "limt" in typo.value.message
        with pytest.raises(DaemonError) as day:
            gno.search("deploy", filters={"since": "yesterday"})  # the daemon takes days as written
        assert day.value.name == "INVALID_PARAMS" and "filters.since: expected a day as YYYY-MM-DD" in day.value.message
        with pytest.raises(DaemonError) as many:  # the field first, as a person reads it
            gno.search("deploy", limit=200_000)
        assert many.value.message == "invalid params for search: limit: expected `int` <= 100000"
        with pytest.raises(DaemonError) as long:  # a page pasted past the limit: its length as people count it
            gno.search("deploy " * 5000)
        assert long.value.message == "invalid params for search: query: expected text of at most 32,000 characters"
        with pytest.raises(DaemonError) as passages:  # more than a list of passages holds
            gno.search("deploy", limit=5000)
        assert passages.value.name == "INVALID_PARAMS" and passages.value.message.startswith("limit: at most 1,000")
        with pytest.raises(DaemonError) as missing:
            gno.get("notes/nope.md")
        assert missing.value.name == "NOT_FOUND"
        assert gno.search("deploy").hits  # the connection survives errors


def test_watch_yields_changes_while_the_client_searches(notes, corpus):
    events: list = []
    with Client(paths_for(notes.env), autostart=False) as gno:

        def follow() -> None:
            for event in gno.watch("notes"):
                # The same client answers a search inside the loop: watch has its own connection.
                events.append((event, gno.search("hamsters", collections=["notes"]).hits))
                return

        t = threading.Thread(target=follow, daemon=True)
        t.start()
        for i in range(40):  # subscribed once the daemon counts it: save until an event comes
            corpus.write(f"pets/hamster{i}.md", "# Hamsters\n\nHamsters store food in their cheeks.\n")
            if wait_until(lambda: events, 0.5):
                break
        t.join(10)
    event, hits = events[0]
    assert isinstance(event, P.Change) and event.kind == "added" and event.path.startswith("pets/hamster")
    assert event.path in [h.path for h in hits]  # a search after the event already sees it


def test_every_example_in_the_doc_runs(notes, corpus):
    blocks = examples()
    assert len(blocks) >= 6
    env = {**notes.env, "PYTHONPATH": ROOT, "GNO_NO_AUTOSTART": "1"}
    for code in blocks:
        code = "from gnoctl.client import Client, DaemonError\n" + code  # as the doc's first example imports
        if "watch(" in code:
            proc = subprocess.Popen(
                [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for i in range(40):
                corpus.write(f"example{i}.md", f"# Example {i}\n")
                try:
                    out, err = proc.communicate(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    continue
            else:
                proc.kill()
                pytest.fail("the watch example never saw a change")
            assert proc.returncode == 0 and out.startswith("added gno://notes/example"), err
            continue
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout.strip(), (code, r.stderr)
        assert "Traceback" not in r.stderr


def test_results_decode_strictly_from_the_wire(notes):
    """The typed methods hand back exactly what `call` returns, as Structs."""
    with Client(paths_for(notes.env), autostart=False) as gno:
        raw = gno.call("search", {"query": "deploy"})
        typed = gno.search("deploy")
    assert msgspec.to_builtins(typed)["hits"][0]["uri"] == raw["hits"][0]["uri"]


def test_send_then_reply_is_call_in_two_steps(notes):
    with Client(paths_for(notes.env), autostart=False) as gno:
        params = {"query": "deploy", "limit": 3}
        first = gno.send("search", params)
        meanwhile = sum(range(1000))  # the caller's own work while gnod answers
        sent = gno.reply(first)
        called = gno.call("search", params)
        assert meanwhile and [h["path"] for h in sent["hits"]] == [h["path"] for h in called["hits"]]
        assert sent["hits"][0]["path"] == "guides/deploy.md"
        bad = gno.send("search", {"query": '"unclosed'})
        with pytest.raises(DaemonError) as err:
            gno.reply(bad)
        assert err.value.name == "INVALID_QUERY"
        assert gno.call("search", params)["hits"]  # the connection goes on after an error reply


def test_a_call_whose_gnod_goes_away_is_cancelled_not_a_bug(gno_home):
    """gnod killed while a call waits for its answer: the call was stopped, and a read can
    be sent again (it was INTERNAL, which the protocol keeps for gnod's own bugs)."""
    import signal

    from conftest import make_env, start_gnod

    d = start_gnod(make_env(gno_home))
    with Client(paths_for(d.env), autostart=False) as gno:
        waiting = gno.send("watch", {})  # answered only when gnod stops
        os.kill(d.proc.pid, signal.SIGKILL)
        with pytest.raises(DaemonError) as err:
            gno.reply(waiting)
    d.stop()
    assert (err.value.name, err.value.exit_code) == ("CANCELLED", 2)
    assert "gnod closed the connection before it answered" in err.value.message
