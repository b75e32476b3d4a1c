"""Models on an OpenAI-compatible inference server (llama.cpp's server, vLLM, Ollama, TEI).

The same three roles as the local backends, over HTTP: embeddings through
`/embeddings`, answers through `/chat/completions` (streamed), reranking through the
`/rerank` shape llama.cpp's server and TEI implement. gnod loads nothing for them, so
a machine without the memory or a GPU for a model can still use it.

Every failure to reach the server (after retries with backoff) is a ModelUnavailable
with the fix, so a down server degrades search exactly like a missing model: lexical
search never depends on it, and the embedding backlog waits for it.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import time
from collections.abc import Callable, Generator, Sequence
from urllib.parse import urlsplit

import numpy as np

from gnod.models.base import ModelUnavailable, Role, read_chat_stream
from gnod.models.uri import ModelRef

TIMEOUT_S = 60.0  # one HTTP request, connect to last byte
RETRIES = 3  # further attempts after a connection error, a 5xx or a 429
BACKOFF_S = 0.5  # first wait between attempts; doubles each time
# After the retries fail, calls fail at once for this long: a query must not wait out
# the backoff again and again while the server is down (the embedder retries later).
DOWN_S = 10.0
EMBED_BATCH = 32  # texts per /embeddings request
RERANK_MAX_TOKENS = 512  # what a reranker server is assumed to read of one passage
EMBED_MAX_TOKENS = 512  # a chunk longer than this is the server's to truncate
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class RemoteError(Exception):
    """A request that cannot succeed as sent (4xx other than 429): retrying will not help."""


class Client:
    """One server's API base: JSON requests with a deadline, retries and the API key."""

    def __init__(self, role: Role, ref: ModelRef, api_key_env: str | None, timeout: float = TIMEOUT_S) -> None:
        assert ref.url is not None
        self.role = role
        self.ref = ref
        self.model = ref.filename
        parts = urlsplit(ref.url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._base = parts.path.rstrip("/")
        self._timeout = timeout
        self._api_key_env = api_key_env
        self.latency_ms: float | None = None  # the last successful request's round trip
        self._down_until = 0.0
        self._down_why = ""

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self._api_key_env) if self._api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _connection(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=self._timeout)

    def _unavailable(self, why: str) -> ModelUnavailable:
        return ModelUnavailable(
            self.role,
            f"{self.role} server {self.ref.url} ({self.model}) is unavailable: {why}",
            f"start the server or fix the address in config.toml [models] {self.role}",
        )

    def _open(self, path: str, body: dict) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """POST with retries; returns the open connection and a 200 response to read."""
        if time.monotonic() < self._down_until:
            raise self._unavailable(f"{self._down_why} (tried again in a few seconds)")
        data = json.dumps(body).encode()
        delay = BACKOFF_S
        for attempt in range(RETRIES + 1):
            conn = self._connection()
            try:
                conn.request("POST", self._base + path, body=data, headers=self._headers())
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                why = f"{type(e).__name__}: {e}"
            else:
                if resp.status == 200:
                    return conn, resp
                detail = resp.read(2000).decode("utf-8", "replace").strip()
                conn.close()
                why = f"HTTP {resp.status} {resp.reason}: {detail}"
                if resp.status in (401, 403):
                    raise ModelUnavailable(
                        self.role,
                        f"{self.role} server {self.ref.url} refused the request: {why}",
                        "set the API key in the environment variable [models] api_key_env names",
                    )
                if resp.status not in _RETRY_STATUS:
                    raise RemoteError(f"{self.ref.url}{path}: {why}")
            if attempt < RETRIES:
                time.sleep(delay)
                delay *= 2
        self._down_until, self._down_why = time.monotonic() + DOWN_S, why
        raise self._unavailable(why)

    def post(self, path: str, body: dict) -> dict:
        t0 = time.monotonic()
        conn, resp = self._open(path, body)
        try:
            payload = json.loads(resp.read())
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise self._unavailable(f"bad reply: {type(e).__name__}: {e}") from None
        finally:
            conn.close()
        self.latency_ms = round((time.monotonic() - t0) * 1000, 1)
        return payload

    def stream(self, path: str, body: dict) -> Generator[dict, None, None]:
        """POST a streaming request; yields each server-sent event's JSON until [DONE].
        Closing the generator closes the connection (the server stops generating)."""
        t0 = time.monotonic()
        conn, resp = self._open(path, body)
        self.latency_ms = round((time.monotonic() - t0) * 1000, 1)
        try:
            for raw in resp:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                try:
                    yield json.loads(data)
                except ValueError:
                    continue
        except (OSError, http.client.HTTPException) as e:
            raise self._unavailable(f"the stream broke: {type(e).__name__}: {e}") from None
        finally:
            conn.close()


def _normalized(rows: list[list[float]]) -> np.ndarray:
    vecs = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.maximum(norms, 1e-12)


class RemoteEmbedder:
    remote = True

    def __init__(self, uri: str, ref: ModelRef, api_key_env: str | None, query_prompt: Callable[[str], str]) -> None:
        self.uri = uri
        self.client = Client("embed", ref, api_key_env)
        self._query_prompt = query_prompt
        self.max_tokens = EMBED_MAX_TOKENS
        # The server knows the dimension; one probe both learns it and checks the server.
        self.dim = int(self._embed(["dimension probe"]).shape[1])

    @property
    def latency_ms(self) -> float | None:
        return self.client.latency_ms

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)  # no tokenizer here: the usual ~4 characters per token

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            batch = list(texts[start : start + EMBED_BATCH])
            try:
                reply = self.client.post("/embeddings", {"model": self.client.model, "input": batch})
                data = sorted(reply["data"], key=lambda d: d.get("index", 0))
                got = [d["embedding"] for d in data]
            except RemoteError as e:
                raise ModelUnavailable(
                    "embed",
                    f"embedding server rejected the request: {e}",
                    "check that the model named after '#' is an embedding model",
                ) from None
            except (KeyError, TypeError) as e:
                raise ModelUnavailable(
                    "embed",
                    f"the embedding server's reply has no {e}",
                    "check that the server speaks the OpenAI embeddings API",
                ) from None
            if len(got) != len(batch) or any(not isinstance(v, list) or not v or isinstance(v[0], list) for v in got):
                raise ModelUnavailable(
                    "embed",
                    "the embedding server returned no pooled vector per input",
                    "start the server with pooling on (llama.cpp: --pooling mean)",
                )
            rows.extend(got)
        return _normalized(rows)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([self._query_prompt(text)])[0]


def _unit(score: float) -> float:
    return 1.0 / (1.0 + math.exp(-score))


class RemoteReranker:
    remote = True

    def __init__(self, uri: str, ref: ModelRef, api_key_env: str | None) -> None:
        self.uri = uri
        self.client = Client("rerank", ref, api_key_env)
        self.max_tokens = RERANK_MAX_TOKENS

    @property
    def latency_ms(self) -> float | None:
        return self.client.latency_ms

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """Relevance in [0, 1]. Servers differ: TEI returns probabilities, llama.cpp raw
        logits; a reply with any score outside [0, 1] is read as logits (sigmoid)."""
        if not documents:
            return []
        try:
            reply = self.client.post(
                "/rerank",
                {"model": self.client.model, "query": query, "documents": list(documents), "top_n": len(documents)},
            )
            results = reply["results"] if isinstance(reply, dict) else reply
            scores = [0.0] * len(documents)
            for r in results:
                scores[int(r["index"])] = float(r.get("relevance_score", r.get("score")))
        except RemoteError as e:
            raise ModelUnavailable(
                "rerank",
                f"rerank server rejected the request: {e}",
                "check that the server implements /v1/rerank for this model",
            ) from None
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise ModelUnavailable(
                "rerank",
                f"the rerank server's reply is not the /v1/rerank shape ({e})",
                "use llama.cpp's server (--reranking) or TEI",
            ) from None
        if any(s < 0.0 or s > 1.0 for s in scores):
            scores = [_unit(s) for s in scores]
        return scores


class RemoteGenerator:
    remote = True
    context = None  # the server's own: it refuses what does not fit

    def __init__(self, uri: str, ref: ModelRef, api_key_env: str | None) -> None:
        self.uri = uri
        self.client = Client("generate", ref, api_key_env)

    @property
    def latency_ms(self) -> float | None:
        return self.client.latency_ms

    def count_tokens(self, text: str) -> int:
        raise NotImplementedError("a server's context is its own: nothing is fitted to it")

    def generate(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        on_token: Callable[[str], None] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> str:
        body = {
            "model": self.client.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": True,
        }
        try:
            return read_chat_stream(self.client.stream("/chat/completions", body), on_token, stop)
        except RemoteError as e:
            raise ModelUnavailable(
                "generate",
                f"generation server rejected the request: {e}",
                "check that the model named after '#' is a chat model",
            ) from None


def construct(
    role: Role, uri: str, ref: ModelRef, api_key_env: str | None, query_prompt: Callable[[str], str]
) -> RemoteEmbedder | RemoteReranker | RemoteGenerator:
    if role == "embed":
        return RemoteEmbedder(uri, ref, api_key_env, query_prompt)
    if role == "rerank":
        return RemoteReranker(uri, ref, api_key_env)
    return RemoteGenerator(uri, ref, api_key_env)
