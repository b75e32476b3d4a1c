"""Compound words' parts, for the languages that write a compound as one word.

German, Dutch and the Scandinavian languages join a compound's parts (Steuerberater,
Kündigungsfrist, huurcontract, arbetsmarknad): a word asked for alone (`Steuer`,
`Frist`) is in the compounds it starts or ends, and those are what it is about. Without
a dictionary of the language's words, each start and end of a long word long enough to
be a word is taken for a part, as search engines' compound filters take a dictionary's
words: the pieces that are no word (`ndigungsfrist`, `steuerb`) are terms no query asks
for.
"""

from __future__ import annotations

# Snowball's names of the languages that write compounds as one word.
COMPOUNDING: frozenset[str] = frozenset({"german", "dutch", "swedish", "danish", "norwegian"})


def parts(word: str, part_min: int, rest_min: int) -> list[str]:
    """The starts and ends of `word` (lowercase, as tokenized) that may be its parts: each
    at least `part_min` letters, the rest of the word at least `rest_min`; none for a
    word with a digit."""
    if len(word) < part_min + rest_min or not word.isalpha():
        return []
    cuts = range(part_min, len(word) - rest_min + 1)
    return [word[:i] for i in cuts] + [word[-i:] for i in cuts]
