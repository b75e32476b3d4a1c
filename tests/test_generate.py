"""The llama.cpp generator with the SmolLM2 test model: streaming and stopping early."""

from __future__ import annotations

import pytest

MESSAGES = [{"role": "user", "content": "Write a short poem about the sea."}]


@pytest.fixture(scope="module")
def generator():
    from gnod.models.llama_generate import LlamaGenerator
    from gnod.models.threads import Threads
    from testmodels.build import smollm2_gguf

    gen = LlamaGenerator("test:smollm2", str(smollm2_gguf()), threads=Threads(fixed=1))
    yield gen
    gen.close()


def test_streamed_pieces_make_the_reply(generator):
    pieces: list[str] = []
    reply = generator.generate(MESSAGES, max_tokens=40, on_token=pieces.append)
    assert len(pieces) > 5 and "".join(pieces) == reply


def test_stop_ends_generation_with_what_was_made(generator):
    full = generator.generate(MESSAGES, max_tokens=40)
    pieces: list[str] = []
    cut = generator.generate(MESSAGES, max_tokens=40, on_token=pieces.append, stop=lambda: len(pieces) >= 5)
    assert len(pieces) == 5 and cut == "".join(pieces)
    assert full.startswith(cut) and len(full) > len(cut)  # greedy: the same start, cut short
    assert generator.generate(MESSAGES, max_tokens=40) == full  # the model is fine afterwards
