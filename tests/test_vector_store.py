"""Chunk vectors in real SQLite + sqlite-vec: per-model tables, the derived backlog,
tombstones for deleted chunks, filters, and the model registry."""

from __future__ import annotations

import numpy as np
import pytest

from gnod.config import CollectionConfig
from gnod.ingest.pipeline import index_collection
from gnod.search import filters
from gnod.store import vectors as vs
from gnod.text.analyzer import AnalyzerSet

DIM = 8


@pytest.fixture
def db(db):
    assert vs.load_extension(db) is None
    return db


def index(db, root, name="c"):
    return index_collection(db, AnalyzerSet(), CollectionConfig(name=name, path=str(root)))


def write_docs(root, n, word="alpha"):
    root.mkdir(exist_ok=True)
    for i in range(n):
        (root / f"d{i}.md").write_text(f"# Doc {i}\n\n{word} number {i}\n")


def vecs_for(ids):
    rng = np.random.default_rng(0)
    v = rng.normal(size=(len(ids), DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_table_name_is_sha256_prefix_of_uri():
    assert vs.table_for("file:/m.gguf") == "vec_" + __import__("hashlib").sha256(b"file:/m.gguf").hexdigest()[:8]


def test_backlog_is_what_has_no_vector(db, tmp_path):
    write_docs(tmp_path / "a", 5)
    index(db, tmp_path / "a")
    model = vs.ensure_model(db, "file:/m.gguf", DIM)
    todo = vs.pending(db, model, 0, 100)
    assert len(todo) == 5 and all(c.title.startswith("Doc ") and "alpha" in c.text for c in todo)
    ids = [c.chunk_id for c in todo[:3]]
    assert vs.put(db, model, ids, vecs_for(ids)) == 3
    assert vs.counts(db, model) == (5, 3)
    assert [c.chunk_id for c in vs.pending(db, model, 0, 100)] == [c.chunk_id for c in todo[3:]]
    # Paging by id: after the last id seen, nothing before it comes back.
    assert vs.pending(db, model, todo[3].chunk_id, 100)[0].chunk_id == todo[4].chunk_id
    assert vs.stored_ids(db, model).tolist() == sorted(ids)
    want = dict(zip(ids, vecs_for(ids)))
    # The whole table in batches of 2, or chosen ids read one by one: the same vectors.
    for chosen, batches in ((None, [2, 1]), (np.asarray(ids[1:]), [2])):
        parts = list(vs.read_vectors(db, model, chosen, 2))
        assert [len(p[0]) for p in parts] == batches
        got_ids = np.concatenate([p[0] for p in parts])
        assert sorted(got_ids.tolist()) == sorted(ids if chosen is None else ids[1:])
        for cid, vec in zip(got_ids.tolist(), np.concatenate([p[1] for p in parts])):
            np.testing.assert_allclose(vec, want[cid], rtol=1e-6)


def test_put_skips_chunks_deleted_meanwhile_and_replaces_existing(db, tmp_path):
    write_docs(tmp_path / "a", 2)
    index(db, tmp_path / "a")
    model = vs.ensure_model(db, "file:/m.gguf", DIM)
    ids = [c.chunk_id for c in vs.pending(db, model, 0, 10)]
    assert vs.put(db, model, ids + [999_999], vecs_for(ids + [999_999])) == 2
    assert vs.put(db, model, ids[:1], vecs_for(ids[:1]) * -1) == 1
    assert vs.counts(db, model) == (2, 2)


def test_deleted_documents_leave_tombstones_that_clear_every_model(db, tmp_path):
    root = tmp_path / "a"
    write_docs(root, 4)
    index(db, root)
    m1 = vs.ensure_model(db, "file:/one.gguf", DIM)
    m2 = vs.ensure_model(db, "file:/two.gguf", 4)
    ids = [c.chunk_id for c in vs.pending(db, m1, 0, 10)]
    vs.put(db, m1, ids, vecs_for(ids))
    vs.put(db, m2, ids, vecs_for(ids)[:, :4])
    (root / "d0.md").unlink()
    (root / "d1.md").write_text("# Doc 1\n\nchanged text now\n")
    index(db, root)
    removed = vs.apply_tombstones(db)
    assert len(removed) == 2 and set(removed) <= set(ids)
    # d2 and d3 keep their vectors; the changed d1 has new content, so a new chunk to embed.
    assert vs.counts(db, m1) == (3, 2) and vs.counts(db, m2) == (3, 2)
    assert len(vs.pending(db, m1, 0, 10)) == 1
    assert vs.apply_tombstones(db) == []


def test_no_tombstones_without_a_vector_model(db, tmp_path):
    root = tmp_path / "a"
    write_docs(root, 3)
    index(db, root)
    (root / "d0.md").unlink()
    index(db, root)
    assert db.execute("SELECT count(*) FROM vec_tombstones").fetchone()[0] == 0


def test_dimension_change_starts_the_model_over(db, tmp_path):
    write_docs(tmp_path / "a", 2)
    index(db, tmp_path / "a")
    m = vs.ensure_model(db, "file:/m.gguf", DIM)
    ids = [c.chunk_id for c in vs.pending(db, m, 0, 10)]
    vs.put(db, m, ids, vecs_for(ids))
    vs.set_complete(db, m.uri, True)
    assert vs.ensure_model(db, "file:/m.gguf", DIM).complete_at is not None
    m16 = vs.ensure_model(db, "file:/m.gguf", 16)
    assert m16.dim == 16 and m16.complete_at is None and vs.counts(db, m16) == (2, 0)
    assert [x.uri for x in vs.models(db)] == ["file:/m.gguf"]
    assert vs.drop_model(db, "file:/m.gguf") and vs.models(db) == []
    assert not vs.drop_model(db, "file:/m.gguf")


def test_filters_and_shared_content(db, tmp_path):
    write_docs(tmp_path / "a", 3, "alpha")
    write_docs(tmp_path / "b", 1, "alpha")  # b/d0.md has the same content as a/d0.md
    (tmp_path / "b" / "own.md").write_text("# Own\n\nonly in b\n")
    index(db, tmp_path / "a", "a")
    index(db, tmp_path / "b", "b")
    chunk_of = {
        r[1]: r[0]
        for r in db.execute(
            "SELECT cc.id, d.rel_path || '@' || c.name FROM content_chunks cc "
            "JOIN content ct ON ct.id = cc.content_id JOIN documents d USING(mirror_hash) "
            "JOIN collections c ON c.id = d.collection_id"
        )
    }
    shared = chunk_of["d0.md@a"]
    assert chunk_of["d0.md@b"] == shared
    in_b = filters.where(filters.Filter(collections=("b",)))
    assert sorted(vs.allowed_chunks(db, *in_b).tolist()) == sorted([shared, chunk_of["own.md@b"]])
    hits = vs.chunk_hits(db, [shared])
    assert sorted(h.collection for h in hits) == ["a", "b"]
    assert [h.collection for h in vs.chunk_hits(db, [shared], *in_b)] == ["b"]
