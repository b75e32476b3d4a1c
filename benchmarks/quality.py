"""Retrieval quality on a BEIR dataset through a real gnod (default: SciFact test split).

    python benchmarks/quality.py --data ../shared/data/scifact --mode lexical
    python benchmarks/quality.py --mode vector --model minilm     # or e5, or a model URI
    python benchmarks/quality.py --mode hybrid [--expand] [--rerank]

Each corpus entry becomes `<id>.md` ("# title" + text) in a cached folder, keyed by
the folder's name and a digest of its corpus file (two BEIR folders never share one), which
is indexed as a collection; every test query is sent as a `search` call (`vsearch` in
vector mode, `query` in hybrid mode — deep mode, so 100 results — after `embed` has
emptied the backlog). Hybrid uses the SmolLM2 test generator with --expand and the
random-weight test reranker with --rerank (plumbing only: its scores are noise). Prints
ndcg@10=, recall@100=, mrr@10=, p50_ms=, p95_ms= (per-call latency in the client),
and queries_with_no_results=.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import sys
import time

from common import CACHE, SHARED, Daemon, emit, models_config, test_model
from gnoctl.client import DaemonError


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


def corpus_key(data: str) -> str:
    """`<folder name>-<digest of corpus.jsonl>`: the cache follows the data, not its path."""
    digest = hashlib.sha256()
    with open(os.path.join(data, "corpus.jsonl"), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return f"{os.path.basename(os.path.abspath(data))}-{digest.hexdigest()[:12]}"


def materialize(key: str, corpus: dict[str, dict]) -> str:
    folder = os.path.join(CACHE, f"beir-{key}")
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
    idcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(SHARED, "scifact"), help="BEIR folder")
    ap.add_argument("--mode", default="lexical", choices=["lexical", "vector", "hybrid"], help="retrieval mode")
    ap.add_argument("--model", default="minilm", help="vector mode: minilm, e5 or a model URI")
    ap.add_argument("--threads", type=int, default=1, help="vector mode: llama.cpp threads")
    ap.add_argument("--expand", action="store_true", help="hybrid mode: LLM query expansion (SmolLM2)")
    ap.add_argument("--rerank", action="store_true", help="hybrid mode: rerank (random test reranker)")
    ap.add_argument("--queries", type=int, default=0, help="only the first N test queries (0: all)")
    ap.add_argument(
        "--fresh",
        action="store_true",
        help="vector/hybrid: embed again instead of reusing the vectors of an earlier run",
    )
    ap.add_argument("--limit", type=int, default=100)
    args = ap.parse_args()
    corpus, queries, qrels = load_beir(args.data)
    folder = materialize(corpus_key(args.data), corpus)
    config = None
    if args.mode != "lexical":
        config = models_config(
            test_model(args.model),
            args.threads,
            test_model("reranker") if args.rerank else None,
            test_model("smollm2") if args.expand else None,
        )
    home = None
    if args.mode != "lexical":  # embedding a corpus takes minutes: keep the index per (data, model)
        home = os.path.join(CACHE, "homes", f"{os.path.basename(folder)}-{args.model.replace('/', '_')}")
        if args.fresh:
            shutil.rmtree(home, ignore_errors=True)
    with Daemon(config, home) as d:
        if any(c["name"] == "beir" for c in d.call("collection.list")["collections"]):
            r = d.call("index", {"collection": "beir"})["collections"][0]
            emit(docs=r["added"] + r["updated"] + r["unchanged"], index_seconds=r["seconds"])
        else:
            r = d.call("collection.add", {"name": "beir", "path": folder, "index": True})["collections"][0]
            emit(docs=r["added"], index_seconds=r["seconds"])
        if args.mode != "lexical":
            e = d.call("embed", {})
            emit(model=e["model"], chunks_embedded=e["embedded"], embed_seconds=e["seconds"])
        client = d.client()
        method, extra = {
            "lexical": ("search", {"snippets": False}),
            "vector": ("vsearch", {}),
            "hybrid": ("query", {"mode": "deep", "expand": args.expand, "rerank": args.rerank}),
        }[args.mode]
        if args.queries:
            qrels = dict(list(qrels.items())[: args.queries])
        ndcg, recall, mrr, lat, empty = [], [], [], [], 0
        for qid, rel in qrels.items():
            t0 = time.perf_counter()
            try:
                res = client.call(method, {"query": queries[qid], "limit": args.limit, **extra})
            except DaemonError as e:  # e.g. a one-keyword query in deep mode: counts as no results
                print(f"query {qid}: {e.name}: {e.message}", file=sys.stderr)
                res = {"hits": []}
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
    if args.mode == "hybrid":
        emit(expand=args.expand, rerank=args.rerank)
    emit(
        mode=args.mode,
        queries=n,
        **{"ndcg@10": sum(ndcg) / n, "recall@100": sum(recall) / n, "mrr@10": sum(mrr) / n},
        p50_ms=lat[n // 2],
        p95_ms=lat[int(n * 0.95)],
        queries_with_no_results=empty,
    )


if __name__ == "__main__":
    main()
