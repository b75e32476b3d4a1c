"""What each preset model costs on this machine, measured on its random-weight twin.

    python benchmarks/presets.py [--models bge-m3-Q4_K_M,...] [--threads 2,1] [--chunks 32] [--build]

A twin (testmodels/twins.py) has the preset GGUF's architecture, shape, quantization and
vocabulary size with random weights, which llama.cpp's speed does not depend on; twins
are built once into ~/.cache/gno-presetbench (GNO_PRESETBENCH_DIR), never downloaded.
Each model and thread count is measured in a fresh process:

- embed: SciFact abstracts formatted as gnod embeds them, cut to ~250 tokens; gnod's
  batch size, after 4 warm-up chunks. chunks_per_s, and embed_10k_chunks_min (10,000 chunks).
- rerank: (query, ~250-token chunk) pairs as gnod scores them; chunks_per_s, and
  rerank_20_s: the 20 candidates a query reranks (shorter passages in practice: less).
- generate: a chat prompt holding one SciFact abstract (~500 tokens), 32 tokens generated
  (greedy); prompt_tokens_per_s and gen_tokens_per_s as llama.cpp counts them.

Models are loaded and run by gnod's model manager, as in the daemon: load_s and rss_mb are
what `status` shows for a loaded model (rss_mb: resident memory the load added);
rss_after_run_mb also counts what the run allocated. llama.cpp's library itself, loaded
once per daemon, is apart: llama_cpp_import_mb. Lines are NAME_MODEL_tN=.
--models takes twin file names (default: every preset's models); --list shows them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time

from common import REPO, SHARED, emit, twin_cache
from gnod.models import presets
from gnod.search.constants import PIPELINE

CHUNK_TOKENS = 250
GEN_TOKENS = 32
QUERY = "Does vitamin D supplementation lower the risk of respiratory infections in adults?"


def preset_models() -> list[str]:
    """Every preset's model files, embed models first (the figure the default depends on)."""
    from testmodels import twins

    seen: dict[str, str] = {}
    for p in presets.PRESETS.values():
        for role in ("embed", "rerank", "generate"):
            twin = twins.for_uri(p.spec(role).uri)
            seen.setdefault(twin.file, role)
    order = {"embed": 0, "rerank": 1, "generate": 2}
    return sorted(seen, key=lambda f: order[seen[f]])


def scifact(n: int) -> list[tuple[str, str]]:
    out = []
    with open(os.path.join(SHARED, "scifact", "corpus.jsonl"), encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if len(d.get("text", "").split()) >= 250:  # long enough to fill ~250 tokens
                out.append((d.get("title", ""), d["text"]))
            if len(out) == n:
                break
    return out


def cut(text: str, count_tokens, limit: int = CHUNK_TOKENS) -> str:
    """The longest word prefix of `text` within `limit` tokens (the model's own tokenizer)."""
    words = text.split()
    lo, hi = 1, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(" ".join(words[:mid])) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


def rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


async def measure(name: str, path: str, threads: int, n_chunks: int) -> None:
    """One model at one thread count, in this (fresh) process, loaded and run by gnod's
    model manager as the daemon does it (its load time and memory are what status shows)."""
    from gnod.config import ModelsConfig
    from gnod.models.manager import Models
    from gnod.models.worker import BACKGROUND
    from testmodels import twins

    twin = twins.TWINS[name]
    role = twin.role
    uri = f"file:{path}"
    fam = presets.family(uri)
    before_import = rss()
    import llama_cpp  # loaded once per daemon, whatever it loads: not a model's memory

    base = rss()
    models = Models(ModelsConfig(**{role: uri}, threads=threads, idle_unload_s=0), str(twin_cache()))
    try:
        model = await models.get(role)
        info = next(i for i in models.infos() if i.role == role)

        async def run(fn):
            return await models.run(role, fn, BACKGROUND)

        if role == "embed":
            from gnod.server.vectors import BATCH

            texts = [cut(presets.document_prompt(fam, t, x), model.count_tokens) for t, x in scifact(n_chunks + 4)]
            await run(lambda m: m.embed_documents(texts[:4]))  # warm-up: weights paged in, buffers allocated
            body = texts[4:]
            tokens = sum(model.count_tokens(t) for t in body)
            t0 = time.perf_counter()
            for i in range(0, len(body), BATCH):
                batch = body[i : i + BATCH]
                await run(lambda m: m.embed_documents(batch))
            rate = len(body) / (time.perf_counter() - t0)
            figures = {
                "chunks_per_s": rate,
                "tokens_per_chunk": tokens / len(body),
                "embed_10k_chunks_min": 10_000 / rate / 60,
            }
        elif role == "rerank":
            frame = len(model.pair_tokens(QUERY, [""])[0])
            docs = [cut(x, lambda s: len(model.pair_tokens(QUERY, [s])[0]) - frame) for _, x in scifact(n_chunks + 2)]
            await run(lambda m: m.score(QUERY, docs[:2]))  # warm-up
            t0 = time.perf_counter()
            await run(lambda m: m.score(QUERY, docs[2:]))
            rate = (len(docs) - 2) / (time.perf_counter() - t0)
            figures = {"chunks_per_s": rate, "rerank_20_s": PIPELINE.limits.rerank_top_k / rate}
        else:
            ctx = model._llm.ctx  # llama.cpp's own counters: prompt and generated tokens, apart
            await models.generate(presets.chat(fam, "", "Hello"), max_tokens=2)  # warm-up
            title, text = scifact(1)[0]
            user = f"Answer from this source.\n\n[1] {title}\n{text}\n\nQuestion: {QUERY}"
            llama_cpp.llama_perf_context_reset(ctx)
            await models.generate(presets.chat(fam, "You answer from the sources given.", user), max_tokens=GEN_TOKENS)
            perf = llama_cpp.llama_perf_context(ctx)
            figures = {
                "prompt_tokens": perf.n_p_eval,
                "prompt_tokens_per_s": perf.n_p_eval / perf.t_p_eval_ms * 1e3,
                "gen_tokens": perf.n_eval,
                "gen_tokens_per_s": perf.n_eval / perf.t_eval_ms * 1e3,
            }
        grown = rss() - base
    finally:
        models.close()
    key = f"{name}_t{threads}"
    emit(
        **{
            f"file_mb_{name}": os.path.getsize(path) / 1e6,
            f"llama_cpp_import_mb_{key}": (base - before_import) / 2**20,
            f"load_s_{key}": info.load_seconds,
            f"rss_mb_{key}": (info.rss_bytes or 0) / 2**20,
            f"rss_after_run_mb_{key}": grown / 2**20,
        },
        **{f"{k}_{key}": v for k, v in figures.items()},
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="comma-separated twin names (default: every preset's models)")
    ap.add_argument("--threads", default="2,1", help="thread counts, measured in this order")
    ap.add_argument("--chunks", type=int, default=32, help="chunks timed per embed or rerank model")
    ap.add_argument("--list", action="store_true", help="print the twins and their parameter counts")
    ap.add_argument("--build", action="store_true", help="only build the twins (heavy: quantization)")
    ap.add_argument("--measure", help=argparse.SUPPRESS)  # internal: one model, one thread count
    args = ap.parse_args()
    from testmodels import build, twins

    if args.list:
        for name, t in twins.TWINS.items():
            print(f"{name}: {t.arch} {t.role} {t.quant}, {t.params / 1e6:.0f}M parameters")
        return
    if args.measure:
        path = str(build.twin_gguf(args.measure, directory=twin_cache()))
        asyncio.run(measure(args.measure, path, int(args.threads), args.chunks))
        return
    names = args.models.split(",") if args.models else preset_models()
    for name in names:
        build.twin_gguf(name, directory=twin_cache())  # built before any timing
    if args.build:
        return
    for threads in args.threads.split(","):
        for name in names:
            subprocess.run(
                [sys.executable, __file__, "--measure", name, "--threads", threads, "--chunks", str(args.chunks)],
                check=True,
                cwd=REPO,
            )


if __name__ == "__main__":
    main()
