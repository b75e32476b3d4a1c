"""`gnoctl mcp --http [HOST:]PORT`: the bridge over streamable HTTP.

Loopback by default. Every request needs `Authorization: Bearer <token>`, the token
kept in a file only this user can read (created on first use); Host and Origin are
checked against the bound address so a web page cannot reach the bridge through DNS
rebinding (gnoctl/local_http.py, shared with `gnoctl web`). A non-loopback bind
without a token is refused.
"""

from __future__ import annotations

import hmac
import os
import sys
from typing import Any

from gnoctl.local_http import HttpError, allowed, is_loopback, listen, load_token
from gnoctl.mcp.server import Bridge
from gnod.paths import Paths


def parse_bind(spec: str) -> tuple[str, int]:
    """`8765`, `127.0.0.1:8765`, `[::1]:8765` → (host, port)."""
    host, sep, port = spec.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    host = host.strip("[]")
    if not port.isdigit() or not 0 < int(port) < 65536 or not host:
        raise HttpError(f"--http wants [HOST:]PORT, e.g. 8765 or 127.0.0.1:8765, not {spec!r}")
    return host, int(port)


class BearerAuth:
    """ASGI middleware: HTTP requests without the right bearer token get 401."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            scheme, _, given = dict(scope["headers"]).get(b"authorization", b"").partition(b" ")
            # The scheme is case-insensitive (RFC 9110 §11.1); the token is compared in constant time.
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.expected):
                from starlette.responses import PlainTextResponse

                response = PlainTextResponse(
                    "missing or wrong bearer token", status_code=401, headers={"WWW-Authenticate": 'Bearer realm="gno"'}
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def serve(bridge: Bridge, version: str, bind: str, token_file: str | None, no_token: bool) -> int:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    host, port = parse_bind(bind)
    if no_token and not is_loopback(host):
        raise HttpError(
            f"refusing to serve {host} without a token: anyone who can reach it could read your "
            "documents (drop --no-token, or bind to 127.0.0.1)"
        )
    token = None
    if not no_token:  # in its file before the port accepts anyone who could have read it there
        token_file = token_file or os.path.join(Paths.from_env().state_dir, "mcp-token")
        token = load_token(token_file)
    sock = listen(host, port, "`gnoctl mcp --http`", lambda p: f"--http {host}:{p}")
    hosts, origins = allowed(host, port)
    server = bridge.server(version, await bridge.collections())
    app: Any = server.streamable_http_app(
        host=host,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
        ),
    )
    where = f"http://{hosts[0]}/mcp"
    if token is not None:
        app = BearerAuth(app, token)
        print(f"gnoctl mcp: serving {where} (bearer token in {token_file})", file=sys.stderr, flush=True)
    else:
        print(f"gnoctl mcp: serving {where} without a token (loopback only)", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        bridge.link.close()
    return 0
