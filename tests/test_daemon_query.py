"""`query` and `ask` end to end through a real gnod with the real test models:
MiniLM (embed), a tiny random-weight cross-encoder (rerank: plumbing only) and
SmolLM2-135M (expansion and answers)."""

from __future__ import annotations

import os
import re

import pytest
from test_daemon_vectors import TOPICS, write_topics

from conftest import start_gnod, wait_until
from gnod import wire
from gnod.search.constants import PIPELINE

pytestmark = pytest.mark.timeout(300)

STAGES = {"bm25", "expand", "bm25_variants", "embed", "vector", "fusion", "rerank", "previews"}


@pytest.fixture(scope="module")
def models():
    from testmodels.build import minilm_gguf, reranker_gguf, smollm2_gguf

    return {"embed": str(minilm_gguf()), "rerank": str(reranker_gguf()), "generate": str(smollm2_gguf())}


def configure(env: dict, models: dict[str, str]) -> None:
    cfg = os.path.join(env["GNO_HOME"], "config", "config.toml")
    os.makedirs(os.path.dirname(cfg), exist_ok=True)
    lines = ["[models]", "threads = 1"] + [f'{role} = "file:{path}"' for role, path in models.items()]
    with open(cfg, "w") as f:
        f.write("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory, models):
    from conftest import cleanup_home, make_env, make_home

    home = make_home()
    env = make_env(home)
    root = tmp_path_factory.mktemp("q")
    configure(env, models)
    write_topics(root / "notes")
    (root / "space").mkdir()
    for rel in ("space/mars.md", "space/moon.md"):
        (root / rel).write_text(TOPICS[rel])
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "notes", "path": str(root / "notes")})
        d.result("collection.add", {"name": "space", "path": str(root / "space")})
        assert d.result("embed", {}, timeout=120)["pending"] == 0
        yield d
    finally:
        d.stop()
        cleanup_home(home)


def query(d, **params) -> dict:
    return d.result("query", params, timeout=120)


def test_query_explain_runs_every_stage(hybrid):
    res = query(hybrid, query="feline pets napping", collections=["notes"], explain=True)
    paths = [h["path"] for h in res["hits"]]
    assert "pets/cats.md" in paths[:3], paths  # the random reranker may move it a little
    scores = [h["score"] for h in res["hits"]]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
    ex = res["explain"]
    stages = {s["name"]: s for s in ex["stages"]}
    assert STAGES <= set(stages), stages
    assert stages["rerank"]["skipped"] is None and stages["vector"]["skipped"] is None
    assert ex["prompt_version"] == "expand-v1"
    assert ex["constants"]["fusion"]["weights"]["original"] == 2.0 and ex["constants"]["score_floor"] == 0.03
    assert ex["models"]["rerank"].endswith(".gguf") and ex["models"]["embed"].endswith(".gguf")
    assert {(x["source"], x["kind"]) for x in ex["lists"]} >= {("bm25", "original"), ("vector", "original")}
    assert res["counts"]["reranked"] == res["counts"]["pool"] <= 20
    assert res["counts"]["returned"] == len(res["hits"])
    assert res["distribution"]["collections"] == {"notes": len(res["hits"])}
    for h in res["hits"]:
        e = h["explain"]
        assert e["contributions"] and e["rerank"] is not None and e["rerank_input"]["chunks"]
        assert (e["fusion_weight"], e["rerank_weight"]) in {(0.75, 0.25), (0.6, 0.4), (0.4, 0.6)}
        assert h["score"] == pytest.approx(
            e["fusion_weight"] * e["fusion_norm"] + e["rerank_weight"] * max(e["rerank"], e["keyword_floor"]), abs=1e-5
        )
        assert abs(e["fusion"] - sum(c["contribution"] for c in e["contributions"])) < 1e-5
        assert h["preview"]["text"]


def test_without_vectors_or_reranker_the_last_hit_is_not_zero(daemon, corpus):
    # The default config's models are not downloaded here: the query is BM25 alone, and its
    # list holds every match, so its last hit still scores above what did not match.
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    res = query(daemon, query="deploy", rerank=False, expand=False)
    scores = [h["score"] for h in res["hits"]]
    assert len(scores) >= 2 and scores[0] == 1.0 and scores[-1] > PIPELINE.score_floor, scores
    kept = query(daemon, query="deploy", rerank=False, expand=False, min_score=scores[-1])
    assert [h["score"] for h in kept["hits"]] == scores


def test_fusion_follows_the_documented_formula(hybrid):
    # Without a reranker the final score is the fusion score over the best the lists allow.
    res = query(hybrid, query="feline pets napping", collections=["notes"], explain=True, rerank=False)
    lists = res["explain"]["lists"]
    total = sum(li["weight"] for li in lists if li["hits"])
    best = (
        sum(
            li["weight"]
            * max(c["standard"] for h in res["hits"] for c in h["explain"]["contributions"] if c["list"] == i)
            for i, li in enumerate(lists)
            if li["hits"]
        )
        / total
    )
    for h in res["hits"]:
        e = h["explain"]
        for c in e["contributions"]:
            li = lists[c["list"]]
            assert li["deviation"] > 0 and c["score"] >= li["floor"] - 1e-6
            # floor and deviation come rounded to 6 decimals: a small deviation magnifies that.
            rounding = 1e-6 * (1 + abs(c["standard"])) / li["deviation"]
            assert c["standard"] == pytest.approx((c["score"] - li["floor"]) / li["deviation"], abs=1e-4 + rounding)
            assert c["contribution"] == pytest.approx(c["weight"] * c["standard"] / total, abs=1e-4)
        assert e["fusion"] == pytest.approx(sum(c["contribution"] for c in e["contributions"]), abs=1e-4)
        assert h["score"] == pytest.approx(min(1.0, e["fusion"] / best), abs=1e-4)
    assert res["hits"][0]["path"] == "pets/cats.md"


def test_expansion_is_cached_and_said_so(hybrid):
    q = "how do astronauts explore craters"
    first = query(hybrid, query=q, explain=True)
    second = query(hybrid, query=q, explain=True)
    if first["expansion"] is None:  # a strong BM25 signal skips expansion: then it says why
        assert any("strong BM25 signal" in n for n in first["notes"])
        return
    assert first["expansion"]["cached"] is False and second["expansion"]["cached"] is True
    assert first["expansion"]["lexical"] == second["expansion"]["lexical"]
    stage = {s["name"]: s for s in second["explain"]["stages"]}["expand"]
    assert stage["skipped"] == "cached reply (no generation)"
    # Rerank scores are cached per (query, passage, model) too.
    reranked = [h["explain"]["rerank_input"] for h in second["hits"] if h["explain"]["rerank_input"]]
    assert reranked and all(r["cached"] for r in reranked)


def test_no_expand_no_rerank_uses_fusion_scores(hybrid):
    res = query(hybrid, query="bread dough oven", explain=True, expand=False, rerank=False)
    stages = {s["name"]: s["skipped"] for s in res["explain"]["stages"]}
    assert stages["expand"] == "--no-expand" and stages["rerank"] == "--no-rerank"
    assert res["hits"][0]["path"] == "cooking/bread.md" and res["expansion"] is None
    top = res["hits"][0]["explain"]
    assert top["rerank"] is None and top["fusion_weight"] == 1.0
    assert res["counts"]["reranked"] == 0


def test_smart_skip_on_few_candidates(hybrid):
    res = query(hybrid, query="volcano rovers", collections=["space"], explain=True, expand=False)
    assert res["counts"]["pool"] == 2 and res["counts"]["reranked"] == 0
    # Said in words a user reads ("smart skip: … synthetic scores capped" was the code's).
    assert "2 matches, too few to rerank: scores are at most 0.70, unchecked by the reranker" in res["notes"]
    assert all(h["score"] <= 0.70 for h in res["hits"]) and res["hits"][0]["path"] == "mars.md"
    assert res["hits"][0]["explain"]["synthetic"] is not None


def test_deep_mode_needs_two_keywords(hybrid):
    reply = hybrid.rpc("query", {"query": "volcano", "mode": "deep"})
    assert reply["error"]["code"] == wire.INVALID_QUERY
    assert "at least 2 keywords" in reply["error"]["message"]
    res = query(hybrid, query="volcano rovers mars", mode="deep", limit=200, expand=False, rerank=False)
    assert res["mode"] == "deep" and any("maximum" in n for n in res["notes"])


def test_unknown_collection_is_not_found(hybrid):
    reply = hybrid.rpc("query", {"query": "x", "collections": ["nope"]})
    assert reply["error"]["code"] == wire.NOT_FOUND


def test_ask_streams_tokens_and_cites_only_given_sources(hybrid):
    with hybrid.connect(timeout=120) as c:
        c.send("ask", {"query": "What do cats do all day?", "collections": ["notes"], "expand": False}, req_id=7)
        tokens = []
        while True:
            msg = c.recv()
            if msg.get("method") == "token":
                assert msg["params"]["id"] == 7
                tokens.append(msg["params"]["text"])
                continue
            if "method" in msg:
                continue
            break
    assert "error" not in msg, msg
    res = msg["result"]
    assert res["considered"] and res["model"].endswith(".gguf")
    assert tokens, "the answer was not streamed"
    if res["abstained"]:
        assert res["answer"] is None and res["abstain_reason"] and res["sources"] == []
    else:
        cited = {int(n) for n in re.findall(r"\[(\d+)\]", res["answer"])}
        assert cited == set(range(1, len(res["sources"]) + 1))
        assert {s["docid"] for s in res["sources"]} <= {s["docid"] for s in res["considered"]}


def _stream_ask(c, query: str, req_id: int, hang_up_after: int | None = None) -> int:
    """Send a streaming ask; count its token frames until the result (or hang up after a few)."""
    c.send("ask", {"query": query, "expand": False, "max_tokens": 1024}, req_id=req_id)
    tokens = 0
    while hang_up_after is None or tokens < hang_up_after:
        msg = c.recv()
        if msg.get("method") == "token":
            tokens += 1
        elif "method" not in msg:
            assert "error" not in msg, msg
            break
    return tokens


def test_ask_stops_generating_when_the_client_hangs_up(hybrid):
    question = "Explain everything about baking bread, step by step, in detail."
    with hybrid.connect(timeout=120) as c:
        full = _stream_ask(c, question, 1)
    assert full >= 20, "the test needs an answer longer than the hang-up point"
    with hybrid.connect(timeout=120) as c:
        _stream_ask(c, question, 2, hang_up_after=3)
    # The abandoned answer (as long as the first, give or take) must end soon after the hang-up.
    said = r"stopped generating after (\d+) tokens"

    def stopped() -> re.Match | None:
        with open(hybrid.paths.log_file) as f:
            return re.search(said, f.read())

    assert wait_until(lambda: stopped() is not None, 30), "no sign the abandoned answer was stopped"
    assert int(stopped().group(1)) <= full // 2  # a few tokens after the hang-up, not the whole answer
    assert hybrid.result("status")["pid"]  # and the daemon answers as before


def test_ask_without_answer_returns_sources(hybrid):
    res = hybrid.result("ask", {"query": "baking bread", "answer": False, "sources": 2, "expand": False}, timeout=120)
    assert res["answer"] is None and not res["abstained"] and res["model"] is None
    assert 1 <= len(res["considered"]) <= 2 and res["considered"][0]["n"] == 1
    assert "bread" in res["considered"][0]["text"].lower()  # the passage itself, for clients to show


def test_ask_fits_sources_of_code_into_the_model_s_context(env, tmp_path):
    """Four passages of code hold more tokens than the generator's 4,096: the sources that
    do not fit beside the answer are left out (the best kept), not sent to fail as an
    internal error; `considered` lists what the model was given. (The test-size twin of
    a preset generator: SmolLM2 reads such a prompt in a minute on one core.)"""
    from testmodels.build import twin_gguf

    configure(env, {"generate": str(twin_gguf("Qwen3-1.7B-Q4_K_M", mini=True))})
    root = tmp_path / "code"
    root.mkdir()
    for i in range(12):
        lines = "".join(
            f"    self._s{i}x{j} = socket.create_connection((h{i}_{j}, {1000 * i + j}), timeout=t{i}y{j})\n"
            for j in range(30)
        )  # words of each file's own: no source repeats another
        (root / f"net{i:02d}.py").write_text(f"def open_sockets_{i}(host):\n{lines}")
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "code", "path": str(root)})
        params = {"query": "socket create_connection timeout", "sources": 4, "expand": False, "max_tokens": 32}
        res = d.result("ask", params, timeout=120)
        assert res["model"].endswith(".gguf")
        assert 1 <= len(res["considered"]) < 4
        assert {s["docid"] for s in res["sources"]} <= {s["docid"] for s in res["considered"]}
    finally:
        d.stop()


def test_missing_models_degrade_with_one_message_each(env, tmp_path):
    write_topics(tmp_path / "notes")  # no [models] config: the preset's files are not downloaded
    for i in range(5):  # enough candidates that the reranker is wanted (no smart skip)
        (tmp_path / "notes" / f"oven{i}.md").write_text(f"# Oven {i}\n\nAn oven heats food; note {i}.\n")
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "notes", "path": str(tmp_path / "notes")})
        res = d.result("query", {"query": "bread oven baking", "explain": True})
        assert res["hits"][0]["path"] == "cooking/bread.md"
        text = " | ".join(res["degraded"])
        assert "no vector search" in text and "no reranker" not in text
        assert any(m.startswith("no generate model") for m in res["degraded"]) or res["expansion"] is None
        assert any(m.startswith("no rerank model") and "gnoctl models pull rerank" in m for m in res["degraded"])
        assert len(res["degraded"]) == len(set(res["degraded"]))
        # A model is named by its file, not its URI of 120 characters, said in every query.
        assert "hf:" not in text and ".gguf is not downloaded" in text
        # Nothing matches: ask abstains instead of failing for the missing generator.
        a = d.result("ask", {"query": "zebra quantum chromodynamics"})
        assert a["abstained"] and "nothing in your collections" in a["abstain_reason"]
        # Something matches but there is no generator: a clear MODEL_UNAVAILABLE with the fix.
        reply = d.rpc("ask", {"query": "bread oven baking"})
        # Said as the protocol and an agent's tool take it, and as gnoctl does.
        said = reply["error"]["message"]
        assert reply["error"]["code"] == wire.MODEL_UNAVAILABLE and "`answer: false` (gnoctl ask --no-answer)" in said
        assert d.alive()
    finally:
        d.stop()


def test_variants_an_agent_wrote_run_the_pipeline_without_a_generator(env, tmp_path, run_cli):
    write_topics(tmp_path / "notes")  # no [models] config: no generator to write variants
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "notes", "path": str(tmp_path / "notes")})
        alone = d.result("query", {"query": "sourdough loaf"})
        assert alone["hits"] == []  # neither word is in any document
        given = {
            "lexical": ["bread dough", "Bread Dough", "sourdough loaf", "flour yeast", "knead", "oven"],
            "semantic": ["how to bake a loaf at home"],
            "hyde": "Knead the dough and bake it.",
        }
        res = d.result("query", {"query": "sourdough loaf", "variants": given, "explain": True})
        assert res["hits"][0]["path"] == "cooking/bread.md"
        exp = res["expansion"]
        assert exp["source"] == "client" and exp["model"] == ""
        # Held to a generator's rules: repeats and the query itself go, then the cap of 3.
        assert exp["lexical"] == ["bread dough", "flour yeast", "knead"]
        assert any(n.startswith("3 given variants left out") for n in res["notes"]), res["notes"]
        stages = {s["name"]: s["skipped"] for s in res["explain"]["stages"]}
        assert stages["expand"] == "variants given by the client"
        assert sum(li["kind"] == "variant" and li["source"] == "bm25" for li in res["explain"]["lists"]) == 3
        # ask takes them too (the sources only: there is no generator to answer).
        a = d.result("ask", {"query": "sourdough loaf", "variants": given, "answer": False})
        assert a["considered"][0]["path"] == "cooking/bread.md"
        bad = d.rpc("query", {"query": "x", "variants": {"lexical": ["a"] * 9}})
        assert bad["error"]["code"] == wire.INVALID_PARAMS
        # gnoctl query --lex/--vec/--hyde, on the fast path and through typer (--help knows them).
        r = run_cli(
            "query",
            "sourdough",
            "loaf",
            "--lex",
            "bread dough",
            "--lex",
            "knead",
            "--vec",
            "bake a loaf",
            "--hyde",
            "Knead the dough.",
            "--files",
            env=env,
        )
        assert r.returncode == 0 and r.stdout.splitlines()[0].endswith("cooking/bread.md"), r
        assert "--lex" in run_cli("query", "--help", env=env).stdout
    finally:
        d.stop()


def test_cli_query_explain_and_ask(hybrid, run_cli):
    from conftest import cli_json

    env = hybrid.env
    res = cli_json("query", "feline", "pets", "napping", "-c", "notes", "--explain", "--json", env=env)
    assert "pets/cats.md" in [h["path"] for h in res["hits"][:3]] and res["explain"]["stages"]
    r = run_cli("query", "bread", "dough", "--no-expand", "--md", env=env)
    assert r.returncode == 0 and "cooking/bread.md" in r.stdout
    r = run_cli("query", "volcano", "--mode", "deep", "--md", env=env)
    assert r.returncode == 2 and "at least 2 keywords" in r.stderr
    r = run_cli("query", "volcano", "--mode", "deep", "--json", env=env)
    assert r.returncode == 2 and '"INVALID_QUERY"' in r.stdout
    r = run_cli("ask", "how", "do", "I", "bake", "bread", "--no-answer", "--files", env=env)
    assert r.returncode == 0 and r.stdout.splitlines()[0].endswith("cooking/bread.md")
    # Colour asked for alone is for a person (`| less -R`): human text, not the pipe's JSON.
    r = run_cli("ask", "how", "do", "I", "bake", "bread", "--no-answer", "--color", "always", env=env)
    assert r.returncode == 0 and "\x1b[" in r.stdout and "cooking/bread.md" in r.stdout
    assert not r.stdout.startswith("{")


def test_a_pasted_page_is_searched_as_written_and_reranked(hybrid):
    filler = " ".join(f"word{i}" for i in range(80))
    page = ("Mix flour, water and yeast, knead the dough and bake the bread in a hot oven. " * 60) + filler
    assert 5_000 < len(page) < 32_000
    res = query(hybrid, query=page, explain=True)
    stages = {s["name"]: s["skipped"] for s in res["explain"]["stages"]}
    assert stages["expand"].startswith("the query is long")
    assert any(n.startswith("expansion skipped: the query is long") for n in res["notes"])
    assert any("64 rarest" in n for n in res["notes"])  # the BM25 list's term cap, passed on
    # The reranker reads the start of the page (half its context), so it still runs.
    assert res["counts"]["reranked"] > 0 and not res["degraded"]
    assert "cooking/bread.md" in [h["path"] for h in res["hits"]]


def test_a_hit_whose_file_failed_since_it_was_indexed_says_so(daemon, corpus):
    """A PDF overwritten by a truncated copy keeps its last good text indexed (nothing is
    lost), and a search found it with no word that the file now fails: search, query and
    get say so, until the file reads again."""
    corpus.write("notes/pastry.md", "# Pastry\n\nCroissants need cold butter.\n")
    daemon.result("collection.add", {"name": "docs", "path": corpus.root})
    with open(corpus.path("notes/pastry.md"), "wb") as f:
        f.write(b"\x00\x01 half written")
    daemon.result("index", {"collection": "docs"})
    said = "docs/notes/pastry.md: its file could not be read since it was indexed (BINARY)"
    for res in (
        daemon.result("search", {"query": "croissants"}),
        query(daemon, query="croissants", rerank=False, expand=False),
    ):
        assert [h["path"] for h in res["hits"]] == ["notes/pastry.md"]
        assert any(n.startswith(said) for n in res["notes"]), res["notes"]
    # So does `get`, which gives that text (it said nothing: a file grown past the size
    # limit read as empty, exit 0).
    doc = daemon.result("get", {"ref": "docs/notes/pastry.md"})
    assert "Croissants" in doc["content"] and doc["notes"] == [
        f"{said}: the document shows the text read last (gnoctl status --errors)"
    ]
    corpus.write("notes/pastry.md", "# Pastry\n\nCroissants need cold butter.\n")
    daemon.result("index", {"collection": "docs"})
    assert not any("could not be read" in n for n in daemon.result("search", {"query": "croissants"})["notes"])
    assert daemon.result("get", {"ref": "docs/notes/pastry.md"})["notes"] == []
