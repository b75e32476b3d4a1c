"""Talk to gnod with C-level modules only (`_socket`, `_json` via fastjson, `posix`):
importing `socket` and `json` would cost more than the whole call, and `os` ~1 ms.

Starts the daemon when it is not running (unless autostart is off, GNO_NO_AUTOSTART=1).
Also the supported Python API (docs/python.md): `Client.search`, `query`, `get`…
return the protocol's own result types (gnod.protocol), imported on first use so
that gnoctl's hot path, which uses `call`, never pays for them.
"""

from __future__ import annotations

import _socket
import posix
import sys
import time

from gnoctl import fastjson
from gnod import wire
from gnod.paths import Paths, env, is_dir_mode

TYPE_CHECKING = False  # typing itself imports re: too slow for the hot path (mypy reads it as True)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, TypeVar

    from gnod import protocol as P

    R = TypeVar("R")

START_TIMEOUT_S = 30.0
# While the gnod that holds the index is alive but not listening yet (its first start
# after an upgrade migrates the index: 15 s for the kernel tree's), a client waits for
# it this long, where it would start one (it would lose the lock to it).
STARTING_WAIT_S = 600.0
# A call gnod refused as overloaded (BUSY with `retry_after_ms`) is sent again once after
# the wait it names, where that is at most this long: a person or an agent waits a second
# rather than read an error (50 busy agents made `gnoctl search` fail in 0.03 s).
BUSY_RETRY_MAX_S = 2.0


def retry_wait(e: DaemonError) -> float | None:
    """Seconds to wait before sending a refused call again, once; None: do not."""
    if e.code != wire.BUSY or "retry_after_ms" not in e.details:
        return None
    wait = float(e.details["retry_after_ms"]) / 1000
    return wait if wait <= BUSY_RETRY_MAX_S else None


class LocalError(Exception):
    """A failure of gnoctl's own work (a service's file, an MCP client's config), shaped
    like gnod's errors (name, message, details) for gnoctl's output."""

    exit_code = wire.EXIT_ERROR

    def __init__(self, name: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.message = message
        self.details = details or {}


class DaemonError(Exception):
    """An error reply from gnod (or the lack of a daemon), with its stable name."""

    def __init__(self, code: int, message: str, details: dict[str, Any] | None = None, name: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
        self.name = name or wire.ERROR_NAMES.get(code, "ERROR")

    @property
    def exit_code(self) -> int:
        return wire.exit_code_for(self.code)


# The connection went while a call was out: gnod stopped, or was killed, before it answered.
GONE = "gnod closed the connection before it answered (it stopped or restarted): `gnoctl status` says if it is up"
# How long a search that started gnod waits, unless told (--wait), for gnod's scan at
# start to index what changed while it was down (it found none of it, and a script's
# `gnoctl search X && …` took that for no match; an agent's first search, through the
# MCP bridge that started gnod, likewise).
AUTOSTART_WAIT_S = 10.0


def with_autostart_wait(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """`params` of a call made by a client that started gnod: a method that can wait
    (its params take `wait_s`: search, query) waits AUTOSTART_WAIT_S unless told."""
    from gnoctl.spec import COMMANDS

    if params.get("wait_s") or not any(o["dest"] == "wait_s" for o in COMMANDS.get(method, ())):
        return params
    return {**params, "wait_s": AUTOSTART_WAIT_S}


def _recv_exact(sock: _socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        part = sock.recv(n - len(buf))
        if not part:
            raise DaemonError(wire.CANCELLED, GONE)
        buf += part
    return bytes(buf)


class Client:
    def __init__(
        self, paths: Paths | None = None, *, autostart: bool | None = None, timeout: float | None = None
    ) -> None:
        self.paths = paths or Paths.from_env()
        self.timeout = timeout  # seconds per socket operation; None waits as long as gnod works
        # Off by GNO_NO_AUTOSTART, the error says how to turn it on; off by the caller (--no-autostart), not.
        self._off_by_env = autostart is None and (env("GNO_NO_AUTOSTART") or "") in ("1", "true", "yes")
        self.autostart = not self._off_by_env if autostart is None else autostart
        self._sock: _socket.socket | None = None
        self._next_id = 0
        self._methods: dict[int, str] = {}  # id → method of the requests whose reply is not read yet
        self.started = False  # this client started gnod (autostart)

    def connect(self) -> None:
        if self._sock is not None:
            return
        try:
            self._sock = connect_checked(self.paths)
        except (FileNotFoundError, ConnectionRefusedError):
            starting = starting_pid(self.paths)
            if not self.autostart:
                unset = ", or unset GNO_NO_AUTOSTART" if self._off_by_env else ""
                said = (
                    f"gnod (pid {starting}) is starting and not answering yet (a first start after an upgrade "
                    "migrates the index: `gnoctl daemon logs` says so)"
                    if starting
                    else f"gnod is not running (start it with `gnoctl daemon start`{unset})"
                )
                raise DaemonError(wire.NOT_RUNNING, said, {"starting_pid": starting} if starting else {}) from None
            if starting:
                wait_listening(self.paths, starting)
            else:
                start_daemon(self.paths)
                self.started = True
            self._sock = connect_checked(self.paths)
        self._sock.settimeout(self.timeout)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(
        self, method: str, params: dict[str, Any] | None = None, on_notify: Callable[[str, Any], None] | None = None
    ) -> Any:
        """Send one request; feed notifications to `on_notify(method, params)`; return the result."""
        return self.reply(self.send(method, params), on_notify)

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send one request and return its id at once; `reply(id)` reads the answer, so the
        caller can do its own work while gnod does its (gnoctl loads its renderer). One
        request at a time: read its reply before sending the next (a reply to another id is
        passed over, as one that came after its caller stopped waiting)."""
        self.connect()
        assert self._sock is not None
        self._next_id += 1
        req_id = self._next_id
        body = fastjson.dumps(
            {"jsonrpc": "2.0", "id": req_id, "method": method, "params": params or {}, "gno": wire.PROTOCOL_VERSION}
        ).encode()
        try:
            self._sock.sendall(wire.frame(body))
        except (BrokenPipeError, ConnectionResetError) as e:
            raise DaemonError(wire.CANCELLED, f"{GONE} ({e.strerror})") from None
        self._methods[req_id] = method
        return req_id

    def reply(self, req_id: int, on_notify: Callable[[str, Any], None] | None = None) -> Any:
        """The result of request `req_id` (see `send`), its notifications fed to `on_notify`."""
        for name, value in self._replies(req_id):
            if not name:
                return value
            if on_notify is not None:
                on_notify(name, value)
        raise AssertionError("unreachable: the replies end with the result")

    def _replies(self, req_id: int) -> Iterator[tuple[str, Any]]:
        """The request's notifications as (method, params) as they come, then ("", result)."""
        assert self._sock is not None
        method = self._methods.pop(req_id)
        try:
            while True:
                size = wire.frame_size(_recv_exact(self._sock, wire.HEADER_SIZE))
                msg = fastjson.loads(_recv_exact(self._sock, size))
                if "id" not in msg or msg.get("id") != req_id:
                    if msg.get("error"):  # connection-level error (id null)
                        raise _error(msg["error"])
                    if "method" in msg:
                        yield msg["method"], msg.get("params")
                    continue
                if "error" in msg:
                    raise _error(msg["error"])
                yield "", msg["result"]
                return
        except (BrokenPipeError, ConnectionResetError) as e:
            raise DaemonError(wire.CANCELLED, f"{GONE} ({e.strerror})") from None
        except TimeoutError:
            raise DaemonError(wire.BUSY, f"gnod did not answer {method} within {self.timeout:g} s") from None

    # --- the typed API (docs/python.md): options are the method's params in docs/protocol.md

    def _typed(
        self, method: str, params: dict[str, Any], result: type[R], on_notify: Callable[[str, Any], None] | None = None
    ) -> R:
        import msgspec

        return msgspec.convert(self.call(method, params, on_notify), result)

    def search(self, query: str, **options: Any) -> P.SearchResult:
        """BM25 search (`limit`, `collections`, `filters`, `per_doc`…)."""
        from gnod.protocol import SearchResult

        return self._typed("search", {"query": query, **options}, SearchResult)

    def vsearch(self, query: str, **options: Any) -> P.VSearchResult:
        """Search by meaning (needs an embedding model)."""
        from gnod.protocol import VSearchResult

        return self._typed("vsearch", {"query": query, **options}, VSearchResult)

    def query(self, query: str, **options: Any) -> P.QueryResult:
        """Hybrid search: fused, reranked (`mode`, `variants`, `expand`, `rerank`…)."""
        from gnod.protocol import QueryResult

        return self._typed("query", {"query": query, **options}, QueryResult)

    def ask(self, question: str, on_token: Callable[[str], None] | None = None, **options: Any) -> P.AskResult:
        """An answer citing its sources; `on_token` hears the answer as it is written."""
        from gnod.protocol import AskResult

        def token(method: str, params: Any) -> None:
            if method == "token" and on_token is not None:
                on_token(params["text"])

        return self._typed("ask", {"query": question, "stream": on_token is not None, **options}, AskResult, token)

    def get(self, ref: str, **options: Any) -> P.Document:
        """A document by `collection/path[:line]`, `gno://…`, an absolute path or `#docid`."""
        from gnod.protocol import Document

        return self._typed("get", {"ref": ref, **options}, Document)

    def multi_get(self, refs: list[str] | None = None, **options: Any) -> P.MultiGetResult:
        """Several documents, by reference or by `pattern` (a glob over collection/path)."""
        from gnod.protocol import MultiGetResult

        return self._typed("multi_get", {"refs": refs or [], **options}, MultiGetResult)

    def ls(self, collection: str | None = None, **options: Any) -> P.LsResult:
        """The documents of one collection, or of all."""
        from gnod.protocol import LsResult

        return self._typed("ls", {"collection": collection, **options}, LsResult)

    def status(self) -> P.StatusResult:
        from gnod.protocol import StatusResult

        return self._typed("status", {}, StatusResult)

    def watch(self, *collections: str, queue: int = 1000) -> Iterator[P.Change | P.Lagged]:
        """Each committed change (or a Lagged notice) as it comes, until gnod stops.

        It runs on a connection of its own, closed when the loop ends, so this client
        stays free for searches meanwhile."""
        import msgspec

        from gnod.protocol import Change, Lagged

        follower = Client(self.paths, autostart=self.autostart)
        try:
            sent = follower.send("watch", {"collections": list(collections), "queue": queue})
            for name, value in follower._replies(sent):
                if name == "change":
                    yield msgspec.convert(value, Change)
                elif name == "lagged":
                    yield msgspec.convert(value, Lagged)
        finally:
            follower.close()


def _error(err: dict[str, Any]) -> DaemonError:
    data = err.get("data") or {}
    return DaemonError(
        err.get("code", wire.INTERNAL_ERROR), err.get("message", "unknown error"), data.get("details"), data.get("name")
    )


def connect_checked(paths: Paths) -> _socket.socket:
    """Connect to gnod, but only to one of this user's: the query text is private.

    Without GNO_HOME or XDG_RUNTIME_DIR the runtime dir is under a shared /tmp, where
    another user could create it first and listen in gnod's place. So before sending
    anything: the dir must be ours and closed to others, and so must the peer be."""
    _check_runtime_dir(paths.runtime_dir)
    sock = _connect(paths.socket_path)
    uid = wire.peer_uid(sock)
    if uid is not None and uid != posix.getuid():
        sock.close()
        raise DaemonError(
            wire.PERMISSION_DENIED,
            f"the process listening on {paths.socket_path} runs as uid {uid}, not as you ({posix.getuid()}): "
            f"nothing was sent; remove {paths.runtime_dir} or set XDG_RUNTIME_DIR or GNO_HOME",
            {"socket": paths.socket_path, "uid": uid},
        )
    return sock


def _check_runtime_dir(path: str) -> None:
    """Raise unless `path` is absent, or a directory owned by us with no group/other access."""
    try:
        st = posix.lstat(path)
    except FileNotFoundError:
        return
    uid = posix.getuid()
    problem = None
    if not is_dir_mode(st.st_mode):
        problem = "is not a directory (a symlink or a file)"
    elif st.st_uid != uid:
        problem = f"belongs to uid {st.st_uid}, not to you ({uid})"
    elif st.st_mode & 0o077:
        problem = f"is open to other users (mode {st.st_mode & 0o777:o}; it must be 700)"
    if problem:
        raise DaemonError(
            wire.PERMISSION_DENIED,
            f"runtime dir {path} {problem}: nothing was sent; remove it, or set XDG_RUNTIME_DIR or GNO_HOME",
            {"runtime_dir": path},
        )


def _connect(path: str) -> _socket.socket:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        raise
    return sock


def is_running(paths: Paths) -> bool:
    try:
        _connect(paths.socket_path).close()
        return True
    except OSError:
        return False


def holds_lock(paths: Paths) -> bool:
    """Whether a gnod process is alive in this runtime dir: it holds the instance lock
    until it exits (the kernel drops it then), whether or not it still listens."""
    import fcntl
    import os

    try:
        fd = os.open(paths.lock_file, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the lock if we took it
    return False


def starting_pid(paths: Paths) -> int | None:
    """The pid of a gnod that holds the instance lock while nothing listens on its
    socket: one starting (migrating the index); None otherwise (a pid file a killed gnod
    left, its pid another process's now, holds no lock)."""
    pid = paths.read_pid()
    if pid is None:
        return None
    try:
        posix.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's: the lock says whether it is a gnod
    return pid if holds_lock(paths) else None


def wait_listening(paths: Paths, pid: int, timeout: float = STARTING_WAIT_S) -> None:
    """Wait while gnod `pid` starts (it is alive, not listening yet) until it listens."""
    deadline = time.monotonic() + timeout
    while not is_running(paths):
        if starting_pid(paths) != pid:
            if is_running(paths):
                return
            raise DaemonError(wire.NOT_RUNNING, f"gnod (pid {pid}) stopped while starting: see `gnoctl daemon logs`")
        if time.monotonic() > deadline:
            raise DaemonError(wire.BUSY, f"gnod (pid {pid}) has not listened within {timeout:.0f} s of this wait")
        time.sleep(0.05)


def _reaped(proc: Any) -> None:
    """Wait for the gnod started here in a thread of its own, so that a client that
    lives on (`gnoctl web`, the MCP bridge) does not keep it as a zombie once it stops;
    a short one ends first, and gnod is then init's."""
    import threading

    threading.Thread(target=proc.wait, name="gnod-reaper", daemon=True).start()


def start_daemon(paths: Paths, timeout: float = START_TIMEOUT_S) -> int:
    """Start gnod detached from this terminal and wait until it accepts connections."""
    import os
    import subprocess

    os.makedirs(paths.state_dir, mode=0o700, exist_ok=True)
    out = os.path.join(paths.state_dir, "gnod.out")
    with open(os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as log:
        # -P: `-m` would put the working directory first on gnod's import path (and its
        # processes'), so a repository's `gnod/` or `apsw.py` where gnoctl runs would be
        # what gnod imports.
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "gnod.server.main", "--quiet"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    started = time.monotonic()
    deadline = started + timeout
    holding = False  # our gnod holds the index (its pid file) and does not listen yet
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is None:
            # Ready only when *our* gnod serves: another one answering now may be on its way out.
            if paths.read_pid() == proc.pid:
                if is_running(paths):
                    _reaped(proc)
                    return proc.pid
                deadline = started + max(timeout, STARTING_WAIT_S)  # it holds the index: it listens once migrated
                holding = True
        elif code == wire.GNOD_EXIT_RUNNING:
            # Lost the start race: the winner holds the lock but may not be listening yet.
            if is_running(paths):
                return paths.read_pid() or proc.pid
            if (winner := starting_pid(paths)) is not None:
                wait_listening(paths, winner)
                return winner
        elif code == wire.GNOD_EXIT_INDEX_TOO_NEW:
            said = _tail(out, 1).removeprefix("gnod: ")
            raise DaemonError(wire.VERSION_MISMATCH, said, {"log": out, "exit_status": code})
        else:
            err = wire.CONFIG_ERROR if code == wire.GNOD_EXIT_CONFIG else wire.INTERNAL_ERROR
            raise DaemonError(err, f"gnod exited with status {code} while starting: {_tail(out)}", {"log": out})
        time.sleep(0.02)
    waited = time.monotonic() - started
    _reaped(proc)
    if holding:
        said = f"gnod (pid {proc.pid}) took the index but has not listened within {waited:.0f} s; see {out}"
        raise DaemonError(wire.INTERNAL_ERROR, said, {"log": out, "pid": proc.pid})
    raise DaemonError(wire.INTERNAL_ERROR, f"gnod did not start within {waited:.0f} s; see {out}", {"log": out})


def _tail(path: str, lines: int = 5) -> str:
    try:
        with open(path, errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-lines:])
    except OSError:
        return ""
