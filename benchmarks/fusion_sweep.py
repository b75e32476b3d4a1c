"""Fusion against labelled queries, offline: gnod's standardized-score fusion vs the RRF it replaced.

    python benchmarks/fusion_sweep.py [--set scifact|tldr] [--model minilm]

Fetches the BM25 and vector lists (ids and scores, 200 deep) of every query once through
a real gnod, then re-fuses them in process: with `gnod.search.fusion.fuse` (the weighted
mean of each list's standardized scores) at several list depths and vector weights, and
with the reciprocal rank fusion gnod used before (k = 60, weights 2 and 2, +0.05 for a #1
and +0.02 for a #2-3 anywhere), re-implemented here for the comparison.

Two sets: `scifact` (the BEIR test split; the index kept by quality.py in .bench/homes) and
`tldr` (held out from every choice made on SciFact: 1,500 English tldr pages, a fixed
sample; each of 300 of them is queried by one of its own example descriptions, e.g.
"Extract a tar archive to a directory", and is the one relevant result). Queries are cut
in two halves by position: each setting prints ndcg@10 on both halves and overall, so a
change that only helps one half shows it.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shutil

from quality import corpus_key, load_beir, materialize, ndcg_at

from common import CACHE, SHARED, Daemon, emit, models_config, test_model, tldr_pages
from gnod.search import fusion
from gnod.search.constants import PIPELINE, Fusion, ListWeights

FETCH = 200
TLDR_PAGES, TLDR_QUERIES, SEED = 1500, 300, 7

Run = tuple[dict[str, int], list[tuple[str, float]], list[tuple[str, float]]]


def scifact() -> tuple[str, dict[str, dict[str, int]], dict[str, str]]:
    data = os.path.join(SHARED, "scifact")
    corpus, queries, qrels = load_beir(data)
    return materialize(corpus_key(data), corpus), qrels, queries


def tldr() -> tuple[str, dict[str, dict[str, int]], dict[str, str]]:
    src = os.path.join(tldr_pages("pages"), "common")
    rng = random.Random(SEED)
    pages = rng.sample(sorted(f for f in os.listdir(src) if f.endswith(".md") and not f.startswith(".")), TLDR_PAGES)
    folder = os.path.join(CACHE, f"tldr-en-{TLDR_PAGES}-{SEED}")
    if not os.path.exists(os.path.join(folder, ".complete")):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for name in pages:
            shutil.copy(os.path.join(src, name), folder)
        open(os.path.join(folder, ".complete"), "w").close()
    qrels, queries = {}, {}
    for name in rng.sample(pages, TLDR_QUERIES):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            examples = [ln[2:].strip().rstrip(":") for ln in f if ln.startswith("- ")]
        if examples:
            queries[name] = rng.choice(examples)
            qrels[name] = {name[:-3]: 1}
    return folder, qrels, queries


def fetch(folder: str, qrels: dict[str, dict[str, int]], queries: dict[str, str], model: str, name: str) -> list[Run]:
    """Each query's BM25 and vector lists, through a real gnod whose index is kept between runs."""
    home = os.path.join(CACHE, "homes", f"{os.path.basename(folder)}-{model}")
    runs = []
    with Daemon(models_config(test_model(model), threads=2), home) as d:
        if not any(c["name"] == name for c in d.call("collection.list")["collections"]):
            d.call("collection.add", {"name": name, "path": folder, "index": True})
        d.call("embed", {})
        client = d.client()
        for qid, rel in qrels.items():
            q = queries[qid]
            bm = client.call("search", {"query": q, "limit": FETCH, "snippets": False})["hits"]
            vec = client.call("vsearch", {"query": q, "limit": FETCH})["hits"]
            runs.append((rel, [(h["path"][:-3], h["score"]) for h in bm], [(h["path"][:-3], h["score"]) for h in vec]))
        client.close()
    return runs


def rrf_before(bm: list[str], vec: list[str]) -> list[str]:
    """The fusion gnod used before: weighted RRF (k 60, weight 2 each) plus the top-rank bonus."""
    score: dict[str, float] = {}
    best: dict[str, int] = {}
    for ids in (bm, vec):
        for rank, doc in enumerate(ids, 1):
            score[doc] = score.get(doc, 0.0) + 2.0 / (60 + rank)
            best[doc] = min(best.get(doc, rank), rank)
    for doc, rank in best.items():
        score[doc] += 0.05 if rank == 1 else 0.02 if rank <= 3 else 0.0
    return sorted(score, key=lambda doc: (-score[doc], best[doc]))


def standardized(bm: list[tuple[str, float]], vec: list[tuple[str, float]], depth: int, pipeline) -> list[str]:
    """gnod's fusion of the lists cut at `depth`, as a query that asked for that many would see them."""
    lists = [
        fusion.RankedList(
            kind=kind,
            source=source,
            doc_ids=[d for d, _ in hits[:depth]],
            scores=[s for _, s in hits[:depth]],
            exhaustive=len(hits) < depth,
        )
        for kind, source, hits in (("original", "bm25", bm), ("variant", "vector", vec))
    ]
    return [str(f.doc_id) for f in fusion.fuse(lists, pipeline)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", default="scifact", choices=["scifact", "tldr"])
    ap.add_argument("--model", default="minilm")
    args = ap.parse_args()
    # The SciFact index is the one quality.py keeps (its collection is called "beir").
    runs = fetch(
        *(scifact() if args.set == "scifact" else tldr()), args.model, "beir" if args.set == "scifact" else "tldr"
    )
    half = len(runs) // 2

    def report(setting: str, ranked) -> None:
        vals = [ndcg_at(ranked(bm, vec), rel, 10) for rel, bm, vec in runs]
        emit(
            setting=setting,
            **{
                "ndcg@10_a": sum(vals[:half]) / half,
                "ndcg@10_b": sum(vals[half:]) / (len(vals) - half),
                "ndcg@10": sum(vals) / len(vals),
            },
        )

    emit(set=args.set, queries=len(runs))
    report("bm25", lambda bm, vec: [d for d, _ in bm])
    report("vector", lambda bm, vec: [d for d, _ in vec])
    report(f"rrf_before,depth={FETCH}", lambda bm, vec: rrf_before([d for d, _ in bm], [d for d, _ in vec]))
    report("rrf_before,depth=20", lambda bm, vec: rrf_before([d for d, _ in bm[:20]], [d for d, _ in vec[:20]]))
    # BM25 keeps the "original" weight, the vector list is weighted through the "variant" slot.
    for depth, wv in itertools.product((20, 50, 100, FETCH), (1.5, PIPELINE.fusion.weights.original, 2.5)):
        p = PIPELINE.__class__(
            fusion=Fusion(weights=ListWeights(original=PIPELINE.fusion.weights.original, variant=wv))
        )
        report(
            f"standardized,depth={depth},vector_weight={wv}",
            lambda bm, vec, depth=depth, p=p: standardized(bm, vec, depth, p),
        )


if __name__ == "__main__":
    main()
