"""The in-memory KNN index: exact order, filters that still fill k, upserts and removals."""

import numpy as np
import pytest

from gnod.search.vector_index import VectorIndex


def _data(n=500, dim=16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return np.arange(10, 10 + n, dtype=np.int64), x / np.linalg.norm(x, axis=1, keepdims=True)


def _exact(ids, x, q, k, allowed=None):
    mask = np.ones(len(ids), bool) if allowed is None else np.isin(ids, allowed)
    sims = (x @ (q / np.linalg.norm(q)))[mask]
    order = np.argsort(-sims, kind="stable")[:k]
    return ids[mask][order], sims[order]


def test_search_matches_brute_force_order_and_scores():
    ids, x = _data()
    index = VectorIndex(16)
    index.add(ids, x)
    q = np.random.default_rng(1).standard_normal(16).astype(np.float32)
    got_ids, got_sims = index.search(q, 25)
    want_ids, want_sims = _exact(ids, x, q, 25)
    assert got_ids.tolist() == want_ids.tolist()
    np.testing.assert_allclose(got_sims, want_sims, rtol=1e-5)
    assert np.all(np.diff(got_sims) <= 0)


def test_filter_returns_full_k_from_allowed_only():
    ids, x = _data()
    index = VectorIndex(16)
    index.add(ids, x)
    allowed = ids[::7]  # 72 allowed of 500
    q = x[3] + 0.01
    got, _ = index.search(q, 30, allowed)
    assert len(got) == 30 and set(got.tolist()) <= set(allowed.tolist())
    assert got.tolist() == _exact(ids, x, q, 30, allowed)[0].tolist()
    # Unknown and out-of-range ids in the filter are ignored, not an error.
    got, _ = index.search(q, 5, np.array([-1, 10**9, int(ids[4])]))
    assert got.tolist() == [int(ids[4])]


def test_upsert_replaces_and_last_duplicate_wins():
    ids, x = _data(n=50)
    index = VectorIndex(16)
    index.add(ids, x)
    index.add(np.array([ids[0], ids[0]]), np.stack([x[1], x[2]]))
    assert len(index) == 50
    got, sims = index.search(x[2], 2)
    assert set(got.tolist()) == {int(ids[0]), int(ids[2])}
    assert sims[0] == pytest.approx(1.0, abs=1e-5)


def test_remove_keeps_others_searchable():
    ids, x = _data(n=200)
    index = VectorIndex(16)
    index.add(ids, x)
    gone = ids[::2]
    index.remove(np.concatenate([gone, [999_999, -5]]))
    assert len(index) == 100
    got, _ = index.search(x[1], 100)
    assert sorted(got.tolist()) == sorted(ids[1::2].tolist())
    for i in (1, 51, 199):
        top, sims = index.search(x[i], 1)
        assert top.tolist() == [int(ids[i])] and sims[0] == pytest.approx(1.0, abs=1e-5)
    index.add(gone[:3], x[0:6:2])  # re-adding after removal works
    assert len(index) == 103


def test_vectors_are_normalized_and_edge_cases():
    index = VectorIndex(4)
    assert index.search(np.ones(4), 5)[0].size == 0
    index.add(np.array([1, 2]), np.array([[3, 0, 0, 0], [0, 0, 0, 2]], dtype=np.float32))
    got, sims = index.search(np.array([1, 0, 0, 0], dtype=np.float32), 10)
    assert got.tolist() == [1, 2] and sims.tolist() == pytest.approx([1.0, 0.0])
    assert index.search(np.ones(4), 0)[0].size == 0
    assert index.search(np.ones(4), 3, np.array([], dtype=np.int64))[0].size == 0


def test_growth_past_initial_capacity_and_large_ids():
    ids, x = _data(n=3000, dim=8, seed=3)
    ids = ids * 1000  # sparse, large chunk ids
    index = VectorIndex(8)
    for lo in range(0, 3000, 700):
        index.add(ids[lo : lo + 700], x[lo : lo + 700])
    assert len(index) == 3000
    q = x[2999]
    assert index.search(q, 10)[0].tolist() == _exact(ids, x, q, 10)[0].tolist()
