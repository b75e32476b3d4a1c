"""gnoctl entry point: a hand-parsed fast path for the hot commands, typer for the rest.

`gnoctl search`, `vsearch`, `query` and `get` are what editors and agents call in a
loop, and `status`, `ls`, `update`, `collection list` and `daemon status` what a person
runs to see what gnod is doing (when it is busy, above all), so they must not pay
typer's import (90–400 ms here): gnoctl.args parses them. Anything it does not
understand goes to typer (gnoctl.cli), which owns help, completion and error messages.
"""

from __future__ import annotations

import sys

from gnoctl.args import (
    FAST_OPTIONS,
    LS_LIMIT_MAX,
    Fallback,
    for_format,
    out_of_range,
    params,
    parse_fast,
    parse_plain,
    ref_from_here,
)

TYPE_CHECKING = False  # typing imports re: too slow here (mypy reads it as True)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def _fast(argv: list[str]) -> int | None:
    command = argv[0]
    try:
        opts, words = parse_fast(command, argv[1:])
    except Fallback:
        return None
    # Values out of range, or the wrong number of words, go to typer, which says what is wrong.
    if out_of_range(command, opts, words) or (opts.get("null") and opts.get("format") != "files"):
        return None
    autostart = False if opts.get("no_autostart") else None
    p = for_format(command, params(command, opts, words), opts.get("format"))
    here = ref_from_here(p["ref"]) if command == "get" else None  # as commands.get sends it first
    sent = _send_early(command, {**p, "ref": here} if here else p)
    from gnoctl import commands
    from gnoctl.output.common import View

    if command == "get":
        return commands.get(p, opts.get("format"), autostart, View(pager=not opts.get("no_pager")), sent=sent)
    view = View(opts.get("color", "auto"), not opts.get("no_pager"), bool(opts.get("null")))
    return commands.retrieve(command, p, opts.get("format"), autostart, view, sent=sent)


def _plain(argv: list[str]) -> int | None:
    """A PLAIN command (gnoctl.args), run as typer would run it; None: typer's to judge."""
    try:
        command, opts, words = parse_plain(argv)
    except Fallback:
        return None
    from gnoctl import commands

    fmt = opts.get("format")
    arg = words[0] if words else None
    if command == ("status",):
        if opts.get("watch") and opts.get("errors"):
            return None  # typer says why they do not go together
        autostart = False if opts.get("no_autostart") else None
        return commands.status(fmt, bool(opts.get("watch")), autostart, bool(opts.get("errors")))
    if command == ("update",):
        return commands.update(arg, fmt)
    if command == ("collection", "list"):
        return commands.collection_list(fmt)
    if command == ("daemon", "status"):
        return commands.daemon_status(fmt)
    if command == ("multi-get",):
        max_bytes = opts.get("max_bytes", commands.MULTI_GET_MAX_BYTES)
        if not (words or opts.get("pattern")) or max_bytes < 1 or (opts.get("null") and fmt != "files"):
            return None
        from gnoctl.output.common import View

        view = View(pager=not opts.get("no_pager"), null=bool(opts.get("null")))
        return commands.multi_get(words, opts.get("pattern"), max_bytes, fmt, view)
    limit = opts.get("limit")
    if (limit is not None and not 1 <= limit <= LS_LIMIT_MAX) or (opts.get("null") and fmt != "files"):
        return None
    if "collection" in opts:  # -c NAME, as a search names it: the argument's, given once
        if arg is not None and arg != opts["collection"]:
            return None
        arg = opts["collection"]
    from gnoctl.output.common import View

    view = View(opts.get("color", "auto"), not opts.get("no_pager"), bool(opts.get("null")))
    chosen = params("ls", opts, []).get("filters")
    return commands.ls(arg, opts.get("prefix", ""), limit, fmt, view, bool(opts.get("folders")), chosen)


def _send_early(method: str, p: dict) -> Callable[[], Any] | None:
    """Send the request now when gnod is up, so that gnoctl loads the rest of itself (its
    commands, its renderer: ~1 ms) while gnod searches; what reads the reply (or raises
    why nothing was sent: a listener that is not the user's own is not asked twice).
    None when a search's query is empty or no gnod listens: the call then goes the usual
    way, which starts gnod or says what is wrong."""
    if method != "get" and not p["query"].strip():
        return None
    from gnoctl.client import Client, DaemonError
    from gnod import wire

    client = Client(autostart=False)
    try:
        req_id = client.send(method, p)
    except DaemonError as e:
        client.close()
        if e.code == wire.NOT_RUNNING:
            return None
        refused = e

        def reply() -> Any:
            raise refused

        return reply
    except OSError:
        client.close()
        return None
    return lambda: client.reply(req_id)


def main(argv: list[str] | None = None, leave: bool = False) -> int:
    """Run one gnoctl command; its exit status. `leave` (the gnoctl program, not a caller
    in Python): a fast command ends the process once its output is out (see `run`)."""
    argv = sys.argv[1:] if argv is None else argv
    code = None
    try:
        if argv in (["--version"], ["-V"]):  # scripts ask it: not worth typer's import
            from gnod import __version__

            print(f"gnoctl {__version__}")
            code = 0
        elif argv:
            code = _fast(argv) if argv[0] in FAST_OPTIONS else _plain(argv)
            if code is not None and leave:
                _leave(code)
        if code is None:  # typer explains (and splits words from options as gnoctl.args does)
            from gnoctl import cli

            code = cli.run(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader stopped early (`| head`, `| grep -q`): not an error, as in ripgrep
        # (see gnoctl.commands._run); the status already decided stands.
        from gnoctl.output.common import quiet_stdout

        quiet_stdout()
        return code or 0
    except OSError as err:  # the output cannot be written (a full disk, a lost terminal)
        from gnoctl.output.common import quiet_stdout
        from gnod.wire import EXIT_ERROR

        quiet_stdout()
        where = f": {err.filename}" if err.filename else ""
        print(f"gnoctl: {err.strerror or err}{where}", file=sys.stderr)
        return EXIT_ERROR
    return code


def _leave(code: int) -> None:
    """Exit without Python's teardown (freeing every module and object: ~2 ms, a tenth
    of a search). A fast command has nothing left to finish: no threads, no atexit
    handlers, no open files; its output is flushed here (a closed pipe is `main`'s)."""
    sys.stdout.flush()
    sys.stderr.flush()
    import posix

    posix._exit(code)


def run() -> None:
    """The gnoctl program (its script and `python -m gnoctl.main`)."""
    sys.exit(main(leave=True))


if __name__ == "__main__":
    run()
