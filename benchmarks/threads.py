"""Embedding throughput with fixed and measured llama.cpp thread counts, idle and busy.

    python benchmarks/threads.py [--model multilingual-e5-small-q8_0] [--batches 12] [--busy 1]

The default preset's embedder (its random-weight twin, see benchmarks/presets.py) embeds
SciFact abstracts cut to ~250 tokens in gnod's batches, through gnod's model manager, with
`[models] threads` set to 1, to all the cores, and unset (measured: gnod.models.threads).
Each runs on an idle machine, then beside --busy processes that each keep one core busy
(a compiler, a browser tab, another indexer). Lines: chunks_per_s_<setting>_<idle|busy>=,
embed_10k_chunks_min_<…>= and, for the measured setting, threads_chosen_<…>=.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time

from presets import cut, scifact

from common import emit, twin_cache
from gnod.models import presets


async def run(path: str, threads: int | None, texts: list[str]) -> tuple[float, int]:
    """chunks/s over `texts` in gnod's batches, and the thread count in use at the end."""
    from gnod.config import ModelsConfig
    from gnod.models.manager import Models
    from gnod.models.worker import BACKGROUND
    from gnod.server.vectors import BATCH

    models = Models(ModelsConfig(embed=f"file:{path}", threads=threads, idle_unload_s=0), str(twin_cache()))
    try:
        await models.run("embed", lambda m: m.embed_documents(texts[:4]), BACKGROUND)  # warm-up, not timed
        models.threads.restart()  # the warm-up (weights paged in) is not a measurement
        t0 = time.perf_counter()
        for i in range(0, len(texts), BATCH):
            batch = texts[i : i + BATCH]
            await models.run("embed", lambda m: m.embed_documents(batch), BACKGROUND)
        return len(texts) / (time.perf_counter() - t0), models.threads.count
    finally:
        models.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="twin file name (default: the default preset's embedder)")
    ap.add_argument("--batches", type=int, default=12, help="batches of gnod's size timed per run")
    ap.add_argument("--busy", type=int, default=1, help="processes keeping a core busy in the busy runs")
    args = ap.parse_args()
    from gnod.server.vectors import BATCH
    from testmodels import build, twins

    name = args.model or twins.for_uri(presets.PRESETS[presets.DEFAULT_PRESET].spec("embed").uri).file
    path = str(build.twin_gguf(name, directory=twin_cache()))
    fam = presets.family(f"file:{path}")
    from gnod.models.llama_embed import LlamaEmbedder
    from gnod.models.threads import Threads

    counter = LlamaEmbedder("count", path, Threads(fixed=1), query_prompt=lambda q: q)
    texts = [cut(presets.document_prompt(fam, t, x), counter.count_tokens) for t, x in scifact(args.batches * BATCH)]
    counter.close()
    cpus = os.cpu_count() or 1
    settings = {"t1": 1, f"t{cpus}": cpus, "measured": None}
    for load in ("idle", "busy"):
        hog = [sys.executable, "-c", "while True: pass"]
        hogs = [subprocess.Popen(hog) for _ in range(args.busy if load == "busy" else 0)]
        try:
            for label, threads in settings.items():
                rate, chosen = asyncio.run(run(path, threads, texts))
                key = f"{label}_{load}"
                emit(
                    **{f"chunks_per_s_{key}": rate, f"embed_10k_chunks_min_{key}": 10_000 / rate / 60},
                    **({f"threads_chosen_{key}": chosen} if threads is None else {}),
                )
        finally:
            for h in hogs:
                h.kill()
                h.wait()
    emit(model=name, cpus=cpus, chunks=len(texts))


if __name__ == "__main__":
    main()
