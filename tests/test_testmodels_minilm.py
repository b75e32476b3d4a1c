"""The all-MiniLM-L6-v2 GGUF built by testmodels/ is faithful to the original model.

Faithful means llama.cpp, through gnod's own embedding backend, reproduces the
sentence-transformers vectors in tests/fixtures/minilm_reference.json (made by
testmodels/make_reference.py with PyTorch): a tokenizer or weight-layout slip in
the converter would show up here as a cosine far below 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from testmodels import build

pytestmark = pytest.mark.timeout(240)

REFERENCE = Path(__file__).parent / "fixtures" / "minilm_reference.json"
MIN_COSINE = 0.999


@pytest.fixture(scope="module")
def gguf_path() -> Path:
    return build.minilm_gguf()


def test_embeddings_match_sentence_transformers(gguf_path: Path) -> None:
    from gnod.models.llama_embed import LlamaEmbedder
    from gnod.models.threads import Threads

    ref = json.loads(REFERENCE.read_text(encoding="utf-8"))
    expected = np.asarray(ref["vectors"], dtype=np.float64)
    emb = LlamaEmbedder(
        "test:minilm", str(gguf_path), threads=Threads(fixed=1), query_prompt=lambda t: t, pooling="mean"
    )
    try:
        got = emb.embed_documents(ref["texts"]).astype(np.float64)
    finally:
        emb.close()
    assert got.shape == expected.shape
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)  # undo the fixture's rounding
    cosines = np.sum(got * expected, axis=1)
    worst = int(np.argmin(cosines))
    print(f"min cosine {cosines[worst]:.6f} on {ref['texts'][worst]!r}")
    assert cosines.min() >= MIN_COSINE, dict(zip(ref["texts"], cosines.round(6).tolist()))


def test_metadata(gguf_path: Path) -> None:
    import gguf

    reader = gguf.GGUFReader(gguf_path)

    def value(key: str):
        return reader.fields[key].contents()

    assert value(gguf.Keys.General.ARCHITECTURE) == "bert"
    assert value(gguf.Keys.LLM.EMBEDDING_LENGTH.format(arch="bert")) == 384
    assert value(gguf.Keys.LLM.POOLING_TYPE.format(arch="bert")) == gguf.PoolingType.MEAN
    assert value(gguf.Keys.Attention.CAUSAL.format(arch="bert")) is False
    assert value(gguf.Keys.Tokenizer.MODEL) == "bert"
    assert all(t.tensor_type == gguf.GGMLQuantizationType.F32 for t in reader.tensors)


def test_second_call_uses_the_cache(gguf_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import testmodels.minilm

    def no_rebuild(dest: Path) -> None:
        raise AssertionError("minilm_gguf() rebuilt a cached model")

    before = gguf_path.stat().st_mtime_ns
    monkeypatch.setattr(testmodels.minilm, "build", no_rebuild)
    assert build.minilm_gguf() == gguf_path
    assert gguf_path.stat().st_mtime_ns == before
