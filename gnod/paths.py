"""Where gno keeps things: one root under GNO_HOME, or the platform's user dirs.

The client needs only the runtime dir (socket, pid) and must stay fast, so this
module imports platformdirs lazily, only when a config/data/cache/state dir is asked for.
"""

from __future__ import annotations

import os

APP = "gno"
SOCKET_NAME = "gnod.sock"
PID_NAME = "gnod.pid"
LOCK_NAME = "gnod.lock"
# sockaddr_un.sun_path is 108 bytes on Linux, 104 on macOS.
MAX_SOCKET_PATH = 103


class Paths:
    """All of gno's locations, derived from GNO_HOME or the platform's conventions."""

    def __init__(self, home: str | None) -> None:
        self.home = home
        self._dirs: dict[str, str] = {}

    @classmethod
    def from_env(cls) -> Paths:
        home = os.environ.get("GNO_HOME")
        return cls(os.path.abspath(os.path.expanduser(home)) if home else None)

    def _dir(self, kind: str) -> str:
        d = self._dirs.get(kind)
        if d is None:
            if self.home:
                d = os.path.join(self.home, kind)
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
            return os.path.join(self.home, "run")
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        if xdg and os.path.isdir(xdg):
            return os.path.join(xdg, APP)
        return os.path.join(os.environ.get("TMPDIR", "/tmp"), f"{APP}-{os.getuid()}")

    @property
    def config_file(self) -> str:
        return os.path.join(self.config_dir, "config.toml")

    @property
    def db_file(self) -> str:
        return os.path.join(self.data_dir, "index.sqlite")

    @property
    def log_file(self) -> str:
        return os.path.join(self.state_dir, "gnod.log")

    @property
    def model_cache_dir(self) -> str:
        """Downloaded model files (see gnod.models.pull for the layout)."""
        return os.path.join(self.cache_dir, "models")

    @property
    def llm_cache_file(self) -> str:
        """Expansion and rerank results (gnod.store.llm_cache)."""
        return os.path.join(self.cache_dir, "llm-cache.sqlite")

    @property
    def socket_path(self) -> str:
        return os.path.join(self.runtime_dir, SOCKET_NAME)

    @property
    def pid_file(self) -> str:
        return os.path.join(self.runtime_dir, PID_NAME)

    @property
    def lock_file(self) -> str:
        return os.path.join(self.runtime_dir, LOCK_NAME)

    def read_pid(self) -> int | None:
        """The pid gnod wrote at start-up, or None (no file, garbage, a crash mid-write)."""
        try:
            with open(self.pid_file) as f:
                return int(f.read().strip() or 0) or None
        except (OSError, ValueError):
            return None
