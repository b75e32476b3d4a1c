"""Where each MCP client keeps its servers, and our entry set in or taken out of that file.

Imported only by `gnoctl mcp install|uninstall|status`. Every client documents its own
file and shape (a map of servers under a key of its choosing, JSON, JSON with comments
or TOML). The file is edited, not rewritten: the other servers, the user's comments,
order and indentation stay as they were (gnoctl.mcp.jsonc for JSON, tomlkit for TOML);
the new text replaces the old atomically, through a symlink to its target.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gnoctl.client import LocalError
from gnoctl.mcp import jsonc


class InstallError(LocalError):
    """An MCP client's config file could not be read, understood or written."""


def _home() -> str:
    return os.path.expanduser("~")


def _xdg_config() -> str:
    base = os.environ.get("XDG_CONFIG_HOME", "")
    return base if os.path.isabs(base) else os.path.join(_home(), ".config")  # the spec ignores a relative one


def _app_config(app: str) -> str:
    """An Electron app's config folder: Application Support on macOS, XDG on Linux."""
    if sys.platform == "darwin":
        return os.path.join(_home(), "Library", "Application Support", app)
    return os.path.join(_xdg_config(), app)


def _zed_settings() -> str:
    # Zed honours XDG_CONFIG_HOME on Linux only; on macOS it is always ~/.config/zed.
    base = _xdg_config() if sys.platform != "darwin" else os.path.join(_home(), ".config")
    return os.path.join(base, "zed", "settings.json")


@dataclass(frozen=True)
class Target:
    name: str
    label: str
    key: str  # the map of servers in the file
    syntax: str  # "json", "jsonc" (comments and trailing commas allowed) or "toml"
    user_file: Callable[[], str]
    project_file: str | None = None  # relative to the current directory
    stdio_type: bool = False  # the entry says "type": "stdio" (VS Code requires it)


TARGETS = {
    t.name: t
    for t in (
        Target(
            "claude-desktop",
            "Claude Desktop",
            "mcpServers",
            "json",
            lambda: os.path.join(_app_config("Claude"), "claude_desktop_config.json"),
        ),
        Target(
            "claude-code",
            "Claude Code",
            "mcpServers",
            "json",
            lambda: os.path.join(os.environ.get("CLAUDE_CONFIG_DIR") or _home(), ".claude.json"),
            ".mcp.json",
        ),
        Target(
            "cursor",
            "Cursor",
            "mcpServers",
            "json",
            lambda: os.path.join(_home(), ".cursor", "mcp.json"),
            os.path.join(".cursor", "mcp.json"),
        ),
        Target(
            "vscode",
            "VS Code",
            "servers",
            "jsonc",
            lambda: os.path.join(_app_config("Code"), "User", "mcp.json"),
            os.path.join(".vscode", "mcp.json"),
            stdio_type=True,
        ),
        Target("zed", "Zed", "context_servers", "jsonc", _zed_settings),
        Target(
            "windsurf",
            "Windsurf",
            "mcpServers",
            "json",
            lambda: os.path.join(_home(), ".codeium", "windsurf", "mcp_config.json"),
        ),
        Target(
            "codex",
            "Codex",
            "mcp_servers",
            "toml",
            lambda: os.path.join(os.environ.get("CODEX_HOME") or os.path.join(_home(), ".codex"), "config.toml"),
        ),
    )
}
SCOPES = ("user", "project")


def _gnoctl_command() -> list[str]:
    """This gnoctl by absolute path: the console script beside this Python (a venv's
    bin/), else this Python running the module. The venv's path is kept as it is, not
    resolved: its python symlink is what makes it the venv."""
    bindir = os.path.dirname(os.path.abspath(sys.executable))
    script = os.path.join(bindir, "gnoctl")
    return [script] if os.access(script, os.X_OK) else [os.path.abspath(sys.executable), "-m", "gnoctl.main"]


def _entry(target: Target, enable_write: bool) -> dict:
    command, *args = _gnoctl_command()
    ours = {"command": command, "args": [*args, "mcp", *(["--enable-write"] if enable_write else [])]}
    return {"type": "stdio", **ours} if target.stdio_type else ours


def _same(found: Any, ours: dict) -> bool:
    """The entry runs what ours would; keys the user added (env, disabled…) do not count."""
    return isinstance(found, dict) and all(found.get(k) == v for k, v in ours.items())


def _config_path(target: Target, scope: str) -> str:
    if scope == "user":
        return target.user_file()
    if target.project_file is None:
        raise InstallError(
            "NO_PROJECT_SCOPE", f"{target.label} has no project config file; use --scope user", {"target": target.name}
        )
    return os.path.join(os.getcwd(), target.project_file)


def _read(path: str) -> str | None:
    """The file's text as written (line endings kept), or None when there is none."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise InstallError(
            "MALFORMED_CONFIG", f"{path} is not UTF-8 text; fix it (or move it away) and run again", {"path": path}
        ) from None
    except OSError as e:
        raise InstallError("IO_ERROR", f"cannot read {path}: {e.strerror}", {"path": path}) from None


def _malformed(target: Target, path: str, why: str) -> InstallError:
    kind = {"json": "JSON", "jsonc": "JSON", "toml": "TOML"}[target.syntax]
    return InstallError(
        "MALFORMED_CONFIG",
        f"{path} is not valid {kind}: {why}; fix it (or move it away) and run again; nothing was changed",
        {"path": path},
    )


def _servers(target: Target, path: str, text: str) -> dict:
    """The file's map of MCP servers ({} when it has none)."""
    try:
        if target.syntax == "toml":
            import tomlkit

            found = tomlkit.parse(text).unwrap().get(target.key)
        else:
            found = jsonc.load(text, target.syntax == "jsonc").get(target.key)
    except (jsonc.JsoncError, ValueError) as e:  # tomlkit's ParseError is a ValueError
        raise _malformed(target, path, str(e)) from None
    if found is not None and not isinstance(found, dict):
        raise _malformed(target, path, f"{target.key} is not a map of servers")
    return found or {}


def _edited(target: Target, text: str, name: str, value: dict | None) -> str:
    """`text` with our entry set to `value` (None: taken out)."""
    if target.syntax == "toml":
        return _toml_edited(text, target.key, name, value)
    comments = target.syntax == "jsonc"
    path = [target.key, name]
    return jsonc.put(text, path, value, comments) if value is not None else jsonc.remove(text, path, comments)


def _toml_edited(text: str, key: str, name: str, value: dict | None) -> str:
    import tomlkit
    from tomlkit.items import InlineTable

    doc = tomlkit.parse(text)
    table = doc.get(key)
    if value is None and table is not None and name in table:
        del table[name]
    elif value is not None:
        if table is None:
            if text.strip() and not text.endswith("\n\n"):
                doc.add(tomlkit.nl())  # a blank line before the new table, as between the others
            doc[key] = tomlkit.table(is_super_table=True)  # only [mcp_servers.NAME] headers, as Codex writes
            table = doc[key]
        new = tomlkit.inline_table() if isinstance(table, InlineTable) else tomlkit.table()
        new.update(value)
        if not isinstance(table, InlineTable):
            new.add(tomlkit.nl())  # the blank line before the table that may follow
        table[name] = new
    out = tomlkit.dumps(doc)
    # No blank line at the end that the file did not have (ours was last).
    return out[:-1] if out.endswith("\n\n") and not text.endswith("\n\n") else out


def _diff(path: str, old: str | None, new: str) -> str:
    lines = difflib.unified_diff(
        (old or "").splitlines(), new.splitlines(), "/dev/null" if old is None else path, path, lineterm=""
    )
    return "\n".join(lines)


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _write(path: str, old: str | None, new: str) -> None:
    """Replace the file atomically (temp file + rename), keeping its mode; a symlinked
    file (dotfiles) is written at its target, the link stays. Refuses when the file
    changed since it was read (the client itself rewrote it meanwhile)."""
    real = os.path.realpath(path)
    folder = os.path.dirname(real)
    try:
        os.makedirs(folder, exist_ok=True)
        mode = stat.S_IMODE(os.stat(real).st_mode) if old is not None else _umask_mode()
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(real)}.", suffix=".tmp")
    except OSError as e:
        raise InstallError("IO_ERROR", f"cannot write {path}: {e.strerror}", {"path": path}) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(new)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        if _read(real) != old:
            raise InstallError(
                "CONFIG_CHANGED",
                f"{path} changed while gnoctl was editing it; run the command again",
                {"path": path},
            )
        os.replace(tmp, real)
    except OSError as e:
        os.unlink(tmp)
        raise InstallError("IO_ERROR", f"cannot write {path}: {e.strerror}", {"path": path}) from None
    except BaseException:
        os.unlink(tmp)
        raise


def _change(result: dict, old: str | None, new: str | None, dry_run: bool) -> dict:
    """Write `new` unless it is what the file holds or this is a dry run; say what changed."""
    if new is None or new == old:
        return {**result, "changed": False, "written": False, "dry_run": dry_run, "diff": ""}
    if not dry_run:
        _write(result["path"], old, new)
    return {
        **result,
        "changed": True,
        "written": not dry_run,
        "dry_run": dry_run,
        "diff": _diff(result["path"], old, new),
    }


def _located(target_name: str, scope: str, name: str) -> tuple[Target, dict]:
    if not name.strip():
        raise InstallError("INVALID_NAME", "the server's name (--name) is empty")
    target = TARGETS[target_name]
    path = _config_path(target, scope)
    return target, {"target": target.name, "label": target.label, "scope": scope, "path": path, "name": name}


def install(target_name: str, scope: str, name: str, enable_write: bool, force: bool, dry_run: bool) -> dict:
    """Add our entry to the client's file (or replace a different one, with `force`)."""
    target, result = _located(target_name, scope, name)
    path = result["path"]
    old = _read(path)
    ours = _entry(target, enable_write)
    previous = _servers(target, path, old).get(name) if old is not None else None
    result.update(entry=ours, previous=previous)
    if _same(previous, ours):
        return _change(result, old, None, dry_run)
    if previous is not None and not force:
        raise InstallError(
            "ENTRY_CONFLICT",
            f"{path} already has a different {name!r} server:\n  there: {json.dumps(previous)}\n"
            f"  ours:  {json.dumps(ours)}\n"
            "run again with --force to replace it, or --name to add ours under another name",
            result,
        )
    return _change(result, old, _edited(target, old or "", name, ours), dry_run)


def uninstall(target_name: str, scope: str, name: str, dry_run: bool) -> dict:
    """Take our entry out of the client's file; the other servers stay as they are."""
    target, result = _located(target_name, scope, name)
    path = result["path"]
    old = _read(path)
    previous = _servers(target, path, old).get(name) if old is not None else None
    result["previous"] = previous
    new = _edited(target, old, name, None) if old is not None and previous is not None else None
    return _change(result, old, new, dry_run)


def _found(command: Any) -> bool:
    if not isinstance(command, str) or not command:
        return False
    if os.path.isabs(command):
        return os.path.isfile(command) and os.access(command, os.X_OK)
    return shutil.which(command) is not None


def _where(target: Target, scope: str, name: str, ours: str) -> dict:
    """One config file: does it exist, is `name` there, what does it run, is that on disk."""
    path = _config_path(target, scope)
    row: dict[str, Any] = {
        "target": target.name,
        "label": target.label,
        "scope": scope,
        "path": path,
        "exists": False,
        "configured": False,
        "entry": None,
        "command_found": None,
        "this_gnoctl": None,
        "error": None,
    }
    try:
        text = _read(path)
        found = _servers(target, path, text).get(name) if text is not None else None
    except InstallError as e:
        return {**row, "exists": os.path.exists(path), "error": e.message}
    if text is None:
        return row
    row["exists"] = True
    if found is not None:
        command = found.get("command") if isinstance(found, dict) else None
        row.update(configured=True, entry=found, command_found=_found(command), this_gnoctl=command == ours)
    return row


def status(name: str) -> dict:
    """Every known client config file (user scope, and the current directory's project
    files): where gno is configured and whether what it runs is there."""
    command = _gnoctl_command()
    rows: list[dict] = []
    for target in TARGETS.values():
        for scope in SCOPES if target.project_file else ("user",):
            row = _where(target, scope, name, command[0])
            if not any(r["path"] == row["path"] for r in rows):  # in your home, the project file is yours
                rows.append(row)
    return {"name": name, "command": [*command, "mcp"], "targets": rows}
