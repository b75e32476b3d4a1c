#!/usr/bin/env python3
"""A minimal gnod client using only the standard library (see docs/protocol.md).

    python3 examples/client.py search 'deploy staging'   # one call, the result as JSON
    python3 examples/client.py watch [COLLECTION…]       # print each change as it happens

It does not start gnod: run `gnoctl daemon start` (or any gnoctl command) first.
Exit status as gnoctl's (docs/protocol.md): 2 an error, 3 gnod not running or gone (a
watch that ends because gnod stopped exits 3 too).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys

HEADER = struct.Struct(">I")  # every frame: a 4-byte big-endian length, then UTF-8 JSON
PROTOCOL = 1


class GnodError(Exception):
    """An error reply: its name and message are for the user, its code picks the exit status."""

    def __init__(self, error: dict) -> None:
        super().__init__(f"{error['data']['name']}: {error['message']}")
        self.status = 3 if error["code"] == -32001 else 2


def socket_path() -> str:
    """Where gnod listens: GNO_HOME, else XDG_RUNTIME_DIR, else the temp dir (per user)."""
    if os.environ.get("GNO_HOME"):
        return os.path.join(os.environ["GNO_HOME"], "run", "gnod.sock")
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "gno", "gnod.sock")
    tmp = os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(tmp, f"gno-{os.getuid()}", "gnod.sock")


class Connection:
    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.next_id = 0

    def send(self, method: str, params: dict) -> int:
        self.next_id += 1
        body = json.dumps(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params, "gno": PROTOCOL}
        ).encode()
        self.sock.sendall(HEADER.pack(len(body)) + body)
        return self.next_id

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            part = self.sock.recv(n - len(buf))
            if not part:
                raise ConnectionError("gnod closed the connection")
            buf += part
        return buf

    def receive(self) -> dict:
        (size,) = HEADER.unpack(self._read(HEADER.size))
        return json.loads(self._read(size))

    def call(self, method: str, params: dict, on_notification=None) -> dict:
        """Send a request; hand notifications to the callback; return the result (or raise)."""
        req_id = self.send(method, params)
        while True:
            msg = self.receive()
            if "id" not in msg:  # a notification: progress, token, change, lagged
                if on_notification:
                    on_notification(msg["method"], msg["params"])
            elif msg["id"] == req_id:
                if "error" in msg:
                    raise GnodError(msg["error"])
                return msg["result"]


def run(conn: Connection, argv: list[str]) -> int:
    if argv[0] == "search":
        print(json.dumps(conn.call("search", {"query": " ".join(argv[1:])}), indent=2))
        return 0

    def show(method: str, params: dict) -> None:
        if method == "change":
            print(params["kind"], params["uri"] or f"gno://{params['collection']}", flush=True)
        elif method == "lagged":
            print(f"lagged: {params['dropped']} changes missed, refresh", flush=True)

    try:
        conn.call("watch", {"collections": argv[1:]}, show)  # returns when gnod stops
    except KeyboardInterrupt:
        return 0
    print("client.py: gnod stopped: nothing more to watch", file=sys.stderr)
    return 3


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("search", "watch"):
        print(__doc__, file=sys.stderr)
        return 1
    try:
        return run(Connection(socket_path()), argv)
    except GnodError as e:
        print(f"client.py: {e}", file=sys.stderr)
        return e.status
    except (FileNotFoundError, ConnectionError) as e:  # no socket, or gnod went away mid-call
        print(f"client.py: gnod is not running ({e}): start it with `gnoctl daemon start`", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
