"""Live updates for MCP clients: gnod's `watch` stream becomes resource notifications.

A saved file is a `ResourceUpdated` for its gno:// uri; an added or removed document
(or a `lagged` notice: changes were missed) is `ResourcesListChanged`. Clients of
protocol 2026-07-28 get them as `subscriptions/listen` events; clients of the earlier
versions (2025-11-25 and before: what most agents speak) subscribe to a uri with
`resources/subscribe` and get `notifications/resources/updated` for it, and every
session that subscribed or listed the resources gets `notifications/resources/list_changed`.
One follower per bridge, started by the first listener or subscriber; it never starts
gnod itself (a daemon the user stopped stays stopped) and picks the stream up again
when gnod is back.
"""

from __future__ import annotations

import asyncio
import logging

import mcp_types as types
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS as MODERN

from gnoctl.client import DaemonError
from gnoctl.mcp.daemon import DaemonLink

RETRY_S = 1.0
# Changes heard within this long are told once each: a rename (a removal and an addition)
# was two list_changed notifications, an editor's save through a temporary file four.
TELL_AFTER_S = 0.1
log = logging.getLogger("gnoctl.mcp")


def _client(ctx) -> object:
    """The client a request came from, the same for all its requests: the SDK's connection
    (ctx.session is a proxy made per request: a client that listed the resources and
    subscribed to one was told every change twice, as two sessions)."""
    return getattr(ctx.session, "_connection", ctx.session)


def _named(collections: list[dict]) -> frozenset[tuple[str, str]]:
    """What the tools say of the collections: each one's name and description."""
    return frozenset((c["name"], c.get("description") or "") for c in collections)


class Live:
    def __init__(self, link: DaemonLink) -> None:
        self.link = link
        self.bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self.bus)
        self._follower: asyncio.Task | None = None
        # Earlier-protocol sessions → the uris each subscribed to (none: it listed resources).
        self._sessions: dict[object, set[str]] = {}
        self._updated: dict[str, None] = {}  # documents changed since the last telling, in order
        self._listed = False  # and whether the list of documents changed
        self._telling: asyncio.Task | None = None
        # The tools name the collections (their `collections` argument): the collections a
        # client was last told of, the earlier-protocol clients that listed the tools, and
        # whether a change may have added or removed a collection since the last telling.
        self._collections: frozenset[tuple[str, str]] | None = None
        self._tool_clients: set[object] = set()
        self._recollect = False

    def _start(self) -> None:
        if self._follower is None or self._follower.done():
            self._follower = asyncio.create_task(self._follow(), name="gno:watch")

    async def listen(self, ctx, params):
        self._start()
        return await self._listen(ctx, params)

    def note(self, ctx) -> None:
        """A session that listed the resources hears when the list changes."""
        if ctx.protocol_version not in MODERN:
            self._sessions.setdefault(_client(ctx), set())
            self._start()

    def told_tools(self, ctx, collections: list[dict]) -> None:
        """A client was given the tools, which name these collections: it hears when they change."""
        self._collections = _named(collections)
        if ctx.protocol_version not in MODERN:
            self._tool_clients.add(_client(ctx))
        self._start()

    async def subscribe(self, ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self._sessions.setdefault(_client(ctx), set()).add(str(params.uri))
        self._start()
        return types.EmptyResult()

    async def unsubscribe(self, ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self._sessions.get(_client(ctx), set()).discard(str(params.uri))
        return types.EmptyResult()

    async def _notify(self, updated: list[str], listed: bool) -> None:
        for session, uris in list(self._sessions.items()):
            try:
                for uri in updated:
                    if uri in uris:
                        await session.send_resource_updated(uri)  # type: ignore[attr-defined]
                if listed:
                    await session.send_resource_list_changed()  # type: ignore[attr-defined]
            except Exception as e:  # the client has gone: forget it
                log.debug("dropping a closed MCP session: %s", e)
                self._sessions.pop(session, None)

    async def _follow(self) -> None:
        while True:
            # gnod may have started (again) since the tools were listed: with no collections
            # when it was down, or with others.
            await self._tell_collections()
            try:
                await self.link.call("watch", {}, self._on_change, start=False)  # returns when gnod stops
            except DaemonError:
                pass  # not running, or gone mid-stream: try again shortly
            await asyncio.sleep(RETRY_S)

    async def _on_change(self, method: str, params: dict) -> None:
        if method == "change":
            uri, listed = params.get("uri"), params.get("kind") != "changed"
            known = self._collections is not None and any(
                name == params.get("collection") for name, _ in self._collections
            )
            # The collection itself (added, described, removed: no uri), or one not known yet.
            self._recollect |= uri is None or (listed and not known)
        elif method == "lagged":
            uri, listed = None, True
        else:
            return
        if uri:
            self._updated[uri] = None
        self._listed |= listed
        if self._telling is None or self._telling.done():
            self._telling = asyncio.create_task(self._tell())

    async def _tell(self) -> None:
        """What changed in the last TELL_AFTER_S, told once: each document, then the list."""
        await asyncio.sleep(TELL_AFTER_S)
        updated, listed = list(self._updated), self._listed
        self._updated, self._listed = {}, False
        for uri in updated:
            await self.bus.publish(ResourceUpdated(uri=uri))
        if listed:
            await self.bus.publish(ResourcesListChanged())
        await self._notify(updated, listed)
        if self._recollect:
            self._recollect = False
            await self._tell_collections()

    async def _tell_collections(self) -> None:
        """Tell the clients given the tools that they changed, where the collections did."""
        try:
            now = _named((await self.link.call("collection.list", {}, start=False))["collections"])
        except DaemonError:
            return
        if self._collections is None or now == self._collections:
            return
        self._collections = now
        await self.bus.publish(ToolsListChanged())
        for client in list(self._tool_clients):
            try:
                await client.send_tool_list_changed()  # type: ignore[attr-defined]
            except Exception as e:  # the client has gone: forget it
                log.debug("dropping a closed MCP session: %s", e)
                self._tool_clients.discard(client)
