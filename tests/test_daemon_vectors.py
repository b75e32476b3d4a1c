"""Embeddings and vsearch through a real gnod with a real model (MiniLM as GGUF, built
from the PyPI package by testmodels): the backlog, persistence, deletes, filters,
crash-resume, degradation without a model, and the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time

import pytest

from conftest import alive, children, cli_json, start_gnod, wait_until
from gnod import wire

pytestmark = pytest.mark.timeout(240)

TOPICS = {
    "cooking/pasta.md": "# Pasta\n\nBoil salted water, cook the spaghetti for nine minutes and toss it with garlic "
    "and olive oil. Serve with grated parmesan cheese.\n",
    "cooking/bread.md": "# Bread\n\nMix flour, water, yeast and salt, knead the dough, let it rise overnight and "
    "bake it in a hot oven until the crust is brown.\n",
    "pets/cats.md": "# Cats\n\nCats sleep most of the day, purr when they are content and like to chase small "
    "toys across the floor.\n",
    "pets/dogs.md": "# Dogs\n\nDogs need a walk every day; they fetch sticks, bark at the postman and wag their "
    "tails when their owners come home.\n",
    "space/mars.md": "# Mars\n\nThe red planet has the tallest volcano in the solar system and rovers explore its "
    "dusty surface for signs of ancient water.\n",
    "space/moon.md": "# The Moon\n\nAstronauts landed on the Moon in 1969; its craters were made by meteorite "
    "impacts over billions of years.\n",
}


@pytest.fixture(scope="module")
def minilm():
    from testmodels.build import minilm_gguf

    return str(minilm_gguf())


def configure(env: dict, model: str, threads: int | None = 1, **extra) -> None:
    cfg = os.path.join(env["GNO_HOME"], "config", "config.toml")
    os.makedirs(os.path.dirname(cfg), exist_ok=True)
    lines = ["[models]", f'embed = "file:{model}"'] + ([f"threads = {threads}"] if threads else [])
    lines += [f"{k} = {v}" for k, v in extra.items()]
    with open(cfg, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_topics(root) -> None:
    for rel, text in TOPICS.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def write_notes(folder, n: int):
    """`n` short notes of ~100 tokens each: a backlog of n chunks."""
    folder.mkdir()
    for i in range(n):
        (folder / f"n{i:03d}.md").write_text(f"# Note {i}\n\n" + "Some words about topic number %d. " % i * 10)
    return folder


def top_paths(daemon, query: str, n: int = 3, collections: list[str] | None = None) -> list[str]:
    res = daemon.result("vsearch", {"query": query, "limit": n, "collections": collections or []})
    return [h["path"] for h in res["hits"]]


@pytest.fixture
def embedded(env, tmp_path, minilm):
    configure(env, minilm)
    write_topics(tmp_path / "notes")
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "notes", "path": str(tmp_path / "notes")})
        res = d.result("embed", {}, timeout=120)
        assert res["pending"] == 0, res
        yield d, tmp_path / "notes"
    finally:
        d.stop()


def test_vsearch_finds_by_meaning(embedded):
    d, _ = embedded
    # No query word occurs in the expected document.
    assert top_paths(d, "feline pets napping", 1) == ["pets/cats.md"]
    assert top_paths(d, "baking a loaf", 1) == ["cooking/bread.md"]
    assert set(top_paths(d, "planets and astronomy", 2)) == {"space/mars.md", "space/moon.md"}
    res = d.result("vsearch", {"query": "puppy walks", "limit": 6})
    scores = [h["score"] for h in res["hits"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert res["hits"][0]["path"] == "pets/dogs.md" and "postman" in res["hits"][0]["text"]
    st = d.result("status")
    assert st["vectors"]["available"] and st["vectors"]["pending"] == 0
    assert st["vectors"]["embedded"] == st["vectors"]["chunks"] == len(TOPICS)
    embed_model = next(m for m in st["models"] if m["role"] == "embed")
    assert embed_model["state"] == "ready" and embed_model["size_bytes"] > 1_000_000


def test_similar_uses_the_documents_vectors(embedded):
    d, _ = embedded
    res = d.result("similar", {"ref": "notes/space/mars.md", "limit": 3})
    assert res["method"] == "vector" and res["terms"] == []
    paths = [h["path"] for h in res["hits"]]
    assert paths[0] == "space/moon.md" and "space/mars.md" not in paths
    assert all(0 <= h["score"] <= 1 for h in res["hits"])


def test_filter_returns_full_n(embedded, tmp_path):
    d, _ = embedded
    other = tmp_path / "other"
    other.mkdir()
    for i in range(5):
        (other / f"o{i}.md").write_text(f"# Dog story {i}\n\nA dog named Rex number {i} barks at the postman.\n")
    d.result("collection.add", {"name": "other", "path": str(other)})
    d.result("embed", {}, timeout=120)
    # Unfiltered, the dog stories crowd the top; filtered to notes we still get 4 of notes.
    hits = d.result("vsearch", {"query": "dog barking", "limit": 4, "collections": ["notes"]})["hits"]
    assert len(hits) == 4 and {h["collection"] for h in hits} == {"notes"}
    hits = d.result("vsearch", {"query": "dog barking", "limit": 3, "collections": ["other"]})["hits"]
    assert len(hits) == 3 and {h["collection"] for h in hits} == {"other"}
    reply = d.rpc("vsearch", {"query": "x", "collections": ["nope"]})
    assert reply["error"]["code"] == wire.NOT_FOUND
    # The other filters are applied inside the KNN as well.
    hits = d.result("vsearch", {"query": "dog barking", "limit": 2, "filters": {"path": "space/*"}})["hits"]
    assert sorted(h["path"] for h in hits) == ["space/mars.md", "space/moon.md"]


def test_changes_are_embedded_in_the_background_and_deletes_drop_vectors(embedded):
    d, notes = embedded
    (notes / "space" / "jupiter.md").write_text(
        "# Jupiter\n\nThe largest planet is a gas giant with a great red storm and dozens of moons.\n"
    )
    assert wait_until(lambda: "space/jupiter.md" in top_paths(d, "gas giant planet storm", 1), 60, 0.2)
    (notes / "pets" / "cats.md").unlink()
    assert wait_until(lambda: "pets/cats.md" not in top_paths(d, "feline pets napping", 6), 60, 0.2)
    st = d.result("status")["vectors"]
    assert wait_until(lambda: d.result("status")["vectors"]["pending"] == 0, 60, 0.2), st
    st = d.result("status")["vectors"]
    assert st["embedded"] == st["chunks"] == len(TOPICS)


def test_vectors_persist_across_restart(embedded, env):
    d, _ = embedded
    before = d.result("vsearch", {"query": "baking a loaf", "limit": 3})["hits"]
    d.stop()
    again = start_gnod(env)
    try:
        assert wait_until(lambda: again.result("status")["vectors"]["available"], 60, 0.05)
        assert again.result("status")["vectors"]["serving"].startswith("file:")
        after = again.result("vsearch", {"query": "baking a loaf", "limit": 3})["hits"]
        assert [h["path"] for h in after] == [h["path"] for h in before]
        assert [h["score"] for h in after] == pytest.approx([h["score"] for h in before], abs=1e-5)
    finally:
        again.stop()


def test_force_re_embeds_everything(embedded):
    d, _ = embedded
    res = d.result("embed", {"force": True}, timeout=120)
    assert res["embedded"] == len(TOPICS) and res["pending"] == 0
    assert top_paths(d, "feline pets napping", 1) == ["pets/cats.md"]


def test_crash_mid_backlog_resumes_without_duplicates(env, tmp_path, minilm):
    configure(env, minilm)
    notes = tmp_path / "many"
    notes.mkdir()
    for i in range(300):
        (notes / f"n{i:03d}.md").write_text(f"# Note {i}\n\nItem {i}: " + "a short sentence about things. " * 8 + "\n")
    d = start_gnod(env)
    d.result("collection.add", {"name": "many", "path": str(notes)})
    assert wait_until(lambda: d.result("status")["vectors"]["embedded"] >= 16, 60, 0.05)
    workers = children(d.proc.pid)  # 300 files went through the ingest process pool
    assert workers
    os.kill(d.proc.pid, signal.SIGKILL)
    d.proc.wait(10)
    d.stop()
    # A killed gnod cannot shut its pool down: the workers must leave on their own.
    assert wait_until(lambda: not any(alive(w) for w in workers), 10), "ingest workers outlived gnod"
    again = start_gnod(env)
    try:
        assert wait_until(lambda: again.result("status")["vectors"]["embedded"] >= 16, 60, 0.05)
        res = again.result("embed", {}, timeout=200)
        assert res["pending"] == 0
        st = again.result("status")["vectors"]
        assert st["embedded"] == st["chunks"] == 300 and st["knn"] == "exact"
    finally:
        again.stop()
    assert checkpoint_ids(env) == vec0_ids(env) and len(vec0_ids(env)) == 300
    # Deleted, then killed (before or after the checkpoint that follows): the next start
    # brings the checkpoint level with SQLite.
    third = start_gnod(env)
    try:
        for i in range(50):
            (notes / f"n{i:03d}.md").unlink()
        assert wait_until(lambda: third.result("status")["vectors"]["chunks"] == 250, 60, 0.05)
        os.kill(third.proc.pid, signal.SIGKILL)
        third.proc.wait(10)
    finally:
        third.stop()
    fourth = start_gnod(env)
    try:
        assert wait_until(lambda: fourth.result("status")["vectors"]["embedded"] == 250, 60, 0.05)
        hits = fourth.result("vsearch", {"query": "a short sentence about things", "limit": 300})["hits"]
        assert len(hits) == 250 and all(int(h["path"][1:4]) >= 50 for h in hits)
    finally:
        fourth.stop()
    assert checkpoint_ids(env) == vec0_ids(env) and len(vec0_ids(env)) == 250
    # A checkpoint ahead of SQLite (vectors it lacks): they leave the index and are embedded again.
    data, _uri, table, _dim = _vec_model(env)
    import apsw

    from gnod.store.vectors import load_extension

    conn = apsw.Connection(os.path.join(data, "index.sqlite"))
    conn.enable_load_extension(True)
    assert load_extension(conn) is None
    gone = vec0_ids(env)[:10]
    with conn:
        conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", ((i,) for i in gone))
    conn.close()
    assert set(gone) <= set(checkpoint_ids(env))
    fifth = start_gnod(env)
    try:
        res = fifth.result("embed", {}, timeout=120)
        assert res["pending"] == 0 and res["embedded"] == 250
    finally:
        fifth.stop()
    assert checkpoint_ids(env) == vec0_ids(env) and len(vec0_ids(env)) == 250


def _vec_model(env) -> tuple[str, str, str, int]:
    import apsw

    data = os.path.join(env["GNO_HOME"], "data")
    conn = apsw.Connection(os.path.join(data, "index.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        ((uri, table, dim),) = conn.execute("SELECT uri, table_name, dim FROM vec_models").fetchall()
    finally:
        conn.close()
    return data, uri, table, dim


def vec0_ids(env) -> list[int]:
    """The chunk ids with a vector in SQLite (the source of truth)."""
    import apsw

    data, _uri, table, _dim = _vec_model(env)
    conn = apsw.Connection(os.path.join(data, "index.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return sorted(r[0] for r in conn.execute(f"SELECT rowid FROM {table}_rowids"))
    finally:
        conn.close()


def checkpoint_ids(env) -> list[int]:
    """The chunk ids the vectors' checkpoint beside the database holds."""
    from gnod.store.vector_folder import VectorFolder, folder_for

    data, uri, table, dim = _vec_model(env)
    index, loaded = VectorFolder(folder_for(data, table), uri, dim).open()
    assert loaded
    return index.ids().tolist()


def test_status_answers_while_embedding(env, tmp_path, minilm, run_cli):
    configure(env, minilm)
    notes = write_notes(tmp_path / "many", 200)
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "many", "path": str(notes)})
        assert wait_until(lambda: d.result("status")["vectors"]["embedding"], 60, 0.02)
        # Until the first embedding completes, vector search and status say how far it is.
        err = d.rpc("vsearch", {"query": "topic"})["error"]
        assert err["code"] == wire.MODEL_UNAVAILABLE
        under_way = r"the first embedding is under way \(\d+ of 200 chunks"
        assert re.search(under_way, err["message"]), err
        assert re.search(under_way, d.result("status")["vectors"]["reason"])
        line = re.search(r"^vectors: .*", run_cli("status", "--human", env=d.env).stdout, re.M)
        assert line and re.search(under_way, line[0]) and "pull" not in line[0], line
        worst = 0.0
        while d.result("status")["vectors"]["embedding"]:
            t0 = time.monotonic()
            d.result("status")
            worst = max(worst, time.monotonic() - t0)
        # Generous: the point is that status is not queued behind the backlog (seconds).
        assert worst < 1.0, worst
    finally:
        d.stop()


def test_threads_are_measured_on_the_backlog_unless_the_config_sets_them(env, tmp_path, minilm, run_cli):
    configure(env, minilm, threads=None)
    notes = write_notes(tmp_path / "many", 120)
    d = start_gnod(env)
    try:
        fresh = d.result("status")["threads"]
        assert fresh["fixed"] is False and fresh["rates"] == []
        assert fresh["count"] == max(1, (os.cpu_count() or 1) // 2)
        assert (
            f"threads: {fresh['count']} (half the cores until measured"
            in run_cli("status", "--human", env=d.env).stdout
        )
        d.result("collection.add", {"name": "many", "path": str(notes)})
        assert d.result("embed", {}, timeout=120)["pending"] == 0
        th = d.result("status")["threads"]
        cpus = os.cpu_count() or 1
        tried = {r["threads"] for r in th["rates"]}
        assert tried == {1, max(1, cpus // 2), cpus}, th
        assert th["count"] in tried and all(r["tokens_per_s"] > 0 for r in th["rates"])
        status = run_cli("status", "--human", env=d.env).stdout
        assert re.search(rf"^threads: {th['count']} \(measured: 1 → [\d,]+ tokens/s", status, re.M), status
        configure(env, minilm, threads=1)
        d.result("collection.list")  # reloads the config
        th = d.result("status")["threads"]
        assert th == {"count": 1, "fixed": True, "rates": []}, th
        by = {c["component"]: c for c in cli_json("doctor", "--json", env=d.env)["checks"]}
        assert by["threads"]["detail"].endswith("1 (set by [models] threads)"), by["threads"]
    finally:
        d.stop()


def test_a_background_embedding_call_takes_what_the_model_embeds_in_half_a_second():
    """The model thread runs one call at a time: a query's embedding waits for the
    background call under way, so a call takes as many chunks as the last one's speed
    fits in EMBED_CALL_S (a slow model one at a time, a fast one up to BATCH)."""
    from gnod.search.constants import EMBED_CALL_S
    from gnod.server.vectors import BATCH, _call_size

    assert _call_size(16, 12.0) == 1  # 1.3 chunks a second
    assert _call_size(4, 4 * EMBED_CALL_S / 3) == 3
    assert _call_size(1, 0.001) == BATCH
    assert _call_size(8, 0.0) == BATCH


def test_background_embedding_turned_off_stops_mid_backlog_and_says_so(env, tmp_path, minilm):
    """`embed_in_background = false` saved while a backlog was being embedded: gnod said
    the config changed and went on embedding until a restart, then said `no vectors yet`
    beside the chunks embedded. It stops after the call under way, and says why vector
    search waits and how far it got."""
    configure(env, minilm, embed_in_background="true")
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(600):
        (notes / f"n{i:03d}.md").write_text(f"# Note {i}\n\nA note about the harbour, ferry {i} and its timetable.\n")
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "notes", "path": str(notes)})
        assert wait_until(lambda: d.result("status")["vectors"]["embedded"] > 0, 60)
        cfg = os.path.join(env["GNO_HOME"], "config", "config.toml")
        with open(cfg) as f:
            text = f.read()
        with open(cfg, "w") as f:
            f.write(text.replace("embed_in_background = true", "embed_in_background = false"))
        d.result("collection.list")  # reloads the config
        assert wait_until(lambda: not d.result("status")["vectors"]["embedding"], 30)
        stopped = d.result("status")["vectors"]["embedded"]
        time.sleep(1.0)
        vectors = d.result("status")["vectors"]
        assert vectors["embedded"] == stopped < 600, vectors
        err = d.rpc("vsearch", {"query": "ferry"})["error"]
        assert err["code"] == wire.MODEL_UNAVAILABLE
        assert (
            f"background embedding is off ([models] embed_in_background = false): {stopped:,} of 600" in err["message"]
        )
        assert "gnoctl embed" in err["message"]
        # doctor gives the reason's own fix (it said `gnoctl models pull embed` of a file on disk).
        by = {c["component"]: c for c in cli_json("doctor", "--json", env=d.env)["checks"]}
        assert (
            by["vectors"]["detail"].startswith("background embedding is off") and by["vectors"]["fix"] == "gnoctl embed"
        )
    finally:
        d.stop()


def test_embed_on_request_and_notes_on_what_vectors_miss(env, tmp_path, minilm, run_cli):
    configure(env, minilm, embed_in_background="false")
    notes = tmp_path / "notes"
    write_topics(notes)
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "notes", "path": str(notes)})
        err = d.rpc("vsearch", {"query": "feline"})["error"]  # nothing embeds by itself
        assert err["code"] == wire.MODEL_UNAVAILABLE and "fix: gnoctl embed" in err["message"]
        assert err["data"]["details"] == {"role": "embed", "fix": "gnoctl embed"}  # as other roles' give it
        # `embed` embeds the backlog even with background embedding off.
        res = d.result("embed", {}, timeout=120)
        assert (res["embedded"], res["pending"]) == (len(TOPICS), 0)
        assert d.result("vsearch", {"query": "feline"})["notes"] == []

        (notes / "pets" / "parrots.md").write_text("# Parrots\n\nParrots mimic human speech and live for decades.\n")
        d.result("index", {"collection": "notes"})
        assert wait_until(lambda: d.result("status")["vectors"]["pending"] == 1, 10)
        said = "1 chunk is not embedded yet: vector search may miss the newest documents"
        assert d.result("vsearch", {"query": "talking birds"})["notes"] == [said]
        notes = d.result("query", {"query": "talking birds", "expand": False, "rerank": False})["notes"]
        share = len(TOPICS) * 100 // (len(TOPICS) + 1)  # one chunk each
        assert said in notes and f"vector results weigh in as the share of chunks embedded so far ({share}%)" in notes
        r = run_cli("vsearch", "talking birds", "--md", env=d.env)
        assert r.returncode == 0 and f"- note: {said}" in r.stdout

        d.result("embed", {}, timeout=60)
        res = d.result("vsearch", {"query": "talking birds", "limit": 1})
        assert res["notes"] == [] and res["hits"][0]["path"] == "pets/parrots.md"
    finally:
        d.stop()


def test_without_a_model_vsearch_says_why_and_lexical_still_works(daemon, corpus):
    # Default config: the preset's embedder is not downloaded on this machine.
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    reply = daemon.rpc("vsearch", {"query": "deploy"})
    err = reply["error"]
    assert err["code"] == wire.MODEL_UNAVAILABLE
    assert "not downloaded" in err["message"] and "gnoctl models pull" in err["message"]
    assert "fix" not in err.get("details", {})  # the message's own fix, said once (a second one contradicted it)
    assert daemon.result("search", {"query": "deploy"})["hits"]
    st = daemon.result("status")
    assert st["vectors"]["available"] is False and "not downloaded" in st["vectors"]["reason"]
    embed = next(m for m in st["models"] if m["role"] == "embed")
    assert embed["state"] == "missing" and embed["fix"] == "gnoctl models pull embed"


def test_cli_vsearch_embed_and_doctor(embedded, run_cli):
    d, _ = embedded
    res = cli_json("vsearch", "feline", "pets", "napping", "-n", "2", "--json", env=d.env)
    assert res["hits"][0]["path"] == "pets/cats.md" and len(res["hits"]) == 2
    r = run_cli("vsearch", "feline pets", "--md", env=d.env)
    assert r.returncode == 0 and "pets/cats.md" in r.stdout
    r = run_cli("vsearch", "feline pets", "--files", env=d.env)
    assert r.stdout.splitlines()[0].endswith("pets/cats.md")
    assert cli_json("embed", "--json", env=d.env)["pending"] == 0
    doc = cli_json("doctor", "--json", env=d.env)
    by = {c["component"]: c for c in doc["checks"]}
    assert by["vectors"]["status"] == "ok" and by["model embed"]["status"] == "ok"
    # The preset's reranker is not downloaded here: a warning with the fix, not "ok".
    assert by["model rerank"]["status"] == "warn"
    assert "gnoctl models pull rerank" in by["model rerank"]["fix"]


def test_pull_from_a_hub_then_vsearch(env, tmp_path, minilm, run_cli):
    """The user's path: choose an hf: model, pull it (from a loopback fake hub), search."""
    from test_models_pull import FakeHub

    hub = FakeHub()
    hub.add(open(minilm, "rb").read(), repo="acme/minilm-GGUF", filename="all-minilm-l6-v2-f32.gguf")
    env = dict(env, HF_ENDPOINT=hub.endpoint, HF_HOME=str(tmp_path / "hf"), HF_HUB_DISABLE_TELEMETRY="1")
    uri = "hf:acme/minilm-GGUF/all-minilm-l6-v2-f32.gguf"
    write_topics(tmp_path / "notes")
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "notes", "path": str(tmp_path / "notes")})
        r = run_cli("models", "use", f"embed={uri}", env=env)
        assert r.returncode == 0 and uri in r.stdout
        assert wait_until(lambda: "not downloaded" in (d.result("status")["vectors"]["reason"] or ""), 30, 0.1)
        r = run_cli("models", "pull", "embed", "--json", env=env)
        assert r.returncode == 0, r.stderr
        listed = cli_json("models", "list", "--json", env=env)
        embed = next(m for m in listed["models"] if m["role"] == "embed")
        assert embed["uri"] == uri and embed["cached"] and embed["path"].startswith(env["GNO_HOME"])
        assert embed["size_bytes"] == os.path.getsize(minilm)
        assert d.result("embed", {}, timeout=120)["pending"] == 0
        assert top_paths(d, "feline pets napping", 1) == ["pets/cats.md"]
        r = run_cli("models", "pull", "all", env=env)  # the preset's other roles are not on the fake hub
        assert r.returncode == 2 and "bge-reranker" in r.stdout + r.stderr
    finally:
        d.stop()
        hub.close()


def test_switching_model_keeps_old_vectors_serving_until_new_are_complete(embedded, env, tmp_path, minilm):
    d, _ = embedded
    copy = tmp_path / "minilm-copy.gguf"
    copy.write_bytes(open(minilm, "rb").read())
    old = d.result("status")["vectors"]["serving"]
    d.result("models.use", {"role": "embed", "uri": f"file:{copy}"})
    seen_serving = set()

    def switched() -> bool:
        v = d.result("status")["vectors"]
        seen_serving.add(v["serving"])
        assert top_paths(d, "baking a loaf", 1) == ["cooking/bread.md"]  # never a gap
        return v["serving"] == f"file:{copy}" and v["pending"] == 0

    assert wait_until(switched, 120, 0.05)
    assert seen_serving <= {old, f"file:{copy}"}
    assert d.result("vsearch", {"query": "puppy", "limit": 1})["model"] == f"file:{copy}"
    reply = d.rpc("models.use", {"role": "embed", "uri": "hf:nope"})
    assert reply["error"]["code"] == wire.INVALID_PARAMS and "models.embed" in reply["error"]["message"]


def test_gpu_layers_are_configurable_and_doctor_says_what_the_build_can_do(env, tmp_path, minilm, run_cli):
    configure(env, minilm, gpu_layers="-1")
    write_topics(tmp_path / "notes")
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "notes", "path": str(tmp_path / "notes")})
        assert d.result("embed", {}, timeout=120)["pending"] == 0
        assert top_paths(d, "feline pets napping", 1) == ["pets/cats.md"]  # loaded with the setting
        gpu = d.result("status")["gpu"]
        assert gpu["gpu_layers"] == -1 and isinstance(gpu["offload_supported"], bool)
        r = run_cli("doctor", "--json", env=env)
        check = next(c for c in json.loads(r.stdout)["checks"] if c["component"] == "gpu")
        if gpu["offload_supported"]:
            assert check["status"] == "ok" and "GPU 0 (all layers)" in check["detail"]
        else:  # a CPU-only build: the layers stay on the CPU, and doctor says how to rebuild
            assert check["status"] == "warn" and "no GPU support" in check["detail"]
            assert "GGML_CUDA" in check["fix"]
    finally:
        d.stop()


def test_max_memory_unloads_the_idle_model_first(minilm, tmp_path):
    """Two real models that do not both fit the budget: loading the second unloads the
    idle first one; a model in use is never unloaded."""

    from gnod.config import ModelsConfig
    from gnod.models.manager import Models
    from testmodels.build import smollm2_gguf

    size = os.path.getsize(minilm) + os.path.getsize(smollm2_gguf())
    budget_mb = size // (1024 * 1024) - 10  # one fits, both do not
    cfg = ModelsConfig(embed=f"file:{minilm}", generate=f"file:{smollm2_gguf()}", threads=1, max_memory_mb=budget_mb)

    async def scenario() -> tuple[dict, dict]:
        models = Models(cfg, str(tmp_path / "cache"))
        try:
            await models.get("embed")
            await models.get("generate")
            first = {m.role: m.state for m in models.infos() if m.role != "rerank"}
            # The generator busy answering: loading the embedder again cannot unload it.
            answering = asyncio.create_task(
                models.run(
                    "generate", lambda m: m.generate([{"role": "user", "content": "Count to ten."}], max_tokens=24)
                )
            )
            await asyncio.sleep(0.05)
            await models.get("embed")
            await answering
            second = {m.role: m.state for m in models.infos() if m.role != "rerank"}
            return first, second
        finally:
            models.close()

    first, second = asyncio.run(scenario())
    assert first == {"embed": "unloaded", "generate": "ready"}
    assert second == {"embed": "ready", "generate": "ready"}


def test_the_models_are_listed_in_the_order_of_their_roles_whichever_was_asked_for_first(minilm, tmp_path):
    """`status` listed the models in the order they were first asked for, which changed
    from run to run."""
    from gnod.config import ModelsConfig
    from gnod.models.base import ModelUnavailable
    from gnod.models.manager import Models

    cfg = ModelsConfig(embed=f"file:{minilm}", generate=f"file:{tmp_path / 'absent.gguf'}", threads=1)

    async def scenario() -> list[str]:
        models = Models(cfg, str(tmp_path / "cache"))
        try:
            with pytest.raises(ModelUnavailable):  # missing: its slot is there all the same
                await models.get("generate")
            return [m.role for m in models.infos()]
        finally:
            models.close()

    assert asyncio.run(scenario()) == ["embed", "rerank", "generate"]


def test_closing_the_manager_frees_each_loaded_model_after_the_call_in_progress(minilm, tmp_path):
    """Shutdown frees llama.cpp's model and context on the model thread (and drops queued work)."""
    from gnod.config import ModelsConfig
    from gnod.models.manager import Models
    from gnod.models.worker import BACKGROUND

    async def scenario():
        models = Models(ModelsConfig(embed=f"file:{minilm}", threads=1), str(tmp_path / "cache"))
        embedder = await models.get("embed")
        texts = ["a paragraph about cells and proteins " * 20] * 64
        running = asyncio.ensure_future(models.run("embed", lambda m: m.embed_documents(texts), BACKGROUND))
        queued = asyncio.ensure_future(models.run("embed", lambda m: m.embed_documents(texts), BACKGROUND))
        await asyncio.sleep(0.05)
        await asyncio.get_running_loop().run_in_executor(None, models.close)
        done = await asyncio.gather(running, queued, return_exceptions=True)
        return embedder, done

    embedder, (running, queued) = asyncio.run(scenario())
    assert embedder._llm._ctx.ctx is None and embedder._llm._model.model is None
    assert len(running) == 64  # the call in progress finished
    assert isinstance(queued, asyncio.CancelledError)


def test_status_reports_gnods_resident_memory(daemon):
    st = daemon.result("status")
    assert st["rss_bytes"] > 10 * 1024 * 1024


def test_vsearch_hits_in_source_code_name_their_definition(env, tmp_path, minilm):
    """A vsearch hit in a source file (its best chunk) names the definition it is in."""
    configure(env, minilm)
    folder = tmp_path / "code"
    folder.mkdir()
    bread = "".join(f"    # knead the dough, let the loaf rise, bake the bread for step {i}\n" for i in range(60))
    dogs = "".join(f"    # walk the puppy in the park, the dog fetches a ball, turn {i}\n" for i in range(60))
    (folder / "chores.py").write_text(
        f"def bake_bread():\n{bread}    return 1\n\n\ndef walk_dog():\n{dogs}    return 2\n"
    )
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "code", "path": str(folder)})
        assert d.result("embed", {}, timeout=120)["pending"] == 0
        assert wait_until(lambda: d.result("status")["symbols"]["parsed"] == 1, 30)
        for query, symbol in (("baking bread", "bake_bread()"), ("puppy in the park", "walk_dog()")):
            hits = d.result("vsearch", {"query": query, "limit": 1})["hits"]
            assert [(h["path"], h["symbol"]) for h in hits] == [("chores.py", symbol)], query
    finally:
        d.stop()
