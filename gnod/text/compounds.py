"""Compound words' heads, for the languages that write a compound as one word.

German, Dutch and the Scandinavian languages join a compound's parts (Kündigungsfrist,
huurcontract, arbetsmarknad): a word asked for alone (`Frist`) is in the compounds it
ends, as their head, and those are what it means there (a Kündigungsfrist is a Frist).
Without a dictionary of the language's words, each end of a long word long enough to be
a word is taken for a head, as search engines' compound filters take a dictionary's
words: the ends that are no word (`ndigungsfrist`) are terms no query asks for.
"""

from __future__ import annotations

# Snowball's names of the languages that write compounds as one word.
COMPOUNDING: frozenset[str] = frozenset({"german", "dutch", "swedish", "danish", "norwegian"})


def heads(word: str, modifier_min: int, head_min: int) -> list[str]:
    """The ends of `word` (lowercase, as tokenized) that may be its head: each at least
    `head_min` letters, after at least `modifier_min`; none for a word with a digit."""
    if len(word) < modifier_min + head_min or not word.isalpha():
        return []
    return [word[i:] for i in range(modifier_min, len(word) - head_min + 1)]
