"""`watch`: a real gnod streams what its commits added, changed or removed, and a
subscriber that does not keep up is told it lagged instead of being buffered for."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import wait_until
from gnod import wire

pytestmark = pytest.mark.timeout(180)
EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "client.py")


def subscribe(daemon, params: dict | None = None):
    """A connection with a live `watch` (a later request's reply proves it is subscribed)."""
    c = daemon.connect(timeout=30)
    c.send("watch", params or {}, req_id="w")
    c.call("status", req_id="ready")
    return c


def changes_until(c, want: int, timeout: float = 20.0) -> list[dict]:
    """Read `change` notifications until `want` have come (or fail after timeout)."""
    got: list[dict] = []
    deadline = time.monotonic() + timeout
    while len(got) < want:
        c.sock.settimeout(max(0.1, deadline - time.monotonic()))
        msg = c.recv()
        assert msg.get("method") == "change", msg
        got.append(msg["params"])
    return got


def test_watch_streams_added_changed_removed(daemon, corpus):
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    with subscribe(daemon) as c:
        new = corpus.write("notes/new.md", "# New\n\nA freshly saved note about kettles.\n")
        e = changes_until(c, 1)[0]
        assert (e["id"], e["collection"], e["kind"], e["path"], e["uri"]) == (
            "w",
            "docs",
            "added",
            "notes/new.md",
            "gno://docs/notes/new.md",
        )
        assert os.path.realpath(e["abs_path"]) == os.path.realpath(new)
        # The change is committed before it is announced: a search right away finds it.
        hits = daemon.result("search", {"query": "freshly kettles"})["hits"]
        assert hits and hits[0]["path"] == "notes/new.md"

        corpus.write("guides/deploy.md", "# Deployment guide\n\nNow with a canary step.\n")
        assert [(e["kind"], e["path"]) for e in changes_until(c, 1)] == [("changed", "guides/deploy.md")]
        os.unlink(corpus.path("notes/pasta.txt"))
        assert [(e["kind"], e["path"]) for e in changes_until(c, 1)] == [("removed", "notes/pasta.txt")]
        # Touching a file without changing it is no change.
        os.utime(corpus.path("README.md"))
        corpus.write("notes/second.md", "# Second\n")
        assert [(e["kind"], e["path"]) for e in changes_until(c, 1)] == [("added", "notes/second.md")]

        daemon.result("collection.remove", {"name": "docs"})
        gone = changes_until(c, 1)[0]
        assert (gone["kind"], gone["collection"], gone["path"], gone["uri"]) == ("removed", "docs", None, None)


def test_watch_filters_by_collection_and_rejects_unknown_ones(daemon, corpus, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    daemon.result("collection.add", {"name": "other", "path": str(other)})
    reply = daemon.rpc("watch", {"collections": ["nope"]})
    assert reply["error"]["code"] == wire.NOT_FOUND and "nope" in reply["error"]["message"]
    with subscribe(daemon, {"collections": ["other"]}) as c:
        corpus.write("ignored.md", "# Not watched\n")
        (other / "seen.md").write_text("# Watched\n")
        got = changes_until(c, 1)
        assert [(e["collection"], e["path"]) for e in got] == [("other", "seen.md")]


def test_slow_subscriber_gets_lagged_notice_and_keeps_up_afterwards(daemon, tmp_path):
    bulk = tmp_path / "bulk"
    bulk.mkdir()
    for i in range(3000):
        (bulk / f"n{i:04d}.md").write_text(f"# Note {i}\n\nbody {i}\n")
    with subscribe(daemon, {"queue": 5}) as c:
        # The subscriber reads nothing while 3000 documents are indexed and announced.
        res = daemon.result("collection.add", {"name": "bulk", "path": str(bulk)}, timeout=120)
        assert res["collections"][0]["added"] == 3000
        changes, lagged = [], []
        c.sock.settimeout(10)
        while len(changes) + sum(lagged) < 3000:
            msg = c.recv()
            if msg["method"] == "change":
                changes.append(msg["params"]["path"])
            else:
                assert msg["method"] == "lagged" and msg["params"]["id"] == "w", msg
                lagged.append(msg["params"]["dropped"])
        assert lagged and all(n > 0 for n in lagged)
        assert len(changes) < 3000 and len(set(changes)) == len(changes)
        # Caught up: the next change comes through as usual.
        (bulk / "late.md").write_text("# Late\n")
        assert [(e["kind"], e["path"]) for e in changes_until(c, 1)] == [("added", "late.md")]
    assert daemon.result("status")["documents"] == 3001


def test_watch_ends_with_a_result_when_the_daemon_stops(daemon):
    with subscribe(daemon) as c:
        daemon.result("shutdown")
        c.sock.settimeout(15)
        reply = c.recv_reply("w")
        assert reply["result"] == {"sent": 0, "dropped": 0}
    assert daemon.proc.wait(15) == 0


def test_example_client_calls_and_follows_changes(daemon, corpus):
    """examples/client.py (stdlib only) against the real daemon: one call, then `watch`."""
    example = EXAMPLE
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    r = subprocess.run(
        [sys.executable, example, "search", "deploy"], env=daemon.env, capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hits"][0]["path"] == "guides/deploy.md"
    proc = subprocess.Popen(
        [sys.executable, example, "watch", "docs"], env=daemon.env, stdout=subprocess.PIPE, text=True
    )
    try:
        # Subscribed once the daemon counts it: save until the example reports the file.
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
        reader.start()
        for i in range(50):
            corpus.write(f"saved{i}.md", f"# Saved {i}\n")
            if wait_until(lambda: lines, 0.5):
                break
        assert lines and lines[0].startswith("added gno://docs/saved"), lines
        # An error is a line and gnoctl's exit status, not a traceback.
        bad = subprocess.run(
            [sys.executable, example, "search", '"unclosed'], env=daemon.env, capture_output=True, text=True, timeout=30
        )
        assert (bad.returncode, bad.stdout) == (2, "") and bad.stderr.startswith("client.py: INVALID_QUERY: ")
        assert "Traceback" not in bad.stderr
        # gnod stopping ends the watch with exit 3 and says so.
        daemon.stop()
        assert proc.wait(20) == 3
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    gone = subprocess.run(
        [sys.executable, example, "search", "deploy"], env=daemon.env, capture_output=True, text=True, timeout=30
    )
    assert gone.returncode == 3 and "gnod is not running" in gone.stderr and "Traceback" not in gone.stderr


def test_example_client_exit_statuses_are_gnoctls():
    """The stdlib-only example restates which error codes are the user's: it must agree with gnod."""
    spec = importlib.util.spec_from_file_location("example_client", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for code in wire.ERROR_NAMES:
        error = {"code": code, "message": "m", "data": {"name": wire.ERROR_NAMES[code]}}
        assert module.GnodError(error).status == wire.exit_code_for(code), wire.ERROR_NAMES[code]


def test_a_subscriber_that_stopped_reading_does_not_hold_up_shutdown(daemon, tmp_path):
    bulk = tmp_path / "bulk"
    bulk.mkdir()
    for i in range(3000):
        (bulk / f"n{i:04d}.md").write_text(f"# Note {i}\n")
    with subscribe(daemon):  # never reads again: the daemon's socket buffer fills up
        daemon.result("collection.add", {"name": "bulk", "path": str(bulk)}, timeout=120)
        t0 = time.monotonic()
        daemon.result("shutdown")
        assert daemon.proc.wait(15) == 0
        assert time.monotonic() - t0 < 5
