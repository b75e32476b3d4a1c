"""`models list|pull|use|path|clear` and `embed`: the models and the vectors made with them."""

from __future__ import annotations

from gnoctl.output.common import dump, size


def list_lines(res: dict) -> list[str]:
    """The preset, then each role's model: downloaded or not, its size, loaded or not."""
    lines = [f"preset: {res['preset']} (available: {', '.join(res['presets'])})"]
    loaded = {(m["role"], m["uri"]): m for m in res["loaded"]}
    for m in res["models"]:
        state = loaded.get((m["role"], m["uri"]), {}).get("state", "unloaded")
        shown = size(m["size_bytes"]) if m["cached"] or m["size_bytes"] is None else f"~{size(m['size_bytes'])}"
        cached = "downloaded" if m["cached"] else "not downloaded"
        lines.append(
            f"  {m['role']:<9} {m['uri']}\n  {'':<9} {cached}, {shown}, {state}"
            + (f", licence {m['licence']}" if m.get("licence") else "")
        )
    lines.append(f"cache: {res['cache_dir']}")
    return lines


def pulled_lines(res: dict) -> list[str]:
    return [f"{m['uri']}: {m.get('path') or 'ready'} ({size(m.get('size_bytes'))})" for m in res["pulled"]]


def used_lines(res: dict) -> list[str]:
    """`models use`: the daemon's message one change a line, and what happens to the vectors
    (`embed_ready`: the embed model in use is downloaded)."""
    then = (
        "new vectors are made in the background; the old ones serve until then (gnoctl embed waits for it)"
        if res.get("embed_ready", True)
        else "the embed model is not downloaded: no new vectors until `gnoctl models pull embed`"
    )
    return [res["message"].replace(", ", "\n"), then]


def write_paths(res: dict, fmt: str) -> None:
    """`models path` from a `models.list` result: the cache dir and each role's file."""
    if fmt == "json":
        dump({"cache_dir": res["cache_dir"], "models": {m["role"]: m["path"] for m in res["models"]}})
        return
    print(res["cache_dir"])
    for m in res["models"]:
        print(f"  {m['role']:<9} {m['path'] or '(not downloaded)'}")


def message_lines(res: dict) -> list[str]:
    return [res["message"]]


def embedded_lines(res: dict) -> list[str]:
    return [f"{res['model']}: {res['embedded']} chunks embedded, {res['pending']} pending ({res['seconds']:.1f}s)"]
