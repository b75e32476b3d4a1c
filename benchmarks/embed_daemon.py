"""In-daemon embedding throughput against raw llama.cpp on the same chunks and threads.

    python benchmarks/embed_daemon.py [--docs 300] [--threads 1] [--model minilm]

Indexes --docs SciFact abstracts (as Markdown files) in a fresh gnod with background
embedding off, reads back the chunks gnod made, and embeds exactly those texts (title
context and passage prefix as gnod formats them) twice: with the embedder alone, in
gnod's batch size, and through gnod (`embed`, which reads, embeds, stores and indexes
every batch). Prints chunks=, raw_chunks_per_s=, daemon_chunks_per_s= and
daemon_vs_raw= (the goal is >= 0.90), and status_rate_per_s=: the rate `status` shows
and divides the backlog by for its ETA (status_rate_vs_daemon= should be ~1). --model
also takes a preset model's random-weight twin, e.g. multilingual-e5-small-q8_0.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from common import SHARED, Daemon, emit, models_config, test_model
from gnod.models import presets
from gnod.models.llama_embed import LlamaEmbedder
from gnod.models.threads import Threads
from gnod.server.vectors import BATCH
from gnod.store.db import connect


def write_docs(folder: str, n: int) -> None:
    with open(os.path.join(SHARED, "scifact", "corpus.jsonl"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i == n:
                break
            d = json.loads(line)
            with open(os.path.join(folder, f"{d['_id']}.md"), "w", encoding="utf-8") as out:
                out.write(f"# {d.get('title', '')}\n\n{d.get('text', '')}\n")


def chunk_texts(db_path: str, family: str) -> list[str]:
    conn = connect(db_path, readonly=True)
    rows = conn.execute(
        """SELECT (SELECT d.title FROM documents d WHERE d.mirror_hash = cc.mirror_hash LIMIT 1),
                  substr(c.markdown, cc.pos + 1, cc.length)
           FROM content_chunks cc JOIN content c ON c.mirror_hash = cc.mirror_hash ORDER BY cc.id"""
    ).fetchall()
    conn.close()
    return [presets.document_prompt(family, t or "", x) for t, x in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model", default="minilm")
    args = ap.parse_args()
    uri = test_model(args.model)
    config = models_config(uri, args.threads) + "embed_in_background = false\n"
    with tempfile.TemporaryDirectory(prefix="gno-embed-") as folder:
        write_docs(folder, args.docs)
        with Daemon(config) as d:
            d.call("collection.add", {"name": "scifact", "path": folder})
            texts = chunk_texts(d.paths.db_file, presets.family(uri))
            t0 = time.perf_counter()
            res = d.call("embed", {})
            daemon_s = time.perf_counter() - t0
            assert res["pending"] == 0, res
            status_rate = d.call("status")["vectors"]["rate_per_s"]  # what status's ETA divides by
    embedder = LlamaEmbedder(uri, uri.removeprefix("file:"), Threads(fixed=args.threads), query_prompt=lambda t: t)
    embedder.embed_documents(texts[:BATCH])  # warm-up, as the daemon's model was loaded by its first batch
    t0 = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        embedder.embed_documents(texts[i : i + BATCH])
    raw_s = time.perf_counter() - t0
    embedder.close()
    raw, daemon = len(texts) / raw_s, res["embedded"] / daemon_s
    emit(
        chunks=len(texts),
        threads=args.threads,
        raw_chunks_per_s=raw,
        daemon_chunks_per_s=daemon,
        daemon_vs_raw=daemon / raw,
        status_rate_per_s=status_rate,
        status_rate_vs_daemon=status_rate / daemon,
    )


if __name__ == "__main__":
    main()
