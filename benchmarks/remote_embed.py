"""Embedding through an inference server on loopback vs llama.cpp in process.

    python benchmarks/remote_embed.py [--chunks 200] [--threads 1]

Starts llama-cpp-python's OpenAI-compatible server (`llama_cpp.server`) with the
MiniLM test model, then embeds the same SciFact chunks (formatted as gnod embeds
them) in gnod's batches, once with the local backend and once with the remote one, at
the same thread count. Prints chunks_per_s_local=, chunks_per_s_remote=,
remote_vs_local= and the remote backend's mean request latency
remote_batch_ms=. One warm-up batch each is not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from embed import chunks

from common import emit
from gnod.models import presets, uri
from gnod.models.llama_embed import LlamaEmbedder
from gnod.models.remote import RemoteEmbedder
from gnod.models.threads import Threads
from gnod.server.vectors import BATCH


def _server(model: str, threads: int, folder: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = os.path.join(folder, "server.json")
    with open(config, "w") as f:
        json.dump(
            {
                "host": "127.0.0.1",
                "port": port,
                "models": [
                    {
                        "model": model,
                        "model_alias": "minilm",
                        "embedding": True,
                        "n_threads": threads,
                        "n_threads_batch": threads,
                        "verbose": False,
                    }
                ],
            },
            f,
        )
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--config_file", config],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/models", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("llama_cpp.server did not start")


def _rate(embed, texts: list[str]) -> float:
    embed(texts[:BATCH])  # warm-up
    t0 = time.perf_counter()
    for i in range(BATCH, len(texts), BATCH):
        embed(texts[i : i + BATCH])
    return (len(texts) - BATCH) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    from testmodels.build import minilm_gguf

    path = str(minilm_gguf())
    fam = presets.family(f"file:{path}")
    texts = [presets.document_prompt(fam, t, x) for t, x in chunks(args.chunks + BATCH)]
    local = LlamaEmbedder("local", path, Threads(fixed=args.threads), query_prompt=lambda t: t)
    local_rate = _rate(local.embed_documents, texts)
    local.close()
    with tempfile.TemporaryDirectory() as folder:
        proc, url = _server(path, args.threads, folder)
        try:
            remote = RemoteEmbedder("remote", uri.parse(f"openai+{url}#minilm"), None, lambda t: t)
            latencies: list[float] = []

            def embed(batch: list[str]) -> None:
                remote.embed_documents(batch)
                latencies.append(remote.latency_ms or 0.0)

            remote_rate = _rate(embed, texts)
        finally:
            proc.kill()
            proc.wait()
    emit(
        chunks=args.chunks,
        threads=args.threads,
        chunks_per_s_local=local_rate,
        chunks_per_s_remote=remote_rate,
        remote_vs_local=remote_rate / local_rate,
        remote_batch_ms=sum(latencies[1:]) / max(1, len(latencies) - 1),
    )


if __name__ == "__main__":
    main()
