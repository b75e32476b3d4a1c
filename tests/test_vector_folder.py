"""A model's vectors checkpointed beside the database: what a start-up maps back, what a
crash between checkpoints leaves, compaction, and folders of models no longer stored."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from gnod.store import vector_folder
from gnod.store.vector_folder import VectorFolder

DIM = 24
URI = "file:/models/embed.gguf"


def _vecs(n, seed=0):
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _folder(tmp_path, uri=URI, dim=DIM):
    return VectorFolder(str(tmp_path / "vectors-vec_1234"), uri, dim)


def test_a_checkpoint_is_what_the_next_start_maps(tmp_path):
    index, loaded = _folder(tmp_path).open()
    assert not loaded and len(index) == 0
    folder = _folder(tmp_path)
    index, _ = folder.open()
    x = _vecs(600)
    ids = np.arange(1, 601, dtype=np.int64) * 7
    index.add(ids[:500], x[:500])
    index.remove(ids[:10])
    assert folder.checkpoint(index)
    assert not folder.checkpoint(index)  # nothing changed since
    index.add(ids[500:], x[500:])  # after the checkpoint: lost by a crash, read again from SQLite

    again, loaded = _folder(tmp_path).open()
    assert loaded and again.ids().tolist() == ids[10:500].tolist()
    assert not again.has_ann
    np.testing.assert_allclose(again.vectors(ids[10:500]), x[10:500], rtol=1e-6)
    top, sims = again.search(x[42], 1)
    assert top.tolist() == [int(ids[42])] and sims[0] == pytest.approx(1.0, abs=1e-5)


def test_the_graph_is_saved_with_its_rows(tmp_path):
    folder = _folder(tmp_path)
    index, _ = folder.open()
    index.ann_min = 200
    x = _vecs(400, seed=1)
    index.add(np.arange(400), x)
    index.build_ann()
    index.remove(np.arange(5))
    folder.checkpoint(index)
    names = sorted(os.listdir(folder.path))
    assert names == ["ann-1.usearch", "ids-1.npy", "meta.json", "rows-0.f32"]
    again, loaded = _folder(tmp_path).open()
    assert loaded and again.has_ann and len(again) == 395
    assert again.search(x[300], 1)[0].tolist() == [300]
    assert 3 not in again.search(x[3], 5)[0].tolist()


def test_a_torn_or_foreign_folder_is_rebuilt_not_trusted(tmp_path):
    folder = _folder(tmp_path)
    index, _ = folder.open()
    index.add(np.arange(50), _vecs(50))
    folder.checkpoint(index)
    # Another model's dimension or name: start over.
    assert _folder(tmp_path, dim=DIM * 2).open()[1] is False
    folder = _folder(tmp_path)
    index, _ = folder.open()
    index.add(np.arange(50), _vecs(50))
    folder.checkpoint(index)
    assert _folder(tmp_path, uri="file:/other.gguf").open()[1] is False
    folder = _folder(tmp_path)
    index, _ = folder.open()
    index.add(np.arange(50), _vecs(50))
    folder.checkpoint(index)
    # A rows file cut short (the disk filled) or unreadable metadata: start over.
    rows = os.path.join(folder.path, "rows-0.f32")
    os.truncate(rows, 10 * DIM * 4)
    index, loaded = _folder(tmp_path).open()
    assert not loaded and len(index) == 0
    with open(os.path.join(folder.path, "meta.json"), "w") as f:
        f.write("{not json")
    assert _folder(tmp_path).open()[1] is False


def test_a_crash_mid_checkpoint_leaves_the_previous_one(tmp_path):
    folder = _folder(tmp_path)
    index, _ = folder.open()
    index.add(np.arange(100), _vecs(100))
    folder.checkpoint(index)
    meta = json.load(open(os.path.join(folder.path, "meta.json")))
    index.remove(np.arange(50))
    folder.checkpoint(index)
    # Files of the newer generation written, the metadata still the older one's.
    with open(os.path.join(folder.path, "meta.json"), "w") as f:
        json.dump(meta, f)
    np.save(os.path.join(folder.path, "ids-1.npy"), np.arange(100, dtype=np.int64))
    again, loaded = _folder(tmp_path).open()
    assert loaded and again.ids().tolist() == list(range(100))


def test_dead_rows_are_compacted_away(tmp_path, monkeypatch):
    monkeypatch.setattr("gnod.search.vector_index.VECTOR_COMPACT_DEAD", 100)
    folder = _folder(tmp_path)
    index, _ = folder.open()
    x = _vecs(3000, seed=2)
    index.add(np.arange(3000), x)
    folder.checkpoint(index)
    before = os.path.getsize(os.path.join(folder.path, "rows-0.f32"))
    index.remove(np.arange(0, 3000, 3))  # 1,000 dead of 3,000 rows
    assert index.wants_compaction()
    folder.checkpoint(index)
    assert index.dead() == 0 and len(index) == 2000
    assert sorted(os.listdir(folder.path)) == ["ids-2.npy", "meta.json", "rows-2.f32"]
    assert os.path.getsize(os.path.join(folder.path, "rows-2.f32")) == before * 2 // 3
    again, _ = _folder(tmp_path).open()
    keep = np.array([i for i in range(3000) if i % 3])
    assert again.ids().tolist() == keep.tolist()
    np.testing.assert_allclose(again.vectors(keep), x[keep], rtol=1e-6)


def test_folders_of_models_no_longer_stored_are_removed(tmp_path):
    for table in ("vec_aaaa", "vec_bbbb"):
        VectorFolder(vector_folder.folder_for(str(tmp_path), table), URI, DIM).open()
    (tmp_path / "lexical-3-abcd").mkdir()
    vector_folder.remove_others(str(tmp_path), {"vec_bbbb"})
    assert sorted(os.listdir(tmp_path)) == ["lexical-3-abcd", "vectors-vec_bbbb"]
