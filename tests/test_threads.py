"""The llama.cpp thread count: fixed by config, else measured on background embedding
batches (gnod.models.threads), and applied to a real llama.cpp context."""

from __future__ import annotations

import pytest

from gnod.models import threads as t
from gnod.models.threads import Threads

BATCH = 4000  # tokens in one background batch


def feed(th: Threads, speed: dict[int, float], calls: int = 1) -> list[int]:
    """Run `calls` batches at the counts `th` picks, each at its count's tokens/s; the counts used."""
    used = []
    for _ in range(calls):
        n = th.for_call(BATCH)
        th.record(n, BATCH, BATCH / speed[n])
        used.append(n)
    return used


def test_candidates_are_one_thread_half_and_all_the_cores():
    assert Threads(cpus=2).candidates == (1, 2)
    assert Threads(cpus=8).candidates == (1, 4, 8)
    assert Threads(cpus=1).candidates == (1,)
    assert Threads(cpus=8, fixed=3).candidates == (3,)


def test_a_fixed_count_is_never_changed_by_measurements():
    th = Threads(cpus=8, fixed=3)
    assert feed(th, {3: 100.0}, 200) == [3] * 200
    assert th.rates == {}


def test_every_count_is_tried_first_then_the_fastest_is_kept():
    th = Threads(cpus=8)
    speed = {8: 3000.0, 4: 3600.0, 1: 1600.0}
    assert feed(th, speed, 3) == [8, 4, 1]  # most threads first: the likely winner on an idle machine
    assert th.best == 4
    assert feed(th, speed, t.REPROBE_EVERY - 1) == [4] * (t.REPROBE_EVERY - 1)


def test_the_others_are_tried_again_every_so_often():
    th = Threads(cpus=2)
    speed = {2: 3000.0, 1: 1600.0}
    feed(th, speed, 2)
    used = feed(th, speed, t.REPROBE_EVERY + 2)
    assert used.count(1) == 1 and used[-1] == 2
    speed[1] = 3500.0  # the other count became faster (say another process stopped)
    used = feed(th, speed, 2 * t.REPROBE_EVERY)
    assert used[-1] == 1 and th.best == 1


def test_a_sudden_slowdown_starts_a_new_round_at_once():
    th = Threads(cpus=2)
    speed = {2: 3000.0, 1: 1600.0}
    feed(th, speed, 5)
    assert th.count == th.for_call(BATCH) == 2
    speed[2] = 1200.0  # another process took a core: 2 threads wait for each other
    assert feed(th, speed, 3) == [2, 1, 1]
    assert th.best == 1


def test_noise_below_the_margin_does_not_switch():
    th = Threads(cpus=2)
    feed(th, {2: 3000.0 * (1 + t.MARGIN / 2), 1: 3000.0}, 2)
    assert th.best == 1  # the count held until measured


def test_short_calls_are_not_timed():
    th = Threads(cpus=2)
    th.record(th.for_call(t.MIN_SAMPLE_TOKENS - 1), t.MIN_SAMPLE_TOKENS - 1, 0.001)
    assert th.rates == {} and th.for_call(BATCH) == 2
    # A background call is cut to half a second: one of 880 tokens is timed all the same.
    th.record(th.for_call(880), 880, 0.47)
    assert th.rates == {2: 880 / 0.47}


def test_calls_not_timed_use_the_fastest_known_count_never_one_being_tried():
    """A round of tries left unfinished when the backlog ended gave every later call
    (a generator's answer: 105 s with 2 threads where 1 took 13) the count being tried."""
    th = Threads(cpus=2)
    assert th.count == th.for_call(t.MIN_SAMPLE_TOKENS - 1) == 1  # half the cores until measured
    assert th.for_call(BATCH) == 2  # the first try
    feed(th, {2: 1400.0, 1: 2700.0}, 2)
    assert th.best == 1
    th._round()  # due again (REPROBE_EVERY calls, or a slowdown): then the backlog ends
    assert th.for_call(BATCH) == 2 and th.count == 1


def test_restart_tries_every_count_again():
    th = Threads(cpus=2)
    feed(th, {2: 3000.0, 1: 1600.0}, 2)
    th.restart()
    assert th.rates == {} and th.for_call(BATCH) == 2
    assert feed(th, {2: 1000.0, 1: 1600.0}, 2) == [2, 1] and th.best == 1


@pytest.mark.timeout(120)
def test_a_real_embedder_runs_and_measures_each_count():
    """llama.cpp's context really runs with the count chosen; a query's embedding is not timed."""
    import llama_cpp

    from gnod.models.llama_embed import LlamaEmbedder
    from testmodels.build import minilm_gguf

    th = Threads(cpus=2)
    emb = LlamaEmbedder("test:minilm", str(minilm_gguf()), th, query_prompt=lambda q: q, pooling="mean")
    try:
        ctx = emb._llm._ctx.ctx
        batch = [f"Paragraph {i} says something about cells, proteins and their many uses. " * 6 for i in range(16)]
        seen = []
        for _ in range(3):
            emb.embed_documents(batch)
            seen.append(llama_cpp.llama_n_threads_batch(ctx))
        assert seen[:2] == [2, 1] and seen[2] == th.best
        assert set(th.rates) == {1, 2} and all(r > 0 for r in th.rates.values())
        before = dict(th.rates)
        emb.embed_query("cells")
        assert th.rates == before
    finally:
        emb.close()
