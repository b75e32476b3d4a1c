"""Every JSON-RPC method and its handler: the one table the daemon dispatches on.

It must name exactly the methods `protocol.METHOD_PARAMS` decodes params for; a
method added to one and not the other stops gnod at import, not at a client's call.
"""

from __future__ import annotations

from gnod.protocol import METHOD_PARAMS
from gnod.server import handlers, model_handlers, retrieval
from gnod.server.ask import ask
from gnod.server.query import query
from gnod.server.rpc import Handler
from gnod.server.similar import similar

METHODS: dict[str, Handler] = {
    "status": handlers.status,
    "collection.add": handlers.collection_add,
    "collection.list": handlers.collection_list,
    "collection.remove": handlers.collection_remove,
    "collection.describe": handlers.collection_describe,
    "index": handlers.index,
    "embed": handlers.embed,
    "get": handlers.get,
    "multi_get": handlers.multi_get,
    "ls": handlers.ls,
    "watch": handlers.watch,
    "shutdown": handlers.shutdown,
    "search": retrieval.search,
    "vsearch": retrieval.vsearch,
    "query": query,
    "ask": ask,
    "similar": similar,
    "models.list": model_handlers.models_list,
    "models.pull": model_handlers.models_pull,
    "models.use": model_handlers.models_use,
    "models.clear": model_handlers.models_clear,
}

if METHODS.keys() != METHOD_PARAMS.keys():
    raise ImportError(f"method table and protocol disagree: {sorted(METHODS.keys() ^ METHOD_PARAMS.keys())}")
