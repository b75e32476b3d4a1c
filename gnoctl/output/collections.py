"""`collection add|list|remove|describe` and `update`: collections and what an index run did."""

from __future__ import annotations

import sys


def index_lines(res: dict) -> list[str]:
    """One line per collection an index run went through: what it found and changed."""
    return [
        f"{s['collection']}: {s['scanned']} files, {s['added']} added, {s['updated']} updated, "
        f"{s['unchanged']} unchanged, {s['removed']} removed, {s['errors']} errors "
        f"({s['seconds']:.2f}s)"
        for s in res["collections"]
    ]


def say_stopped_waiting(what: str) -> None:
    """Ctrl-C during an index run: gnod goes on with it, and the user is told so."""
    print(
        f"gnoctl: stopped waiting; gnod goes on indexing {what} in the background (gnoctl status shows how far it is)",
        file=sys.stderr,
    )


def list_lines(res: dict) -> list[str]:
    if not res["collections"]:
        return ["no collections yet: gnoctl collection add PATH"]
    lines = []
    for c in res["collections"]:
        extra = f" language={c['language']}" if c.get("language") else ""
        lines.append(f"{c['name']:<16} {c['documents']:>7} docs  {c['path']}{extra}")
        if c.get("description"):
            lines.append(f"{'':<16} {c['description']}")
    return lines


def described_lines(c: dict) -> list[str]:
    """`collection describe`: the description now in force (or that there is none)."""
    if c.get("description"):
        return [f"{c['name']}: {c['description']}"]
    return [f'{c["name"]}: no description (gnoctl collection describe {c["name"]} "WHAT IT HOLDS")']


def removed_lines(res: dict) -> list[str]:
    return [f"removed collection {res['name']} ({res['documents_removed']} documents)"]
