"""The bridge's asyncio client of gnod: one socket per call in flight, idle ones reused,
at most CALLS_MAX calls in flight (the others wait their turn in the bridge).

A call owns its connection while it runs, so cancelling it is closing that socket,
which is what makes gnod stop the work (an `ask` stops generating). gnod is started
when absent, and a call that finds its daemon gone (restarted, upgraded) is sent
again once on a fresh connection when that cannot apply it twice.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable

from gnoctl.client import DaemonError, retry_wait, start_daemon, with_autostart_wait
from gnod import wire
from gnod.paths import Paths

Notify = Callable[[str, dict], Awaitable[None]]

# Methods that change nothing: safe to send again after the daemon went away mid-call.
READ_ONLY = frozenset(
    {"status", "search", "vsearch", "query", "ask", "get", "multi_get", "ls", "collection.list", "models.list"}
)
IDLE_MAX = 4
# Calls a bridge has in flight at once: an agent's burst beyond them waits in the bridge,
# where 8 agents each sending 40 at once took more than gnod's MAX_CONNECTIONS sockets
# and heard BUSY for some. `watch` is not counted: it holds its socket while gnod runs.
CALLS_MAX = 16
_UNCOUNTED = frozenset({"watch"})


class _Gone(Exception):
    """The connection ended before the reply: gnod exited or restarted."""

    def __init__(self, delivered: bool) -> None:
        super().__init__()
        self.delivered = delivered  # the request was written: gnod may have acted on it


class DaemonLink:
    def __init__(self, paths: Paths | None = None, autostart: bool | None = None) -> None:
        self.paths = paths or Paths.from_env()
        if autostart is None:
            autostart = os.environ.get("GNO_NO_AUTOSTART", "") not in ("1", "true", "yes")
        self.autostart = autostart
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._turns = asyncio.Semaphore(CALLS_MAX)
        self._next_id = 0
        # This link started gnod, and no search has waited for its scan at start since.
        self._started = False

    async def _open(self, start: bool = True) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        path = self.paths.socket_path
        try:
            return await asyncio.open_unix_connection(path, limit=wire.MAX_FRAME)
        except (FileNotFoundError, ConnectionRefusedError):
            if not (self.autostart and start):
                raise DaemonError(
                    wire.NOT_RUNNING,
                    "gnod is not running (start it with `gnoctl daemon start`, or unset GNO_NO_AUTOSTART)",
                ) from None
        await asyncio.to_thread(start_daemon, self.paths)
        self._started = True
        return await asyncio.open_unix_connection(path, limit=wire.MAX_FRAME)

    async def call(self, method: str, params: dict, on_notify: Notify | None = None, start: bool = True) -> dict:
        """The method's result; DaemonError for an error reply or no daemon (`start`: may start one).
        A read gnod refused as overloaded is sent again once after the wait it names
        (client.retry_wait): an agent's `get` of three lines was refused behind 50 busy agents."""
        try:
            return await self._turn(method, params, on_notify, start)
        except DaemonError as e:
            wait = retry_wait(e) if method in READ_ONLY else None
            if wait is None:
                raise
        await asyncio.sleep(wait)
        return await self._turn(method, params, on_notify, start)

    async def _turn(self, method: str, params: dict, on_notify: Notify | None, start: bool) -> dict:
        """`_call`, once one of the CALLS_MAX turns is free."""
        if method in _UNCOUNTED:
            return await self._call(method, params, on_notify, start)
        async with self._turns:
            return await self._call(method, params, on_notify, start)

    async def _call(self, method: str, params: dict, on_notify: Notify | None, start: bool) -> dict:
        conn = self._idle.pop() if self._idle else await self._open(start)
        if self._started and (waiting := with_autostart_wait(method, params)) is not params:
            # The first search after this link started gnod waits for its scan at start, as
            # gnoctl's does: an agent's first answers were false negatives while it ran.
            params, self._started = waiting, False
        try:
            return await self._exchange(conn, method, params, on_notify)
        except _Gone as gone:
            # An idle socket whose daemon has since exited refuses the write: nothing was
            # sent. A read can always be sent again; a write that went out may have been applied.
            if gone.delivered and method not in READ_ONLY:
                raise DaemonError(
                    wire.CANCELLED,
                    f"lost the connection to gnod during {method}; check `status` before trying again",
                ) from None
        conn = await self._open(start)
        try:
            return await self._exchange(conn, method, params, on_notify)
        except _Gone:
            raise DaemonError(
                wire.CANCELLED, f"gnod closed the connection during {method} (it stopped or restarted): call again"
            ) from None

    async def _exchange(self, conn, method: str, params: dict, on_notify: Notify | None) -> dict:
        reader, writer = conn
        self._next_id += 1
        req_id = self._next_id
        body = json.dumps(
            {"jsonrpc": "2.0", "id": req_id, "method": method, "params": params, "gno": wire.PROTOCOL_VERSION}
        ).encode()
        done = delivered = False
        try:
            writer.write(wire.frame(body))
            await writer.drain()
            delivered = True
            while True:
                size = wire.frame_size(await reader.readexactly(wire.HEADER_SIZE))
                msg = json.loads(await reader.readexactly(size))
                if msg.get("id") == req_id:
                    done = True
                    if "error" in msg:
                        raise _error(msg["error"])
                    return msg["result"]
                if msg.get("error"):  # a connection-level error (id null)
                    raise _error(msg["error"])
                if on_notify is not None and "method" in msg:
                    await on_notify(msg["method"], msg.get("params") or {})
        except (asyncio.IncompleteReadError, ConnectionError):
            raise _Gone(delivered) from None
        finally:
            # Only a socket whose call completed goes back: closing one mid-call cancels the call.
            if done and len(self._idle) < IDLE_MAX:
                self._idle.append(conn)
            else:
                writer.close()

    def close(self) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()


def _error(err: dict) -> DaemonError:
    data = err.get("data") or {}
    return DaemonError(
        err.get("code", wire.INTERNAL_ERROR), err.get("message", "unknown error"), data.get("details"), data.get("name")
    )
