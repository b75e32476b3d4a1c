"""Checks every search-like handler makes on its params before it reads anything."""

from __future__ import annotations

from gnod import wire
from gnod.config import CollectionConfig
from gnod.protocol import Filters
from gnod.search import filters
from gnod.server.rpc import Daemon, RpcError


def find_collection(d: Daemon, name: str) -> CollectionConfig:
    """The named collection's config, or NOT_FOUND listing the ones there are."""
    col = d.collection(name)
    if col is not None:
        return col
    known = ", ".join(c.name for c in d.config.collections) or "none"
    raise RpcError(wire.NOT_FOUND, f"no collection named {name!r} (collections: {known})", {"name": name})


def check_collections(d: Daemon, names: list[str]) -> None:
    for name in names:
        find_collection(d, name)


def search_filter(d: Daemon, collections: list[str], f: Filters) -> filters.Filter:
    """The search's filter, resolved: an unknown collection is NOT_FOUND, a filter the
    index cannot use INVALID_PARAMS. A path glob whose first folder is the name of a
    collection searched names it, as paths are printed (`tree/mm/**`): as in `get` and `ls`."""
    check_collections(d, collections)
    path = f.path
    head, slash, rest = (path or "").partition("/")
    if slash and rest and d.collection(head) is not None and (not collections or head in collections):
        collections, path = [head], rest
    try:
        return filters.resolve(
            filters.Filter(
                collections=tuple(collections),
                tags=tuple(f.tags),
                since=f.since,
                until=f.until,
                path=path,
                lang=f.lang,
                sender=f.sender,
            )
        )
    except filters.FilterError as e:
        raise RpcError(wire.INVALID_PARAMS, str(e)) from None
