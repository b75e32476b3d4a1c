"""Live updates for MCP clients: gnod's `watch` stream becomes `subscriptions/listen` events.

A saved file is a `ResourceUpdated` for its gno:// uri; an added or removed document
(or a `lagged` notice: changes were missed) is `ResourcesListChanged`. One follower per
bridge, started by the first listener; it never starts gnod itself (a daemon the user
stopped stays stopped) and picks the stream up again when gnod is back.
"""

from __future__ import annotations

import asyncio

from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

from gnoctl.client import DaemonError
from gnoctl.mcp.daemon import DaemonLink

RETRY_S = 1.0


class Live:
    def __init__(self, link: DaemonLink) -> None:
        self.link = link
        self.bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self.bus)
        self._follower: asyncio.Task | None = None

    async def listen(self, ctx, params):
        if self._follower is None or self._follower.done():
            self._follower = asyncio.create_task(self._follow(), name="gno:watch")
        return await self._listen(ctx, params)

    async def _follow(self) -> None:
        while True:
            try:
                await self.link.call("watch", {}, self._on_change, start=False)  # returns when gnod stops
            except DaemonError:
                pass  # not running, or gone mid-stream: try again shortly
            await asyncio.sleep(RETRY_S)

    async def _on_change(self, method: str, params: dict) -> None:
        if method == "change":
            if params.get("uri"):
                await self.bus.publish(ResourceUpdated(uri=params["uri"]))
            if params.get("kind") != "changed":
                await self.bus.publish(ResourcesListChanged())
        elif method == "lagged":
            await self.bus.publish(ResourcesListChanged())
