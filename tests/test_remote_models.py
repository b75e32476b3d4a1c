"""Models on an inference server: llama-cpp-python's own OpenAI-compatible server
(`llama_cpp.server`) on loopback with the real test models, and gnod pointed at it."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest

from conftest import cli_json, start_gnod, wait_until
from gnod.models import presets, uri
from gnod.models.base import ModelUnavailable

pytest.importorskip("llama_cpp.server", reason="llama-cpp-python's [server] extra is not installed")

TOPICS = {
    "pets/cats.md": "# Cats\n\nCats sleep most of the day and purr when they are content.\n",
    "cooking/bread.md": "# Bread\n\nKnead the dough, let it rise twice, then bake it until golden.\n",
    "space/mars.md": "# Mars\n\nThe red planet has the tallest volcano in the solar system.\n",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """`python -m llama_cpp.server` with the MiniLM embedder and the SmolLM2 chat model."""

    def __init__(self, port: int | None = None) -> None:
        from testmodels.build import minilm_gguf, smollm2_gguf

        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.config = {
            "host": "127.0.0.1",
            "port": self.port,
            "models": [
                {
                    "model": str(minilm_gguf()),
                    "model_alias": "minilm",
                    "embedding": True,
                    "n_threads": 1,
                    "verbose": False,
                },
                {"model": str(smollm2_gguf()), "model_alias": "smollm2", "n_threads": 1, "verbose": False},
            ],
        }
        self.proc: subprocess.Popen | None = None

    def start(self, config_dir: str) -> LlamaServer:
        path = os.path.join(config_dir, f"llama-server-{self.port}.json")
        with open(path, "w") as f:
            json.dump(self.config, f)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--config_file", path],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def up() -> bool:
            try:
                with urllib.request.urlopen(self.url + "/models", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        assert wait_until(up, 60, 0.1), "llama_cpp.server did not start"
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = LlamaServer().start(str(tmp_path_factory.mktemp("llama-server")))
    try:
        yield s
    finally:
        s.stop()


def _configure(env: dict, **roles: str) -> None:
    cfg = os.path.join(env["GNO_HOME"], "config", "config.toml")
    os.makedirs(os.path.dirname(cfg), exist_ok=True)
    lines = ["[models]", "threads = 1", *(f'{k} = "{v}"' for k, v in roles.items())]
    with open(cfg, "w") as f:
        f.write("\n".join(lines) + "\n")


# --- the backends against the real server ---------------------------------------------------


def test_remote_uris_parse_and_say_what_is_wrong():
    ref = uri.parse("openai+http://127.0.0.1:8080/v1/#Qwen3-Embedding-0.6B")
    assert (ref.scheme, ref.url, ref.filename, ref.remote) == (
        "openai",
        "http://127.0.0.1:8080/v1",
        "Qwen3-Embedding-0.6B",
        True,
    )
    assert uri.parse(ref.uri) == ref
    assert presets.family(ref.uri) == "qwen3-embedding"
    for bad, says in [
        ("openai+http://h/v1", "after '#'"),
        ("http://h/v1#m", r"openai\+http://h/v1#"),
        ("openai+ftp://h#m", "http://"),
        ("openai+http://u:p@h/v1#m", "api_key_env"),
    ]:
        with pytest.raises(uri.ModelURIError, match=says):
            uri.parse(bad)


def test_remote_embeddings_equal_the_local_backend(server):
    from gnod.models.llama_embed import LlamaEmbedder
    from gnod.models.remote import RemoteEmbedder
    from gnod.models.threads import Threads
    from testmodels.build import minilm_gguf

    texts = [t for t in TOPICS.values()] + ["a short query about felines"]
    remote = RemoteEmbedder("r", uri.parse(f"openai+{server.url}#minilm"), None, lambda t: t)
    local = LlamaEmbedder("l", str(minilm_gguf()), Threads(fixed=1), query_prompt=lambda t: t)
    try:
        assert remote.dim == local.dim == 384
        a, b = remote.embed_documents(texts), local.embed_documents(texts)
        cos = np.sum(a * b, axis=1)
        assert cos.min() >= 0.999, cos
        assert float(remote.embed_query("cats") @ local.embed_query("cats")) >= 0.999
        assert remote.latency_ms is not None and remote.latency_ms > 0
    finally:
        local.close()


def test_remote_generation_streams_and_stops_early(server):
    from gnod.models.remote import RemoteGenerator

    gen = RemoteGenerator("g", uri.parse(f"openai+{server.url}#smollm2"), None)
    pieces: list[str] = []
    text = gen.generate(
        [{"role": "user", "content": "Count from one to twenty."}], max_tokens=40, on_token=pieces.append
    )
    assert text and "".join(pieces) == text and len(pieces) > 3
    short: list[str] = []
    gen.generate(
        [{"role": "user", "content": "Count from one to twenty."}],
        max_tokens=40,
        on_token=short.append,
        stop=lambda: len(short) >= 3,
    )
    assert len(short) == 3


def test_a_down_server_is_model_unavailable_with_the_fix():
    from gnod.models import remote

    port = _free_port()  # nothing listens there
    client_ref = uri.parse(f"openai+http://127.0.0.1:{port}/v1#m")
    t0 = time.monotonic()
    with pytest.raises(ModelUnavailable) as e:
        remote.RemoteEmbedder("u", client_ref, None, lambda t: t)
    assert "unavailable" in e.value.message and "start the server" in e.value.fix
    assert time.monotonic() - t0 >= remote.BACKOFF_S  # it retried with backoff first


# --- rerank: the documented /v1/rerank shape, served in the test --------------------------------


class _RerankHandler(http.server.BaseHTTPRequestHandler):
    probabilities = False
    seen: list[dict] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if self.path != "/v1/rerank":
            self.send_error(404)
            return
        if self.headers.get("Authorization") != "Bearer s3cret":
            self.send_error(401, "bad key")
            return
        words = set(body["query"].lower().split())
        raw = [sum(w in doc.lower() for w in words) * 2.0 - 1.0 for doc in body["documents"]]
        scores = [1 / (1 + np.exp(-r)) for r in raw] if self.probabilities else raw
        results = sorted(
            ({"index": i, "relevance_score": float(s)} for i, s in enumerate(scores)),
            key=lambda r: -r["relevance_score"],
        )
        data = json.dumps({"model": body["model"], "results": results}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def rerank_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RerankHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    _RerankHandler.seen = []
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        srv.shutdown()


@pytest.mark.parametrize("probabilities", [False, True])
def test_rerank_over_http_gives_unit_scores_in_the_servers_order(rerank_server, monkeypatch, probabilities):
    from gnod.models.remote import RemoteReranker

    monkeypatch.setattr(_RerankHandler, "probabilities", probabilities)
    monkeypatch.setenv("GNO_TEST_RERANK_KEY", "s3cret")
    rr = RemoteReranker("r", uri.parse(f"openai+{rerank_server}#bge-reranker"), "GNO_TEST_RERANK_KEY")
    docs = ["nothing here", "the cat sat", "cat and dog"]
    scores = rr.score("cat dog", docs)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores[2] > scores[1] > scores[0]
    assert abs(scores[2] - 1 / (1 + np.exp(-3.0))) < 1e-6  # logits and probabilities read alike
    sent = _RerankHandler.seen[-1]
    assert sent["auth"] == "Bearer s3cret" and sent["body"]["model"] == "bge-reranker"


def test_rerank_without_the_key_says_where_the_key_goes(rerank_server, monkeypatch):
    from gnod.models.remote import RemoteReranker

    monkeypatch.delenv("GNO_TEST_RERANK_KEY", raising=False)
    rr = RemoteReranker("r", uri.parse(f"openai+{rerank_server}#m"), "GNO_TEST_RERANK_KEY")
    with pytest.raises(ModelUnavailable, match="refused") as e:
        rr.score("q", ["d"])
    assert "api_key_env" in e.value.fix


# --- gnod with remote models ------------------------------------------------------------------


def test_gnod_uses_remote_models_end_to_end(server, env, tmp_path, run_cli):
    _configure(env, embed=f"openai+{server.url}#minilm", generate=f"openai+{server.url}#smollm2")
    root = tmp_path / "notes"
    for rel, text in TOPICS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "notes", "path": str(root)})
        assert d.result("embed", {}, timeout=120)["pending"] == 0
        hits = d.result("vsearch", {"query": "feline pets napping", "limit": 1})["hits"]
        assert [h["path"] for h in hits] == ["pets/cats.md"]
        res = cli_json("query", "which planet has the tallest volcano", "--no-rerank", "--json", env=env)
        assert res["hits"][0]["path"] == "space/mars.md"
        models = {m["role"]: m for m in d.result("status")["models"]}
        assert models["embed"]["state"] == "ready" and models["embed"]["path"] == server.url
        assert models["embed"]["latency_ms"] > 0
        listed = {m["role"]: m for m in d.result("models.list")["models"]}
        assert listed["embed"]["cached"] is True  # nothing to download
    finally:
        d.stop()


def test_killing_the_server_mid_embedding_keeps_the_backlog(env, tmp_path):
    srv = LlamaServer().start(str(tmp_path))
    _configure(env, embed=f"openai+{srv.url}#minilm")
    root = tmp_path / "many"
    root.mkdir()
    for i in range(160):
        (root / f"n{i:03d}.md").write_text(f"# Note {i}\n\nItem {i}: " + "a sentence about things. " * 6 + "\n")
    (root / "cats.md").write_text(TOPICS["pets/cats.md"])
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "many", "path": str(root)})
        assert wait_until(lambda: d.result("status")["vectors"]["embedded"] >= 16, 60, 0.05)
        srv.stop()
        time.sleep(1)
        st = d.result("status")
        done = st["vectors"]["embedded"]
        if done < st["vectors"]["chunks"]:  # the kill landed mid-backlog (nearly always)
            assert wait_until(
                lambda: any(m["role"] == "embed" and m["state"] == "error" for m in d.result("status")["models"]), 30
            )
            embed = next(m for m in d.result("status")["models"] if m["role"] == "embed")
            assert "unavailable" in embed["error"] and embed["fix"]
        # Lexical search never needs the server.
        assert [h["path"] for h in d.result("search", {"query": "purr content"})["hits"]] == ["cats.md"]
        srv = LlamaServer(srv.port).start(str(tmp_path))
        # The backlog done, and its vectors served (the cycle that embedded the last ones
        # ends a moment after `pending` reads 0).
        assert wait_until(lambda: (v := d.result("status")["vectors"])["pending"] == 0 and v["available"], 120, 0.2)
        st = d.result("status")["vectors"]
        assert st["embedded"] == st["chunks"] >= done  # nothing embedded before the kill was lost
        assert d.result("vsearch", {"query": "felines purring", "limit": 1})["hits"][0]["path"] == "cats.md"
    finally:
        d.stop()
        srv.stop()
