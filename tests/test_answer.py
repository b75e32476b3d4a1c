"""Citation checking, renumbering, abstention and source selection for `ask` (no model)."""

from __future__ import annotations

from gnod.search import answer


def test_citations_are_renumbered_in_order_of_first_use_and_uncited_sources_dropped():
    c = answer.check("Cats sleep a lot [3]. They purr [1][3]. Dogs bark [3, 1].", 4)
    assert not c.abstained
    assert c.cited == [3, 1]  # source 3 becomes [1], source 1 becomes [2]; 2 and 4 are dropped
    assert c.answer == "Cats sleep a lot [1]. They purr [2][1]. Dogs bark [1][2]."


def test_numbers_that_are_not_sources_are_removed():
    c = answer.check("Mars has a volcano [2] [7]. Water once flowed [0].", 2)
    assert c.cited == [2]
    assert c.answer == "Mars has a volcano [1]. Water once flowed."


def test_an_answer_without_valid_citations_abstains():
    c = answer.check("The moon is made of cheese [9].", 3)
    assert c.abstained and c.answer is None and c.cited == []
    assert "cited none" in c.reason


def test_the_abstain_word_abstains():
    for reply in ("NO_ANSWER", "  no_answer.", "NO_ANSWER [1]", ""):
        c = answer.check(reply, 3)
        assert c.abstained and c.answer is None, reply
    assert "do not contain" in answer.check("NO_ANSWER", 3).reason


def test_semicolon_lists_and_spaces_are_accepted():
    c = answer.check("Bread rises overnight [ 2 ; 1 ].", 2)
    assert c.cited == [2, 1] and c.answer == "Bread rises overnight [1][2]."


def test_select_keeps_few_diverse_sources():
    texts = [
        "Cats sleep most of the day and purr when content.",
        "Cats sleep most of the day and purr when content!",  # a copy: adds nothing
        "Dogs need a walk every day and fetch sticks.",
        "Unrelated weak match about taxes.",
    ]
    assert answer.select(texts, [0.9, 0.85, 0.6, 0.1], 5) == [0, 2]  # copy and weak (< 0.25 × best) left out
    assert answer.select(texts, [0.9, 0.85, 0.6, 0.5], 2) == [0, 2]
    assert answer.select([], [], 3) == []


def test_prompt_numbers_sources_and_flattens_the_question():
    p = answer.prompt(
        "why do\ncats purr?", [answer.SourceText(title="Cats", location="pets/cats.md:1", text="Purring.")]
    )
    assert "[1] Cats (pets/cats.md:1)\nPurring." in p
    assert p.endswith("Question: why do cats purr?\nAnswer:")
