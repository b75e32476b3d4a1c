"""The editor clients run for real against a real gnod: Neovim headless with
editors/nvim, Emacs in batch mode with editors/emacs/gno.el. Under CI=true a missing
editor fails the test (`.ci/run` installs Debian's neovim and emacs-nox)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import wait_until

pytestmark = pytest.mark.timeout(120)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NVIM_DIR = os.path.join(ROOT, "editors", "nvim")
GNO_EL = os.path.join(ROOT, "editors", "emacs", "gno.el")
GNOCTL = [sys.executable, "-m", "gnoctl.main"]


def need(editor: str) -> str:
    path = shutil.which(editor)
    if path is None:
        message = f"{editor} is not installed (apt-get install -y neovim emacs-nox; .ci/run does it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def indexed(daemon, corpus):
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    return daemon


def nvim(env: dict, tmp_path, lua: str) -> dict:
    """Run `lua` in a headless Neovim with the plugin; it sets `result`, returned decoded."""
    exe = need("nvim")
    out = tmp_path / "nvim-out.json"
    script = tmp_path / "test.lua"
    script.write_text(f"""
local ok, value = pcall(function()
  local result = {{}}
{lua}
  return result
end)
local f = io.open({json.dumps(str(out))}, 'w')
f:write(vim.json.encode(ok and value or {{ error = tostring(value) }}))
f:close()
vim.cmd('qa!')
""")
    r = subprocess.run([exe, "--headless", "--clean", "--cmd", f"set rtp^={NVIM_DIR}", "-c", f"luafile {script}",
                        "-c", "cquit 3"],  # reached only when the script itself failed to run
                       env={**env, "PYTHONPATH": ROOT}, cwd=ROOT, capture_output=True, text=True, timeout=90,
                       stdin=subprocess.DEVNULL)
    assert out.exists(), f"nvim did not finish the script: {r.returncode}\n{r.stdout}\n{r.stderr}"
    got = json.loads(out.read_text())
    assert "error" not in got, got["error"]
    return got


QF = """
  local qf = {}
  for _, e in ipairs(vim.fn.getqflist()) do
    table.insert(qf, { file = vim.api.nvim_buf_get_name(e.bufnr), lnum = e.lnum, text = e.text })
  end
"""


def expected(daemon, corpus, method: str, query: str) -> list[tuple[str, int]]:
    hits = daemon.result(method, {"query": query, "limit": 50})["hits"]
    line = (lambda h: h["snippet"]["line"]) if method == "search" else (lambda h: h["preview"]["start_line"])
    return [(os.path.realpath(h["abs_path"]), line(h)) for h in hits]


def located(entries: list[dict]) -> list[tuple[str, int]]:
    return [(os.path.realpath(e["file"]), e["lnum"]) for e in entries]


def test_nvim_gno_fills_the_quickfix_list_over_the_socket(indexed, corpus, tmp_path):
    got = nvim(indexed.env, tmp_path, """
  vim.cmd('Gno deploy production')
""" + QF + """
  result.search = qf
  result.transport = require('gno').last_transport
  result.window = vim.bo.buftype
  vim.cmd('GnoQuery deploy production')
""" + QF + """
  result.query = qf
""")
    assert got["transport"] == "socket" and got["window"] == "quickfix"
    assert located(got["search"]) == expected(indexed, corpus, "search", "deploy production")
    assert got["search"][0]["file"].endswith("guides/deploy.md") and "Deployment guide" in got["search"][0]["text"]
    assert located(got["query"]) == expected(indexed, corpus, "query", "deploy production")


def test_nvim_falls_back_to_gnoctl_json_without_the_socket(indexed, corpus, tmp_path):
    got = nvim(indexed.env, tmp_path, f"""
  require('gno').setup({{ socket = {json.dumps(str(tmp_path / 'absent.sock'))}, gnoctl = {{ {", ".join(json.dumps(a) for a in GNOCTL)} }} }})
  vim.cmd('Gno deploy production')
""" + QF + """
  result.search = qf
  result.transport = require('gno').last_transport
""")
    assert got["transport"] == "cli"
    assert located(got["search"]) == expected(indexed, corpus, "search", "deploy production")


def test_nvim_live_picker_requeries_as_you_type_and_on_changes_and_opens_the_hit(indexed, corpus, tmp_path):
    got = nvim(indexed.env, tmp_path, """
  local picker = require('gno.picker')
  picker.pick('')
  local state = picker.current
  local function type_text(text)
    vim.api.nvim_buf_set_lines(state.prompt_buf, 0, -1, false, { state.prefix .. text })
    vim.api.nvim_exec_autocmds('TextChangedI', { buffer = state.prompt_buf })
    assert(vim.wait(5000, function() return state.shown == text end, 10), 'no reply for ' .. text)
    return vim.api.nvim_buf_get_lines(state.list_buf, 0, -1, false)
  end
  result.first = type_text('pasta')
  result.second = type_text('staging branch')
  -- A file saved while the picker shows a query joins its hits without a keystroke.
  local f = io.open(%s, 'w')
  f:write('# Staging branch notes\\n\\nA staging branch checklist.\\n')
  f:close()
  assert(vim.wait(10000, function()
    for _, item in ipairs(state.items) do
      if item.filename:find('saved.md', 1, true) then return true end
    end
  end, 20), 'the saved file never showed up')
  result.refreshed = vim.api.nvim_buf_get_lines(state.list_buf, 0, -1, false)
  local target = 1
  for i, item in ipairs(state.items) do
    if item.filename:find('guides/staging.md', 1, true) then target = i end
  end
  picker.move(state, target - 1)
  local want = state.items[state.selected]
  picker.accept(state)
  result.want = { want.filename, want.lnum }
  result.opened = { vim.api.nvim_buf_get_name(0), vim.api.nvim_win_get_cursor(0)[1] }
  result.closed = picker.current == nil
""" % json.dumps(corpus.path("saved.md")))
    assert "notes/pasta.txt" in got["first"][0]
    assert "guides/staging.md" in got["second"][0]
    assert len(got["refreshed"]) == len(got["second"]) + 1 and any("saved.md" in line for line in got["refreshed"])
    assert got["closed"] and os.path.realpath(got["opened"][0]) == os.path.realpath(got["want"][0])
    assert got["opened"][0].endswith("guides/staging.md") and got["opened"][1] == got["want"][1] >= 1


def emacs(env: dict, tmp_path, body: str) -> dict:
    """Run `body` in Emacs --batch with gno.el loaded; it builds an alist `result`, returned as JSON."""
    exe = need("emacs")
    out = tmp_path / "emacs-out.json"
    program = f"""
(let ((result nil))
  {body}
  (with-temp-file {json.dumps(str(out))} (insert (json-encode result))))
"""
    r = subprocess.run([exe, "--batch", "-Q", "-l", GNO_EL, "--eval", program], env={**env, "PYTHONPATH": ROOT},
                       cwd=ROOT, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and out.exists(), f"emacs failed: {r.returncode}\n{r.stdout}\n{r.stderr}"
    return json.loads(out.read_text())


def test_emacs_gno_search_lists_hits_in_grep_mode_and_jumps(indexed, corpus, tmp_path):
    got = emacs(indexed.env, tmp_path, """
  (gno-search "deploy production")
  (push (cons 'transport gno-last-transport) result)
  (with-current-buffer "*gno*"
    (push (cons 'mode major-mode) result)
    (push (cons 'lines (split-string (buffer-string) "\\n" t)) result))
  (next-error)
  (push (cons 'opened (list (buffer-file-name (window-buffer)) (with-current-buffer (window-buffer)
                                                                 (line-number-at-pos)))) result)
  (gno-query "deploy production")
  (with-current-buffer "*gno*"
    (push (cons 'query (split-string (buffer-string) "\\n" t)) result))
""")
    assert got["transport"] == "socket" and got["mode"] == "grep-mode"
    rows = [line.split(":", 2) for line in got["lines"][1:]]
    assert [(os.path.realpath(f), int(n)) for f, n, _ in rows] == expected(indexed, corpus, "search",
                                                                           "deploy production")
    assert got["lines"][0] == f"gno search: deploy production ({len(rows)} hits)" and rows
    first_file, first_line = expected(indexed, corpus, "search", "deploy production")[0]
    assert os.path.realpath(got["opened"][0]) == first_file and got["opened"][1] == first_line
    query_rows = [line.split(":", 2) for line in got["query"][1:]]
    assert [(os.path.realpath(f), int(n)) for f, n, _ in query_rows] == expected(indexed, corpus, "query",
                                                                                 "deploy production")


def test_emacs_fallback_errors_and_completing_read(indexed, corpus, tmp_path):
    got = emacs(indexed.env, tmp_path, f"""
  (setq gno-socket {json.dumps(str(tmp_path / 'absent.sock'))}
        gno-gnoctl '({' '.join(json.dumps(a) for a in GNOCTL)}))
  (gno-search "pasta")
  (push (cons 'transport gno-last-transport) result)
  (with-current-buffer "*gno*" (push (cons 'lines (split-string (buffer-string) "\\n" t)) result))
  (setq gno-socket nil)
  (let ((completing-read-function (lambda (_prompt choices &rest _) (car (all-completions "" choices)))))
    (gno-find "pasta"))
  (push (cons 'found (list buffer-file-name (line-number-at-pos))) result)
  (push (cons 'error (condition-case e (progn (gno-search "\\"unclosed") nil) (user-error (cadr e)))) result)
""")
    assert got["transport"] == "cli"
    assert got["lines"][1].startswith(os.path.realpath(corpus.path("notes/pasta.txt")) + ":")
    assert got["error"].startswith("gno: unbalanced double quote")
    pasta = expected(indexed, corpus, "search", "pasta")[0]
    assert (os.path.realpath(got["found"][0]), got["found"][1]) == pasta  # completing-read → visited at its line


class _Remote:
    """A Neovim kept running with the plugin, driven from outside as a person types:
    keys go in through `--remote-send`, state comes out through `--remote-expr`."""

    def __init__(self, env: dict, tmp_path, setup: str) -> None:
        self.exe = need("nvim")
        self.sock = str(tmp_path / "nvim.sock")
        script = tmp_path / "setup.lua"
        script.write_text(setup)
        self.proc = subprocess.Popen(
            [self.exe, "--headless", "--clean", "--listen", self.sock, "--cmd", f"set rtp^={NVIM_DIR}",
             "-c", f"luafile {script}"],
            env={**env, "PYTHONPATH": ROOT}, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        assert wait_until(lambda: os.path.exists(self.sock), 10, 0.02), "nvim did not listen"

    def type(self, keys: str) -> None:
        for key in ([keys] if keys.startswith("<") else list(keys)):
            subprocess.run([self.exe, "--server", self.sock, "--remote-send", key], check=True, timeout=10)

    def lua(self, expr: str):
        out = subprocess.run([self.exe, "--server", self.sock, "--remote-expr",
                              f"luaeval('vim.json.encode({expr})')"], capture_output=True, text=True, timeout=10)
        return json.loads(out.stdout or out.stderr)  # Neovim 0.7–0.9 print the value on stderr

    def shows(self, text: str) -> list[str]:
        """The picker's list once the reply for `text` (as typed so far) is shown."""
        assert wait_until(lambda: self.lua("require(\"gno.picker\").current.shown") == text, 10, 0.02), text
        return self.lua("vim.api.nvim_buf_get_lines(require(\"gno.picker\").current.list_buf, 0, -1, false)")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def test_nvim_picker_matches_the_word_being_typed_and_keeps_results_on_a_bad_query(indexed, tmp_path):
    vim = _Remote(indexed.env, tmp_path, "require('gno.picker').pick('')")
    try:
        assert wait_until(lambda: vim.lua("require(\"gno.picker\").current ~= nil"), 10, 0.05)
        vim.type("sp")
        assert "notes/pasta.txt" in vim.shows("sp")[0]  # spaghetti, from the second letter
        vim.type("ag")
        assert "notes/pasta.txt" in vim.shows("spag")[0]
        vim.type("<C-u>")
        vim.type("staging bra")
        lines = vim.shows("staging bra")
        assert "guides/staging.md" in lines[0]  # "branch", not yet typed in full
        vim.type(' "ol')
        kept = vim.shows('staging bra "ol')
        assert kept[: len(lines)] == lines and "unbalanced double quote" in kept[-1]
        vim.type('d"')
        assert "unbalanced" not in vim.shows('staging bra "old"')[-1]
    finally:
        vim.close()
