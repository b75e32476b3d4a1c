"""`mcp install|uninstall|status`: what changed in an MCP client's config file, or where
gno is configured."""

from __future__ import annotations

import shlex

from gnoctl import fastjson


def command_line(entry) -> str:
    """What an entry runs, as a shell would read it (anything else: its JSON)."""
    if isinstance(entry, dict) and isinstance(entry.get("command"), str):
        args = entry.get("args") or []
        return shlex.join([entry["command"], *(a for a in args if isinstance(a, str))])
    return fastjson.dumps(entry)


def installed_lines(res: dict) -> list[str]:
    """The diff with --dry-run; else what was done and what the client needs now."""
    where = f"{res['path']} ({res['label']})"
    if not res["changed"]:
        return [f"{res['name']} is already configured in {where}"]
    if res["dry_run"]:
        return res["diff"].splitlines()
    verb = "replaced" if res["previous"] is not None else "added"
    return [
        f"{verb} {res['name']} in {where}: runs {command_line(res['entry'])}",
        f"restart {res['label']} (or reload its MCP servers) to use it",
    ]


def uninstalled_lines(res: dict) -> list[str]:
    where = f"{res['path']} ({res['label']})"
    if not res["changed"]:
        return [f"{res['name']} is not configured in {where}"]
    if res["dry_run"]:
        return res["diff"].splitlines()
    return [f"removed {res['name']} from {where} (the other servers are as they were)"]


def _state(row: dict) -> str:
    if row["error"]:
        return "unreadable"
    if not row["exists"]:
        return "no file"
    return "configured" if row["configured"] else "not configured"


def status_lines(res: dict) -> list[str]:
    """One line per client config file; under a configured one, what it runs, flagged when
    that is not on disk or not this gnoctl."""
    lines = [f"this gnoctl's entry runs: {shlex.join(res['command'])}"]
    for row in res["targets"]:
        lines.append(f"{row['target']:<15} {row['scope']:<8} {_state(row):<15} {row['path']}")
        if row["error"]:
            lines.append(f"{'':<40} {row['error']}")
        elif row["configured"]:
            flags = ("" if row["command_found"] else "  (not found)") + (
                "" if row["this_gnoctl"] else "  (not this gnoctl)"
            )
            lines.append(f"{'':<40} runs {command_line(row['entry'])}{flags}")
    return lines
