"""Serving HTTP to this user's browser or agents only: shared by `gnoctl mcp --http` and
`gnoctl web` (each imports it inside its command, so `gnoctl search` never loads it).

Loopback by default; a secret kept in a file only this user can read (created on first
use); the Host and Origin a request may carry, derived from the bound address, so a web
page cannot reach the server through DNS rebinding; a port in use said plainly.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import secrets
import socket
import stat
from collections.abc import Callable

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class HttpError(Exception):
    """A setting that makes serving unsafe or impossible; the message says which (gnoctl
    exits wire.EXIT_ERROR)."""


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
            raise HttpError(
                f"the token in {path} is shorter than 16 characters; delete the file for a new one"
            ) from None
        return token
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        token = secrets.token_urlsafe(32)
        f.write(token + "\n")
    return token


def listen(host: str, port: int, who: str, retry: Callable[[int], str]) -> socket.socket:
    """The bound, listening socket, before anything says it is served: a port in use is said plainly
    (`who` might hold it; `retry(port)` is the option that picks another)."""
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
            raise HttpError(
                f"port {port} on {host} is taken (another {who}?): "
                f"choose another, e.g. {retry(port + 1 if port < 65535 else port - 1)}"
            ) from None
        raise HttpError(f"cannot serve on {host}:{port}: {e.strerror}") from None
    sock.listen(socket.SOMAXCONN)  # a browser opened at once waits in the backlog, not refused
    return sock


def allowed(host: str, port: int) -> tuple[list[str], list[str]]:
    """Host header values and Origins accepted for a server bound to host:port."""
    names = list(LOOPBACK_NAMES) if is_loopback(host) else [f"[{host}]" if ":" in host else host]
    return [f"{n}:{port}" for n in names], [f"http://{n}:{port}" for n in names]
