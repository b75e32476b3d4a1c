"""The hybrid pipeline (gnod.search.hybrid) without a daemon: a real store, lexical index,
vector index and LLM cache, with models that stand in for the GGUF ones (fake ports):
which stages run or are skipped and why, what the cache spares, how a missing or
failing model degrades, and what each list contributes."""

from __future__ import annotations

import asyncio
import hashlib
import re
import time

import numpy as np
import pytest

from conftest import lexical_index, migrated_db, write_tree
from gnod.config import CollectionConfig
from gnod.ingest.pipeline import index_collection
from gnod.models.base import ModelUnavailable
from gnod.search.constants import PIPELINE
from gnod.search.grammar import QuerySyntaxError
from gnod.search.hybrid import Given, Hybrid, Outcome, Request, VectorSource
from gnod.search.vector_index import VectorIndex
from gnod.store.documents import chunks_of, language_counts
from gnod.store.llm_cache import LlmCache
from gnod.text.analyzer import AnalyzerSet

DOCS = {
    **{
        f"deploy/{name}.md": f"# {name.title()}\n\nHow we deploy the {name} service: build, test, deploy, watch.\n"
        for name in ("billing", "search", "mail", "calendar", "auth", "storage", "gateway")
    },
    "deploy/checklist.md": "# Release checklist\n\nBefore you deploy: tag, changelog, smoke test.\n",
    "garage.md": "# Garage\n\nThe car needs new tyres and an oil change before winter.\n",
    "quokka.md": "# Quokka\n\nA small marsupial seen on Rottnest Island.\n",
}
# The fake embedder's notion of meaning: words of one concept share a dimension.
CONCEPTS = [
    {"car", "automobile", "vehicle", "tyres", "oil"},
    {"deploy", "release", "ship", "rollout"},
    {"marsupial", "quokka", "animal"},
]
DIM = 16


def embed(text: str) -> np.ndarray:
    v = np.zeros(DIM, np.float32)
    for word in re.findall(r"\w+", text.lower()):
        hit = [i for i, concept in enumerate(CONCEPTS) if word in concept]
        v[hit[0] if hit else len(CONCEPTS) + hashlib.sha1(word.encode()).digest()[0] % (DIM - len(CONCEPTS))] += 1
    return v


class FakeReranker:
    """Scores a passage by the share of the query's words it holds; `favour` comes first."""

    uri = "fake://reranker"
    remote = False
    latency_ms = None
    max_tokens = 512

    def __init__(self, favour: str = "", fail: bool = False) -> None:
        self.favour, self.fail = favour, fail

    def score(self, query: str, documents) -> list[float]:
        if self.fail:
            raise RuntimeError("the reranker fell over")
        words = set(re.findall(r"\w+", query.lower()))
        out = []
        for doc in documents:
            held = words & set(re.findall(r"\w+", doc.lower()))
            out.append(1.0 if self.favour and self.favour in doc else 0.5 * len(held) / max(len(words), 1))
        return out


class FakeGenerator:
    uri = "fake://generator"
    remote = False
    latency_ms = None

    def __init__(self, reply: str) -> None:
        self.reply = reply


class Ports:
    """The pipeline's ports over a real database, lexical index, vector index and cache."""

    def __init__(self, conn, analyzers, index, cache, vectors=None, reranker=None, generator=None) -> None:
        self.conn, self.analyzers, self.index, self._cache = conn, analyzers, index, cache
        self._vectors, self._reranker, self._generator = vectors, reranker, generator
        self.calls: dict[str, int] = {"embed": 0, "rerank": 0, "generate": 0}

    @property
    def cache(self):
        return self._cache

    async def read(self, fn):
        return fn(self.conn, self.analyzers)

    async def lexical(self):
        return self.index

    def language_counts(self, conn):
        return language_counts(conn)

    def vectors(self):
        return self._vectors if self._vectors is not None else "no embedding model here (a test)"

    async def embed(self, uri, queries, documents):
        self.calls["embed"] += 1
        return [embed(t) for t in [*queries, *documents]]

    async def reranker(self):
        if self._reranker is None:
            raise ModelUnavailable("rerank", "no reranker in this test", "give it one")
        return self._reranker

    async def rerank(self, model, query, texts):
        self.calls["rerank"] += 1
        return model.score(query, texts)

    async def generator(self):
        if self._generator is None:
            raise ModelUnavailable("generate", "no generator in this test")
        return self._generator

    async def generate(self, messages, max_tokens):
        self.calls["generate"] += 1
        return self._generator.reply


@pytest.fixture
def store(tmp_path):
    root = write_tree(str(tmp_path / "docs"), DOCS)
    conn = migrated_db(str(tmp_path / "data" / "index.sqlite"))
    analyzers = AnalyzerSet()
    index_collection(conn, analyzers, CollectionConfig(name="c", path=root))
    vectors = VectorIndex(DIM)
    for (mirror_hash,) in conn.execute("SELECT DISTINCT mirror_hash FROM documents").fetchall():
        chunks = chunks_of(conn, mirror_hash)
        vectors.add(np.array([c[0] for c in chunks]), np.stack([embed(c[2]) for c in chunks]))
    cache = LlmCache(str(tmp_path / "cache" / "llm.sqlite"))
    with lexical_index(conn, analyzers) as index:
        yield lambda **kw: Ports(conn, analyzers, index, cache, **kw), VectorSource("fake://embedder", vectors, None)
    conn.close()


def run(ports, query: str, **kw) -> tuple[Hybrid, Outcome]:
    h = Hybrid(ports, Request(query=query, limit=kw.pop("limit", 10), **kw))
    return h, asyncio.run(h.run())


def paths(out: Outcome) -> list[str]:
    return [h.candidate.doc.rel_path for h in out.hits]


def stage(out: Outcome, name: str):
    return next(s for s in out.stages if s.name == name)


def test_without_models_it_is_lexical_and_says_what_it_skipped(store):
    ports, _ = store
    p = ports()
    _, out = run(p, "deploy service")
    assert len(out.hits) == 8 and all(path.startswith("deploy/") for path in paths(out))
    assert [h.candidate.fused.contributions[0].source for h in out.hits] == ["bm25"] * 8
    assert "no vector search: no embedding model here (a test); lexical only" in out.degraded
    assert any(d.startswith("no rerank model: no reranker in this test (fix: give it one)") for d in out.degraded)
    assert stage(out, "vector").skipped == "no vectors" and stage(out, "rerank").skipped == "no reranker"
    # Fusion alone: scores relative to the best possible fused score, best first.
    scores = [h.score for h in out.hits]
    assert scores == sorted(scores, reverse=True) and 0 < scores[-1] <= scores[0] <= 1
    assert p.calls == {"embed": 0, "rerank": 0, "generate": 0}


def test_the_reranker_orders_the_pool_and_its_scores_are_cached(store):
    ports, _ = store
    p = ports(reranker=FakeReranker(favour="Gateway"))
    _, out = run(p, "deploy", expand=False)
    # Seven equal BM25 matches: the reranker decides among them. Their order in fusion
    # is the engine's among equals, which its two indexing threads may lay out either
    # way (gateway came 4th, or 3rd).
    _, fused = run(ports(), "deploy", expand=False)
    assert paths(out)[0] == "deploy/gateway.md"
    assert out.hits[0].candidate.position == paths(fused).index("deploy/gateway.md") + 1
    assert out.reranked == 8 and out.models["rerank"] == "fake://reranker"
    assert out.hits[0].candidate.rerank == 1.0 and not out.hits[0].candidate.rerank_cached
    first = p.calls["rerank"]
    assert first >= 1

    _, again = run(p, "deploy", expand=False)
    assert paths(again) == paths(out) and p.calls["rerank"] == first  # every score from the cache
    assert all(h.candidate.rerank_cached for h in again.hits)


class SlowingReranker(FakeReranker):
    """A reranker fast on its first passage and slow on the rest (a short passage first,
    or a model whose first call ran alone)."""

    def __init__(self, first_s: float, then_s: float) -> None:
        super().__init__()
        self.first_s, self.then_s, self.scored = first_s, then_s, 0

    def score(self, query: str, documents) -> list[float]:
        time.sleep(sum(self.first_s if self.scored + i == 0 else self.then_s for i in range(len(documents))))
        self.scored += len(documents)
        return super().score(query, documents)


def test_the_reranker_keeps_to_its_budget_when_it_slows_after_its_first_passage(store, monkeypatch):
    """The speed of one passage set how many followed: a first passage scored fast made
    room for 14 more, which took 8.6 s of a 4 s budget. It is measured again after each
    batch, a batch at most as many as were scored before."""
    import msgspec

    from gnod.search import hybrid

    budget = 0.3
    monkeypatch.setattr(
        hybrid,
        "PIPELINE",
        msgspec.structs.replace(PIPELINE, limits=msgspec.structs.replace(PIPELINE.limits, rerank_budget_s=budget)),
    )
    ports, _ = store
    _, out = run(ports(reranker=SlowingReranker(0.01, 0.1)), "deploy", expand=False)
    # 0.01 s, then 0.1 s a passage: the first promised room for all 7 others (0.7 s).
    assert 2 <= out.reranked < 8
    assert any(n.startswith(f"reranked {out.reranked} of the 8 best candidates") for n in out.notes), out.notes


def test_a_failing_reranker_degrades_to_fusion_scores(store):
    ports, _ = store
    _, out = run(ports(reranker=FakeReranker(fail=True)), "deploy", expand=False)
    assert len(out.hits) == 8 and out.reranked == 0
    assert any("the reranker failed (RuntimeError: the reranker fell over)" in d for d in out.degraded)


def test_few_candidates_skip_the_reranker_with_synthetic_scores(store):
    ports, _ = store
    p = ports(reranker=FakeReranker())
    _, out = run(p, "marsupial", expand=False)
    assert paths(out) == ["quokka.md"] and p.calls["rerank"] == 0
    assert stage(out, "rerank").skipped.startswith("smart skip: 1 candidates")
    assert out.synthetic is not None and out.hits[0].score <= 1.0


def test_a_weak_signal_is_expanded_once_then_from_the_cache(store):
    ports, _ = store
    reply = "lex: tyres winter\nvec: vehicle maintenance\nhyde: The automobile gets an oil change."
    p = ports(generator=FakeGenerator(reply), vectors=store[1])
    _, out = run(p, "deploy")  # seven near-equal matches: no strong signal
    assert out.strong["skip_expansion"] is False and p.calls["generate"] == 1
    assert out.expansion is not None and out.expansion.lexical == ["tyres winter"] and not out.expansion.cached
    kinds = {(x.source, x.kind) for x in out.lists}
    assert kinds == {
        ("bm25", "original"),
        ("bm25", "variant"),
        ("vector", "original"),
        ("vector", "variant"),
        ("vector", "hyde"),
    }
    assert "garage.md" in paths(out)  # found by the variants only

    _, again = run(p, "deploy")
    assert p.calls["generate"] == 1 and again.expansion.cached
    assert stage(again, "expand").skipped == "cached reply (no generation)"
    assert paths(again) == paths(out)


def test_a_strong_signal_is_not_expanded(store):
    ports, _ = store
    p = ports(generator=FakeGenerator("lex: anything"))
    _, out = run(p, "quokka marsupial Rottnest Island")
    assert out.strong["skip_expansion"] is True and p.calls["generate"] == 0
    assert stage(out, "expand").skipped.startswith("strong BM25 signal")
    assert paths(out) == ["quokka.md"]


def test_a_strong_match_of_one_word_of_a_question_whose_others_no_document_has_is_expanded(store):
    """`how to keep motivation during the final year of a doctorate`: one note held
    `year` and scored high and clear, and expansion was skipped as a strong signal,
    though no document had the question's other words: those want the expansion most."""
    ports, _ = store
    p = ports(generator=FakeGenerator("lex: anything"))
    _, out = run(p, "quokka marsupial Rottnest Island zqxunheard")
    assert out.strong["skip_expansion"] is False and p.calls["generate"] == 1
    assert out.strong["absent"] == ["zqxunheard"] and out.strong["top"] >= 0.84


def test_variants_given_by_the_client_are_searched_without_the_generator(store):
    ports, vectors = store
    p = ports(generator=FakeGenerator("lex: never asked"), vectors=vectors)
    given = Given(lexical=["oil change"], semantic=[], hyde=None)
    _, out = run(p, "Rottnest", given=given)
    assert p.calls["generate"] == 0 and out.expansion.source == "client"
    assert {"quokka.md", "garage.md"} <= set(paths(out))


def test_vectors_find_what_shares_no_word_with_the_query(store):
    ports, vectors = store
    p = ports(vectors=vectors)
    _, out = run(p, "automobile", expand=False)
    assert paths(out)[0] == "garage.md"
    assert out.hits[0].candidate.fused.contributions[0].source == "vector"
    assert out.models["embed"] == "fake://embedder" and p.calls["embed"] == 1
    assert out.hits[0].candidate.similarity is not None


def test_vectors_weigh_in_as_the_share_of_chunks_embedded(store):
    """While a collection is being embedded, its vector list ranks the few chunks that have
    vectors first (with 1 % embedded, `where are HTTP redirects followed` gave
    xmlrpc/client.py first, 40th by its words): a vector list weighs in by the share
    embedded, and says so. A document only the vectors find (quokka.md, given the vector
    of `release rollout`) came before a match of the words; at 5 % it comes after all of
    them, and vectors still find what no word matches."""
    ports, vectors = store
    conn = ports().conn
    index = VectorIndex(DIM)
    for mirror_hash, path in conn.execute("SELECT DISTINCT mirror_hash, rel_path FROM documents").fetchall():
        chunks = chunks_of(conn, mirror_hash)
        vecs = [embed("release rollout ship" if path == "quokka.md" else c[2]) for c in chunks]
        index.add(np.array([c[0] for c in chunks]), np.stack(vecs))
    whole = ports(vectors=VectorSource("fake://embedder", index, None))
    _, out = run(whole, "deploy", expand=False)
    assert paths(out).index("quokka.md") < paths(out).index("deploy/checklist.md")
    assert [lst.effective_weight() for lst in out.lists if lst.source == "vector"] == [PIPELINE.fusion.weights.original]
    assert not any("embedded so far" in n for n in out.notes)
    part = ports(vectors=VectorSource("fake://embedder", index, None, 0.05))
    _, out = run(part, "deploy", expand=False)
    assert paths(out)[-1] == "quokka.md" and len(paths(out)) == 9
    weights = [lst.effective_weight() for lst in out.lists if lst.source == "vector"]
    assert weights == [pytest.approx(PIPELINE.fusion.weights.original * 0.05)]
    assert "vector results weigh in as the share of chunks embedded so far (5%)" in out.notes
    _, out = run(ports(vectors=vectors._replace(coverage=0.001)), "automobile", expand=False)
    assert paths(out)[0] == "garage.md"
    assert "vector results weigh in as the share of chunks embedded so far (under 1%)" in out.notes


def test_previews_mark_the_query_words(store):
    ports, _ = store
    _, out = run(ports(), "oil change")
    preview = out.hits[0].preview
    marked = [preview.text[a:b].lower() for a, b in preview.matches]
    assert paths(out)[0] == "garage.md" and {"oil", "change"} <= set(marked)


def test_the_score_floor_and_limit_leave_a_note(store):
    ports, _ = store
    _, out = run(ports(), "deploy service", min_score=0.999, expand=False)
    assert len(out.hits) < 8
    assert any("below the score floor 1.00 dropped" in n for n in out.notes)
    _, capped = run(ports(), "deploy service", limit=500, expand=False)
    assert any(f"at most {PIPELINE.mode('standard').max_results} results" in n for n in capped.notes)


def test_deep_mode_needs_keywords(store):
    ports, _ = store
    with pytest.raises(QuerySyntaxError):
        run(ports(), "deploy", mode="deep")


def test_passages_for_ask_come_from_the_results(store):
    ports, _ = store
    h, out = run(ports(), "oil change", expand=False)
    found = asyncio.run(h.passages_for(1, 200))
    assert len(found) == 1 and "oil change" in found[0].text and found[0].start_line >= 1
