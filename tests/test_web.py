"""`gnoctl web` as a person meets it: a real gnod, the real `gnoctl web` in a subprocess,
HTTP from this process and a real headless Chromium (Debian's `chromium` and
`chromium-driver`, driven by Selenium). Without Chromium the browser tests skip, except
under CI=true, where they fail (`.ci/run` installs it)."""

from __future__ import annotations

import http.client
import json
import os
import re
import select
import signal
import stat
import subprocess
import sys
import time
from contextlib import contextmanager
from urllib.parse import urlencode

import pytest
from test_daemon_query import models  # noqa: F401  (a fixture: the small test models)
from test_daemon_vectors import write_topics

from conftest import _run_cli, build_corpus, cli_json, running_gnod, socket_accepts, wait_until

pytestmark = pytest.mark.timeout(180)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCREENSHOTS = os.path.join(ROOT, ".bench", "screenshots")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


class Web:
    """A running `gnoctl web`: its address, key and a session cookie."""

    def __init__(self, proc: subprocess.Popen, address: str, env: dict, corpus, daemon=None) -> None:
        self.proc = proc
        self.daemon = daemon
        self.address = address
        self.env = env
        self.corpus = corpus
        self.port = int(address.split(":")[2].split("/")[0])
        self.key = address.split("key=")[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        status, headers, _ = self.request("GET", f"/?key={self.key}")
        assert status == 303, status
        self.cookie = headers["set-cookie"].split(";")[0]
        page = self.get("/status")[2]
        self.csrf = re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)

    def request(
        self, method: str, path: str, headers: dict | None = None, body: bytes | None = None, cookie: bool = False
    ) -> tuple[int, dict, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            all_headers = {
                "Host": f"127.0.0.1:{self.port}",
                **({"Cookie": self.cookie} if cookie else {}),
                **(headers or {}),
            }
            conn.request(method, path, body=body, headers=all_headers)
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
        finally:
            conn.close()

    def get(self, path: str, **headers: str) -> tuple[int, dict, str]:
        return self.request("GET", path, headers, cookie=True)

    def post(self, path: str, body: dict, headers: dict | None = None) -> tuple[int, dict, str]:
        sent = {"Origin": self.origin, "X-CSRF-Token": self.csrf, "Content-Type": "application/json", **(headers or {})}
        return self.request(
            "POST", path, {k: v for k, v in sent.items() if v is not None}, json.dumps(body).encode(), cookie=True
        )

    def events(self, path: str):
        """(event, data) pairs of a server-sent event stream, as they come."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{self.port}", "Cookie": self.cookie})
        r = conn.getresponse()
        assert r.status == 200 and r.getheader("content-type").startswith("text/event-stream")
        try:
            event = None
            while True:
                line = r.readline().decode()
                if not line:
                    return
                if line.startswith("event: "):
                    event = line[7:].strip()
                elif line.startswith("data: "):
                    yield event, json.loads(line[6:])
        finally:
            conn.close()


def start_web(env: dict, *args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "gnoctl.main", "web", "--port", "0", *args],
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    if "open http" not in line:
        proc.kill()
        pytest.fail(f"gnoctl web did not start: {line}{proc.stderr.read()}")
    return proc, line.split("open ", 1)[1].strip()


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    corpus = build_corpus(str(tmp_path_factory.mktemp("web") / "corpus"))
    corpus.write("notes/markup.md", "# Markup test\n\nA <script>alert('kettle')</script> line about the kettle.\n")
    corpus.write("notes/people.csv", "name,city\nAda,London\nLinus,Helsinki\n")
    corpus.write("src/regs.h", "".join(f"#define REG_{i:05d}_MASK 0x{i:08x}\n" for i in range(1, 5001)))
    with running_gnod() as (env, daemon):
        daemon.result("collection.add", {"name": "docs", "path": corpus.root})
        proc, address = start_web(env)
        try:
            yield Web(proc, address, env, corpus, daemon)
        finally:
            proc.terminate()
            proc.wait(10)


# --- security ----------------------------------------------------------------------------


def test_the_key_becomes_a_lax_http_only_cookie(web):
    status, _, body = web.request("GET", "/")
    assert status == 401 and "printed" in body
    assert web.request("GET", "/?key=not-the-key")[0] == 401
    assert web.request("GET", "/api/search?q=kettle")[0] == 401
    status, headers, _ = web.request("GET", f"/?key={web.key}&q=deploy")
    assert status == 303 and headers["location"] == "/?q=deploy"
    cookie = headers["set-cookie"].lower()
    # Lax: a link to the page from another site carries it (Strict: "open the printed
    # address" in a browser that had); a change still needs the page's CSRF token.
    assert "httponly" in cookie and "samesite=lax" in cookie and "path=/" in cookie
    assert web.request("GET", "/", {"Cookie": headers["set-cookie"].split(";")[0]})[0] == 200
    assert web.request("GET", "/", {"Cookie": web.cookie.rsplit(".", 1)[0] + ".forged"})[0] == 401
    status, headers, _ = web.get("/")
    assert "script-src 'self'" in headers["content-security-policy"] and headers["referrer-policy"] == "no-referrer"
    key_file = os.path.join(web.env["GNO_HOME"], "state", "web-key")
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    with open(key_file) as f:
        assert f.read().strip() == web.key


def test_a_foreign_host_or_origin_is_refused(web):
    assert web.get("/", Host="evil.example")[0] == 421  # DNS rebinding: the page is not ours
    assert web.get("/", Host=f"evil.example:{web.port}")[0] == 421
    assert web.get("/", Origin="http://evil.example")[0] == 403
    assert web.get("/", Host=f"localhost:{web.port}")[0] == 200
    body = {"name": "docs"}
    assert web.post("/api/index", body, {"Origin": "http://evil.example"})[0] == 403
    assert web.post("/api/index", body, {"Origin": None})[0] == 403
    assert web.post("/api/index", body, {"X-CSRF-Token": None})[0] == 403
    assert web.post("/api/index", body, {"X-CSRF-Token": "0" * 43})[0] == 403
    status, _, reply = web.post("/api/index", body)
    assert status == 200 and json.loads(reply)["ok"] is True


def test_the_pages_requests_that_cannot_be_done_say_why(web):
    """A re-index of no such collection was "ok", a body that is not JSON a 500 (with a
    traceback on the terminal), and a relative folder was taken from where `gnoctl web`
    was started."""
    status, _, reply = web.post("/api/index", {"name": "nosuch"})
    assert status == 400 and "nosuch" in json.loads(reply)["error"]["message"], reply
    sent = {"Origin": web.origin, "X-CSRF-Token": web.csrf, "Content-Type": "application/json"}
    for path in ("/api/collections", "/api/collections/remove", "/api/index"):
        for body in (b"{not json", b"[1, 2]", b"\xff"):
            status, _, reply = web.request("POST", path, sent, body, cookie=True)
            assert status == 400 and "body is not" in json.loads(reply)["error"]["message"], (path, body, reply)
    status, _, reply = web.post("/api/collections", {"path": "relative/dir", "name": "rel"})
    assert status == 400 and "not a full path" in json.loads(reply)["error"]["message"], reply
    # A document page without its document: a 400 that says what it needs (it was a 502).
    for path in ("/doc", "/doc?ref="):
        status, _, page = web.get(path)
        assert status == 400 and "which document?" in page, (path, status)


def test_a_remote_bind_needs_the_flag_and_a_taken_port_is_said(web):
    r = _run_cli("web", "--host", "0.0.0.0", "--port", "0", env=web.env, timeout=30)
    assert r.returncode == 2 and "refusing to serve 0.0.0.0" in r.stderr and "--allow-remote" in r.stderr
    r = _run_cli("web", "--port", str(web.port), env=web.env, timeout=30)
    assert r.returncode == 2 and "is taken" in r.stderr and "open http" not in r.stdout, r.stderr


def test_open_says_when_there_is_no_browser_to_open(web):
    """`--open` on a machine without one did nothing, and said nothing."""
    proc, address = start_web({**web.env, "BROWSER": "false"}, "--open")
    try:
        # The pipe read as it comes: a line-buffered reader took both lines at once, then
        # waited on the pipe for the second (a test that failed one run in three).
        said, deadline = b"", time.monotonic() + 10
        while (
            b"no browser" not in said and select.select([proc.stderr], [], [], max(0.0, deadline - time.monotonic()))[0]
        ):
            said += os.read(proc.stderr.fileno(), 4096)
        assert b"no browser to open here: open the address above" in said, said
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_command_line_never_loads_the_web_stack():
    probe = (
        "import sys, gnoctl.cli; print(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('starlette', 'uvicorn', 'jinja2', 'markdown_it', 'pygments') "
        "or m.startswith('gnoctl.web')))"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


# --- search, documents, answers ----------------------------------------------------------


def test_a_pasted_page_is_searched_from_the_page_as_from_gnoctl(web):
    """A query past 16 KB once in the address (a pasted page: the grammar takes 32,000
    characters) got h11's "Invalid HTTP request received.", which the page took for gno
    web gone; one longer than the grammar takes gets the grammar's error."""
    import socket

    pasted = "the release pipeline déploiement " * 900
    assert len(urlencode({"q": pasted})) > 32_000 and len(pasted) < 32_000
    path = "/api/search?" + urlencode({"q": pasted})
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\nCookie: {web.cookie}\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", web.port), timeout=30) as s:
        s.sendall(head[:20_000].encode())  # as a browser's packets come: the head not whole yet
        time.sleep(0.3)
        s.sendall(head[20_000:].encode())
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    status, body = int(reply.split(b" ", 2)[1]), reply.split(b"\r\n\r\n", 1)[1]
    assert status == 200 and json.loads(body)["hits"][0]["ref"] == "docs/guides/deploy.md", reply[:300]
    status, _, body = web.get("/api/search?" + urlencode({"q": "a" * 32_001}))
    assert status == 400 and "at most 32,000 characters" in json.loads(body)["error"]["message"]


def test_search_as_you_type_returns_highlighted_hits(web):
    status, _, body = web.get("/api/search?" + urlencode({"q": "deplo", "typing": 1}))
    found = json.loads(body)
    assert status == 200 and found["mode"] == "lexical" and found["sent"] == "deplo*"
    hit = next(h for h in found["hits"] if h["ref"] == "docs/guides/deploy.md")
    assert "<mark>" in "".join(hit["passages"]) and hit["href"].startswith("/doc?ref=docs%2Fguides%2Fdeploy.md&line=")
    assert 'class="result"' in found["html"] and "<mark>" in found["html"]
    # A finished word is not a prefix; a document's markup is text.
    assert json.loads(web.get("/api/search?" + urlencode({"q": "kettle ", "typing": 1}))[2])["sent"] == "kettle "
    # A word ending in no letter or digit is no word's first letters (`C++*` searched C).
    for typed in ("C++", "50%"):
        assert json.loads(web.get("/api/search?" + urlencode({"q": typed, "typing": 1}))[2])["sent"] == typed
    found = json.loads(web.get("/api/search?q=kettle")[2])
    assert "&lt;script&gt;" in found["html"] and "<script>" not in found["html"]
    # A phrase being typed is closed, its last word a prefix (an open quote was an error at
    # every keystroke, and closed as typed it found nothing until the word was whole).
    found = json.loads(web.get("/api/search?" + urlencode({"q": '"deploy the bill', "typing": 1}))[2])
    assert found["sent"] == '"deploy the bill*"' and found["error"] is None
    assert [h["ref"] for h in found["hits"]] == ["docs/guides/deploy.md"]
    found = json.loads(web.get("/api/search?" + urlencode({"q": '"deploy the ', "typing": 1}))[2])
    assert found["sent"] == '"deploy the"'
    # A new word's first letter: the phrase so far, not a blank list.
    found = json.loads(web.get("/api/search?" + urlencode({"q": '"deploy the b', "typing": 1}))[2])
    assert found["sent"] == '"deploy the b*"' and [h["ref"] for h in found["hits"]] == ["docs/guides/deploy.md"]
    # A half-typed query the grammar rejects: an error, for the page to show beside the last results.
    status, _, body = web.get("/api/search?" + urlencode({"q": "deploy ->", "typing": 1}))
    assert status == 200  # `->` alone is no word: dropped beside one
    status, _, body = web.get("/api/search?" + urlencode({"q": "->", "typing": 1}))
    assert status == 400 and json.loads(body)["error"]["name"] == "INVALID_QUERY"
    # Enter: hybrid, which works (degraded) without models.
    found = json.loads(web.get("/api/search?" + urlencode({"q": "deploy billing", "mode": "hybrid"}))[2])
    assert found["mode"] == "hybrid" and found["hits"][0]["ref"] == "docs/guides/deploy.md"
    # What it did without, as the result says it ("without no vector search: …" read twice over).
    assert "<li>skipped: no vector search" in found["html"] and "without no" not in found["html"]
    # Folded: said on every search without models, it took a third of a phone's screen.
    assert '<details class="notes degraded">\n  <summary>Searched without ' in found["html"]


def test_a_hits_second_passage_says_which_line_it_is_from(web):
    """It followed the first as if the code went on (spinlock.h's line 379, then 523)."""
    web.corpus.write("notes/gap.md", "# Gap\n\nzqxgap first\n" + "filler\n" * 20 + "zqxgap second\n")
    try:
        assert wait_until(lambda: web.daemon.result("search", {"query": "zqxgap"})["hits"], 30)
        html = json.loads(web.get("/api/search?q=zqxgap")[2])["html"]
        assert '<a class="gap" href="/doc?ref=docs%2Fnotes%2Fgap.md&amp;line=24#hit">line 24</a>' in html, html
    finally:
        os.remove(web.corpus.path("notes/gap.md"))
        assert wait_until(lambda: not web.daemon.result("search", {"query": "zqxgap"})["hits"], 30)


def test_a_deep_row_of_a_big_csv_is_shown_at_its_file_line_under_the_header(web):
    """A data scientist's hit at row 2,500 of a CSV showed a window with no header row, one
    paragraph of pipes marked whole; and its line was the next row's (the Markdown
    delimiter row was counted, and a cell's line break was not)."""
    rows = [f"CUST-{i:05d},plan {i % 7},{i * 3}" for i in range(1, 3001)]
    rows[2497] = "CUST-ZX99,gold,7"  # the file's line 2,499, under the header
    rows[2599] = 'CUST-02600,"two\nlines",300'  # a quoted cell with a line break: one row, two lines
    web.corpus.write("notes/customers.csv", "customer,plan,spend\n" + "\n".join(rows) + "\n")
    try:
        assert wait_until(lambda: web.daemon.result("search", {"query": "CUST-ZX99"})["hits"], 30)
        (hit,) = web.daemon.result("search", {"query": "CUST-ZX99"})["hits"]
        with open(web.corpus.path("notes/customers.csv")) as f:
            assert f.read().split("\n")[hit["snippet"]["line"] - 1] == "CUST-ZX99,gold,7"
        page = web.get("/doc?" + urlencode({"ref": "docs/notes/customers.csv", "line": hit["snippet"]["line"]}))[2]
        assert "<th>customer</th><th>plan</th><th>spend</th>" in page
        marked = re.search(r'<tr class="hit" id="hit">(.*?)</tr>', page, re.S)
        assert marked and "<td>CUST-ZX99</td><td>gold</td>" in marked.group(1), page[:300]
        assert f'<td class="ln">{hit["snippet"]["line"]}</td>' in marked.group(1)
    finally:
        os.remove(web.corpus.path("notes/customers.csv"))
        assert wait_until(lambda: not web.daemon.result("search", {"query": "CUST-ZX99"})["hits"], 30)


def test_what_a_search_skipped_or_changed_comes_before_its_results(web):
    """A hybrid search run as lexical alone said so below its 20 results."""
    html = json.loads(web.get("/api/search?" + urlencode({"q": "kettle OR deploy", "mode": "hybrid"}))[2])["html"]
    assert "skipped: " in html and "OR: a word here" in html
    assert html.index('class="notes"') < html.index('class="hits"')


def test_a_converted_documents_page_says_its_text_was_extracted(web):
    """As the protocol's `converted` says (the page kept a list of extensions of its own)."""
    web.corpus.write(
        "notes/saved.xhtml", "<html><head><title>Saved</title></head><body><p>zqxsaved page</p></body></html>"
    )
    try:
        assert wait_until(lambda: web.daemon.result("search", {"query": "zqxsaved"})["hits"], 30)
        page = web.get("/doc?" + urlencode({"ref": "docs/notes/saved.xhtml"}))[2]
        assert "The text gno extracted from this file" in page
        assert "extracted from this file" not in web.get("/doc?ref=docs/guides/deploy.md")[2]
    finally:
        os.remove(web.corpus.path("notes/saved.xhtml"))
        assert wait_until(lambda: not web.daemon.result("search", {"query": "zqxsaved"})["hits"], 30)


def test_more_results_are_a_link_away_and_the_count_says_which_are_shown(web):
    """The page showed at most 20 results, said "20 results" as if that were all, and
    offered no more; code passages lost their indentation in a proportional font."""
    data = json.loads(web.get("/api/search?" + urlencode({"q": "kettle", "n": 1}))[2])
    assert data["count"] == 1 and data["more"] == "/?q=kettle&mode=lexical&n=2"
    # A word being typed was searched as a prefix: more of those, not of the word alone (none).
    typed = json.loads(web.get("/api/search?" + urlencode({"q": "kettl", "n": 1, "typing": 1}))[2])
    assert typed["count"] == 1 and typed["more"] == "/?q=kettl&mode=lexical&n=2&typing=1"
    assert json.loads(web.get(typed["more"].replace("/?", "/api/search?"))[2])["count"] == 2
    assert '<a href="/?q=kettle&amp;mode=lexical&amp;n=2" rel="next">More results</a>' in data["html"]
    page = web.get(data["more"])[2]
    assert '<span id="info">2 results' in page and "More results" not in page
    page = web.get("/?" + urlencode({"q": "kettle", "mode": "lexical", "n": 1}))[2]
    assert '<span id="info">the first 1 result' in page
    data = json.loads(web.get("/api/search?" + urlencode({"q": "REG_00010_MASK"}))[2])
    assert '<p class="passage code">#define <mark>' in data["html"]
    assert data["html"].index('class="also"') < data["html"].index('class="hits"')  # where it is defined: first


def test_tags_typed_apart_by_spaces_are_each_a_tag():
    """`meeting urgent` in Tags was one tag, which no note has: nothing, silently."""
    from starlette.datastructures import QueryParams

    from gnoctl.web.search import Request

    for typed in ("meeting urgent", "meeting, urgent", " meeting,urgent ,"):
        assert Request.from_query(QueryParams({"tags": typed})).tags == ("meeting", "urgent"), typed


def test_filters_narrow_the_results(web):
    found = json.loads(web.get("/api/search?" + urlencode({"q": "deploy Bereitstellung", "lang": "de"}))[2])
    assert [h["ref"] for h in found["hits"]] == ["docs/german/anleitung.md"]
    found = json.loads(web.get("/api/search?" + urlencode({"q": "deploy Bereitstellung", "lang": "en"}))[2])
    assert found["count"] >= 1 and "docs/german/anleitung.md" not in [h["ref"] for h in found["hits"]]
    found = json.loads(web.get("/api/search?" + urlencode({"q": "deploy", "c": "nope"}))[2])
    assert found["error"]["name"] == "NOT_FOUND"
    found = json.loads(web.get("/api/search?" + urlencode({"q": "deploy", "c": "docs", "since": "2000-01-01"}))[2])
    assert found["count"] >= 2
    # A path glob, file types and a sender, as the CLI's --path, -t and --from (the page had none).
    found = json.loads(web.get("/api/search?" + urlencode({"q": "deploy", "path": "guides/**"}))[2])
    assert found["count"] >= 1 and all(h["ref"].startswith("docs/guides/") for h in found["hits"])
    found = json.loads(web.get("/api/search?" + urlencode({"q": "spaghetti", "type": "txt, md"}))[2])
    assert [h["ref"] for h in found["hits"]] == ["docs/notes/pasta.txt"]
    assert json.loads(web.get("/api/search?" + urlencode({"q": "spaghetti", "type": "md"}))[2])["count"] == 0
    found = json.loads(web.get("/api/search?" + urlencode({"q": "deploy", "from": "nobody"}))[2])
    assert found["count"] == 0
    page = web.get("/?" + urlencode({"q": "deploy", "path": "guides/**", "type": "md", "from": "ann"}))[2]
    for field, value in (("path", "guides/**"), ("type", "md"), ("from", "ann")):
        assert f'name="{field}" value="{value}"' in page, field
    assert ">: path guides/** · type md · from ann</span></summary>" in page  # said while folded
    # Filters alone list what passes them ("all my urgent notes" showed nothing), by path.
    found = json.loads(web.get("/api/search?" + urlencode({"path": "guides/**"}))[2])
    listed = [h["ref"] for h in found["hits"]]
    assert listed == sorted(listed) and listed and all(r.startswith("docs/guides/") for r in listed)
    assert all(h["score"] is None for h in found["hits"]) and 'class="score"' not in found["html"]
    found = json.loads(web.get("/api/search?" + urlencode({"path": "nowhere/**"}))[2])
    assert found["count"] == 0 and "No document passes these filters." in found["html"]
    assert json.loads(web.get("/api/search?q=")[2]).get("count", 0) == 0


def test_the_search_page_renders_results_without_script(web):
    status, _, page = web.get("/?" + urlencode({"q": "spaghetti", "mode": "lexical"}))
    assert status == 200 and "notes/pasta.txt" in page and "<mark>spaghetti</mark>" in page
    assert 'name="c" value="docs"' in page  # the collection filter lists the collections


def test_the_document_view_marks_the_line(web):
    status, _, page = web.get("/doc?" + urlencode({"ref": "docs/guides/deploy.md", "line": 5}))
    assert status == 200
    marked = re.search(r'<(\w+)[^>]*id="hit"[^>]*>(.*?)</\1>', page, re.S)
    assert marked and "Run the release pipeline" in marked.group(2)
    # Its path to copy (a file:// link there was dead: a browser opens none from a page over http).
    assert f'data-copy="{web.corpus.path("guides/deploy.md")}"' in page and "file://" not in page
    assert 'href="/file?ref=docs%2Fguides%2Fdeploy.md"' in page
    assert '<aside class="similar"' in page and "docs%2Fguides%2Fstaging.md" in page
    # Found by shared words (no vectors here), as the page now says (gnoctl similar did).
    aside = page.split('<aside class="similar"', 1)[1]
    assert re.search(
        r'<p class="notes">no vectors \(.*\): found by the document&#39;s most informative words</p>', aside
    )
    # Opened from a search: its matched words marked on the hit's line (the paragraph was
    # tinted, no word in it marked), and a link back to the results.
    href = next(
        h["href"] for h in json.loads(web.get("/api/search?q=release+pipeline")[2])["hits"] if "deploy.md" in h["href"]
    )
    assert "mark=release" in href and "mark=pipeline" in href and "q=release+pipeline" in href
    page = web.get(href.split("#")[0])[2]
    marked = re.search(r'<(\w+)[^>]*id="hit"[^>]*>(.*?)</\1>', page, re.S)
    assert "<mark>release</mark> <mark>pipeline</mark>" in marked.group(2)
    assert page.count("<mark>") == 2  # on the hit's line alone
    assert '<a href="/?q=release+pipeline">← Results for <q>release pipeline</q></a>' in page
    # A CSV is a table (its rows were lines of pipes, wider than a phone's screen).
    table = web.get("/doc?" + urlencode({"ref": "docs/notes/people.csv", "line": 3}))[2]
    assert '<table class="rows">' in table and "<th>city</th>" in table
    assert '<tr class="hit" id="hit"><td class="ln">3</td><td>Linus</td>' in table  # the file's line 3
    page = web.get("/doc?" + urlencode({"ref": "docs/notes/markup.md", "line": 3, "mark": "<script>"}))[2]
    assert "&lt;script&gt;alert" in page and "<script>alert" not in page
    assert web.get("/doc?ref=docs/nothing.md")[0] == 404
    # A ref naming its line, as gnoctl get takes it (it was refused: "give them once").
    status, _, page = web.get("/doc?" + urlencode({"ref": "docs/guides/deploy.md:5"}))
    marked = re.search(r'<(\w+)[^>]*id="hit"[^>]*>(.*?)</\1>', page, re.S)
    assert status == 200 and marked and "Run the release pipeline" in marked.group(2)
    status, headers, body = web.get("/file?ref=docs/notes/markup.md")
    assert (
        status == 200
        and headers["content-type"].startswith("text/plain")
        and "sandbox" in headers["content-security-policy"]
        and "<script>" in body
    )  # the file as it is, shown as text
    # None to show: a page saying why (it was a bare JSON error).
    status, headers, body = web.get("/file?ref=docs/nothing.md")
    assert status == 404 and headers["content-type"].startswith("text/html")
    assert "<h1>Original file</h1>" in body and "no such file in the folder of collection" in body


def test_the_original_of_a_legacy_text_and_of_a_message_is_what_gno_read(web):
    """A Latin-1 note was sent as UTF-8 (`�berschwemmungsgebiet`); a mailbox's message
    was the whole mailbox."""
    with open(web.corpus.path("notes/alt.txt"), "wb") as f:
        f.write("Überschwemmungsgebiet der Elbe.\n".encode("latin-1"))
    mbox = b"From a@b Mon Jan  1 00:00:00 2024\nFrom: a@b\nSubject: One\n\nFirst body.\n\n"
    mbox += b"From a@b Mon Jan  1 00:00:00 2024\nFrom: a@b\nSubject: Two\n\nSecond body.\n"
    with open(web.corpus.path("notes/box.mbox"), "wb") as f:
        f.write(mbox)
    try:
        assert wait_until(lambda: web.get("/file?ref=docs/notes/box.mbox!/2.eml")[0] == 200, 10)
        assert wait_until(lambda: web.get("/file?ref=docs/notes/alt.txt")[0] == 200, 10)
        status, headers, body = web.get("/file?ref=docs/notes/alt.txt")
        assert headers["content-type"] == "text/plain; charset=utf-8" and "Überschwemmungsgebiet der Elbe." in body
        status, headers, body = web.get("/file?ref=docs/notes/box.mbox!/2.eml")
        assert "Second body." in body and "First body." not in body
        assert "sandbox" in headers["content-security-policy"]
    finally:
        for name in ("alt.txt", "box.mbox"):
            os.remove(web.corpus.path(f"notes/{name}"))


def test_a_long_document_is_shown_a_window_at_a_time_around_the_hit(web):
    """A 24 MB generated header was 37 MB of HTML that kept the browser busy for 106 s: a
    long document shows DOC_LINES lines around the hit, with links to the lines before
    and after, each numbered as in the file."""
    from gnoctl.web.app import DOC_LINES

    status, _, page = web.get("/doc?" + urlencode({"ref": "docs/src/regs.h", "line": 4000}))
    assert status == 200
    first, last = 4000 - DOC_LINES // 2, 4000 + DOC_LINES // 2 - 1
    assert f"Lines {first}–{last} of 5000" in page
    marked = re.search(r'<span class="hll" id="hit">(.*?)</span>\n', page, re.S)
    assert marked and "4000" in marked.group(1) and "REG_04000_MASK" in re.sub(r"<[^>]+>", "", marked.group(1))
    assert "REG_02999_MASK" not in page and "REG_05000_MASK" not in page
    earlier = re.search(r'<a href="([^"]+)" rel="prev">earlier lines</a>', page).group(1)
    later = re.search(r'<a href="([^"]+)" rel="next">later lines</a>', page).group(1)
    page = web.get(later.replace("&amp;", "&"))[2]
    assert "Lines 5000–5000 of 5000" in page and "REG_05000_MASK" in page and 'rel="next"' not in page
    page = web.get(earlier.replace("&amp;", "&"))[2]
    assert f"Lines {first - DOC_LINES}–{first - 1} of 5000" in page and 'id="hit"' not in page
    page = web.get("/doc?" + urlencode({"ref": "docs/src/regs.h", "line": 9999}))[2]  # past the end: the start
    assert f"Lines 1–{DOC_LINES} of 5000" in page and 'id="hit"' not in page and 'rel="prev"' not in page
    assert "Line 9999 is past the end of this document (5000 lines)" in page  # it said nothing of it
    assert "Lines" not in web.get("/doc?" + urlencode({"ref": "docs/guides/deploy.md", "line": 5}))[2]


@pytest.mark.parametrize(
    "items",
    ["- item {i}", "1. item {i}", "- [ ] item {i}", "- group\n  - item {i}"],
    ids=["tight", "ordered", "tasks", "nested"],
)
def test_the_document_view_marks_a_hit_in_a_list(items):
    """A hit in a tight list was neither marked nor scrolled to: its item's paragraph,
    which got the id, is never rendered."""
    from gnoctl.web import render

    text = "# Shopping list\n\n" + "\n".join(items.format(i=i) + (" capybara" if i == 80 else "") for i in range(100))
    line = next(n for n, row in enumerate(text.split("\n"), 1) if "capybara" in row)
    page = str(render.document(text, "list.md", line))
    assert page.count('id="hit"') == 1 and re.search(r'<li class="hit" id="hit">[^<]*item 80 capybara', page), page


def test_relative_links_and_pictures_lead_to_the_collections_documents(web):
    """`[the deploy notes](deploy.md)` led to /deploy.md and `![](img/d.png)` to
    /img/d.png, both 404: the page knows documents by collection and path."""
    from gnoctl.web import render

    text = "# Arch\n\n![diagram](img/d.png) [deploy](deploy.md) [up](../b%20c.md#s) [web](https://x.org) [far](../../out.md)\n"
    html = str(render.document(text, "notes/arch.md", None, 1, "docs"))
    assert '<img src="/file?ref=docs%2Fnotes%2Fimg%2Fd.png"' in html
    assert '<a href="/doc?ref=docs%2Fnotes%2Fdeploy.md">deploy</a>' in html
    assert '<a href="/doc?ref=docs%2Fb+c.md">up</a>' in html
    assert '<a href="https://x.org">web</a>' in html and '<a href="../../out.md">far</a>' in html
    web.corpus.write("notes/linked.md", "# Linked\n\nSee [the guide](../guides/deploy.md).\n")
    try:
        assert wait_until(lambda: web.get("/doc?ref=docs/notes/linked.md")[0] == 200, 10)
        page = web.get("/doc?ref=docs/notes/linked.md")[2]
        href = re.search(r'<a href="([^"]+)">the guide</a>', page).group(1).replace("&amp;", "&")
        assert href == "/doc?ref=docs%2Fguides%2Fdeploy.md" and web.get(href)[0] == 200
    finally:
        os.remove(web.corpus.path("notes/linked.md"))


def test_wiki_links_lead_to_the_note_they_name(web):
    """A notes app's `[[Plan]]` showed as its brackets: it names a note by its file name,
    in any folder and any case, the linking note's own folder first."""
    from gnoctl.web import render

    html = str(
        render.document("See [[Plan]], [[Road map#Q3|the map]] and `[[code]]`.\n", "notes/a.md", None, 1, "docs")
    )
    assert '<a href="/wiki?c=docs&amp;in=notes&amp;name=Plan" class="wiki">Plan</a>' in html
    assert '<a href="/wiki?c=docs&amp;in=notes&amp;name=Road+map" class="wiki">the map</a>' in html
    assert "<code>[[code]]</code>" in html
    notes = {
        "notes/plan.md": "# Plan here\n",
        "projects/Plan.md": "# Plan there\n",
        "projects/q3/Road Map.md": "# Road map\n",
        "notes/links.md": "# Links\n\n[[PLAN]] [[projects/plan|theirs]] [[road map#Q3]] [[Nowhere]]\n",
    }
    for rel, text in notes.items():
        web.corpus.write(rel, text)
    try:
        assert wait_until(lambda: web.get("/doc?ref=docs/notes/links.md")[0] == 200, 10)
        page = web.get("/doc?ref=docs/notes/links.md")[2]
        hrefs = [h.replace("&amp;", "&") for h in re.findall(r'<a href="(/wiki[^"]+)" class="wiki">', page)]
        assert len(hrefs) == 4
        led = [web.get(href) for href in hrefs]
        assert [(status, headers.get("location")) for status, headers, _ in led[:3]] == [
            (303, "/doc?ref=docs%2Fnotes%2Fplan.md"),  # its own folder's, before a shallower one
            (303, "/doc?ref=docs%2Fprojects%2FPlan.md"),
            (303, "/doc?ref=docs%2Fprojects%2Fq3%2FRoad+Map.md"),
        ]
        status, _, body = led[3]
        assert status == 404 and "no note of docs is named &#39;Nowhere&#39;" in body
    finally:
        for rel in notes:
            os.remove(web.corpus.path(rel))


def test_the_document_view_puts_back_the_blank_lines_its_file_has():
    """The stored text has one blank line for several; `get` gives the file's lines (with
    them put back), which the view numbers as the file does."""
    from gnoctl.web import render
    from gnod.ingest.canonical import canonicalize_lines
    from gnod.lines import expand

    source = "import os\n\n\ndef first():\n    pass\n\n\n\ndef second():\n    return 2\n"
    stored, shifts = canonicalize_lines(source)
    hit = source.splitlines().index("def second():") + 1  # 9, where the stored text has it at 6
    html = str(render.document(expand(stored, shifts), "a.py", hit))
    marked = html[html.index('id="hit"') :].split("\n", 1)[0]
    assert re.search(r'class="linenos"> ?9<', marked) and ">second<" in marked


def test_a_documents_tabs_line_up_beside_its_line_numbers():
    """The numbers sit in the lines, and a browser counts tab stops from the line's
    start: one tab of kernel code showed as 3 columns, two as 11."""
    from gnoctl.web import render

    for path in ("fork.c", "notes.txt"):
        html = str(render.document("int f(void)\n{\n\tif (x)\n\t\treturn 1;\n}\n", path, 3))
        assert "\t" not in html and "        " + "        " in html, path  # two tabs: 16 columns


def test_a_restructuredtext_page_is_shown_as_its_source_numbered():
    """A technical writer opened the kernel's submitting-patches.rst: read as Markdown,
    a literal block's `---` line made it a heading, a `^^^`-underlined title was a
    paragraph, and `.. code-block:: c` was text. It is its source, numbered, the hit's
    line marked, its titles highlighted as reStructuredText's."""
    from gnoctl.web import render

    text = "Backtraces\n^^^^^^^^^^\n\nSo::\n\n  <commit message>\n  ---\n  Signed-off-by: Author\n"
    html = str(render.document(text, "process/submitting-patches.rst", 7))
    assert render.kind_of("process/submitting-patches.rst") == "code"
    assert "<h2" not in html and "<h1" not in html and html.count('class="linenos"') == 8
    assert re.search(r'id="hit">.*---', html), html


def test_citations_link_to_their_lines_and_code_marks_the_hit_line():
    from gnoctl.web import render

    links = {1: "/doc?ref=docs/a.md&line=3#hit", 2: "/doc?ref=docs/b.md&line=9#hit"}
    html = render.answer("Deploy on **Tuesdays** [1], never <b>Fridays</b> [2, 7].", links.get)
    assert '<a class="cite" href="/doc?ref=docs/a.md&amp;line=3#hit">1</a>' in html
    assert '[<a class="cite" href="/doc?ref=docs/b.md&amp;line=9#hit">2</a>, 7]' in html  # no source 7: text
    assert "<strong>Tuesdays</strong>" in html and "&lt;b&gt;Fridays" in html
    for text, path, line, want in (
        ("# T\n\n```python\nx = 1\ny = 2\n```\n", "a.md", 5, ">y<"),  # inside a fence
        ("import os\n\ndef y():\n    pass\n", "a.py", 3, ">y<"),  # a source file, numbered
        ("first\nsecond\nthird\n", "a.txt", 2, "second"),  # plain text
        ("---\ntags: [a]\n---\n# Title\n\nbody y\n", "a.md", 6, "body y"),  # after frontmatter
    ):
        marked = re.search(r'id="hit">(.*?)(\n|</p>)', str(render.document(text, path, line)))
        assert marked and want in marked.group(1), (path, line)


def test_ask_without_a_generator_shows_the_sources_and_the_fix(web):
    events = web.events("/api/ask?" + urlencode({"q": "how do we deploy the billing service"}))
    event, data = next(events)
    assert event == "done"
    assert "No answer written" in data["html"] and "gnoctl models pull generate" in data["html"]
    # The fix once, and no command-line flag or agent's argument for the sources: they are below.
    assert data["html"].count("gnoctl models pull generate") == 1
    assert "--no-answer" not in data["html"] and "answer: false" not in data["html"]
    assert 'href="/doc?ref=docs%2Fguides%2Fdeploy.md&amp;line=' in data["html"]
    # Said before a question is asked (an empty box, and the news only after asking).
    page = web.get("/ask")[2]
    assert "is not\n    downloaded yet" in page and "<code>gnoctl models pull generate</code>" in page
    assert page.index('class="note writer"') < page.index('<form id="ask"')


# --- live updates ------------------------------------------------------------------------


def test_definitions_are_a_mode_and_hits_name_the_function_they_are_in(web):
    code = "static int foo_probe(struct device *dev)\n{\n\treturn platform_get_irq(dev, 0);\n}\n"
    web.corpus.write("code/probe.c", code)
    try:
        assert wait_until(lambda: web.daemon.result("search", {"query": "foo_probe", "symbol": True})["hits"], 30)
        found = json.loads(web.get("/api/search?" + urlencode({"q": "foo_probe", "mode": "definitions"}))[2])
        assert found["mode"] == "definitions"
        (hit,) = found["hits"]
        assert (hit["ref"], hit["line"], hit["symbol"]) == ("docs/code/probe.c", 1, "foo_probe()")
        assert 'code/probe.c:1: <span class="symbol">foo_probe()</span>' in found["html"]
        mentioned = json.loads(web.get("/api/search?q=platform_get_irq")[2])
        assert mentioned["hits"][0]["symbol"] == "foo_probe()"
        # A one-word search links to where that word is defined.
        assert 'href="/?q=platform_get_irq&amp;mode=definitions"' in mentioned["html"]
        assert "mode=definitions" not in json.loads(web.get("/api/search?q=deploy+production")[2])["html"]
        notes = json.loads(web.get("/api/search?q=kettle")[2])  # found in notes only: nothing to define it
        assert notes["hits"] and "mode=definitions" not in notes["html"]
    finally:
        os.remove(web.corpus.path("code/probe.c"))
        # Gone from the index before the next test listens for changes.
        assert wait_until(lambda: not web.daemon.result("search", {"query": "platform_get_irq"})["hits"], 30)


def test_the_change_stream_delivers_a_saved_file(web):
    events = web.events("/events/changes")
    assert next(events)[0] == "ready"
    web.corpus.write("notes/saved.md", "# Saved\n\nA freshly saved note about the kettle.\n")
    # The stream may first deliver a change an earlier test made: its removal is published
    # just after the search that test waited on stopped finding the file.
    ours = ((e, c) for e, c in events if e != "change" or c["path"] == "notes/saved.md")
    try:
        event, change = next(ours)
        assert event == "change" and change["path"] == "notes/saved.md" and change["kind"] == "added"
        assert change["uri"] == "gno://docs/notes/saved.md"
    finally:
        os.remove(web.corpus.path("notes/saved.md"))
    assert next(ours)[1]["kind"] == "removed"


def test_the_status_stream_shows_each_collection_and_what_a_post_changes(web, tmp_path):
    events = web.events("/events/status")
    event, data = next(events)
    assert event == "status" and 'data-name="docs"' in data["html"] and "documents" in data["html"]
    assert "BINARY" in data["html"]  # the corpus's binary file, with its reason
    assert re.search(r"index \d+(\.\d)? MiB", data["html"]), data["html"]  # the command line's units
    other = build_corpus(str(tmp_path / "other")).root
    status, _, reply = web.post("/api/collections", {"path": other, "name": "other"})
    assert status == 200 and json.loads(reply)["ok"], reply
    assert any('data-name="other"' in d["html"] for _, d in events)  # pushed, not polled by the page
    status, _, reply = web.post("/api/collections", {"path": other, "name": "again"})
    assert status == 400 and json.loads(reply)["error"]["details"]["collection"] == "other"  # overlap
    assert web.post("/api/collections/remove", {"name": "other"})[0] == 200
    assert any('data-name="other"' not in d["html"] for _, d in events)
    code = tmp_path / "code"
    code.mkdir()
    (code / "tool.py").write_text("def kettle_boil(litres):\n    return litres * 2\n")
    assert web.post("/api/collections", {"path": str(code), "name": "code"})[0] == 200
    # The background parse of source files shows, as it goes and when it is done.
    assert any('class="definitions"' in d["html"] and "parsed" in d["html"] for _, d in events)
    assert web.post("/api/collections/remove", {"name": "code"})[0] == 200
    # No name given: the folder's, made valid as `gnoctl collection add` makes it.
    spaced = tmp_path / "My Notes"
    spaced.mkdir()
    (spaced / "n.md").write_text("# N\n\nnote\n")
    status, _, reply = web.post("/api/collections", {"path": str(spaced), "name": ""})
    assert status == 200 and json.loads(reply)["message"] == "added My-Notes: indexing", reply
    assert web.post("/api/collections/remove", {"name": "My-Notes"})[0] == 200


def test_the_status_panel_says_how_many_changed_paths_are_being_indexed():
    """As `gnoctl status`: a batch of changes showed a bare "indexing" (freshness.changes)."""
    from gnoctl.web.app import Web

    page = Web(link=None, editor_template="")  # type: ignore[arg-type]  # only its templates
    st = {
        "version": "1", "pid": 1, "db_bytes": 1 << 20, "documents": 74, "models": [], "vectors": {"available": False},
        "job": {"running": False},
        "collections": [{"name": "docs", "documents": 74, "path": "/d", "errors": 0, "last_indexed_at": 0}],
        "freshness": [{"collection": "docs", "watching": True, "pending": 5, "indexing": True, "changes": 230}],
    }  # fmt: skip
    html = page.fragment("_status.html", st=st, fresh={"docs": st["freshness"][0]}, errors={}, now=time.time())
    assert "indexing 230 changed paths, 5 more pending" in html


def test_a_re_index_that_changed_nothing_shows_when_it_checked(web):
    """Re-indexing from the status page left "indexed 7 min ago" as it was: nothing said
    that the run happened when no file had changed."""

    def docs_item() -> str:
        item = re.search(r'data-name="docs".*?</p>', web.get("/status")[2], re.S)
        return item.group(0) if item else ""

    time.sleep(1.5)  # past the newest document's indexing
    assert web.post("/api/index", {"name": "docs"})[0] == 200
    assert wait_until(lambda: "checked" in docs_item(), 10), docs_item()
    assert re.search(r"checked \d s ago", docs_item()), docs_item()


def test_the_status_stream_shows_the_ocr_backlog_read(web, tmp_path):
    """A picture is found by its name at once and read by OCR in the background: the
    status panel says so once it is read (with the real Tesseract; see tests/test_ocr.py)."""
    from test_ocr import encode, need_tesseract, picture

    need_tesseract()
    folder = tmp_path / "scans"
    folder.mkdir()
    (folder / "board.png").write_bytes(encode(picture(["Kettle inventory"]), "PNG"))
    events = web.events("/events/status")
    assert web.post("/api/collections", {"path": str(folder), "name": "scans"})[0] == 200
    assert any('class="ocr"' in d["html"] and "all read" in d["html"] for _, d in events)
    assert web.post("/api/collections/remove", {"name": "scans"})[0] == 200


# --- a real browser ----------------------------------------------------------------------


def need_chromium() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip install -e '.[test]')")
    if missing:
        message = f"{', '.join(missing)} missing (apt-get install -y chromium chromium-driver; .ci/run does it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


@contextmanager
def chromium(address: str):
    """Headless Chromium, signed in to the page at `address` (the key traded for the cookie)."""
    need_chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        driver.get(address)
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser(web):
    with chromium(web.address) as driver:
        yield driver


def _wait(driver, predicate, timeout: float = 10.0):
    """Until `predicate` holds; an element the page re-rendered while it was read is looked up again."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(
        driver,
        timeout,
        poll_frequency=0.05,
        ignored_exceptions=(NoSuchElementException, StaleElementReferenceException),
    ).until(lambda d: predicate(d))


def _titles(driver) -> list[str]:
    return driver.execute_script("return [...document.querySelectorAll('.result .title')].map(e => e.textContent)")


def test_browser_types_a_query_and_opens_a_hit_at_its_line(web, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    assert browser.current_url == web.origin + "/"  # the key is gone from the address
    box = browser.find_element(By.ID, "q")
    box.send_keys("release pipel")  # half a word: found as a prefix
    _wait(browser, lambda d: "Deployment guide" in _titles(d))
    assert browser.find_element(By.ID, "mode").text.startswith("lexical")
    # The address is what was typed, searched as typed: a reload or Back shows these
    # results again, and the box what the user typed (it held `release pipel*`, gno's `*`).
    assert "q=release+pipel&" in browser.execute_script("return location.search") + "&"
    assert "typing=1" in browser.execute_script("return location.search")
    assert browser.title == "release pipel · gno"  # a bookmark's name: it stayed "gno"
    browser.refresh()
    _wait(browser, lambda d: "Deployment guide" in _titles(d))
    box = browser.find_element(By.ID, "q")
    assert box.get_attribute("value") == "release pipel"
    box.send_keys(Keys.ARROW_DOWN, Keys.ENTER)
    _wait(browser, lambda d: "/doc?" in d.current_url)
    assert "line=5" in browser.current_url
    hit = browser.find_element(By.ID, "hit")
    assert "Run the release pipeline" in hit.text and hit.is_displayed()
    browser.back()
    box = _wait(browser, lambda d: d.find_element(By.ID, "q"))
    box.send_keys(Keys.CONTROL, "a")
    # An open quote alone searches nothing (a phrase being typed is closed, so `"deploy`
    # would search "deploy"): the last results stay, the error shows.
    box.send_keys('"')
    _wait(browser, lambda d: d.find_element(By.ID, "error").is_displayed())
    box.send_keys('deploy"', Keys.ENTER)
    _wait(browser, lambda d: d.find_element(By.ID, "mode").text == "hybrid")
    assert "Deployment guide" in _titles(browser)


def test_browser_says_when_its_session_is_over_and_keeps_what_it_showed(web, browser):
    """Without its cookie the page said "gno web is not answering (stopped?)", though the
    server had answered 401; a failed Enter left "searching words and meaning…" for good."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    box = browser.find_element(By.ID, "q")
    box.send_keys("kettle")
    _wait(browser, lambda d: _titles(d))
    said = browser.find_element(By.ID, "info").text
    box.send_keys(' "', Keys.ENTER)  # hybrid, an open quote the grammar refuses
    _wait(browser, lambda d: d.find_element(By.ID, "error").is_displayed())
    # The results stay, said to be the last search's that worked (their count read as this one's).
    kept = browser.find_element(By.ID, "info").text
    assert kept.endswith(" · the last search that worked") and kept.split(" · ")[0] == said.split(" · ")[0], kept
    browser.delete_all_cookies()
    box.send_keys(Keys.BACKSPACE, "x")
    _wait(browser, lambda d: "session is over" in d.find_element(By.ID, "error").text)


def test_browser_result_list_follows_a_saved_file(web, browser):
    from selenium.webdriver.common.by import By

    browser.find_element(By.ID, "q").send_keys("zucchini")
    _wait(browser, lambda d: "Nothing matched" in d.find_element(By.ID, "results").text)
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.live") == "yes")
    browser.execute_script("window.sameDocument = true")
    web.corpus.write("notes/zucchini.md", "# Zucchini bread\n\nGrate the zucchini, squeeze it dry.\n")
    try:
        _wait(browser, lambda d: "Zucchini bread" in _titles(d))
        os.remove(web.corpus.path("notes/zucchini.md"))
        _wait(browser, lambda d: "Nothing matched" in d.find_element(By.ID, "results").text)
        assert browser.execute_script("return window.sameDocument") is True  # no reload
    finally:
        if os.path.exists(web.corpus.path("notes/zucchini.md")):
            os.remove(web.corpus.path("notes/zucchini.md"))


COUNT_SEARCHES = """
window.searched = [];
const fetched = window.fetch;
window.fetch = (url, options) => {
  if (String(url).startsWith("/api/search")) window.searched.push(new URLSearchParams(String(url).split("?")[1]).get("q"));
  return fetched(url, options);
};
"""


def test_browser_typing_into_a_page_opened_with_a_query_goes_on_after_it(web, browser):
    """`/?q=release` opened, then " pipel" typed, searched "release pipel*": the caret
    was at the start of the box ("pipelrelease")."""
    from selenium.webdriver.common.by import By

    browser.get(web.origin + "/?q=release")
    box = browser.find_element(By.ID, "q")
    box.send_keys(" pipel")
    assert box.get_attribute("value") == "release pipel"
    _wait(browser, lambda d: "Deployment guide" in _titles(d))


def test_browser_searches_what_an_input_method_composed_not_each_step(web, browser):
    """東京 typed through an input method goes と, とう… before it is 東京: each step was
    searched (`と` listed results), and the list and the address rewritten; and the
    arrow keys that pick a candidate moved the selection in the results."""
    from selenium.webdriver.common.by import By

    box = browser.find_element(By.ID, "q")
    box.send_keys("kettle ")
    _wait(browser, lambda d: _titles(d))
    browser.execute_script(COUNT_SEARCHES)
    for step in ("と", "とう", "とうきょう", "東京"):
        browser.execute_cdp_cmd(
            "Input.imeSetComposition", {"text": step, "selectionStart": len(step), "selectionEnd": len(step)}
        )
    browser.execute_cdp_cmd(
        "Input.dispatchKeyEvent",
        {"type": "rawKeyDown", "key": "ArrowDown", "code": "ArrowDown", "windowsVirtualKeyCode": 229},
    )
    time.sleep(0.5)  # what a search of a step would have taken to be sent
    assert browser.execute_script("return window.searched") == []
    assert box.get_attribute("value") == "kettle 東京"
    assert not browser.find_elements(By.CSS_SELECTOR, ".result.selected")
    browser.execute_cdp_cmd("Input.insertText", {"text": "東京"})  # the composition ends
    _wait(browser, lambda d: d.execute_script("return window.searched") == ["kettle 東京"])
    _wait(
        browser, lambda d: d.execute_script("return decodeURIComponent(location.search)").startswith("?q=kettle+東京")
    )


HIDE = """
Object.defineProperty(document, "hidden", {value: arguments[0], configurable: true});
document.dispatchEvent(new Event("visibilitychange"));
"""


def test_browser_a_hidden_page_lets_its_stream_go_and_catches_up_when_shown(web, browser):
    """Each open gno page held an event stream, and a browser gives a host six
    connections: with five results opened in tabs, a seventh page never loaded. A page
    out of sight holds none; shown again, it searches again for what it missed."""
    from selenium.webdriver.common.by import By

    browser.find_element(By.ID, "q").send_keys("parsnip")
    _wait(browser, lambda d: "Nothing matched" in d.find_element(By.ID, "results").text)
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.live") == "yes")
    browser.execute_script(HIDE, True)
    assert browser.execute_script("return document.body.dataset.live") == "no"
    web.corpus.write("notes/parsnip.md", "# Parsnip soup\n\nRoast the parsnip first.\n")
    try:
        time.sleep(1.5)  # saved and indexed meanwhile; a page out of sight does not hear it
        assert "Parsnip soup" not in _titles(browser)
        browser.execute_script(HIDE, False)
        _wait(browser, lambda d: "Parsnip soup" in _titles(d))
        _wait(browser, lambda d: d.execute_script("return document.body.dataset.live") == "yes")
    finally:
        os.remove(web.corpus.path("notes/parsnip.md"))


def test_browser_open_document_says_when_its_file_changes_or_goes(web, browser):
    """An open document showed its old text, and nothing else, after its file was saved
    (the result lists follow within a second)."""
    from selenium.webdriver.common.by import By

    path = web.corpus.write("notes/open.md", "# Open note\n\nThe first draft of the open note.\n")
    try:
        hits = lambda: web.daemon.result("search", {"query": "draft open note"})["hits"]  # noqa: E731
        assert wait_until(lambda: any(h["path"] == "notes/open.md" for h in hits()), 30)
        browser.get(web.origin + "/doc?ref=docs/notes/open.md&line=3")
        _wait(browser, lambda d: d.execute_script("return document.body.dataset.live") == "yes")
        changed, removed = browser.find_element(By.ID, "changed"), browser.find_element(By.ID, "removed")
        assert not changed.is_displayed() and not removed.is_displayed()
        web.corpus.write("notes/open.md", "# Open note\n\nThe second draft of the open note.\n")
        _wait(browser, lambda d: d.find_element(By.ID, "changed").is_displayed())
        assert "The first draft" in browser.find_element(By.CLASS_NAME, "content").text
        browser.find_element(By.CSS_SELECTOR, "#changed a").click()
        _wait(browser, lambda d: "The second draft" in d.find_element(By.CLASS_NAME, "content").text)
        assert "line=3" in browser.current_url and not browser.find_element(By.ID, "changed").is_displayed()
        _wait(browser, lambda d: d.execute_script("return document.body.dataset.live") == "yes")
        os.remove(path)
        _wait(browser, lambda d: d.find_element(By.ID, "removed").is_displayed())
        assert not browser.find_element(By.ID, "changed").is_displayed()
    finally:
        if os.path.exists(path):
            os.remove(path)


def test_browser_status_page_and_screenshots(web, browser):
    from selenium.webdriver.common.by import By

    os.makedirs(SCREENSHOTS, exist_ok=True)
    browser.get(web.origin + "/status")
    _wait(browser, lambda d: "docs" in d.find_element(By.ID, "panel").text)
    # The panel is re-rendered as it follows the daemon: read it through _wait, which looks again.
    _wait(browser, lambda d: "documents" in d.find_element(By.CSS_SELECTOR, '.collection[data-name="docs"]').text)
    shots = {}
    for scheme in ("light", "dark"):
        browser.execute_cdp_cmd(
            "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
        )
        for page, path in (
            ("search", "/?q=deploy&mode=lexical"),
            ("doc", "/doc?ref=docs/guides/deploy.md&line=5#hit"),
            ("status", "/status"),
        ):
            browser.get(web.origin + path)
            _wait(browser, lambda d: d.execute_script("return document.readyState") == "complete")
            shots[f"{page}-{scheme}"] = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
            browser.save_screenshot(os.path.join(SCREENSHOTS, f"{page}-{scheme}.png"))
    assert shots["search-light"] != shots["search-dark"]
    browser.set_window_size(390, 844)
    browser.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]}
    )
    browser.get(web.origin + "/?q=deploy&mode=lexical")
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".result"))
    # Usable at phone width: nothing wider than the screen.
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
    browser.save_screenshot(os.path.join(SCREENSHOTS, "search-narrow.png"))
    browser.get(web.origin + "/doc?ref=docs/guides/deploy.md&line=5#hit")
    browser.save_screenshot(os.path.join(SCREENSHOTS, "doc-narrow.png"))


def _visible_results(driver) -> list[str]:
    """The open result list's hits as `collection/path`."""
    return driver.execute_script(
        "return [...document.querySelectorAll('.result .where')].map(e => e.textContent.split(':')[0])"
    )


def test_browser_filters_the_open_results_by_collection(web, browser, tmp_path):
    from selenium.webdriver.common.by import By

    team = tmp_path / "team"
    for rel, text in {
        "runbooks/deploy-api.md": "# API runbook\n\nDeploy the API gateway with the blue-green script.\n",
        "runbooks/rollback.md": "# Rollback\n\nWhen a deploy fails, roll back to the last tag.\n",
        "notes/friday.md": "# Fridays\n\nWe never deploy on a Friday afternoon.\n",
    }.items():
        (team / rel).parent.mkdir(parents=True, exist_ok=True)
        (team / rel).write_text(text)
    web.daemon.result("collection.add", {"name": "team", "path": str(team)}, timeout=60)
    try:
        browser.get(web.origin + "/")  # the filter lists the collections the page was opened with
        browser.find_element(By.ID, "q").send_keys("deploy")
        _wait(browser, lambda d: {r.split("/")[0] for r in _visible_results(d)} == {"docs", "team"})
        both = _visible_results(browser)
        assert browser.find_element(By.ID, "info").text.startswith(f"{len(both)} results")
        browser.execute_script("window.sameDocument = true")
        browser.find_element(By.CSS_SELECTOR, "details.filters summary").click()
        team_box = browser.find_element(By.CSS_SELECTOR, 'input[name="c"][value="team"]')
        docs_box = browser.find_element(By.CSS_SELECTOR, 'input[name="c"][value="docs"]')
        team_box.click()
        _wait(browser, lambda d: {r.split("/")[0] for r in _visible_results(d)} == {"team"})
        only_team = _visible_results(browser)
        assert sorted(only_team) == sorted(r for r in both if r.startswith("team/")) and len(only_team) < len(both)
        assert browser.find_element(By.ID, "info").text.startswith(f"{len(only_team)} result")
        assert "c=team" in browser.execute_script("return location.search")
        team_box.click()
        docs_box.click()
        _wait(browser, lambda d: {r.split("/")[0] for r in _visible_results(d)} == {"docs"})
        assert sorted(_visible_results(browser)) == sorted(r for r in both if r.startswith("docs/"))
        assert browser.execute_script("return window.sameDocument") is True  # filtered in place, no reload
        # A text field filters as it is typed (it waited for Enter or a click elsewhere), and
        # the summary says what is on when the filters are folded away (it said "Filters").
        docs_box.click()
        path = browser.find_element(By.CSS_SELECTOR, 'input[name="path"]')
        path.send_keys("runbooks/**")
        _wait(
            browser,
            lambda d: sorted(_visible_results(d)) == ["team/runbooks/deploy-api.md", "team/runbooks/rollback.md"],
        )
        summary = browser.find_element(By.CSS_SELECTOR, "details.filters summary")
        summary.click()  # folded
        assert summary.text == "Filters: path runbooks/**"
        summary.click()
        browser.find_element(By.ID, "clear-filters").click()
        _wait(browser, lambda d: sorted(_visible_results(d)) == sorted(both))
        assert summary.text == "Filters" and not browser.find_element(By.ID, "clear-filters").is_displayed()
        # With no words, a filter lists what passes it.
        from selenium.webdriver.common.keys import Keys

        browser.find_element(By.ID, "q").send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)
        _wait(browser, lambda d: not _visible_results(d))
        browser.find_element(By.CSS_SELECTOR, 'input[name="path"]').send_keys("runbooks/**")
        _wait(
            browser,
            lambda d: sorted(_visible_results(d)) == ["team/runbooks/deploy-api.md", "team/runbooks/rollback.md"],
        )
        assert "path=runbooks" in browser.execute_script("return location.search")
    finally:
        web.daemon.result("collection.remove", {"name": "team"})


# Records the status panel's rendering of one collection each time the server pushes it.
WATCH_PANEL = """
window.seen = [];
const panel = document.getElementById("panel");
new MutationObserver(() => {
  const li = panel.querySelector(`.collection[data-name="${arguments[0]}"]`);
  if (!li) return;
  const bar = li.querySelector("progress");
  window.seen.push({state: li.querySelector(".state").textContent.replace(/\\s+/g, " ").trim(),
                    done: bar ? Number(bar.value) : null, total: bar ? Number(bar.max) : null});
}).observe(panel, {childList: true});
"""


def test_browser_status_page_shows_the_indexing_as_it_goes(web, browser, tmp_path):
    from selenium.webdriver.common.by import By

    files = 15000
    bulk = tmp_path / "bulk"
    for i in range(files):
        folder = bulk / f"d{i // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"n{i:05d}.md").write_text(f"# Note {i}\n\nA short note about item number {i}.\n")
    browser.get(web.origin + "/status")
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '.collection[data-name="docs"]'))
    browser.execute_script("window.sameDocument = true;" + WATCH_PANEL, "bulk")
    form = browser.find_element(By.ID, "add-collection")
    form.find_element(By.NAME, "path").send_keys(str(bulk))
    form.find_element(By.NAME, "name").send_keys("bulk")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    try:
        _wait(browser, lambda d: "added bulk" in d.find_element(By.ID, "message").text)
        card = '.collection[data-name="bulk"]'
        _wait(
            browser,
            lambda d: (
                d.find_element(By.CSS_SELECTOR, f"{card} .count").text == f"{files} documents"
                and "up to date" in d.find_element(By.CSS_SELECTOR, f"{card} .state").text
            ),
            timeout=30,
        )
        seen = browser.execute_script("return window.seen")
        indexing = [s for s in seen if s["state"] and "indexing" in s["state"]]
        assert indexing, seen  # the progress was shown while it ran…
        assert any(s["total"] == files and 0 < s["done"] < files for s in indexing), indexing
        counts = [int(s["state"].split()[0]) for s in seen]
        assert counts == sorted(counts), seen  # …the count climbing to the end
        assert browser.execute_script("return window.sameDocument") is True  # pushed, not reloaded
    finally:
        web.daemon.result("collection.remove", {"name": "bulk"}, timeout=60)


# --- answers in a real browser, with the real test models ----------------------------------


@pytest.fixture(scope="module")
def asking(tmp_path_factory, models):  # noqa: F811
    """A `gnoctl web` over a gnod with the small test models (SmolLM2 writes the answers)."""
    root = tmp_path_factory.mktemp("asking")
    write_topics(root / "notes")
    # Mars far down a long page (in its second chunk): the cited lines are out of sight until the page
    # scrolls to them.
    os.remove(root / "notes" / "space" / "mars.md")
    nights = "".join(f"Night {i}: clouds again, the telescope stayed under its cover.\n\n" for i in range(1, 61))
    (root / "notes" / "space" / "logbook.md").write_text(
        f"# Observatory logbook\n\n{nights}Night 61: clear skies at last. Mars rose in the east and Olympus Mons, "
        "the tallest volcano on Mars, showed as a bright spot.\n"
    )
    with running_gnod(configuration(models)) as (env, daemon):
        daemon.result("collection.add", {"name": "notes", "path": str(root / "notes")}, timeout=60)
        assert daemon.result("embed", {}, timeout=120)["pending"] == 0
        proc, address = start_web(env)
        try:
            yield Web(proc, address, env, None, daemon)
        finally:
            proc.terminate()
            proc.wait(10)


def configuration(roles: dict[str, str]) -> str:
    """config.toml with the test models, as test_daemon_query's `configure` writes it."""
    return "\n".join(["[models]", "threads = 1"] + [f'{role} = "file:{path}"' for role, path in roles.items()]) + "\n"


# Records the length of the answer streamed into #stream, token by token, from the page's start.
WATCH_STREAM = """
window.streamed = [];
new MutationObserver(() => {
  const stream = document.getElementById("stream");
  const n = stream ? stream.textContent.length : 0;
  if (n && n !== window.streamed[window.streamed.length - 1]) window.streamed.push(n);
}).observe(document, {childList: true, subtree: true, characterData: true});
"""


def test_browser_asks_and_follows_a_citation_to_its_line(asking):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with chromium(asking.address) as browser:
        browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH_STREAM})
        browser.find_element(By.LINK_TEXT, "Ask").click()
        box = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "form#ask #q"))
        assert not browser.find_elements(By.CSS_SELECTOR, ".note.writer")  # it has one to write answers
        box.send_keys("What is on Mars?", Keys.ENTER)  # SmolLM2-135M answers it in a sentence
        _wait(
            browser,
            lambda d: (
                d.find_element(By.ID, "answer").get_attribute("aria-busy") == "false"
                and d.find_element(By.ID, "final").text
            ),
            timeout=60,
        )
        streamed = browser.execute_script("return window.streamed")
        assert len(streamed) >= 2 and streamed == sorted(streamed), streamed  # written token by token
        final = browser.find_element(By.ID, "final")
        assert "Sources" in final.text and not browser.find_elements(By.CSS_SELECTOR, "#final .error")
        assert not browser.find_element(By.ID, "stream").is_displayed()  # replaced by the rendered answer
        # A citation [n] when the tiny model wrote one, else the source it would cite: both lead to the lines.
        link = (
            browser.find_elements(By.CSS_SELECTOR, "#final .answer-text a.cite")
            or browser.find_elements(By.CSS_SELECTOR, "#final ol.sources a")
        )[0]
        href = link.get_attribute("href")
        n = int(link.text) if "cite" in (link.get_attribute("class") or "") else 1
        where = browser.find_element(By.CSS_SELECTOR, f"#source-{n} .where").text  # notes/path:start–end
        ref, lines = where.rsplit(":", 1)
        start = int(lines.split("–")[0])
        assert f"line={start}" in href and href.endswith("#hit"), href
        link.click()
        _wait(browser, lambda d: "/doc?" in d.current_url)
        assert f"line={start}" in browser.current_url
        assert browser.find_element(By.CSS_SELECTOR, ".doc-head .where").text.startswith(f"{ref}:{start}")
        hit = browser.find_element(By.ID, "hit")
        assert hit.is_displayed() and hit.text.strip()
        assert browser.execute_script(  # scrolled to: the marked line is in the window
            "const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight", hit
        )
        if ref == "notes/space/logbook.md":  # its second chunk, far below the first screen
            assert start > 40 and browser.execute_script("return scrollY") > 0


def test_the_status_page_says_gnod_stopped_and_does_not_start_it_again(tmp_path):
    """With the status page open, `gnoctl daemon stop` was followed by 12 s of the old
    panel, then a new gnod: the panel's refresh started one."""
    corpus = build_corpus(str(tmp_path / "corpus"))
    with running_gnod() as (env, daemon):
        daemon.result("collection.add", {"name": "docs", "path": corpus.root})
        proc, address = start_web(env)
        try:
            web = Web(proc, address, env, corpus, daemon)
            events = web.events("/events/status")
            assert 'data-name="docs"' in next(events)[1]["html"]
            time.sleep(0.5)  # the page's watch in place
            assert cli_json("daemon", "stop", "--json", env=env)["stopped"]
            t0 = time.monotonic()
            event, data = next(events)
            assert event == "status" and "not running" in data["html"], data["html"]
            assert time.monotonic() - t0 < 5
            time.sleep(2)
            assert not socket_accepts(daemon.paths.socket_path)  # stopped, and left so
        finally:
            proc.terminate()
            proc.wait(10)


def test_ctrl_c_ends_the_open_pages_streams_without_a_traceback(web):
    """Ctrl-C with a page open printed "Cancel 1 running task(s), timeout graceful shutdown
    exceeded" and a CancelledError traceback per open stream, and took 3 s."""
    proc, address = start_web(web.env)
    port = int(address.split(":")[2].split("/")[0])
    cookie = Web(proc, address, web.env, web.corpus, web.daemon).cookie
    streams = []
    for path in ("/events/changes", "/events/status"):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}", "Cookie": cookie})
        assert conn.getresponse().status == 200
        streams.append(conn)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode in (0, 130) and time.monotonic() - t0 < 2.5, err
    assert "Traceback" not in err and "ERROR" not in err, err


def test_a_passage_of_table_rows_is_shown_under_its_header_row():
    from gnoctl.web.search import _search_hit

    hit = {
        "collection": "fleet",
        "path": "fleet.csv",
        "uri": "gno://fleet/fleet.csv",
        "title": "fleet",
        "score": 1.0,
        "snippet": {
            "line": 33,
            "text": "| HH-NL 130 | Scania R450 |",
            "matches": [[14, 20]],
            "table_header": "| plate | <model> |",
        },
    }
    [shown] = _search_hit(hit, "scania").passages
    assert str(shown) == "| plate | &lt;model&gt; |\n| HH-NL 130 | <mark>Scania</mark> R450 |"


def test_a_passage_of_markdown_shows_its_words_not_its_heading_and_bold_marks():
    """A mail's passages showed `# AW: Rechnung` and `**From:** … · **To:**` as typed."""
    from gnoctl.web.render import passage

    text = "# AW: Rechnung Q3\n\n**From:** Hans Müller · **To:** Bau"
    start = text.index("Müller")
    shown = str(passage(text, [[start, start + len("Müller")]], markdown=True))
    assert shown == "AW: Rechnung Q3\n\nFrom: Hans <mark>Müller</mark> · To: Bau"
    assert str(passage("**x**", [], markdown=False)) == "**x**"  # code and plain text as they are
