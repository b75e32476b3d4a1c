"""Where gno keeps things: one root under GNO_HOME, or the platform's user dirs.

The client needs only the runtime dir (socket, pid) and must stay fast, so this
module imports platformdirs lazily, only when a config/data/cache/state dir is asked for,
and not even `os` (~1 ms, a twentieth of a search from the terminal): gnoctl finds the
socket and sends its request before it loads anything it can load while gnod works.
"""

from __future__ import annotations

import posix
import sys

APP = "gno"
SOCKET_NAME = "gnod.sock"
PID_NAME = "gnod.pid"
LOCK_NAME = "gnod.lock"
# sockaddr_un.sun_path is 108 bytes on Linux, 104 on macOS.
MAX_SOCKET_PATH = 103


def env(name: str) -> str | None:
    """An environment variable, as os.environ has it: while `os` is not loaded nothing
    can have changed it, so the process's own environment is read."""
    os = sys.modules.get("os")
    if os is not None:
        value: str | None = os.environ.get(name)
        return value
    raw = posix.environ.get(name.encode())
    return None if raw is None else raw.decode(sys.getfilesystemencoding(), "surrogateescape")


def _absolute(path: str) -> str:
    """os.path.abspath(os.path.expanduser(path)); a path already absolute and normal
    ("/a/b": no "~", no "." or "..", no doubled or trailing "/") is that, without `os`."""
    parts = path.split("/")
    if len(parts) > 1 and not parts[0] and all(p not in ("", ".", "..") for p in parts[1:]):
        return path
    import os

    return os.path.abspath(os.path.expanduser(path))


def _join(folder: str, name: str) -> str:
    """os.path.join(folder, name) for a non-empty folder and a plain name."""
    return folder + name if folder.endswith("/") else f"{folder}/{name}"


def is_dir_mode(mode: int) -> bool:
    """stat.S_ISDIR, without importing `stat` on the client's hot path."""
    return mode & 0o170000 == 0o040000


def _is_dir(path: str) -> bool:
    try:
        return is_dir_mode(posix.stat(path).st_mode)
    except (OSError, ValueError):
        return False


class Paths:
    """All of gno's locations, derived from GNO_HOME or the platform's conventions."""

    def __init__(self, home: str | None) -> None:
        self.home = home
        self._dirs: dict[str, str] = {}

    @classmethod
    def from_env(cls) -> Paths:
        home = env("GNO_HOME")
        return cls(_absolute(home) if home else None)

    def _dir(self, kind: str) -> str:
        d = self._dirs.get(kind)
        if d is None:
            if self.home:
                d = _join(self.home, kind)
            else:
                import platformdirs

                d = getattr(platformdirs, f"user_{kind}_dir")(APP, appauthor=False)
            self._dirs[kind] = d
        return d

    @property
    def config_dir(self) -> str:
        return self._dir("config")

    @property
    def data_dir(self) -> str:
        return self._dir("data")

    @property
    def cache_dir(self) -> str:
        return self._dir("cache")

    @property
    def state_dir(self) -> str:
        return self._dir("state")

    @property
    def runtime_dir(self) -> str:
        if self.home:
            return _join(self.home, "run")
        xdg = env("XDG_RUNTIME_DIR")
        if xdg and _is_dir(xdg):
            return _join(xdg, APP)
        return _join(env("TMPDIR") or "/tmp", f"{APP}-{posix.getuid()}")

    @property
    def config_file(self) -> str:
        return _join(self.config_dir, "config.toml")

    @property
    def db_file(self) -> str:
        return _join(self.data_dir, "index.sqlite")

    @property
    def log_file(self) -> str:
        return _join(self.state_dir, "gnod.log")

    @property
    def model_cache_dir(self) -> str:
        """Downloaded model files (see gnod.models.pull for the layout)."""
        return _join(self.cache_dir, "models")

    @property
    def llm_cache_file(self) -> str:
        """Expansion and rerank results (gnod.store.llm_cache)."""
        return _join(self.cache_dir, "llm-cache.sqlite")

    @property
    def socket_path(self) -> str:
        return _join(self.runtime_dir, SOCKET_NAME)

    @property
    def pid_file(self) -> str:
        return _join(self.runtime_dir, PID_NAME)

    @property
    def lock_file(self) -> str:
        return _join(self.runtime_dir, LOCK_NAME)

    def read_pid(self) -> int | None:
        """The pid gnod wrote at start-up, or None (no file, garbage, a crash mid-write)."""
        try:
            with open(self.pid_file) as f:
                return int(f.read().strip() or 0) or None
        except (OSError, ValueError):
            return None


FILE_URL = "file://"


def file_url_path(url: str) -> str | None:
    """The absolute path a `file://` URL names on this machine (its host empty or
    `localhost`), percent-decoded; None for another host's."""
    from urllib.parse import unquote

    host, _, rest = url.removeprefix(FILE_URL).partition("/")
    return "/" + unquote(rest) if host in ("", "localhost") else None
