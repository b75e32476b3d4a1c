"""Model URIs and downloads: the real huggingface_hub code path against a fake hub on 127.0.0.1.

The fake hub answers what huggingface_hub asks of huggingface.co: HEAD and GET on
/{org}/{repo}/resolve/{revision}/{file} with X-Repo-Commit, ETag (the sha256, as for LFS
files), Content-Length and byte ranges; X-Error-Code on errors; optionally a redirect to a
second server, as the hub redirects to its CDN. Any connection to a non-loopback address
fails the test, so nothing here can reach the internet.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gnod.models import pull as pullmod
from gnod.models.pull import CachedModel, PullError, clear, list_cached, pull, resolve
from gnod.models.uri import ModelRef, ModelURIError, parse
from gnod.paths import Paths

COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = "acme/tiny-GGUF"
FILE = "tiny-Q4_K_M.gguf"
URI = f"hf:{REPO}/{FILE}"
CHUNK = 10 * 1024 * 1024  # huggingface_hub reads a download in pieces of this size


def blob(n: int, seed: int = 1) -> bytes:
    return (hashlib.sha256(str(seed).encode()).digest() * (n // 32 + 1))[:n]


class FakeHub:
    """A hub and a CDN on two loopback ports, recording every request."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, str, str], bytes] = {}
        self.requests: list[tuple[str, str, str, dict[str, str]]] = []  # (server, method, path, headers)
        self.redirect = False  # resolve answers 302 to the CDN, like huggingface.co
        self.drop_after: int | None = None  # the next body GET sends this many bytes, then hangs up
        self.fail_gets = 0  # answer this many body GETs (after a dropped one) with 503
        self.etag: str | None = None  # announce this ETag instead of the true sha256
        self.hub_headers = True  # False: a plain web server, not a hub (no X-Repo-Commit)
        self.plain_404 = False  # 404 without X-Error-Code, as a generic mirror would
        self.lock = threading.Lock()
        self.hub = self._server("hub")
        self.cdn = self._server("cdn")

    def _server(self, role: str) -> ThreadingHTTPServer:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_HEAD(self) -> None:
                hub.handle(self, role, head=True)

            def do_GET(self) -> None:
                hub.handle(self, role, head=False)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return server

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.hub.server_address[1]}"

    def add(self, data: bytes, repo: str = REPO, filename: str = FILE, revision: str = "main") -> bytes:
        self.files[(repo, revision, filename)] = data
        return data

    def gets(self) -> list[tuple[str, str, str, dict[str, str]]]:
        return [r for r in self.requests if r[1] == "GET"]

    def close(self) -> None:
        for s in (self.hub, self.cdn):
            s.shutdown()
            s.server_close()

    def handle(self, h: BaseHTTPRequestHandler, role: str, head: bool) -> None:
        with self.lock:
            self.requests.append((role, h.command, h.path, {k.lower(): v for k, v in h.headers.items()}))
        if role == "cdn":
            m = re.fullmatch(r"/cdn/([^/]+/[^/]+)/([^/]+)/(.+)", h.path)
            key = (m[1], m[2], m[3]) if m else None
            return self.body(h, self.files[key], head) if key in self.files else self.error(h, 404, None)
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", h.path)
        if not m:
            return self.error(h, 404, None)
        repo, rev, filename = m[1], m[2], m[3]
        if not any(k[0] == repo for k in self.files):
            return self.error(h, 401, "RepoNotFound")
        if rev != COMMIT and not any(k[:2] == (repo, rev) for k in self.files):
            return self.error(h, 404, "RevisionNotFound")
        data = self.files.get((repo, rev, filename))
        if data is None:
            return self.error(h, 404, "EntryNotFound")
        etag = self.etag or hashlib.sha256(data).hexdigest()
        if self.redirect:
            h.send_response(302)
            h.send_header("Location", f"http://127.0.0.1:{self.cdn.server_address[1]}/cdn/{repo}/{rev}/{filename}")
            h.send_header("X-Repo-Commit", COMMIT)
            h.send_header("X-Linked-Etag", f'"{etag}"')
            h.send_header("X-Linked-Size", str(len(data)))
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        self.body(h, data, head, etag)

    def error(self, h: BaseHTTPRequestHandler, status: int, code: str | None) -> None:
        h.send_response(status)
        if code and not self.plain_404:
            h.send_header("X-Error-Code", code)
            h.send_header("X-Repo-Commit", COMMIT)
        h.send_header("Content-Length", "0")
        h.end_headers()

    def body(self, h: BaseHTTPRequestHandler, data: bytes, head: bool, etag: str | None = None) -> None:
        start = 0
        rng = h.headers.get("Range")
        if rng:
            start = int(re.fullmatch(r"bytes=(\d+)-", rng)[1])
        drop = None
        if not head:
            drop, self.drop_after = self.drop_after, None
            if drop is None and self.fail_gets:
                self.fail_gets -= 1
                return self.error(h, 503, None)
        h.send_response(206 if rng else 200)
        if self.hub_headers:
            h.send_header("X-Repo-Commit", COMMIT)
            h.send_header("ETag", f'"{etag or hashlib.sha256(data).hexdigest()}"')
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("Content-Length", str(len(data) - start))
        if rng:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        h.end_headers()
        if head:
            return
        payload = data[start:]
        if drop is not None:
            h.wfile.write(payload[:drop])
            h.wfile.flush()
            h.connection.shutdown(socket.SHUT_RDWR)
            h.close_connection = True
            return
        h.wfile.write(payload)


@pytest.fixture(autouse=True)
def isolated_hf(tmp_path_factory, monkeypatch):
    """huggingface_hub's home in tmp, no token, no default endpoint, loopback only."""
    home = tmp_path_factory.mktemp("hf_home")
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there: a forgotten endpoint fails fast
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    import huggingface_hub.constants as hfc

    monkeypatch.setattr(hfc, "HF_TOKEN_PATH", str(home / "token"))
    monkeypatch.setattr(hfc, "HF_HUB_OFFLINE", False)

    real_connect = socket.socket.connect

    def loopback_only(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0]
            try:
                ok = ipaddress.ip_address(host).is_loopback
            except ValueError:
                ok = host == "localhost"
            if not ok:
                raise AssertionError(f"a test tried to reach {address}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)


@pytest.fixture
def hub():
    h = FakeHub()
    yield h
    h.close()


@pytest.fixture
def cache(tmp_path) -> Path:
    return tmp_path / "cache" / "models"


# --- URIs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri, repo, filename, revision",
    [
        ("hf:gpustack/bge-m3-GGUF/bge-m3-Q4_K_M.gguf", "gpustack/bge-m3-GGUF", "bge-m3-Q4_K_M.gguf", None),
        ("hf:org/repo/sub/dir/model.gguf", "org/repo", "sub/dir/model.gguf", None),
        ("hf:org/repo@main/model.gguf", "org/repo", "model.gguf", "main"),
        (f"hf:org/repo@{COMMIT}/model.gguf", "org/repo", "model.gguf", COMMIT),
        ("hf:org/repo@refs%2Fpr%2F1/model.gguf", "org/repo", "model.gguf", "refs/pr/1"),
        (
            "  hf:Qwen/Qwen3-Embedding-0.6B-GGUF/Qwen3-Embedding-0.6B-Q8_0.gguf ",
            "Qwen/Qwen3-Embedding-0.6B-GGUF",
            "Qwen3-Embedding-0.6B-Q8_0.gguf",
            None,
        ),
    ],
)
def test_parse_hf(uri, repo, filename, revision):
    ref = parse(uri)
    assert (ref.scheme, ref.repo, ref.filename, ref.revision, ref.path) == ("hf", repo, filename, revision, None)
    assert parse(ref.uri) == ref


@pytest.mark.parametrize(
    "uri, path",
    [
        ("file:/models/x.gguf", "/models/x.gguf"),
        ("file:///models/x.gguf", "/models/x.gguf"),
        ("file://localhost/models/my%20x.gguf", "/models/my x.gguf"),
        ("/models/./x.gguf", "/models/x.gguf"),
        ("file:~/x.gguf", os.path.expanduser("~/x.gguf")),
        ("~/m/x.gguf", os.path.expanduser("~/m/x.gguf")),
    ],
)
def test_parse_file(uri, path):
    ref = parse(uri)
    assert (ref.scheme, ref.path, ref.filename, ref.repo) == ("file", path, os.path.basename(path), None)
    assert parse(ref.uri) == ref


@pytest.mark.parametrize(
    "uri, needle",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("hf:org/repo", "no file"),
        ("hf:org/repo/", "no file"),
        ("hf:model.gguf", "owner"),
        ("hf:repo/model.gguf", "owner"),
        ("hf://org/repo/m.gguf", "hf:org/repo/m.gguf"),
        ("https://huggingface.co/org/repo/resolve/main/m.gguf?download=true", "hf:org/repo/m.gguf"),
        ("https://huggingface.co/org/repo/blob/v2/m.gguf", "hf:org/repo@v2/m.gguf"),
        ("http://example.com/m.gguf", "unknown scheme 'http:'"),
        ("s3:bucket/m.gguf", "unknown scheme"),
        ("models/m.gguf", "absolute"),
        ("file:models/m.gguf", "relative"),
        ("file:", "empty"),
        ("file://otherhost/m.gguf", "otherhost"),
        ("file:/models/", "directory"),
        ("hf:org/re po/m.gguf", "repo name"),
        ("hf:org--x/repo/m.gguf", "owner"),
        ("hf:-org/repo/m.gguf", "owner"),
        ("hf:org/repo/../m.gguf", "clean path"),
        ("hf:org/repo/a//m.gguf", "clean path"),
        ("hf:org/repo@/m.gguf", "revision"),
        ("hf:org/repo@refs/pr/1/m.gguf", "%2F"),
    ],
)
def test_parse_bad(uri, needle):
    with pytest.raises(ModelURIError) as e:
        parse(uri)
    assert isinstance(e.value, ValueError)
    assert needle in str(e.value)
    assert "hf:org/repo/model-Q4_K_M.gguf" in str(e.value)  # every error shows good URIs


def test_vector_table_is_named_by_the_uri_string():
    from gnod.store.vectors import table_for

    assert table_for(URI) == "vec_" + hashlib.sha256(URI.encode()).hexdigest()[:8]
    assert re.fullmatch(r"vec_[0-9a-f]{8}", table_for("file:/x.gguf"))
    assert table_for("hf:a/b/c.gguf") != table_for("hf:a/b@main/c.gguf")  # the URI string names the model


def test_model_cache_follows_gno_home(tmp_path):
    assert Paths(str(tmp_path)).model_cache_dir == str(tmp_path / "cache" / "models")
    assert Paths(str(tmp_path)).llm_cache_file == str(tmp_path / "cache" / "llm-cache.sqlite")


# --- pull ----------------------------------------------------------------------------------


def test_pull_downloads_verifies_and_lists(hub, cache):
    data = hub.add(blob(300_000))
    assert resolve(URI, cache) is None
    path = pull(URI, cache, endpoint=hub.endpoint)
    assert path == cache / "hf" / "acme" / "tiny-GGUF" / "main" / FILE
    assert path.read_bytes() == data
    assert resolve(URI, cache) == path
    assert list_cached(cache) == [CachedModel(uri=URI, path=str(path), size_bytes=len(data))]
    assert [r[1] for r in hub.requests] == ["HEAD", "GET"]
    assert "range" not in hub.gets()[0][3]
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".part")] == []


def test_second_pull_is_a_cache_hit(hub, cache):
    hub.add(blob(1000))
    first = pull(URI, cache, endpoint=hub.endpoint)
    hub.requests.clear()
    assert pull(URI, cache, endpoint=hub.endpoint) == first
    assert hub.requests == []  # not even a HEAD
    pull(URI, cache, endpoint=hub.endpoint, force=True)
    assert len(hub.gets()) == 1


def test_interrupted_download_resumes_on_next_pull(hub, cache):
    data = hub.add(blob(CHUNK + 200_000))
    # The connection drops halfway through the second piece (the first is on disk; an unfinished
    # piece is lost), and the retry huggingface_hub 2.x makes within the same pull fails too.
    hub.drop_after = CHUNK + 100_000
    hub.fail_gets = 1
    with pytest.raises(PullError) as e:
        pull(URI, cache, endpoint=hub.endpoint)
    assert "again" in e.value.fix
    assert resolve(URI, cache) is None and list_cached(cache) == []
    hub.requests.clear()
    hub.fail_gets = 0  # huggingface_hub 1.x does not retry within the pull: the 503 is still armed
    path = pull(URI, cache, endpoint=hub.endpoint)
    assert path.read_bytes() == data
    (get,) = hub.gets()
    assert get[3]["range"] == f"bytes={CHUNK}-"


class Stop(BaseException):
    """What a caller raises from the progress callback to cancel a pull."""


def test_cancelled_pull_keeps_partial_and_resumes(hub, cache):
    data = hub.add(blob(CHUNK + 123_456))

    def cancel_after_first_chunk(done, total):
        if done >= CHUNK:
            raise Stop

    with pytest.raises(Stop):
        pull(URI, cache, progress=cancel_after_first_chunk, endpoint=hub.endpoint)
    assert resolve(URI, cache) is None
    hub.requests.clear()
    seen = []
    path = pull(URI, cache, progress=lambda d, t: seen.append((d, t)), endpoint=hub.endpoint)
    assert path.read_bytes() == data
    assert hub.gets()[0][3]["range"] == f"bytes={CHUNK}-"
    assert seen[0] == (CHUNK, len(data)) and seen[-1] == (len(data), len(data))


def test_progress_increases_to_total(hub, cache):
    data = hub.add(blob(2 * CHUNK + 1000))
    seen: list[tuple[int, int]] = []
    pull(URI, cache, progress=lambda d, t: seen.append((d, t)), endpoint=hub.endpoint)
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[0] == 0 and len(set(done)) >= 4
    assert {t for _, t in seen} == {len(data)}
    assert seen[-1] == (len(data), len(data))


def test_redirect_to_cdn_keeps_token_on_the_hub(hub, cache, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret_test_token")
    hub.redirect = True
    data = hub.add(blob(5000))
    assert pull(URI, cache, endpoint=hub.endpoint).read_bytes() == data
    head = [r for r in hub.requests if r[1] == "HEAD"][0]
    assert head[0] == "hub" and head[3]["authorization"] == "Bearer hf_secret_test_token"
    (get,) = hub.gets()
    assert get[0] == "cdn" and "authorization" not in get[3]


def test_hf_endpoint_env_and_revision(hub, cache, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    data = hub.add(blob(777, seed=2), revision="v1.0")
    path = pull(f"hf:{REPO}@v1.0/{FILE}", cache)
    assert path.read_bytes() == data and path.parent.name == "v1.0"
    assert list_cached(cache)[0].uri == f"hf:{REPO}@v1.0/{FILE}"
    assert resolve(f"hf:{REPO}/{FILE}", cache) is None  # main is another file


def test_concurrent_pulls_download_once(hub, cache):
    data = hub.add(blob(3 * CHUNK))
    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(pull(URI, cache, endpoint=hub.endpoint))) for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 2 and results[0] == results[1] and results[0].read_bytes() == data
    assert len(hub.gets()) == 1


@pytest.mark.parametrize(
    "uri, needle, fix",
    [
        (f"hf:{REPO}/missing.gguf", "'missing.gguf' not found in acme/tiny-GGUF at main", "/acme/tiny-GGUF/tree/main"),
        (f"hf:acme/nope/{FILE}", "repository acme/nope not found", "HF_TOKEN"),
        (f"hf:{REPO}@v9/{FILE}", "revision 'v9' not found", "@revision"),
    ],
)
def test_not_found_errors(hub, cache, uri, needle, fix):
    hub.add(blob(10))
    with pytest.raises(PullError) as e:
        pull(uri, cache, endpoint=hub.endpoint)
    assert needle in e.value.message and fix in e.value.fix
    assert list_cached(cache) == [] and not (cache / "hf").exists()


def test_plain_404_from_a_mirror(hub, cache):
    hub.add(blob(10))
    hub.plain_404 = True
    with pytest.raises(PullError, match="'missing.gguf' not found"):
        pull(f"hf:{REPO}/missing.gguf", cache, endpoint=hub.endpoint)


def test_unreachable_endpoint(cache):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: connection refused
    with pytest.raises(PullError) as e:
        pull(URI, cache, endpoint=f"http://127.0.0.1:{port}")
    assert f"cannot reach 127.0.0.1:{port}" in e.value.message
    assert "HF_ENDPOINT" in e.value.fix and "file:" in e.value.fix


def test_default_endpoint_comes_from_hf_endpoint(cache):
    with pytest.raises(PullError, match="cannot reach 127.0.0.1:9"):  # the fixture's HF_ENDPOINT
        pull(URI, cache)


def test_not_a_hub(hub, cache):
    hub.add(blob(10))
    hub.hub_headers = False
    with pytest.raises(PullError, match="did not answer like a Hugging Face hub") as e:
        pull(URI, cache, endpoint=hub.endpoint)
    assert "HF_ENDPOINT" in e.value.fix


def test_checksum_mismatch_deletes_the_download(hub, cache):
    hub.add(blob(4000))
    hub.etag = hashlib.sha256(b"something else").hexdigest()
    with pytest.raises(PullError, match="does not match its checksum"):
        pull(URI, cache, endpoint=hub.endpoint)
    assert list(cache.rglob("*.gguf")) == [] and list(cache.rglob("*.part")) == []


def test_offline_mode(hub, cache, monkeypatch):
    import huggingface_hub.constants as hfc

    hub.add(blob(10))
    monkeypatch.setattr(hfc, "HF_HUB_OFFLINE", True)
    with pytest.raises(PullError, match="HF_HUB_OFFLINE"):
        pull(URI, cache, endpoint=hub.endpoint)
    assert hub.requests == []


def test_file_uris(tmp_path, cache, hub):
    model = tmp_path / "own.gguf"
    model.write_bytes(b"GGUF")
    for uri in (f"file:{model}", str(model), parse(f"file:{model}")):
        assert resolve(uri, cache) == model
        assert pull(uri, cache, endpoint=hub.endpoint) == model
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve(f"file:{tmp_path}/gone.gguf", cache)
    with pytest.raises(PullError, match="does not exist"):
        pull(f"file:{tmp_path}/gone.gguf", cache)
    with pytest.raises(ModelURIError, match="not a cached model|does not delete"):
        clear(cache, f"file:{model}")
    assert model.exists() and hub.requests == [] and list_cached(cache) == []


def test_clear(hub, cache):
    other = f"hf:{REPO}/other.gguf"
    hub.add(blob(100), filename="other.gguf")
    hub.add(blob(100, seed=3), repo="acme/second")
    hub.add(blob(CHUNK + 10))
    pull(other, cache, endpoint=hub.endpoint)
    pull(f"hf:acme/second/{FILE}", cache, endpoint=hub.endpoint)
    with pytest.raises(Stop):  # leaves a partial download of URI
        pull(
            URI, cache, progress=lambda d, t: (_ for _ in ()).throw(Stop) if d >= CHUNK else None, endpoint=hub.endpoint
        )
    assert list(cache.rglob(".*.part"))
    assert clear(cache, other) == [other]
    assert clear(cache, other) == []
    assert [m.uri for m in list_cached(cache)] == [f"hf:acme/second/{FILE}"]
    removed = clear(cache, URI)  # only a partial: its path is reported
    assert len(removed) == 1 and removed[0].endswith(".part") and not list(cache.rglob(".*.part"))
    assert clear(cache) == [f"hf:acme/second/{FILE}"]
    assert list_cached(cache) == [] and not (cache / "hf").exists()


def test_resolve_needs_no_hub_import(cache, monkeypatch):
    """gnod resolves models at load time: that must not import huggingface_hub or touch the network."""
    import sys

    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # any import of it now fails
    assert resolve(URI, cache) is None
    assert list_cached(cache) == [] and clear(cache) == []
    assert isinstance(parse(URI), ModelRef) and pullmod.cached_path(URI, cache).name == FILE


def test_missing_huggingface_hub_is_a_pull_error(cache, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(PullError, match="pip install huggingface-hub"):
        pull(URI, cache)


def test_complete_partial_is_verified_without_a_get(hub, cache):
    """A pull stopped after the last byte but before the rename needs no download."""
    data = hub.add(blob(CHUNK + 5))

    def stop_at_end(done, total):
        if done == total:
            raise Stop

    with pytest.raises(Stop):
        pull(URI, cache, progress=stop_at_end, endpoint=hub.endpoint)
    hub.requests.clear()
    assert pull(URI, cache, endpoint=hub.endpoint).read_bytes() == data
    assert hub.gets() == []
