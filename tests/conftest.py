"""Shared fixtures for the integration tests: a real `gnod` on a temp socket, the real CLI.

Nothing here is mocked. Every daemon a test starts (directly, or through gnoctl's
autostart) is stopped in teardown: `shutdown` over the socket, then SIGTERM, then
SIGKILL as a last resort. "Stopped" is judged by the daemon's single-instance flock,
which the kernel releases when the process dies (even before it is reaped); then any
gnod still carrying the test's GNO_HOME (an autostarted one that had not reached the
lock yet) is stopped by pid, found through /proc.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from gnod.paths import Paths

HEADER = struct.Struct(">I")
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0


def pytest_configure(config: pytest.Config) -> None:
    """Let the CLIs under test see the Ctrl-C the tests send them.

    A suite started in the background without job control (`cmd &` in a script) inherits
    SIGINT ignored, and an ignored signal stays ignored across exec; a handled one is reset
    to the default there, so handling it here gives every child the default.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# --- raw protocol helpers --------------------------------------------------------------


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Read exactly n bytes; raise EOFError if the peer closes first."""
    buf = bytearray()
    while len(buf) < n:
        part = sock.recv(n - len(buf))
        if not part:
            raise EOFError(f"connection closed after {len(buf)} of {n} bytes")
        buf += part
    return bytes(buf)


class RawConn:
    """One raw socket to gnod: frames in, frames out, nothing clever."""

    def __init__(self, path: str, timeout: float = 10.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)

    def __enter__(self) -> RawConn:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    @staticmethod
    def frame(body: bytes) -> bytes:
        return HEADER.pack(len(body)) + body

    @staticmethod
    def encode(method: str, params: dict | None = None, req_id: int | str | None = 1, **extra) -> bytes:
        msg = {"jsonrpc": "2.0", "id": req_id, "method": method, "params": params or {}, "gno": 1}
        msg.update(extra)
        return json.dumps(msg).encode()

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_body(self, body: bytes) -> None:
        self.sock.sendall(self.frame(body))

    def send(self, method: str, params: dict | None = None, req_id: int | str | None = 1, **extra) -> None:
        self.send_body(self.encode(method, params, req_id, **extra))

    def recv(self) -> dict:
        (size,) = HEADER.unpack(recv_exact(self.sock, HEADER.size))
        return json.loads(recv_exact(self.sock, size))

    def recv_reply(self, req_id=None) -> dict:
        """Next message that is not a notification (optionally: with this id)."""
        while True:
            msg = self.recv()
            if "method" in msg and "id" not in msg:
                continue
            if req_id is not None and msg.get("id") != req_id:
                raise AssertionError(f"expected a reply to {req_id!r}, got {msg!r}")
            return msg

    def call(self, method: str, params: dict | None = None, req_id: int | str = 1, **extra) -> dict:
        self.send(method, params, req_id, **extra)
        return self.recv_reply(req_id)

    def at_eof(self, timeout: float = 5.0) -> bool:
        """True if the daemon has closed the connection (reads return b'')."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True


# --- daemon helpers --------------------------------------------------------------------


def make_env(home: str) -> dict[str, str]:
    env = dict(os.environ)
    env["GNO_HOME"] = home
    env.pop("GNO_NO_AUTOSTART", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def paths_for(env: dict[str, str]) -> Paths:
    return Paths(os.path.abspath(env["GNO_HOME"]))


def lock_is_free(paths: Paths) -> bool:
    """True when no gnod holds the single-instance lock of this GNO_HOME."""
    try:
        fd = os.open(paths.lock_file, os.O_RDWR)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


def socket_accepts(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out.append(int(entry))
    return out


def alive(pid: int) -> bool:
    """Running and not a zombie (an orphan's zombie waits for init, which may not reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(pred, timeout: float, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if pred():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def _send_shutdown(paths: Paths) -> None:
    try:
        with RawConn(paths.socket_path, timeout=3.0) as c:
            c.call("shutdown", req_id="teardown")
    except (OSError, EOFError, ValueError):
        pass


def gnod_pids(home: str) -> list[int]:
    """Live gnod processes started with GNO_HOME=home (Linux /proc; [] elsewhere).

    Catches what the lock cannot: a gnod spawned by gnoctl's autostart that is still
    starting up (it has not tried the lock yet) and may take it over later.
    """
    want = b"GNO_HOME=" + os.path.abspath(home).encode()
    pids = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if b"gnod.server.main" not in f.read():
                    continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                if want not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue  # already dead, waiting to be reaped
        except OSError:
            continue
        pids.append(int(entry))
    return pids


def _stop_pids(home: str) -> None:
    """TERM (then KILL) every gnod of this home, by pid."""
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        pids = gnod_pids(home)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        wait_until(lambda: not gnod_pids(home), grace)


def stop_any_daemon(paths: Paths) -> None:
    """Stop whatever gnod holds this home's lock (ours or autostarted): shutdown → TERM → KILL."""
    if lock_is_free(paths):
        return
    _send_shutdown(paths)
    if wait_until(lambda: lock_is_free(paths), STOP_TIMEOUT_S):
        return
    pid = paths.read_pid()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if pid is None:
            break
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        if wait_until(lambda: lock_is_free(paths), 5.0):
            return
    raise RuntimeError(f"could not stop the gnod of {paths.home} (pid {pid})")


@dataclass
class DaemonHandle:
    paths: Paths
    proc: subprocess.Popen
    env: dict[str, str]
    stderr_path: str
    _stderr_file: object = field(repr=False, default=None)

    @property
    def socket_path(self) -> str:
        return self.paths.socket_path

    def connect(self, timeout: float = 10.0) -> RawConn:
        return RawConn(self.paths.socket_path, timeout)

    def rpc(self, method: str, params: dict | None = None, timeout: float = 30.0) -> dict:
        """One request on a fresh connection; returns the whole reply (`result` or `error`)."""
        with self.connect(timeout) as c:
            return c.call(method, params, req_id=1)

    def result(self, method: str, params: dict | None = None, timeout: float = 30.0):
        reply = self.rpc(method, params, timeout)
        assert "error" not in reply, reply
        return reply["result"]

    def stderr(self) -> str:
        try:
            with open(self.stderr_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int | None:
        """shutdown RPC → SIGTERM → SIGKILL; returns the exit status."""
        if self.proc.poll() is None:
            _send_shutdown(self.paths)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(5.0)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5.0)
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None
        return self.proc.returncode


def start_gnod(env: dict[str, str], *args: str, wait: bool = True) -> DaemonHandle:
    """Start `gnod --quiet` with env; by default wait until its socket accepts connections."""
    paths = paths_for(env)
    fd, stderr_path = tempfile.mkstemp(prefix="gnod-stderr-", dir=env["GNO_HOME"])
    err = os.fdopen(fd, "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gnod.server.main", "--quiet", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=err,
        stderr=err,
    )
    handle = DaemonHandle(paths=paths, proc=proc, env=env, stderr_path=stderr_path, _stderr_file=err)
    if not wait:
        return handle
    deadline = time.monotonic() + START_TIMEOUT_S
    while not socket_accepts(paths.socket_path):
        code = proc.poll()
        if code is not None:
            handle.stop()
            pytest.fail(f"gnod exited with status {code} while starting:\n{handle.stderr()}")
        if time.monotonic() > deadline:
            handle.stop()
            pytest.fail(f"gnod did not accept connections within {START_TIMEOUT_S} s:\n{handle.stderr()}")
        time.sleep(0.01)
    return handle


def _run_cli(
    *args: str, env: dict[str, str], input: str | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess:
    """Run the real gnoctl (`python -m gnoctl.main ARGS`) with env; text in, text out."""
    return subprocess.run(
        [sys.executable, "-m", "gnoctl.main", *args],
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


class PtyCli:
    """The real gnoctl with stdout on a pseudo-terminal (stderr a pipe): what a person sees.

    `rows`/`cols` size the terminal (the pager and redraws depend on it); output is
    read as it comes, so a test can wait for some of it, then interrupt (Ctrl-C).
    """

    def __init__(self, *args: str, env: dict[str, str], rows: int = 24, cols: int = 200) -> None:
        import fcntl as _fcntl
        import pty
        import termios
        import tty

        self.master, slave = pty.openpty()
        tty.setraw(slave)  # no \n → \r\n translation
        _fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gnoctl.main", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=subprocess.PIPE,
        )
        os.close(slave)
        self.out = bytearray()
        self._eof = False

    def _pump(self, wait: float) -> None:
        import select

        ready, _, _ = select.select([self.master], [], [], wait)
        if ready:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the child closed its end
                chunk = b""
            if chunk:
                self.out += chunk
            else:
                self._eof = True

    def read_until(self, pred, timeout: float = 30.0) -> bool:
        """Read output until `pred(text so far)` holds; False on timeout or end of output."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred(self.text):
                return True
            if self._eof:
                return False
            self._pump(0.05)
        return pred(self.text)

    def interrupt(self) -> None:
        self.proc.send_signal(signal.SIGINT)

    def finish(self, timeout: float = 30.0) -> tuple[int, str]:
        """Read to the end, wait for the exit; returns (status, stdout)."""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and not self._eof:
                self._pump(0.1)
                if self.proc.poll() is not None:
                    self._pump(0)  # what was written before the exit
                    break
            self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        finally:
            os.close(self.master)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.stderr = self.proc.stderr.read().decode(errors="replace")
            self.proc.stderr.close()
        return self.proc.returncode, self.text

    @property
    def text(self) -> str:
        return self.out.decode(errors="replace")


def run_cli_tty(*args: str, env, timeout: float = 30.0, rows: int = 24) -> tuple[int, str]:
    """Run gnoctl with stdout on a pseudo-terminal (human output); returns (status, stdout)."""
    return PtyCli(*args, env=env, rows=rows).finish(timeout)


def cli_json(*args: str, env: dict[str, str], expect: int = 0):
    """Run gnoctl with --json-style output and parse stdout, asserting the exit status."""
    r = _run_cli(*args, env=env)
    assert r.returncode == expect, f"gnoctl {' '.join(args)} → {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    return json.loads(r.stdout)


def make_home() -> str:
    # Unix socket paths must stay under ~104 bytes: keep the root short, in /tmp.
    return tempfile.mkdtemp(prefix="gno-", dir="/tmp")


def cleanup_home(home: str) -> None:
    try:
        stop_any_daemon(Paths(home))
    finally:
        try:
            _stop_pids(home)  # stragglers an autostart left behind (see gnod_pids)
        finally:
            shutil.rmtree(home, ignore_errors=True)


# --- corpus ----------------------------------------------------------------------------

ENGLISH_DOCS = {
    "guides/deploy.md": (
        "# Deployment guide\n\n"
        "How to deploy the billing service to production.\n\n"
        "Run the release pipeline, watch the dashboards and roll back when the error rate climbs.\n"
        "Production deploys happen on Tuesdays after the change review.\n"
    ),
    "guides/staging.md": (
        "# Staging environment\n\n"
        "You can deploy any branch to staging without a review.\n\n"
        "Staging is reset every night, so do not keep data there.\n"
    ),
    "notes/pasta.txt": (
        "Pasta recipe\n\n"
        "Boil salted water, cook the spaghetti for nine minutes, toss with garlic and olive oil.\n"
        "Serve with grated parmesan.\n"
    ),
    "README.md": (
        "# Team handbook\n\nThis handbook collects our guides and notes about the kettle, the office and the tools.\n"
    ),
}
GERMAN_DOC = (
    "german/anleitung.md",
    "# Anleitung zur Bereitstellung\n\n"
    "Diese Anleitung beschreibt die Bereitstellung der Anwendung auf unseren eigenen Servern. "
    "Zuerst werden die Abhängigkeiten installiert, danach wird die Datenbank vorbereitet und "
    "schließlich wird der Dienst gestartet. Bei Problemen wenden Sie sich bitte an die "
    "Betriebsmannschaft, die Ihnen gerne weiterhilft.\n",
)
INDEXABLE = sorted([*ENGLISH_DOCS, GERMAN_DOC[0]])
BINARY_FILE = "data/blob.txt"


@dataclass
class Corpus:
    root: str
    indexable: list[str]  # rel paths that must be indexed
    skipped: list[str]  # rel paths that must not be indexed (ignored or excluded)
    binary: str  # rel path of the text-named binary file (an ingest error)

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    def write(self, rel: str, text: str) -> str:
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        return p


def converted(rel_path: str) -> bool:
    """Whether results say a document at `rel_path` is converted (server.hits.identity:
    the protocol's `converted`, which editors and the web view read)."""
    from gnod.server.hits import identity
    from gnod.store.documents import DocRow

    return bool(identity(DocRow(1, "c", "/c", rel_path, "t", None, "h", 0, 0, "{}"))["converted"])


def build_corpus(root: str) -> Corpus:
    os.makedirs(root, exist_ok=True)
    c = Corpus(root=root, indexable=list(INDEXABLE), skipped=[], binary=BINARY_FILE)
    for rel, text in ENGLISH_DOCS.items():
        c.write(rel, text)
    c.write(*GERMAN_DOC)
    c.write(".gitignore", "secret/\n*.log\n")
    c.write("secret/passwords.md", "# Secret\n\nThe kettle password is hunter2.\n")
    c.write("debug.log", "kettle log line\n")
    c.write("node_modules/x.md", "# Vendored\n\nkettle dependency readme\n")
    c.skipped = ["secret/passwords.md", "debug.log", "node_modules/x.md", ".gitignore"]
    os.makedirs(c.path("data"), exist_ok=True)
    with open(c.path(BINARY_FILE), "wb") as f:
        f.write(b"kettle\x00\x01\x02\x00binary\x00" * 64)
    return c


# --- fixtures --------------------------------------------------------------------------


def migrated_db(path: str):
    """A new index at `path` with every migration applied: a real write connection."""
    from gnod.store.db import connect
    from gnod.store.migrations import migrate

    conn = connect(path)
    migrate(conn)
    return conn


@contextmanager
def lexical_index(conn, analyzers, rebuilt: bool = False):
    """The lexical index beside `conn`'s database, brought up to date with it as gnod
    does at start (what index_collection wrote without one is pending until then), and
    closed afterwards (its writer's lock released). Unless `rebuilt` is expected, an
    existing index must agree with the database once the pending documents are taken."""
    from gnod.ingest.lexical_text import deriver
    from gnod.store.lexical_index import LexicalIndex

    index = LexicalIndex(os.path.dirname(conn.filename), deriver(analyzers))
    new = not os.path.isdir(index.path)
    index.open()
    done = index.reconcile(conn)
    assert new or rebuilt or "added" not in done, done
    try:
        yield index
    finally:
        index.close()


def lexical_ids(index) -> set[int]:
    """Every document id the lexical index holds."""
    from tantivy import Query

    searcher = index.searcher()
    hits = searcher.search(Query.all_query(), max(1, searcher.num_docs)).hits
    return set(searcher.fast_field_values("id", [addr for _, addr in hits]))


def lexical_paths(conn, analyzers, query: str, limit: int = 10, respell: bool = True) -> list[str]:
    """The paths BM25 ranks for `query`, best first, as `search` would return them
    (`respell` False: nothing searched otherwise where nothing matches)."""
    with lexical_index(conn, analyzers) as index:
        return lexical_paths_in(index, conn, analyzers, query, limit, respell)


def lexical_paths_in(index, conn, analyzers, query: str, limit: int = 10, respell: bool = True) -> list[str]:
    """lexical_paths with a lexical index already open (its writer holds the lock)."""
    from gnod.search import lexical
    from gnod.store.documents import docs_by_ids, language_counts

    rows = lexical.search(index, conn, analyzers, query, language_counts(conn), limit, respell=respell).rows
    docs = docs_by_ids(conn, [r.doc_id for r in rows])
    return [docs[r.doc_id].rel_path for r in rows]


def write_tree(root: str, files: dict[str, str]) -> str:
    """`files` ({relative path: text}) written under `root`; returns `root`."""
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return root


@contextmanager
def running_gnod(config: str | None = None):
    """(env, handle) of a real gnod in a home of its own, with `config` as its config.toml;
    stopped and the home removed on exit. For module-scoped fixtures."""
    home = make_home()
    try:
        env = make_env(home)
        if config is not None:
            os.makedirs(os.path.join(home, "config"), exist_ok=True)
            with open(os.path.join(home, "config", "config.toml"), "w") as f:
                f.write(config)
        handle = start_gnod(env)
        try:
            yield env, handle
        finally:
            handle.stop()
    finally:
        cleanup_home(home)


@pytest.fixture
def db(tmp_path):
    """A migrated index of its own for one test."""
    conn = migrated_db(str(tmp_path / "index.sqlite"))
    yield conn
    conn.close()


@pytest.fixture
def gno_home():
    home = make_home()
    try:
        yield home
    finally:
        cleanup_home(home)


@pytest.fixture
def env(gno_home) -> dict[str, str]:
    return make_env(gno_home)


@pytest.fixture
def daemon(env):
    handle = start_gnod(env)
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def run_cli():
    """`run_cli(*args, env=..., input=None)` → CompletedProcess of the real gnoctl."""
    return _run_cli


@pytest.fixture
def corpus(tmp_path) -> Corpus:
    return build_corpus(str(tmp_path / "corpus"))


@pytest.fixture(scope="module")
def shared_daemon():
    """One gnod for a whole module of tests that do not need a pristine daemon.

    Stopped (and its home removed) when the module's last test is done.
    """
    with running_gnod() as (_env, handle):
        yield handle
