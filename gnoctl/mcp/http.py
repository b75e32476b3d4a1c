"""`gnoctl mcp --http [HOST:]PORT`: the bridge over streamable HTTP.

Loopback by default. Every request needs `Authorization: Bearer <token>`, the token
kept in a file only this user can read (created on first use); Host and Origin are
checked against the bound address so a web page cannot reach the bridge through DNS
rebinding. A non-loopback bind without a token is refused.
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import os
import secrets
import socket
import stat
import sys
from typing import Any

from gnoctl.mcp.server import Bridge
from gnod.paths import Paths

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class HttpError(Exception):
    """A setting that makes serving unsafe or impossible; the message says which, `status`
    is gnoctl's exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def parse_bind(spec: str) -> tuple[str, int]:
    """`8765`, `127.0.0.1:8765`, `[::1]:8765` → (host, port)."""
    host, sep, port = spec.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    host = host.strip("[]")
    if not port.isdigit() or not 0 < int(port) < 65536 or not host:
        raise HttpError(f"--http wants [HOST:]PORT, e.g. 8765 or 127.0.0.1:8765, not {spec!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load_token(path: str) -> str:
    """The token in `path`, created (0600) when the file does not exist yet."""
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        mode = os.stat(path).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise HttpError(f"{path} can be read by other users: chmod 600 {path}") from None
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
        if len(token) < 16:
            raise HttpError(f"the token in {path} is shorter than 16 characters; "
                            "delete the file for a new one") from None
        return token
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        token = secrets.token_urlsafe(32)
        f.write(token + "\n")
    return token


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

                response = PlainTextResponse("missing or wrong bearer token", status_code=401,
                                             headers={"WWW-Authenticate": 'Bearer realm="gno"'})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def listen(host: str, port: int) -> socket.socket:
    """The bound socket, before anything says it is served: a port in use is said plainly."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise HttpError(f"cannot serve on {host}: {e.strerror}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise HttpError(f"port {port} on {host} is taken (another `gnoctl mcp --http`?): "
                            f"choose another, e.g. --http {host}:{port + 1 if port < 65535 else port - 1}",
                            status=2) from None
        raise HttpError(f"cannot serve on {host}:{port}: {e.strerror}") from None
    return sock


def allowed(host: str, port: int) -> tuple[list[str], list[str]]:
    """Host header values and Origins accepted for a bridge bound to host:port."""
    names = list(LOOPBACK_NAMES) if is_loopback(host) else [f"[{host}]" if ":" in host else host]
    return [f"{n}:{port}" for n in names], [f"http://{n}:{port}" for n in names]


async def serve(bridge: Bridge, version: str, bind: str, token_file: str | None, no_token: bool) -> int:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    host, port = parse_bind(bind)
    if no_token and not is_loopback(host):
        raise HttpError(f"refusing to serve {host} without a token: anyone who can reach it could read your "
                        "documents (drop --no-token, or bind to 127.0.0.1)")
    sock = listen(host, port)
    hosts, origins = allowed(host, port)
    server = bridge.server(version, await bridge.collections())
    app: Any = server.streamable_http_app(host=host, transport_security=TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins))
    where = f"http://{hosts[0]}/mcp"
    if not no_token:
        token_file = token_file or os.path.join(Paths.from_env().state_dir, "mcp-token")
        app = BearerAuth(app, load_token(token_file))
        print(f"gnoctl mcp: serving {where} (bearer token in {token_file})", file=sys.stderr, flush=True)
    else:
        print(f"gnoctl mcp: serving {where} without a token (loopback only)", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        bridge.link.close()
    return 0
