"""The readers' queue: a client without a backlog goes first, nobody is starved, a call whose caller left is
skipped, a call that would wait too long is refused."""

from __future__ import annotations

import threading

import pytest

from gnod.search.constants import FAIR_COST_S, OVERLOAD_WAIT_S
from gnod.server.fair import FairExecutor, Overloaded, Unanswered


@pytest.fixture
def pool():
    """Readers with one worker, which a test holds with a gate to queue calls behind it."""
    readers = FairExecutor(1, "test-fair")
    yield readers
    readers.shutdown()


def test_a_light_client_is_served_before_a_busy_one_queued_earlier(pool):
    gate = threading.Event()
    ran: list[str] = []
    pool.submit("agent", gate.wait)  # holds the one worker
    queued = [pool.submit("agent", lambda: ran.append("agent")) for _ in range(5)]
    person = pool.submit("person", lambda: ran.append("person"))
    gate.set()
    person.result(timeout=5)
    for f in queued:
        f.result(timeout=5)
    assert ran == ["person"] + ["agent"] * 5


def test_a_call_whose_caller_left_is_not_run_and_errors_reach_the_caller(pool):
    gate = threading.Event()
    ran: list[int] = []
    pool.submit("a", gate.wait)
    gone = pool.submit("a", lambda: ran.append(1))
    assert gone.cancel()
    failing = pool.submit("b", lambda: 1 / 0)
    gate.set()
    try:
        failing.result(timeout=5)
        raise AssertionError("no error")
    except ZeroDivisionError:
        pass
    assert pool.submit("a", lambda: 7).result(timeout=5) == 7 and ran == []


def test_busy_clients_take_turns(pool):
    gate = threading.Event()
    ran: list[str] = []
    pool.submit("x", gate.wait)
    futures = [pool.submit(c, lambda c=c: ran.append(c)) for c in ["a"] * 4 + ["b"] * 4]
    gate.set()
    for f in futures:
        f.result(timeout=5)
    assert ran == ["a", "b"] * 4  # b's calls, queued last, are not left to the end


def test_load_counts_running_waiting_and_recent_calls(pool):
    assert pool.load() == (0, 0, [])
    gate = threading.Event()
    started = threading.Event()
    pool.submit("a", lambda: (started.set(), gate.wait()))
    started.wait(5)
    waiting = [pool.submit("b", lambda: None) for _ in range(3)]
    running, queued, _ = pool.load()
    assert (running, queued) == (1, 3)
    gate.set()
    for f in waiting:
        f.result(timeout=5)
    running, queued, took = pool.load()
    assert (running, queued) == (0, 0) and len(took) == 4 and all(t >= 0 for t in took)


def test_a_call_that_would_wait_too_long_is_refused_but_one_from_a_client_without_a_backlog_is_not(pool):
    gate = threading.Event()
    pool.submit("agent", gate.wait)
    queued = []
    with pytest.raises(Overloaded) as refused:
        while True:
            queued.append(pool.submit("agent", lambda: None))
    # Calls are taken to cost FAIR_COST_S until measured: the bound admits this many.
    assert len(queued) == pytest.approx(OVERLOAD_WAIT_S / FAIR_COST_S, abs=2)
    assert refused.value.wait_s > OVERLOAD_WAIT_S
    person = pool.submit("person", lambda: "served")  # starts ahead of the agent's backlog
    gate.set()
    assert person.result(timeout=5) == "served"


def _where(ran: list[str], name: str):
    return lambda: ran.append(f"{name}@{threading.current_thread().name.rsplit('_', 1)[1]}")


def test_a_call_with_a_remote_form_goes_to_a_free_remote_worker_and_others_stay_local():
    readers = FairExecutor(1, "test-remote", remote=1)
    try:
        ran: list[str] = []
        for i in range(5):
            readers.submit("a", lambda: ran.append("local form"), _where(ran, f"search{i}")).result(timeout=5)
            readers.submit("a", _where(ran, f"other{i}")).result(timeout=5)
        assert ran == [x for i in range(5) for x in (f"search{i}@remote0", f"other{i}@0")]
    finally:
        readers.shutdown()


def test_a_local_worker_takes_remote_calls_while_the_remote_worker_is_busy():
    readers = FairExecutor(1, "test-remote", remote=1)
    try:
        gate = threading.Event()
        ran: list[str] = []
        held = readers.submit("a", gate.wait, gate.wait)  # the remote worker takes it and waits
        while readers.load()[0] == 0:
            pass
        second = readers.submit("b", _where(ran, "local"), _where(ran, "remote"))
        second.result(timeout=5)
        assert ran == ["local@0"] and not held.done()
        gate.set()
        held.result(timeout=5)
    finally:
        readers.shutdown()


def test_a_remote_form_that_cannot_answer_hands_the_call_to_its_local_form():
    readers = FairExecutor(1, "test-remote", remote=1)
    try:

        def unanswered():
            raise Unanswered("down")

        assert readers.submit("a", lambda: "local", unanswered).result(timeout=5) == "local"
        assert readers.submit("a", lambda: "local", lambda: 1 / 0).exception(timeout=5).__class__ is ZeroDivisionError
    finally:
        readers.shutdown()
