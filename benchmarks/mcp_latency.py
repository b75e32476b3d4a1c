"""Warm MCP tool calls through `gnoctl mcp` over stdio, beside `gnoctl search` in the same run.

    python benchmarks/mcp_latency.py [--corpus DIR] [--runs 60]

Indexes the corpus (default: the Linux tldr pages) in a gnod with the MiniLM test
embedder (kept in .bench/homes/, so only the first run embeds), starts the bridge
with the MCP SDK's own client, warms it, then times `search` and `query`
(expand off) tool calls as the client sees them: mcp_search_p50_ms= / _p90_ms=,
mcp_query_p50_ms= / _p90_ms=. For scale: gnoctl_search_p50_ms= / _p90_ms= (a new
process per query, as an editor pays it), daemon_search_p50_ms= (gnod's own
took_ms) and bridge_rss_mb= (the bridge holds no model and no index).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time

from common import CACHE, REPO, Daemon, emit, models_config, test_model, tldr_pages
from common import percentile as p

QUERIES = [
    "archive files",
    "list directory contents",
    "mount a filesystem",
    "compress",
    "network interface",
    "systemd service logs",
    "search text in files",
    "copy files remotely",
    "disk usage",
    "process list",
    "kill process",
    "download file",
    "change permissions",
    "package manager",
]


def bridge_rss_mb() -> float:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if b"gnoctl.main\0mcp" not in f.read():
                    continue
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) != os.getpid():
                    continue
            with open(f"/proc/{entry}/status") as f:
                kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
            return kb / 1024
        except (OSError, StopIteration):
            continue
    raise SystemExit("bridge process not found")


async def mcp_calls(env: dict, runs: int) -> dict:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "gnoctl.main", "mcp"], env=env, cwd=REPO)
    out: dict = {}
    async with Client(params) as c:
        for tool, args in (("search", {}), ("query", {"expand": False})):
            for q in QUERIES[:5]:  # warm the bridge, the embedder and the page cache
                await c.call_tool(tool, {"query": q, **args})
            wall, daemon = [], []
            for i in range(runs):
                t0 = time.perf_counter()
                r = await c.call_tool(tool, {"query": QUERIES[i % len(QUERIES)], **args})
                wall.append((time.perf_counter() - t0) * 1000)
                if r.is_error:
                    raise SystemExit(f"{tool} failed: {r.content[0].text}")
                daemon.append(r.structured_content["took_ms"])
            out[f"mcp_{tool}_p50_ms"] = p(wall, 0.5)
            out[f"mcp_{tool}_p90_ms"] = p(wall, 0.9)
            out[f"daemon_{tool}_p50_ms"] = p(daemon, 0.5)
        out["bridge_rss_mb"] = bridge_rss_mb()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", help="folder to index (default: tldr pages/linux)")
    ap.add_argument("--runs", type=int, default=60)
    args = ap.parse_args()
    corpus = os.path.abspath(args.corpus or tldr_pages("pages/linux"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", "gnod", "gnoctl"], cwd=REPO, check=True)
    home = os.path.join(CACHE, "homes", f"{os.path.basename(corpus)}-mcp-minilm")
    with Daemon(models_config(test_model("minilm")), home) as d:
        if not any(c["name"] == "bench" for c in d.call("collection.list")["collections"]):
            d.call("collection.add", {"name": "bench", "path": corpus, "index": True})
        d.call("embed", {})
        env = {**d.env, "GNO_NO_AUTOSTART": "1", "PYTHONPATH": REPO}
        emit(runs=args.runs, documents=d.call("status")["documents"], **asyncio.run(mcp_calls(env, args.runs)))
        gnoctl = os.path.join(os.path.dirname(sys.executable), "gnoctl")
        wall = []
        for i in range(args.runs):
            t0 = time.perf_counter()
            r = subprocess.run([gnoctl, "search", QUERIES[i % len(QUERIES)], "--json"], env=env, capture_output=True)
            wall.append((time.perf_counter() - t0) * 1000)
            if r.returncode != 0:
                raise SystemExit(f"gnoctl failed: {r.stderr.decode()}")
        emit(gnoctl_search_p50_ms=p(wall, 0.5), gnoctl_search_p90_ms=p(wall, 0.9))


if __name__ == "__main__":
    main()
