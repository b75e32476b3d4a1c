"""How big a context to allocate for a GGUF: its trained length, read from the file;
and an embedding-mode model (embedder, reranker) opened with it.

Read with a vocabulary-only model load and no llama.cpp context: a context made from
such a load (whose trained length reads as 0) logs "possible training context
overflow" into gnod's log at every model load.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any

from gnod.models.threads import Threads


def context_size(path: str, limit: int) -> int:
    """The model's trained context length, at most `limit` (`limit` when the file does not say)."""
    import llama_cpp  # daemon only

    # The loader's notes ("missing newline token"…), silenced as Llama(verbose=False) does:
    # llama-cpp-python passes llama.cpp's warnings on as errors, so only CRITICAL hides them.
    # A file that fails to load still says so, below.
    log = logging.getLogger("llama-cpp-python")
    level = log.level
    log.setLevel(logging.CRITICAL)
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    try:
        model = llama_cpp.llama_model_load_from_file(path.encode(), params)
    finally:
        log.setLevel(level)
    if model is None:
        raise ValueError(f"failed to load model from file: {path}")
    try:
        arch = _meta(llama_cpp, model, "general.architecture")
        trained = _meta(llama_cpp, model, f"{arch}.context_length")
    finally:
        llama_cpp.llama_model_free(model)
    return max(64, min(int(trained) if trained.isdigit() else limit, limit))


def _meta(llama_cpp, model, key: str) -> str:
    buf = ctypes.create_string_buffer(128)
    n = llama_cpp.llama_model_meta_val_str(model, key.encode(), buf, len(buf))
    return buf.value.decode("utf-8", errors="replace") if n >= 0 else ""


def embedding_model(
    path: str, max_context: int, threads: Threads, pooling_type: int, gpu_layers: int, main_gpu: int
) -> tuple[Any, int]:
    """(llama_cpp.Llama in embedding mode, its context length). Non-causal models need a
    whole sequence in one micro-batch: context, batch and micro-batch are all equal."""
    from llama_cpp import Llama  # daemon only

    ctx = context_size(path, max_context)
    llm = Llama(
        model_path=path,
        embedding=True,
        n_ctx=ctx,
        n_batch=ctx,
        n_ubatch=ctx,
        n_threads=threads.count,
        n_threads_batch=threads.count,
        pooling_type=pooling_type,
        n_gpu_layers=gpu_layers,
        main_gpu=main_gpu,
        verbose=False,
    )
    return llm, ctx
