"""The three model roles gnod keeps warm, as small protocols.

Search code depends on these, never on llama.cpp: a backend that cannot load
(missing file, no llama_cpp) simply leaves a role empty and search degrades.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

import numpy as np

Role = Literal["embed", "rerank", "generate"]
ROLES: tuple[Role, ...] = ("embed", "rerank", "generate")


class ModelUnavailable(Exception):
    """A role's model cannot be used (not downloaded, failed to load); says how to fix it."""

    def __init__(self, role: str, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.role = role
        self.message = message
        self.fix = fix


class Embedder(Protocol):
    uri: str
    dim: int
    max_tokens: int  # longest input the model takes in one piece

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalized; texts already carry any title context."""

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32, L2-normalized, with the model family's query prompt applied."""

    def count_tokens(self, text: str) -> int: ...


class Reranker(Protocol):
    uri: str
    max_tokens: int

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """Relevance of each document to the query, in [0, 1] (higher is better)."""


class Generator(Protocol):
    uri: str

    def generate(self, messages: list[dict[str, str]], *, max_tokens: int = 512, temperature: float = 0.0,
                 on_token: Callable[[str], None] | None = None, stop: Callable[[], bool] | None = None) -> str:
        """Chat completion with the model's own template; streams pieces to on_token and
        ends early, with what it has, once stop() is true."""
