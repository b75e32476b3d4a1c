"""Retrieval quality on a BEIR dataset through a real gnod (default: SciFact test split).

    python benchmarks/quality.py --data ../shared/data/scifact --mode lexical
    python benchmarks/quality.py --mode vector --model minilm     # or e5, or a model URI

Each corpus entry becomes `<id>.md` ("# title" + text) in a cached folder, which is
indexed as a collection; every test query is sent as a `search` call (`vsearch` in
vector mode, after `embed` has emptied the backlog). Prints
ndcg@10=, recall@100=, mrr@10=, p50_ms=, p95_ms= (per-call latency in the client),
and queries_with_no_results=.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

from common import CACHE, SHARED, Daemon, emit, models_config, test_model


def load_beir(data: str) -> tuple[dict[str, dict], dict[str, str], dict[str, dict[str, int]]]:
    corpus = {}
    with open(os.path.join(data, "corpus.jsonl"), encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            corpus[d["_id"]] = d
    queries = {}
    with open(os.path.join(data, "queries.jsonl"), encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            queries[q["_id"]] = q["text"]
    qrels: dict[str, dict[str, int]] = {}
    with open(os.path.join(data, "qrels", "test.tsv"), encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    return corpus, queries, qrels


def materialize(name: str, corpus: dict[str, dict]) -> str:
    folder = os.path.join(CACHE, f"beir-{name}")
    marker = os.path.join(folder, ".complete")
    if not os.path.exists(marker):
        os.makedirs(folder, exist_ok=True)
        for did, d in corpus.items():
            title = d.get("title", "").strip().replace("\n", " ")
            body = d.get("text", "").strip()
            with open(os.path.join(folder, f"{did}.md"), "w", encoding="utf-8") as f:
                f.write(f"# {title}\n\n{body}\n" if title else f"{body}\n")
        open(marker, "w").close()
    return folder


def ndcg_at(ranked: list[str], rel: dict[str, int], k: int) -> float:
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum((2 ** r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(SHARED, "scifact"), help="BEIR folder")
    ap.add_argument("--mode", default="lexical", choices=["lexical", "vector"], help="retrieval mode")
    ap.add_argument("--model", default="minilm", help="vector mode: minilm, e5 or a model URI")
    ap.add_argument("--threads", type=int, default=1, help="vector mode: llama.cpp threads")
    ap.add_argument("--limit", type=int, default=100)
    args = ap.parse_args()
    corpus, queries, qrels = load_beir(args.data)
    folder = materialize(os.path.basename(os.path.abspath(args.data)), corpus)
    config = models_config(test_model(args.model), args.threads) if args.mode == "vector" else None
    with Daemon(config) as d:
        r = d.call("collection.add", {"name": "beir", "path": folder, "index": True})["collections"][0]
        emit(docs=r["added"], index_seconds=r["seconds"])
        if args.mode == "vector":
            e = d.call("embed", {})
            emit(model=e["model"], chunks_embedded=e["embedded"], embed_seconds=e["seconds"])
        client = d.client()
        method, extra = ("vsearch", {}) if args.mode == "vector" else ("search", {"snippets": False})
        ndcg, recall, mrr, lat, empty = [], [], [], [], 0
        for qid, rel in qrels.items():
            t0 = time.perf_counter()
            res = client.call(method, {"query": queries[qid], "limit": args.limit, **extra})
            lat.append((time.perf_counter() - t0) * 1000)
            ranked = [h["path"][:-3] for h in res["hits"]]
            if not ranked:
                empty += 1
            ndcg.append(ndcg_at(ranked, rel, 10))
            recall.append(len(set(ranked[:100]) & rel.keys()) / len(rel))
            mrr.append(next((1 / (i + 1) for i, did in enumerate(ranked[:10]) if did in rel), 0.0))
        client.close()
    lat.sort()
    n = len(qrels)
    emit(mode=args.mode, queries=n, **{"ndcg@10": sum(ndcg) / n, "recall@100": sum(recall) / n,
                                       "mrr@10": sum(mrr) / n},
         p50_ms=lat[n // 2], p95_ms=lat[int(n * 0.95)], queries_with_no_results=empty)


if __name__ == "__main__":
    main()
