"""`gnoctl mcp install|uninstall|status`: each MCP client's own config file, on a temporary
HOME, through the real CLI.

Each fixture is written from that client's documented format, with another server (and
comments, other keys, other tables where the format has them): installing must keep all
of it, as written; uninstalling must give back the very same text.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gnoctl.mcp import jsonc

pytestmark = pytest.mark.timeout(120)

GNOCTL = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "gnoctl")
MAC = sys.platform == "darwin"

# Claude Desktop's documented example, and the other keys its file holds.
CLAUDE_DESKTOP = """{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/username/Desktop"]
    }
  },
  "globalShortcut": "Ctrl+Space"
}
"""
# ~/.claude.json: Claude Code's own state beside the user-scope servers; a project's
# servers (local scope) are under "projects" and must stay where they are.
CLAUDE_CODE = """{
  "numStartups": 12,
  "projects": {
    "/home/me/src/app": {
      "allowedTools": [],
      "mcpServers": {
        "local-db": {"type": "stdio", "command": "pg-mcp", "args": [], "env": {}}
      }
    }
  },
  "mcpServers": {
    "context7": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@upstash/context7-mcp"],
      "env": {}
    }
  }
}"""
CLAUDE_CODE_PROJECT = """{
  "mcpServers": {
    "shared-server": {
      "command": "/path/to/server",
      "args": [],
      "env": {}
    }
  }
}
"""
CURSOR = """{
  "mcpServers": {
    "server-name": {
      "command": "npx",
      "args": ["-y", "mcp-server"],
      "env": {
        "API_KEY": "value"
      }
    }
  }
}
"""
# VS Code's mcp.json: "servers" and "inputs", comments allowed.
VSCODE = """{
  // My MCP servers (see https://code.visualstudio.com/docs/copilot/reference/mcp-configuration)
  "inputs": [
    {
      "type": "promptString",
      "id": "perplexity-key",
      "description": "Perplexity API Key",
      "password": true
    }
  ],
  "servers": {
    /* the search server */
    "Perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": {
        "PERPLEXITY_API_KEY": "${input:perplexity-key}"
      }
    }
  }
}
"""
# Zed's settings.json as Zed writes it (the header comment), with trailing commas.
ZED = """// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
{
  "ui_font_size": 16,
  "buffer_font_size": 15, // a bit smaller
  "context_servers": {
    "local-mcp-server": {
      "command": "some-command",
      "args": ["arg-1", "arg-2"],
      "env": {},
    },
  },
  /* follow the system */
  "theme": {
    "mode": "system",
    "light": "One Light",
    "dark": "One Dark",
  },
}
"""
WINDSURF = """{
    "mcpServers": {
        "github": {
            "command": "docker",
            "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
            "env": {
                "GITHUB_PERSONAL_ACCESS_TOKEN": "YOUR_GITHUB_PAT"
            }
        }
    }
}
"""
CODEX = """# Codex configuration
model = "gpt-5-codex"  # the default model
approval_policy = "on-request"

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]

# a remote one
[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"

[profiles.deep]
model = "o3"  # slower
"""

APP = "Library/Application Support" if MAC else ".config"
# target → (file under HOME, fixture, the map of servers, syntax, the other server)
TARGETS = {
    "claude-desktop": (f"{APP}/Claude/claude_desktop_config.json", CLAUDE_DESKTOP, "mcpServers", "json", "filesystem"),
    "claude-code": (".claude.json", CLAUDE_CODE, "mcpServers", "json", "context7"),
    "cursor": (".cursor/mcp.json", CURSOR, "mcpServers", "json", "server-name"),
    "vscode": (f"{APP}/Code/User/mcp.json", VSCODE, "servers", "jsonc", "Perplexity"),
    "zed": (".config/zed/settings.json", ZED, "context_servers", "jsonc", "local-mcp-server"),
    "windsurf": (".codeium/windsurf/mcp_config.json", WINDSURF, "mcpServers", "json", "github"),
    "codex": (".codex/config.toml", CODEX, "mcp_servers", "toml", "context7"),
}
PROJECT = {
    "claude-code": (".mcp.json", CLAUDE_CODE_PROJECT),
    "cursor": (".cursor/mcp.json", CURSOR),
    "vscode": (".vscode/mcp.json", VSCODE),
}


def ours(target: str, *extra: str) -> dict:
    entry = {"command": GNOCTL, "args": ["mcp", *extra]}
    return {"type": "stdio", **entry} if target == "vscode" else entry


def parse(text: str, syntax: str) -> dict:
    return tomllib.loads(text) if syntax == "toml" else jsonc.load(text, syntax == "jsonc")


@pytest.fixture
def home(tmp_path) -> str:
    path = tmp_path / "home"
    path.mkdir()
    return str(path)


@pytest.fixture
def env(home) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR")}
    return {**out, "HOME": home, "GNO_HOME": os.path.join(home, "gno")}


def gnoctl(*args: str, env: dict, cwd: str | None = None, expect: int = 0) -> subprocess.CompletedProcess:
    r = subprocess.run(
        [sys.executable, "-m", "gnoctl.main", *args],
        env=env,
        cwd=cwd or env["HOME"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == expect, f"gnoctl {' '.join(args)} → {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    assert "Traceback" not in r.stderr
    return r


def gnoctl_json(*args: str, env: dict, cwd: str | None = None, expect: int = 0) -> dict:
    return json.loads(gnoctl(*args, "--json", env=env, cwd=cwd, expect=expect).stdout)


def write(path: str, text: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        f.write(text)
    return path


def read(path: str) -> str:
    with open(path, newline="") as f:
        return f.read()


def status_row(res: dict, target: str, scope: str = "user") -> dict:
    return next(r for r in res["targets"] if r["target"] == target and r["scope"] == scope)


# --- each client, its documented file ------------------------------------------------------


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_install_dry_run_reinstall_status_uninstall(target, home, env):
    rel, original, key, syntax, other = TARGETS[target]
    path = write(os.path.join(home, rel), original)

    # --dry-run: a unified diff (human text, even in a pipe), and nothing written.
    r = gnoctl("mcp", "install", "--target", target, "--dry-run", env=env)
    assert r.stdout.startswith(f"--- {path}\n+++ {path}\n@@ ")
    diff = r.stdout.splitlines()[2:]
    assert all(line[:1] in " +-@" for line in diff)
    assert any(line.startswith("+") and GNOCTL in line for line in diff)
    assert read(path) == original
    assert sorted(os.listdir(os.path.dirname(path))) == [os.path.basename(path)]  # no temp file left

    status = status_row(gnoctl_json("mcp", "status", env=env), target)
    assert status == {**status, "path": path, "exists": True, "configured": False, "entry": None, "error": None}

    res = gnoctl_json("mcp", "install", "--target", target, env=env)
    assert res == {
        **res,
        "target": target,
        "scope": "user",
        "path": path,
        "name": "gno",
        "entry": ours(target),
        "previous": None,
        "changed": True,
        "written": True,
    }
    text = read(path)
    config, before = parse(text, syntax), parse(original, syntax)
    assert config[key]["gno"] == ours(target)
    assert config[key][other] == before[key][other]
    del config[key]["gno"]
    assert config == before  # everything else as it was
    if syntax == "json":
        json.loads(text)  # still strict JSON (no trailing comma, no comment)
    for line in original.splitlines():  # every line kept (a comma may have been added to one)
        assert line in text or line + "," in text

    # Again: nothing to do, the file is not even rewritten.
    mtime = os.stat(path).st_mtime_ns
    res = gnoctl_json("mcp", "install", "--target", target, env=env)
    assert res["changed"] is False and res["written"] is False and res["previous"] == ours(target)
    assert read(path) == text and os.stat(path).st_mtime_ns == mtime
    assert gnoctl("mcp", "install", "--target", target, "--human", env=env).stdout.startswith(
        "gno is already configured in "
    )

    status = status_row(gnoctl_json("mcp", "status", env=env), target)
    assert status == {
        **status,
        "exists": True,
        "configured": True,
        "entry": ours(target),
        "command_found": True,
        "this_gnoctl": True,
    }
    assert GNOCTL in gnoctl("mcp", "status", "--human", env=env).stdout

    # Uninstall gives back the very same text; a second one has nothing to remove.
    res = gnoctl_json("mcp", "uninstall", "--target", target, env=env)
    assert res["changed"] is True and res["previous"] == ours(target)
    assert read(path) == original
    res = gnoctl_json("mcp", "uninstall", "--target", target, env=env)
    assert res["changed"] is False and res["written"] is False
    assert status_row(gnoctl_json("mcp", "status", env=env), target)["configured"] is False


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_malformed_file_is_left_untouched(target, home, env):
    rel, original, _, syntax, _ = TARGETS[target]
    broken = original + ("\n[mcp_servers\n" if syntax == "toml" else "\n}\n")
    path = write(os.path.join(home, rel), broken)
    for verb in ("install", "uninstall"):
        out = gnoctl_json("mcp", verb, "--target", target, env=env, expect=2)
        assert out["error"]["code"] == "MALFORMED_CONFIG" and out["error"]["details"]["path"] == path
        assert read(path) == broken
    r = gnoctl("mcp", "install", "--target", target, "--human", env=env, expect=2)
    assert f"{path} is not valid {'TOML' if syntax == 'toml' else 'JSON'}" in r.stderr
    row = status_row(gnoctl_json("mcp", "status", env=env), target)  # status still reports the others: exit 0
    assert row["exists"] is True and "is not valid" in row["error"]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_missing_file_is_created(target, home, env):
    rel, _, key, syntax, _ = TARGETS[target]
    res = gnoctl_json("mcp", "install", "--target", target, "--enable-write", env=env)
    path = os.path.join(home, rel)
    assert res["path"] == path and res["written"] is True
    assert parse(read(path), syntax) == {key: {"gno": ours(target, "--enable-write")}}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("target", sorted(PROJECT))
def test_project_scope_is_the_file_in_the_current_directory(target, home, env, tmp_path):
    rel, original = PROJECT[target]
    project = tmp_path / "project"
    path = write(str(project / rel), original)
    res = gnoctl_json("mcp", "install", "--target", target, "--scope", "project", env=env, cwd=str(project))
    assert res["path"] == path and res["scope"] == "project"
    key = TARGETS[target][2]
    assert jsonc.load(read(path), True)[key]["gno"] == ours(target)
    assert not os.path.exists(os.path.join(home, TARGETS[target][0]))  # the user's file is not touched
    row = status_row(gnoctl_json("mcp", "status", env=env, cwd=str(project)), target, "project")
    assert row["path"] == path and row["configured"] is True
    gnoctl_json("mcp", "uninstall", "--target", target, "--scope", "project", env=env, cwd=str(project))
    assert read(path) == original


def test_a_client_without_project_files_says_so(env):
    out = gnoctl_json("mcp", "install", "--target", "zed", "--scope", "project", env=env, expect=2)
    assert out["error"]["code"] == "NO_PROJECT_SCOPE"


# --- what is replaced, and what is not -------------------------------------------------------


def test_a_different_entry_is_replaced_only_with_force(home, env):
    rel, _, _, _, _ = TARGETS["cursor"]
    theirs = {"command": "/opt/old/gnoctl", "args": ["mcp"]}
    text = json.dumps({"mcpServers": {"gno": theirs, "server-name": {"command": "npx", "args": []}}}, indent=2)
    path = write(os.path.join(home, rel), text)
    out = gnoctl_json("mcp", "install", "--target", "cursor", env=env, expect=2)
    assert out["error"]["code"] == "ENTRY_CONFLICT" and out["error"]["details"]["previous"] == theirs
    r = gnoctl("mcp", "install", "--target", "cursor", "--human", env=env, expect=2)
    assert "/opt/old/gnoctl" in r.stderr and GNOCTL in r.stderr and "--force" in r.stderr
    assert read(path) == text

    res = gnoctl_json("mcp", "install", "--target", "cursor", "--force", env=env)
    assert res["previous"] == theirs and res["changed"] is True
    assert json.loads(read(path)) == {
        "mcpServers": {"gno": ours("cursor"), "server-name": {"command": "npx", "args": []}}
    }


def test_keys_the_user_added_to_our_entry_do_not_make_it_different(home, env):
    rel, _, _, _, _ = TARGETS["windsurf"]
    mine = {**ours("windsurf"), "env": {"GNO_HOME": "/data/gno"}, "disabled": False}
    path = write(os.path.join(home, rel), json.dumps({"mcpServers": {"gno": mine}}, indent=4))
    res = gnoctl_json("mcp", "install", "--target", "windsurf", env=env)
    assert res["changed"] is False
    assert json.loads(read(path))["mcpServers"]["gno"] == mine


def test_another_name_adds_a_second_entry(home, env):
    rel, original, _, _, _ = TARGETS["codex"]
    path = write(os.path.join(home, rel), original)
    gnoctl_json("mcp", "install", "--target", "codex", env=env)
    gnoctl_json("mcp", "install", "--target", "codex", "--name", "gno-write", "--enable-write", env=env)
    servers = tomllib.loads(read(path))["mcp_servers"]
    assert servers["gno"] == ours("codex") and servers["gno-write"] == ours("codex", "--enable-write")
    gnoctl_json("mcp", "uninstall", "--target", "codex", "--name", "gno-write", env=env)
    assert set(tomllib.loads(read(path))["mcp_servers"]) == {"context7", "figma", "gno"}


def test_a_tab_indented_file_gets_tabs_and_keeps_its_mode(home, env):
    rel = TARGETS["claude-desktop"][0]
    text = '{\n\t"mcpServers": {\n\t\t"a": {\n\t\t\t"command": "a"\n\t\t}\n\t}\n}\n'
    path = write(os.path.join(home, rel), text)
    os.chmod(path, 0o600)
    gnoctl_json("mcp", "install", "--target", "claude-desktop", env=env)
    assert f'\t\t"gno": {{\n\t\t\t"command": {json.dumps(GNOCTL)},\n\t\t\t"args": ["mcp"]\n\t\t}}\n' in read(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_symlinked_config_is_edited_at_its_target(home, env, tmp_path):
    rel, original, _, _, _ = TARGETS["zed"]
    dotfiles = write(str(tmp_path / "dotfiles" / "zed.json"), original)
    link = os.path.join(home, rel)
    os.makedirs(os.path.dirname(link))
    os.symlink(dotfiles, link)
    gnoctl_json("mcp", "install", "--target", "zed", env=env)
    assert os.path.islink(link) and os.readlink(link) == dotfiles
    assert jsonc.load(read(dotfiles), True)["context_servers"]["gno"] == ours("zed")


@pytest.mark.parametrize("target", ["zed", "vscode", "claude-desktop"])
def test_xdg_config_home_is_honoured_on_linux(target, home, env, tmp_path):
    if MAC and target != "zed":
        pytest.skip("Application Support on macOS")
    xdg, rel = str(tmp_path / "xdg"), TARGETS[target][0]
    res = gnoctl_json("mcp", "install", "--target", target, env={**env, "XDG_CONFIG_HOME": xdg})
    assert res["path"] == (os.path.join(home, rel) if MAC else os.path.join(xdg, rel.split("/", 1)[1]))
    assert os.path.exists(res["path"])


def test_codex_home_and_claude_config_dir_are_honoured(env, tmp_path):
    codex, claude = tmp_path / "codex-home", tmp_path / "claude-dir"
    res = gnoctl_json("mcp", "install", "--target", "codex", env={**env, "CODEX_HOME": str(codex)})
    assert res["path"] == str(codex / "config.toml")
    res = gnoctl_json("mcp", "install", "--target", "claude-code", env={**env, "CLAUDE_CONFIG_DIR": str(claude)})
    assert res["path"] == str(claude / ".claude.json")


# --- the entry, and the command line ---------------------------------------------------------


def test_the_entry_runs_this_gnoctl(home, env):
    res = gnoctl_json("mcp", "install", "--target", "cursor", env=env)
    command, args = res["entry"]["command"], res["entry"]["args"]
    assert command == GNOCTL and os.path.isabs(command) and os.access(command, os.X_OK)
    r = subprocess.run([command, *args, "--help"], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and "Serve gno to AI agents over MCP" in r.stdout


def test_without_a_console_script_the_entry_runs_the_module(env, tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    python = bare / "python"
    python.symlink_to(sys.executable)
    env = {**env, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    r = subprocess.run(
        [str(python), "-m", "gnoctl.main", "mcp", "install", "--target", "zed", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["entry"] == {"command": str(python), "args": ["-m", "gnoctl.main", "mcp"]}


def test_status_flags_a_command_that_is_gone(home, env):
    rel = TARGETS["claude-code"][0]
    write(os.path.join(home, rel), json.dumps({"mcpServers": {"gno": {"command": "/gone/gnoctl", "args": ["mcp"]}}}))
    res = gnoctl_json("mcp", "status", env=env)
    assert res["command"] == [GNOCTL, "mcp"]
    row = status_row(res, "claude-code")
    assert row["configured"] is True and row["command_found"] is False and row["this_gnoctl"] is False
    assert {r["target"] for r in res["targets"]} == set(TARGETS)
    assert "/gone/gnoctl mcp  (not found)  (not this gnoctl)" in gnoctl("mcp", "status", "--human", env=env).stdout


def test_serving_options_do_not_go_with_a_subcommand(env):
    r = gnoctl("mcp", "--enable-write", "status", env=env, expect=2)
    assert "serving options go with `gnoctl mcp` alone" in r.stderr
    gnoctl("mcp", "install", "--target", "emacs", env=env, expect=2)


def test_the_cli_knows_every_target():
    from gnoctl.cli import McpTarget
    from gnoctl.mcp.install import TARGETS as KNOWN

    assert [t.value for t in McpTarget] == list(KNOWN) and set(KNOWN) == set(TARGETS)


# --- the JSON editor ------------------------------------------------------------------------------

ENTRY = {"command": "/x/gnoctl", "args": ["mcp"]}


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            '{"mcpServers": {"a": {"command": "a"}}}',  # one line stays one line
            '{"mcpServers": {"a": {"command": "a"}, "gno": {"command": "/x/gnoctl", "args": ["mcp"]}}}',
        ),
        (
            '{\r\n  "mcpServers": {}\r\n}\r\n',  # CRLF stays CRLF
            '{\r\n  "mcpServers": {\r\n    "gno": {\r\n      "command": "/x/gnoctl",\r\n      "args": ["mcp"]\r\n'
            "    }\r\n  }\r\n}\r\n",
        ),
        (
            '{\n  "a": "// not a comment", /* }, */\n  "b": 1 // last\n}\n',  # comment-like strings, comments after
            '{\n  "a": "// not a comment", /* }, */\n  "b": 1, // last\n  "mcpServers": {\n    "gno": {\n'
            '      "command": "/x/gnoctl",\n      "args": ["mcp"]\n    }\n  }\n}\n',
        ),
        (
            "",
            '{\n  "mcpServers": {\n    "gno": {\n      "command": "/x/gnoctl",\n      "args": ["mcp"]\n    }\n  }\n}\n',
        ),
    ],
)
def test_jsonc_put(text, expected):
    assert jsonc.put(text, ["mcpServers", "gno"], ENTRY, True) == expected


def test_jsonc_refuses_what_is_not_a_map():
    for text in ("[1]", '{"mcpServers": [1]}', '{"a": 1,,}'):
        with pytest.raises(jsonc.JsoncError):
            jsonc.put(text, ["mcpServers", "gno"], ENTRY, True)
    with pytest.raises(jsonc.JsoncError, match="line 1"):
        jsonc.load('{"a": 1, // no\n}', False)  # comments are for JSONC files only


servers = st.dictionaries(
    st.text(min_size=1).filter(lambda k: k != "gno"),
    st.dictionaries(st.text(), st.one_of(st.text(), st.integers(), st.lists(st.text()))),
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(
    servers=servers,
    others=st.dictionaries(st.text().filter(lambda k: k != "mcpServers"), st.integers(), max_size=3),
    indent=st.sampled_from([None, 2, 4, "\t"]),
    last=st.booleans(),
)
def test_jsonc_put_then_remove_gives_back_the_text(servers, others, indent, last):
    doc = {**others, "mcpServers": servers} if last else {"mcpServers": servers, **others}
    text = json.dumps(doc, indent=indent)
    new = jsonc.put(text, ["mcpServers", "gno"], ENTRY, False)
    assert json.loads(new) == {**doc, "mcpServers": {**servers, "gno": ENTRY}}
    assert jsonc.put(new, ["mcpServers", "gno"], ENTRY, False) == new
    assert jsonc.remove(new, ["mcpServers", "gno"], False) == text
