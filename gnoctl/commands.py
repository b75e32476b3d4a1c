"""What each gnoctl command does, independent of how its arguments were parsed.

Both the hand-written fast path (gnoctl.main) and the typer command tree
(gnoctl.cli) call these; each returns the process exit status.
"""

from __future__ import annotations

import os
import sys
import time

from gnoctl import fastjson
from gnoctl.client import Client, DaemonError, holds_lock, is_running, start_daemon
from gnoctl.output import (
    AnswerStream,
    ProgressLine,
    View,
    ask_text,
    file_list,
    json_lines,
    print_error,
    query_text,
    quiet_stdout,
    search_text,
)
from gnod import wire
from gnod.paths import Paths

# As grep: the search commands exit 1 when nothing matched.
EXIT_NO_MATCH = 1
KILL_WAIT_S = 5.0  # after SIGKILL, how long until the kernel has let go of gnod's lock


def _default_format() -> str:
    return "human" if sys.stdout.isatty() else "json"


class _StoppedWaiting(Exception):
    """Ctrl-C while gnod goes on with the work; the message has been printed."""


def _run(fmt: str | None, fn) -> int:
    fmt = fmt or _default_format()
    try:
        return fn(fmt) or 0
    except DaemonError as e:
        print_error(e, fmt)
        return e.exit_code
    except KeyboardInterrupt:
        print("gnoctl: interrupted", file=sys.stderr)
        return 130
    except _StoppedWaiting:
        return 130
    except BrokenPipeError:
        # Like ripgrep: a reader that stopped early (`| head`, `| grep -q`) is not an error;
        # under `set -o pipefail` a non-zero status would fail the pipeline after grep matched.
        quiet_stdout()
        return 0


def _dump(obj) -> None:
    print(fastjson.dumps(obj, indent=2))


def _retrieve(method: str, params: dict, render, fmt: str | None, autostart: bool | None,
              wait_s: float = 0.0, view: View | None = None) -> int:
    """One search-like call (search, vsearch, query): refuse an empty query, call, render,
    print; exit 0 with hits and EXIT_NO_MATCH without (the empty result is still printed)."""
    view = view or View()

    def go(fmt: str) -> int:
        if not params["query"].strip():
            raise DaemonError(wire.INVALID_QUERY, "empty query: give some words to search for")
        result = Client(autostart=autostart).call(method, {**params, "wait_s": wait_s} if wait_s else params)
        view.emit(render(result, fmt, view.color(), view.null), fmt)
        return 0 if result["hits"] else EXIT_NO_MATCH

    return _run(fmt, go)


def search(query: str, limit: int, min_score: float, collections: list[str], fmt: str | None,
           autostart: bool | None = None, wait_s: float = 0.0, view: View | None = None,
           filters: dict | None = None, per_doc: int = 1) -> int:
    params = {"query": query, "limit": limit, "min_score": min_score, "collections": collections,
              **({"filters": filters} if filters else {}), **({"per_doc": per_doc} if per_doc > 1 else {})}
    return _retrieve("search", params, search_text, fmt, autostart, wait_s, view)


def get(ref: str, from_line: int | None, lines: int | None, fmt: str | None, autostart: bool | None = None) -> int:
    # The document itself is the useful default even in a pipe (`gnoctl get x > x.md`).
    fmt = fmt or "human"

    def go(fmt: str) -> int:
        params: dict[str, object] = {"ref": ref}
        if from_line is not None:
            params["from_line"] = from_line
        if lines is not None:
            params["lines"] = lines
        doc = Client(autostart=autostart).call("get", params)
        if fmt == "json":
            _dump(doc)
        else:
            sys.stdout.write(doc["content"])
        return 0

    return _run(fmt, go)


def multi_get(refs: list[str], pattern: str | None, max_bytes: int, fmt: str | None,
              view: View | None = None) -> int:
    view = view or View()

    def go(fmt: str) -> int:
        res = Client().call("multi_get", {"refs": refs, "pattern": pattern, "max_bytes": max_bytes})
        if fmt == "json":
            _dump(res)
        elif fmt == "files":
            view.emit(file_list([d["abs_path"] for d in res["documents"]], view.null), fmt)
        else:
            for d in res["documents"]:
                print(f"===== {d['collection']}/{d['path']} — {d['title']}")
                sys.stdout.write(d["content"])
            for m in res["missing"]:
                print(f"gnoctl: not found: {m}", file=sys.stderr)
            if res["truncated"]:
                print(f"gnoctl: output truncated at {max_bytes} bytes (raise --max-bytes)", file=sys.stderr)
        return 1 if res["missing"] else 0

    return _run(fmt, go)


def ls(collection: str | None, prefix: str, limit: int, fmt: str | None, view: View | None = None) -> int:
    view = view or View()

    def go(fmt: str) -> int:
        res = Client().call("ls", {"collection": collection, "prefix": prefix, "limit": limit})
        entries = res["entries"]
        if fmt == "json":
            _dump(res)
        elif fmt == "jsonl":
            view.emit(json_lines(entries), fmt)
        elif fmt == "files":
            view.emit(file_list([e["abs_path"] for e in entries], view.null), fmt)
        else:
            width = max((len(e["collection"]) + 1 + len(e["path"]) for e in entries), default=0)
            view.emit("\n".join(f"{e['collection'] + '/' + e['path']:<{width}}  {e['title']}".rstrip()
                                for e in entries), fmt)
        if res["total"] > len(entries) and fmt != "json":  # JSON has `total`
            print(f"gnoctl: listed {len(entries)} of {res['total']} documents (-n N lists more)",
                  file=sys.stderr)
        return 0

    return _run(fmt, go)


def _ago(ts: int | None) -> str:
    if not ts:
        return "never"
    s = max(0, int(time.time() - ts))
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n:
            return f"{s // n}{unit} ago"
    return f"{s}s ago"


STATUS_WATCH_S = 1.0


def status(fmt: str | None, watch: bool = False) -> int:
    def go(fmt: str) -> int:
        client = Client()
        if not watch:
            st = client.call("status")
            _dump(st) if fmt == "json" else print("\n".join(status_lines(st)))
            return 0
        shown = 0
        tty = sys.stdout.isatty()
        try:
            while True:
                st = client.call("status")
                if fmt == "json":
                    print(fastjson.dumps(st))  # one status per line (JSON Lines)
                else:
                    lines = status_lines(st)
                    # On a terminal, redraw in place: up to the first line of the last frame, clear.
                    prefix = f"\033[{shown}F\033[J" if tty and shown else ""
                    sys.stdout.write(prefix + "\n".join(lines) + ("\n" if tty else "\n\n"))
                    shown = len(lines)
                sys.stdout.flush()
                time.sleep(STATUS_WATCH_S)
        except KeyboardInterrupt:  # the way to stop watching: not an error
            return 0

    return _run(fmt, go)


def status_lines(st: dict) -> list[str]:
    """`gnoctl status` for a person: daemon, index, one line per collection, vectors, models."""
    memory = f", {_size(st['rss_bytes'])} resident" if st.get("rss_bytes") else ""
    out = [f"gnod {st['version']} (pid {st['pid']}, up {_duration(st['uptime_s'])}{memory}), "
           f"protocol {st['protocol']}",
           f"index:  {st['db_path']} ({_size(st['db_bytes'])}), {st['documents']} documents",
           f"config: {st['config_path']}"]
    langs = [str(x) for x in st["languages"] if x]
    out.append(f"languages: {', '.join(langs) if langs else 'none detected yet'}")
    if st.get("config_error"):
        out.append(f"config error (the last good config is in use): {st['config_error']}")
    if st.get("storage_error"):
        out.append(f"index storage: {st['storage_error']}")
    if not st["collections"]:
        out.append("no collections yet: gnoctl collection add PATH")
    fresh = {f["collection"]: f for f in st.get("freshness", [])}
    width = max((len(c["name"]) for c in st["collections"]), default=0)
    for c in st["collections"]:
        state = _collection_state(c, st["job"], fresh.get(c["name"]))
        errors = f", {c['errors']} errors" if c["errors"] else ""
        out.append(f"  {c['name']:<{width}}  {c['documents']:>7} docs  {state}{errors}  {c['path']}")
    vec = st.get("vectors")
    if vec:
        out.append("vectors: " + _vectors_line(vec))
    if st.get("models"):
        out.append("models:")
        for m in st["models"]:
            err = f": {m['error']}" if m.get("error") and m["state"] == "error" else ""
            fix = f" (fix: {m['fix']})" if m.get("fix") and m["state"] in ("missing", "error") else ""
            held = f", {_size(m['rss_bytes'])}" if m.get("rss_bytes") and m["state"] == "ready" else ""
            latency = f", {m['latency_ms']:g} ms" if m.get("latency_ms") is not None else ""
            out.append(f"  {m['role']:<9} {m['state']}{held}{latency}{err}  {m['uri']}{fix}")
    for e in st["recent_errors"][:5]:
        out.append(f"  ! {e['collection']}/{e['path']}: {e['code']}: {e['reason']}")
    return out


def _duration(seconds: float) -> str:
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def _collection_state(c: dict, job: dict, f: dict | None) -> str:
    """One truthful state: the running index job first, then what the watcher holds."""
    if job["running"] and job.get("collection") == c["name"]:
        done, total = job["done"], job["total"]
        text = f"indexing {done}/{total}"
        elapsed = time.time() - job["started_at"] if job.get("started_at") else 0.0
        if done and elapsed > 0:
            rate = done / elapsed
            text += f" ({rate:.0f} files/s, ETA {_duration(max(0, total - done) / rate)})"
        return text
    indexed = f"indexed {_ago(c['last_indexed_at'])}"
    if f is None:
        return indexed
    if f.get("last_error"):
        return f"watch error: {f['last_error']}"
    if f["indexing"] or f["pending"]:
        return f"{f['pending']} pending" + (", indexing" if f["indexing"] else "")
    if not f["watching"]:
        return f"not watched, {indexed}"
    change = f"last change {_ago(f['last_change_at'])}" if f.get("last_change_at") else indexed
    return f"up to date, watching, {change}"


def _vectors_line(vec: dict) -> str:
    if not vec["available"]:
        reason = vec.get("reason") or "no embedding model yet"
        fix = "" if "sqlite-vec" in reason or "gnoctl " in reason else " (fix: gnoctl models pull embed)"
        return f"unavailable: {reason}{fix}"
    text = f"{vec['embedded']}/{vec['chunks']} chunks embedded with {vec.get('serving') or vec.get('model')}"
    if vec["pending"]:
        rate = vec.get("rate_per_s")
        speed = ""
        if rate:  # a large model embeds well under 1 chunk/s on a small CPU: keep the digits that show it
            shown = f"{rate:.0f}" if rate >= 10 else f"{rate:.2g}"
            speed = f", {shown} chunks/s, ETA {_duration(vec['pending'] / rate)}"
        text += f", {vec['pending']} pending" + (f" (embedding{speed})" if vec["embedding"] else "")
    return text


def _index_summary(res: dict, fmt: str) -> None:
    if fmt == "json":
        _dump(res)
        return
    for s in res["collections"]:
        print(f"{s['collection']}: {s['scanned']} files, {s['added']} added, {s['updated']} updated, "
              f"{s['unchanged']} unchanged, {s['removed']} removed, {s['errors']} errors "
              f"({s['seconds']:.2f}s)")


def _with_progress(fmt: str, method: str, params: dict) -> dict:
    bar = ProgressLine(fmt != "json" and sys.stderr.isatty())
    try:
        return Client().call(method, params, on_notify=bar)
    finally:
        bar.clear()


def _index_in_background(fmt: str, method: str, params: dict) -> dict:
    """An index run (update, collection add) with progress. Ctrl-C stops waiting only:
    gnod keeps the run going (a run cut short would leave a half-indexed collection
    that looks complete), and the message says so."""
    try:
        return _with_progress(fmt, method, params)
    except KeyboardInterrupt:
        what = params.get("name") or params.get("collection") or "every collection"
        print(f"gnoctl: stopped waiting; gnod goes on indexing {what} in the background "
              "(gnoctl status shows how far it is)", file=sys.stderr)
        raise _StoppedWaiting() from None


def update(collection: str | None, fmt: str | None) -> int:
    def go(fmt: str) -> int:
        _index_summary(_index_in_background(fmt, "index", {"collection": collection}), fmt)
        return 0

    return _run(fmt, go)


def collection_add(path: str, name: str | None, include: list[str], exclude: list[str],
                   language: str | None, gitignore: bool, follow_symlinks: bool, index: bool, fmt: str | None,
                   allow_overlap: bool = False) -> int:
    def go(fmt: str) -> int:
        abs_path = os.path.abspath(os.path.expanduser(path))
        params = {"name": name or _default_name(abs_path), "path": abs_path, "include": include,
                  "exclude": exclude, "language": language, "gitignore": gitignore,
                  "follow_symlinks": follow_symlinks, "index": index}
        if allow_overlap:
            params["allow_overlap"] = True
        _index_summary(_index_in_background(fmt, "collection.add", params), fmt)
        return 0

    return _run(fmt, go)


def _default_name(path: str) -> str:
    base = os.path.basename(path.rstrip("/")) or "root"
    cleaned = "".join(ch if ch.isalnum() or ch in "_.-" else "-" for ch in base).lstrip("._-")
    return (cleaned or "docs")[:64]


def collection_list(fmt: str | None) -> int:
    def go(fmt: str) -> int:
        res = Client().call("collection.list")
        if fmt == "json":
            _dump(res)
            return 0
        if not res["collections"]:
            print("no collections yet: gnoctl collection add PATH")
        for c in res["collections"]:
            extra = f" language={c['language']}" if c.get("language") else ""
            print(f"{c['name']:<16} {c['documents']:>7} docs  {c['path']}{extra}")
        return 0

    return _run(fmt, go)


def collection_remove(name: str, fmt: str | None) -> int:
    def go(fmt: str) -> int:
        res = Client().call("collection.remove", {"name": name})
        if fmt == "json":
            _dump(res)
        else:
            print(f"removed collection {res['name']} ({res['documents_removed']} documents)")
        return 0

    return _run(fmt, go)


# --- daemon control ------------------------------------------------------------------


def _start(paths: Paths) -> dict:
    if is_running(paths):
        return {"running": True, "started": False, "socket": paths.socket_path}
    return {"running": True, "started": True, "pid": start_daemon(paths), "socket": paths.socket_path}


def _stop(paths: Paths, timeout: float) -> dict:
    """Ask gnod to stop and wait until the process is gone (its lock is free), not just
    until it stops listening; past `timeout` it is killed, and the result says so."""
    if not holds_lock(paths):
        return {"stopped": False}
    pid = paths.read_pid()
    if is_running(paths):
        try:
            Client(paths, autostart=False, timeout=max(timeout, 1.0)).call("shutdown")
        except DaemonError:
            pass  # past listening already, or not answering: the lock below tells
    if _wait_unlocked(paths, timeout):
        return {"stopped": True}
    if pid is None:
        raise DaemonError(wire.INTERNAL_ERROR, f"gnod did not stop within {timeout:g} s and wrote no pid file")
    import signal  # not on the search fast path, which imports this module

    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if not _wait_unlocked(paths, KILL_WAIT_S):
        raise DaemonError(wire.INTERNAL_ERROR, f"gnod (pid {pid}) is still running after SIGKILL")
    return {"stopped": True, "killed": True, "pid": pid}


def _wait_unlocked(paths: Paths, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while holds_lock(paths):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _say_started(msg: dict) -> None:
    print(f"gnod started (pid {msg['pid']})" if msg["started"] else "gnod is already running")


def daemon_start(fmt: str | None) -> int:
    def go(fmt: str) -> int:
        msg = _start(Paths.from_env())
        _dump(msg) if fmt == "json" else _say_started(msg)
        return 0

    return _run(fmt, go)


def daemon_stop(fmt: str | None, timeout: float = 20.0) -> int:
    def go(fmt: str) -> int:
        msg = _stop(Paths.from_env(), timeout)
        if fmt == "json":
            _dump(msg)
        elif msg.get("killed"):
            print(f"gnod did not stop within {timeout:g} s: killed it (pid {msg['pid']})")
        else:
            print("gnod stopped" if msg["stopped"] else "gnod was not running")
        return 0

    return _run(fmt, go)


def daemon_status(fmt: str | None) -> int:
    def go(fmt: str) -> int:
        paths = Paths.from_env()
        if not is_running(paths):
            if fmt == "json":
                _dump({"running": False, "socket": paths.socket_path})
            else:
                print(f"gnod is not running (socket {paths.socket_path})")
            return wire.EXIT_NOT_RUNNING
        st = Client(paths, autostart=False).call("status")
        if fmt == "json":
            _dump({"running": True, "pid": st["pid"], "uptime_s": st["uptime_s"], "socket": paths.socket_path,
                   "version": st["version"]})
        else:
            print(f"gnod is running (pid {st['pid']}, up {st['uptime_s']:.0f}s, socket {paths.socket_path})")
        return 0

    return _run(fmt, go)


def daemon_restart(fmt: str | None, timeout: float = 20.0) -> int:
    def go(fmt: str) -> int:
        paths = Paths.from_env()
        stopped = _stop(paths, timeout)["stopped"]
        msg = {**_start(paths), "stopped": stopped}
        _dump(msg) if fmt == "json" else _say_started(msg)
        return 0

    return _run(fmt, go)


# --- running gnod at login -------------------------------------------------------------
# gnoctl.service is imported here, not at the top: the hot commands never load it.


def _guarded(fmt: str | None, fn) -> int:
    """Like _run, and a ServiceError prints in the same error shape with its exit status."""
    from gnoctl.service import ServiceError

    def go(fmt: str) -> int:
        try:
            return fn(fmt)
        except ServiceError as e:
            print_error(e, fmt)
            return e.exit_code

    return _run(fmt, go)


def daemon_install(print_only: bool, fmt: str | None) -> int:
    from gnoctl import service

    def go(fmt: str) -> int:
        if print_only:
            res = service.install(print_only=True)
            _dump(res) if fmt == "json" else sys.stdout.write(res["content"])
            return 0
        paths = Paths.from_env()
        # A gnod that gnoctl started holds the lock: the service's own would exit and be retried.
        stopped = _stop(paths, 20.0)["stopped"]
        res = {**service.install(print_only=False, paths=paths), "stopped_running": stopped}
        if fmt == "json":
            _dump(res)
        else:
            print(f"installed {res['path']}: gnod starts at login and is running now")
            if stopped:
                print("(the gnod gnoctl had started was stopped: the service manager runs it now)")
            print(f"status: {res['status']}\nlogs:   gnoctl daemon logs -f  ({res['logs']['log']})")
        return 0

    # --print is the file itself, even in a pipe (`gnoctl daemon install --print > gnod.service`).
    return _guarded((fmt or "human") if print_only else fmt, go)


def daemon_uninstall(fmt: str | None) -> int:
    from gnoctl import service

    def go(fmt: str) -> int:
        res = service.uninstall()
        if fmt == "json":
            _dump(res)
        elif res["removed"]:
            print(f"removed {res['path']}: gnod is stopped and no longer starts at login")
        else:
            print(f"gnod was not installed as a service (no {res['path']})")
        return 0

    return _guarded(fmt, go)


def daemon_logs(follow: bool, lines: int) -> int:
    from gnoctl import service

    return _guarded("human", lambda fmt: service.tail_logs(follow, lines))


# --- vectors and models ------------------------------------------------------------------


def _as_search_hits(result: dict) -> dict:
    """vsearch hits in search's shape (the best chunk as the snippet) for the text formats."""
    hits = []
    for h in result["hits"]:
        text = "\n".join(ln for ln in h["text"].splitlines() if ln.strip())
        hits.append({**h, "snippet": {"line": h["start_line"], "text": text}})
    return {**result, "hits": hits, "dropped_stopwords": []}


def vsearch(query: str, limit: int, min_score: float, collections: list[str], fmt: str | None,
            autostart: bool | None = None, view: View | None = None, filters: dict | None = None) -> int:
    def render(result: dict, fmt: str, color: bool, null: bool) -> str:
        return search_text(result if fmt in ("json", "jsonl") else _as_search_hits(result), fmt, color, null)

    params = {"query": query, "limit": limit, "min_score": min_score, "collections": collections,
              **({"filters": filters} if filters else {})}
    return _retrieve("vsearch", params, render, fmt, autostart, 0.0, view)


def query(query: str, limit: int, mode: str, min_score: float, collections: list[str], expand: bool, rerank: bool,
          explain: bool, fmt: str | None, autostart: bool | None = None, wait_s: float = 0.0,
          view: View | None = None, filters: dict | None = None) -> int:
    params = {"query": query, "limit": limit, "mode": mode, "min_score": min_score, "collections": collections,
              "expand": expand, "rerank": rerank, "explain": explain, **({"filters": filters} if filters else {})}
    return _retrieve("query", params, query_text, fmt, autostart, wait_s, view)


def similar(ref: str, limit: int, collections: list[str], fmt: str | None, autostart: bool | None = None,
            filters: dict | None = None) -> int:
    """Documents like REF; rendered as search results (the query line names the document)."""
    def go(fmt: str) -> int:
        params = {"ref": ref, "limit": limit, "collections": collections, **({"filters": filters} if filters else {})}
        result = Client(autostart=autostart).call("similar", params)
        if fmt == "json":
            _dump(result)
            return 0
        shown = {**result, "query": result["uri"], "dropped_stopwords": []}
        out = search_text(shown, fmt, View().color())
        if out:
            print(out)
        return 0

    return _run(fmt, go)


def bench(fixture_path: str, modes: list[str], k: int, fmt: str | None, autostart: bool | None = None) -> int:
    """Score search, vsearch and query on the user's fixture (see gnoctl.bench)."""
    from gnoctl import bench as b

    def go(fmt: str) -> int:
        try:
            fixture = b.load_fixture(fixture_path)
        except b.FixtureError as e:
            raise DaemonError(wire.INVALID_PARAMS, str(e), {"fixture": fixture_path}) from None
        result = {"fixture": os.path.abspath(fixture_path), **b.run(fixture, modes, k, autostart)}
        if fmt == "json":
            _dump(result)
        else:
            print(b.render(result))
        return 0

    return _run(fmt, go)


def ask(question: str, sources: int, mode: str, collections: list[str], expand: bool, rerank: bool, answer: bool,
        max_tokens: int, explain: bool, fmt: str | None, autostart: bool | None = None,
        view: View | None = None, filters: dict | None = None) -> int:
    view = view or View()

    def go(fmt: str) -> int:
        if not question.strip():
            raise DaemonError(wire.INVALID_QUERY, "empty question: ask something")
        # Tokens are a preview for a person watching stderr; JSON and pipes get the final result only.
        stream = AnswerStream(answer and fmt != "json" and sys.stderr.isatty())
        params = {"query": question, "sources": sources, "mode": mode, "collections": collections,
                  "expand": expand, "rerank": rerank, "answer": answer, "stream": stream.enabled,
                  "max_tokens": max_tokens, "explain": explain, **({"filters": filters} if filters else {})}
        try:
            result = Client(autostart=autostart).call("ask", params, on_notify=stream)
        finally:
            stream.clear()
        view.emit(ask_text(result, fmt, view.color(), view.null), fmt)
        return 0

    return _run(fmt, go)


def embed(force: bool, fmt: str | None) -> int:
    def go(fmt: str) -> int:
        res = _with_progress(fmt, "embed", {"force": force})
        if fmt == "json":
            _dump(res)
        else:
            print(f"{res['model']}: {res['embedded']} chunks embedded, {res['pending']} pending "
                  f"({res['seconds']:.1f}s)")
        return 0

    return _run(fmt, go)


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    mib = n / 1048576
    return f"{mib:.1f} MiB" if mib < 10 else f"{mib:.0f} MiB"


def models_list(fmt: str | None) -> int:
    def go(fmt: str) -> int:
        res = Client().call("models.list")
        if fmt == "json":
            _dump(res)
            return 0
        print(f"preset: {res['preset']} (available: {', '.join(res['presets'])})")
        loaded = {(m["role"], m["uri"]): m for m in res["loaded"]}
        for m in res["models"]:
            state = loaded.get((m["role"], m["uri"]), {}).get("state", "unloaded")
            size = _size(m["size_bytes"]) if m["cached"] or m["size_bytes"] is None else f"~{_size(m['size_bytes'])}"
            cached = "downloaded" if m["cached"] else "not downloaded"
            print(f"  {m['role']:<9} {m['uri']}\n  {'':<9} {cached}, {size}, {state}"
                  + (f", licence {m['licence']}" if m.get("licence") else ""))
        print(f"cache: {res['cache_dir']}")
        return 0

    return _run(fmt, go)


def models_pull(target: str, fmt: str | None) -> int:
    def go(fmt: str) -> int:
        res = _with_progress(fmt, "models.pull", {"target": target})
        if fmt == "json":
            _dump(res)
        else:
            for m in res["pulled"]:
                print(f"{m['uri']}: {m.get('path') or 'ready'} ({_size(m.get('size_bytes'))})")
        return 0

    return _run(fmt, go)


def models_use(choice: str, fmt: str | None) -> int:
    def go(fmt: str) -> int:
        role, eq, uri = choice.partition("=")
        params = {"role": role, "uri": uri} if eq else {"preset": choice}
        res = Client().call("models.use", params)
        if fmt == "json":
            _dump(res)
        else:
            print(res["message"].replace(", ", "\n"))
            print("new vectors are made in the background; the old ones serve until then "
                  "(gnoctl embed waits for it)")
        return 0

    return _run(fmt, go)


def models_path(fmt: str | None) -> int:
    def go(fmt: str) -> int:
        res = Client().call("models.list")
        if fmt == "json":
            _dump({"cache_dir": res["cache_dir"], "models": {m["role"]: m["path"] for m in res["models"]}})
        else:
            print(res["cache_dir"])
            for m in res["models"]:
                print(f"  {m['role']:<9} {m['path'] or '(not downloaded)'}")
        return 0

    return _run(fmt, go)


def models_clear(uri: str | None, fmt: str | None) -> int:
    def go(fmt: str) -> int:
        res = Client().call("models.clear", {"uri": uri})
        _dump(res) if fmt == "json" else print(res["message"])
        return 0

    return _run(fmt, go)


def doctor(fmt: str | None) -> int:
    """Each component with ok / warn / fail and the fix; exit 2 when something fails."""

    def go(fmt: str) -> int:
        checks: list[dict] = []

        def check(name: str, status: str, detail: str, fix: str = "") -> None:
            checks.append({"component": name, "status": status, "detail": detail, "fix": fix})

        try:
            st = Client().call("status")
        except DaemonError as e:
            check("daemon", "fail", e.message, "gnoctl daemon start; gnoctl daemon logs")
            st = None
        if st is not None:
            check("daemon", "ok", f"gnod {st['version']} pid {st['pid']}, protocol {st['protocol']}")
            if st.get("config_error"):
                check("config", "fail", st["config_error"], f"edit {st['config_path']}")
            else:
                check("config", "ok", st["config_path"])
            if st.get("storage_error"):
                check("index storage", "fail", st["storage_error"], f"free space on the disk holding {st['db_path']}")
            else:
                check("index storage", "ok", f"{st['db_path']} ({_size(st['db_bytes'])})")
            for c in st["collections"]:
                ok = os.path.isdir(c["path"])
                check(f"collection {c['name']}", "ok" if ok else "fail",
                      f"{c['documents']} documents, {c['errors']} errors, {c['path']}",
                      "" if ok else f"the folder is missing: gnoctl collection remove {c['name']} or restore it")
            gpu = st.get("gpu") or {}
            if gpu.get("gpu_layers") and not gpu.get("offload_supported"):
                check("gpu", "warn", f"gpu_layers = {gpu['gpu_layers']}, but this llama.cpp build has no GPU "
                      "support: models run on the CPU", 'CMAKE_ARGS="-DGGML_CUDA=on" (or -DGGML_METAL=on) '
                      "pip install --force-reinstall --no-cache-dir llama-cpp-python")
            elif gpu:
                layers = "all" if gpu.get("gpu_layers") == -1 else gpu.get("gpu_layers")
                where = f"GPU {gpu['main_gpu']} ({layers} layers)" if layers else "the CPU"
                check("gpu", "ok", f"local models run on {where}; this llama.cpp build "
                      f"{'can' if gpu.get('offload_supported') else 'cannot'} offload to a GPU")
            vec = st.get("vectors") or {}
            if vec.get("available"):
                check("vectors", "ok", f"{vec['embedded']}/{vec['chunks']} chunks embedded with {vec['serving']}")
            else:
                check("vectors", "warn", vec.get("reason") or "no vectors yet",
                      "gnoctl models pull embed; gnoctl embed")
            for m in st.get("models", []):
                status = {"ready": "ok", "unloaded": "ok", "loading": "ok", "missing": "warn"}.get(m["state"], "fail")
                latency = f", {m['latency_ms']:g} ms" if m.get("latency_ms") is not None else ""
                check(f"model {m['role']}", status,
                      f"{m['uri']} ({m['state']}{latency})" + (f": {m['error']}" if m.get("error") else ""),
                      m.get("fix") or "")
        if fmt == "json":
            _dump({"checks": checks})
        else:
            marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}
            for c in checks:
                print(f"[{marks[c['status']]}] {c['component']}: {c['detail']}")
                if c["fix"] and c["status"] != "ok":
                    print(f"       fix: {c['fix']}")
        return 2 if any(c["status"] == "fail" for c in checks) else 0

    return _run(fmt, go)
