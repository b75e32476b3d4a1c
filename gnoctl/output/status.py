"""`status`: the daemon, the index, one truthful line per collection, vectors, models."""

from __future__ import annotations

import os
import sys
import time

from gnoctl import fastjson
from gnoctl.output.common import char_columns, columns, duration, pace, pad, size

ERRORS_SHOWN = 5  # the files not indexed that `status` names; `status --errors` names every one


def status_lines(st: dict) -> list[str]:
    """`gnoctl status` for a person: daemon, index, one line per collection, vectors, models."""
    memory = f", {size(st['rss_bytes'])} resident" if st.get("rss_bytes") else ""
    out = [
        f"gnod {st['version']} (pid {st['pid']}, up {duration(st['uptime_s'])}{memory}), protocol {st['protocol']}",
        f"index:  {st['db_path']} ({size(st['db_bytes'])}), {st['documents']:,} documents",
        f"config: {st['config_path']}",
    ]
    lex = st.get("lexical")
    if lex:
        out.append(
            "lexical index: "
            + (
                f"{lex['documents']:,} documents, {size(lex['bytes'])}"
                if lex["ready"]
                else f"being built from the stored documents, {lex['done']:,} of {lex['total']:,} "
                "(searches answer from what it holds so far)"
            )
        )
    load = st.get("load")
    if load:
        lately = (
            f"; last minute: {load['calls']} calls, p50 {load['p50_ms']:.0f} ms, p99 {load['p99_ms']:.0f} ms"
            if load["calls"]
            else ""
        )
        pid = load.get("search_process_pid")
        apart = f"; search process: {load['search_process_searches']} searches (pid {pid})" if pid else ""
        out.append(f"readers: {load['running']} running, {load['queued']} waiting{lately}{apart}")
    langs = [str(x) for x in st["languages"] if x]
    out.append(f"languages: {', '.join(langs) if langs else 'none detected yet'}")
    if st.get("config_error"):
        out.append(f"config error (the last good config is in use): {st['config_error']}")
    if st.get("storage_error"):
        out.append(f"index storage: {st['storage_error']}")
    if st.get("upkeep"):
        out.append(f"upgrade: {st['upkeep']}")
    if not st["collections"]:
        out.append("no collections yet: gnoctl collection add PATH")
    fresh = {f["collection"]: f for f in st.get("freshness", [])}
    width = max((columns(c["name"]) for c in st["collections"]), default=0)
    building = lex is not None and not lex["ready"]
    for c in st["collections"]:
        state = _collection_state(c, st["job"], fresh.get(c["name"]), building)
        errors = f", {c['errors']} failed" if c["errors"] else ""  # the lines below say why
        out.append(f"  {pad(c['name'], width)}  {c['documents']:>7,} docs  {state}{errors}  {c['path']}")
        if c.get("description"):
            out.append(f"  {'':<{width}}  {c['description']}")
    out += _background_lines(st)
    if st.get("threads"):
        out.append("threads: " + threads_line(st["threads"]))
    if st.get("models"):
        out.append("models:")
        for m in st["models"]:
            err = f": {m['error']}" if m.get("error") and m["state"] == "error" else ""
            fix = f" (fix: {m['fix']})" if m.get("fix") and m["state"] in ("missing", "error") else ""
            held = f", {size(m['rss_bytes'])}" if m.get("rss_bytes") and m["state"] == "ready" else ""
            latency = f", {m['latency_ms']:g} ms" if m.get("latency_ms") is not None else ""
            out.append(f"  {m['role']:<9} {m['state']}{held}{latency}{err}  {m['uri']}{fix}")
    out += [error_line(e) for e in st["recent_errors"][:ERRORS_SHOWN]]
    more = st.get("errors_total", 0) - min(len(st["recent_errors"]), ERRORS_SHOWN)
    if more > 0:
        out.append(f"  … {more:,} more file{'s' if more != 1 else ''} not indexed: `gnoctl status --errors` lists them")
    return out


def error_lines(st: dict) -> list[str]:
    """`status --errors`: every file not indexed, the most recent first."""
    return [error_line(e) for e in st["recent_errors"]] or ["no file failed to be indexed"]


def error_line(e: dict) -> str:
    return f"  ! {e['collection']}/{e['path']}: {e['code']}: {e['reason']}"


def _background_lines(st: dict) -> list[str]:
    """What gnod does after indexing: embedding, parsing source code, OCR."""
    out = []
    vec = st.get("vectors")
    if vec:
        out.append("vectors: " + _vectors_line(vec))
    sym = st.get("symbols")
    if sym and (sym["parsed"] or sym["pending"] or sym.get("error")):
        out.append("symbols: " + _symbols_line(sym))
    ocr = st.get("ocr")
    if ocr and (ocr.get("pending") or ocr.get("read") or ocr.get("error")):
        out.append("ocr: " + _ocr_line(ocr))
    return out


class StatusWatch:
    """`status --watch`: each status redrawn in place on a terminal (blank-line separated
    elsewhere), or as one JSON line."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.tty = sys.stdout.isatty()
        self.shown = 0  # lines of the last frame on the terminal

    def __call__(self, st: dict) -> None:
        if self.fmt == "json":
            print(fastjson.dumps(st))  # one status per line (JSON Lines)
        else:
            lines = status_lines(st)
            if self.tty:
                # Going back up to the first line only works if each line took one row and
                # the frame fits: lines are cut to the terminal's width, the frame to its height.
                cols, rows = os.get_terminal_size(sys.stdout.fileno())
                lines = [fit(line, cols - 1) for line in lines[: max(1, rows - 1)]]
            # On a terminal, redraw in place: up to the first line of the last frame, clear.
            prefix = f"\033[{self.shown}F\033[J" if self.tty and self.shown else ""
            sys.stdout.write(prefix + "\n".join(lines) + ("\n" if self.tty else "\n\n"))
            self.shown = len(lines)
        sys.stdout.flush()


def fit(line: str, width: int) -> str:
    """`line` cut to `width` terminal columns (wide characters take two), ending in "…"."""
    if columns(line) <= width:
        return line
    kept, used = [], 0
    for ch in line:
        used += char_columns(ch)
        if used > width - 1:
            break
        kept.append(ch)
    return "".join(kept) + "…"


def _ago(ts: int | None) -> str:
    if not ts:
        return "never"
    s = max(0, int(time.time() - ts))
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n:
            return f"{s // n}{unit} ago"
    return f"{s}s ago"


def _collection_state(c: dict, job: dict, f: dict | None, building: bool = False) -> str:
    """One truthful state: the running index job first, then what the watcher holds (a
    rescan queued while the lexical index is built from the stored documents waits)."""
    if job["running"] and job.get("collection") == c["name"]:
        done, total = job["done"], job["total"]
        if not total:  # the walk has not ended: how many files there are is not known yet
            return "indexing: listing the files"
        return f"indexing {done:,}/{total:,}{pace(job)}"
    indexed = f"indexed {_ago(c['last_indexed_at'])}"
    if f is None:
        return indexed
    if f.get("last_error"):
        return f"watch error: {f['last_error']}"
    if f["indexing"] and building and not job["running"]:
        return "rescan waits for the lexical index to be built"
    if f.get("changes"):  # a batch of changes, which no job counts
        more = f", {f['pending']:,} more pending" if f["pending"] else ""
        return f"indexing {f['changes']:,} changed path{'s' if f['changes'] != 1 else ''}{more}"
    if f["indexing"] or f["pending"]:
        return f"{f['pending']:,} pending" + (", indexing" if f["indexing"] else "")
    if not f["watching"]:
        return f"not watched, {indexed}"
    change = f"last change {_ago(f['last_change_at'])}" if f.get("last_change_at") else indexed
    return f"up to date, watching, {change}"


def threads_line(t: dict) -> str:
    """How many llama.cpp threads the local models use, and why that many."""
    if t["fixed"]:
        why = "set by [models] threads"
    elif t["rates"]:
        why = "measured: " + ", ".join(f"{r['threads']} → {r['tokens_per_s']:,.0f} tokens/s" for r in t["rates"])
    else:
        why = "half the cores until measured: a local embedder measures it on its next backlog"
    return f"{t['count']} ({why})"


def _vectors_line(vec: dict) -> str:
    if not vec["available"]:
        return f"unavailable: {vec['reason']}"
    text = f"{vec['embedded']}/{vec['chunks']} chunks embedded with {vec.get('serving') or vec.get('model')}"
    if vec.get("knn") == "graph":
        text += " (searched through a graph)"
    if vec["pending"]:
        rate = vec.get("rate_per_s")
        speed = ""
        if rate:  # a large model embeds well under 1 chunk/s on a small CPU: keep the digits that show it
            shown = f"{rate:.0f}" if rate >= 10 else f"{rate:.2g}"
            speed = f", {shown} chunks/s, ETA {duration(vec['pending'] / rate)}"
        text += f", {vec['pending']} pending" + (f" (embedding{speed})" if vec["embedding"] else "")
    return text


def _ocr_line(ocr: dict) -> str:
    """The pictures and scans read in the background: how many wait, which are being read."""
    if ocr.get("error"):
        return ocr["error"]
    parts = []
    if ocr["pending"]:
        what = "picture or scan" if ocr["pending"] == 1 else "pictures or scans"
        parts.append(f"{ocr['pending']:,} {what} waiting (found by their names only)")
    if ocr["reading"]:
        parts.append("reading " + ", ".join(ocr["reading"]))
    if ocr["read"]:
        parts.append(f"{ocr['read']:,} read since gnod started")
    return "; ".join(parts)


def _symbols_line(sym: dict) -> str:
    """The definitions read from source files: done, or how many files are left."""
    if sym.get("error"):
        return sym["error"]
    left = ""
    if sym["pending"]:
        speed = f"{sym['rate']:.0f} files/s, ETA {duration(sym['eta_s'])}; " if sym.get("eta_s") is not None else ""
        left = f", {sym['pending']:,} to parse ({speed}search --symbol does not see them yet)"
    return f"definitions of {sym['parsed']:,} source files{left}"
