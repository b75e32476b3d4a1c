"""The KNN index: exact order, filters that still fill k, upserts and removals, in memory
or over rows mapped from a file; and the graph's candidates re-scored above its threshold."""

import os

import numpy as np
import pytest

from gnod.search import vector_index
from gnod.search.vector_index import Rows, VectorIndex


@pytest.fixture(params=["memory", "file"])
def make(request, tmp_path):
    """An empty index whose rows live in memory or in a mapped file."""

    def make(dim):
        path = str(tmp_path / f"rows-{dim}.f32") if request.param == "file" else None
        return VectorIndex(dim, Rows(dim, path))

    return make


def _data(n=500, dim=16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return np.arange(10, 10 + n, dtype=np.int64), x / np.linalg.norm(x, axis=1, keepdims=True)


def _exact(ids, x, q, k, allowed=None):
    mask = np.ones(len(ids), bool) if allowed is None else np.isin(ids, allowed)
    sims = (x @ (q / np.linalg.norm(q)))[mask]
    order = np.argsort(-sims, kind="stable")[:k]
    return ids[mask][order], sims[order]


def test_search_matches_brute_force_order_and_scores(make):
    ids, x = _data()
    index = make(16)
    index.add(ids, x)
    q = np.random.default_rng(1).standard_normal(16).astype(np.float32)
    got_ids, got_sims = index.search(q, 25)
    want_ids, want_sims = _exact(ids, x, q, 25)
    assert got_ids.tolist() == want_ids.tolist()
    np.testing.assert_allclose(got_sims, want_sims, rtol=1e-5)
    assert np.all(np.diff(got_sims) <= 0)


def test_filter_returns_full_k_from_allowed_only(make):
    ids, x = _data()
    index = make(16)
    index.add(ids, x)
    allowed = ids[::7]  # 72 allowed of 500
    q = x[3] + 0.01
    got, _ = index.search(q, 30, allowed)
    assert len(got) == 30 and set(got.tolist()) <= set(allowed.tolist())
    assert got.tolist() == _exact(ids, x, q, 30, allowed)[0].tolist()
    # Unknown and out-of-range ids in the filter are ignored, not an error.
    got, _ = index.search(q, 5, np.array([-1, 10**9, int(ids[4])]))
    assert got.tolist() == [int(ids[4])]


def test_upsert_replaces_and_last_duplicate_wins(make):
    ids, x = _data(n=50)
    index = make(16)
    index.add(ids, x)
    index.add(np.array([ids[0], ids[0]]), np.stack([x[1], x[2]]))
    assert len(index) == 50
    got, sims = index.search(x[2], 2)
    assert set(got.tolist()) == {int(ids[0]), int(ids[2])}
    assert sims[0] == pytest.approx(1.0, abs=1e-5)


def test_remove_keeps_others_searchable(make):
    ids, x = _data(n=200)
    index = make(16)
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


def test_vectors_are_normalized_and_edge_cases(make):
    index = make(4)
    assert index.search(np.ones(4), 5)[0].size == 0
    index.add(np.array([1, 2]), np.array([[3, 0, 0, 0], [0, 0, 0, 2]], dtype=np.float32))
    got, sims = index.search(np.array([1, 0, 0, 0], dtype=np.float32), 10)
    assert got.tolist() == [1, 2] and sims.tolist() == pytest.approx([1.0, 0.0])
    assert index.search(np.ones(4), 0)[0].size == 0
    assert index.search(np.ones(4), 3, np.array([], dtype=np.int64))[0].size == 0


def test_growth_past_initial_capacity_and_large_ids(make):
    ids, x = _data(n=3000, dim=8, seed=3)
    ids = ids * 1000  # sparse, large chunk ids
    index = make(8)
    for lo in range(0, 3000, 700):
        index.add(ids[lo : lo + 700], x[lo : lo + 700])
    assert len(index) == 3000
    q = x[2999]
    assert index.search(q, 10)[0].tolist() == _exact(ids, x, q, 10)[0].tolist()


def test_rows_the_page_cache_no_longer_holds_are_read_back_whole(tmp_path):
    """A file's rows read back the same once the system dropped its pages: 384-d rows
    (1,536 bytes) across page boundaries, alone, in runs and scattered."""
    path = str(tmp_path / "rows.f32")
    x = np.random.default_rng(3).standard_normal((600, 384)).astype(np.float32)
    rows = Rows(384, path)
    rows.reserve(600)
    rows.write(0, x)
    rows.flush()
    picks = np.array([0, 1, 2, 7, 8, 93, 94, 300, 598, 599])
    for cached in (False, True):
        if not cached:
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        np.testing.assert_array_equal(rows.take(picks), x[picks])
        np.testing.assert_array_equal(rows.take(picks[5:6]), x[picks[5:6]])


def _clustered(n, dim, seed=5):
    """Unit vectors around a few dozen topics, as embeddings are."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((40, dim)).astype(np.float32)
    x = centers[rng.integers(0, 40, n)] + 0.5 * rng.standard_normal((n, dim)).astype(np.float32)
    return np.arange(1, n + 1, dtype=np.int64) * 3, x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture
def graph(make):
    """3,000 vectors past a threshold of 1,000: searches go through the graph."""
    ids, x = _clustered(3000, 32)
    index = make(32)
    index.ann_min = 1000
    index.add(ids[:900], x[:900])
    assert not index.wants_ann()
    index.add(ids[900:], x[900:])
    assert index.wants_ann()
    index.build_ann()
    assert index.has_ann and not index.wants_ann()
    return index, ids, x


def _recall(got, want):
    return len(set(got.tolist()) & set(want.tolist())) / len(want)


def test_graph_candidates_are_rescored_exactly(graph):
    index, ids, x = graph
    rng = np.random.default_rng(9)
    recalls = []
    for q in x[rng.integers(0, 3000, 50)] + 0.1 * rng.standard_normal((50, 32)).astype(np.float32):
        got, sims = index.search(q, 10)
        want, _ = _exact(ids, x, q, 10)
        recalls.append(_recall(got, want))
        assert len(got) == 10 and np.all(np.diff(sims) <= 0)
        # Scores are the float cosines, not the int8 graph's distances.
        exact = x[np.searchsorted(ids, got)] @ (q / np.linalg.norm(q))
        np.testing.assert_allclose(sims, exact, rtol=1e-5, atol=1e-6)
    assert np.mean(recalls) >= 0.95


def test_graph_filters_fill_k_from_allowed_only(graph, monkeypatch):
    index, ids, x = graph
    q = x[7]
    # A wide filter asks the graph for more candidates (as if it allowed more than the
    # exact-scan limit), a narrow one the graph rarely meets falls back to its rows.
    monkeypatch.setattr(vector_index, "ANN_EXACT_ALLOWED", 10)
    wide = ids[::3]
    got, _ = index.search(q, 20, wide)
    assert len(got) == 20 and set(got.tolist()) <= set(wide.tolist())
    assert _recall(got, _exact(ids, x, q, 20, wide)[0]) >= 0.9
    far = ids[np.argsort(x @ q)[:12]]  # the twelve least like the query
    got, _ = index.search(q, 5, far)
    assert got.tolist() == _exact(ids, x, q, 5, far)[0].tolist()


def test_graph_follows_adds_replacements_and_removals(graph):
    index, ids, x = graph
    index.remove(ids[:100])
    assert len(index) == 2900
    for i in range(0, 100, 10):
        assert int(ids[i]) not in index.search(x[i], 10)[0].tolist()
    fresh = -x[:5]  # new ids, and one old id given a new vector
    index.add(np.array([90001, 90002, 90003, 90004, int(ids[500])]), fresh)
    for cid, v in zip([90001, 90002, 90003, 90004, int(ids[500])], fresh):
        top, sims = index.search(v, 1)
        assert top.tolist() == [cid] and sims[0] == pytest.approx(1.0, abs=1e-5)
    assert int(ids[500]) not in index.search(x[500], 3)[0].tolist()
    assert len(index) == 2904 and index.dead() == 101
    assert index.ids().tolist() == sorted([*ids[100:].tolist(), 90001, 90002, 90003, 90004])


def test_a_build_cut_short_leaves_the_exact_scan(make):
    ids, x = _clustered(500, 16)
    index = make(16)
    index.ann_min = 100
    index.add(ids, x)
    index.stop_building()  # the daemon is stopping
    assert index.build_ann() is False
    assert not index.has_ann and index.wants_ann()
    assert index.search(x[3], 1)[0].tolist() == [int(ids[3])]
