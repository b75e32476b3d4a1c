"""The editor clients run for real against a real gnod: Neovim headless with
editors/nvim, Emacs in batch mode with editors/emacs/gno.el. Under CI=true a missing
editor fails the test (`.ci/run` installs Debian's neovim and emacs-nox)."""

from __future__ import annotations

import json
import os
import re
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


def missing(message: str) -> None:
    """Under CI=true what the tests need is installed (.ci/run): its absence fails them."""
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def need(editor: str) -> str:
    path = shutil.which(editor)
    if path is None:
        missing(f"{editor} is not installed (apt-get install -y neovim emacs-nox; .ci/run does it)")
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
    r = subprocess.run(
        [
            exe,
            "--headless",
            "--clean",
            "--cmd",
            f"set rtp^={NVIM_DIR}",
            "-c",
            f"luafile {script}",
            "-c",
            "cquit 3",
        ],  # reached only when the script itself failed to run
        env={**env, "PYTHONPATH": ROOT},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )
    assert out.exists(), f"nvim did not finish the script: {r.returncode}\n{r.stdout}\n{r.stderr}"
    got = json.loads(out.read_text())
    assert "error" not in got, got["error"]
    return got


QF = """
  local qf = {}
  for _, e in ipairs(vim.fn.getqflist()) do
    table.insert(qf, { file = vim.api.nvim_buf_get_name(e.bufnr), lnum = e.lnum, col = e.col, text = e.text })
  end
"""


def expected(daemon, corpus, method: str, query: str) -> list[tuple[str, int]]:
    """The hits' places as the plugins ask for them (their limits: 50 for search, 10 for query)."""
    hits = daemon.result(method, {"query": query, "limit": 50 if method == "search" else 10})["hits"]

    def line(h: dict) -> int:
        """The line of the passage's first matched word."""
        p = h["snippet"] if method == "search" else h["preview"]
        first = p["line"] if method == "search" else p["start_line"]
        return first + (p["text"][: p["matches"][0][0]].count("\n") if p["matches"] else 0)

    return [(os.path.realpath(h["abs_path"]), line(h)) for h in hits]


def located(entries: list[dict]) -> list[tuple[str, int]]:
    return [(os.path.realpath(e["file"]), e["lnum"]) for e in entries]


def test_nvim_gno_fills_the_quickfix_list_over_the_socket(indexed, corpus, tmp_path):
    got = nvim(
        indexed.env,
        tmp_path,
        """
  vim.cmd('Gno deploy production')
"""
        + QF
        + """
  result.search = qf
  result.transport = require('gno').last_transport
  result.window = vim.bo.buftype
  result.said = {}
  vim.notify = function(msg) table.insert(result.said, msg) end
  vim.cmd('GnoQuery deploy production')
  -- The command returns at once (a hybrid query takes seconds); the list fills when gnod answers.
  result.title_at_once = vim.fn.getqflist({ title = 1 }).title
  assert(vim.wait(60000, function() return vim.fn.getqflist({ title = 1 }).title:find('gno query') ~= nil end, 20),
    'no query result')
"""
        + QF
        + """
  result.query = qf
""",
    )
    assert got["title_at_once"] == "gno search: deploy production"
    assert got["said"][0] == "gno: searching for deploy production…"
    # The plugin's own limit for a hybrid search is one it allows (no "above standard mode's maximum").
    assert not [m for m in got["said"] if "maximum" in m], got["said"]
    assert got["transport"] == "socket" and got["window"] == "quickfix"
    assert located(got["search"]) == expected(indexed, corpus, "search", "deploy production")
    assert got["search"][0]["file"].endswith("guides/deploy.md") and "Deployment guide" in got["search"][0]["text"]
    assert located(got["query"]) == expected(indexed, corpus, "query", "deploy production")


def test_nvim_falls_back_to_gnoctl_json_without_the_socket(indexed, corpus, tmp_path):
    got = nvim(
        indexed.env,
        tmp_path,
        f"""
  require('gno').setup({{ socket = {json.dumps(str(tmp_path / "absent.sock"))}, gnoctl = {{ {", ".join(json.dumps(a) for a in GNOCTL)} }} }})
  vim.cmd('Gno deploy production')
"""
        + QF
        + """
  result.search = qf
  result.transport = require('gno').last_transport
  vim.cmd('GnoQuery deploy production')  -- gnoctl run without waiting for it
  assert(vim.wait(60000, function() return vim.fn.getqflist({ title = 1 }).title:find('gno query') ~= nil end, 20),
    'no query result')
"""
        + QF
        + """
  result.query = qf
""",
    )
    assert got["transport"] == "cli"
    assert located(got["search"]) == expected(indexed, corpus, "search", "deploy production")
    assert located(got["query"]) == expected(indexed, corpus, "query", "deploy production")
    # No gnoctl where it was set (or not on PATH): said so, not a Lua traceback (E475).
    got = nvim(
        indexed.env,
        tmp_path,
        f"""
  require('gno').setup({{ socket = {json.dumps(str(tmp_path / "absent.sock"))}, gnoctl = '/nonexistent/gnoctl' }})
  result.said = {{}}
  vim.notify = function(msg) table.insert(result.said, msg) end
  vim.cmd('Gno deploy production')
""",
    )
    assert "error" not in got and len(got["said"]) == 1, got
    assert got["said"][0].startswith("gno: GNOCTL_NOT_FOUND: gnod is not running and gnoctl (/nonexistent/gnoctl)")


def test_nvim_live_picker_requeries_as_you_type_and_on_changes_and_opens_the_hit(indexed, corpus, tmp_path):
    got = nvim(
        indexed.env,
        tmp_path,
        """
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
  result.closed = picker.current == nil
  assert(vim.wait(5000, function() return vim.api.nvim_buf_get_name(0) == want.filename end, 10), 'not opened')
  result.want = { want.filename, want.lnum }
  result.opened = { vim.api.nvim_buf_get_name(0), vim.api.nvim_win_get_cursor(0)[1] }
"""
        % json.dumps(corpus.path("saved.md")),
    )
    assert "notes/pasta.txt" in got["first"][0]
    assert "guides/staging.md" in got["second"][0]
    assert len(got["refreshed"]) == len(got["second"]) + 1 and any("saved.md" in line for line in got["refreshed"])
    assert got["closed"] and os.path.realpath(got["opened"][0]) == os.path.realpath(got["want"][0])
    assert got["opened"][0].endswith("guides/staging.md") and got["opened"][1] == got["want"][1] >= 1


def test_nvim_picker_follows_changes_after_gnod_restarts(indexed, corpus, tmp_path):
    """The picker's live refresh stopped for good after `gnoctl daemon restart`: a file
    added then showed up only at the next keystroke."""
    added = corpus.path("capybara.md")
    got = nvim(
        indexed.env,
        tmp_path,
        f"""
  local picker = require('gno.picker')
  picker.pick('')
  local state = picker.current
  vim.api.nvim_buf_set_lines(state.prompt_buf, 0, -1, false, {{ state.prefix .. 'zqxcapybara' }})
  vim.api.nvim_exec_autocmds('TextChangedI', {{ buffer = state.prompt_buf }})
  assert(vim.wait(5000, function() return state.shown == 'zqxcapybara' end, 10), 'no reply')
  result.before = #state.items
  result.restart = vim.fn.system({{ {", ".join(json.dumps(a) for a in GNOCTL)}, 'daemon', 'restart' }})
  local f = io.open({json.dumps(added)}, 'w')
  f:write('# Capybara\\n\\nA zqxcapybara note.\\n')
  f:close()
  result.after = vim.wait(15000, function() return #state.items > 0 end, 20)
  picker.close(state)
""",
    )
    os.remove(added)
    assert got.get("before") == 0 and got["after"] is True, got


def test_nvim_picker_asks_for_the_latest_keystroke_only_and_enter_waits_for_it(indexed, tmp_path):
    """On a big tree a search can take a second: each keystroke's search was queued
    behind the others, the list showed the last one 2.8 s after typing stopped, and
    <CR> meanwhile opened a hit of the first letters. Here gnod answers 0.3 s late."""
    got = nvim(
        indexed.env,
        tmp_path,
        """
  local picker = require('gno.picker')
  local gno = require('gno')
  picker.pick('')
  local state = picker.current
  local real, sent = gno.connection(), {}
  local slow = {}
  function slow.request(_, method, params, reply)
    table.insert(sent, params.query)
    real:request(method, params, function(err, res) vim.defer_fn(function() reply(err, res) end, 300) end)
  end
  gno.connection = function() return slow end
  for _, text in ipairs({ 'pa', 'pas', 'past', 'pasta', 'pasta r', 'pasta re' }) do
    picker.update(state, text)
  end
  result.busy = vim.api.nvim_buf_get_lines(state.list_buf, 0, -1, false)
  assert(vim.wait(5000, function() return state.shown == 'pasta re' end, 10), 'no reply for the last keystroke')
  result.sent = vim.deepcopy(sent)
  vim.api.nvim_buf_set_lines(state.prompt_buf, 0, -1, false, { state.prefix .. 'staging bra' })
  picker.accept(state) -- before the debounce and the reply: the hit is the new query's
  result.waiting = picker.current ~= nil
  assert(vim.wait(5000, function()
    return picker.current == nil and vim.api.nvim_buf_get_name(0):find('staging.md', 1, true) ~= nil
  end, 10), 'never opened')
  result.opened = vim.api.nvim_buf_get_name(0)
  result.sent_after = sent
""",
    )
    assert got["busy"][-1] == "searching…"
    assert got["sent"] == ["pa*", "pasta re*"]  # the first keystroke's, then the last one's
    assert got["waiting"] and got["opened"].endswith("guides/staging.md")
    assert got["sent_after"][-1] == "staging bra*"


def emacs(env: dict, tmp_path, body: str) -> dict:
    """Run `body` in Emacs --batch with gno.el loaded; it builds an alist `result`, returned as JSON."""
    exe = need("emacs")
    out = tmp_path / "emacs-out.json"
    program = f"""
(let ((result nil))
  {body}
  (with-temp-file {json.dumps(str(out))} (insert (json-encode result))))
"""
    r = subprocess.run(
        [exe, "--batch", "-Q", "-l", GNO_EL, "--eval", program],
        env={**env, "PYTHONPATH": ROOT},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0 and out.exists(), f"emacs failed: {r.returncode}\n{r.stdout}\n{r.stderr}"
    return json.loads(out.read_text())


def test_gno_el_compiles_without_warnings(tmp_path):
    """Byte-compiled, gno.el bound consult's input waits lexically (no `defvar` for
    them): consult never saw them, and searched only once typing paused."""
    exe = need("emacs")
    copy = tmp_path / "gno.el"
    shutil.copy(GNO_EL, copy)
    r = subprocess.run(
        [exe, "--batch", "-Q", "--eval", "(setq byte-compile-error-on-warn t)", "-f", "batch-byte-compile", str(copy)],
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0 and (tmp_path / "gno.elc").exists(), r.stderr


# What is typed, and the query a live search sends for it: the same in the web page,
# Neovim's picker and Emacs's gno-find (each client's own code).
AS_TYPED = [
    ("dock", "dock*"),
    ("dock ", "dock "),
    ("d", "d"),
    ("-dock", "-dock"),
    ("C++", "C++"),
    ("mutex_l", "mutex_l*"),
    ("Straße", "Straße*"),
    ("dock*", "dock*"),
    ('"rotor imb', '"rotor imb*"'),
    ('"rotor ', '"rotor"'),
    ('"rotor imb*', '"rotor imb*"'),
    ('staging bra "ol', 'staging bra "ol*"'),
    ('"old" bra', '"old" bra*'),
    ("", ""),
]


def test_every_client_sends_what_is_typed_as_the_web_page_does(tmp_path):
    """Neovim and Emacs sent an open quote as typed: an error at every key of a phrase,
    where the web page closes it."""
    from gnoctl.web.search import as_typed

    typed = [t for t, _ in AS_TYPED]
    assert [as_typed(t) for t in typed] == [q for _, q in AS_TYPED]
    got = nvim(
        {**os.environ},
        tmp_path,
        f"""
  result.sent = vim.tbl_map(require('gno.picker').as_typed, vim.fn.json_decode({json.dumps(json.dumps(typed))}))
""",
    )
    assert got["sent"] == [q for _, q in AS_TYPED]
    got = emacs(
        {**os.environ},
        tmp_path,
        f"""
  (push (cons 'sent (vconcat (mapcar #'gno-as-typed (json-read-from-string {json.dumps(json.dumps(typed))})))) result)
""",
    )
    assert got["sent"] == [q for _, q in AS_TYPED]


def grep_rows(lines: list[str]) -> list[tuple[str, str, str]]:
    """(file, line, text) of each line of a results buffer: `file\\0line:text`, as `grep -Z`."""
    return [(f, n, t) for f, rest in (line.split("\0", 1) for line in lines) for n, t in [rest.split(":", 1)]]


def test_emacs_gno_search_lists_hits_in_grep_mode_and_jumps(indexed, corpus, tmp_path):
    got = emacs(
        indexed.env,
        tmp_path,
        """
  (gno-search "deploy production")
  (push (cons 'transport gno-last-transport) result)
  (with-current-buffer "*gno*"
    (push (cons 'mode major-mode) result)
    (push (cons 'grep (derived-mode-p 'grep-mode)) result)
    (push (cons 'lines (split-string (buffer-string) "\\n" t)) result))
  (next-error)
  (push (cons 'opened (list (buffer-file-name (window-buffer)) (with-current-buffer (window-buffer)
                                                                 (line-number-at-pos)))) result)
  (with-current-buffer (messages-buffer) (let ((inhibit-read-only t)) (erase-buffer)))
  (gno-query "deploy production")
  (with-current-buffer "*gno*"
    (push (cons 'query (split-string (buffer-string) "\\n" t)) result))
  (push (cons 'said (with-current-buffer (messages-buffer) (buffer-string))) result)
""",
    )
    assert got["transport"] == "socket" and got["mode"] == "gno-results-mode" and got["grep"] == "grep-mode"
    rows = grep_rows(got["lines"][1:])
    assert [(os.path.realpath(f), int(n)) for f, n, _ in rows] == expected(
        indexed, corpus, "search", "deploy production"
    )
    assert got["lines"][0] == f"gno search: deploy production ({len(rows)} hits)" and rows
    first_file, first_line = expected(indexed, corpus, "search", "deploy production")[0]
    assert os.path.realpath(got["opened"][0]) == first_file and got["opened"][1] == first_line
    assert "maximum" not in got["said"], got["said"]  # its limit for a hybrid search is one allowed
    query_rows = grep_rows(got["query"][1:])
    assert [(os.path.realpath(f), int(n)) for f, n, _ in query_rows] == expected(
        indexed, corpus, "query", "deploy production"
    )


def test_emacs_fallback_errors_and_completing_read(indexed, corpus, tmp_path):
    got = emacs(
        indexed.env,
        tmp_path,
        f"""
  (setq gno-socket {json.dumps(str(tmp_path / "absent.sock"))}
        gno-gnoctl '({" ".join(json.dumps(a) for a in GNOCTL)}))
  (gno-search "pasta")
  (push (cons 'transport gno-last-transport) result)
  (with-current-buffer "*gno*" (push (cons 'lines (split-string (buffer-string) "\\n" t)) result))
  (setq gno-socket nil)
  (let ((completing-read-function (lambda (_prompt choices &rest _) (car (all-completions "" choices)))))
    (gno-find "pasta"))
  (push (cons 'found (list buffer-file-name (line-number-at-pos))) result)
  (push (cons 'error (condition-case e (progn (gno-search "\\"unclosed") nil) (user-error (cadr e)))) result)
""",
    )
    assert got["transport"] == "cli"
    assert got["lines"][1].startswith(os.path.realpath(corpus.path("notes/pasta.txt")) + "\0")
    assert got["error"].startswith("gno: unbalanced double quote")
    pasta = expected(indexed, corpus, "search", "pasta")[0]
    assert (os.path.realpath(got["found"][0]), got["found"][1]) == pasta  # completing-read → visited at its line


DOCKER_DOCS = {
    "act.md": "# act\n\nact runs your GitHub Actions locally, each job in a docker container.\n",
    "docker-run.md": "# docker run\n\n`docker run` starts a container from an image.\n",
}


@pytest.fixture
def docker(daemon, corpus):
    """The corpus with two docker pages: act.md sorts first by name, docker-run.md by score."""
    for rel, text in DOCKER_DOCS.items():
        corpus.write(rel, text)
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    return daemon


# Keys drive the real minibuffer in batch Emacs (a keyboard macro makes it read them);
# <f5> records what is typed, the candidates *Completions* lists (in its order) and the
# messages since the last <f5>.
SNAPSHOTS = """
  (defun gno-test-listed ()
    (let ((buffer (get-buffer "*Completions*")) (found nil))
      (when buffer
        (with-current-buffer buffer
          (let ((pos (point-min)))
            (while (setq pos (next-single-property-change pos 'mouse-face))
              (when (get-text-property pos 'mouse-face)
                (push (buffer-substring-no-properties
                       pos (or (next-single-property-change pos 'mouse-face) (point-max)))
                      found))))))
      (nreverse found)))
  (defvar gno-test-snapshots nil)
  (setq minibuffer-message-timeout 0.1)  ; "No completions" (an empty input) holds batch Emacs that long
  (global-set-key (kbd "<f5>")
                  (lambda () (interactive)
                    (push (vector (minibuffer-contents) (vconcat (gno-test-listed))
                                (with-current-buffer "*Messages*" (prog1 (buffer-string)
                                                                    (let ((inhibit-read-only t)) (erase-buffer)))))
                          gno-test-snapshots)))
"""


def snapshots(got) -> list[dict]:
    return [{"typed": t, "listed": listed, "messages": m} for t, listed, m in reversed(got["snapshots"])]


def test_emacs_gno_find_lists_candidates_best_first(docker, corpus, tmp_path):
    best = [f for f, _ in expected(docker, corpus, "search", "docker run")]
    assert best[0].endswith("docker-run.md") and any(f.endswith("/act.md") for f in best)

    def files(shown: dict) -> list[str]:
        return [os.path.realpath(os.path.expanduser(c.split(":", 1)[0])) for c in shown["listed"]]

    # A query's hits (gno-find from Lisp): `?` lists them, `M-v RET` takes the first listed.
    got = emacs(
        docker.env,
        tmp_path,
        SNAPSHOTS
        + """
  (global-set-key (kbd "<f6>") (lambda () (interactive) (gno-find "docker run")))
  (execute-kbd-macro (kbd "<f6> ? <f5> M-v RET"))
  (push (cons 'visited buffer-file-name) result)
  (push (cons 'snapshots (vconcat gno-test-snapshots)) result)
""",
    )
    [shown] = snapshots(got)
    assert files(shown) == best and "[1.00]" in shown["listed"][0]  # gnod's order, not act.md first
    assert os.path.realpath(got["visited"]) == best[0]
    # M-x gno-find: the hits of what is typed, in the same order; RET visits the best.
    got = emacs(
        docker.env,
        tmp_path,
        SNAPSHOTS
        + """
  (execute-kbd-macro (kbd "M-x gno-find RET docker SPC run ? <f5> RET"))
  (push (cons 'visited buffer-file-name) result)
  (push (cons 'snapshots (vconcat gno-test-snapshots)) result)
""",
    )
    [shown] = snapshots(got)
    assert shown["typed"] == "docker run" and files(shown) == best
    assert os.path.realpath(got["visited"]) == best[0]


def test_emacs_gno_find_searches_as_you_type_and_keeps_candidates_on_a_bad_query(docker, corpus, tmp_path):
    # `?` lists once; from then on the list follows each keystroke (`C-a C-k` clears the input).
    got = emacs(
        docker.env,
        tmp_path,
        SNAPSHOTS
        + """
  (execute-kbd-macro
   (kbd "M-x gno-find RET stag ? <f5> C-a C-k staging_b <f5> C-a C-k dock <f5> C-a C-k !! <f5>
         C-a C-k staging SPC bra <f5> SPC <f5> \\"ol <f5> d\\" <f5> <f5> RET"))
  (push (cons 'visited (list buffer-file-name (line-number-at-pos))) result)
  (push (cons 'snapshots (vconcat gno-test-snapshots)) result)
""",
    )
    stag, note, dock, bad, bra, space, typing, good, after = snapshots(got)
    assert [s["typed"] for s in (stag, note, dock, bad, bra, space, typing, good)] == [
        "stag",
        "staging_b",
        "dock",
        "!!",
        "staging bra",
        "staging bra ",
        'staging bra "ol',
        'staging bra "old"',
    ]
    assert "guides/staging.md:" in stag["listed"][0]  # "staging", from a prefix
    # What gnod changed about the query is said: a one-letter prefix is text.
    assert "gno: staging_b*: `*` ends a prefix of 2 letters or more; searched staging alone" in note["messages"]
    assert {c.split(":", 1)[0].rsplit("/", 1)[-1] for c in dock["listed"]} == {"docker-run.md", "act.md"}
    assert "guides/staging.md:" in bra["listed"][0]  # "branch", not typed in full
    # A phrase being typed is closed, its last word a prefix: hits, not an error at each key.
    assert "guides/staging.md:" in typing["listed"][0] and "unbalanced" not in typing["messages"]
    assert good["listed"] and "guides/staging.md:" in good["listed"][0]
    # A query gnod rejects: the last good candidates stay, and the reason is shown.
    assert bad["listed"] == dock["listed"] and "gno: no searchable words in the query" in bad["messages"]
    assert "gno:" not in after["messages"]  # the query parses: no error shown
    staging = expected(docker, corpus, "search", 'staging bra "old"')[0]
    assert (os.path.realpath(got["visited"][0]), got["visited"][1]) == staging  # RET: the best hit, at its line


# Consult as Debian installs it (elpa-consult; `emacs -Q` skips site-start, which would
# activate it), or as package.el installed it.
WITH_CONSULT = """
  (require 'package)
  (add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
  (package-initialize)
"""

# <f7> waits until gnod answered what is typed (consult searches from its timers), then
# records consult's state: the minibuffer's completion style, the async indicator, and
# what the window behind the minibuffer previews (buffer and line).
CONSULT_SNAPSHOTS = """
  (defvar gno-test-consult nil)
  (global-set-key (kbd "<f7>")
                  (lambda () (interactive)
                    (let ((deadline (+ (float-time) 10)))
                      (while (and (boundp 'gno--consult-answered)  ; unbound: no consult path to wait for
                                  (not (equal gno--consult-answered (minibuffer-contents-no-properties)))
                                  (< (float-time) deadline))
                        (accept-process-output nil 0.02)))
                    (let ((window (minibuffer-selected-window)))
                      (push (vector (bound-and-true-p gno--consult-answered) (symbol-name (car completion-styles))
                                    (or (seq-some (lambda (o) (overlay-get o 'display))
                                                  (overlays-in (point-min) (point-max)))
                                        "")
                                    (buffer-name (window-buffer window))
                                    (with-current-buffer (window-buffer window)
                                      (line-number-at-pos (window-point window)))
                                    (list consult-async-input-throttle consult-async-input-debounce))
                            gno-test-consult))))
"""


def test_emacs_gno_find_goes_through_consult_async_and_previews(docker, corpus, tmp_path):
    got = emacs(
        docker.env,
        tmp_path,
        WITH_CONSULT
        + SNAPSHOTS
        + CONSULT_SNAPSHOTS
        + """
  (if (not (require 'consult nil t))
      (push '(consult) result)
    (push (cons 'consult (or (ignore-errors (package-version-join
                                               (package-desc-version (cadr (assq 'consult package-alist)))))
                             "loaded"))
          result)
    (execute-kbd-macro
     (kbd "M-x gno-find RET stag <f7> ? <f5> C-a C-k !! <f7> <f5> C-a C-k dock <f7> <f5> C-a C-k staging SPC bra <f7> <f5>
           SPC \\"ol <f7> <f5> d\\" <f7> <f5> C-a C-k dock <f7> M-v TAB RET"))
    (push (cons 'visited (list buffer-file-name (line-number-at-pos))) result)
    (push (cons 'buffers (vconcat (mapcar #'buffer-name (buffer-list)))) result)
    (push (cons 'snapshots (vconcat gno-test-snapshots)) result)
    (push (cons 'consulted (vconcat (reverse gno-test-consult))) result))
""",
    )
    if not got.get("consult"):
        missing("consult is not installed (apt-get install -y elpa-consult; .ci/run does it)")
    stag, bad, dock, bra, typing, good = snapshots(got)
    states = [dict(zip(("answered", "style", "indicator", "window", "line", "waits"), s)) for s in got["consulted"]]
    # It searches as the input changes, not once the typing pauses (consult's default
    # waits are for starting a process each time).
    assert all(throttle <= 0.1 and debounce <= 0.05 for throttle, debounce in (s["waits"] for s in states))
    assert [s["typed"] for s in (stag, bad, dock, bra, typing, good)] == [
        "stag",
        "!!",
        "dock",
        "staging bra",
        'staging bra "ol',
        'staging bra "old"',
    ]
    assert [s["answered"] for s in states] == [s["typed"] for s in (stag, bad, dock, bra, typing, good)] + ["dock"]
    # Consult's async completion ran it: its splitting style, its indicator (`!` failed).
    assert {s["style"] for s in states} == {"consult--split"}
    assert [s["indicator"] for s in states] == [":", "!", ":", ":", ":", ":", ":"]

    def where(candidate: str) -> tuple[str, int]:
        path, rest = candidate.split(":", 1)
        return os.path.realpath(os.path.expanduser(path)), int(rest.split(" ", 1)[0])

    # Half words are prefixes; the candidates are gnod's hits in its order, best first.
    assert [where(c) for c in stag["listed"]] == expected(docker, corpus, "search", "stag*")
    assert "guides/staging.md:" in stag["listed"][0]
    assert [where(c) for c in dock["listed"]] == expected(docker, corpus, "search", "dock*")
    assert {os.path.basename(f) for f, _ in map(where, dock["listed"])} == {"docker-run.md", "act.md"}
    assert [where(c) for c in bra["listed"]] == expected(docker, corpus, "search", "staging bra*")
    # A query gnod rejects: the last good candidates stay, and the reason is shown.
    assert bad["listed"] == stag["listed"] and "gno: no searchable words in the query" in bad["messages"]
    # A phrase being typed is closed, its last word a prefix: hits, not an error at each key.
    assert [where(c) for c in typing["listed"]] == expected(docker, corpus, "search", 'staging bra "ol*"')
    assert typing["listed"] and "unbalanced" not in typing["messages"]
    assert [where(c) for c in good["listed"]] == expected(docker, corpus, "search", 'staging bra "old"')
    # The window behind the minibuffer previews the first candidate at its line.
    best = expected(docker, corpus, "search", "stag*")[0]
    assert states[0]["window"].startswith(" Preview:staging.md") and states[0]["line"] == best[1]
    # RET on the second listed candidate visits that hit at its line; previews are closed.
    assert (os.path.realpath(got["visited"][0]), got["visited"][1]) == where(dock["listed"][1])
    assert not [b for b in got["buffers"] if b.startswith(" Preview:")]
    # TAB lists the hits, as `?` does: it completed the query as text (`dock/home/…/`).
    got = emacs(
        docker.env,
        tmp_path,
        WITH_CONSULT
        + SNAPSHOTS
        + CONSULT_SNAPSHOTS
        + """
  (execute-kbd-macro (kbd "M-x gno-find RET dock <f7> TAB <f5> RET"))
  (push (cons 'snapshots (vconcat gno-test-snapshots)) result)
""",
    )
    [tabbed] = snapshots(got)
    assert tabbed["typed"] == "dock" and [where(c) for c in tabbed["listed"]] == expected(
        docker, corpus, "search", "dock*"
    )
    # RET on the typed text visits its best hit, at its line.
    got = emacs(
        docker.env,
        tmp_path,
        WITH_CONSULT
        + CONSULT_SNAPSHOTS
        + """
  (defvar gno-test-searches nil)
  (advice-add 'gno--candidates :before (lambda (query &rest _) (push query gno-test-searches)))
  (execute-kbd-macro (kbd "M-x gno-find RET staging SPC bra <f7> RET"))
  (push (cons 'visited (list buffer-file-name (line-number-at-pos))) result)
  (push (cons 'consulted (vconcat gno-test-consult)) result)
  (push (cons 'searches (vconcat gno-test-searches)) result)
""",
    )
    # The typed text's best hit is the one just shown: RET searches nothing again.
    assert got["searches"].count("staging bra*") == 1
    assert got["consulted"][0][:2] == ["staging bra", "consult--split"]
    assert (os.path.realpath(got["visited"][0]), got["visited"][1]) == expected(
        docker, corpus, "search", "staging bra*"
    )[0]


def test_emacs_calls_share_one_connection_that_survives_a_gnod_restart(indexed, tmp_path):
    got = emacs(
        indexed.env,
        tmp_path,
        f"""
  (let ((hits (lambda () (length (alist-get 'hits (gno-call "search" '((query . "pasta") (limit . 5)))))))
        (connections (lambda () (seq-filter (lambda (p) (eq (process-type p) 'network)) (process-list))))
        (first nil))
    (push (cons 'first (funcall hits)) result)
    (setq first (funcall connections))
    (push (cons 'second (funcall hits)) result)
    (push (cons 'reused (and (= (length first) 1) (equal first (funcall connections)))) result)
    (push (cons 'restart (call-process {json.dumps(GNOCTL[0])} nil nil nil
                                       {" ".join(json.dumps(a) for a in GNOCTL[1:])} "daemon" "restart"))
          result)
    (push (cons 'after (funcall hits)) result)
    (push (cons 'transport gno-last-transport) result)
    (push (cons 'reconnected (let ((now (funcall connections)))
                               (and (= (length now) 1) (not (eq (car now) (car first))))))
          result))
""",
    )
    assert got["restart"] == 0 and indexed.paths.read_pid() != indexed.proc.pid  # another gnod answers now
    assert got["first"] == got["second"] == got["after"] == 1
    assert got["reused"] is True  # the second call went over the first one's connection
    assert got["transport"] == "socket" and got["reconnected"] is True  # not gnoctl: a new connection


def test_emacs_results_buffer_follows_changes_until_killed(indexed, corpus, tmp_path):
    saved = corpus.path("saved.md")
    got = emacs(
        indexed.env,
        tmp_path,
        f"""
  (let ((lines (lambda () (with-current-buffer "*gno*" (split-string (buffer-string) "\\n" t))))
        (connections (lambda () (length (seq-filter (lambda (p) (eq (process-type p) 'network)) (process-list)))))
        (wait (lambda (done)
                (let ((deadline (+ (float-time) 15)))
                  (while (and (not (funcall done)) (< (float-time) deadline))
                    (accept-process-output nil 0.05))))))
    (gno-search "staging branch")
    (push (cons 'before (funcall lines)) result)
    (write-region "# Staging branch notes\\n\\nA staging branch checklist.\\n" nil {json.dumps(saved)})
    (funcall wait (lambda () (seq-some (lambda (l) (string-match-p "/saved\\\\.md\\0" l)) (funcall lines))))
    (push (cons 'added (funcall lines)) result)
    (delete-file {json.dumps(saved)})
    (funcall wait (lambda () (not (seq-some (lambda (l) (string-match-p "/saved\\\\.md\\0" l)) (funcall lines)))))
    (push (cons 'removed (funcall lines)) result)
    (push (cons 'g (with-current-buffer "*gno*" (key-binding "g"))) result)
    (push (cons 'connections (funcall connections)) result)
    (kill-buffer "*gno*")
    (push (cons 'killed (funcall connections)) result))
""",
    )
    before, added, removed = got["before"], got["added"], got["removed"]

    def files(lines: list[str]) -> list[str]:
        return sorted(os.path.realpath(f) for f, _, _ in grep_rows(lines[1:]))

    assert before[0] == "gno search: staging branch (1 hit)" and "guides/staging.md\0" in before[1]
    assert added[0] == "gno search: staging branch (2 hits)"  # re-run: the saved file joined the hits
    assert files(added) == sorted([*files(before), os.path.realpath(saved)])
    assert removed[0] == before[0] and files(removed) == files(before)  # and left them when it was deleted
    assert got["g"] == "revert-buffer"  # runs the search again (grep-mode's g runs compile-command)
    assert got["connections"] == 2 and got["killed"] == 1  # calls' connection, and the buffer's subscription


class _Remote:
    """A Neovim kept running with the plugin, driven from outside as a person types:
    keys go in through `--remote-send`, state comes out through `--remote-expr`."""

    def __init__(self, env: dict, tmp_path, setup: str) -> None:
        self.exe = need("nvim")
        self.sock = str(tmp_path / "nvim.sock")
        script = tmp_path / "setup.lua"
        script.write_text(setup)
        self.proc = subprocess.Popen(
            [
                self.exe,
                "--headless",
                "--clean",
                "--listen",
                self.sock,
                "--cmd",
                f"set rtp^={NVIM_DIR}",
                "-c",
                f"luafile {script}",
            ],
            env={**env, "PYTHONPATH": ROOT},
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert wait_until(lambda: os.path.exists(self.sock), 10, 0.02), "nvim did not listen"

    def type(self, keys: str) -> None:
        for key in [keys] if keys.startswith("<") else list(keys):
            subprocess.run([self.exe, "--server", self.sock, "--remote-send", key], check=True, timeout=10)

    def lua(self, expr: str):
        out = subprocess.run(
            [self.exe, "--server", self.sock, "--remote-expr", f"luaeval('vim.json.encode({expr})')"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return json.loads(out.stdout or out.stderr)  # Neovim 0.7–0.9 print the value on stderr

    def shows(self, text: str) -> list[str]:
        """The picker's list once the reply for `text` (as typed so far) is shown."""
        assert wait_until(lambda: self.lua('require("gno.picker").current.shown') == text, 10, 0.02), text
        return self.lua('vim.api.nvim_buf_get_lines(require("gno.picker").current.list_buf, 0, -1, false)')

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def test_nvim_picker_matches_the_word_being_typed_and_keeps_results_on_a_bad_query(indexed, tmp_path):
    vim = _Remote(indexed.env, tmp_path, "require('gno.picker').pick('')")
    try:
        assert wait_until(lambda: vim.lua('require("gno.picker").current ~= nil'), 10, 0.05)
        vim.type("sp")
        assert "notes/pasta.txt" in vim.shows("sp")[0]  # spaghetti, from the second letter
        vim.type("ag")
        assert "notes/pasta.txt" in vim.shows("spag")[0]
        vim.type("<C-u>")
        vim.type("staging_b")  # a one-letter prefix is text: the note says so below the hits
        lines = vim.shows("staging_b")
        assert "guides/staging.md" in lines[0]
        assert lines[-1] == "staging_b*: `*` ends a prefix of 2 letters or more; searched staging alone"
        vim.type("<C-u>")
        vim.type("staging bra")
        lines = vim.shows("staging bra")
        assert "guides/staging.md" in lines[0]  # "branch", not yet typed in full
        vim.type(' "ol')  # a phrase being typed is closed, its last word a prefix: hits, no error
        typing = vim.shows('staging bra "ol')
        assert "guides/staging.md" in typing[0] and not any("unbalanced" in line for line in typing)
        vim.type('d"')
        lines = vim.shows('staging bra "old"')
        assert "guides/staging.md" in lines[0]
        vim.type("<C-u>")
        vim.type("!!")  # a query gnod rejects: the last results stay, the reason below them
        kept = vim.shows("!!")
        assert kept[: len(lines) - 1] == lines[:-1] and "no searchable words in the query" in kept[-1]
    finally:
        vim.close()


def test_nvim_picker_opens_a_hit_on_its_word_as_typed_keys_accept_it(indexed, tmp_path):
    """Enter in the picker's prompt (insert mode) put the cursor on the hit's word, and
    leaving insert mode then moved it one column left: on the byte before the word (a
    multibyte letter's last byte shown as the letter before it)."""
    vim = _Remote(indexed.env, tmp_path, "require('gno.picker').pick('')")
    try:
        assert wait_until(lambda: vim.lua('require("gno.picker").current ~= nil'), 10, 0.05)
        vim.type("staging branch")
        vim.shows("staging branch")
        want = vim.lua('require("gno.picker").current.items[1]')
        vim.type("<CR>")
        assert wait_until(lambda: vim.lua('require("gno.picker").current == nil'), 10, 0.05)
        assert wait_until(lambda: vim.lua("vim.api.nvim_get_mode().mode") == "n", 10, 0.05)
        cursor = vim.lua("vim.api.nvim_win_get_cursor(0)")
        assert cursor == [want["lnum"], want["col"] - 1], (cursor, want)  # the API's columns are 0-based
    finally:
        vim.close()


# --- definitions (search --symbol) ------------------------------------------------------

PARSER_PY = "import os\n\n\ndef load(path):\n    return open(path).read()\n\n\nclass Parser:\n    def parse(self, text):\n        return text.split()\n"
OTHER_PY = "def parse(text):\n    return [text]\n"
# As the kernel writes a function: its type on a line of its own, the name on the next.
FAIR_C = "#include <sched.h>\n\nstatic void\nenqueue_task_fair(struct rq *rq)\n{\n}\n"


@pytest.fixture
def code(daemon, corpus):
    """The corpus with two Python files (two blank lines between definitions, as PEP 8 has
    them), their definitions parsed."""
    corpus.write("code/parser.py", PARSER_PY)
    corpus.write("code/other.py", OTHER_PY)
    corpus.write("code/fair.c", FAIR_C)
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    assert wait_until(lambda: (s := daemon.result("status", {})["symbols"])["parsed"] >= 3 and not s["pending"], 30)
    return daemon


def test_nvim_gno_symbol_opens_the_one_definition_or_lists_several(code, corpus, tmp_path):
    got = nvim(
        code.env,
        tmp_path,
        """
  vim.cmd('GnoSymbol load')
  local at = vim.api.nvim_win_get_cursor(0)
  result.one = { vim.api.nvim_buf_get_name(0), at[1], vim.api.nvim_get_current_line(), at[2] }
  vim.cmd('enew')
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'x = parse(text)' })
  vim.api.nvim_win_set_cursor(0, { 1, 5 })
  vim.cmd('GnoSymbol')
"""
        + QF
        + """
  result.several = qf
""",
    )
    file, line, text, column = got["one"]
    assert os.path.realpath(file) == os.path.realpath(corpus.path("code/parser.py"))
    assert (line, text) == (4, "def load(path):")  # the file's line, blank runs and all
    assert column == text.index("load")  # on the name, not the line's start
    assert sorted((os.path.basename(e["file"]), e["lnum"], e["col"]) for e in got["several"]) == [
        ("other.py", 1, 1 + len("def ")),
        ("parser.py", 9, 1 + len("    def ")),
    ]
    assert any("] Parser.parse(): def parse(self, text):" in e["text"] for e in got["several"])


def test_nvim_pick_with_a_query_says_an_error_or_no_match(indexed, tmp_path):
    """Without telescope, `:GnoPick {query}` offered an empty list for a query gnod
    rejected or that matched nothing, and said nothing."""
    got = nvim(
        indexed.env,
        tmp_path,
        """
  result.said = {}
  vim.notify = function(message) table.insert(result.said, message) end
  result.offered = 0
  vim.ui.select = function(items) result.offered = result.offered + 1 end
  vim.cmd('GnoPick "unclosed')
  vim.cmd('GnoPick zqxnothingmatches')
  vim.cmd('GnoPick deploy')
""",
    )
    assert got["offered"] == 1  # the hits of `deploy` only
    error, none = got["said"]
    assert error.startswith("gno: INVALID_QUERY: unbalanced double quote"), error
    assert none == "gno: nothing matches zqxnothingmatches"


def test_nvim_gno_symbol_lands_on_the_name_below_its_type_and_through_gnoctl_too(code, corpus, tmp_path):
    """A C function's passage opens at its type (`static void`), the name on the line after:
    the cursor went to the type's line. Without the socket, gnoctl was not asked for
    definitions at all (`--symbol`): the mentions came."""
    socketless = f"{{ socket = {json.dumps(str(tmp_path / 'absent.sock'))}, gnoctl = {{ {', '.join(map(json.dumps, GNOCTL))} }} }}"
    got = nvim(
        code.env,
        tmp_path,
        f"""
  vim.cmd('GnoSymbol enqueue_task_fair')
  local at = vim.api.nvim_win_get_cursor(0)
  result.fair = {{ at[1], vim.api.nvim_get_current_line(), at[2] }}
  result.notes = {{}}
  vim.notify = function(message) table.insert(result.notes, message) end
  vim.cmd('GnoSymbol laod')  -- typed wrong: another name is shown, and said
  require('gno').setup({socketless})
  vim.cmd('enew')
  vim.cmd('GnoSymbol load')
  at = vim.api.nvim_win_get_cursor(0)
  result.cli = {{ vim.api.nvim_buf_get_name(0), at[1], at[2], require('gno').last_transport }}
""",
    )
    assert got["fair"] == [4, "enqueue_task_fair(struct rq *rq)", 0]
    assert got["notes"] == ["gno: nothing defines 'laod': showing 'load'"]
    file, line, column, transport = got["cli"]
    assert transport == "cli" and os.path.realpath(file) == os.path.realpath(corpus.path("code/parser.py"))
    assert (line, column) == (4, len("def "))


def test_emacs_gno_symbol_visits_the_one_definition_or_lists_several(code, corpus, tmp_path):
    got = emacs(
        code.env,
        tmp_path,
        """
  (gno-symbol "load")
  (push (cons 'one (list (buffer-file-name) (line-number-at-pos)
                         (buffer-substring (line-beginning-position) (line-end-position)) (current-column)))
        result)
  (gno-symbol "parse")
  (with-current-buffer "*gno*"
    (push (cons 'several (split-string (buffer-string) "\\n" t)) result))
  (push (cons 'none (condition-case err (progn (gno-symbol "no_such_name") nil)
                      (user-error (error-message-string err)))) result)
""",
    )
    file, line, text, column = got["one"]
    assert os.path.realpath(file) == os.path.realpath(corpus.path("code/parser.py"))
    assert (line, text) == (4, "def load(path):")
    assert column == text.index("load")  # on the name, not the line's start
    rows = grep_rows(got["several"][1:])
    assert sorted((os.path.basename(f), int(n)) for f, n, _ in rows) == [("other.py", 1), ("parser.py", 9)]
    assert got["none"] == "gno: no definition of no_such_name"


def test_emacs_gno_symbol_lands_on_the_name_below_its_type_and_through_gnoctl_too(code, corpus, tmp_path):
    got = emacs(
        code.env,
        tmp_path,
        f"""
  (gno-symbol "enqueue_task_fair")
  (push (cons 'fair (list (line-number-at-pos) (buffer-substring (line-beginning-position) (line-end-position))
                          (current-column)))
        result)
  (setq gno-socket {json.dumps(str(tmp_path / "absent.sock"))}
        gno-gnoctl '({" ".join(json.dumps(a) for a in GNOCTL)}))
  (gno-symbol "load")
  (push (cons 'cli (list (buffer-file-name) (line-number-at-pos) (current-column) gno-last-transport)) result)
""",
    )
    assert got["fair"] == [4, "enqueue_task_fair(struct rq *rq)", 0]
    file, line, column, transport = got["cli"]
    assert transport == "cli" and os.path.realpath(file) == os.path.realpath(corpus.path("code/parser.py"))
    assert (line, column) == (4, len("def "))


LONG_LINE = "Größe und Gewicht " * 60 + "the kettle descaling schedule " + "tail " * 100


@pytest.fixture
def long_line(daemon, corpus):
    """The corpus with a note whose one paragraph is a line of 1,600 characters, its
    match past non-ASCII text."""
    corpus.write("notes/long.md", f"# Long\n\n{LONG_LINE}\n")
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    return daemon


def test_editors_land_on_a_match_in_a_window_of_a_long_line(long_line, tmp_path):
    """A long line's passage is a window cut from it ("…" first, the bytes before it not
    shown): Neovim's quickfix column and Emacs's visit (gno-find's, gno-consult's) went
    to the line's start."""
    got = nvim(
        long_line.env,
        tmp_path,
        """
  vim.cmd('Gno descaling')
  vim.cmd('cfirst')
  local at = vim.api.nvim_win_get_cursor(0)
  result.at = vim.api.nvim_get_current_line():sub(at[2] + 1, at[2] + #'descaling')
""",
    )
    assert got["at"] == "descaling"
    got = emacs(
        long_line.env,
        tmp_path,
        """
  (prefer-coding-system 'utf-8)
  (gno--visit (car (gno--search-hits "search" "descaling")))
  (push (cons 'at (buffer-substring (point) (+ (point) (length "descaling")))) result)
""",
    )
    assert got["at"] == "descaling"


KETTLE = "# Kettle\n\nBoil the water first.\nKeep to the kettle zqxdescaling schedule.\n"


def test_editors_open_a_query_hit_on_its_first_matched_word(daemon, corpus, tmp_path):
    """A hybrid query's hit opened at its passage's first line and column, the heading
    above the word asked for, where a search's hit opens on the word."""
    corpus.write("notes/kettle.md", KETTLE)
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    got = nvim(
        daemon.env,
        tmp_path,
        """
  vim.cmd('GnoQuery zqxdescaling')
  assert(vim.wait(60000, function() return vim.fn.getqflist({ title = 1 }).title:find('gno query') ~= nil end, 20),
    'no query result')
  vim.cmd('cfirst')
  local at = vim.api.nvim_win_get_cursor(0)
  result.at = { at[1], vim.api.nvim_get_current_line():sub(at[2] + 1, at[2] + #'zqxdescaling') }
""",
    )
    assert got["at"] == [4, "zqxdescaling"]
    got = emacs(
        daemon.env,
        tmp_path,
        """
  (gno--visit (car (gno--search-hits "query" "zqxdescaling")))
  (push (cons 'at (list (line-number-at-pos) (buffer-substring (point) (+ (point) (length "zqxdescaling")))))
        result)
  (with-current-buffer (gno-query "zqxdescaling")  ; listed from that line: a preview may be a whole document
    (push (cons 'listed (buffer-substring (line-beginning-position 3) (line-end-position 3))) result))
""",
    )
    assert got["at"] == [4, "zqxdescaling"]
    assert re.search(r"kettle\.md\x004:Kettle \[[\d.]+\] Keep to the kettle zqxdescaling schedule\.$", got["listed"])


FOLDED = "#+STARTUP: overview\n* Projekt\nIntro.\n** Fristen\nDie zqxlöschfristen gelten ab Mai.\n* Other\nText.\n"


def test_emacs_unfolds_the_org_subtree_a_hit_is_in(daemon, corpus, tmp_path):
    """A hit in a folded Org subtree put point on a line hidden under its heading."""
    corpus.write("notes/folded.org", FOLDED)
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    got = emacs(
        daemon.env,
        tmp_path,
        f"""
  (prefer-coding-system 'utf-8)
  (find-file {json.dumps(corpus.path("notes/folded.org"))})
  (org-overview)
  (gno--visit (car (gno--search-hits "search" "zqxlöschfristen")))
  (push (cons 'visit (list (line-number-at-pos) (invisible-p (point)))) result)
  (org-overview)
  (pop-to-buffer (gno-search "zqxlöschfristen"))  ; RET there, as a user visits a hit
  (next-error)
  (with-current-buffer (window-buffer)
    (push (cons 'next (list (line-number-at-pos) (invisible-p (point)))) result))
""",
    )
    assert got["visit"] == [5, None]
    assert got["next"] == [5, None]


def test_emacs_says_how_to_set_gnoctl_when_it_cannot_run_it(tmp_path):
    """Without gnod's socket and with gno-gnoctl wrong, Emacs showed its own
    `Searching for program: No such file or directory`."""
    got = emacs(
        {**os.environ, "GNO_HOME": str(tmp_path / "home")},
        tmp_path,
        f"""
  (setq gno-socket {json.dumps(str(tmp_path / "absent.sock"))} gno-gnoctl '("/nonexistent/gnoctl"))
  (push (cons 'said (condition-case err (progn (gno-search "kettle") "no error") (user-error (cadr err)))) result)
""",
    )
    assert got["said"].startswith("gno: cannot run /nonexistent/gnoctl (")
    assert got["said"].endswith("set `gno-gnoctl' to gnoctl's path, e.g. .venv/bin/gnoctl")


def test_emacs_results_buffer_visits_a_file_whose_name_holds_colons(daemon, corpus, tmp_path):
    """grep-mode read `notes/call 10:30: agenda.md:4:…` as the file `notes/call 10` at line 30."""
    corpus.write("notes/call 10:30: agenda.md", "# Agenda\n\nfirst\nthe zqxagenda item\n")
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    got = emacs(
        daemon.env,
        tmp_path,
        """
  (gno-search "zqxagenda")
  (next-error)
  (push (cons 'opened (list (buffer-file-name (window-buffer))
                            (with-current-buffer (window-buffer) (line-number-at-pos)))) result)
""",
    )
    assert got["opened"] == [corpus.path("notes/call 10:30: agenda.md"), 4]


def test_nvim_opens_a_file_whose_name_holds_a_newline(daemon, corpus, tmp_path):
    """`:edit` took the name up to its newline (E94: No matching buffer)."""
    corpus.write("notes/two\nlines.md", "# Odd\n\nfirst\nthe zqxnewline item\n")
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    got = nvim(
        daemon.env,
        tmp_path,
        """
  vim.ui.select = function(items, _, choose) choose(items[1]) end
  vim.cmd('GnoPick zqxnewline')
  result.opened = { vim.api.nvim_buf_get_name(0), vim.api.nvim_win_get_cursor(0)[1], vim.bo.filetype }
""",
    )
    assert got["opened"] == [corpus.path("notes/two\nlines.md"), 4, "markdown"]


PAGE = """<html><head><title>Bread</title></head>
<body>
<ul>
  <li><a href="https://example.org">News</a></li>
</ul>
<p>Knead the
  zqxdough for ten minutes.</p>
<p>Let it rest.</p>
<p>Bake it for forty minutes.</p>
<p>Cool it on a rack.</p>
</body></html>
"""


def test_nvim_opens_a_converted_documents_text_at_its_hit(daemon, corpus, tmp_path):
    """A web page's hit numbers the lines of its Markdown: opened as its file, the cursor
    landed on `<ul>` (line 5 of the page), not on the word searched for; and on the
    text's last line, the first time the buffer was read (the quickfix entry's mark moved
    with the lines that filled it)."""
    corpus.write("web/bread.html", PAGE)
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    [hit] = daemon.result("search", {"query": "zqxdough"})["hits"]
    assert hit["converted"] and hit["uri"] == "gno://docs/web/bread.html"
    got = nvim(
        daemon.env,
        tmp_path,
        """
  vim.cmd('Gno zqxdough')
  vim.cmd('cfirst')
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  result.opened = { vim.api.nvim_buf_get_name(0), vim.fn.getline('.'):sub(col + 1, col + 8), vim.bo.filetype,
    vim.bo.modifiable }
""",
    )
    assert got["opened"] == ["gno://docs/web/bread.html", "zqxdough", "markdown", False]
    through_gnoctl = nvim(  # without the socket, `get` goes through gnoctl as searches do
        daemon.env,
        tmp_path,
        f"""
  require('gno').setup({{ socket = {json.dumps(str(tmp_path / "absent.sock"))}, gnoctl = {{ {", ".join(json.dumps(a) for a in GNOCTL)} }} }})
  vim.cmd('edit gno://docs/web/bread.html')
  result.lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  result.transport = require('gno').last_transport
""",
    )
    assert through_gnoctl["transport"] == "cli" and "zqxdough for ten minutes." in " ".join(through_gnoctl["lines"])


def test_emacs_visits_a_converted_documents_text_at_its_hit(daemon, corpus, tmp_path):
    """As in Neovim: the web page was visited as its file, at the line of its Markdown."""
    corpus.write("web/bread.html", PAGE)
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    got = emacs(
        daemon.env,
        tmp_path,
        f"""
  (gno-search "zqxdough")
  (next-error)
  (with-current-buffer (window-buffer)
    (push (cons 'opened (list (buffer-substring (point) (+ (point) 8)) buffer-read-only
                              (string-suffix-p "docs/web/bread.html.md" buffer-file-name)))
          result))
  (setq gno-socket {json.dumps(str(tmp_path / "absent.sock"))} gno-gnoctl '({" ".join(json.dumps(a) for a in GNOCTL)}))
  (push (cons 'same (gno--hit-file (car (alist-get 'hits (gno-call "search" '((query . "zqxdough") (limit . 5)))))))
        result)
  (push (cons 'transport gno-last-transport) result)
""",
    )
    assert got["opened"] == ["zqxdough", True, True]
    assert got["transport"] == "cli" and got["same"].endswith("docs/web/bread.html.md")  # `get` through gnoctl too
    # gno-find's candidates, made again at each key: the page's own name, its text fetched
    # and written only when it is visited (each keystroke wrote every converted hit's).
    got = emacs(
        daemon.env,
        tmp_path,
        """
  (defvar gno-test-gets 0)
  (advice-add 'gno--call :before (lambda (method &rest _) (when (equal method "get") (setq gno-test-gets (1+ gno-test-gets)))))
  (let* ((hits (make-hash-table :test #'equal))
         (labels (cdr (gno--candidates "zqxdough" hits))))
    (push (cons 'label (car labels)) result)
    (push (cons 'gets gno-test-gets) result)
    (gno--visit (gethash (car labels) hits))
    (push (cons 'visited (list (buffer-substring (point) (+ (point) 8)) buffer-read-only gno-test-gets)) result))
""",
    )
    assert got["label"].startswith(corpus.path("web/bread.html") + ":") and got["gets"] == 0
    assert got["visited"] == ["zqxdough", True, 1]


def test_nvim_gno_says_what_gnod_noted_about_the_search(indexed, tmp_path):
    """`:Gno kmem_cahce_alloc` listed the hits of `kmem_cache_alloc` under the title of the
    word typed, and said nothing of the notes the command line prints (a correction, an
    `OR` read as a word, what is not indexed yet)."""
    got = nvim(
        indexed.env,
        tmp_path,
        """
  local said = {}
  vim.notify = function(msg) table.insert(said, msg) end
  vim.cmd('Gno deploy OR production')
  result.said = said
  result.n = #vim.fn.getqflist()
""",
    )
    assert got["n"] > 0 and any("OR: a word here, not an operator" in m for m in got["said"]), got
