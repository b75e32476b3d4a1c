"""gnoctl entry point: a hand-parsed fast path for the hot commands, typer for the rest.

`gnoctl search`, `vsearch`, `query` and `get` are what editors and agents call in a
loop, so they must not pay typer's import (90–300 ms here): gnoctl.args parses them.
Anything it does not understand goes to typer (gnoctl.cli), which owns help,
completion and error messages.
"""

from __future__ import annotations

import sys

from gnoctl.args import FAST_OPTIONS, FILTERS, Fallback, parse_fast


def _fast(argv: list[str]) -> int | None:
    try:
        opts, words = parse_fast(argv[0], argv[1:])
    except Fallback:
        return None
    from gnoctl import commands
    from gnoctl.output.common import View

    autostart = False if opts.get("no_autostart") else None
    if argv[0] == "get":
        if len(words) != 1:
            return None
        return commands.get(
            words[0],
            opts.get("from_line"),
            opts.get("lines"),
            opts.get("format"),
            autostart,
            View(pager=not opts.get("no_pager")),
        )
    limit, score = opts.get("limit", 10), opts.get("min_score", 0.0)
    wait_s, mode, per_doc = opts.get("wait_s", 0.0), opts.get("mode", "standard"), opts.get("per_doc", 1)
    fmt = opts.get("format")
    # Out-of-range values go to typer, which says what the range is.
    if (
        not words
        or not 1 <= limit <= 1000
        or not 0.0 <= score <= 1.0
        or not 0.0 <= wait_s <= 600.0
        or mode not in ("standard", "deep")
        or not 1 <= per_doc <= 10
        or (opts.get("null") and fmt != "files")
    ):
        return None
    view = View(opts.get("color", "auto"), not opts.get("no_pager"), bool(opts.get("null")))
    query, cols = " ".join(words), opts["collections"]
    filters = {k: opts[k] for k in FILTERS if opts.get(k)}
    if argv[0] == "search":
        return commands.search(query, limit, score, cols, fmt, autostart, wait_s, view, filters, per_doc)
    if argv[0] == "vsearch":
        return commands.vsearch(query, limit, score, cols, fmt, autostart, view, filters)
    variants = commands.variants(opts.get("lexical", []), opts.get("semantic", []), opts.get("hyde"))
    return commands.query(
        query,
        limit,
        mode,
        score,
        cols,
        not opts.get("no_expand"),
        not opts.get("no_rerank"),
        bool(opts.get("explain")),
        fmt,
        autostart,
        wait_s,
        view,
        filters,
        variants,
    )


def main(argv: list[str] | None = None, leave: bool = False) -> int:
    """Run one gnoctl command; its exit status. `leave` (the gnoctl program, not a caller
    in Python): a fast command ends the process once its output is out (see `run`)."""
    argv = sys.argv[1:] if argv is None else argv
    code = None
    try:
        if argv and argv[0] in FAST_OPTIONS:
            code = _fast(argv)
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
        from gnod.wire import EXIT_RUNTIME

        quiet_stdout()
        where = f": {err.filename}" if err.filename else ""
        print(f"gnoctl: {err.strerror or err}{where}", file=sys.stderr)
        return EXIT_RUNTIME
    return code


def _leave(code: int) -> None:
    """Exit without Python's teardown (freeing every module and object: ~2 ms, a tenth
    of a search). A fast command has nothing left to finish: no threads, no atexit
    handlers, no open files; its output is flushed here (a closed pipe is `main`'s)."""
    sys.stdout.flush()
    sys.stderr.flush()
    import os

    os._exit(code)


def run() -> None:
    """The gnoctl program (its script and `python -m gnoctl.main`)."""
    sys.exit(main(leave=True))


if __name__ == "__main__":
    run()
