"""`daemon start|stop|status|restart|install|uninstall`: what happened, in a sentence."""

from __future__ import annotations

import sys

from gnoctl.output.common import dump


def started_lines(msg: dict) -> list[str]:
    return [f"gnod started (pid {msg['pid']})" if msg["started"] else "gnod is already running"]


def stopped_lines(msg: dict, timeout: float) -> list[str]:
    if msg.get("killed"):
        return [f"gnod did not stop within {timeout:g} s: killed it (pid {msg['pid']})"]
    return ["gnod stopped" if msg["stopped"] else "gnod was not running"]


def running_lines(msg: dict) -> list[str]:
    """`daemon status`: running (with its pid and uptime) or not, and the socket."""
    if msg.get("starting_pid"):
        return [
            f"gnod (pid {msg['starting_pid']}) is starting, not listening yet (socket {msg['socket']}); "
            "a first start after an upgrade migrates the index: `gnoctl daemon logs` says so"
        ]
    if not msg["running"]:
        return [f"gnod is not running (socket {msg['socket']})"]
    return [f"gnod is running (pid {msg['pid']}, up {msg['uptime_s']:.0f}s, socket {msg['socket']})"]


def write_service_file(res: dict, fmt: str) -> None:
    """`daemon install --print`: the file itself (or, as JSON, with where it would go)."""
    dump(res) if fmt == "json" else sys.stdout.write(res["content"])


def installed_lines(res: dict) -> list[str]:
    lines = [f"installed {res['path']}: gnod starts at login and is running now"]
    if res["stopped_running"]:
        lines.append("(the gnod gnoctl had started was stopped: the service manager runs it now)")
    return lines + [f"status: {res['status']}", f"logs:   gnoctl daemon logs -f  ({res['logs']['log']})"]


def uninstalled_lines(res: dict) -> list[str]:
    if res["removed"]:
        return [f"removed {res['path']}: gnod is stopped and no longer starts at login"]
    return [f"gnod was not installed as a service (no {res['path']})"]
