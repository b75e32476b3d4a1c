"""`ask` without the model: choosing sources, the prompt, and checking the reply's citations.

The generator sees a few numbered sources and must cite them as [1], [2]. Small
models cite numbers that do not exist, cite nothing, or answer from memory; so the
reply is checked here: unknown numbers are removed, sources never cited are
dropped, the rest are renumbered 1..n in order of first citation, and a reply that
cites nothing (or says it cannot answer) is an abstention, not an answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from msgspec import Struct

from gnod.search.constants import ANSWER_MAX_OVERLAP, ANSWER_MIN_RELATIVE_SCORE
from gnod.text.analyzer import tokenize

ABSTAIN = "NO_ANSWER"

SYSTEM = (
    "You answer questions using only the numbered sources you are given. "
    "Cite the sources that support each sentence with their numbers in square brackets, like [1] or [2]. "
    f"If the sources do not contain the answer, reply with exactly {ABSTAIN} and nothing else. "
    "Be brief."
)


class SourceText(Struct, frozen=True):
    title: str
    location: str  # collection/path:line
    text: str


def select(texts: Sequence[str], scores: Sequence[float], limit: int) -> list[int]:
    """Indexes of the sources to give the generator: best first, few, not repetitive."""
    if not texts:
        return []
    top = max(scores) if scores else 0.0
    chosen: list[int] = []
    seen: list[frozenset[str]] = []
    for i, text in enumerate(texts):
        if len(chosen) >= limit:
            break
        if top > 0 and scores[i] < top * ANSWER_MIN_RELATIVE_SCORE:
            continue
        words = frozenset(tokenize(text))
        if any(words and len(words & s) / len(words | s) > ANSWER_MAX_OVERLAP for s in seen):
            continue
        chosen.append(i)
        seen.append(words)
    return chosen


def fit(sources: Sequence[SourceText], tokens: Callable[[Sequence[SourceText]], int], room: int) -> list[SourceText]:
    """The first of `sources` (best first) whose prompt takes at most `room` tokens
    (`tokens`: a prompt's count): the last ones left out, then the one left cut at a word
    to what fits, never none. A small model's context (SmolLM2's 4,096 tokens) holds five
    passages of prose, but not of code, whose tokens are shorter: `ask` failed there."""
    kept = list(sources)
    while len(kept) > 1 and tokens(kept) > room:
        kept.pop()
    for _ in range(3):  # token counts are not linear in characters: measured again after a cut
        over = tokens(kept)
        if over <= room:
            break
        last = kept[-1]
        bare = tokens([*kept[:-1], SourceText(last.title, last.location, "")])
        share = max(0.0, (room - bare) / max(1, over - bare))
        cut = last.text[: int(len(last.text) * share)]
        cut = cut[: cut.rfind(" ")] if " " in cut else cut
        kept[-1] = SourceText(last.title, last.location, f"{cut} …" if cut else "")
    return kept


def prompt(question: str, sources: Sequence[SourceText]) -> str:
    blocks = [f"[{n}] {s.title or s.location} ({s.location})\n{s.text.strip()}" for n, s in enumerate(sources, 1)]
    return "Sources:\n\n" + "\n\n".join(blocks) + f"\n\nQuestion: {' '.join(question.split())}\nAnswer:"


_CITE = re.compile(r"\[(\s*\d+(?:\s*[,;]\s*\d+)*\s*)\]")


class Checked(Struct, frozen=True):
    answer: str | None  # renumbered; None when abstaining
    cited: list[int]  # 1-based numbers of the given sources, in new order (new n = position + 1)
    abstained: bool
    reason: str | None


def check(reply: str, n_sources: int) -> Checked:
    """Validate and renumber the citations of a reply to `n_sources` numbered sources."""
    text = reply.strip()
    if not text or text.upper().startswith(ABSTAIN) or (ABSTAIN in text and len(text) < 40):
        return Checked(
            answer=None, cited=[], abstained=True, reason="the sources do not contain an answer to this question"
        )
    order: list[int] = []
    for m in _CITE.finditer(text):
        for part in re.split(r"[,;]", m.group(1)):
            n = int(part)
            if 1 <= n <= n_sources and n not in order:
                order.append(n)
    if not order:
        return Checked(
            answer=None,
            cited=[],
            abstained=True,
            reason="the generated answer cited none of the sources, so it is not shown",
        )
    new = {old: i for i, old in enumerate(order, 1)}

    def renumber(m: re.Match[str]) -> str:
        nums = [new[n] for n in (int(x) for x in re.split(r"[,;]", m.group(1))) if n in new]
        return "".join(f"[{n}]" for n in dict.fromkeys(nums))

    out = _CITE.sub(renumber, text)
    out = re.sub(r"[ \t]+([.,;:!?])", r"\1", out)
    out = re.sub(r"[ \t]{2,}", " ", out).strip()
    return Checked(answer=out, cited=order, abstained=False, reason=None)
