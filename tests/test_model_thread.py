"""The model thread's order: priority, then the request that came first, then its calls
in the order they were made."""

from __future__ import annotations

import contextvars
import threading

from gnod.models.worker import BACKGROUND, ModelThread, arrived


def test_a_request_s_later_calls_go_before_the_calls_of_requests_that_came_after_it():
    """20 `query` calls sent at once with the local generator all ended after 90 s: each
    stage of each waited for that stage of every other. A request's later stages now go
    before the stages of the requests that came after it."""
    thread = ModelThread("test-models")
    gate = threading.Event()
    ran: list[str] = []
    try:
        thread.submit(gate.wait)  # holds the thread while the others are queued
        first, second = contextvars.copy_context(), contextvars.copy_context()
        first.run(arrived)
        second.run(arrived)
        futures = [
            first.run(thread.submit, lambda: ran.append("first: expand")),
            second.run(thread.submit, lambda: ran.append("second: expand")),
            first.run(thread.submit, lambda: ran.append("first: rerank")),
            thread.submit(lambda: ran.append("background"), BACKGROUND),
            second.run(thread.submit, lambda: ran.append("second: rerank")),
            thread.submit(lambda: ran.append("no request")),
        ]
        gate.set()
        for future in futures:
            future.result(10)
    finally:
        thread.close()
    assert ran == ["first: expand", "first: rerank", "second: expand", "second: rerank", "no request", "background"]
