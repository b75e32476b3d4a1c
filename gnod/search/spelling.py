"""A word typed wrong (`kmem_cahce_alloc`, `mutex_lokc`): the word the index holds one edit
away (a letter left out, added, changed, or two next to each other swapped) in far more
documents; and a name of code typed wrong whose words are all words (`copy_form_user`):
the name one edit away that the collections define."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from gnod.text.analyzer import fold

WORD_LETTERS = "abcdefghijklmnopqrstuvwxyz"
# German's ä, ö and ü as written without them (Mueller, Muenchen): their letter, an `e` after.
_UMLAUT_SPELLED = re.compile("([aou])e")
NAME_LETTERS = WORD_LETTERS + "0123456789_"  # a name of code's, as the collections' definitions hold them


def edits(word: str, letters: str = WORD_LETTERS) -> set[str]:
    """Every string one edit from `word` that keeps its first letter, the letters added or
    changed among `letters`: typed first, a word's first letter is the one least often
    wrong, and a word changed there is another word (`wall` is no slip for `all` or
    `call`, nor `-Wall` for `-call`)."""
    cuts = [(word[:i], word[i:]) for i in range(1, len(word) + 1)]
    out = {a + b[1:] for a, b in cuts if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in cuts if len(b) > 1}
    out |= {a + c + b[1:] for a, b in cuts if b for c in letters}
    out |= {a + c + b for a, b in cuts for c in letters}
    out.discard(word)
    return out


def _checkable(word: str, min_chars: int, max_chars: int) -> bool:
    """Whether `word` may be a word typed wrong: one with a digit is a name or a number as
    typed (`word1` is no `words`, `ext5` no `ext4`)."""
    return min_chars <= len(word) <= max_chars and word.isascii() and word.isalpha()


def correction(
    word: str,
    df: Callable[[str], int],
    ratio: float,
    min_chars: int,
    max_chars: int,
    absent_docs: int,
    held: int | None = None,
) -> str | None:
    """The word one edit from `word` in the most documents, where that is at least `ratio`
    times as many as hold `word` (`held`, when the caller counts its other forms too;
    else df(word)), or `absent_docs` for a word no document holds; ties go to the first
    in order (the same every time). A word no document holds that spells a German umlaut
    with its `e` (`Mueller`, `Muenchen`) is first the word without it, as the index holds
    `Müller` (accents off), where one document does: in a document read as English, only
    the German stemmer's reading of `ue` had found it."""
    typed = fold(word)  # as the index holds its words: accents off (`gewährleistng`)
    if not _checkable(typed, min_chars, max_chars):
        return None
    held = df(word) if held is None else held
    if not held and (plain := _UMLAUT_SPELLED.sub(r"\1", typed)) != typed and df(plain):
        return plain
    best, most = None, ratio * held if held else absent_docs
    for other in sorted(edits(typed)):
        n = df(other)
        if n >= most:
            best, most = other, n + 1  # a later one must be held by more
    return best


def name_corrections(name: str, df: Callable[[str], int], min_chars: int, max_chars: int) -> list[str]:
    """The snake_case `name` (lowercase) with one of its words one edit away, that word
    held by the index: the names it may have been meant as, for a lookup of those defined."""
    words = name.split("_")
    out = []
    for i, word in enumerate(words):
        if not _checkable(word, min_chars, max_chars):
            continue
        out += ["_".join([*words[:i], other, *words[i + 1 :]]) for other in sorted(edits(word)) if df(other)]
    return out


def name_edits(name: str, max_chars: int) -> list[str]:
    """The names one edit from `name` (lowercase) that keep its digits as they are: a
    number in a name is part of what it names, not a slip (`handler_399`, `dwc3`); none
    for a name longer than `max_chars`."""
    if len(name) > max_chars:
        return []
    digits = [c for c in name if c.isdigit()]
    return sorted(other for other in edits(name, NAME_LETTERS) if [c for c in other if c.isdigit()] == digits)


def most_defined(defined: dict[str, int]) -> str | None:
    """Of names defined (each with how many contents define it), the one most are; ties
    to the first in order."""
    return min(defined, key=lambda n: (-defined[n], n)) if defined else None


def respelled(query: str, fixes: Iterable[tuple[str, str]]) -> str:
    """`query` with each word typed wrong (a whole word, or a part of a snake_case name)
    replaced, in capitals where it was typed so (all of it, or its first letter)."""
    for wrong, right in fixes:

        def cased(m: re.Match[str], right: str = right) -> str:
            typed = m.group()
            if typed.isupper():
                return right.upper()
            return right[:1].upper() + right[1:] if typed[:1].isupper() else right  # Consloe → Console

        query = re.sub(rf"(?<![A-Za-z0-9]){re.escape(wrong)}(?![A-Za-z0-9])", cased, query, flags=re.IGNORECASE)
    return query
