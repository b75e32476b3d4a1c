"""Hostile and careless input, through a real gnod: odd file names, pathological text,
FIFOs, symlinks, huge files, malformed frames, planted runtime dirs, a full disk."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from conftest import RawConn, _run_cli, cli_json, make_env, migrated_db, paths_for, start_gnod, wait_until
from gnod import wire
from gnod.ingest.markdown import extract_title, split_frontmatter
from gnod.ingest.walk import WalkEntry
from gnod.ingest.workers import Failed, Task, run_task

ROOT = hasattr(os, "getuid") and os.getuid() == 0
NOBODY = 65534


def error_of(reply: dict) -> dict:
    assert "error" in reply and "result" not in reply, reply
    return reply["error"]


def errors_by_path(daemon, collection: str) -> dict[str, dict]:
    st = daemon.result("status")
    return {e["path"]: e for e in st["recent_errors"] if e["collection"] == collection}


def hits(env, query: str, *extra: str) -> list[str]:
    """Paths `gnoctl search` finds (exit 0), or [] (exit 1: no match)."""
    r = _run_cli("search", query, "--json", *extra, env=env)
    assert r.returncode in (0, 1), r.stderr
    found = [h["path"] for h in json.loads(r.stdout)["hits"]]
    assert (r.returncode == 0) == bool(found)
    return found


# --- 1. file names that are not UTF-8 -------------------------------------------------------


def test_undecodable_file_name_is_reported_and_the_rest_indexed(daemon, tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    for i in range(30):
        (root / f"note{i:02d}.md").write_text(f"# Note {i}\n\nordinary text number{i}\n")
    bad = os.path.join(os.fsencode(str(root)), b"m-\xff.md")
    with open(bad, "wb") as f:
        f.write(b"# Bad name\n\nundecodable name body\n")
    # An exclude glob reads the names too (its matcher failed on such a name: no add, no update).
    add = cli_json("collection", "add", str(root), "--name", "notes", "--exclude", "*.tmp", "--json", env=daemon.env)
    stats = add["collections"][0]
    assert stats["added"] == 30 and stats["errors"] == 1, add
    errs = errors_by_path(daemon, "notes")
    assert errs["m-\\xff.md"]["code"] == "BAD_NAME"
    assert "UTF-8" in errs["m-\\xff.md"]["reason"]
    # A full update does the same, and the watcher keeps working through more bad names.
    again = cli_json("update", "notes", "--json", env=daemon.env)["collections"][0]
    assert again["errors"] == 1 and again["added"] == 0
    with open(os.path.join(os.fsencode(str(root)), b"x-\xfe\xfd.md"), "wb") as f:
        f.write(b"second bad name\n")
    (root / "fresh.md").write_text("# Fresh\n\nwatcherstillalive\n")
    assert hits(daemon.env, "watcherstillalive", "--wait", "5") == ["fresh.md"]
    assert wait_until(lambda: "x-\\xfe\\xfd.md" in errors_by_path(daemon, "notes"), 10)
    fresh = [f for f in daemon.result("status")["freshness"] if f["collection"] == "notes"][0]
    assert fresh["watching"] and fresh["last_error"] is None, fresh
    # Renamed to a valid name: indexed, and the report is gone.
    os.rename(bad, os.path.join(os.fsencode(str(root)), b"m-fixed.md"))
    assert hits(daemon.env, "undecodable", "--wait", "5") == ["m-fixed.md"]
    assert wait_until(lambda: "m-\\xff.md" not in errors_by_path(daemon, "notes"), 10)


# --- 2. pathological Markdown -------------------------------------------------------------


@pytest.mark.timeout(60)
def test_markdown_parsing_is_linear_on_long_blank_runs():
    # Quadratic patterns took ~11 s at 40,000 blanks and hours at 1 MB; these are 1 MB.
    blanks = " " * 1_000_000
    assert extract_title({}, "# a" + blanks + "b\n", "x.md") == "a" + blanks + "b"
    assert extract_title({}, "# Title" + blanks + "##\n", "x.md") == "Title"
    assert extract_title({}, "# C#\n", "x.md") == "C#"
    meta, _, _ = split_frontmatter("---\nkey" + blanks + "x\ntitle: T\n---\nbody\n")
    assert meta == {"title": "T"}
    meta, _, _ = split_frontmatter("---\na" + blanks + ": v\n---\n")
    assert meta == {"a": "v"}


def test_a_document_past_its_deadline_is_reported_not_indexed(tmp_path, monkeypatch):
    from gnod.config import CollectionConfig
    from gnod.ingest import prepare
    from gnod.ingest.pipeline import index_collection
    from gnod.text.analyzer import AnalyzerSet

    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha\n")
    conn = migrated_db(str(tmp_path / "index.sqlite"))
    monkeypatch.setattr(prepare, "PREPARE_TIMEOUT_S", -1.0)  # every document is already late
    stats = index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    assert stats.added == 0 and stats.errors == 1
    code, reason = conn.execute("SELECT code, reason FROM ingest_errors").fetchone()
    assert code == "TIMEOUT" and "not indexed" in reason
    assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
    monkeypatch.setattr(prepare, "PREPARE_TIMEOUT_S", 60.0)
    (root / "a.md").write_text("# A\n\nalpha beta\n")  # a new stat: tried again
    stats = index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    assert stats.added == 1 and conn.execute("SELECT count(*) FROM ingest_errors").fetchone()[0] == 0


# --- 3. FIFOs, and a stop that tells the truth -----------------------------------------------


def test_a_fifo_swapped_in_after_the_walk_does_not_block(tmp_path):
    path = tmp_path / "note.md"
    path.write_text("# Note\n")
    st = path.stat()
    entry = WalkEntry("note.md", str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    path.unlink()
    os.mkfifo(path)  # what the walk saw is gone; a writer-less FIFO blocks a plain open()
    out: list = []
    t = threading.Thread(target=lambda: out.append(run_task(Task(entry, None, None))), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "reading a FIFO blocked"
    assert isinstance(out[0], Failed) and out[0].code == "SPECIAL" and "FIFO" in out[0].reason


def test_a_file_removed_after_the_walk_listed_it_is_removed_not_failed(tmp_path, monkeypatch):
    """A branch switched under a run: the walk listed files that are gone when they are
    read. They were reported as READ failures ("No such file or directory") until the
    next change; they are gone, as the next walk would find."""
    from gnod.config import CollectionConfig
    from gnod.ingest import pipeline
    from gnod.text.analyzer import AnalyzerSet

    root = tmp_path / "docs"
    root.mkdir()
    for name in ("a.md", "b.md"):
        (root / name).write_text(f"# {name}\n\nwords of {name}\n")
    conn = migrated_db(str(tmp_path / "index.sqlite"))
    col = CollectionConfig(name="c", path=str(root))
    assert pipeline.index_collection(conn, AnalyzerSet(), col).added == 2
    listed = {
        name: WalkEntry(name, str(root / name), 99, time.time_ns(), (root / "a.md").stat().st_ino)
        for name in ("b.md", "new.md")
    }
    (root / "b.md").unlink()
    real = pipeline.walk

    def walk(*args, **kw):  # what a walk listed just before the files went
        yield from real(*args, **kw)
        yield from listed.values()

    monkeypatch.setattr(pipeline, "walk", walk)
    stats = pipeline.index_collection(conn, AnalyzerSet(), col)
    assert (stats.errors, stats.removed, stats.added) == (0, 1, 0)
    assert conn.execute("SELECT count(*) FROM ingest_errors").fetchone()[0] == 0
    assert [r[0] for r in conn.execute("SELECT rel_path FROM documents")] == ["a.md"]


def test_fifo_in_a_collection_is_reported_and_stop_works(daemon, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nfifoneighbour\n")
    os.mkfifo(root / "pipe.md")
    stats = cli_json("collection", "add", str(root), "--name", "docs", "--json", env=daemon.env)["collections"][0]
    assert stats["added"] == 1 and stats["errors"] == 1
    assert errors_by_path(daemon, "docs")["pipe.md"]["code"] == "SPECIAL"
    assert hits(daemon.env, "fifoneighbour") == ["a.md"]
    out = cli_json("daemon", "stop", "--json", env=daemon.env)
    assert out == {"stopped": True}
    assert daemon.proc.wait(10) == 0


HOLDER = """
import fcntl, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
with open(sys.argv[2], "w") as f:
    f.write(f"{os.getpid()}\\n")
print("locked", flush=True)
time.sleep(600)
"""


def test_daemon_stop_kills_a_gnod_that_does_not_stop(gno_home, run_cli):
    """A wedged gnod (holds the lock, no longer listens, ignores SIGTERM) is not reported
    stopped while it runs: `daemon stop` waits, then kills it, and says so."""
    env = make_env(gno_home)
    paths = paths_for(env)
    os.makedirs(paths.runtime_dir, mode=0o700)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, paths.lock_file, paths.pid_file], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "locked"
        r = run_cli("daemon", "stop", "--timeout", "1", "--json", env=env)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == {"stopped": True, "killed": True, "pid": proc.pid}
        assert proc.wait(5) == -signal.SIGKILL
        r = run_cli("daemon", "stop", "--json", env=env)
        assert json.loads(r.stdout) == {"stopped": False}
    finally:
        proc.kill()
        proc.wait()


# --- 4. a runtime dir planted by another user ----------------------------------------------


LISTENER = """
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(8)
print("listening", flush=True)
s.settimeout(20)
try:
    c, _ = s.accept()
except socket.timeout:
    sys.exit(0)
c.settimeout(3)
got = b""
try:
    got = c.recv(65536)
except socket.timeout:
    pass
with open(sys.argv[2], "wb") as f:
    f.write(got)
body = b'{"jsonrpc":"2.0","id":1,"result":{"hits":[{"path":"planted.md"}]}}'
try:
    c.sendall(len(body).to_bytes(4, "big") + body)
except OSError:
    pass
s.settimeout(1)  # count the connections the client tries after the first
again = 0
try:
    while True:
        s.accept()
        again += 1
except socket.timeout:
    pass
with open(sys.argv[2] + ".again", "w") as f:
    f.write(str(again))
"""


def _fallback_env(tmp: str) -> dict[str, str]:
    env = dict(os.environ)
    for k in ("GNO_HOME", "XDG_RUNTIME_DIR"):
        env.pop(k, None)
    env["TMPDIR"] = tmp
    env["GNO_NO_AUTOSTART"] = "1"
    return env


def _listen_as_nobody(sock_path: str, record: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            sys.executable,
            "-c",
            LISTENER,
            sock_path,
            record,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "listening"
    return proc


@pytest.mark.skipif(not ROOT, reason="needs root to act as another user (setpriv)")
@pytest.mark.parametrize("owner", ["theirs", "ours"])
def test_no_query_goes_to_another_users_listener(run_cli, owner):
    tmp = tempfile.mkdtemp(prefix="gno-plant-", dir="/tmp")
    os.chmod(tmp, 0o755)
    rundir = os.path.join(tmp, f"gno-{os.getuid()}")
    records = os.path.join(tmp, "records")  # where the listener, as nobody, may write
    os.mkdir(records)
    os.chown(records, NOBODY, NOBODY)
    record = os.path.join(records, "received")
    os.mkdir(rundir)
    os.chmod(rundir, 0o777)
    if owner == "theirs":
        os.chown(rundir, NOBODY, NOBODY)
    try:
        listener = _listen_as_nobody(os.path.join(rundir, "gnod.sock"), record)
        if owner == "ours":
            os.chmod(rundir, 0o700)  # our dir and mode: only the peer's uid can tell
        try:
            r = run_cli("search", "my private query", "--json", env=_fallback_env(tmp))
        finally:
            listener.wait(30)
        assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
        assert "planted.md" not in r.stdout
        err = json.loads(r.stdout or r.stderr)["error"]
        assert err["code"] == "PERMISSION_DENIED"
        assert ("uid 65534" in err["message"]) and "nothing was sent" in err["message"]
        assert not os.path.exists(record) or b"private" not in open(record, "rb").read()
        if owner == "ours":  # it was asked once (who it is), and not tried again
            assert open(record + ".again").read() == "0"
    finally:
        subprocess.run(["rm", "-rf", tmp])


def test_runtime_dir_open_to_others_is_refused(run_cli):
    tmp = tempfile.mkdtemp(prefix="gno-open-", dir="/tmp")
    try:
        os.mkdir(os.path.join(tmp, f"gno-{os.getuid()}"), 0o700)
        os.chmod(os.path.join(tmp, f"gno-{os.getuid()}"), 0o755)
        r = run_cli("status", "--json", env=_fallback_env(tmp))
        assert r.returncode == 2
        err = json.loads(r.stdout or r.stderr)["error"]
        assert err["code"] == "PERMISSION_DENIED" and "mode 755" in err["message"]
    finally:
        subprocess.run(["rm", "-rf", tmp])


# --- 5, 8. malformed envelopes ---------------------------------------------------------------


def _status_body(**fields) -> bytes:
    msg = {"jsonrpc": "2.0", "id": 1, "method": "status", "gno": 1}
    msg.update(fields)
    return json.dumps(msg).encode()


DEEP = b"[" * 5000 + b"]" * 5000


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"status","params":' + DEEP + b"}",
        b'{"jsonrpc":"2.0","id":' + DEEP + b',"method":"status"}',
        b'{"jsonrpc":"2.0","id":1,"method":' + DEEP + b"}",
        b'{"jsonrpc":"2.0","id":1,"method":"status","extra":' + DEEP + b"}",
        b'{"jsonrpc":"2.0","id":1,"method":"search","params":{"query":' + DEEP + b"}}",
        DEEP,
        b'{"jsonrpc":"2.0","id":1,"method":"st\xffatus"}',
        b'{"jsonrpc":"2.0","id":"a\xfe","method":"status"}',
        b'{"jsonrpc":"2.\xff","id":1,"method":"status"}',
        b'{"jsonrpc":"2.0","id":1,"method":"search","params":{"query":"caf\xff"}}',
        _status_body(jsonrpc="1.0"),
        _status_body(jsonrpc="2"),
        _status_body(jsonrpc=""),
        _status_body(jsonrpc=2.0),
        json.dumps({"id": 1, "method": "status", "gno": 1}).encode(),
    ],
    ids=[
        "params",
        "id",
        "method",
        "extra",
        "query",
        "bare",
        "utf8-method",
        "utf8-id",
        "utf8-jsonrpc",
        "utf8-query",
        "v1.0",
        "v2",
        "empty",
        "number",
        "missing",
    ],
)
def test_malformed_envelopes_get_an_error_reply(daemon, body):
    with daemon.connect() as c:
        c.send_body(body)
        err = error_of(c.recv())
        assert err["code"] in (wire.PARSE_ERROR, wire.INVALID_REQUEST, wire.INVALID_PARAMS), err
        assert "result" in c.call("status", req_id=2)  # the connection survives


@pytest.mark.parametrize("version", ["1.0", "2", "", None])
def test_jsonrpc_member_must_be_2_0(daemon, version):
    fields = {"jsonrpc": version} if version is not None else {}
    body = json.dumps({"id": 7, "method": "status", "gno": 1, **fields}).encode()
    if version is None:
        body = json.dumps({"id": 7, "method": "status", "gno": 1}).encode()
    with daemon.connect() as c:
        c.send_body(body)
        assert error_of(c.recv())["code"] == wire.INVALID_REQUEST


# --- 6. bad references and patterns ----------------------------------------------------------


@pytest.fixture(scope="module")
def indexed(shared_daemon, tmp_path_factory):
    root = tmp_path_factory.mktemp("refs")
    (root / "a.md").write_text("# A\n\nalpha\n")
    cli_json("collection", "add", str(root), "--name", "refs", "--json", env=shared_daemon.env)
    return shared_daemon


@pytest.mark.parametrize(
    "method,params,code",
    [
        ("get", {"ref": "#²"}, wire.NOT_FOUND),
        ("get", {"ref": "#99999999999999999999"}, wire.NOT_FOUND),
        ("get", {"ref": "refs/a.md:²"}, wire.NOT_FOUND),
        ("get", {"ref": "refs/a\x00.md"}, wire.INVALID_PARAMS),
        ("get", {"ref": "/tmp/a\x00b"}, wire.INVALID_PARAMS),
        ("multi_get", {"refs": ["#³", "refs/\x00"]}, wire.INVALID_PARAMS),
        ("multi_get", {"pattern": "\\"}, wire.INVALID_PARAMS),
    ],
)
def test_bad_refs_are_user_errors(indexed, method, params, code):
    reply = indexed.rpc(method, params)
    err = error_of(reply)
    assert err["code"] == code, err
    assert err["code"] != wire.INTERNAL_ERROR


@pytest.mark.parametrize(
    "query",
    ["acgt" * 8000, "a_" * 16000, '"' + "the " * 7999 + '"'],
    ids=["one word (a pasted sequence)", "a name of 16,000 words", "a phrase of 8,000"],
)
def test_the_longest_queries_are_answered_at_once(indexed, query):
    """Queries as long as a query may be (32,000 characters): each step that read one
    long word again from each of its letters (the language guess: 21 s), built its
    spelling's edits (24 GB, until the kernel ended the search), matched a phrase of
    thousands of words (12 s), or took a name's words one by one for a macro's prefix
    (`--symbol`, 3.7 s) is bounded. The timeout is a guard, not a measure: these answer
    in milliseconds."""
    for symbol in (False, True):
        reply = indexed.rpc("search", {"query": query, "limit": 10, "symbol": symbol}, timeout=10)
        if symbol and query.startswith('"'):
            assert error_of(reply)["code"] == wire.INVALID_QUERY  # --symbol takes one name
            continue
        assert reply["result"]["hits"] == []


def test_superscript_docid_is_not_a_docid_but_a_real_one_works(indexed):
    doc = indexed.result("get", {"ref": "refs/a.md"})
    assert indexed.result("get", {"ref": f"#{doc['docid']}"})["path"] == "a.md"
    assert indexed.result("multi_get", {"refs": ["#²"]})["missing"] == ["#²"]


# --- 7. huge files are refused before they are read -------------------------------------------


def _peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads peak RSS from /proc")
def test_a_huge_file_is_refused_without_reading_it(daemon, tmp_path):
    root = tmp_path / "big"
    root.mkdir()
    (root / "small.md").write_text("# Small\n\nsmallword\n")
    with open(root / "huge.txt", "wb") as f:
        f.truncate(1024**3)  # sparse: 1 GiB of zeros that costs no disk
    before = _peak_rss_kib(daemon.proc.pid)
    stats = cli_json("collection", "add", str(root), "--name", "big", "--json", env=daemon.env)["collections"][0]
    assert stats["added"] == 1 and stats["errors"] == 1
    err = errors_by_path(daemon, "big")["huge.txt"]
    assert err["code"] == "TOO_LARGE" and "1024 MiB" in err["reason"]
    assert _peak_rss_kib(daemon.proc.pid) - before < 100 * 1024  # not 1 GiB


# --- 9. a full disk ------------------------------------------------------------------------------


@pytest.mark.skipif(not ROOT, reason="needs root to mount a small tmpfs as the index's disk")
def test_full_disk_is_reported_and_indexing_resumes(tmp_path):
    home = tempfile.mkdtemp(prefix="gno-full-", dir="/tmp")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", home]).returncode != 0:
        os.rmdir(home)
        pytest.skip("cannot mount a tmpfs here")
    d = None
    try:
        env = make_env(home)
        d = start_gnod(env)
        root = tmp_path / "docs"
        root.mkdir()
        (root / "old.md").write_text("# Old\n\noldword\n")
        cli_json("collection", "add", str(root), "--name", "docs", "--json", env=env)
        filler = os.path.join(home, "filler")
        with open(filler, "wb", buffering=0) as f:  # unbuffered: close() has nothing left to fail on
            try:
                while True:
                    f.write(b"\0" * 65536)
            except OSError:
                pass
        (root / "new.md").write_text("# New\n\nnewword " + "lorem ipsum dolor sit amet " * 20000 + "\n")

        def reported() -> bool:
            return bool(d.result("status").get("storage_error"))

        assert wait_until(reported, 20)
        st = d.result("status")
        assert "full" in st["storage_error"] and home in st["storage_error"]
        fresh = [f for f in st["freshness"] if f["collection"] == "docs"][0]
        assert "full" in (fresh["last_error"] or "")
        assert hits(env, "oldword") == ["old.md"]  # searches keep working
        doc = cli_json("doctor", "--json", env=env, expect=2)
        assert any("full" in json.dumps(c) for c in doc["checks"])
        os.unlink(filler)
        assert wait_until(lambda: hits(env, "newword") == ["new.md"], 30)
        assert d.result("status").get("storage_error") is None
    finally:
        if d is not None:
            d.stop()
        subprocess.run(["umount", "-l", home])
        os.rmdir(home)


# --- 10. permissions -----------------------------------------------------------------------------


def test_everything_gnod_writes_is_private(gno_home, tmp_path):
    env = make_env(gno_home)
    paths = paths_for(env)
    for dname in ("data", "state", "config"):
        os.makedirs(os.path.join(gno_home, dname), mode=0o755)
        os.chmod(os.path.join(gno_home, dname), 0o755)  # as an older gnod left them
    log = os.path.join(gno_home, "state", "gnod.log")
    with open(log, "w") as f:
        f.write("old log\n")
    os.chmod(log, 0o644)
    d = start_gnod(env)
    try:
        root = tmp_path / "docs"
        root.mkdir()
        (root / "a.md").write_text("# A\n\nsecret text\n")
        cli_json("collection", "add", str(root), "--name", "docs", "--json", env=env)
        for dname in (paths.data_dir, paths.state_dir, paths.config_dir, paths.runtime_dir):
            assert stat.S_IMODE(os.stat(dname).st_mode) == 0o700, dname
        files = [paths.db_file, paths.db_file + "-wal", paths.log_file, paths.config_file]
        for fname in files:
            assert os.path.exists(fname), fname
            assert stat.S_IMODE(os.stat(fname).st_mode) == 0o600, fname
    finally:
        d.stop()


# --- 11. symlinks ------------------------------------------------------------------------------


def _symlink_tree(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_rsa").write_text("BEGIN PRIVATE KEY sshsecretmaterial\n")
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    (root / "real.md").write_text("# Real\n\ninsideword\n")
    (root / "sub" / "deep.md").write_text("# Deep\n\ndeepword\n")
    os.symlink(outside / "id_rsa", root / "notes.md")
    os.symlink(root / "real.md", root / "alias.md")
    os.symlink(root, root / "sub" / "loop")
    return root


def test_symlinks_are_not_followed_by_default(daemon, tmp_path):
    root = _symlink_tree(tmp_path)
    cli_json("collection", "add", str(root), "--name", "repo", "--json", env=daemon.env)
    assert hits(daemon.env, "sshsecretmaterial") == []
    assert hits(daemon.env, "insideword") == ["real.md"]
    errs = errors_by_path(daemon, "repo")
    # The link out is reported; the links inside are left out unreported (their targets
    # are indexed as themselves), as git and ripgrep do.
    assert errs["notes.md"]["code"] == "OUTSIDE_ROOT"
    assert "alias.md" not in errs and "sub/loop" not in errs
    assert len(errs) == 1
    r = daemon.rpc("ask", {"question": "sshsecretmaterial", "no_answer": True})
    assert "sshsecretmaterial" not in json.dumps(r)


def test_follow_symlinks_stays_inside_the_collection(daemon, tmp_path):
    root = _symlink_tree(tmp_path)
    cli_json("collection", "add", str(root), "--name", "repo", "--follow-symlinks", "--json", env=daemon.env)
    assert hits(daemon.env, "sshsecretmaterial") == []
    assert sorted(hits(daemon.env, "insideword")) == ["alias.md", "real.md"]
    errs = errors_by_path(daemon, "repo")
    assert errs["notes.md"]["code"] == "OUTSIDE_ROOT"
    assert errs["sub/loop"]["code"] == "LOOP"
    listed = cli_json("collection", "list", "--json", env=daemon.env)["collections"]
    assert listed[0]["follow_symlinks"] is True


# --- 12. slow and numerous connections -----------------------------------------------------------


def test_a_half_sent_frame_times_out(daemon):
    with daemon.connect(timeout=wire.FRAME_TIMEOUT_S + 10) as c:
        c.send_bytes(b"\x00\x00")  # half a header, then nothing
        t0 = time.monotonic()
        err = error_of(c.recv())
        assert err["code"] == wire.INVALID_REQUEST and "incomplete frame" in err["message"]
        assert c.at_eof()
        assert time.monotonic() - t0 >= wire.FRAME_TIMEOUT_S - 1
    # An idle connection between frames is not cut.
    with daemon.connect() as idle:
        time.sleep(1)
        assert "result" in idle.call("status")


def test_connections_past_the_cap_are_refused_with_busy(daemon):
    conns = []
    try:
        while len(conns) < wire.MAX_CONNECTIONS:
            try:
                conns.append(daemon.connect())
            except BlockingIOError:  # the listen backlog is full: let gnod accept
                time.sleep(0.05)
        conns[-1].call("status")  # all accepted and registered
        extra = RawConn(daemon.socket_path)
        err = error_of(extra.recv())
        assert err["code"] == wire.BUSY and str(wire.MAX_CONNECTIONS) in err["message"]
        assert err["data"]["details"] == {"retry_after_ms": wire.CONNECTIONS_RETRY_MS}  # when to try again
        assert extra.at_eof()
        extra.close()
    finally:
        for c in conns:
            c.close()
    assert wait_until(lambda: "result" in daemon.rpc("status"), 10)


# --- crashes: kill -9 in a loop ----------------------------------------------------------------


def test_ten_sigkills_mid_ingest_lose_and_duplicate_nothing(gno_home, tmp_path):
    """gnod is SIGKILLed ten times while it indexes, with edits, deletes and renames
    between the kills; then the index holds exactly the files, each once, intact."""
    import random

    from test_pipeline import check_invariants

    from gnod.store.db import connect

    rng = random.Random(12)
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(1500):
        (root / f"f{i:04d}.md").write_text(f"# File {i}\n\n" + f"word{i} and more words here. " * 20 + "\n")
    env = make_env(gno_home)
    paths = paths_for(env)
    d = start_gnod(env)
    cli_json("collection", "add", str(root), "--name", "docs", "--no-index", "--json", env=env)
    d.stop()
    for k in range(10):
        d = start_gnod(env)  # the start-up pass indexes what is missing or changed
        time.sleep(rng.uniform(0.1, 0.8))
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        d.stop()
        names = sorted(p.name for p in root.iterdir())
        for name in rng.sample(names, 5):
            (root / name).write_text(f"# Rewritten {k}\n\nrewritten{k} text\n")
        for name in rng.sample(names, 3):
            (root / name).unlink(missing_ok=True)
        for name in rng.sample(names, 3):
            if (root / name).exists():
                os.replace(root / name, root / f"moved-{k}-{name}")
    d = start_gnod(env)
    try:
        cli_json("update", "--json", env=env)
        on_disk = sorted(p.name for p in root.iterdir())
        listed = d.result("ls", {"collection": "docs", "limit": 10000})
        indexed = sorted(e["path"] for e in listed["entries"])
        assert listed["total"] == len(on_disk)
        assert indexed == on_disk
    finally:
        d.stop()
    db = connect(paths.db_file, readonly=True)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    check_invariants(db)
