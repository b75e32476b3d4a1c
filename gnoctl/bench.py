"""`gnoctl bench FIXTURE`: how well search, vsearch and query find a user's own expected documents.

A fixture (JSON, or YAML when the file ends in .yaml/.yml) is::

    {"collections": ["notes"],            # optional: search only these
     "queries": [
       {"query": "how do we deploy", "relevant": ["notes/deploy.md"]},
       {"query": "release checklist", "relevant": {"notes/release.md": 2, "notes/tags.md": 1}}]}

`relevant` names documents as `collection/path` (or `gno://collection/path`, or a path
inside its collection); a mapping gives graded relevance (nDCG gains 2^g − 1). Expected
documents the index does not hold are listed in `missing`. Every query is sent once per
mode; a mode the daemon cannot serve (no vectors) is reported as skipped, with the reason.
"""

from __future__ import annotations

import math
import time

from gnoctl.client import Client, DaemonError

K = 10  # nDCG and MRR cut-off


class FixtureError(ValueError):
    """A fixture that cannot be read; the message names the file and the problem."""


def load_fixture(path: str) -> dict:
    """{"collections": [...], "queries": [{"query": str, "relevant": {ref: grade}}]} from a file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise FixtureError(f"cannot read {path}: {e.strerror}") from None
    if path.endswith((".yaml", ".yml")):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise FixtureError(f"{path} is not valid YAML: {e}") from None
    else:
        import json

        try:
            data = json.loads(text)
        except ValueError as e:
            raise FixtureError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("queries"), list) or not data["queries"]:
        raise FixtureError(f"{path}: expected an object with a non-empty list `queries`")
    queries = []
    for i, q in enumerate(data["queries"], 1):
        if not isinstance(q, dict) or not isinstance(q.get("query"), str) or not q["query"].strip():
            raise FixtureError(f"{path}: query {i} needs a non-empty `query` string")
        rel = q.get("relevant")
        if isinstance(rel, str):
            rel = [rel]
        if isinstance(rel, list) and rel and all(isinstance(r, str) for r in rel):
            rel = {r: 1 for r in rel}
        if not (
            isinstance(rel, dict)
            and rel
            and all(isinstance(r, str) and isinstance(g, (int, float)) and g > 0 for r, g in rel.items())
        ):
            raise FixtureError(
                f"{path}: query {i} ({q['query']!r}) needs `relevant`: a document, a list of "
                "documents, or a mapping of documents to positive grades"
            )
        queries.append({"query": q["query"], "relevant": {_ref(r): g for r, g in rel.items()}})
    cols = data.get("collections") or []
    if not isinstance(cols, list) or not all(isinstance(c, str) for c in cols):
        raise FixtureError(f"{path}: `collections` must be a list of collection names")
    return {"collections": cols, "queries": queries}


def _ref(ref: str) -> str:
    return ref[len("gno://") :] if ref.startswith("gno://") else ref.lstrip("/")


def _grade(hit: dict, relevant: dict) -> float:
    return relevant.get(f"{hit['collection']}/{hit['path']}", relevant.get(hit["path"], 0))


def ndcg(grades: list[float], ideal: list[float], k: int = K) -> float:
    """nDCG@k of a ranking's grades against the ideal grades (gain 2^g − 1)."""

    def dcg(gs: list[float]) -> float:
        return sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gs[:k]))

    best = dcg(sorted(ideal, reverse=True))
    return dcg(grades) / best if best else 0.0


def mrr(grades: list[float], k: int = K) -> float:
    return next((1 / (i + 1) for i, g in enumerate(grades[:k]) if g > 0), 0.0)


def recall(grades: list[float], n_relevant: int, k: int) -> float:
    return sum(1 for g in grades[:k] if g > 0) / n_relevant if n_relevant else 0.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def missing(client: Client, fixture: dict) -> list[str]:
    """The expected documents the index does not hold (a typo, a moved file): they can
    only count as not found, and the figures should not say so without a word."""
    names = {c["name"] for c in client.call("collection.list", {})["collections"]}
    out = []
    for ref in dict.fromkeys(r for q in fixture["queries"] for r in q["relevant"]):
        col, _, path = ref.partition("/")
        if not (
            _holds(client, {"prefix": ref}, ref)  # a path inside its collection
            or col in names
            and _holds(client, {"collection": col, "prefix": path}, path)
        ):
            out.append(ref)
    return out


def _holds(client: Client, params: dict, path: str) -> bool:
    return any(e["path"] == path for e in client.call("ls", params)["entries"])


def run(fixture: dict, modes: list[str], k: int, autostart: bool | None = None) -> dict:
    """Every query in every mode; per mode the mean metrics and the latency percentiles."""
    client = Client(autostart=autostart)
    absent = missing(client, fixture)
    out: list[dict[str, object]] = []
    limit = max(k, K)
    for mode in modes:
        params = {"limit": min(limit, 32) if mode == "query" else limit, "collections": fixture["collections"]}
        if mode == "search":
            params["snippets"] = False
        rows, lat, failed = [], [], 0
        skipped = None
        for q in fixture["queries"]:
            t0 = time.perf_counter()
            try:
                res = client.call(mode, {**params, "query": q["query"]})
            except DaemonError as e:
                if e.name == "MODEL_UNAVAILABLE":  # e.g. vsearch without vectors: the mode is skipped
                    skipped = e.message
                    break
                if e.name != "INVALID_QUERY":  # an unknown collection, a daemon error: no figures at all
                    raise
                failed += 1  # counts as no results (e.g. deep mode's keyword minimum)
                res = {"hits": []}
            lat.append((time.perf_counter() - t0) * 1000)
            grades = [_grade(h, q["relevant"]) for h in res["hits"]]
            rel = list(q["relevant"].values())
            rows.append((ndcg(grades, rel), mrr(grades), recall(grades, len(rel), k)))
        if skipped is not None:
            out.append({"mode": mode, "skipped": skipped})
            continue
        n = len(rows)
        scores: dict[str, object] = {
            "mode": mode,
            "queries": n,
            "failed": failed,
            f"ndcg@{K}": round(sum(r[0] for r in rows) / n, 4),
            f"mrr@{K}": round(sum(r[1] for r in rows) / n, 4),
            f"recall@{k}": round(sum(r[2] for r in rows) / n, 4),
            "p50_ms": round(_percentile(lat, 0.5), 2),
            "p95_ms": round(_percentile(lat, 0.95), 2),
        }
        out.append(scores)
    client.close()
    return {"k": k, "modes": out, "missing": absent}
