"""`bench`: one row of quality and latency figures per search mode."""

from __future__ import annotations

from gnoctl.bench import K


def table(result: dict) -> str:
    k = result["k"]
    cols = ["mode", "queries", f"ndcg@{K}", f"mrr@{K}", f"recall@{k}", "p50_ms", "p95_ms"]
    lines = ["  ".join(f"{c:>9}" if i else f"{c:<8}" for i, c in enumerate(cols))]
    for m in result["modes"]:
        if "skipped" in m:
            lines.append(f"{m['mode']:<8}  skipped: {m['skipped']}")
            continue
        cells = [f"{m['mode']:<8}", f"{m['queries']:>9}"] + [f"{m[c]:>9.3f}" for c in cols[2:5]]
        cells += [f"{m[c]:>9.1f}" for c in cols[5:]]
        line = "  ".join(cells)
        if m["failed"]:
            line += f"  ({m['failed']} queries failed)"
        lines.append(line)
    if result["missing"]:
        shown = ", ".join(result["missing"][:5]) + (", …" if len(result["missing"]) > 5 else "")
        lines.append(
            f"warning: {len(result['missing'])} expected documents are not in the index and count as not found: {shown}"
        )
    return "\n".join(lines)
