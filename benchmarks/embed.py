"""Embedding throughput of the test models through gnod's llama.cpp embedder.

    python benchmarks/embed.py [--chunks 200] [--threads 1,2]

Chunks are real SciFact abstracts, formatted exactly as gnod embeds them (title
context + the model family's passage prefix). Prints chunks_per_s_<model>_t<n>=
and load_seconds_<model>=; one warm-up batch is not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from common import SHARED, emit
from gnod.models import presets
from gnod.models.llama_embed import LlamaEmbedder
from gnod.models.threads import Threads
from gnod.server.vectors import BATCH


def chunks(n: int) -> list[tuple[str, str]]:
    out = []
    with open(os.path.join(SHARED, "scifact", "corpus.jsonl"), encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            out.append((d.get("title", ""), d.get("text", "")))
            if len(out) == n:
                break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=200)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="minilm,e5")
    args = ap.parse_args()
    from testmodels.build import e5_gguf, minilm_gguf

    builders = {"minilm": minilm_gguf, "e5": e5_gguf}
    data = chunks(args.chunks + BATCH)
    for name in args.models.split(","):
        path = str(builders[name]())
        uri = f"file:{path}"
        fam = presets.family(uri)
        texts = [presets.document_prompt(fam, t, x) for t, x in data]
        for threads in (int(t) for t in args.threads.split(",")):
            t0 = time.perf_counter()
            emb = LlamaEmbedder(
                uri,
                path,
                Threads(fixed=threads),
                lambda q: presets.query_prompt(fam, q),
                pooling=presets.prompts(fam).pooling,
            )
            emit(**{f"load_seconds_{name}_t{threads}": time.perf_counter() - t0})
            emb.embed_documents(texts[:BATCH])  # warm-up
            body = texts[BATCH:]
            tokens = sum(emb.count_tokens(t) for t in body)
            t0 = time.perf_counter()
            for i in range(0, len(body), BATCH):
                emb.embed_documents(body[i : i + BATCH])
            dt = time.perf_counter() - t0
            emit(**{f"chunks_per_s_{name}_t{threads}": len(body) / dt, f"tokens_per_s_{name}_t{threads}": tokens / dt})
            emb.close()


if __name__ == "__main__":
    main()
