"""Every JSON-RPC method and its handler: the one table the daemon dispatches on.

Each entry pairs a `protocol.Method` with its handler, and mypy checks that the handler
takes the method's params Struct and returns its result Struct. It must name exactly the
methods of `protocol.METHODS`; a method added to one and not the other stops gnod at
import, not at a client's call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from msgspec import Struct

from gnod import protocol as P
from gnod.server import handlers, model_handlers, retrieval
from gnod.server.ask import ask
from gnod.server.query import query
from gnod.server.rpc import Call, Daemon, Handler
from gnod.server.similar import similar

PT = TypeVar("PT", bound=P.Params)
RT = TypeVar("RT", bound=Struct)


def _route(method: P.Method[PT, RT], handler: Callable[[Daemon, PT, Call], Awaitable[RT]]) -> tuple[str, Handler]:
    return method.name, handler


METHODS: dict[str, Handler] = dict(
    [
        _route(P.STATUS, handlers.status),
        _route(P.COLLECTION_ADD, handlers.collection_add),
        _route(P.COLLECTION_LIST, handlers.collection_list),
        _route(P.COLLECTION_REMOVE, handlers.collection_remove),
        _route(P.COLLECTION_DESCRIBE, handlers.collection_describe),
        _route(P.COLLECTION_SET, handlers.collection_set),
        _route(P.INDEX, handlers.index),
        _route(P.EMBED, handlers.embed),
        _route(P.GET, handlers.get),
        _route(P.MULTI_GET, handlers.multi_get),
        _route(P.LS, handlers.ls),
        _route(P.WATCH, handlers.watch),
        _route(P.SHUTDOWN, handlers.shutdown),
        _route(P.SEARCH, retrieval.search),
        _route(P.VSEARCH, retrieval.vsearch),
        _route(P.QUERY, query),
        _route(P.ASK, ask),
        _route(P.SIMILAR, similar),
        _route(P.MODELS_LIST, model_handlers.models_list),
        _route(P.MODELS_PULL, model_handlers.models_pull),
        _route(P.MODELS_USE, model_handlers.models_use),
        _route(P.MODELS_CLEAR, model_handlers.models_clear),
    ]
)

if METHODS.keys() != P.METHODS.keys():
    raise ImportError(f"method table and protocol disagree: {sorted(METHODS.keys() ^ P.METHODS.keys())}")
