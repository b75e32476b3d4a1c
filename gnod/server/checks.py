"""Checks every search-like handler makes on its params before it reads anything."""

from __future__ import annotations

import os
from difflib import get_close_matches

from gnod import wire
from gnod.config import CollectionConfig, name_for
from gnod.protocol import Filters
from gnod.search import filters
from gnod.server.rpc import Daemon, RpcError


def find_collection(d: Daemon, name: str) -> CollectionConfig:
    """The named collection's config, or NOT_FOUND listing the ones there are."""
    col = d.collection(name)
    if col is not None:
        return col
    names = [c.name for c in d.config.collections]
    # A name as its folder was called (`Lit Review`: the collection is `Lit-Review`), or typed wrong.
    named = name_for(name)
    meant = named if d.collection(named) is not None else next(iter(get_close_matches(name, names, 1)), None)
    hint = f"did you mean {wire.said(meant)}? " if meant else ""
    known = ", ".join(names) or "none"
    raise RpcError(
        wire.NOT_FOUND, f"no collection named {wire.said(name)} ({hint}collections: {known})", {"name": name}
    )


def check_collections(d: Daemon, names: list[str]) -> None:
    for name in names:
        find_collection(d, name)


def search_filter(d: Daemon, collections: list[str], f: Filters) -> filters.Filter:
    """The search's filter, resolved: an unknown collection is NOT_FOUND, a filter the
    index cannot use INVALID_PARAMS. A path glob whose first folder is the name of a
    collection searched names it, as paths are printed (`tree/mm/**`): as in `get` and
    `ls`; an absolute one names the collection whose folder holds it (gnoctl sends
    `./mm` so: _inside); `./` in front is the collection's top. Globs that name
    different collections are INVALID_PARAMS. A `!` before a collection's whole folder
    (`!scans/*`, its absolute path) leaves that collection out (it left every document
    out, the search said none passed), and INVALID_PARAMS where none is left."""
    check_collections(d, collections)
    given = [f.path] if isinstance(f.path, str) else f.path or []
    named: set[str] = set()
    left_out: set[str] = set()
    globs = []
    for each in given:
        name, glob = _glob_in(d, each, collections)
        if name is not None and glob is None and each.startswith(filters.NOT):
            left_out.add(name)
            continue
        if name is not None:
            named.add(name)
        if glob is not None:
            globs.append(glob)
    if len(named) > 1:
        raise RpcError(wire.INVALID_PARAMS, f"path: the globs name different collections ({', '.join(sorted(named))})")
    chosen = tuple(named or collections)
    if left_out:
        chosen = tuple(c for c in chosen or [c.name for c in d.config.collections] if c not in left_out)
        if not chosen:
            said = ", ".join(filters.NOT + n for n in sorted(left_out))
            raise RpcError(wire.INVALID_PARAMS, f"path: {said} leaves every collection searched out")
    try:
        return filters.resolve(
            filters.Filter(
                collections=chosen,
                tags=tuple(f.tags),
                since=f.since,
                until=f.until,
                path=tuple(globs),
                types=tuple(f.types),
                lang=f.lang,
                sender=f.sender,
            )
        )
    except filters.FilterError as e:
        raise RpcError(wire.INVALID_PARAMS, str(e)) from None


def _glob_in(d: Daemon, glob: str, searched: list[str]) -> tuple[str | None, str | None]:
    """The collection a path glob names, if any, and the glob inside it (None: the
    whole collection, `!` before it or not), its `!` kept (search_filter)."""
    bang, path = (filters.NOT, glob[1:]) if glob.startswith(filters.NOT) else ("", glob)
    name = None
    if os.path.isabs(path):
        name, path = _inside(d, path, searched)
    while path.startswith("./"):
        path = path[2:]
    if path in (".", ""):  # the collection's top
        if bang and name is None:
            raise RpcError(wire.INVALID_PARAMS, f"path: {glob} leaves every document out")
        return name, None
    head, slash, rest = path.partition("/")
    if (
        name is None
        and slash
        and (rest or bang)
        and d.collection(head) is not None
        and (not searched or head in searched)
    ):
        if rest in ("", "*", "**"):  # its whole folder
            return head, None
        name, path = head, rest
    return name, bang + path


def _inside(d: Daemon, glob: str, searched: list[str]) -> tuple[str, str]:
    """The collection among `searched` (all when none) whose folder holds the absolute
    path `glob`, and the glob inside it ("" for the folder itself); INVALID_PARAMS for
    one outside them, which would match nothing."""
    found = holding(d, glob, searched)
    if found is None:
        cols = [c for c in d.config.collections if not searched or c.name in searched]
        folders = ", ".join(f"{c.name}: {c.path}" for c in cols) or "none"
        raise RpcError(wire.INVALID_PARAMS, f"path: {glob} is in no collection's folder searched ({folders})")
    return found


def holding(d: Daemon, path: str, among: list[str] | None = None) -> tuple[str, str] | None:
    """The collection among `among` (all when none) whose folder holds the absolute
    `path`, as given or through its links, and the path inside it ("" for the folder
    itself); None where none does."""
    forms = dict.fromkeys([path.rstrip("/"), os.path.realpath(path)])
    for c in d.config.collections:
        if among and c.name not in among:
            continue
        root = c.path.rstrip("/")
        for form in forms:
            if form == root or form.startswith(root + "/"):
                return c.name, form[len(root) + 1 :]
    return None
