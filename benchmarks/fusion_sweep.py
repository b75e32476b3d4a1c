"""Fusion constants against SciFact, offline: how RRF k, list weights and the top-rank bonus move ndcg@10.

    python benchmarks/fusion_sweep.py [--model minilm]

Fetches the BM25 and vector lists of every test query once through a real gnod (the
index kept by quality.py in .bench/homes), then re-fuses them in process with
gnod.search.fusion under each setting. To keep the choice honest on a single labelled
split, queries are cut in two halves (by position): each setting prints ndcg@10 on
both halves and overall, so a change that only helps one half shows it.
"""

from __future__ import annotations

import argparse
import itertools
import os

from quality import corpus_key, load_beir, materialize, ndcg_at

from common import CACHE, SHARED, Daemon, emit, models_config, test_model
from gnod.search import fusion
from gnod.search.constants import PIPELINE, BonusTier, Fusion, ListWeights

FETCH = 200


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(SHARED, "scifact"))
    ap.add_argument("--model", default="minilm")
    args = ap.parse_args()
    corpus, queries, qrels = load_beir(args.data)
    folder = materialize(corpus_key(args.data), corpus)
    home = os.path.join(CACHE, "homes", f"{os.path.basename(folder)}-{args.model}")
    runs = []
    with Daemon(models_config(test_model(args.model)), home) as d:
        if not any(c["name"] == "beir" for c in d.call("collection.list")["collections"]):
            d.call("collection.add", {"name": "beir", "path": folder, "index": True})
        d.call("embed", {})
        client = d.client()
        for qid, rel in qrels.items():
            q = queries[qid]
            bm = client.call("search", {"query": q, "limit": FETCH, "snippets": False})["hits"]
            vec = client.call("vsearch", {"query": q, "limit": FETCH})["hits"]
            runs.append((rel, [h["path"][:-3] for h in bm], [h["path"][:-3] for h in vec]))
        client.close()
    half = len(runs) // 2

    def score(pipeline) -> tuple[float, float, float]:
        vals = []
        for rel, bm, vec in runs:
            lists = [fusion.RankedList(kind="original", source="bm25", doc_ids=bm),
                     fusion.RankedList(kind="variant", source="vector", doc_ids=vec)]
            vals.append(ndcg_at([f.doc_id for f in fusion.rrf(lists, pipeline)], rel, 10))
        return sum(vals[:half]) / half, sum(vals[half:]) / (len(vals) - half), sum(vals) / len(vals)

    bonuses = {"seed": PIPELINE.fusion.bonus, "half": (BonusTier(max_rank=1, bonus=0.025),
                                                      BonusTier(max_rank=3, bonus=0.01)), "none": ()}
    # BM25 keeps the "original" weight, the vector list is weighted through the "variant" slot.
    for k, (wb, wv), (bname, tiers) in itertools.product(
            (20, 40, 60, 100), ((2.0, 2.0), (2.0, 1.5), (1.5, 2.0), (2.0, 2.5)), bonuses.items()):
        p = PIPELINE.__class__(fusion=Fusion(k=k, weights=ListWeights(original=wb, variant=wv), bonus=tiers))
        a, b, all_ = score(p)
        emit(setting=f"k={k},bm25={wb},vector={wv},bonus={bname}", **{"ndcg@10_a": a, "ndcg@10_b": b,
                                                                       "ndcg@10": all_})


if __name__ == "__main__":
    main()
