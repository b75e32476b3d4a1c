"""A query's quoted runs as a document's text holds them: the index keeps no places of
the exact words, so a document found holds a quoted run's words as typed and their
stems together, not always the run (`"add_tasks"`: a file's `add_task` and a `tasks`
elsewhere); its text (lowercased and folded) is read for the run itself.

A run holds only where no letter or digit of a word (analyzer.is_word_char) stands
against its ends. That is tested in Python at each place the pattern matches: as a
look-around in the pattern, the class of such characters (its CJK ranges) took 2.3 ms
to compile, once for every new quoted query."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gnod.search.grammar import Clause, verbatim
from gnod.text.analyzer import cjk_character, fold, is_word_char


@dataclass(frozen=True, slots=True)
class Run:
    """A pattern of the text lowercased and folded that holds where no word character
    stands right before it (`before`) nor right after it (`after`)."""

    pattern: re.Pattern[str]
    before: bool
    after: bool

    def search(self, text: str) -> bool:
        """Whether `text` holds the run with its ends clear."""
        at = 0
        while (m := self.pattern.search(text, at)) is not None:
            start, end = m.span()
            if not (self.before and start and is_word_char(text[start - 1])) and not (
                self.after and end < len(text) and is_word_char(text[end])
            ):
                return True
            at = start + 1  # a place starting inside this one may be clear
        return False


def phrases(parsed: Sequence[Clause]) -> list[Run]:
    """Where every clause asked for is a quoted run of words (grammar.verbatim), each run:
    its words as typed, one after the other as tokenize reads them (anything but letters
    and digits between them: `"dwc3 gadget giveback"` is in dwc3_gadget_giveback), whole
    words at either end. None otherwise: what is asked for beside a run is not read for."""
    asked = [c for c in parsed if not c.negated]
    if not asked or not all(verbatim(c) and len(c.tokens) > 1 for c in asked):
        return []
    if any(cjk_character(ch) for c in asked for t in c.tokens for ch in t):
        return []  # a CJK run's tokens are its overlapping bigrams: no run of words
    return [Run(re.compile(_words_pattern([fold(t) for t in c.tokens])), True, True) for c in asked]


def _words_pattern(words: Sequence[str]) -> str:
    """`words` one after the other, anything but letters and digits between them; its
    first word opens it, so the scan is one for that word's letters."""
    return re.escape(words[0]) + "".join("[\\W_]+" + re.escape(w) for w in words[1:])


def as_typed(parsed: Sequence[Clause]) -> list[Run]:
    """Each quoted run typed with marks between its words (`"self._sock"`, `"x->next"`),
    the marks as typed, its ends clear where a word's letter or digit ends it; none where
    the words are typed apart by spaces alone (their run is all there is to look for)."""
    out = []
    for c in parsed:
        text = fold(c.raw.strip('"').lower())
        if c.negated or not text or text == " ".join(c.tokens):
            continue
        out.append(Run(re.compile(re.escape(text)), is_word_char(text[0]), is_word_char(text[-1])))
    return out
