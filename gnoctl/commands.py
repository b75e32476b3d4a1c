"""What each gnoctl command does, independent of how its arguments were parsed.

Both the hand-written fast path (gnoctl.main) and the typer command tree
(gnoctl.cli) call these: each calls the daemon, hands the result to its renderer in
gnoctl.output and returns the process exit status. The renderers of the commands
that are not on the fast path are imported where they are used.
"""

from __future__ import annotations

import sys
import time

from gnoctl.args import LS_LIMIT_MAX, ref_from_here
from gnoctl.client import (
    Client,
    DaemonError,
    holds_lock,
    is_running,
    retry_wait,
    start_daemon,
    starting_pid,
    with_autostart_wait,
)
from gnoctl.output import hits
from gnoctl.output.common import ProgressLine, View, print_error, quiet_stdout, show
from gnod import wire
from gnod.paths import Paths

TYPE_CHECKING = False  # typing imports re: too slow for the fast path (mypy reads it as True)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

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


# The search-like commands' renderers, by method.
RENDER = {"search": hits.search_text, "vsearch": hits.vsearch_text, "query": hits.query_text}
# Output formats of one line per hit or passage, without a place for what the result says
# beside its hits (`notes`, `degraded`): stderr says it, as ripgrep's warnings.
LINE_FORMATS = ("jsonl", "files", "csv", "vimgrep")


def _coloured(fmt: str | None, view: View) -> str | None:
    """The format asked for; human text where none was and colour was (`--color always`
    is for people: `| less -R`, not a pipe's JSON)."""
    return "human" if fmt is None and view.color_when == "always" else fmt


def retrieve(
    method: str,
    params: dict,
    fmt: str | None,
    autostart: bool | None = None,
    view: View | None = None,
    sent: Callable[[], Any] | None = None,
) -> int:
    """One search-like call (search, vsearch, query) with its params (gnoctl.args.params):
    refuse an empty query, call, render, print; exit 0 with hits and EXIT_NO_MATCH
    without (the empty result is still printed). `sent`: the reply's reader when the
    request went out already (gnoctl.main)."""
    view = view or View()
    fmt = _coloured(fmt, view)

    def go(fmt: str) -> int:
        if not params["query"].strip():
            # With filters alone (`search "" --tag semester`): what `ls` does with them.
            listed = "; `gnoctl ls` with the same filters lists what passes them" if params.get("filters") else ""
            raise DaemonError(wire.INVALID_QUERY, f"empty query: give some words to search for{listed}")
        result = _unless_busy(sent, lambda: _asked(method, params, autostart))
        if fmt in LINE_FORMATS and result.get("instead"):
            # A list a program reads is of what was asked: not of a respelling's files
            # (`vim $(gnoctl search --symbol init_task -l)` opened init_mask's).
            for note in result.get("notes", []):
                print(f"gnoctl: note: {note}", file=sys.stderr)
            print(
                f"gnoctl: its results are not listed in {fmt}: search {wire.said(result['instead'])} for them",
                file=sys.stderr,
            )
            return EXIT_NO_MATCH
        if fmt == "human" and (cut := _cut(method, params, result)):  # a reader is told too, after the hits
            result = {**result, "notes": [*result.get("notes", []), *cut]}
        view.emit(RENDER[method](result, fmt, view.color(), view.null, view.links() if fmt == "human" else None), fmt)
        if fmt in LINE_FORMATS:
            said = [f"degraded: {d}" for d in result.get("degraded", [])]
            for line in said + [f"note: {n}" for n in result.get("notes", [])] + _cut(method, params, result):
                print(f"gnoctl: {line}", file=sys.stderr)
        return 0 if result["hits"] else EXIT_NO_MATCH

    return _run(fmt, go)


def _unless_busy(sent: Callable[[], Any] | None, call: Callable[[], Any]) -> Any:
    """`sent()` (the reply to a request already sent) or `call()`; once more after the wait
    gnod names when it refuses the call as overloaded (client.retry_wait)."""
    try:
        return sent() if sent is not None else call()
    except DaemonError as e:
        wait = retry_wait(e)
        if wait is None:
            raise
    time.sleep(wait)
    return call()


def _asked(method: str, params: dict, autostart: bool | None) -> dict:
    """The call's result; a search that started gnod first waits for its scan at start."""
    client = Client(autostart=autostart)
    client.connect()
    result: dict = client.call(method, with_autostart_wait(method, params) if client.started else params)
    return result


def _cut(method: str, params: dict, result: dict) -> list[str]:
    """What a one-line-per-hit format (a file list for xargs, say) must say when the
    limit left matching documents out: the list is the best `limit`, not every match."""
    shown = len(result["hits"])
    if result.get("total_candidates", 0) <= shown:
        return []
    from gnoctl.spec import COMMANDS

    limit = next(o for o in COMMANDS[method] if o["dest"] == "limit")
    if shown < params.get("limit", limit["default"]):  # min_score left the others out
        return []
    most = wire.FILE_LIST_MAX if params.get("snippets") is False else wire.SEARCH_RESULTS_MAX
    more = f"-n N lists more, up to {most:,}" if shown < most else "narrow the search with --path or more words"
    best = "the best document" if shown == 1 else f"the best {shown} documents"
    return [f"listed {best}; more match ({more})"]


def get(
    params: dict,
    fmt: str | None,
    autostart: bool | None = None,
    view: View | None = None,
    sent: Callable[[], Any] | None = None,
) -> int:
    """`sent`: as in `retrieve`."""
    from gnoctl.output.documents import write_document

    # The document itself is the useful default even in a pipe (`gnoctl get x > x.md`).
    fmt = fmt or "human"
    view = view or View()

    def go(fmt: str) -> int:
        def asked(p: dict) -> Any:
            return _unless_busy(sent, lambda: Client(autostart=autostart).call("get", p))

        write_document(_here_first("get", params, autostart, asked), fmt, view)
        return 0

    return _run(fmt, go)


def _here_first(method: str, params: dict, autostart: bool | None, first: Callable[[dict], Any]) -> Any:
    """`first(p)`, the call of `method` with `params`, its `ref` sent as a path from the
    working directory where it is one (args.ref_from_here): a file here is the one meant
    (`get hub.c:5015` in a kernel's drivers/usb/core gave the line of another
    collection's hub.c, at its top). Where that file is in no collection's folder, the
    call again with the ref as gnod reads it (a path from a collection's top)."""
    here = ref_from_here(params["ref"])
    if here is None:
        return first(params)
    try:
        return first({**params, "ref": here})
    except DaemonError as e:
        if e.code != wire.NOT_FOUND or "collection" in e.details:
            raise
    return Client(autostart=autostart).call(method, params)


MULTI_GET_MAX_BYTES = 1_048_576  # content `multi-get` prints unless told


def multi_get(
    refs: list[str], pattern: list[str] | None, max_bytes: int, fmt: str | None, view: View | None = None
) -> int:
    from gnoctl.output.documents import write_documents

    view = view or View()

    def go(fmt: str) -> int:
        params = {"refs": refs, "pattern": pattern, "max_bytes": max_bytes}
        if fmt == "files":  # paths only: no text read, no byte budget
            params["content"] = False
        res = Client().call("multi_get", params)
        write_documents(res, fmt, view, max_bytes, pattern)
        return 1 if res["missing"] else 0

    return _run(fmt, go)


LS_LIMIT = 1000  # documents `ls` lists unless told
# The formats a program reads line by line: unless told, `ls` lists every document in them,
# as `rg --files` does, asking gnod LS_PAGE at a time (its most).
LS_EVERY_FORMATS = ("files", "jsonl")
LS_PAGE = LS_LIMIT_MAX


def ls(
    collection: str | None,
    prefix: str,
    limit: int | None,
    fmt: str | None,
    view: View | None = None,
    folders: bool = False,
    filters: dict | None = None,
) -> int:
    """`limit` None: LS_LIMIT, or every document in LS_EVERY_FORMATS. `filters`: the
    params' filters, as a search's."""
    from gnoctl.output.documents import write_listing

    view = view or View()
    params: dict[str, Any] = {"collection": collection, "prefix": prefix, **({"folders": True} if folders else {})}
    if filters:
        params["filters"] = filters

    def go(fmt: str) -> int:
        asked = f"{collection}/{prefix}" if collection and prefix else collection or prefix
        every = limit is None and fmt in LS_EVERY_FORMATS
        client = Client()
        first = {"limit": LS_PAGE if every else limit or LS_LIMIT}
        try:
            res = client.call("ls", {**params, **first})
        except DaemonError as e:
            here = _from_here_folder(collection) if e.code == wire.NOT_FOUND and collection else None
            if here is None:
                raise
            params["collection"] = here
            res = client.call("ls", {**params, **first})
        while every and res["entries"] and len(res["entries"]) < res["total"]:
            more = client.call("ls", {**params, "limit": LS_PAGE, "offset": len(res["entries"])})
            if not more["entries"]:
                break
            res["entries"] += more["entries"]
        write_listing(res, fmt, view, asked, bool(filters))
        # A folder or collection holding nothing is no match, as `search` finding nothing,
        # and so are filters that leave every document out.
        chosen = asked or filters
        return EXIT_NO_MATCH if chosen and not res["entries"] and not res.get("folders") else 0

    return _run(fmt, go)


def _from_here_folder(arg: str) -> str | None:
    """`arg` as an absolute path (gnod names the collection holding it) where it is a
    folder or file from the working directory (`ls .`, `ls ../guides`); None for any
    other. Asked only when gnod found no collection or folder so named: the word is a
    collection's name first."""
    import os

    path = os.path.abspath(os.path.expanduser(arg))
    return path if os.path.exists(path) else None


STATUS_WATCH_S = 1.0


def status(fmt: str | None, watch: bool = False, autostart: bool | None = None, errors: bool = False) -> int:
    from gnoctl.output.status import StatusWatch, error_lines, status_lines

    def go(fmt: str) -> int:
        client = Client(autostart=autostart)
        if errors:
            show(client.call("status", {"errors": wire.STATUS_ERRORS_MAX}), fmt, error_lines)
            return 0
        if not watch:
            show(client.call("status"), fmt, status_lines)
            return 0
        frame = StatusWatch(fmt)
        try:
            while True:
                client, result = _watched_status(client)
                if result is None:
                    print("gnoctl: gnod stopped: nothing more to watch", file=sys.stderr)
                    return wire.EXIT_NOT_RUNNING
                frame(result)
                time.sleep(STATUS_WATCH_S)
        except KeyboardInterrupt:  # the way to stop watching: not an error
            return 0

    return _run(fmt, go)


def _watched_status(client: Client) -> tuple[Client, dict | None]:
    """`status --watch`'s next status and the client to ask after it: where the connection
    was lost, one to a gnod started again; None for the status where gnod has stopped."""
    try:
        return client, client.call("status")
    except DaemonError as e:
        if e.code != wire.CANCELLED:  # the connection went (client.GONE)
            raise
    client.close()
    client = Client(autostart=False)
    try:
        return client, client.call("status")
    except DaemonError as gone:
        if gone.code != wire.NOT_RUNNING:
            raise
    return client, None


def watch(collections: list[str], fmt: str | None) -> int:
    """Follow gnod's `watch` stream until Ctrl-C (exit 0) or gnod stops (exit 3)."""
    from gnoctl.output.watch import watch_line

    def go(fmt: str) -> int:
        def show(method: str, params: dict) -> None:
            line = watch_line(method, params, fmt)
            if line is not None:
                print(line, flush=True)

        try:
            Client().call("watch", {"collections": collections}, on_notify=show)
        except KeyboardInterrupt:  # the way to stop watching: not an error
            return 0
        print("gnoctl: gnod stopped: nothing more to watch", file=sys.stderr)
        return wire.EXIT_NOT_RUNNING

    return _run(fmt, go)


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
    from gnoctl.output.collections import say_stopped_waiting

    try:
        return _with_progress(fmt, method, params)
    except KeyboardInterrupt:
        say_stopped_waiting(params.get("name") or params.get("collection") or "every collection")
        raise _StoppedWaiting() from None


def update(collection: str | None, fmt: str | None) -> int:
    from gnoctl.output.collections import index_lines

    def go(fmt: str) -> int:
        show(_index_in_background(fmt, "index", {"collection": collection}), fmt, index_lines)
        return 0

    return _run(fmt, go)


def collection_add(
    path: str,
    name: str | None,
    include: list[str],
    exclude: list[str],
    language: str | None,
    gitignore: bool,
    follow_symlinks: bool,
    index: bool,
    fmt: str | None,
    allow_overlap: bool = False,
    description: str | None = None,
    also: list[str] | None = None,
) -> int:
    import os

    from gnoctl.output.collections import index_lines
    from gnod.config import name_for

    def go(fmt: str) -> int:
        abs_path = os.path.abspath(os.path.expanduser(path))
        params = {
            "name": name or name_for(abs_path),
            "path": abs_path,
            "include": include,
            "exclude": exclude,
            "language": language,
            "gitignore": gitignore,
            "follow_symlinks": follow_symlinks,
            "index": index,
        }
        if allow_overlap:
            params["allow_overlap"] = True
        if description:
            params["description"] = description
        if also:
            params["also"] = also
        show(_index_in_background(fmt, "collection.add", params), fmt, index_lines)
        return 0

    return _run(fmt, go)


def collection_list(fmt: str | None) -> int:
    from gnoctl.output.collections import list_lines

    return _run(fmt, lambda fmt: show(Client().call("collection.list"), fmt, list_lines))


def collection_describe(name: str, description: str | None, fmt: str | None) -> int:
    """Set the description (`""` removes it), or with none given show the one in force."""
    from gnoctl.output.collections import described_lines

    def go(fmt: str) -> int:
        if description is not None:
            info = Client().call("collection.describe", {"name": name, "description": description})
        else:
            known = {c["name"]: c for c in Client().call("collection.list")["collections"]}
            if name not in known:
                raise DaemonError(wire.NOT_FOUND, f"no collection named {name!r}", {"collections": sorted(known)})
            info = known[name]
        show(info, fmt, described_lines)
        return 0

    return _run(fmt, go)


def collection_set(name: str, settings: dict, index: bool, fmt: str | None) -> int:
    """Change the `settings` given (not None; a list of just '' empties it), then index."""
    from gnoctl.output.collections import index_lines, settings_line

    def go(fmt: str) -> int:
        given = {k: [] if v == [""] else v for k, v in settings.items() if v is not None}
        params = {"name": name, **given, "index": index}
        res = _index_in_background(fmt, "collection.set", params)
        if fmt == "json":
            show(res, fmt, index_lines)
            return 0
        (info,) = [c for c in Client().call("collection.list")["collections"] if c["name"] == name]
        show(res, fmt, lambda r: [*index_lines(r), settings_line(info)])
        return 0

    return _run(fmt, go)


def collection_remove(name: str, fmt: str | None) -> int:
    from gnoctl.output.collections import removed_lines

    return _run(fmt, lambda fmt: show(Client().call("collection.remove", {"name": name}), fmt, removed_lines))


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
    import os  # neither is on the search fast path, which imports this module
    import signal

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


def daemon_start(fmt: str | None) -> int:
    from gnoctl.output.daemon import started_lines

    return _run(fmt, lambda fmt: show(_start(Paths.from_env()), fmt, started_lines))


def daemon_stop(fmt: str | None, timeout: float = 20.0) -> int:
    from gnoctl.output.daemon import stopped_lines

    return _run(fmt, lambda fmt: show(_stop(Paths.from_env(), timeout), fmt, lambda msg: stopped_lines(msg, timeout)))


def daemon_status(fmt: str | None) -> int:
    from gnoctl.output.daemon import running_lines

    def go(fmt: str) -> int:
        paths = Paths.from_env()
        if not is_running(paths):
            starting = starting_pid(paths)
            said = {"running": False, "socket": paths.socket_path, **({"starting_pid": starting} if starting else {})}
            show(said, fmt, running_lines)
            return wire.EXIT_NOT_RUNNING
        st = Client(paths, autostart=False).call("status")
        show(
            {
                "running": True,
                "pid": st["pid"],
                "uptime_s": st["uptime_s"],
                "socket": paths.socket_path,
                "version": st["version"],
            },
            fmt,
            running_lines,
        )
        return 0

    return _run(fmt, go)


def daemon_restart(fmt: str | None, timeout: float = 20.0) -> int:
    from gnoctl.output.daemon import started_lines

    def go(fmt: str) -> int:
        paths = Paths.from_env()
        stopped = _stop(paths, timeout)["stopped"]
        show({**_start(paths), "stopped": stopped}, fmt, started_lines)
        return 0

    return _run(fmt, go)


# --- running gnod at login -------------------------------------------------------------
# gnoctl.service is imported here, not at the top: the hot commands never load it.


def _guarded(fmt: str | None, fn, error=None) -> int:
    """Like _run, and a ServiceError (or `error`, shaped alike) prints in the same error
    shape with its exit status."""
    if error is None:
        from gnoctl.service import ServiceError

        error = ServiceError

    def go(fmt: str) -> int:
        try:
            return fn(fmt)
        except error as e:
            print_error(e, fmt)
            return e.exit_code

    return _run(fmt, go)


def daemon_install(print_only: bool, fmt: str | None) -> int:
    from gnoctl import service
    from gnoctl.output.daemon import installed_lines, write_service_file

    def go(fmt: str) -> int:
        if print_only:
            write_service_file(service.install(print_only=True), fmt)
            return 0
        paths = Paths.from_env()
        # A gnod that gnoctl started holds the lock: the service's own would exit and be retried.
        show(service.install(False, paths, lambda: _stop(paths, 20.0)["stopped"]), fmt, installed_lines)
        return 0

    # --print is the file itself, even in a pipe (`gnoctl daemon install --print > gnod.service`).
    return _guarded((fmt or "human") if print_only else fmt, go)


def daemon_uninstall(fmt: str | None) -> int:
    from gnoctl import service
    from gnoctl.output.daemon import uninstalled_lines

    def go(fmt: str) -> int:
        show(service.uninstall(), fmt, uninstalled_lines)
        return 0

    return _guarded(fmt, go)


def daemon_logs(follow: bool, lines: int) -> int:
    from gnoctl import service

    return _guarded("human", lambda fmt: service.tail_logs(follow, lines))


# --- MCP clients' config files ---------------------------------------------------------


def mcp_install(
    target: str, scope: str, name: str, enable_write: bool, force: bool, dry_run: bool, fmt: str | None
) -> int:
    from gnoctl.mcp import install
    from gnoctl.output.mcp import installed_lines

    def go(fmt: str) -> int:
        show(install.install(target, scope, name, enable_write, force, dry_run), fmt, installed_lines)
        return 0

    # The --dry-run diff is for a person (or `patch`) even in a pipe, as `daemon install --print`.
    return _guarded((fmt or "human") if dry_run else fmt, go, install.InstallError)


def mcp_uninstall(target: str, scope: str, name: str, dry_run: bool, fmt: str | None) -> int:
    from gnoctl.mcp import install
    from gnoctl.output.mcp import uninstalled_lines

    def go(fmt: str) -> int:
        show(install.uninstall(target, scope, name, dry_run), fmt, uninstalled_lines)
        return 0

    return _guarded((fmt or "human") if dry_run else fmt, go, install.InstallError)


def mcp_status(name: str, fmt: str | None) -> int:
    from gnoctl.mcp import install
    from gnoctl.output.mcp import status_lines

    def go(fmt: str) -> int:
        show(install.status(name), fmt, status_lines)
        return 0

    return _guarded(fmt, go, install.InstallError)


# --- vectors and models ------------------------------------------------------------------


def similar(params: dict, fmt: str | None, autostart: bool | None = None, view: View | None = None) -> int:
    """Documents like REF; rendered as search results (the query line names the document)."""
    view = view or View()

    def go(fmt: str) -> int:
        result = _here_first("similar", params, autostart, lambda p: Client(autostart=autostart).call("similar", p))
        view.emit(hits.similar_text(result, fmt, view.color(), view.links() if fmt == "human" else None), fmt)
        return 0 if result["hits"] else EXIT_NO_MATCH

    return _run(fmt, go)


def bench(fixture_path: str, modes: list[str], k: int, fmt: str | None, autostart: bool | None = None) -> int:
    """Score search, vsearch and query on the user's fixture (see gnoctl.bench)."""
    import os

    from gnoctl import bench as b
    from gnoctl.output.bench import table

    def go(fmt: str) -> int:
        try:
            fixture = b.load_fixture(fixture_path)
        except b.FixtureError as e:
            raise DaemonError(wire.INVALID_PARAMS, str(e), {"fixture": fixture_path}) from None
        result = {"fixture": os.path.abspath(fixture_path), **b.run(fixture, modes, k, autostart)}
        show(result, fmt, lambda result: [table(result)])
        return 0

    return _run(fmt, go)


def ask(params: dict, fmt: str | None, autostart: bool | None = None, view: View | None = None) -> int:
    from gnoctl.output.answer import AnswerStream, ask_text

    view = view or View()
    fmt = _coloured(fmt, view)

    def go(fmt: str) -> int:
        if not params["query"].strip():
            raise DaemonError(wire.INVALID_QUERY, "empty question: ask something")
        # Tokens are a preview for a person watching stderr; JSON and pipes get the final result only.
        stream = AnswerStream(params.get("answer", True) and fmt != "json" and sys.stderr.isatty())
        try:
            result = Client(autostart=autostart).call("ask", {**params, "stream": stream.enabled}, on_notify=stream)
        finally:
            stream.clear()
        view.emit(ask_text(result, fmt, view.color(), view.null), fmt)
        return 0

    return _run(fmt, go)


def embed(force: bool, fmt: str | None) -> int:
    from gnoctl.output.models import embedded_lines

    return _run(fmt, lambda fmt: show(_with_progress(fmt, "embed", {"force": force}), fmt, embedded_lines))


def models_list(fmt: str | None) -> int:
    from gnoctl.output.models import list_lines

    return _run(fmt, lambda fmt: show(Client().call("models.list"), fmt, list_lines))


def models_pull(target: str, fmt: str | None) -> int:
    from gnoctl.output.models import pulled_lines

    return _run(fmt, lambda fmt: show(_with_progress(fmt, "models.pull", {"target": target}), fmt, pulled_lines))


def models_use(params: dict, fmt: str | None) -> int:
    """`models use`: `params` as models.use takes them (cli.models_use reads the words)."""
    from gnoctl.output.models import used_lines

    def go(fmt: str) -> int:
        client = Client()
        used = client.call("models.use", params)
        if fmt != "json":  # what happens to the vectors depends on the embed model being there
            embed = next((m for m in client.call("models.list")["models"] if m["role"] == "embed"), None)
            used = {**used, "embed_ready": bool(embed and embed["cached"])}
        show(used, fmt, used_lines)
        return 0

    return _run(fmt, go)


def models_path(fmt: str | None) -> int:
    from gnoctl.output.models import write_paths

    return _run(fmt, lambda fmt: write_paths(Client().call("models.list"), fmt))


def models_clear(uri: str | None, fmt: str | None) -> int:
    from gnoctl.output.models import message_lines

    return _run(fmt, lambda fmt: show(Client().call("models.clear", {"uri": uri}), fmt, message_lines))


def doctor(fmt: str | None) -> int:
    """Each component with ok / warn / fail and the fix; exit 2 when something fails."""
    from gnoctl.output import doctor as out

    def go(fmt: str) -> int:
        try:
            checks = out.checks(Client().call("status"))
        except DaemonError as e:
            checks = out.checks(None, e.message)
        show({"checks": checks}, fmt, out.lines)
        return 2 if any(c["status"] == "fail" for c in checks) else 0

    return _run(fmt, go)
