"""`gnoctl daemon install|uninstall|logs`: the rendered systemd unit and launchd plist, the
real install in this environment (isolated from any real user session), and the log tail."""

from __future__ import annotations

import configparser
import io
import json
import os
import plistlib
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import _run_cli, lock_is_free, paths_for, start_gnod
from gnoctl import service
from gnod.paths import Paths

pytestmark = pytest.mark.timeout(120)

GNOD = os.path.join(os.path.dirname(sys.executable), "gnod")


def parse_unit(text: str) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.optionxform = str  # systemd keys are case-sensitive
    cp.read_string(text)
    return cp


@pytest.fixture
def svc_env(env, tmp_path) -> dict[str, str]:
    """gnoctl's environment with HOME and XDG_CONFIG_HOME in a tmp dir, and no way to reach a
    real user service manager (no session bus): the tests never touch a real user's services."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = {
        **env,
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_RUNTIME_DIR": str(runtime),
    }
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    return env


# --- the systemd unit --------------------------------------------------------------------


def test_gnod_path_is_the_venv_script():
    assert service.gnod_path() == GNOD


def test_unit_renders_with_the_real_gnod_path():
    cp = parse_unit(service.render_unit(service.gnod_path(), "/srv/gno home"))
    assert cp.sections() == ["Unit", "Service", "Install"]
    s = cp["Service"]
    assert s["Type"] == "simple"
    assert s["ExecStart"] == f'"{GNOD}" --quiet'
    assert s["Environment"] == '"GNO_HOME=/srv/gno home"'
    assert (s["Restart"], s["RestartSec"]) == ("on-failure", "2")
    assert (s["KillSignal"], s["TimeoutStopSec"]) == ("SIGTERM", "30")
    assert {"MemoryHigh", "MemoryMax", "Nice", "IOSchedulingClass"} <= set(s)
    assert cp["Install"]["WantedBy"] == "default.target"
    assert "@" not in service.render_unit(GNOD, "/x").replace("gnoctl daemon", "")


def test_unit_has_no_environment_without_gno_home():
    assert "Environment" not in parse_unit(service.render_unit(GNOD, None))["Service"]


def test_unit_escapes_specifiers_quotes_and_backslashes():
    cp = parse_unit(service.render_unit("/opt/a b %i $HOME/gnod", '/h %h "q" \\ $X'))
    assert cp["Service"]["ExecStart"] == '"/opt/a b %%i $HOME/gnod" --quiet'
    assert cp["Service"]["Environment"] == '"GNO_HOME=/h %%h \\"q\\" \\\\ $X"'


@pytest.mark.parametrize("gnod", ['/opt/a"b/gnod', "/opt/o'brien/gnod", "/opt/a\\b/gnod", "/opt/a\nb/gnod"])
def test_unit_refuses_a_gnod_path_systemd_cannot_run(gnod):
    with pytest.raises(service.ServiceError, match="plainer path"):
        service.render_unit(gnod, None)


@pytest.mark.parametrize("odd", [False, True], ids=["plain", "odd-characters"])
def test_systemd_analyze_verifies_the_unit(tmp_path, odd):
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed (Debian/Ubuntu: apt-get install systemd)")
    gnod, home = GNOD, None
    if odd:  # a gnod and a GNO_HOME whose paths need every kind of escaping systemd allows
        odd_dir = tmp_path / "bin dir %d $x"
        odd_dir.mkdir()
        gnod = str(odd_dir / "gnod")
        shutil.copy2(GNOD, gnod)
        home = str(tmp_path / 'gno home "q" \\ %h $x')
    unit = tmp_path / "units" / service.UNIT_NAME
    unit.parent.mkdir()
    unit.write_text(service.render_unit(gnod, home))
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_RUNTIME_DIR": str(runtime),
    }
    r = subprocess.run(
        [tool, "--man=no", "verify", "--user", str(unit)], env=env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    # Unknown keys and bad escapes are only warnings: none may mention our unit.
    assert service.UNIT_NAME not in r.stderr, r.stderr


# --- the launchd plist -------------------------------------------------------------------


def test_plist_renders_and_round_trips():
    data = service.render_plist(GNOD, "/state/gnod.out", {"GNO_HOME": "/srv/gno <&> home", "TMPDIR": ""})
    p = plistlib.loads(data)
    assert p["Label"] == service.LABEL == "dev.gno.gnod"
    assert p["ProgramArguments"] == [GNOD, "--quiet"]
    assert p["RunAtLoad"] is True
    assert p["KeepAlive"] == {"SuccessfulExit": False}
    assert p["StandardOutPath"] == p["StandardErrorPath"] == "/state/gnod.out"
    assert p["EnvironmentVariables"] == {"GNO_HOME": "/srv/gno <&> home"}
    assert p["ProcessType"] in ("Background", "Adaptive")
    assert b"@" not in data


def test_plist_has_no_environment_when_nothing_is_set():
    p = plistlib.loads(service.render_plist(GNOD, "/state/gnod.out", {}))
    assert "EnvironmentVariables" not in p


# --- gnoctl daemon install / uninstall ---------------------------------------------------


def _tree(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def test_install_print_shows_the_unit_and_writes_nothing(svc_env, tmp_path):
    before = _tree(str(tmp_path))
    r = _run_cli("daemon", "install", "--print", env=svc_env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == service.render_unit(GNOD, svc_env["GNO_HOME"])
    assert parse_unit(r.stdout)["Service"]["Environment"] == f'"GNO_HOME={svc_env["GNO_HOME"]}"'
    r = _run_cli("daemon", "install", "--print", "--json", env=svc_env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["path"] == os.path.join(svc_env["XDG_CONFIG_HOME"], "systemd", "user", "gnod.service")
    assert out["written"] is False and out["content"].startswith("#")
    assert _tree(str(tmp_path)) == before


def test_install_writes_the_unit_then_uninstall_removes_it(svc_env):
    unit = os.path.join(svc_env["XDG_CONFIG_HOME"], "systemd", "user", "gnod.service")
    r = _run_cli("daemon", "install", "--json", env=svc_env)
    out = json.loads(r.stdout)
    if r.returncode == 0:
        assert out["started"] is True and out["path"] == unit
    else:  # no user service manager to talk to (always so here: the tests hide the session bus)
        assert r.returncode == 2, r.stderr
        err = out["error"]
        assert err["code"] == "SERVICE_MANAGER_FAILED"
        assert err["details"]["written"] is True and err["details"]["path"] == unit
        assert "systemctl --user enable --now gnod.service" in err["details"]["run_by_hand"]
        assert "run by hand" in err["message"] and "systemctl --user enable --now gnod.service" in err["message"]
    with open(unit) as f:
        assert f.read() == service.render_unit(GNOD, svc_env["GNO_HOME"])
    assert "Traceback" not in r.stderr

    r = _run_cli("daemon", "uninstall", "--json", env=svc_env)
    assert r.returncode in (0, 2), r.stderr
    out = json.loads(r.stdout)
    if r.returncode == 2:
        assert out["error"]["details"]["removed"] is True
        assert "systemctl --user daemon-reload" in out["error"]["details"]["run_by_hand"]
    assert not os.path.exists(unit)
    assert not os.path.lexists(os.path.join(os.path.dirname(unit), "default.target.wants", "gnod.service"))

    r = _run_cli("daemon", "uninstall", "--json", env=svc_env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"manager": "systemd", "path": unit, "removed": False}


def test_install_stops_the_gnod_gnoctl_started_once_the_manager_answers(svc_env):
    """The service manager is to own gnod, so the one gnoctl started is stopped; but only
    once the manager has answered: where none can (a container), install stopped it and
    left no gnod running at all."""
    handle = start_gnod(svc_env)
    try:
        r = _run_cli("daemon", "install", "--json", env=svc_env)
        if r.returncode == 0:
            assert lock_is_free(paths_for(svc_env))
            assert handle.proc.wait(10) == 0
        else:  # no user service manager to talk to (always so here: the tests hide the session bus)
            assert r.returncode == 2, r.stderr
            err = json.loads(r.stdout)["error"]
            assert err["details"]["stopped_running"] is False
            assert err["message"].endswith("the gnod running now was left running")
            assert err["details"]["run_by_hand"] == [
                "systemctl --user daemon-reload",
                "systemctl --user enable --now gnod.service",
            ]
            assert "not run" not in err["message"]
            assert handle.proc.poll() is None and not lock_is_free(paths_for(svc_env))
            assert _run_cli("status", "--json", "--no-autostart", env=svc_env).returncode == 0
    finally:
        handle.stop()
        _run_cli("daemon", "uninstall", env=svc_env)


def test_install_print_without_gnod_is_a_clear_error(svc_env, tmp_path):
    # A Python with no gnod beside it and none on PATH: what an install from elsewhere looks like.
    bare = tmp_path / "bare"
    bare.mkdir()
    python = bare / "python"
    python.symlink_to(sys.executable)
    env = {**svc_env, "PATH": str(bare), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    r = subprocess.run(
        [str(python), "-m", "gnoctl.main", "daemon", "install", "--print"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "cannot find the gnod program" in r.stderr and "Traceback" not in r.stderr


# --- gnoctl daemon logs ------------------------------------------------------------------


def _write_log(env: dict[str, str], name: str, lines: list[str]) -> str:
    state = Paths(env["GNO_HOME"]).state_dir
    os.makedirs(state, exist_ok=True)
    path = os.path.join(state, name)
    with open(path, "w") as f:
        f.writelines(f"{line}\n" for line in lines)
    return path


def test_logs_without_a_log_says_where_it_will_be(env):
    r = _run_cli("daemon", "logs", env=env)
    assert r.returncode == 0
    assert r.stdout == ""
    assert Paths(env["GNO_HOME"]).log_file in r.stderr


def test_logs_prints_the_last_lines(env):
    _write_log(env, "gnod.log", [f"line {i}" for i in range(1, 101)])
    r = _run_cli("daemon", "logs", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"line {i}" for i in range(51, 101)]  # 50 by default
    r = _run_cli("daemon", "logs", "-n", "2", env=env)
    assert r.stdout == "line 99\nline 100\n"
    assert _run_cli("daemon", "logs", "--lines", "0", env=env).stdout == ""
    r = _run_cli("daemon", "logs", "-n", "-1", env=env)
    assert r.returncode == 2


def test_logs_reach_into_the_rotated_file(env):
    _write_log(env, "gnod.log.1", ["old 1", "old 2", "old 3"])
    _write_log(env, "gnod.log", ["new 1"])
    assert _run_cli("daemon", "logs", "-n", "3", env=env).stdout == "old 2\nold 3\nnew 1\n"
    assert _run_cli("daemon", "logs", "-n", "1", env=env).stdout == "new 1\n"


class Follower:
    """`gnoctl daemon logs -f` in the background, its stdout read line by line."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gnoctl.main", "daemon", "logs", "-f", *args],
            env=env,
            text=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # A shell without job control starts background jobs with SIGINT ignored: undo that,
            # so Ctrl-C (SIGINT) reaches gnoctl as it would from a terminal.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.errors: queue.Queue[str] = queue.Queue()
        for stream, into in ((self.proc.stdout, self.lines), (self.proc.stderr, self.errors)):
            threading.Thread(target=self._read, args=(stream, into), daemon=True).start()

    @staticmethod
    def _read(stream, into: queue.Queue[str]) -> None:
        for line in stream:
            into.put(line.rstrip("\n"))

    @staticmethod
    def _take(q: queue.Queue[str], n: int, timeout: float) -> list[str]:
        got = []
        deadline = time.monotonic() + timeout
        while len(got) < n:
            try:
                got.append(q.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                break
        return got

    def expect(self, *want: str, timeout: float = 10.0) -> None:
        assert self._take(self.lines, len(want), timeout) == list(want)

    def expect_error(self, timeout: float = 10.0) -> str:
        got = self._take(self.errors, 1, timeout)
        assert got, "nothing on stderr"
        return got[0]

    def interrupt(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(10)
        finally:
            self.proc.kill()
        return code, "\n".join(self._take(self.errors, 1000, 1.0))


def test_logs_follow_picks_up_appends_partial_lines_rotation_and_truncation(env):
    log = _write_log(env, "gnod.log", ["first", "second"])
    f = Follower(env, "-n", "1")
    try:
        f.expect("second")
        with open(log, "a") as out:
            out.write("appended\n")
        f.expect("appended")
        with open(log, "a") as out:  # a line written in two goes comes out whole
            out.write("half")
            out.flush()
            time.sleep(0.5)
            out.write(" and half\n")
        f.expect("half and half")
        # Rotate as RotatingFileHandler does: a last line, rename, a new file.
        with open(log, "a") as out:
            out.write("last before rotation\n")
        os.replace(log, log + ".1")
        with open(log, "w") as out:
            out.write("first after rotation\n")
        f.expect("last before rotation", "first after rotation")
        with open(log, "a") as out:
            out.write("more after rotation\n")
        f.expect("more after rotation")
        with open(log, "w") as out:  # truncated in place
            out.write("after truncation\n")
        f.expect("after truncation")
    finally:
        code, err = f.interrupt()
    assert code == 0
    assert "Traceback" not in err and "interrupted" not in err


def test_logs_follow_waits_for_the_log_to_appear(env):
    f = Follower(env)
    try:
        assert Paths(env["GNO_HOME"]).log_file in f.expect_error()
        _write_log(env, "gnod.log", ["gnod started"])
        f.expect("gnod started")
    finally:
        code, err = f.interrupt()
    assert code == 0
    assert "Traceback" not in err


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="ab\r\t é", max_size=12), max_size=30),
    st.booleans(),
    st.integers(min_value=0, max_value=35),
    st.integers(min_value=1, max_value=9),
)
def test_tail_start_matches_a_plain_split(lines, trailing_newline, n, block):
    text = "\n".join(lines) + ("\n" if trailing_newline and lines else "")
    data = text.encode()
    start, count = service._tail_start(io.BytesIO(data), n, block)
    body = data[:-1] if data.endswith(b"\n") else data
    expected = body.split(b"\n")[-n:] if data and n else []
    assert count == len(expected)
    assert data[start:] == (b"\n".join(expected) + (b"\n" if data.endswith(b"\n") else b"") if expected else b"")
