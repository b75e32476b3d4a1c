"""The socket contract's stdlib-only core: framing, versions, error codes, exit codes.

gnoctl imports this module on its hot path, so it imports nothing it can do without
(not even `struct`, one more shared library to load: lengths and uids are read with
int.from_bytes). Typed request/result Structs live in `gnod.protocol`, which only the
daemon (and tests) load.

Framing: every message is a 4-byte big-endian unsigned length followed by that many
bytes of UTF-8 JSON (a JSON-RPC 2.0 object). Requests carry `"gno": PROTOCOL_VERSION`.
Notifications (no `id`) from the daemon carry progress for the call in `params.id`.
"""

from __future__ import annotations

import _socket
import sys

PROTOCOL_VERSION = 1
HEADER_SIZE = 4  # the frame's length: big-endian, unsigned
MAX_FRAME = 64 * 1024 * 1024
# Once a frame has begun, the rest of it must arrive within this many seconds; an idle
# connection between frames may stay open (editors and agents keep one).
FRAME_TIMEOUT_S = 10.0
# Open connections gnod serves at once; one more is answered BUSY and closed.
MAX_CONNECTIONS = 256
# What a connection past MAX_CONNECTIONS is told to wait before trying again
# (`details.retry_after_ms`): calls end, and their sockets with them, within that.
CONNECTIONS_RETRY_MS = 100
# Results a `search` gives with their passages, and without them (`snippets` false: a
# list of files, `gnoctl search … --files | xargs`, which lists what `ls` would).
SEARCH_RESULTS_MAX = 1000
FILE_LIST_MAX = 100_000
STATUS_ERRORS_MAX = 10_000_000  # files not indexed `status` lists at most (`status --errors`: all)

# JSON-RPC 2.0 standard codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# gno codes.
NOT_RUNNING = -32001
NOT_FOUND = -32002
MODEL_UNAVAILABLE = -32003
BUSY = -32004
CANCELLED = -32005
VERSION_MISMATCH = -32006
INVALID_QUERY = -32007
FRAME_TOO_LARGE = -32008
CONFIG_ERROR = -32009
SHUTTING_DOWN = -32010
PERMISSION_DENIED = -32011
DISK_FULL = -32012
IO_ERROR = -32013

# Stable names shown to people and in `--json` error objects.
ERROR_NAMES: dict[int, str] = {
    PARSE_ERROR: "PARSE_ERROR",
    INVALID_REQUEST: "INVALID_REQUEST",
    METHOD_NOT_FOUND: "METHOD_NOT_FOUND",
    INVALID_PARAMS: "INVALID_PARAMS",
    INTERNAL_ERROR: "INTERNAL",
    NOT_RUNNING: "DAEMON_NOT_RUNNING",
    NOT_FOUND: "NOT_FOUND",
    MODEL_UNAVAILABLE: "MODEL_UNAVAILABLE",
    BUSY: "BUSY",
    CANCELLED: "CANCELLED",
    VERSION_MISMATCH: "VERSION_MISMATCH",
    INVALID_QUERY: "INVALID_QUERY",
    FRAME_TOO_LARGE: "FRAME_TOO_LARGE",
    CONFIG_ERROR: "CONFIG_ERROR",
    SHUTTING_DOWN: "SHUTTING_DOWN",
    PERMISSION_DENIED: "PERMISSION_DENIED",
    DISK_FULL: "DISK_FULL",
    IO_ERROR: "IO_ERROR",
}

# As grep's and ripgrep's: 1 is "nothing matched" (gnoctl.commands.EXIT_NO_MATCH), so an
# error of any kind, bad input included, is 2 (`if ! gnoctl search -c typo X` read a
# misspelled collection as no match).
EXIT_ERROR = 2
EXIT_NOT_RUNNING = 3

_USER_ERRORS = frozenset(
    {INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, NOT_FOUND, INVALID_QUERY, CONFIG_ERROR, FRAME_TOO_LARGE}
)


# gnod's own exit statuses, which gnoctl reads when it starts gnod.
GNOD_EXIT_RUNNING = 1  # another gnod holds this runtime dir's lock
GNOD_EXIT_RUNTIME_DIR = 2  # the runtime dir is unusable (owner, path length)
GNOD_EXIT_CONFIG = 78  # sysexits.h EX_CONFIG: the config file is invalid
GNOD_EXIT_INDEX_TOO_NEW = 65  # sysexits.h EX_DATAERR: the index was written by a newer gno


def exit_code_for(code: int) -> int:
    """CLI exit status for a JSON-RPC error code: 3 not running, else 2."""
    return EXIT_NOT_RUNNING if code == NOT_RUNNING else EXIT_ERROR


def bad_input(code: int) -> bool:
    """Whether an error code says the caller's input was wrong (an HTTP 400), not that
    something failed (a 503)."""
    return code in _USER_ERRORS


# A value the caller gave is quoted whole in a message up to this many characters.
SAID_MAX = 80


def said(value: str) -> str:
    """A value the caller gave, as a message quotes it: its repr, cut past SAID_MAX
    characters with how long it is (a 32,000-character query said back filled an
    agent's context; the value itself is in the error's details)."""
    if len(value) <= SAID_MAX:
        return repr(value)
    return f"{value[: SAID_MAX - 20]!r}… ({len(value):,} characters)"


def frame(body: bytes) -> bytes:
    """Prefix an encoded message with its length header."""
    return len(body).to_bytes(HEADER_SIZE, "big") + body


def frame_size(header: bytes) -> int:
    """The length a frame's header (HEADER_SIZE bytes) gives."""
    return int.from_bytes(header, "big")


def peer_uid(sock: _socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket (Linux SO_PEERCRED,
    macOS LOCAL_PEERCRED), or None where neither exists. Both ends check it: gnod
    serves only its own user, and gnoctl talks only to a gnod of its own user."""
    if hasattr(_socket, "SO_PEERCRED"):
        creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # struct ucred {pid, uid, gid}
        return int.from_bytes(creds[4:8], sys.byteorder)
    if sys.platform == "darwin":  # struct xucred {u_int version; uid_t uid; ...}
        creds = sock.getsockopt(0, 0x001, 76)
        return int.from_bytes(creds[4:8], sys.byteorder)
    return None
