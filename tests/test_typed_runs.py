"""Quoted runs read in a document's text (search.typed_runs): their ends are tested in
Python, and hold exactly where a look-around of the word class would have held."""

from __future__ import annotations

import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from gnod.search.grammar import parse
from gnod.search.typed_runs import as_typed, phrases
from gnod.text.analyzer import _CJK, fold, is_word_char, tokenize

# What a word goes on with, as one class of a pattern (the definition is_word_char keeps).
WORD_CLASS = f"[^\\W_{_CJK}]"


def test_a_word_character_is_a_letter_or_digit_outside_a_cjk_run_for_every_code_point():
    word = re.compile(WORD_CLASS)
    differ = [c for c in range(sys.maxunicode + 1) if is_word_char(chr(c)) != bool(word.fullmatch(chr(c)))]
    assert differ == []
    assert is_word_char("é") and is_word_char("٣") and is_word_char("Ж")
    assert not is_word_char("_") and not is_word_char("用") and not is_word_char("-")


def _phrase_by_class(tokens: list[str]) -> re.Pattern[str]:
    first = re.escape(tokens[0])
    rest = "".join("[\\W_]+" + re.escape(t) for t in tokens[1:])
    return re.compile(f"{first}(?<!{WORD_CLASS}{first}){rest}(?!{WORD_CLASS})")


def _typed_by_class(text: str) -> re.Pattern[str]:
    before = f"(?<!{WORD_CLASS})" if re.match(WORD_CLASS, text) else ""
    after = f"(?!{WORD_CLASS})" if re.search(f"{WORD_CLASS}$", text) else ""
    return re.compile(before + re.escape(text) + after)


# Pieces of text around and between the words: letters that go on with a word, marks
# that part them, CJK characters (a token of their own), digits and accents.
PIECES = ["a", "b", "ab", "ba", " ", "  ", "_", "-", ".", "é", "1", "用", "\n", "x", "->"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "ab", "b1"]), min_size=2, max_size=3),
    st.lists(st.sampled_from(PIECES), max_size=14),
)
def test_a_quoted_run_of_words_holds_where_the_pattern_with_the_word_class_does(words, pieces):
    (run,) = phrases(parse('"' + " ".join(words) + '"'))
    text = fold("".join(pieces).lower())
    assert run.search(text) == bool(_phrase_by_class(words).search(text))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "_", ".", "->", "é", "1"]), min_size=2, max_size=4),
    st.lists(st.sampled_from(PIECES), max_size=14),
)
def test_a_run_typed_with_marks_holds_where_the_pattern_with_the_word_class_does(typed, pieces):
    raw = "".join(typed)
    if not tokenize(raw):
        return  # no words: no clause
    runs = as_typed(parse(f'"{raw}"'))
    text = fold("".join(pieces).lower())
    folded = fold(raw.lower())
    if folded == " ".join(tokenize(raw)):
        assert runs == []
        return
    (run,) = runs
    assert run.search(text) == bool(_typed_by_class(folded).search(text))


def test_a_run_is_found_after_a_place_whose_start_is_not_clear():
    """`b a a`: the run `a a` at `ba a` is part of a word; the one after it starts
    inside that place and holds."""
    (run,) = phrases(parse('"a a"'))
    assert run.search("ba a a")
    assert not run.search("ba a")
    assert run.search("用a a用")  # a CJK character is a token of its own
    assert not run.search("a a1") and not run.search("éa a")


def test_a_new_quoted_query_compiles_no_pattern_of_the_word_class():
    """The class's CJK ranges took 2.3 ms to compile, for each new quoted query (and
    twice for a run typed with marks): the runs' patterns leave it out."""
    runs = phrases(parse('"memory barrier"')) + as_typed(parse('"self._sock"'))
    assert len(runs) == 2
    assert all(_CJK[:6] not in run.pattern.pattern for run in runs)
