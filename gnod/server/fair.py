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


class FairExecutor:
    def __init__(self, workers: int, name: str) -> None:
        # (virtual start, arrival order, future, call, client, submitted at, its expected cost)
        self._heap: list[tuple[float, int, Future, Callable[[], Any], Hashable, float, float]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._now = 0.0  # virtual time: the start time of the call dispatched last
        self._end: dict[Hashable, float] = {}  # client → virtual end of its last call
        self._cost: dict[Hashable, float] = {}  # client → what its calls cost lately (s)
        self._closed = False
        self._running = 0
        self._recent: deque[tuple[float, float]] = deque(maxlen=10_000)  # (ended at, seconds from submit)
        self._workers = workers
        self._threads = [threading.Thread(target=self._work, name=f"{name}_{i}", daemon=True) for i in range(workers)]
        for t in self._threads:
            t.start()

    def submit(self, client: Hashable, fn: Callable[[], Any]) -> Future:
        """Run `fn` on a worker, in fair order among the clients; Overloaded when the
        calls ahead of it would keep it waiting longer than OVERLOAD_WAIT_S."""
        fut: Future = Future()
        with self._cv:
            if self._closed:
                raise RuntimeError("the readers are shut down")
            start = max(self._now, self._end.get(client, 0.0))
            cost = self._cost.get(client, FAIR_COST_S)
            wait = sum(entry[6] for entry in self._heap if entry[0] <= start) / self._workers
            if wait > OVERLOAD_WAIT_S:
                raise Overloaded(wait)
            self._end[client] = start + cost
            if len(self._end) > FAIR_MEMORY:  # forget clients whose calls all ended
                self._end = {c: e for c, e in self._end.items() if e > self._now}
                self._cost = {c: self._cost[c] for c in self._end if c in self._cost}
            heapq.heappush(self._heap, (start, next(self._seq), fut, fn, client, time.monotonic(), cost))
            self._cv.notify()
        return fut

    def _work(self) -> None:
        while True:
            with self._cv:
                while not self._heap and not self._closed:
                    self._cv.wait()
                if not self._heap:
                    return
                start, _, fut, fn, client, submitted, _ = heapq.heappop(self._heap)
                self._now = max(self._now, start)
                if not fut.set_running_or_notify_cancel():
                    continue  # the caller has gone
                self._running += 1
            t0 = time.monotonic()
            try:
                fut.set_result(fn())
            except BaseException as e:  # handed to the caller, as an executor does
                fut.set_exception(e)
            finally:
                end = time.monotonic()
                with self._cv:
                    self._running -= 1
                    self._cost[client] = 0.8 * self._cost.get(client, end - t0) + 0.2 * (end - t0)
                    self._recent.append((end, end - submitted))

    def busy(self) -> bool:
        """Some call is running or waiting."""
        return self._running > 0 or bool(self._heap)

    def load(self) -> tuple[int, int, list[float]]:
        """(calls running, calls waiting, seconds each call of the last LOAD_WINDOW_S took
        from submission to its end)."""
        with self._cv:
            since = time.monotonic() - LOAD_WINDOW_S
            return self._running, len(self._heap), [s for end, s in self._recent if end >= since]

    def shutdown(self) -> None:
        """Stop taking calls; what is queued is cancelled."""
        with self._cv:
            self._closed = True
            for _, _, fut, *_ in self._heap:
                fut.cancel()
            self._heap.clear()
            self._cv.notify_all()
