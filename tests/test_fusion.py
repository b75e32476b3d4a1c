"""The model-free hybrid core: every expectation below is worked out by hand."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gnod.search.constants import PIPELINE, Pipeline, SmartSkip
from gnod.search.fusion import (
    Contribution,
    DeepQueryError,
    Fused,
    RankedList,
    apply_score_floor,
    auto_expand_preview,
    blend,
    dedup_by_content_hash,
    deep_mode_check,
    fuse,
    fusion_ceiling,
    keyword_floor,
    query_keywords,
    rerank_quota,
    scale,
    should_skip_rerank,
    smart_skip_scores,
    strong_signal,
)
from gnod.search.grammar import QuerySyntaxError

STANDARD, DEEP = PIPELINE.standard, PIPELINE.deep


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def bm25(ids, scores=None, kind="original", **kw) -> RankedList:
    """A BM25 list; without scores, its hits stand 1.0, 0.9, 0.8, … (evenly spread)."""
    ids = list(ids)
    return RankedList(
        kind=kind, source="bm25", doc_ids=ids, scores=scores or [1.0 - i / 10 for i in range(len(ids))], **kw
    )


def vec(ids, scores=None, kind="original", **kw) -> RankedList:
    ids = list(ids)
    return RankedList(
        kind=kind, source="vector", doc_ids=ids, scores=scores or [0.9 - i / 10 for i in range(len(ids))], **kw
    )


def fused(doc_id, score, source="bm25") -> Fused:
    """A hand-made fusion result (score chosen directly, one contribution for its source)."""
    c = Contribution(
        list_index=0,
        kind="original",
        source=source,
        label="",
        rank=1,
        score=1.0,
        weight=2.0,
        standard=score,
        contribution=score,
    )
    return Fused(doc_id=doc_id, score=score, best_rank=1, contributions=[c])


# --- constants -------------------------------------------------------------------------


def test_constants_match_the_seeds():
    p = PIPELINE
    assert (p.strong_signal.min_top, p.strong_signal.min_gap, p.strong_signal.probe) == (0.84, 0.14, 5)
    assert (p.fusion.weights.original, p.fusion.weights.variant, p.fusion.weights.hyde) == (2.0, 1.0, 1.4)
    assert (p.limits.bm25_original, p.limits.bm25_variant) == (2, 1)
    assert (p.limits.vector_original, p.limits.vector_variant, p.limits.vector_hyde) == (2, 1, 1)
    assert p.limits.rerank_top_k == 20
    # Seed 000: the fusion (retrieval) weight is the big one at the top.
    assert [(t.max_position, t.fusion, t.rerank) for t in p.blend] == [
        (3, 0.75, 0.25),
        (10, 0.60, 0.40),
        (None, 0.40, 0.60),
    ]
    assert (STANDARD.max_results, STANDARD.pool, STANDARD.min_keywords) == (32, 64, 0)
    assert (DEEP.max_results, DEEP.pool, DEEP.min_keywords) == (100, 256, 2)
    assert (STANDARD.smart_skip, DEEP.smart_skip) == (True, False)
    assert (STANDARD.preview_expand_top, DEEP.preview_expand_top) == (3, 5)
    assert p.keyword_floor.max_floor == 0.30
    assert (p.smart_skip.min_candidates, p.smart_skip.center, p.smart_skip.cap) == (5, 0.4, 0.70)
    assert p.score_floor == 0.03
    assert (p.previews.min_rerank, p.previews.max_chars) == (0.80, 2048)


def test_explain_is_a_plain_json_dict():
    d = PIPELINE.explain()
    assert json.loads(json.dumps(d)) == d
    assert d["fusion"]["weights"] == {"original": 2.0, "variant": 1.0, "hyde": 1.4}
    assert d["deep"]["pool"] == 256 and d["score_floor"] == 0.03


@pytest.mark.parametrize(
    ("position", "weights"),
    [
        (1, (0.75, 0.25)),
        (3, (0.75, 0.25)),
        (4, (0.60, 0.40)),
        (10, (0.60, 0.40)),
        (11, (0.40, 0.60)),
        (1000, (0.40, 0.60)),
    ],
)
def test_blend_tier_by_position(position, weights):
    tier = PIPELINE.blend_tier(position)
    assert (tier.fusion, tier.rerank) == weights


def test_mode_lookup():
    assert PIPELINE.mode("deep") is PIPELINE.deep
    with pytest.raises(ValueError, match="unknown search mode 'fast'"):
        PIPELINE.mode("fast")


# --- strong signal ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "strong"),
    [
        ([1.0, 0.86, 0.5], True),  # top 1.0 ≥ 0.84, gap 0.14 ≥ 0.14 (boundary)
        ([1.0, 0.87, 0.5], False),  # gap 0.13
        ([0.84, 0.70], True),  # both on the boundary
        ([0.83, 0.0], False),  # not confident enough
        ([0.98, 0.84], True),  # gap 0.14 despite float rounding (0.98 − 0.84 = 0.1399…9)
        ([0.9], True),  # a lone hit is compared against 0.0
        ([0.5, 0.98, 0.84, 0.1], True),  # order does not matter
        ([], False),
    ],
)
def test_strong_signal(scores, strong):
    assert strong_signal(scores) is strong


# --- fusion ----------------------------------------------------------------------------


def test_scale_is_the_floor_and_the_population_deviation():
    # scores 1.0, 0.6, 0.2: mean 0.6, deviation √((0.16 + 0 + 0.16) / 3) = √0.106667 = 0.326599
    assert scale(bm25("abc", scores=[1.0, 0.6, 0.2])) == (0.2, pytest.approx(0.326599, abs=1e-6))
    # All alike (one hit, or ties): each hit stands one unit above what the list did not return.
    assert scale(bm25("a", scores=[0.8])) == (pytest.approx(-0.2), 1.0)
    assert scale(vec("ab", scores=[0.7, 0.7])) == (pytest.approx(-0.3), 1.0)
    assert scale(bm25([], scores=[])) == (0.0, 1.0)


def test_an_exhaustive_list_puts_what_it_left_out_one_deviation_below_its_last_hit():
    # BM25 found only a, b, c (fewer than asked): c matched, a document it left out did not.
    complete = bm25("abc", scores=[1.0, 0.6, 0.2], exhaustive=True)
    assert scale(complete) == (pytest.approx(0.2 - 0.326599, abs=1e-6), pytest.approx(0.326599, abs=1e-6))
    out = {f.doc_id: f.score for f in fuse([complete, vec(["d", "c"], scores=[0.9, 0.5])])}
    # bm25: a 3.449490, b 2.224745, c 1; vector (not exhaustive): d 2, c 0; weights 2 and 2 of 4
    assert out == {
        "a": pytest.approx(1.724745, abs=1e-6),
        "b": pytest.approx(1.112372, abs=1e-6),
        "d": pytest.approx(1.0),
        "c": pytest.approx(0.5),
    }
    # Cut off at the depth asked for, the same list says nothing of what lies past c.
    assert {f.doc_id: f.score for f in fuse([bm25("abc", scores=[1.0, 0.6, 0.2])])}["c"] == 0.0


def test_fuse_single_list_is_its_standardized_scores():
    out = fuse([bm25("abc", scores=[1.0, 0.6, 0.2])])
    assert [f.doc_id for f in out] == list("abc")
    # (score − 0.2) / 0.326599, weight 2 of a total weight 2
    assert [f.score for f in out] == [
        pytest.approx(0.8 / 0.326599, abs=1e-5),  # 2.449490
        pytest.approx(0.4 / 0.326599, abs=1e-5),
        0.0,
    ]  # 1.224745, 0


def test_fuse_a_clear_match_outweighs_an_even_list():
    # The vector list ranks y first among ten evenly spread hits; BM25 finds x far ahead of
    # nine look-alikes. Each is #1 in one list, so RRF would tie them (and pick the first
    # seen, y); standardized scores keep how far x stands out.
    out = fuse(
        [
            vec(["y", *"abcdefghi"], scores=[0.80 - i / 100 for i in range(10)]),
            bm25(["x", *"jklmnopqr"], scores=[1.0] + [0.1] * 9),
        ]
    )
    # bm25: mean 0.19, deviation √((0.81² + 9 × 0.09²) / 10) = 0.27, floor 0.1 → x 0.9 / 0.27 = 3.333333
    # vector: deviation 0.01 × √((10² − 1) / 12) = 0.028723, floor 0.71 → y 0.09 / 0.028723 = 3.133398
    # each list weighs 2 of 4
    assert [f.doc_id for f in out][:2] == ["x", "y"]
    assert out[0].score == pytest.approx(3.333333 / 2, abs=1e-6)
    assert out[1].score == pytest.approx(3.133398 / 2, abs=1e-6)


def test_fuse_weights_by_kind():
    lists = [
        bm25(["o", "a"], scores=[1.0, 0.0]),
        bm25(["v", "a"], kind="variant", scores=[1.0, 0.0]),
        vec(["h", "a"], kind="hyde", scores=[1.0, 0.0]),
    ]
    out = {f.doc_id: f for f in fuse(lists)}
    # each list: deviation 0.5, floor 0 → its #1 stands at 2; total weight 2 + 1 + 1.4 = 4.4
    assert out["o"].score == pytest.approx(2.0 * 2 / 4.4)  # 0.909091
    assert out["v"].score == pytest.approx(1.0 * 2 / 4.4)  # 0.454545
    assert out["h"].score == pytest.approx(1.4 * 2 / 4.4)  # 0.636364
    assert out["a"].score == 0.0
    assert [f.doc_id for f in fuse(lists)][:3] == ["o", "h", "v"]


def test_fuse_totals_and_contributions():
    lists = [
        bm25(["a", "b", "c"], scores=[1.0, 0.6, 0.2], label="deploy app"),
        vec(["b", "a", "d"], scores=[0.9, 0.8, 0.7]),
        vec(["d"], kind="hyde", scores=[0.75], label="To deploy, run…"),
    ]
    out = fuse(lists)
    # bm25: floor 0.2, deviation 0.326599 → a 2.449490, b 1.224745, c 0
    # vector: floor 0.7, deviation 0.081650 → b 2.449490, a 1.224745, d 0
    # hyde: one hit → standard 1; total weight 2 + 2 + 1.4 = 5.4
    # a, b: (2 × 2.449490 + 2 × 1.224745) / 5.4 = 1.360828; d: 1.4 / 5.4 = 0.259259; c: 0
    assert {f.doc_id for f in out[:2]} == {"a", "b"} and [f.doc_id for f in out[2:]] == ["d", "c"]
    a, b, d, c = sorted(out[:2], key=lambda f: f.doc_id) + out[2:]
    assert a.score == pytest.approx(1.360828, abs=1e-6) and b.score == pytest.approx(1.360828, abs=1e-6)
    assert d.score == pytest.approx(1.4 / 5.4) and c.score == 0.0
    assert a.score == math.fsum(x.contribution for x in a.contributions)
    ca = a.contributions
    assert [(x.list_index, x.source, x.kind, x.rank, x.score, x.weight) for x in ca] == [
        (0, "bm25", "original", 1, 1.0, 2.0),
        (1, "vector", "original", 2, 0.8, 2.0),
    ]
    assert ca[0].standard == pytest.approx(2.449490, abs=1e-6) and ca[0].label == "deploy app"
    assert ca[0].contribution == pytest.approx(2 * 2.449490 / 5.4, abs=1e-6)
    assert [(x.kind, x.rank, x.standard) for x in d.contributions] == [("original", 3, 0.0), ("hyde", 1, 1.0)]
    assert d.best_rank == 1 and c.best_rank == 3


def test_fuse_ties_are_exact_and_go_to_first_seen():
    # Same two contributions in the other list order: fsum makes the totals identical.
    out = fuse([vec(["b", "a"], scores=[0.9, 0.5]), bm25(["a", "b"], scores=[1.0, 0.6])])
    assert out[0].score == out[1].score
    assert [f.doc_id for f in out] == ["b", "a"]


def test_fuse_tie_goes_to_better_best_rank_before_first_seen():
    # Both lists stand their hits at 2, 0, 0, 0 (one clear #1): x and y both score 0.
    out = fuse([bm25(["p", "q", "r", "x"], scores=[1.0, 0.0, 0.0, 0.0]), vec(["s", "t", "y"], scores=[1.0, 0.0, 0.0])])
    tail = [f for f in out if f.doc_id in ("x", "y")]
    assert tail[0].score == tail[1].score == 0.0
    assert [f.doc_id for f in tail] == ["y", "x"]  # y's best rank 3 beats x's 4


def test_fuse_repeated_id_in_one_list_counts_once():
    out = {f.doc_id: f for f in fuse([bm25(["a", "a", "b"], scores=[1.0, 1.0, 0.4])])}
    assert len(out["a"].contributions) == 1 and out["a"].contributions[0].rank == 1
    assert out["b"].contributions[0].rank == 3  # ranks are positions as given


def test_fuse_empty():
    assert fuse([]) == [] and fuse([bm25([], scores=[])]) == []


def test_fusion_ceiling():
    # Each list's #1 standardized, weighted, over the total weight of the non-empty lists:
    # bm25 (2.449490 × 2) + vector (1 × 2, all alike) over 4 = 1.724745.
    lists = [bm25("abc", scores=[1.0, 0.6, 0.2]), vec("ab", scores=[0.5, 0.5]), vec([], kind="variant", scores=[])]
    assert fusion_ceiling(lists) == pytest.approx((2 * 2.449490 + 2 * 1.0) / 4, abs=1e-6)
    assert fusion_ceiling([]) == 0.0
    # Reached exactly by a document that is #1 everywhere.
    assert fuse(lists)[0].score == pytest.approx(fusion_ceiling(lists))


# --- blending --------------------------------------------------------------------------

# Fusion scores chosen with min 0 and max 1, so the normalized score equals the score.
FUSION = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.35, 0.3, 0.2, 0.0]
CANDIDATES = [fused(f"p{i}", s) for i, s in enumerate(FUSION, 1)]
RERANK = {"p1": 0.2, "p3": 0.4, "p4": 0.9, "p10": 1.0, "p11": 1.0, "p12": 0.5}


def test_blend_positions_1_3_4_10_11():
    by_id = {b.doc_id: b for b in blend(CANDIDATES, RERANK)}
    assert by_id["p1"].score == pytest.approx(0.75 * 1.0 + 0.25 * 0.2)  # 0.75 + 0.05 = 0.80
    assert by_id["p3"].score == pytest.approx(0.75 * 0.8 + 0.25 * 0.4)  # 0.60 + 0.10 = 0.70
    assert by_id["p4"].score == pytest.approx(0.60 * 0.7 + 0.40 * 0.9)  # 0.42 + 0.36 = 0.78
    assert by_id["p10"].score == pytest.approx(0.60 * 0.3 + 0.40 * 1.0)  # 0.18 + 0.40 = 0.58
    assert by_id["p11"].score == pytest.approx(0.40 * 0.2 + 0.60 * 1.0)  # 0.08 + 0.60 = 0.68
    assert by_id["p12"].score == pytest.approx(0.40 * 0.0 + 0.60 * 0.5)  # 0.00 + 0.30 = 0.30
    p4 = by_id["p4"]
    assert (p4.position, p4.fusion_norm, p4.rerank, p4.fusion_weight, p4.rerank_weight) == (
        4,
        pytest.approx(0.7),
        0.9,
        0.60,
        0.40,
    )


def test_blend_order_and_unreranked_candidates():
    out = blend(CANDIDATES, RERANK)
    # Not reranked: the rerank share is 0 → p2 0.75×0.9 = 0.675, p5 0.6×0.6 = 0.36,
    # p6 0.6×0.5 = 0.30 (ties p12's 0.30: the earlier position wins), p7 0.27, p8 0.24, p9 0.21.
    assert [b.doc_id for b in out] == ["p1", "p4", "p3", "p11", "p2", "p10", "p5", "p6", "p12", "p7", "p8", "p9"]
    assert by_score_ok(out)
    assert next(b for b in out if b.doc_id == "p2").rerank is None


def by_score_ok(out) -> bool:
    return all(a.score >= b.score for a, b in zip(out, out[1:])) and all(0.0 <= b.score <= 1.0 for b in out)


def test_blend_normalizes_raw_fusion_scores():
    # Fusion scores 2.449490, 1.224745, 0.408248, 0 (scores 1.0, 0.6, 0.3, 0.1: mean 0.5,
    # deviation √((0.25 + 0.01 + 0.04 + 0.16) / 4) = 0.339116, floor 0.1) are min-max
    # normalized first: norm(b) = 0.5 / 0.9 = 0.555556.
    f = fuse([bm25("abcd", scores=[1.0, 0.6, 0.3, 0.1])])
    out = {b.doc_id: b for b in blend(f, {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0})}
    assert out["a"].fusion_norm == 1.0 and out["d"].fusion_norm == 0.0
    assert out["b"].fusion_norm == pytest.approx(0.5 / 0.9)
    assert out["a"].score == pytest.approx(1.0)  # 0.75×1 + 0.25×1
    assert out["d"].score == pytest.approx(0.40)  # position 4: 0.60×0 + 0.40×1


def test_blend_clamps_rerank_and_ignores_non_finite():
    # p1..p3 plus p12 (fusion 0.0), so the normalized scores are still 1.0, 0.9, 0.8.
    cands = [*CANDIDATES[:3], CANDIDATES[-1]]
    out = {b.doc_id: b for b in blend(cands, {"p1": 1.7, "p2": -3.0, "p3": math.nan})}
    assert out["p1"].rerank == 1.0 and out["p1"].score == pytest.approx(1.0)  # 0.75 + 0.25
    assert out["p2"].rerank == 0.0 and out["p2"].score == pytest.approx(0.675)  # 0.75×0.9
    assert out["p3"].rerank is None and out["p3"].score == pytest.approx(0.60)  # 0.75×0.8


def test_blend_without_reranker_is_normalized_fusion():
    out = blend(CANDIDATES, None)
    assert [b.score for b in out] == FUSION
    assert all((b.fusion_weight, b.rerank_weight, b.rerank) == (1.0, 0.0, None) for b in out)


def test_blend_equal_fusion_scores_normalize_to_one():
    out = blend([fused("a", 0.5), fused("b", 0.5)], {"a": 0.0, "b": 1.0})
    # both norms 1.0 → a: 0.75, b: 0.75 + 0.25 = 1.0
    assert [(b.doc_id, b.score) for b in out] == [("b", pytest.approx(1.0)), ("a", pytest.approx(0.75))]
    assert blend([], {}) == []


@given(
    st.lists(st.floats(0.0, 10.0), min_size=1, max_size=30),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=30),
)
def test_blend_final_scores_always_in_unit_interval(fusion, reranks):
    cands = sorted((fused(i, s) for i, s in enumerate(fusion)), key=lambda f: -f.score)
    out = blend(cands, dict(enumerate(reranks)))
    assert len(out) == len(cands) and by_score_ok(out)


# --- keyword floor ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("terms", "text", "floor"),
    [
        (["harper"], "Notes from Harper's visit", 0.30),  # case-insensitive, "'" is a boundary
        (["how"], "show me the logs", 0.0),  # no match inside a word
        (["postgres", "connection"], "postgres settings only", 0.15),  # 1 of 2: 0.30 × 1/2
        (["postgres", "connection"], "POSTGRES Connection string", 0.30),
        (["Harper", "harper", "zed"], "harper", 0.15),  # duplicates count once: 1 of 2
        (["straße"], "Die STRASSE ist lang", 0.30),  # Unicode case folding: ß → ss
        (["über"], "darüber hinaus", 0.0),  # ü is a word character: no boundary
        (["café"], "cafe\u0301 au lait", 0.30),  # decomposed é in the text (NFC)
        (["cafe"], "cafe\u0301 au lait", 0.0),  # the accent is part of the word
        (["東京"], "東京タワーに行く", 0.30),  # no spaces in CJK: substring match
        (["c++"], "I write c++ daily", 0.30),
        (["a.b"], "axb", 0.0),  # terms are literal, not patterns
        (["alpha", "beta", "gamma", "delta"], "beta and delta", 0.15),  # 0.30 × 2/4
        ([], "anything", 0.0),
        (["  "], "anything", 0.0),
    ],
)
def test_keyword_floor(terms, text, floor):
    assert keyword_floor(terms, text) == pytest.approx(floor)


# --- smart skip ------------------------------------------------------------------------


def test_should_skip_rerank():
    assert should_skip_rerank(STANDARD, 4) and should_skip_rerank(STANDARD, 0)
    assert not should_skip_rerank(STANDARD, 5)
    assert not should_skip_rerank(DEEP, 1)  # deep search always reranks


def test_smart_skip_scores():
    lists = [bm25(["a"]), vec(["a"])]
    ceil = 1.0  # fusion_ceiling: one hit per list stands at 1, weights 2 and 2 over 4
    cands = [
        fused("top", ceil),  # x = 1 → 0.40 + 0.30·σ(10·0.6) = 0.40 + 0.30·0.997527 = 0.699258
        fused("mid", 0.4 * ceil),  # x = 0.4 → σ(0) = 0.5 → 0.40 + 0.15 = 0.55
        fused("vec", ceil, source="vector"),  # x = 1 × similarity 0.4 = 0.4 → 0.55
        fused("nosim", 0.4 * ceil, source="vector"),  # no similarity given: plain x → 0.55
        fused("zero", 0.0),  # x = 0 → 0.40 + 0.30·σ(−4) = 0.40 + 0.30·0.017986 = 0.405396
    ]
    out = smart_skip_scores(cands, lists, {"vec": 0.4, "mid": 0.1})
    by_id = {s.doc_id: s for s in out}
    assert by_id["top"].score == pytest.approx(0.40 + 0.30 * sigmoid(6))
    assert by_id["top"].score == pytest.approx(0.699258, abs=1e-6)
    assert by_id["mid"].score == pytest.approx(0.55)
    assert by_id["mid"].similarity is None  # BM25-only: the similarity is not used
    assert (by_id["vec"].x, by_id["vec"].similarity) == (pytest.approx(0.4), 0.4)
    assert by_id["vec"].score == pytest.approx(0.55)
    assert by_id["nosim"].score == pytest.approx(0.55)
    assert by_id["zero"].score == pytest.approx(0.405396, abs=1e-6)
    assert [s.doc_id for s in out] == ["top", "mid", "vec", "nosim", "zero"]


@given(st.floats(0.0, 100.0), st.floats(-5.0, 5.0))
def test_smart_skip_scores_are_capped(score, sim):
    out = smart_skip_scores([fused("d", score, source="vector")], [bm25("d"), vec("d")], {"d": sim})
    assert 0.40 <= out[0].score <= 0.70


def test_smart_skip_cap_binds_when_the_curve_would_exceed_it():
    # With low 0.65 and steepness 50, σ(50·0.6) ≈ 1 → 0.65 + 0.05·1 = 0.70: the cap holds.
    p = Pipeline(smart_skip=SmartSkip(low=0.65, steepness=50.0))
    out = smart_skip_scores([fused("d", 1.0)], [bm25("d")], pipeline=p)
    assert out[0].score <= 0.70 and out[0].score == pytest.approx(0.70)


# --- score floor, dedup, previews ------------------------------------------------------


def test_apply_score_floor():
    items = [fused(f"d{i}", s) for i, s in enumerate([0.5, 0.029, 0.03, 0.0])]
    assert [f.doc_id for f in apply_score_floor(items)] == ["d0", "d2"]  # 0.03 itself is kept
    assert [f.doc_id for f in apply_score_floor(items, floor=0.4)] == ["d0"]
    assert apply_score_floor([("x", 0.01), ("y", 0.2)], key=lambda t: t[1]) == [("y", 0.2)]


def test_dedup_by_content_hash():
    cands = [("a", "h1"), ("b", "h2"), ("c", "h1"), ("d", None), ("e", None), ("f", "h3"), ("g", "h2")]
    h = lambda c: c[1]  # noqa: E731
    assert [c[0] for c in dedup_by_content_hash(cands, h, pool=10)] == ["a", "b", "d", "e", "f"]
    # the pool counts kept candidates, after dedup
    assert [c[0] for c in dedup_by_content_hash(cands, h, pool=3)] == ["a", "b", "d"]
    assert dedup_by_content_hash(cands, h, pool=0) == []


def test_dedup_keeps_best_ranked_before_fusion():
    # Same content in two collections (ids 1 and 2): per-list dedup keeps the better rank,
    # and the next unique document moves up instead of losing its slot.
    content = {1: "h", 2: "h", 3: "k"}
    kept = dedup_by_content_hash([1, 2, 3], content.get, pool=2)
    assert kept == [1, 3]
    assert [f.doc_id for f in fuse([bm25(kept)])] == [1, 3]


@pytest.mark.parametrize(
    ("mode", "position", "rerank", "chars", "expand"),
    [
        (STANDARD, 3, 0.81, 2047, True),
        (STANDARD, 4, 0.99, 100, False),  # standard expands its top 3 only
        (DEEP, 5, 0.81, 100, True),
        (DEEP, 6, 0.99, 100, False),
        (STANDARD, 1, 0.80, 100, False),  # strictly above 0.80
        (STANDARD, 1, 0.95, 2048, False),  # strictly under 2,048 characters
        (STANDARD, 1, None, 100, False),  # not reranked
    ],
)
def test_auto_expand_preview(mode, position, rerank, chars, expand):
    assert auto_expand_preview(mode, position, rerank, chars) is expand


# --- deep mode -------------------------------------------------------------------------


def test_deep_mode_accepts_two_keywords():
    assert deep_mode_check("the auth refactor") == ["auth", "refactor"]
    assert deep_mode_check("東京タワー") == ["東京", "京タ", "タワ", "ワー"]  # CJK bigrams


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("auth", 1),
        ("the auth", 1),
        ("Auth AUTH auth", 1),
        ("how to", 0),
        ("", 0),
        ("?!", 0),
    ],
)
def test_deep_mode_rejects_broad_queries(query, found):
    with pytest.raises(DeepQueryError) as e:
        deep_mode_check(query)
    assert str(e.value) == (
        f"deep search needs at least 2 keywords, the query has {found}: add more specific terms or use standard search"
    )
    assert isinstance(e.value, ValueError) and isinstance(e.value, QuerySyntaxError)
    assert (e.value.needed, e.value.found, e.value.message) == (2, found, str(e.value))


def test_deep_mode_uses_the_query_languages_stopwords():
    assert query_keywords("die Wohnung", ["german"]) == ["wohnung"]
    with pytest.raises(DeepQueryError):
        deep_mode_check("die Wohnung", ["german"])
    assert deep_mode_check("die Wohnung", ["english"]) == ["die", "wohnung"]


@pytest.mark.parametrize(
    "done, seconds, waiting, quota",
    [
        (1, 0.01, 19, 19),  # 100 passages/s: all the rest fit in the budget
        (2, 1.0, 18, 6),  # 2 passages/s, 3 s left: 6 more
        (1, 3.3, 19, 0),  # 0.3 passages/s, 0.7 s left: none
        (1, 5.0, 19, 0),  # past the budget already
        (1, 0.0, 19, 19),  # no time measured: nothing to hold back
        (0, 0.0, 0, 0),
    ],
)
def test_rerank_quota_fits_the_rest_of_the_budget(done, seconds, waiting, quota):
    assert PIPELINE.limits.rerank_budget_s == 4.0  # the cases above assume it
    assert rerank_quota(done, seconds, waiting) == quota
