"""Run gnod at login (a systemd user unit on Linux, a launchd agent on macOS) and read its log.

Stdlib only, and imported only by `gnoctl daemon install|uninstall|logs`, so the hot
commands never pay for it. The unit and the plist are templates in the source tree
(systemd/, launchd/), reviewable as the files they become; rendering fills in this
user's gnod path and the environment that decides where gno keeps things.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable

from gnoctl.client import LocalError, holds_lock
from gnod.paths import Paths

UNIT_NAME = "gnod.service"
LABEL = "dev.gno.gnod"
_HERE = os.path.dirname(os.path.abspath(__file__))
# A wheel carries the templates in gnoctl/service_files/ (pyproject force-include); a
# checkout has them at the repository root.
_ROOT = next(
    (
        d
        for d in (os.path.join(_HERE, "service_files"), os.path.dirname(_HERE))
        if os.path.isdir(os.path.join(d, "systemd"))
    ),
    os.path.dirname(_HERE),
)
UNIT_TEMPLATE = os.path.join(_ROOT, "systemd", UNIT_NAME)
PLIST_TEMPLATE = os.path.join(_ROOT, "launchd", f"{LABEL}.plist")
COMMAND_TIMEOUT_S = 60
NOT_RUN = "not run"  # a step after one that failed
_BLOCK = 65536


class ServiceError(LocalError):
    """systemd or launchd could not take the service, or its file could not be written."""


# --- rendering ---------------------------------------------------------------------------


def gnod_path() -> str:
    """The gnod installed with this gnoctl (next to its Python), else the one on PATH."""
    local = os.path.join(os.path.dirname(sys.executable), "gnod")
    found = local if os.access(local, os.X_OK) else shutil.which("gnod")
    if not found:
        raise ServiceError(
            "GNOD_NOT_FOUND", f"cannot find the gnod program: not next to {sys.executable} and not on PATH"
        )
    return os.path.abspath(found)


def _template(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ServiceError("TEMPLATE_MISSING", f"cannot read the template {path}: {e.strerror}") from None


def _systemd_quoted(value: str) -> str:
    """Escape for use inside a double-quoted systemd value (C escapes, %-specifiers)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


def _has_control(value: str) -> bool:
    return any(ord(c) < 32 or c == "\x7f" for c in value)


def render_unit(gnod: str, gno_home: str | None) -> str:
    """The systemd unit; the GNO_HOME line is dropped when there is no GNO_HOME."""
    # systemd refuses such an executable name outright ("contains special characters"), quoted
    # or not; a control character would end the unit's line.
    if _has_control(gnod) or any(c in "\"'\\" for c in gnod):
        raise ServiceError(
            "UNSUPPORTED_PATH",
            f"systemd cannot run a program whose path holds a quote, a "
            f"backslash or a control character: {gnod!r}; install gno "
            "at a plainer path",
        )
    if gno_home and _has_control(gno_home):
        raise ServiceError("UNSUPPORTED_PATH", f"GNO_HOME holds a control character: {gno_home!r}")
    out = []
    for line in _template(UNIT_TEMPLATE).decode().splitlines(keepends=True):
        if "@GNO_HOME@" in line:
            if not gno_home:
                continue
            line = line.replace("@GNO_HOME@", _systemd_quoted(gno_home))
        # ExecStart expands $VARIABLES in arguments but not in the executable name: no $$ here.
        out.append(line.replace("@GNOD@", _systemd_quoted(gnod)))
    return "".join(out)


def render_plist(gnod: str, output: str, env: dict[str, str]) -> bytes:
    """The launchd plist; only the template's environment variables that `env` sets are kept."""
    plist = plistlib.loads(_template(PLIST_TEMPLATE))
    values = {"@GNOD@": gnod, "@OUTPUT@": output}

    def fill(obj):
        if isinstance(obj, str):
            return values.get(obj, obj)
        if isinstance(obj, list):
            return [fill(x) for x in obj]
        if isinstance(obj, dict):
            return {k: fill(v) for k, v in obj.items()}
        return obj

    plist = fill(plist)
    kept = {k: env[k] for k in plist.get("EnvironmentVariables", {}) if env.get(k)}
    if kept:
        plist["EnvironmentVariables"] = kept
    else:
        plist.pop("EnvironmentVariables", None)
    return plistlib.dumps(plist, sort_keys=False)


def unit_path() -> str:
    base = os.environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):  # the XDG spec says to ignore a relative one
        base = os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "systemd", "user", UNIT_NAME)


def plist_path() -> str:
    return os.path.join(os.path.expanduser("~"), "Library", "LaunchAgents", f"{LABEL}.plist")


def _manager() -> str:
    if sys.platform.startswith("linux"):
        return "systemd"
    if sys.platform == "darwin":
        return "launchd"
    raise ServiceError(
        "UNSUPPORTED_PLATFORM",
        f"gnoctl can install gnod as a service on Linux (systemd) and "
        f"macOS (launchd), not on {sys.platform}; run gnod at login "
        "with your system's own means",
    )


def render(paths: Paths | None = None) -> tuple[str, str]:
    """Where this platform's service file goes, and its content for the current user."""
    paths = paths or Paths.from_env()
    manager = _manager()
    gnod = gnod_path()
    if manager == "systemd":
        return unit_path(), render_unit(gnod, paths.home)
    env = {"GNO_HOME": paths.home or "", "TMPDIR": os.environ.get("TMPDIR", "")}
    return plist_path(), render_plist(gnod, log_paths(paths)["output"], env).decode()


# --- install / uninstall -----------------------------------------------------------------


def _run(cmd: list[str]) -> str | None:
    """Run a service manager command: None if it worked, else why not (its last words)."""
    if shutil.which(cmd[0]) is None:
        return f"{cmd[0]} not found"
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if r.returncode == 0:
        return None
    said = (r.stderr.strip() or r.stdout.strip()).splitlines()
    return said[-1] if said else f"exit status {r.returncode}"


def _apply(steps: list[tuple[list[list[str]], list[str]]]) -> list[dict]:
    """Run each step (the first of its alternative commands that works); report the failed ones
    with the command to run by hand instead."""
    failed = []
    for alternatives, by_hand in steps:
        error = _run(alternatives[0])
        if error is not None and all(_run(cmd) is not None for cmd in alternatives[1:]):
            failed.append({"command": shlex.join(alternatives[0]), "error": error, "run": shlex.join(by_hand)})
    return failed


def _fail(done: str, failed: list[dict], details: dict, after: str = "") -> ServiceError:
    manager = "systemctl" if _manager() == "systemd" else "launchctl"
    why = "; ".join(f"`{f['command']}`: {f['error']}" for f in failed if f["error"] != NOT_RUN)
    hint = ""
    if any("connect to bus" in f["error"] for f in failed):
        hint = " (no systemd user manager is reachable here: a container, or a shell outside a login session)"
    run = "\n".join(f"  {f['run']}" for f in failed)
    return ServiceError(
        "SERVICE_MANAGER_FAILED",
        f"{done}, but {manager} failed{hint}: {why}\nrun by hand once it works:\n{run}{after}",
        {**details, "failed": failed, "run_by_hand": [f["run"] for f in failed]},
    )


def _write(path: str, content: str) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(content)
        os.replace(tmp, path)
    except OSError as e:
        raise ServiceError("WRITE_FAILED", f"cannot write {path}: {e.strerror}") from None


def _gui_domain() -> str:
    return f"gui/{os.getuid()}"


def _launchd_loaded() -> bool:
    return _run(["launchctl", "print", f"{_gui_domain()}/{LABEL}"]) is None


def install(print_only: bool, paths: Paths | None = None, stop_running: Callable[[], bool] = lambda: False) -> dict:
    """Write the unit/plist, then enable and start it; with print_only, only say what it would write.

    `stop_running` stops a gnod running outside the service (it holds the lock the
    service's would wait for) and says whether there was one: it is called once the
    service manager has answered, so that where there is none to answer (a container,
    a shell outside a login session) the running gnod keeps serving. Raises
    ServiceError (exit 2) when systemctl/launchctl is missing or fails: the file is
    written anyway and the error lists the commands to run by hand.
    """
    paths = paths or Paths.from_env()
    path, content = render(paths)
    if print_only:
        return {"path": path, "content": content, "written": False}
    manager = _manager()
    if manager == "systemd":
        _write(path, content)
        status = f"systemctl --user status {UNIT_NAME}"
        reload, enable = ["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", UNIT_NAME]
        steps, later = [([reload], reload)], [([enable], enable)]
    else:
        # launchd opens StandardOutPath itself and does not create its directory.
        os.makedirs(paths.state_dir, mode=0o700, exist_ok=True)
        _write(path, content)
        status = f"launchctl print {_gui_domain()}/{LABEL}"
        bootstrap = ["launchctl", "bootstrap", _gui_domain(), path]
        steps = []
        later = [([bootstrap, ["launchctl", "load", "-w", path]], bootstrap)]
        if _launchd_loaded():  # a loaded agent keeps its old definition until booted out
            bootout = ["launchctl", "bootout", f"{_gui_domain()}/{LABEL}"]
            steps.append(([bootout], bootout))
    result = {"manager": manager, "path": path, "written": True, "status": status, "logs": log_paths(paths)}
    failed = _apply(steps)
    if failed:
        kept = "\nthe gnod running now was left running" if holds_lock(paths) else ""
        raise _fail(f"wrote {path}", failed + _not_run(later), {**result, "stopped_running": False}, kept)
    stopped = stop_running()
    failed = _apply(later)
    if failed:
        raise _fail(f"wrote {path}", failed, {**result, "stopped_running": stopped})
    return {**result, "started": True, "stopped_running": stopped}


def _not_run(steps: list[tuple[list[list[str]], list[str]]]) -> list[dict]:
    """The steps left after one failed, for the commands to run by hand."""
    return [{"command": shlex.join(cmds[0]), "error": NOT_RUN, "run": shlex.join(by_hand)} for cmds, by_hand in steps]


def uninstall(paths: Paths | None = None) -> dict:
    """Stop and disable the service and remove its file; a no-op when it is not installed."""
    manager = _manager()
    path = unit_path() if manager == "systemd" else plist_path()
    if not os.path.exists(path):
        return {"manager": manager, "path": path, "removed": False}
    if manager == "systemd":
        stop = ["systemctl", "--user", "stop", UNIT_NAME]
        failed = _apply([([["systemctl", "--user", "disable", "--now", UNIT_NAME]], stop)])
        wants = os.path.join(os.path.dirname(path), "default.target.wants", UNIT_NAME)
        if os.path.islink(wants):  # systemctl could not disable it: do its file part
            os.unlink(wants)
    else:
        bootout = ["launchctl", "bootout", f"{_gui_domain()}/{LABEL}"]
        failed = _apply([([bootout, ["launchctl", "unload", "-w", path]], bootout)]) if _launchd_loaded() else []
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise ServiceError("REMOVE_FAILED", f"cannot remove {path}: {e.strerror}") from None
    if manager == "systemd":
        failed += _apply([([["systemctl", "--user", "daemon-reload"]], ["systemctl", "--user", "daemon-reload"])])
    result = {"manager": manager, "path": path, "removed": True}
    if failed:
        raise _fail(f"removed {path}", failed, result)
    return result


# --- logs --------------------------------------------------------------------------------


def log_paths(paths: Paths | None = None) -> dict[str, str]:
    """gnod's own rotating log, and the file its stdout/stderr go to when no terminal or
    journal takes them (launchd, `gnoctl daemon start`)."""
    paths = paths or Paths.from_env()
    return {"log": paths.log_file, "output": os.path.join(paths.state_dir, "gnod.out")}


def _tail_start(f, n: int, block: int = _BLOCK) -> tuple[int, int]:
    """Offset where the last n lines of f start (all of it if shorter), and how many there are.

    Reads backwards from the end, so a long log costs only its tail.
    """
    end = f.seek(0, os.SEEK_END)
    if n <= 0 or end == 0:
        return end, 0
    pos, data = end, b""
    while pos > 0 and data.count(b"\n") <= n:
        step = min(block, pos)
        pos -= step
        f.seek(pos)
        data = f.read(step) + data
    trailing = data.endswith(b"\n")
    keep = (data[:-1] if trailing else data).split(b"\n")[-n:]
    return end - (sum(len(p) + 1 for p in keep) - (0 if trailing else 1)), len(keep)


def _emit(data: bytes) -> None:
    if data:
        sys.stdout.write(data.decode("utf-8", "replace"))
        sys.stdout.flush()


def _pump(f, partial: bytes) -> bytes:
    """Print the complete lines appended to f since the last read; keep an unfinished one."""
    data = f.read()
    if not data:
        return partial
    head, sep, tail = (partial + data).rpartition(b"\n")
    _emit(head + sep)
    return tail


def _older_lines(path: str, n: int) -> bytes:
    try:
        with open(path, "rb") as f:
            start, _ = _tail_start(f, n)
            f.seek(start)
            data = f.read()
    except OSError:
        return b""
    return data if not data or data.endswith(b"\n") else data + b"\n"


def _open(path: str):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ServiceError("LOG_UNREADABLE", f"cannot read {path}: {e.strerror}") from None


def tail_logs(follow: bool, lines: int, paths: Paths | None = None, poll_s: float = 0.2) -> int:
    """Print the last `lines` lines of gnod's log (reaching into gnod.log.1 when the current file
    is shorter); with follow, keep printing new ones across rotations until Ctrl-C."""
    log = log_paths(paths)["log"]
    f = _open(log)
    partial = b""
    try:
        if f is None:
            print(f"gnoctl: no log yet; gnod will write it to {log}", file=sys.stderr)
            if not follow:
                return 0
        else:
            start, shown = _tail_start(f, lines)
            if shown < lines:
                _emit(_older_lines(f"{log}.1", lines - shown))
            f.seek(start)
            partial = _pump(f, partial)
        while follow:
            time.sleep(poll_s)
            if f is not None:
                partial = _pump(f, partial)
            try:
                st = os.stat(log)
            except FileNotFoundError:
                continue  # mid-rotation: the new file is not there yet
            if f is None or st.st_ino != os.fstat(f.fileno()).st_ino:
                if f is not None:  # rotated: finish the old file, then start the new one from its top
                    partial = _pump(f, partial)
                    f.close()
                    _emit(partial + b"\n" if partial else b"")
                    partial = b""
                f = _open(log)
            elif st.st_size < f.tell():  # truncated in place
                f.seek(0)
                partial = b""
        _emit(partial + b"\n" if partial else b"")
        return 0
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:  # `gnoctl daemon logs | head`: the reader has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if f is not None:
            f.close()
