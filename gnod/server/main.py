"""`gnod`: run the daemon in the foreground (systemd, launchd, or `gnoctl daemon start`)."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import logging.handlers
import os
import sys

from gnod import __version__, wire
from gnod.config import ConfigError, load
from gnod.paths import Paths
from gnod.server.app import Daemon
from gnod.server.jobs import tune_malloc
from gnod.server.lifecycle import AlreadyRunning, RuntimeDirError, make_private
from gnod.store.migrations import IndexTooNew

LOG_BYTES = 5 * 1024 * 1024
LOG_BACKUPS = 3


def _setup_logging(paths: Paths, level: str, to_stderr: bool) -> None:
    root = logging.getLogger("gnod")
    root.setLevel(level.upper())
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    os.makedirs(paths.state_dir, exist_ok=True)
    fh = logging.handlers.RotatingFileHandler(paths.log_file, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS)
    fh.setFormatter(fmt)
    root.addHandler(fh)
    if to_stderr:
        sh = logging.StreamHandler(sys.stderr)
        sh.setFormatter(fmt)
        root.addHandler(sh)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gnod",
        description="gno daemon: owns the index, keeps it fresh and answers gnoctl over a Unix "
        "socket. Runs in the foreground; `gnoctl daemon start` runs it in the background. "
        "GNO_HOME sets one root for config, data, cache and runtime files.",
    )
    parser.add_argument("--log-level", default=None, help="debug, info, warning or error (default: config or info)")
    parser.add_argument("--quiet", action="store_true", help="log to the log file only, not stderr")
    parser.add_argument("--version", action="version", version=f"gnod {__version__}")
    args = parser.parse_args(argv)

    tune_malloc()
    # Everything gnod creates (index, WAL, log, caches) is for this user only.
    os.umask(0o077)
    paths = Paths.from_env()
    make_private(paths)
    try:
        config = load(paths.config_file)
    except ConfigError as e:
        print(f"gnod: config error: {e}", file=sys.stderr)
        return wire.GNOD_EXIT_CONFIG
    _setup_logging(paths, args.log_level or config.daemon.log_level, not args.quiet)
    daemon = Daemon(paths, config)
    # Everything imported so far lives as long as the daemon: keep it out of GC scans.
    gc.freeze()
    try:
        asyncio.run(daemon.serve())
    except AlreadyRunning as e:
        print(f"gnod: {e}", file=sys.stderr)
        return wire.GNOD_EXIT_RUNNING
    except RuntimeDirError as e:
        print(f"gnod: {e}", file=sys.stderr)
        return wire.GNOD_EXIT_RUNTIME_DIR
    except IndexTooNew as e:
        logging.getLogger("gnod").error("%s", e)
        print(f"gnod: {e}", file=sys.stderr)
        return wire.GNOD_EXIT_INDEX_TOO_NEW
    return 0


if __name__ == "__main__":
    sys.exit(main())
