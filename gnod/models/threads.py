"""How many threads llama.cpp gets: measured on this machine, now, unless the config says.

llama.cpp's threads meet at a barrier after every layer, so one that loses its core
stalls the others. On 2 idle cores multilingual-e5-small embeds 4.9 chunks/s with 2
threads and 3.0 with 1; beside one busy process, 2 threads fall to 2.0 while 1 thread
keeps 3.0 (benchmarks/threads.py). No fixed count is right for both, so the background
embedding batches try each candidate now and then (and at once when the rate drops) and
every local model uses the fastest; until one is measured, half the cores (as
llama-cpp-python's own default: on 2 cores with another process busy, SmolLM2 answered
in 13 s with 1 thread and 105 s with 2). Only the embedder measures (rates of two models
are not comparable), and a newly loaded one starts over; a count being tried is only for
the calls timed, so a round the backlog's end leaves unfinished slows no other call.
Calls run on the one model thread: no locking.
"""

from __future__ import annotations

import os
from typing import Any

# A call with fewer tokens (a query's embedding, a few dozen) is too short to time: it only
# uses the count. A background call lasts at most EMBED_CALL_S (half a second): at 1024
# tokens, one with 1 thread (880 tokens of MiniLM there) was never timed.
MIN_SAMPLE_TOKENS = 256
# Measured calls between two rounds of trying the other counts (each round costs one
# batch at a slower count: about 2% of a backlog on an idle machine).
REPROBE_EVERY = 50
# A measured call this much slower than the chosen count's usual rate starts a round at once
# (another process took a core; cores given back are found by the next regular round).
SLOWDOWN = 0.6
# Weight of the newest measurement in the chosen count's rate.
EWMA = 0.5
# Another count replaces the chosen one only when this much faster (noise is not a reason).
MARGIN = 0.05


class Threads:
    """The llama.cpp thread count for the next call, and what each count achieved."""

    def __init__(self, cpus: int | None = None, fixed: int | None = None) -> None:
        self.cpus = cpus or os.cpu_count() or 1
        self.rates: dict[int, float] = {}  # tokens/s, the latest (the chosen count: a running mean)
        self._probes: list[int] = []
        self._since_round = 0
        self.configure(fixed)

    def configure(self, fixed: int | None) -> None:
        """[models] threads: a fixed count, or None to measure."""
        self.fixed = fixed
        self.candidates = (fixed,) if fixed else tuple(sorted({1, max(1, self.cpus // 2), self.cpus}))
        self.best = fixed or max(1, self.cpus // 2)
        self.restart()

    def restart(self) -> None:
        """Forget what was measured (another model measures now): try every count again."""
        self.rates = {}
        self._since_round = 0
        self._probes = [] if self.fixed else list(reversed(self.candidates))

    @property
    def count(self) -> int:
        """The count of a call that is not timed (a query's, a generator's, a reranker's)."""
        return self.best

    def for_call(self, tokens: int) -> int:
        """The count for a call of `tokens` tokens: one being tried, for a call long enough
        to time (a background batch), else the fastest known."""
        probes = self._probes  # replaced, never changed in place: status reads it from another thread
        return probes[0] if probes and tokens >= MIN_SAMPLE_TOKENS else self.best

    def record(self, threads: int, tokens: int, seconds: float) -> None:
        """One call's work (tokens) and time with `threads` threads."""
        if self.fixed or tokens < MIN_SAMPLE_TOKENS or seconds <= 0:
            return
        rate = tokens / seconds
        if self._probes and threads == self._probes[0]:
            self.rates[threads] = rate
            self._probes = self._probes[1:]
            if not self._probes:
                self._choose()
            return
        if threads != self.best:
            return
        usual = self.rates.get(threads)
        self._since_round += 1
        if usual is not None and rate < SLOWDOWN * usual:
            self.rates[threads] = rate  # the new conditions, not the old mean
            self._round()
            return
        self.rates[threads] = rate if usual is None else usual + EWMA * (rate - usual)
        if self._since_round >= REPROBE_EVERY:
            self._round()

    def _round(self) -> None:
        self._since_round = 0
        self._probes = [c for c in reversed(self.candidates) if c != self.best]

    def _choose(self) -> None:
        fastest = max(self.rates, key=lambda c: self.rates[c])
        held = self.rates.get(self.best)
        if held is None or self.rates[fastest] > held * (1 + MARGIN):
            self.best = fastest

    def apply(self, llm: Any, tokens: int = 0) -> int:
        """Set the count for the next call (of `tokens` tokens, when it is timed) on a
        llama_cpp.Llama; returns it."""
        n = self.for_call(tokens)
        llm._ctx.set_n_threads(n, n)  # llama-cpp-python's context, as Llama.embed uses it
        return n
