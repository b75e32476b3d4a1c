"""Reader threads shared fairly between clients (start-time fair queuing).

With one queue in arrival order, a person's single search waits behind every search
agents have queued. Here each call gets a virtual start time: the later of the queue's
current virtual time and the end of its client's previous call, a call's length being
what that client's calls have cost lately. Calls run in order of their start times, so
a client that asks now and then starts at the current virtual time, ahead of clients
with a backlog, and a busy client still waits for at most one call of each other client
per call of its own (never starved). A call whose caller has gone is skipped, not run.
A call that would wait longer than OVERLOAD_WAIT_S behind the calls ahead of it is
refused at once (Overloaded, with that wait) instead of everybody's calls slowing down;
as a client without a backlog goes ahead of the backlogs, it is the deep backlogs that
are refused.

A call may also come with a second form that a remote worker runs (a search, which
the search process can answer): remote workers take only such calls, local workers
any, and a local worker leaves such a call to a remote worker that is free.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any

from gnod.search.constants import FAIR_COST_S, FAIR_MEMORY, LOAD_WINDOW_S, OVERLOAD_WAIT_S


class Overloaded(Exception):
    """The call would wait `wait_s` seconds: beyond OVERLOAD_WAIT_S."""

    def __init__(self, wait_s: float) -> None:
        super().__init__(f"{wait_s:.2f} s of calls are ahead")
        self.wait_s = wait_s


# (virtual start, arrival order, future, call, its remote form, client, submitted at, its expected cost)
_Entry = tuple[float, int, Future, Callable[[], Any], Callable[[], Any] | None, Hashable, float, float]


class Unanswered(Exception):
    """Raised by a call's remote form that could not answer: the call runs locally."""


class FairExecutor:
    def __init__(self, workers: int, name: str, remote: int = 0) -> None:
        self._heap: list[_Entry] = []  # calls only a local worker runs
        self._remote_heap: list[_Entry] = []  # calls with a remote form: any worker runs them
        self._seq = itertools.count()
        lock = threading.RLock()
        self._cv = threading.Condition(lock)  # local workers wait on it
        self._remote_cv = threading.Condition(lock)  # remote workers: a call wakes only a worker that may take it
        self._now = 0.0  # virtual time: the start time of the call dispatched last
        self._end: dict[Hashable, float] = {}  # client → virtual end of its last call
        self._cost: dict[Hashable, float] = {}  # client → what its calls cost lately (s)
        self._closed = False
        self._running = 0
        self._remote = remote
        self._remote_busy = 0  # remote workers running a call
        self._recent: deque[tuple[float, float]] = deque(maxlen=10_000)  # (ended at, seconds from submit)
        self._workers = workers + remote
        kinds = [(False, f"{name}_{i}") for i in range(workers)] + [(True, f"{name}_remote{i}") for i in range(remote)]
        self._threads = [threading.Thread(target=self._work, args=(r,), name=n, daemon=True) for r, n in kinds]
        for t in self._threads:
            t.start()

    def submit(self, client: Hashable, fn: Callable[[], Any], remote: Callable[[], Any] | None = None) -> Future:
        """Run `fn` on a worker (or `remote`, when given, on a remote worker), in fair
        order among the clients; Overloaded when the calls ahead of it would keep it
        waiting longer than OVERLOAD_WAIT_S."""
        fut: Future = Future()
        with self._cv:
            if self._closed:
                raise RuntimeError("the readers are shut down")
            start = max(self._now, self._end.get(client, 0.0))
            cost = self._cost.get(client, FAIR_COST_S)
            ahead = sum(e[7] for heap in (self._heap, self._remote_heap) for e in heap if e[0] <= start)
            wait = ahead / self._workers
            if wait > OVERLOAD_WAIT_S:
                raise Overloaded(wait)
            self._end[client] = start + cost
            if len(self._end) > FAIR_MEMORY:  # forget clients whose calls all ended
                self._end = {c: e for c, e in self._end.items() if e > self._now}
                self._cost = {c: self._cost[c] for c in self._end if c in self._cost}
            entry = (start, next(self._seq), fut, fn, remote, client, time.monotonic(), cost)
            heapq.heappush(self._heap if remote is None else self._remote_heap, entry)
            (self._remote_cv if remote is not None and self._remote_busy < self._remote else self._cv).notify()
        return fut

    def _take(self, remote: bool) -> _Entry | None:
        """The next call this worker runs, or None (hold the lock)."""
        if remote:
            return heapq.heappop(self._remote_heap) if self._remote_heap else None
        remote_free = self._remote_busy < self._remote
        heaps = [h for h in (self._heap, self._remote_heap) if h and (h is self._heap or not remote_free)]
        if not heaps:
            return None
        return heapq.heappop(min(heaps, key=lambda h: h[0][:2]))

    def _work(self, remote: bool) -> None:
        while True:
            with self._cv:
                while (entry := self._take(remote)) is None and not self._closed:
                    (self._remote_cv if remote else self._cv).wait()
                if entry is None:
                    return
                start, _, fut, fn, remote_fn, client, submitted, _ = entry
                self._now = max(self._now, start)
                if not fut.set_running_or_notify_cancel():
                    continue  # the caller has gone
                self._running += 1
                if remote:
                    self._remote_busy += 1
                    if self._remote_heap and self._remote_busy == self._remote:
                        self._cv.notify_all()  # what waits for a remote worker goes to a local one
            t0 = time.monotonic()
            try:
                fut.set_result(self._call(fn, remote_fn if remote else None))
            except BaseException as e:  # handed to the caller, as an executor does
                fut.set_exception(e)
            finally:
                end = time.monotonic()
                with self._cv:
                    self._running -= 1
                    self._remote_busy -= remote
                    self._cost[client] = 0.8 * self._cost.get(client, end - t0) + 0.2 * (end - t0)
                    self._recent.append((end, end - submitted))

    @staticmethod
    def _call(fn: Callable[[], Any], remote_fn: Callable[[], Any] | None) -> Any:
        if remote_fn is not None:
            try:
                return remote_fn()
            except Unanswered:
                pass
        return fn()

    def busy(self) -> bool:
        """Some call is running or waiting."""
        return self._running > 0 or bool(self._heap) or bool(self._remote_heap)

    def load(self) -> tuple[int, int, list[float]]:
        """(calls running, calls waiting, seconds each call of the last LOAD_WINDOW_S took
        from submission to its end)."""
        with self._cv:
            since = time.monotonic() - LOAD_WINDOW_S
            waiting = len(self._heap) + len(self._remote_heap)
            return self._running, waiting, [s for end, s in self._recent if end >= since]

    def shutdown(self) -> None:
        """Stop taking calls; what is queued is cancelled."""
        with self._cv:
            self._closed = True
            for heap in (self._heap, self._remote_heap):
                for _, _, fut, *_ in heap:
                    fut.cancel()
                heap.clear()
            self._cv.notify_all()
            self._remote_cv.notify_all()
