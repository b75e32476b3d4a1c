"""An English collection with a few documents in other languages, with and without `--language`.

    python benchmarks/language_mix.py [--data ../shared/data/scifact] [--percent 3] [--seed 13]

The BEIR corpus (SciFact by default) plus `--percent` % as many tldr pages in other
languages (German, French, Spanish, Portuguese, Italian, Dutch, Swedish, Turkish, in
turn; fixed seed) are copied into one cached folder, which is indexed twice through a
real gnod: once with languages detected per document, once with `--language english`.
The test queries are scored on both; the foreign pages are never relevant, so the two
should rank alike. Prints docs=, foreign_docs=, index languages of the detected run
(languages=), ndcg@10_detected=, ndcg@10_english=, and their difference ndcg@10_gap=.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil

from quality import corpus_key, load_beir, materialize, ndcg_at

from common import CACHE, SHARED, Daemon, emit, tldr_pages
from gnoctl.client import DaemonError

FOREIGN = ("pages.de", "pages.fr", "pages.es", "pages.pt_BR", "pages.it", "pages.nl", "pages.sv",
           "pages.tr")  # fmt: skip
K = 10


def build(data: str, percent: float, seed: int) -> tuple[str, int, int]:
    """(folder, corpus documents, foreign pages): the corpus's documents and the pages
    under `foreign/<language>/`."""
    corpus, _, _ = load_beir(data)
    source = materialize(corpus_key(data), corpus)
    n_foreign = round(len(corpus) * percent / 100)
    folder = os.path.join(CACHE, f"langmix-{corpus_key(data)}-{percent:g}-{seed}")
    if not os.path.exists(os.path.join(folder, ".complete")):
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(source, folder)
        os.remove(os.path.join(folder, ".complete"))
        rng = random.Random(seed)
        pools = {}
        for lang in FOREIGN:
            src = tldr_pages(lang)
            pools[lang] = sorted(
                os.path.join(src, p, name)
                for p in os.listdir(src)
                for name in os.listdir(os.path.join(src, p))
                if name.endswith(".md") and not name.startswith(".")
            )
            rng.shuffle(pools[lang])
        for i in range(n_foreign):
            lang = FOREIGN[i % len(FOREIGN)]
            page = pools[lang][i // len(FOREIGN)]
            dest = os.path.join(folder, "foreign", lang, f"{i}-{os.path.basename(page)}")
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(page, dest)
        open(os.path.join(folder, ".complete"), "w").close()
    return folder, len(corpus), n_foreign


def run(folder: str, data: str, language: str | None) -> tuple[float, list[str]]:
    """(mean nDCG@10 over the test queries, the index's languages)."""
    _, queries, qrels = load_beir(data)
    with Daemon() as d:
        params = {"name": "mix", "path": folder, "index": True}
        if language:
            params["language"] = language
        d.call("collection.add", params)
        languages = d.call("status")["languages"]
        client = d.client()
        try:
            total = 0.0
            for qid, rel in qrels.items():
                try:
                    res = client.call("search", {"query": queries[qid], "limit": K, "snippets": False})
                except DaemonError:
                    res = {"hits": []}
                ranked = [os.path.splitext(h["path"])[0] for h in res["hits"]]
                total += ndcg_at(ranked, rel, K)
        finally:
            client.close()
    return total / len(qrels), languages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(SHARED, "scifact"), help="BEIR folder")
    ap.add_argument("--percent", type=float, default=3.0, help="foreign pages, as a percentage of the corpus")
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    folder, docs, foreign = build(args.data, args.percent, args.seed)
    emit(docs=docs, foreign_docs=foreign)
    detected, languages = run(folder, args.data, None)
    emit(languages=",".join(str(lang) for lang in languages))
    english, _ = run(folder, args.data, "english")
    emit(**{"ndcg@10_detected": detected, "ndcg@10_english": english, "ndcg@10_gap": english - detected})


if __name__ == "__main__":
    main()
