"""One thread for all model work, with priorities.

llama.cpp contexts are not thread-safe and the CPU has few cores, so every model
call runs on this one thread. A query (priority 0) waits at most for the background
batch in progress, never for the whole embedding backlog (priority 1). Among calls
of one priority, those of the request that came first go first (`arrived`): a
query's later stages (its embedding, its reranking) do not wait behind the
expansions of every query sent after it.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

INTERACTIVE = 0
BACKGROUND = 1

_order = itertools.count()  # requests' arrivals and calls made for none, in one order
# The arrival of the request whose task makes a model call (arrived); None: the call's own.
_ARRIVAL: contextvars.ContextVar[int | None] = contextvars.ContextVar("arrival", default=None)


def arrived() -> None:
    """Mark the current task's request as arrived now: its model calls go before those of
    requests arriving after it (20 `query` calls sent at once with the local generator all
    ended after 90 s, each stage of each waiting for that stage of every other)."""
    _ARRIVAL.set(next(_order))


class ModelThread:
    def __init__(self, name: str = "gnod-models") -> None:
        self._queue: queue.PriorityQueue[tuple[int, int, int, Callable[[], Any] | None, Future | None]] = (
            queue.PriorityQueue()
        )
        self._seq = itertools.count()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            _, _, _, fn, fut = self._queue.get()
            if fn is None:
                return
            assert fut is not None
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as e:  # handed to the awaiting caller
                fut.set_exception(e)

    def submit(self, fn: Callable[[], T], priority: int = INTERACTIVE) -> Future[T]:
        fut: Future[T] = Future()
        order = _ARRIVAL.get()
        self._queue.put((priority, next(_order) if order is None else order, next(self._seq), fn, fut))
        return fut

    async def run(self, fn: Callable[[], T], priority: int = INTERACTIVE) -> T:
        return await asyncio.wrap_future(self.submit(fn, priority))

    def close(self, cleanup: Sequence[Callable[[], Any]] = ()) -> None:
        """Finish the call in progress, drop the rest, run `cleanup` (freeing models), stop."""
        while True:
            try:
                _, _, _, _, fut = self._queue.get_nowait()
            except queue.Empty:
                break
            if fut is not None:
                fut.cancel()
        for fn in cleanup:
            self._queue.put((-1, 0, next(self._seq), fn, Future()))
        self._queue.put((-1, 0, next(self._seq), None, None))
        self._thread.join(timeout=30)
