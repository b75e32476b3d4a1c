"""One in-flight request and the connection it came in on: what a handler streams
notifications through. Its own module so that both `rpc` (the handlers' view of the
daemon) and `events` (watch subscriptions) use it without importing each other."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol


class Peer(Protocol):
    """The client connection a call came in on."""

    loop: asyncio.AbstractEventLoop
    writer: asyncio.StreamWriter
    subscriptions: set[asyncio.Task]  # `watch` calls: they end with the client's input

    def send(self, message: Any) -> None: ...


class Call:
    """One in-flight request: lets a handler stream notifications back to its caller."""

    def __init__(self, conn: Peer, req_id: int | str | None) -> None:
        self.conn = conn
        self.id = req_id

    def notify(self, method: str, params: Any) -> None:
        self.conn.send({"jsonrpc": "2.0", "method": method, "params": params})

    def notify_threadsafe(self, method: str, params: Any) -> None:
        self.conn.loop.call_soon_threadsafe(self.notify, method, params)
