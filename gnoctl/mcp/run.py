"""Run the bridge over stdio (the default: ends when stdin closes) or streamable HTTP."""

from __future__ import annotations

import asyncio
import sys

from gnoctl.mcp.daemon import DaemonLink
from gnoctl.mcp.server import Bridge
from gnod import __version__, wire


async def _stdio(bridge: Bridge) -> None:
    from mcp.server.stdio import stdio_server

    server = bridge.server(__version__, await bridge.collections())
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        bridge.link.close()


def run(http: str | None, enable_write: bool, token_file: str | None, no_token: bool) -> int:
    bridge = Bridge(DaemonLink(), enable_write)
    try:
        if http is None:
            asyncio.run(_stdio(bridge))
            return 0
        from gnoctl.mcp.http import HttpError, serve

        try:
            return asyncio.run(serve(bridge, __version__, http, token_file, no_token))
        except HttpError as e:
            print(f"gnoctl mcp: {e}", file=sys.stderr)
            return wire.EXIT_ERROR
    except KeyboardInterrupt:
        return 130
