"""Change notifications for `watch` subscribers: what each commit added, changed or removed.

The writer thread reports committed changes; the event loop fans them out to every
subscriber's own bounded queue. A subscriber that reads slower than changes come
never makes the daemon buffer without bound: once its queue is full, further changes
are counted instead of kept, and when it has caught up it gets one `lagged` notice
(how many it missed) so it can refresh whatever it shows.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from gnod.ingest.containers import file_of
from gnod.protocol import Change, ChangeKind, Lagged
from gnod.server.hits import doc_uri

if TYPE_CHECKING:
    from gnod.server.call import Call

ChangeList = list[tuple[ChangeKind, str | None]]  # [(kind, rel_path or None for the whole collection)]


class Subscription:
    """One `watch` call: its filter, its queue and the task that writes to its client."""

    def __init__(self, call: Call, collections: list[str], limit: int) -> None:
        self.call = call
        self.collections = frozenset(collections)
        self.limit = limit
        self.queue: deque[Change] = deque()
        self.lagging = False  # overflowed: drop everything until the queue is sent, then say so
        self.dropped = 0  # missed since the last `lagged` notice
        self.total_dropped = 0
        self.sent = 0
        self.wake = asyncio.Event()

    def offer(self, change: Change) -> None:
        if self.collections and change.collection not in self.collections:
            return
        if self.lagging or len(self.queue) >= self.limit:
            self.lagging = True
            self.dropped += 1
            self.total_dropped += 1
        else:
            self.queue.append(change)
        self.wake.set()

    async def pump(self, stopping: asyncio.Event) -> None:
        """Send queued changes, waiting for the socket to drain after each, until stopping."""
        stop = asyncio.ensure_future(stopping.wait())
        try:
            while not stopping.is_set():
                woken = asyncio.ensure_future(self.wake.wait())
                await asyncio.wait({woken, stop}, return_when=asyncio.FIRST_COMPLETED)
                woken.cancel()
                self.wake.clear()
                while self.queue or self.lagging:
                    if self.queue:
                        change = self.queue.popleft()
                        change.id = self.call.id
                        self.call.notify("change", change)
                        self.sent += 1
                    else:
                        self.call.notify("lagged", Lagged(id=self.call.id, dropped=self.dropped))
                        self.lagging, self.dropped = False, 0
                    # A slow reader holds us here, not in memory. A stopping daemon does not wait
                    # for one that stopped reading: its connection is dropped.
                    drained = asyncio.ensure_future(self.call.conn.writer.drain())
                    await asyncio.wait({drained, stop}, return_when=asyncio.FIRST_COMPLETED)
                    if not drained.done():
                        drained.cancel()
                        self.call.conn.writer.transport.abort()
                        return
        finally:
            stop.cancel()


class Events:
    """The daemon's subscribers; `publish` runs on the event loop."""

    def __init__(self, root_of: Callable[[str], str | None]) -> None:
        self._root_of = root_of  # a collection's folder now (None once removed)
        self._subs: set[Subscription] = set()

    def subscribe(self, sub: Subscription) -> None:
        self._subs.add(sub)

    def unsubscribe(self, sub: Subscription) -> None:
        self._subs.discard(sub)

    def publish(self, collection: str, changes: ChangeList) -> None:
        if not self._subs:
            return
        root = self._root_of(collection)
        for kind, rel in changes:
            abs_path = f"{root.rstrip('/')}/{file_of(rel)}" if root and rel is not None else None
            uri = doc_uri(collection, rel) if rel is not None else None
            for sub in self._subs:
                sub.offer(Change(id=None, collection=collection, kind=kind, path=rel, uri=uri, abs_path=abs_path))
