"""What every background loop of gnod waits on between its cycles (the embedding,
parsing and OCR backlogs): a change, the daemon stopping, or a timeout."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from gnod.ingest.workers import PreparePool

T = TypeVar("T")

# The parsing and OCR backlogs: with nothing changed, how often each is looked at anyway,
# and while a collection is being indexed (they leave it both cores), how often to look again.
IDLE_CHECK_S = 300.0
INGEST_POLL_S = 0.5


async def woken(wake: asyncio.Event, stopping: asyncio.Event, timeout: float) -> bool:
    """Wait until `wake` is set (then clear it), gnod stops, or `timeout` seconds pass;
    False when gnod is stopping (the loop ends)."""
    waiter = asyncio.create_task(wake.wait())
    stopper = asyncio.create_task(stopping.wait())
    await asyncio.wait({waiter, stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    stopper.cancel()
    if stopping.is_set():
        return False
    wake.clear()
    return True


async def serve(
    wake: asyncio.Event,
    stopping: asyncio.Event,
    timeout: float,
    cycle: Callable[[], Awaitable[None]],
    failed: Callable[[str | None], None],
    what: str,
    log: logging.Logger,
) -> None:
    """Run `cycle()` at once, then whenever woken (or `timeout` seconds pass), until gnod
    stops. A cycle that fails is logged and `failed` is told why (None after one that
    works): the next change tries again."""
    wake.set()
    while await woken(wake, stopping, timeout):
        try:
            await cycle()
            failed(None)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            failed(f"{what} failed ({e}); retried at the next change")
            log.exception("%s failed; retrying on the next change", what)


async def not_indexing(indexing: Callable[[], bool], stopping: asyncio.Event) -> bool:
    """Wait while a collection is being indexed (`indexing()`); False when gnod stops."""
    while indexing() and not stopping.is_set():
        await asyncio.sleep(INGEST_POLL_S)
    return not stopping.is_set()


async def in_worker(pool: PreparePool, fn: Callable[[], T]) -> T:
    """`fn()` (picklable) in one of the ingest pool's processes, on a thread without any."""
    if pool.workers < 1:
        return await asyncio.to_thread(fn)
    result: T = await asyncio.wrap_future(pool.submit(fn))
    return result
