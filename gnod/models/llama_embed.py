"""Embeddings with llama.cpp: batched, normalized, and never silently truncated.

A text longer than the model's context is embedded as overlapping token windows
whose normalized vectors are averaged (and renormalized), so the end of a long
chunk still counts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from gnod.models.context import embedding_model
from gnod.models.threads import Threads

# Longest context we allocate for an embedding model (tokens); a chunk is ~800.
MAX_CONTEXT = 2048
WINDOW_OVERLAP = 0.1
# llama.cpp's pooling types by the names presets use; -1 = what the GGUF says.
POOLING = {"mean": 1, "cls": 2, "last": 3}


class LlamaEmbedder:
    remote = False  # llama.cpp in gnod's process, on the model thread
    latency_ms = None

    def __init__(
        self,
        uri: str,
        path: str,
        threads: Threads,
        query_prompt: Callable[[str], str],
        pooling: str | None = None,
        max_context: int = MAX_CONTEXT,
        gpu_layers: int = 0,
        main_gpu: int = 0,
    ) -> None:
        self._llm, ctx = embedding_model(
            path, max_context, threads, POOLING.get(pooling or "", -1), gpu_layers, main_gpu
        )
        self.uri = uri
        self._threads = threads
        threads.restart()
        self.dim = self._llm.n_embd()
        # Room for the special tokens the tokenizer adds around each piece.
        self.max_tokens = ctx - 4
        self._query_prompt = query_prompt

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=True))

    def _pieces(self, text: str) -> tuple[list[str], int]:
        """The text itself, or overlapping windows of it when it exceeds the context; its tokens."""
        tokens = self._llm.tokenize(text.encode("utf-8"), add_bos=False)
        if len(tokens) <= self.max_tokens:
            return [text], len(tokens)
        step = max(1, int(self.max_tokens * (1 - WINDOW_OVERLAP)))
        pieces = []
        for start in range(0, len(tokens), step):
            window = tokens[start : start + self.max_tokens]
            pieces.append(self._llm.detokenize(window).decode("utf-8", errors="ignore"))
            if start + self.max_tokens >= len(tokens):
                break
        return pieces, len(tokens)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        owners: list[int] = []
        flat: list[str] = []
        tokens = 0
        for i, text in enumerate(texts):
            # Stripped: a trailing space or newline becomes a lone "▁" token for SentencePiece
            # models (e5), which their reference tokenizers never produce.
            pieces, n = self._pieces(text.strip())
            tokens += n
            for piece in pieces:
                owners.append(i)
                flat.append(piece)
        if not flat:
            return np.zeros((0, self.dim), dtype=np.float32)
        threads = self._threads.apply(self._llm, tokens)
        t0 = time.perf_counter()
        # One text per decode: llama.cpp attends over the whole batch and masks the other
        # texts out, so packing costs more than it saves (benchmarks/presets.py measures it).
        vecs = np.asarray(
            [self._llm.embed([piece], normalize=True, truncate=False)[0] for piece in flat], dtype=np.float32
        )
        self._threads.record(threads, tokens, time.perf_counter() - t0)
        if len(flat) == len(texts):
            return vecs
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        np.add.at(out, np.asarray(owners), vecs)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([self._query_prompt(text)])[0]

    def close(self) -> None:
        self._llm.close()
