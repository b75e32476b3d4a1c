"""Hostile frames against a real gnod: how many inputs killed it, hung, or got INTERNAL.

    python benchmarks/malformed_inputs.py [--n 2000] [--seed 1]

Starts a throwaway gnod with one small collection, then sends --n inputs, each on a
fresh connection, drawn from these families: random bytes as a body; valid requests
with one envelope field (jsonrpc, id, method, params, gno) replaced by deep nesting,
invalid UTF-8, a wrong type or a missing value; bad `get`/`multi_get` references
(superscript digits, huge numbers, NUL bytes, broken globs); raw bytes inside a search
query. A reply must arrive within --reply-timeout seconds. Then --half-frames
connections at once each send part of a frame and stop: a reply must arrive within
the frame deadline plus --reply-timeout. Prints inputs=, deaths=, hangs=, internal=
(INTERNAL replies), errors= (other error replies), closed= (hung up without a reply),
results=, and per family family_<name>_bad= (deaths + hangs + internal).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import struct
import tempfile
from concurrent.futures import ThreadPoolExecutor

from common import Daemon, emit
from gnod import wire

FIELDS = ("jsonrpc", "id", "method", "params", "gno")


def _deep(n: int) -> bytes:
    return b"[" * n + b"]" * n


def _envelope(field: str, raw: bytes, method: str = "status") -> bytes:
    parts = {"jsonrpc": b'"2.0"', "id": b"1", "method": json.dumps(method).encode(), "params": b"{}", "gno": b"1"}
    parts[field] = raw
    return b"{" + b",".join(b'"%s":%s' % (k.encode(), v) for k, v in parts.items() if v is not None) + b"}"


def family_bytes(rng: random.Random) -> tuple[bytes, bool]:
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))), True


def family_envelope(rng: random.Random) -> tuple[bytes, bool]:
    field = rng.choice(FIELDS)
    raw = rng.choice(
        [
            _deep(rng.choice([100, 1000, 5000, 20000])),
            b'"a\xff\xfeb"',
            b'"\xc3"',
            b"null",
            b"[]",
            b"{}",
            b"1e999",
            b'"1.0"',
            b'"2"',
            b'""',
            b"-1",
            b'{"a":' * 3000 + b"1" + b"}" * 3000,
        ]
    )
    if field == "id" and raw == b"null":
        raw = b"true"  # a null id makes a notification, which JSON-RPC never answers
    return _envelope(field, raw), True


def family_missing(rng: random.Random) -> tuple[bytes, bool]:
    parts = {"jsonrpc": '"2.0"', "id": "1", "method": '"status"', "gno": "1"}
    parts.pop(rng.choice(["jsonrpc", "method", "gno"]))  # without an id it is a notification: no reply
    return ("{" + ",".join(f'"{k}":{v}' for k, v in parts.items()) + "}").encode(), True


def family_refs(rng: random.Random) -> tuple[bytes, bool]:
    ref = rng.choice(
        [
            "#²",
            "#³⁴",
            "#99999999999999999999",
            "#-1",
            "docs/a\x00.md",
            "/tmp/a\x00b",
            "docs/a.md:²",
            "docs/a.md:99999999999999999999",
            "gno://",
            "#",
            "~nobody/x",
        ]
    )
    if rng.random() < 0.5:
        params = {"ref": ref}
        method = "get"
    else:
        method = "multi_get"
        params = rng.choice([{"refs": [ref]}, {"pattern": rng.choice(["\\", "[", "**/[", "docs/\\", "[!"])}])
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params, "gno": 1})
    return body.encode(), True


def family_query_bytes(rng: random.Random) -> tuple[bytes, bool]:
    junk = bytes(rng.randrange(128, 256) for _ in range(rng.randrange(1, 8)))
    return b'{"jsonrpc":"2.0","id":1,"method":"search","params":{"query":"caf' + junk + b'"},"gno":1}', True


def family_half_frame(rng: random.Random) -> tuple[bytes, bool]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "status", "gno": 1}).encode()
    whole = struct.pack(">I", len(body)) + body
    return whole[: rng.randrange(1, len(whole))], False


FAMILIES = {
    "bytes": family_bytes,
    "envelope": family_envelope,
    "missing": family_missing,
    "refs": family_refs,
    "query_bytes": family_query_bytes,
}


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        part = s.recv(n - len(buf))
        if not part:
            raise EOFError
        buf += part
    return buf


def send(path: str, data: bytes, framed: bool, timeout: float) -> str:
    """'result', 'internal', 'error', 'hang' (no reply in time) or 'closed' (no reply, EOF)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(struct.pack(">I", len(data)) + data if framed else data)
        (size,) = struct.unpack(">I", _recv_exact(s, 4))
        msg = json.loads(_recv_exact(s, size))
    except (TimeoutError, socket.timeout):
        return "hang"
    except (EOFError, ConnectionError):
        return "closed"
    finally:
        s.close()
    if "result" in msg:
        return "result"
    return "internal" if msg["error"]["code"] == wire.INTERNAL_ERROR else "error"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--half-frames", type=int, default=100)
    ap.add_argument("--reply-timeout", type=float, default=5.0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    # Before the frame deadline existed, a half frame was never answered.
    frame_timeout = getattr(wire, "FRAME_TIMEOUT_S", 0.0)
    counts = dict.fromkeys(("result", "internal", "error", "hang", "closed"), 0)
    bad = dict.fromkeys([*FAMILIES, "half_frame"], 0)
    deaths = 0
    with tempfile.TemporaryDirectory(prefix="gno-mal-") as docs:
        with open(os.path.join(docs, "a.md"), "w") as f:
            f.write("# A\n\nalpha beta\n")
        d = Daemon()
        d.__enter__()
        try:
            d.call("collection.add", {"name": "docs", "path": docs})
            for _ in range(args.n):
                name = rng.choice(list(FAMILIES))
                data, framed = FAMILIES[name](rng)
                outcome = send(d.paths.socket_path, data, framed, args.reply_timeout)
                counts[outcome] += 1
                if outcome in ("hang", "internal"):
                    bad[name] += 1
                if d.proc.poll() is not None:
                    deaths += 1
                    bad[name] += 1
                    d.__exit__(None, None, None)
                    d = Daemon(home=d.home)
                    d.__enter__()
            halves = [family_half_frame(rng)[0] for _ in range(args.half_frames)]
            with ThreadPoolExecutor(max_workers=max(1, len(halves))) as pool:
                timeout = frame_timeout + args.reply_timeout
                for outcome in pool.map(lambda h: send(d.paths.socket_path, h, False, timeout), halves):
                    counts[outcome] += 1
                    bad["half_frame"] += outcome in ("hang", "internal")
            if d.proc.poll() is not None:
                deaths += 1
        finally:
            d.keep = False
            d.__exit__(None, None, None)
    emit(
        inputs=args.n + args.half_frames,
        deaths=deaths,
        hangs=counts["hang"],
        internal=counts["internal"],
        errors=counts["error"],
        closed=counts["closed"],
        results=counts["result"],
    )
    emit(**{f"family_{k}_bad": v for k, v in bad.items()})


if __name__ == "__main__":
    main()
