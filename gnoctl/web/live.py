"""One `watch` subscription to gnod, fanned out to every open page.

Pages listen through server-sent events (`/events/changes`, `/events/status`); each
gets a queue of its own. The subscription starts with the first listener and never
starts gnod itself (a daemon the user stopped stays stopped); it picks the stream up
again when gnod is back. `publish` also carries what this server's own calls learn
(an index run's progress), so the status page moves while a run it started goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator

from gnoctl.client import DaemonError
from gnoctl.mcp.daemon import DaemonLink

RETRY_S = 1.0
STOPPED = "stopped"  # the event the hub publishes when gnod goes away (no change of a document)
ENDED = "ended"  # the event that ends every stream: the server is stopping
QUEUE = 1000
SETTLE_S = 0.1


class Hub:
    def __init__(self, link: DaemonLink) -> None:
        self.link = link
        self._queues: set[asyncio.Queue[dict]] = set()
        self._follower: asyncio.Task | None = None
        self.live = asyncio.Event()  # set while the subscription is in place
        self.ended = False  # the server is stopping: a stream opened now ends at once

    def publish(self, event: dict) -> None:
        for q in list(self._queues):
            try:
                q.put_nowait(event)
            except asyncio.QueueFull:  # a page that stopped reading: it is told to refresh
                q.get_nowait()
                q.put_nowait({"kind": "lagged"})

    @contextlib.contextmanager
    def listen(self) -> Iterator[asyncio.Queue[dict]]:
        """A queue of the events from now on, for as long as the `with` lasts."""
        q: asyncio.Queue[dict] = asyncio.Queue(QUEUE)
        if self.ended:
            q.put_nowait({"kind": ENDED})
        self._queues.add(q)
        if self._follower is None or self._follower.done():
            self._follower = asyncio.create_task(self._follow(), name="gno-web:watch")
        try:
            yield q
        finally:
            self._queues.discard(q)

    async def _follow(self) -> None:
        while self._queues:
            watch = asyncio.create_task(self.link.call("watch", {}, self._on_notify, start=False))
            try:
                # gnod subscribes a `watch` as it reads it: a call sent once the watch has
                # gone out (a connection and one write: well within SETTLE_S) is answered
                # with the subscription in place.
                await asyncio.sleep(SETTLE_S)
                await self.link.call("status", {}, start=False)
                self.live.set()
                await watch  # returns when gnod stops
            except DaemonError:
                pass  # not running, or gone mid-stream: try again shortly
            finally:
                if self.live.is_set():  # gnod went away: the status page says so now
                    self.publish({"kind": STOPPED})
                self.live.clear()
                watch.cancel()
            await asyncio.sleep(RETRY_S)

    async def _on_notify(self, method: str, params: dict) -> None:
        if method == "change":
            self.publish({k: params.get(k) for k in ("kind", "collection", "path", "uri")})
        elif method == "lagged":
            self.publish({"kind": "lagged"})

    def end(self) -> None:
        """Every open stream ends (ENDED): on Ctrl-C the server then finds none running,
        where it cancelled each with a traceback."""
        self.ended = True
        self.publish({"kind": ENDED})

    def close(self) -> None:
        if self._follower is not None:
            self._follower.cancel()


def sse(event: str, data: object) -> str:
    """One server-sent event; `data` as JSON (one line, so no framing issue)."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
