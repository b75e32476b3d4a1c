"""One thread for all model work, with priorities.

llama.cpp contexts are not thread-safe and the CPU has few cores, so every model
call runs on this one thread. A query (priority 0) waits at most for the background
batch in progress, never for the whole embedding backlog (priority 1).
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

INTERACTIVE = 0
BACKGROUND = 1


class ModelThread:
    def __init__(self, name: str = "gnod-models") -> None:
        self._queue: queue.PriorityQueue[tuple[int, int, Callable[[], Any] | None, Future | None]] = (
            queue.PriorityQueue()
        )
        self._seq = itertools.count()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            _, _, fn, fut = self._queue.get()
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
        self._queue.put((priority, next(self._seq), fn, fut))
        return fut

    async def run(self, fn: Callable[[], T], priority: int = INTERACTIVE) -> T:
        return await asyncio.wrap_future(self.submit(fn, priority))

    def close(self, cleanup: Sequence[Callable[[], Any]] = ()) -> None:
        """Finish the call in progress, drop the rest, run `cleanup` (freeing models), stop."""
        while True:
            try:
                _, _, _, fut = self._queue.get_nowait()
            except queue.Empty:
                break
            if fut is not None:
                fut.cancel()
        for fn in cleanup:
            self._queue.put((-1, next(self._seq), fn, Future()))
        self._queue.put((-1, next(self._seq), None, None))
        self._thread.join(timeout=30)
