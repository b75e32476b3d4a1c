"""Every preset model's architecture loads and runs through gnod's model manager.

The presets' GGUFs are not downloaded here; their random-weight twins (testmodels/twins.py)
are, at test size: the architecture, tokenizer, quantization and file name (hence prompt
family and pooling) of the real file, with 2 layers and hidden size 256. gnod loads them
by URI as it loads the real ones, so a preset whose architecture this llama.cpp cannot
run, or that gnod drives wrongly (pooling, rerank head, chat template), fails here.
benchmarks/presets.py measures the full-size twins.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from gnod.config import ModelsConfig
from gnod.models import presets
from gnod.models.base import ROLES
from gnod.models.manager import Models
from testmodels import twins
from testmodels.build import twin_gguf

PRESET_MODELS = sorted({(role, p.spec(role).uri) for p in presets.PRESETS.values() for role in ROLES})
QUERY = "how do vaccines train the immune system"
DOCS = [
    "Vaccines expose the immune system to a harmless antigen so that memory cells form.",
    "The recipe needs two cups of flour, one egg and a pinch of salt.",
    "Ein Impfstoff trainiert das Immunsystem, ohne die Krankheit auszulösen.",
]


def _twin_uri(uri: str) -> str:
    return f"file:{twin_gguf(twins.for_uri(uri).file, mini=True)}"


def test_every_preset_model_has_a_twin_of_its_role_and_family():
    for role, uri in PRESET_MODELS:
        twin = twins.for_uri(uri)
        assert twin.role == role, uri
        # The twin's file name gives it the real model's prompts and pooling in gnod.
        assert presets.family(f"file:/cache/{twin.mini().file}-v1.gguf") == presets.family(uri), uri


# Parameter counts the model cards publish (tied embeddings counted once).
PUBLISHED_PARAMS = {
    "bge-m3-Q4_K_M": 568e6,
    "bge-reranker-v2-m3-Q4_K_M": 568e6,
    "multilingual-e5-small-q8_0": 118e6,
    "multilingual-e5-base-q8_0": 278e6,
    "Qwen3-Embedding-0.6B-Q8_0": 0.6e9,
    "qwen3-reranker-0.6b-q8_0": 0.6e9,
    "Qwen3-1.7B-Q4_K_M": 1.7e9,
    "SmolLM3-Q4_K_M": 3.08e9,
    "Qwen3-4B-Instruct-2507-Q4_K_M": 4.02e9,
}


def test_twins_have_the_published_parameter_counts():
    """Width, depth, heads, FFN and vocab size together give the model card's parameter count:
    a wrong hyperparameter in a twin would not (a 2-layer error alone moves it > 2%)."""
    assert set(PUBLISHED_PARAMS) == set(twins.TWINS)
    for name, twin in twins.TWINS.items():
        assert abs(twin.params / PUBLISHED_PARAMS[name] - 1) < 0.02, (name, twin.params)


@pytest.mark.parametrize(("role", "uri"), PRESET_MODELS, ids=[u.rsplit("/", 1)[-1] for _, u in PRESET_MODELS])
def test_preset_architecture_runs_in_gnod(role, uri, tmp_path):
    twin_uri = _twin_uri(uri)
    models = Models(ModelsConfig(**{role: twin_uri}, threads=1), str(tmp_path))

    async def go():
        if role == "embed":
            vecs = await models.run(
                "embed",
                lambda m: m.embed_documents(
                    [presets.document_prompt(presets.family(twin_uri), "Immunology", d) for d in DOCS]
                ),
            )
            query = await models.run("embed", lambda m: m.embed_query(QUERY))
            return vecs, query
        if role == "rerank":
            return await models.run("rerank", lambda m: m.score(QUERY, DOCS))
        import llama_cpp

        gen = await models.get("generate")
        text = await models.generate(presets.chat(presets.family(twin_uri), "Answer briefly.", QUERY), max_tokens=8)
        # Random weights may pick tokens that print nothing: count what llama.cpp decoded.
        return text, llama_cpp.llama_perf_context(gen._llm.ctx)

    try:
        out = asyncio.run(go())
        info = next(i for i in models.infos() if i.role == role)
    finally:
        models.close()
    assert info.state == "ready" and info.error is None
    if role == "embed":
        vecs, query = out
        assert vecs.shape == (len(DOCS), twins.for_uri(uri).mini().hidden)
        assert query.shape == (vecs.shape[1],)
        assert all(abs(float((v * v).sum()) - 1.0) < 1e-3 for v in [*vecs, query])  # normalized
        assert len({tuple(v.round(4)) for v in vecs}) == len(DOCS)  # each text its own vector
    elif role == "rerank":
        assert len(out) == len(DOCS)
        assert all(0.0 <= s <= 1.0 and math.isfinite(s) for s in out)
    else:
        text, perf = out
        assert isinstance(text, str)
        assert perf.n_p_eval > 10 and perf.n_eval >= 1  # the chat prompt read, tokens generated
