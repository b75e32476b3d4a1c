"""Checks every search-like handler makes on its params before it reads anything."""

from __future__ import annotations

from typing import TypeVar

from gnod import wire
from gnod.config import CollectionConfig
from gnod.search import filters
from gnod.server.app import Daemon, RpcError

P = TypeVar("P")


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


def resolve_filters(params: P) -> P:
    """Params with their filters resolved; a filter the index cannot use is INVALID_PARAMS."""
    try:
        return filters.resolved(params)
    except filters.FilterError as e:
        raise RpcError(wire.INVALID_PARAMS, str(e)) from None
