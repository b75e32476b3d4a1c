"""Runtime dir, single-instance lock, pid file, stale socket cleanup.

The lock is an flock on a file in the 0700 runtime dir: the kernel drops it when
gnod dies, so a crash never blocks the next start; whatever socket or pid file the
dead process left behind is then removed by the next one.
"""

from __future__ import annotations

import fcntl
import os
import stat

from gnod.paths import MAX_SOCKET_PATH, Paths


class AlreadyRunning(Exception):
    def __init__(self, pid: int | None) -> None:
        super().__init__(f"gnod is already running (pid {pid})" if pid else "gnod is already running")
        self.pid = pid


class RuntimeDirError(Exception):
    """The runtime dir is unusable (wrong owner, path too long…); the message says why."""


def ensure_private_dir(path: str) -> None:
    """Create `path` as 0700, or check an existing one belongs to us and tighten it."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.stat(path)
    if st.st_uid != os.getuid():
        raise RuntimeDirError(f"runtime dir {path} belongs to uid {st.st_uid}, not to you ({os.getuid()})")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)


def make_private(paths: Paths) -> None:
    """Close gnod's own directories (0700) and files (0600) to other users.

    The index and its WAL hold the documents' text, the log holds paths and queries:
    with a 0755 home anyone on the machine could read them. New files follow the
    0077 umask gnod sets at start; this tightens what an older gnod left behind."""
    uid = os.getuid()
    for d in (paths.config_dir, paths.data_dir, paths.state_dir, paths.cache_dir):
        try:
            st = os.stat(d)
        except OSError:
            continue
        if st.st_uid == uid and stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(d, stat.S_IMODE(st.st_mode) & 0o700)
        if d == paths.cache_dir:
            continue  # model files: the closed directory is enough
        with os.scandir(d) as it:
            for entry in it:
                est = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(est.st_mode) and est.st_uid == uid and stat.S_IMODE(est.st_mode) & 0o077:
                    os.chmod(entry.path, stat.S_IMODE(est.st_mode) & 0o600)


class Instance:
    """Holds the lock for the life of the daemon; `release` undoes everything."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self._lock_fd: int | None = None

    def acquire(self) -> None:
        if len(self.paths.socket_path.encode()) > MAX_SOCKET_PATH:
            raise RuntimeDirError(
                f"socket path {self.paths.socket_path} is longer than {MAX_SOCKET_PATH} bytes; "
                "set GNO_HOME (or XDG_RUNTIME_DIR) to a shorter directory"
            )
        ensure_private_dir(self.paths.runtime_dir)
        fd = os.open(self.paths.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise AlreadyRunning(self.paths.read_pid()) from None
        self._lock_fd = fd
        # We own the lock, so any socket or pid file here is a crashed daemon's leftovers.
        for leftover in (self.paths.socket_path, self.paths.pid_file):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass
        tmp = self.paths.pid_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{os.getpid()}\n")
        os.replace(tmp, self.paths.pid_file)

    def release(self) -> None:
        if self._lock_fd is None:
            return
        for path in (self.paths.socket_path, self.paths.pid_file):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        os.close(self._lock_fd)
        self._lock_fd = None
