"""gnod's process lifecycle: runtime dir, single instance, stale files, signals, peers,
and gnoctl's daemon control (status / start / stop / restart / autostart)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time

import pytest

from conftest import (
    RawConn,
    lock_is_free,
    make_env,
    paths_for,
    socket_accepts,
    start_gnod,
    wait_until,
    write_tree,
)
from gnod import wire
from gnod.wire import peer_uid

pytestmark = pytest.mark.timeout(90)


def mode(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def read_pid_file(daemon) -> int:
    with open(daemon.paths.pid_file) as f:
        return int(f.read())


# --- runtime dir, single instance, stale files -------------------------------------------


def test_runtime_dir_and_socket_are_private(daemon):
    run = daemon.paths.runtime_dir
    assert mode(run) == 0o700
    assert stat.S_ISSOCK(os.stat(daemon.paths.socket_path).st_mode)
    assert mode(daemon.paths.socket_path) == 0o600
    assert read_pid_file(daemon) == daemon.proc.pid
    assert not lock_is_free(daemon.paths)


def test_existing_runtime_dir_is_tightened(env):
    run = os.path.join(env["GNO_HOME"], "run")
    os.makedirs(run)
    os.chmod(run, 0o755)
    d = start_gnod(env)
    try:
        assert mode(run) == 0o700
    finally:
        assert d.stop() == 0


def test_second_gnod_refused_first_keeps_serving(daemon):
    second = start_gnod(daemon.env, wait=False)
    try:
        code = second.proc.wait(20)
    finally:
        second.stop()
    assert code != 0
    err = second.stderr()
    assert "already running" in err
    assert str(daemon.proc.pid) in err
    # The loser must not have removed the winner's socket or pid file.
    assert daemon.alive()
    assert os.path.exists(daemon.paths.socket_path)
    assert read_pid_file(daemon) == daemon.proc.pid
    assert daemon.result("status")["pid"] == daemon.proc.pid


def test_restart_after_sigkill_cleans_stale_files(env, run_cli):
    first = start_gnod(env)
    first.proc.kill()
    first.proc.wait(10)
    first.stop()
    paths = first.paths
    # SIGKILL leaves a dead socket and a pid file behind, dead within moments: a process
    # gnod was starting (its search process) holds the listening socket from its fork
    # until its exec, which took long enough on a loaded machine for a connection to get in.
    assert os.path.exists(paths.socket_path)
    assert os.path.exists(paths.pid_file)
    assert wait_until(lambda: not socket_accepts(paths.socket_path), 5)
    assert lock_is_free(paths)
    r = run_cli("daemon", "status", env=env)
    assert r.returncode == wire.EXIT_NOT_RUNNING, r

    second = start_gnod(env)
    try:
        assert second.result("status")["pid"] == second.proc.pid
        assert read_pid_file(second) == second.proc.pid
    finally:
        assert second.stop() == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_exits_zero_and_removes_files(env, sig):
    d = start_gnod(env)
    d.proc.send_signal(sig)
    assert d.proc.wait(10) == 0, d.stderr()
    d.stop()
    assert not os.path.exists(d.paths.socket_path)
    assert not os.path.exists(d.paths.pid_file)
    assert lock_is_free(d.paths)


def test_sigterm_with_an_idle_client_connected(env):
    d = start_gnod(env)
    with RawConn(d.paths.socket_path) as idle:
        assert "result" in idle.call("status")
        t0 = time.monotonic()
        d.proc.terminate()
        assert d.proc.wait(10) == 0, d.stderr()
        assert time.monotonic() - t0 < 5
        assert idle.at_eof()
    d.stop()
    assert not os.path.exists(d.paths.socket_path)


def test_shutdown_rpc(env):
    d = start_gnod(env)
    with RawConn(d.paths.socket_path) as c:
        reply = c.call("shutdown", req_id="bye")
    assert reply["id"] == "bye"
    assert reply["result"]["ok"] is True
    assert d.proc.wait(10) == 0, d.stderr()
    d.stop()
    assert not os.path.exists(d.paths.socket_path)
    assert not os.path.exists(d.paths.pid_file)
    assert not socket_accepts(d.paths.socket_path)


def test_socket_path_too_long(gno_home):
    home = os.path.join(gno_home, "x" * 110)
    os.makedirs(home)
    env = make_env(home)
    d = start_gnod(env, wait=False)
    try:
        assert d.proc.wait(20) == 2
    finally:
        d.stop()
    assert "longer than" in d.stderr()


def test_invalid_config_prevents_start(env):
    cfg = os.path.join(env["GNO_HOME"], "config", "config.toml")
    os.makedirs(os.path.dirname(cfg))
    with open(cfg, "w") as f:
        f.write('[[collections]]\nname = "x"\npaht = "/tmp"\n')
    d = start_gnod(env, wait=False)
    try:
        assert d.proc.wait(20) == 78  # EX_CONFIG
    finally:
        d.stop()
    err = d.stderr()
    assert "config error" in err and "paht" in err


def test_an_index_a_newer_gno_wrote_is_refused_at_once_and_said_plainly(env, run_cli):
    """gnod exited 1 (as when another gnod holds the lock), its reason only in a traceback
    in gnod.out: gnoctl waited its whole 30 s for a gnod that had gone, then pointed at
    that file. Now gnod says why in one line, in the log too, and exits 65; gnoctl says
    it as VERSION_MISMATCH at once; systemd does not retry it; nothing is changed."""
    from conftest import migrated_db

    paths = paths_for(env)
    os.makedirs(paths.data_dir, mode=0o700)
    conn = migrated_db(paths.db_file)
    conn.execute("INSERT INTO migrations(name, applied_at) VALUES ('0999_from_the_future', 0)")
    conn.close()
    d = start_gnod(env, wait=False)
    try:
        assert d.proc.wait(20) == wire.GNOD_EXIT_INDEX_TOO_NEW == 65
    finally:
        d.stop()
    said = "was written by a newer gno (migrations this one lacks: 0999_from_the_future)"
    assert said in d.stderr() and "Traceback" not in d.stderr()
    with open(paths.log_file) as f:
        assert said in f.read()
    started = time.monotonic()
    r = run_cli("search", "anything", "--json", env=env)
    assert time.monotonic() - started < 10 and r.returncode == 2, r
    error = json.loads(r.stdout)["error"]
    assert error["code"] == "VERSION_MISMATCH" and said in error["message"], error
    assert lock_is_free(paths) and not os.path.exists(paths.socket_path)
    with open(
        os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "systemd", "gnod.service")
    ) as f:
        assert "RestartPreventExitStatus=65 78" in f.read()


def test_a_gnod_that_holds_the_index_and_does_not_listen_yet_is_waited_for(env, run_cli):
    """A first start after an upgrade migrates the index before gnod listens (15 s for the
    kernel tree's): gnoctl said "gnod is not running", and a search gave up after 30 s.
    Here a process holds gnod's lock and pid file without listening, as such a gnod does,
    then goes: it is said to be starting, and a search waits for it (not for 30 s, nor
    starting another, which would lose the lock to it)."""
    paths = paths_for(env)
    os.makedirs(paths.runtime_dir, mode=0o700, exist_ok=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600); fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "open(sys.argv[2], 'w').write(str(os.getpid())); print('held', flush=True); time.sleep(3)",
            paths.lock_file,
            paths.pid_file,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        r = run_cli("status", "--no-autostart", "--json", env=env)
        error = json.loads(r.stdout)["error"]
        assert r.returncode == 3 and f"gnod (pid {holder.pid}) is starting" in error["message"], r
        r = run_cli("daemon", "status", "--json", env=env)
        assert r.returncode == 3 and json.loads(r.stdout)["starting_pid"] == holder.pid
        started = time.monotonic()
        r = run_cli("search", "anything", "--json", env=env)
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert r.returncode == 3 and 1.0 < waited < 20, (waited, r)
    assert f"gnod (pid {holder.pid}) stopped while starting" in json.loads(r.stdout)["error"]["message"]
    r = run_cli("daemon", "status", "--json", env=env)  # its pid file left behind names no gnod
    assert "starting_pid" not in json.loads(r.stdout)


# --- peers -------------------------------------------------------------------------------


def test_peer_uid_on_socketpair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        assert peer_uid(a) == os.getuid()
        assert peer_uid(b) == os.getuid()
    finally:
        a.close()
        b.close()


def _status_as(uid: int, socket_path: str) -> dict:
    """Fork; the child drops to `uid`, sends `status` and reports what it got back."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: no pytest machinery from here on, always os._exit
        out: dict = {}
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            out["uid"] = os.getuid()
            with RawConn(socket_path, timeout=10) as c:
                try:
                    c.send("status")
                except OSError:
                    pass
                try:
                    out["reply"] = c.recv()
                except (EOFError, OSError):
                    out["reply"] = None
                out["eof"] = c.at_eof()
        except BaseException as e:
            out["exception"] = repr(e)
        finally:
            os.write(w, json.dumps(out).encode())
            os._exit(0)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks))


@pytest.mark.skipif(
    not hasattr(os, "getuid") or os.getuid() != 0,
    reason="needs root to run a client as another uid (fork + setuid 65534)",
)
def test_other_uid_is_refused(daemon):
    # Open the path (dirs + socket) to everyone, so only gnod's own peer check can refuse.
    os.chmod(daemon.env["GNO_HOME"], 0o711)
    os.chmod(daemon.paths.runtime_dir, 0o711)
    os.chmod(daemon.paths.socket_path, 0o666)
    out = _status_as(65534, daemon.paths.socket_path)
    assert "exception" not in out, out
    assert out["uid"] == 65534
    reply = out["reply"]
    assert reply is not None and "result" not in reply, reply
    assert "permission denied" in reply["error"]["message"]
    assert out["eof"] is True
    # Our own uid is still served.
    assert daemon.result("status")["pid"] == daemon.proc.pid
    with open(daemon.paths.log_file) as f:
        assert "refused a connection from uid 65534" in f.read()


# --- shutdown while indexing ---------------------------------------------------------------


# Ingest runs at ~5,000 docs/s here: the run must outlast the round trip of a shutdown
# request even on a fast machine (2,500 files once finished before the stop landed).
LONG_INDEX_FILES = 15000


def _start_long_index(daemon, tmp_path, n: int = LONG_INDEX_FILES) -> RawConn:
    """Register a collection of n small files and start indexing it (seconds of work; the
    stop lands at the next batch commit); returns the connection awaiting the reply."""
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(n):
        (folder / f"f{i:05d}.md").write_text(f"# File {i}\n\nwombat number {i} sits on a log in the garden\n")
    assert "result" in daemon.rpc("collection.add", {"name": "many", "path": str(folder), "index": False})
    conn = RawConn(daemon.paths.socket_path, timeout=30)
    conn.send("index", {"collection": "many"}, req_id="idx")
    assert wait_until(lambda: daemon.result("status")["job"]["running"], 10, 0.005), "index never started"
    return conn


def test_shutdown_during_index_stops_promptly_and_keeps_work(daemon, tmp_path):
    conn = _start_long_index(daemon, tmp_path)
    with conn:
        t0 = time.monotonic()
        assert daemon.result("shutdown")["ok"] is True
        reply = conn.recv_reply("idx")
        assert "error" in reply, "an index cut short by shutdown must not report success"
        assert wire.exit_code_for(reply["error"]["code"]) == wire.EXIT_ERROR
    assert daemon.proc.wait(10) == 0, daemon.stderr()
    assert time.monotonic() - t0 < 5
    daemon.stop()
    # Done so far is kept: a new daemon sees the committed part of the run.
    again = start_gnod(daemon.env)
    try:
        docs = again.result("status")["documents"]
        assert 0 < docs < LONG_INDEX_FILES
    finally:
        assert again.stop() == 0


def test_shutdown_during_index_reports_cancelled(daemon, tmp_path):
    # Regression: pipeline.Cancelled used to surface as INTERNAL ("internal error: Cancelled").
    conn = _start_long_index(daemon, tmp_path)
    with conn:
        daemon.result("shutdown")
        reply = conn.recv_reply("idx")
    assert reply["error"]["code"] == wire.CANCELLED, reply
    assert reply["error"]["data"]["name"] == "CANCELLED"
    assert daemon.proc.wait(10) == 0
    with open(daemon.paths.log_file) as f:
        assert "Traceback" not in f.read()


# --- gnoctl daemon control ------------------------------------------------------------------


def test_daemon_status_when_not_running(env, run_cli):
    r = run_cli("daemon", "status", env=env)
    assert r.returncode == 3, r
    r = run_cli("daemon", "status", "--json", env=env)
    assert r.returncode == 3
    assert json.loads(r.stdout) == {"running": False, "socket": os.path.join(env["GNO_HOME"], "run", "gnod.sock")}
    assert lock_is_free(paths_for(env)), "status must not start gnod"


@pytest.mark.parametrize(
    "how",
    ["env", "flag"],
)
def test_no_autostart(env, run_cli, how):
    args = ["search", "foo"]
    if how == "env":
        env = {**env, "GNO_NO_AUTOSTART": "1"}
    else:
        args.append("--no-autostart")
    r = run_cli(*args, env=env)
    assert r.returncode == 3, r
    r = run_cli(*args, "--json", env=env)
    assert r.returncode == 3, r
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "DAEMON_NOT_RUNNING"
    assert err["message"] and isinstance(err["details"], dict)
    # Human format: the message goes to stderr, nothing on stdout.
    r = run_cli(*args, "--csv", env=env)
    assert r.returncode == 3 and r.stdout == "" and "not running" in r.stderr
    assert not os.path.exists(os.path.join(env["GNO_HOME"], "run", "gnod.sock"))


def test_search_autostarts_the_daemon(env, run_cli):
    paths = paths_for(env)
    r = run_cli("search", "foo", "--json", env=env)
    assert r.returncode == 1, r  # started, searched, nothing matched
    assert json.loads(r.stdout)["hits"] == []
    assert socket_accepts(paths.socket_path)
    st = json.loads(run_cli("daemon", "status", "--json", env=env).stdout)
    assert st["running"] is True
    # The autostarted daemon is detached: it outlives gnoctl and logs to state/gnod.out.
    assert os.path.exists(os.path.join(env["GNO_HOME"], "state", "gnod.out"))
    r = run_cli("daemon", "stop", "--json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout) == {"stopped": True}
    assert wait_until(lambda: lock_is_free(paths), 10)


def test_gnod_started_in_a_folder_of_python_files_imports_none_of_them(env, run_cli, tmp_path):
    """`python -m` puts the working directory first on the import path: gnod started by a
    gnoctl run in a cloned repository imported that repository's modules (its `gnod/`,
    or an `apsw.py`), and so did its converter. It imports only gno's own."""
    from test_convert import make_docx

    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("apsw", "markitdown", "csv"):  # csv: the converter's, before it has gnod's path
        (repo / f"{name}.py").write_text(f"open({str(tmp_path / name)!r}, 'w').close()\nraise ImportError('not gno')\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.docx").write_bytes(make_docx())
    gnoctl = [sys.executable, "-P", "-m", "gnoctl.main"]  # gnod's imports, not this one's
    r = subprocess.run([*gnoctl, "collection", "add", str(docs), "--json"], cwd=repo, env=env, capture_output=True)
    assert r.returncode == 0, r.stderr
    hits = json.loads(run_cli("search", "revenue", "--json", env=env).stdout)["hits"]
    assert [h["path"] for h in hits] == ["report.docx"]
    assert not [name for name in ("apsw", "markitdown", "csv") if os.path.exists(tmp_path / name)]
    run_cli("daemon", "stop", env=env)


def test_a_search_that_starts_gnod_sees_what_changed_while_it_was_down(env, run_cli, tmp_path):
    """It searched before gnod's scan at start had indexed the changes: no match (exit 1),
    which `gnoctl search X && …` in a script takes for an answer."""
    paths = paths_for(env)
    root = write_tree(
        str(tmp_path / "notes"), {f"n{i:04d}.md": f"# Note {i}\n\nplain words {i}\n" for i in range(3000)}
    )
    r = run_cli("collection", "add", root, "--name", "notes", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert run_cli("daemon", "stop", "--json", env=env).returncode == 0
    assert wait_until(lambda: lock_is_free(paths), 10)
    with open(os.path.join(root, "n2999.md"), "a") as f:
        f.write("\nwritten while gnod was down: quokka\n")
    try:
        r = run_cli("search", "quokka", "--files", env=env)
        assert r.returncode == 0 and r.stdout.strip().endswith("n2999.md"), r.stdout + r.stderr
    finally:
        run_cli("daemon", "stop", env=env)
        wait_until(lambda: lock_is_free(paths), 10)


def _write_broken_config(env) -> None:
    cfg = os.path.join(env["GNO_HOME"], "config", "config.toml")
    os.makedirs(os.path.dirname(cfg))
    with open(cfg, "w") as f:
        f.write('[[collections]]\nname = "x"\npaht = "/tmp"\n')


def test_autostart_with_broken_config_reports_gnods_error(env, run_cli):
    _write_broken_config(env)
    r = run_cli("search", "foo", "--json", env=env)
    assert r.returncode != 0
    err = json.loads(r.stdout)["error"]
    assert "paht" in err["message"]
    assert lock_is_free(paths_for(env))


def test_autostart_with_broken_config_is_a_config_error(env, run_cli):
    _write_broken_config(env)
    r = run_cli("search", "foo", "--json", env=env)
    assert r.returncode == 2
    assert json.loads(r.stdout)["error"]["code"] == "CONFIG_ERROR"


def test_concurrent_autostart(env):
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "gnoctl.main", "search", "foo", "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [(p.wait(60), *p.communicate()) for p in procs]
    for code, out, err in results:
        assert code == 1, (out, err)  # no match in an empty index
        assert json.loads(out)["hits"] == []
    # Exactly one daemon won; the others exited with "already running".
    paths = paths_for(env)
    assert not lock_is_free(paths)
    with RawConn(paths.socket_path) as c:
        pid = c.call("status")["result"]["pid"]
    with open(paths.pid_file) as f:
        assert int(f.read()) == pid


def test_a_client_that_lives_on_keeps_no_zombie_of_the_gnod_it_started(env):
    """`gnoctl web` started gnod (its child), and after `daemon stop` kept it as
    `[python] <defunct>` for as long as the page was served."""
    script = (
        "import sys, time\n"
        "from gnoctl.client import Client\n"
        "c = Client(autostart=True)\n"
        "print(c.call('status')['pid'], flush=True)\n"
        "sys.stdin.readline()\n"
    )
    client = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        pid = int(client.stdout.readline())
        with RawConn(paths_for(env).socket_path) as c:
            c.call("shutdown")

        def state() -> str | None:
            try:
                with open(f"/proc/{pid}/status") as f:
                    return next(line.split()[1] for line in f if line.startswith("State:"))
            except FileNotFoundError:
                return None  # reaped: gone

        assert wait_until(lambda: state() is None, 30.0), state()
    finally:
        client.communicate("\n", timeout=30)


def test_autostart_waits_for_a_race_winner_that_is_not_listening_yet(env):
    # The other side of the race: gnoctl's gnod finds the lock taken ("already running")
    # before the winner has bound its socket. Here the test holds the lock, then hands
    # over to a real gnod; gnoctl must wait for it rather than report a failed start.
    paths = paths_for(env)
    os.makedirs(paths.runtime_dir, mode=0o700)
    fd = os.open(paths.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    log = os.path.join(paths.state_dir, "gnod.out")
    cli = subprocess.Popen(
        [sys.executable, "-m", "gnoctl.main", "search", "foo", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lost = wait_until(lambda: os.path.exists(log) and "already running" in open(log).read(), 20)
        assert lost, "gnoctl's gnod did not run into the held lock"
        time.sleep(0.3)  # gnoctl keeps polling; the old client had already failed by now
        assert cli.poll() is None, cli.communicate()
        os.close(fd)
        fd = None
        winner = start_gnod(env)
        out, err = cli.communicate(timeout=30)
    finally:
        if fd is not None:
            os.close(fd)
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.returncode == 1, (out, err)  # no match in an empty index
    assert json.loads(out)["hits"] == []
    assert winner.stop() == 0


_SLOW_GNOD_SITECUSTOMIZE = """
import os, sys, time
if os.environ.get("GNO_TEST_SLOW_GNOD") and "gnod.server.main" in getattr(sys, "orig_argv", []):
    time.sleep(float(os.environ["GNO_TEST_SLOW_GNOD"]))
"""


_STUCK_GNOD_SITECUSTOMIZE = """
import fcntl, os, sys, time
if os.environ.get("GNO_TEST_STUCK_GNOD") and "gnod.server.main" in getattr(sys, "orig_argv", []):
    fd = os.open(os.environ["GNO_TEST_LOCK"], os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    open(os.environ["GNO_TEST_PID"], "w").write(str(os.getpid()))
    time.sleep(60)
"""


def test_an_autostarted_gnod_that_never_listens_is_waited_for_and_said_to_be_stuck(env, tmp_path, monkeypatch):
    """A gnod that took the index (its lock, its pid file) is waited for up to
    STARTING_WAIT_S (a migration), not the start's 30 s: the message said "did not start
    within 30 s" after a 10-minute wait. It says how long, and that it holds the index."""
    from gnoctl import client

    stuck = tmp_path / "stuck"
    stuck.mkdir()
    (stuck / "sitecustomize.py").write_text(_STUCK_GNOD_SITECUSTOMIZE)
    paths = paths_for(env)
    os.makedirs(paths.runtime_dir, mode=0o700, exist_ok=True)
    for key, value in {
        **env,
        "PYTHONPATH": str(stuck),
        "GNO_TEST_STUCK_GNOD": "1",
        "GNO_TEST_LOCK": paths.lock_file,
        "GNO_TEST_PID": paths.pid_file,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(client, "STARTING_WAIT_S", 2.0)
    started = time.monotonic()
    try:
        with pytest.raises(client.DaemonError) as raised:
            client.start_daemon(paths, timeout=0.5)
        waited = time.monotonic() - started
        pid = raised.value.details["pid"]
        assert raised.value.message.startswith(f"gnod (pid {pid}) took the index but has not listened within 2 s")
        assert 1.9 < waited < 10
    finally:
        if os.path.exists(paths.pid_file):
            os.kill(int(open(paths.pid_file).read()), signal.SIGKILL)


def test_autostarted_gnod_does_not_outlive_a_lost_race(env, tmp_path):
    # Deterministic version of a race between two autostarts: the gnod that gnoctl spawns
    # is held back for 1 s (sitecustomize, test-only), another gnod answers meanwhile.
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text(_SLOW_GNOD_SITECUSTOMIZE)
    slow_env = {**env, "PYTHONPATH": str(slow), "GNO_TEST_SLOW_GNOD": "1.0"}
    paths = paths_for(env)

    cli = subprocess.Popen(
        [sys.executable, "-m", "gnoctl.main", "search", "foo", "--json"],
        env=slow_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # gnoctl creates state/gnod.out right before spawning its gnod.
        assert wait_until(lambda: os.path.exists(os.path.join(paths.state_dir, "gnod.out")), 10)
        other = start_gnod(env)  # the race winner
        out, err = cli.communicate(timeout=30)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.returncode == 1, (out, err)  # answered: no match in an empty index
    assert other.stop() == 0  # the daemon that answered goes away…
    # Give the held-back child time to reach the lock (returns early if it takes it).
    took_over = wait_until(lambda: not lock_is_free(paths), 2.0)
    assert not took_over, "a gnod that gnoctl spawned took over after the answering daemon stopped"


def test_daemon_start_stop_restart(env, run_cli):
    paths = paths_for(env)
    r = run_cli("daemon", "start", "--json", env=env)
    assert r.returncode == 0, r
    started = json.loads(r.stdout)
    assert started["running"] is True and started["started"] is True
    assert started["socket"] == paths.socket_path
    pid1 = started["pid"]
    assert socket_accepts(paths.socket_path)

    again = json.loads(run_cli("daemon", "start", "--json", env=env).stdout)
    assert again["running"] is True and again["started"] is False

    r = run_cli("daemon", "status", "--json", env=env)
    assert r.returncode == 0
    st = json.loads(r.stdout)
    assert st["running"] is True and st["pid"] == pid1

    r = run_cli("daemon", "restart", "--json", env=env)
    assert r.returncode == 0, r
    restarted = json.loads(r.stdout)
    assert restarted["stopped"] is True and restarted["started"] is True
    pid2 = restarted["pid"]
    assert pid2 != pid1
    assert json.loads(run_cli("daemon", "status", "--json", env=env).stdout)["pid"] == pid2

    r = run_cli("daemon", "stop", "--json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout) == {"stopped": True}
    assert wait_until(lambda: lock_is_free(paths), 10)
    assert not os.path.exists(paths.socket_path)
    r = run_cli("daemon", "stop", "--json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout) == {"stopped": False}
    assert run_cli("daemon", "status", env=env).returncode == 3


def test_daemon_restart_json_is_one_document(env, run_cli):
    # Regression: restart used to print stop's and start's JSON one after the other.
    r = run_cli("daemon", "restart", "--json", env=env)
    assert r.returncode == 0, r
    msg = json.loads(r.stdout)
    assert msg["stopped"] is False and msg["started"] is True and msg["running"] is True
