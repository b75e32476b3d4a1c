"""The socket contract on the wire: framing, JSON-RPC envelope errors, robustness.

Raw sockets against a live gnod: a frame is a 4-byte big-endian length + a JSON body.
"""

from __future__ import annotations

import json
import socket
import struct
import time

import pytest

from gnod import wire

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def daemon(shared_daemon):
    """These tests share one daemon: none needs a fresh one, and every abuse below must
    leave it serving the next test (which is itself part of what is tested)."""
    assert shared_daemon.alive(), shared_daemon.stderr()
    return shared_daemon


def assert_alive(daemon) -> None:
    """The daemon still runs and answers `status` on a brand-new connection."""
    assert daemon.alive(), daemon.stderr()
    reply = daemon.rpc("status")
    assert "result" in reply, reply
    assert reply["result"]["pid"] == daemon.proc.pid


def error_of(reply: dict) -> dict:
    assert "error" in reply and "result" not in reply, reply
    err = reply["error"]
    assert set(err) >= {"code", "message", "data"}, err
    assert isinstance(err["message"], str) and err["message"]
    assert err["data"]["name"] == wire.ERROR_NAMES[err["code"]]
    return err


# --- framing ---------------------------------------------------------------------------


def test_status_roundtrip(daemon):
    with daemon.connect() as c:
        reply = c.call("status", req_id=42)
    assert reply["jsonrpc"] == "2.0"
    assert reply["id"] == 42
    res = reply["result"]
    assert res["protocol"] == wire.PROTOCOL_VERSION
    assert res["socket_path"] == daemon.paths.socket_path
    assert res["job"]["running"] is False


def test_request_split_into_tiny_sends(daemon):
    with daemon.connect() as c:
        data = c.frame(c.encode("status", req_id="tiny"))
        # 1-3 byte pieces, header split too, with pauses the daemon must wait through.
        i, sizes = 0, [1, 2, 1, 3]
        n = 0
        while i < len(data):
            step = sizes[n % len(sizes)]
            c.send_bytes(data[i : i + step])
            i += step
            n += 1
            time.sleep(0.002)
        reply = c.recv_reply()
    assert reply["id"] == "tiny"
    assert "result" in reply


def test_back_to_back_requests_in_one_send(daemon):
    with daemon.connect() as c:
        blob = b"".join(
            c.frame(c.encode(m, p, req_id=i))
            for i, (m, p) in enumerate(
                [
                    ("status", {}),
                    ("collection.list", {}),
                    ("ls", {}),
                    ("search", {"query": "anything"}),
                    ("status", {}),
                ],
                start=1,
            )
        )
        c.send_bytes(blob)
        replies = {}
        for _ in range(5):
            msg = c.recv_reply()
            replies[msg["id"]] = msg
    # Replies may come back in any order, but each request gets exactly its own.
    assert sorted(replies) == [1, 2, 3, 4, 5]
    assert all("result" in r for r in replies.values()), replies
    assert "collections" in replies[2]["result"]
    assert "entries" in replies[3]["result"]
    assert replies[4]["result"]["hits"] == []


def test_large_valid_frame_rejected_cleanly(daemon):
    big = "x" * (3 * 1024 * 1024)
    with daemon.connect(timeout=30) as c:
        c.send("search", {"query": big}, req_id=7)
        err = error_of(c.recv_reply(7))
        assert err["code"] == wire.INVALID_PARAMS
        assert "query" in err["message"]
        # The connection is still usable after the big frame.
        assert "result" in c.call("status", req_id=8)
    assert_alive(daemon)


def test_oversized_frame_header(daemon):
    with daemon.connect() as c:
        c.send_bytes(struct.pack(">I", wire.MAX_FRAME + 1) + b"{")
        err = error_of(c.recv())
        assert err["code"] == wire.FRAME_TOO_LARGE == -32008
        assert str(wire.MAX_FRAME) in err["message"]
        assert c.at_eof(), "the daemon must hang up after FRAME_TOO_LARGE"
    assert_alive(daemon)


def test_max_size_header_is_not_an_error_until_the_body_is_short(daemon):
    # Exactly MAX_FRAME is allowed: the daemon waits for the body; we give up instead.
    with daemon.connect() as c:
        c.send_bytes(struct.pack(">I", wire.MAX_FRAME) + b"{}")
        c.sock.settimeout(0.3)
        with pytest.raises(socket.timeout):
            c.sock.recv(1)
    assert_alive(daemon)


# --- envelope errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    "body", [b"{not json", b'{"jsonrpc": "2.0", "id": 1, "method": "status"', b"\xff\xfe\x00garbage", b""]
)
def test_invalid_json_is_parse_error(daemon, body):
    with daemon.connect() as c:
        c.send_body(body)
        err = error_of(c.recv())
        assert err["code"] == wire.PARSE_ERROR == -32700
        # The connection survives a bad frame.
        assert "result" in c.call("status", req_id=2)


@pytest.mark.parametrize(
    "body",
    [
        b"[1, 2, 3]",
        b'"status"',
        b"42",
        b"null",
        b'{"jsonrpc": "2.0", "id": 1, "params": {}}',  # no method
        b'{"jsonrpc": "2.0", "id": 1, "method": 5}',
        b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "status"}',
    ],
)
def test_not_a_request_object_is_invalid_request(daemon, body):
    with daemon.connect() as c:
        c.send_body(body)
        reply = c.recv()
        err = error_of(reply)
        assert err["code"] == wire.INVALID_REQUEST == -32600
        assert reply["id"] is None
        assert "result" in c.call("status", req_id=2)


def test_unknown_method_lists_methods(daemon):
    with daemon.connect() as c:
        reply = c.call("frobnicate", req_id="u1")
    err = error_of(reply)
    assert reply["id"] == "u1"
    assert err["code"] == wire.METHOD_NOT_FOUND == -32601
    assert "frobnicate" in err["message"]
    methods = err["data"]["details"]["methods"]
    assert {
        "status",
        "search",
        "get",
        "multi_get",
        "ls",
        "index",
        "shutdown",
        "collection.add",
        "collection.list",
        "collection.remove",
    } <= set(methods)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 1001}, "limit"),
        ({"query": "x", "min_score": 1.5}, "min_score"),
        ({"query": "x", "bogus_field": 1}, "bogus_field"),
        ({"query": 12}, "query"),
        ({}, "query"),
        ({"query": "x", "collections": "notes"}, "collections"),
    ],
)
def test_bad_search_params_name_the_field(daemon, params, field):
    with daemon.connect() as c:
        reply = c.call("search", params, req_id=3)
    err = error_of(reply)
    assert reply["id"] == 3
    assert err["code"] == wire.INVALID_PARAMS == -32602
    assert field in err["message"], err["message"]


def test_params_not_an_object(daemon):
    with daemon.connect() as c:
        for i, params in enumerate(([1, 2], "x", None), start=1):
            c.send_body(
                json.dumps({"jsonrpc": "2.0", "id": i, "method": "status", "params": params, "gno": 1}).encode()
            )
            err = error_of(c.recv_reply(i))
            assert err["code"] == wire.INVALID_PARAMS


def test_params_may_be_omitted(daemon):
    with daemon.connect() as c:
        c.send_body(b'{"jsonrpc": "2.0", "id": 1, "method": "status"}')
        assert "result" in c.recv_reply(1)


def test_wrong_protocol_version(daemon):
    with daemon.connect() as c:
        reply = c.call("status", req_id=9, gno=999)
    err = error_of(reply)
    assert reply["id"] == 9
    assert err["code"] == wire.VERSION_MISMATCH == -32006
    assert err["data"]["details"] == {"daemon": wire.PROTOCOL_VERSION, "client": 999}
    assert_alive(daemon)


def test_notification_gets_no_reply(daemon):
    # A request without an id is a notification: no reply, but later requests still work.
    with daemon.connect() as c:
        c.send_body(b'{"jsonrpc": "2.0", "method": "status", "gno": 1}')
        reply = c.call("ls", req_id=5)
    assert reply["id"] == 5 and "result" in reply


def test_failed_notification_gets_no_reply(daemon):
    with daemon.connect() as c:
        c.send_body(b'{"jsonrpc": "2.0", "method": "frobnicate", "gno": 1}')
        c.send_body(b'{"jsonrpc": "2.0", "method": "search", "params": {"limit": 0}, "gno": 1}')
        c.send("status", req_id=2)
        first = c.recv()
    assert first.get("id") == 2, first


# --- misbehaving clients -----------------------------------------------------------------


def test_client_disconnects_mid_frame(daemon):
    with daemon.connect() as c:
        body = c.encode("status")
        c.send_bytes(struct.pack(">I", len(body)) + body[: len(body) // 2])
    with daemon.connect() as c:
        c.send_bytes(b"\x00\x00")  # half a header
    with daemon.connect() as c:
        c.send_bytes(struct.pack(">I", 1000) + b"{" * 10)
        c.sock.shutdown(socket.SHUT_WR)
        assert c.at_eof()
    time.sleep(0.1)
    assert_alive(daemon)


def test_client_disconnects_before_reading_reply(daemon):
    for _ in range(5):
        with daemon.connect() as c:
            c.send("search", {"query": "anything at all"})
            c.send("status", req_id=2)
    assert_alive(daemon)


def test_many_concurrent_connections(daemon):
    conns = [daemon.connect() for _ in range(30)]
    try:
        for i, c in enumerate(conns):
            c.send("status", req_id=i)
        for i, c in enumerate(conns):
            assert c.recv_reply(i)["result"]["pid"] == daemon.proc.pid
    finally:
        for c in conns:
            c.close()


def test_half_closed_client_still_gets_its_reply(daemon, tmp_path):
    # Regression: Connection.serve used to cancel in-flight tasks on EOF, so a client
    # that half-closes (shutdown(SHUT_WR)) after sending never got its reply.
    # A request that takes a while (indexing a few hundred files) makes the outcome
    # deterministic: the daemon sees the EOF long before the work is done.
    folder = tmp_path / "halfclose"
    folder.mkdir()
    for i in range(300):
        (folder / f"n{i:03d}.md").write_text(f"# Note {i}\n\nzebra quokka {i} lorem ipsum\n")
    with daemon.connect(timeout=30) as c:
        c.send("collection.add", {"name": "halfclose", "path": str(folder)}, req_id=1)
        c.sock.shutdown(socket.SHUT_WR)
        reply = c.recv_reply(1)
    assert reply["result"]["collections"][0]["added"] == 300


# --- fuzzing the daemon ------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=300), limit=st.integers(-5, 1100))
def test_no_query_crashes_the_daemon(daemon, query, limit):
    """Any text, any limit: a result or a validation error, never INTERNAL."""
    with daemon.connect() as c:
        reply = c.call("search", {"query": query, "limit": limit})
    if "error" in reply:
        assert error_of(reply)["code"] in (wire.INVALID_QUERY, wire.INVALID_PARAMS), reply
    else:
        assert 1 <= limit <= 1000 and isinstance(reply["result"]["hits"], list)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    method=st.sampled_from(
        sorted(set(wire.ERROR_NAMES.values()) | {"search", "get", "ls", "multi_get", "collection.add"})
    ),
    params=_json_values,
)
def test_no_params_crash_the_daemon(daemon, method, params):
    """Arbitrary JSON as params of real (and unknown) methods: answered, never INTERNAL."""
    if method == "collection.add" and isinstance(params, dict) and "path" in params:
        params = {**params, "path": "/nonexistent/gno-fuzz"}  # never index a real tree
    with daemon.connect() as c:
        reply = c.call(method, params)
    if "error" in reply:
        assert error_of(reply)["code"] != wire.INTERNAL_ERROR, reply
    assert_alive(daemon)


_FIELDS = ("jsonrpc", "id", "method", "params", "gno")
_bad_values = st.one_of(
    st.integers(1, 20000).map(lambda n: b"[" * n + b"]" * n),  # any nesting depth
    st.integers(1, 3000).map(lambda n: b'{"a":' * n + b"0" + b"}" * n),
    # invalid UTF-8: 0xff never occurs in it, whatever follows
    st.binary(max_size=6).map(lambda b: b'"x\xff' + bytes(c | 0x80 for c in b) + b'"'),
    st.sampled_from([b'"1.0"', b'"2"', b'""', b"2.0", b"true", b"{}", b"[]", b"-1", b"1e999"]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=300))
def test_any_bytes_get_an_error_reply(daemon, body):
    """Whatever the body, a JSON-RPC error comes back (never silence, never INTERNAL)."""
    with daemon.connect() as c:
        c.send_body(body)
        msg = c.recv()
    if "result" not in msg:
        assert error_of(msg)["code"] in (wire.PARSE_ERROR, wire.INVALID_REQUEST), msg


# Replacements that leave a valid request: string and negative ids, empty params.
_STILL_VALID = {("id", b'"1.0"'), ("id", b'"2"'), ("id", b'""'), ("id", b"-1"), ("params", b"{}")}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(_FIELDS), value=_bad_values)
def test_any_bad_envelope_field_gets_an_error_reply(daemon, field, value):
    """Deep nesting, invalid UTF-8 or a wrong value in any envelope field: an error reply."""
    parts = {"jsonrpc": b'"2.0"', "id": b"1", "method": b'"status"', "params": b"{}", "gno": b"1"}
    parts[field] = value
    body = b"{" + b",".join(b'"%s":%s' % (k.encode(), v) for k, v in parts.items()) + b"}"
    with daemon.connect() as c:
        c.send_body(body)
        msg = c.recv()
        if (field, value) in _STILL_VALID:
            assert "result" in msg, msg
        else:
            assert error_of(msg)["code"] in (
                wire.PARSE_ERROR,
                wire.INVALID_REQUEST,
                wire.INVALID_PARAMS,
                wire.METHOD_NOT_FOUND,
                wire.VERSION_MISMATCH,
            ), msg
        assert "result" in c.call("status", req_id=2)
