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


CODE = "".join(f"    self._sock_{i} = socket.create_connection((host, {8000 + i}), timeout=t_{i})\n" for i in range(20))


def test_sources_are_fitted_to_the_model_s_context(generator):
    """Passages of code take a token per two characters: five of them overflowed SmolLM2's
    4,096 tokens and `ask` failed. The last sources are left out, then the one left is cut
    at a word, so that the prompt fits; the best source always stays; and what fits
    whole is given whole."""
    from gnod.search.answer import SourceText, fit, prompt

    sources = [SourceText(f"net{i}.py", f"code/net{i}.py:1", CODE) for i in range(8)]

    def tokens(kept) -> int:
        return generator.count_tokens(prompt("Where is the socket opened?", kept))

    assert generator.context == 4096
    whole = tokens(sources)
    assert whole > generator.context  # what the daemon sent before
    kept = fit(sources, tokens, 2000)
    assert 1 < len(kept) < len(sources) and tokens(kept) <= 2000
    assert kept[:-1] == sources[: len(kept) - 1]  # the best first, whole
    assert tokens(fit(sources, tokens, tokens(kept[:-1]) + 1)) <= tokens(kept[:-1]) + 1
    (one,) = fit(sources, tokens, 300)
    assert tokens([one]) <= 300 and one.text.endswith(" …") and CODE.startswith(one.text[:-2])
    assert fit(sources, tokens, whole) == sources
