"""The three model roles gnod keeps warm, the error that says a role is unusable, and
what the generators share.

Search code depends on these, never on llama.cpp: a backend that cannot load
(missing file, no llama_cpp, a server down) leaves its role unavailable, with the fix,
and search degrades.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    import numpy as np

Role = Literal["embed", "rerank", "generate"]
ROLES: tuple[Role, ...] = ("embed", "rerank", "generate")


class Backend(Protocol):
    """What every model backend is: local (llama.cpp, on the model thread) or remote (an
    inference server: HTTP waits, run beside the model thread)."""

    remote: bool
    uri: str

    @property
    def latency_ms(self) -> float | None:
        """A remote backend's last round trip; None for a local one."""


class Embedder(Backend, Protocol):
    dim: int  # the length of its vectors

    def count_tokens(self, text: str) -> int: ...
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...
    def embed_query(self, text: str) -> np.ndarray: ...


class Reranker(Backend, Protocol):
    max_tokens: int  # the longest (query, document) pair it reads

    def score(self, query: str, documents: Sequence[str]) -> list[float]: ...


class TextGenerator(Backend, Protocol):
    @property
    def context(self) -> int | None:
        """Tokens the model holds at once, prompt and answer; None where a server keeps
        it (its own limit applies there)."""

    def count_tokens(self, text: str) -> int: ...
    def generate(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        on_token: Callable[[str], None] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> str: ...


Model = Embedder | Reranker | TextGenerator


class ModelUnavailable(Exception):
    """A role's model cannot be used (not downloaded, failed to load); says how to fix it."""

    def __init__(self, role: str, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.role = role
        self.message = message
        self.fix = fix

    def text(self) -> str:
        """The message with its fix, as every client and log line says it."""
        return with_fix(self.message, self.fix)


def with_fix(message: str, fix: str | None) -> str:
    """`message (fix: command)`: one spelling for a problem and the command that fixes it."""
    return f"{message} (fix: {fix})" if fix else message


def read_chat_stream(
    events: Generator[Any, None, None], on_token: Callable[[str], None] | None, stop: Callable[[], bool] | None
) -> str:
    """The text of a streamed chat completion (OpenAI-shaped chunks, as llama.cpp and
    the inference servers send them): each piece to `on_token` as it comes, `stop()`
    ends it early; the stream is closed either way (which stops the generation)."""
    parts: list[str] = []
    try:
        for event in events:
            choices = event.get("choices") or [{}]
            piece = (choices[0].get("delta") or {}).get("content") or ""
            if piece:
                parts.append(piece)
                if on_token is not None:
                    on_token(piece)
            if stop is not None and stop():
                break
    finally:
        events.close()
    return "".join(parts)
