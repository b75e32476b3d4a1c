"""`gnoctl web`: bind, print the address with its key, serve until Ctrl-C.

A client of gnod's socket like `gnoctl mcp` (no index, no model); started gnod when it
is not running, as every gnoctl command does.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import sys
import webbrowser
from types import FrameType

from gnoctl.local_http import HttpError, allowed, is_loopback, listen, load_token
from gnoctl.mcp.daemon import DaemonLink
from gnoctl.output import links
from gnoctl.web.app import Web, create
from gnoctl.web.security import Guard, Sessions
from gnod import wire
from gnod.paths import Paths

GRACE_S = 1  # open event streams are closed after this on Ctrl-C, not waited for
# A request's line and headers, at most: a search's address holds the query, up to the
# grammar's 32,000 characters, each up to 9 once encoded (a pasted page went over h11's
# 16 KB and got "Invalid HTTP request received.", which the page took for gno web gone).
REQUEST_HEAD_MAX_BYTES = 512 * 1024


def _names(host: str, port: int) -> tuple[list[str], list[str]]:
    """Hosts and Origins a browser may use: for a wildcard bind, this machine's names too."""
    hosts, origins = allowed(host, port)
    try:
        wildcard = ipaddress.ip_address(host).is_unspecified
    except ValueError:
        wildcard = False
    if wildcard:
        for name in {socket.gethostname(), socket.getfqdn()}:
            hosts.append(f"{name}:{port}")
            origins.append(f"http://{name}:{port}")
    return hosts, origins


async def _serve(host: str, port: int, open_browser: bool, allow_remote: bool) -> int:
    import uvicorn

    if not is_loopback(host) and not allow_remote:
        raise HttpError(
            f"refusing to serve {host}: anyone who can reach it and learns the key could read your "
            "documents, over plain HTTP (add --allow-remote to insist, or drop --host)"
        )
    key_file = os.path.join(Paths.from_env().state_dir, "web-key")
    key = load_token(key_file)  # in its file before anyone can connect
    sock = listen(host, port, "`gnoctl web`", lambda p: f"--port {p} (or --port 0: any free port)")
    port = sock.getsockname()[1]
    sessions = Sessions(key, port)
    hosts, origins = _names(host, port)
    web = Web(DaemonLink(), links.editor_template())
    app = Guard(create(web), sessions, hosts, origins)
    address = f"http://{hosts[0]}/?key={sessions.secret}"
    print(f"gnoctl web: open {address}", flush=True)
    print(f"(the key is kept in {key_file}; Ctrl-C stops)", file=sys.stderr, flush=True)
    if not is_loopback(host):
        print(
            "gnoctl web: serving beyond this machine over plain HTTP: the key and your documents cross "
            "the network unencrypted",
            file=sys.stderr,
            flush=True,
        )
    if open_browser and not webbrowser.open(address):
        print("gnoctl web: no browser to open here: open the address above", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=GRACE_S,
        h11_max_incomplete_event_size=REQUEST_HEAD_MAX_BYTES,
    )
    loop = asyncio.get_running_loop()

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            loop.call_soon_threadsafe(web.hub.end)  # the open pages' streams end first
            super().handle_exit(sig, frame)

    try:
        await Server(config).serve(sockets=[sock])
    finally:
        web.close()
    return 0


def run(host: str, port: int, open_browser: bool, allow_remote: bool) -> int:
    try:
        return asyncio.run(_serve(host, port, open_browser, allow_remote))
    except HttpError as e:
        print(f"gnoctl web: {e}", file=sys.stderr)
        return wire.EXIT_ERROR
    except KeyboardInterrupt:
        return 130
