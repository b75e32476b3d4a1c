"""What every background loop of gnod waits on between its cycles (the embedding and
parsing backlogs): a change, the daemon stopping, or a timeout."""

from __future__ import annotations

import asyncio


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
