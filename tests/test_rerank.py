"""LlamaReranker against a numpy forward pass of the same tiny BERT cross-encoder.

The reference tokenizes with its own WordPiece and runs embeddings, attention, GELU FFN,
the pooler (dense + tanh on [CLS]), the classifier and a sigmoid. Matching llama.cpp to
1e-3 on several pairs shows both that the pair input is `[CLS] q [SEP] d [SEP]` and that
the pooler in the GGUF is applied; the variants without the pooler, or with HF's
segment-B token types, land far off, so the match is not a coincidence.
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import pytest

from testmodels import reranker as tiny

TOL = 1e-3
PAIRS = [
    ("what is the capital of france", "Paris is the capital and largest city of France."),
    ("what is the capital of france", "Photosynthesis turns sunlight into chemical energy."),
    ("how do i bake sourdough bread", "Mix flour, water and a lively starter; let it rise overnight."),
    ("unaffable reviewers", "The committee's response was, frankly, unaffable!"),
    ("python asyncio cancel a task", ""),
]


@pytest.fixture(scope="module")
def reranker():
    pytest.importorskip("llama_cpp")
    from gnod.models.rerank import LlamaReranker
    from gnod.models.threads import Threads
    from testmodels.build import reranker_gguf

    r = LlamaReranker("file:tiny-bert-reranker.gguf", str(reranker_gguf()), threads=Threads(fixed=1))
    yield r
    r.close()


# --- the reference -----------------------------------------------------------------------


class WordPiece:
    """BERT's uncased tokenizer for plain text: lowercase, strip accents, split on spaces and
    punctuation, then greedy longest-match pieces with `##` continuations."""

    def __init__(self) -> None:
        self.ids = {tok: i for i, tok in enumerate(tiny.vocab())}

    def __call__(self, text: str) -> list[int]:
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        out = []
        for word in re.findall(r"\w+|[^\w\s]", text):
            start = 0
            while start < len(word):
                for end in range(len(word), start, -1):
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    if piece in self.ids:
                        out.append(self.ids[piece])
                        start = end
                        break
                else:
                    out.append(self.ids["[UNK]"])
                    break
        return out


def _layer_norm(x: np.ndarray, w: dict, name: str) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + tiny.LN_EPS) * w[f"{name}.weight"] + w[f"{name}.bias"]


def _linear(x: np.ndarray, w: dict, name: str) -> np.ndarray:
    return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]


def _gelu(x: np.ndarray) -> np.ndarray:
    # The tanh form; HF's BERT uses erf. On this model either matches llama.cpp to ~1e-4.
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def reference(tokens: list[int], types: list[int] | None = None, pooler: bool = True) -> float:
    """P(relevant) of one token sequence, computed in float64 from the GGUF's weights."""
    w = {k: v.astype(np.float64) for k, v in WEIGHTS.items()}
    n, d = len(tokens), tiny.HIDDEN // tiny.HEADS
    types = types or [0] * n
    x = w["token_embd.weight"][tokens] + w["position_embd.weight"][:n] + w["token_types.weight"][types]
    x = _layer_norm(x, w, "token_embd_norm")
    for i in range(tiny.LAYERS):
        b = f"blk.{i}"
        q, k, v = (_linear(x, w, f"{b}.attn_{p}").reshape(n, tiny.HEADS, d).transpose(1, 0, 2) for p in "qkv")
        att = q @ k.transpose(0, 2, 1) / np.sqrt(d)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(1, 0, 2).reshape(n, tiny.HIDDEN)
        x = _layer_norm(x + _linear(ctx, w, f"{b}.attn_output"), w, f"{b}.attn_output_norm")
        ffn = _linear(_gelu(_linear(x, w, f"{b}.ffn_up")), w, f"{b}.ffn_down")
        x = _layer_norm(x + ffn, w, f"{b}.layer_output_norm")
    cls = x[0]
    if pooler:
        cls = np.tanh(_linear(cls, w, "cls"))
    logit = float(_linear(cls, w, "cls.output")[0])
    return 1.0 / (1.0 + np.exp(-logit))


WEIGHTS = tiny.weights()
TOKENIZE = WordPiece()
CLS, SEP = TOKENIZE.ids["[CLS]"], TOKENIZE.ids["[SEP]"]


def pair(query: str, document: str, room: int | None = None) -> list[int]:
    return [CLS] + TOKENIZE(query) + [SEP] + TOKENIZE(document)[:room] + [SEP]


# --- the tests ---------------------------------------------------------------------------


def test_pair_input_is_cls_query_sep_document_sep(reranker):
    for query, document in PAIRS:
        assert reranker.pair_tokens(query, [document]) == [pair(query, document)]


def test_scores_match_the_numpy_reference(reranker):
    scores = reranker.score(PAIRS[0][0], [doc for _, doc in PAIRS])
    scores += [reranker.score(q, [doc])[0] for q, doc in PAIRS[2:]]
    expected = [reference(pair(PAIRS[0][0], doc)) for _, doc in PAIRS]
    expected += [reference(pair(q, doc)) for q, doc in PAIRS[2:]]
    diff = np.abs(np.asarray(scores) - np.asarray(expected))
    assert diff.max() < TOL, (scores, expected)
    assert np.ptp(expected) > 20 * TOL  # the pairs really score differently


def test_reference_is_sensitive_to_pooler_and_segments():
    """What a converter that drops the pooler, or an engine using segment ids, would give."""
    tokens = [pair(q, doc) for q, doc in PAIRS]
    full = np.asarray([reference(t) for t in tokens])
    no_pooler = np.asarray([reference(t, pooler=False) for t in tokens])
    segments = [[0] * (t.index(SEP) + 1) + [1] * (len(t) - t.index(SEP) - 1) for t in tokens]
    with_types = np.asarray([reference(t, types) for t, types in zip(tokens, segments, strict=True)])
    assert np.abs(full - no_pooler).max() > 20 * TOL
    assert np.abs(full - with_types).max() > 20 * TOL


def test_one_score_per_document_in_input_order(reranker):
    query = "capital of france"
    docs = ["Paris is in France.", "Bread needs flour.", "", "France's capital is Paris, on the Seine."] * 6
    scores = reranker.score(query, docs)  # 24 pairs: more than one decode batch
    assert len(scores) == len(docs)
    assert all(0.0 <= s <= 1.0 for s in scores)
    alone = [reranker.score(query, [doc])[0] for doc in docs[:4]]
    assert np.allclose(scores, alone * 6, atol=1e-5)
    assert np.allclose(reranker.score(query, docs[:4][::-1]), alone[::-1], atol=1e-5)


def test_empty_list(reranker):
    assert reranker.score("anything", []) == []


def test_long_document_is_truncated_and_the_query_kept(reranker):
    query = "which river flows through paris"
    document = "The Seine flows through Paris and on to the English Channel. " * 40
    assert len(pair(query, document)) > reranker.max_tokens
    [tokens] = reranker.pair_tokens(query, [document])
    room = reranker.max_tokens - len(TOKENIZE(query)) - 3
    assert tokens == pair(query, document, room)
    assert len(tokens) == reranker.max_tokens
    [score] = reranker.score(query, [document])
    assert abs(score - reference(tokens)) < TOL


def test_query_that_fills_the_context_is_refused(reranker):
    with pytest.raises(ValueError, match="query is too long"):
        reranker.score("paris " * reranker.max_tokens, ["a document"])


def test_deterministic(reranker):
    docs = [doc for _, doc in PAIRS]
    first = reranker.score("capital of france", docs)
    assert reranker.score("capital of france", docs) == first
    assert reranker.score("capital of france", docs) == first
