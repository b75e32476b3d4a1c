"""The on-disk cache of expansions and rerank scores (real SQLite)."""

from __future__ import annotations

from gnod.store import llm_cache
from gnod.store.llm_cache import LlmCache


def test_keys_are_unambiguous_and_stable():
    assert llm_cache.key("ab", "c") != llm_cache.key("a", "bc")
    assert llm_cache.key("q", "model", "expand-v1") == llm_cache.key("q", "model", "expand-v1")
    assert llm_cache.key("q", "model", "expand-v1") != llm_cache.key("q", "model", "expand-v2")


def test_entries_survive_a_reopen(tmp_path):
    path = str(tmp_path / "cache" / "llm.sqlite")
    c = LlmCache(path)
    c.put_expansion("k1", b'{"lexical":["a"]}')
    c.put_scores({"s1": 0.25, "s2": 0.75})
    c.close()
    c = LlmCache(path)
    assert c.get_expansion("k1") == b'{"lexical":["a"]}' and c.get_expansion("nope") is None
    assert c.get_scores(["s1", "s2", "s3", "s1"]) == {"s1": 0.25, "s2": 0.75}
    c.clear()
    assert c.get_scores(["s1"]) == {} and c.get_expansion("k1") is None
    c.close()


def test_many_keys_in_one_lookup(tmp_path):
    c = LlmCache(str(tmp_path / "llm.sqlite"))
    scores = {f"k{i}": i / 2000 for i in range(1200)}  # more than one IN (...) batch
    c.put_scores(scores)
    assert c.get_scores(scores) == scores
    c.close()


def test_old_entries_are_dropped_at_open(tmp_path):
    path = str(tmp_path / "llm.sqlite")
    c = LlmCache(path)
    c.put_scores({"old": 0.5, "new": 0.6})
    c._conn.execute("UPDATE rerank SET at = 0 WHERE key = 'old'")
    c.close()
    c = LlmCache(path)
    assert c.get_scores(["old", "new"]) == {"new": 0.6}
    c.close()
