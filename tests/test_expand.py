"""Query-expansion prompts and the parser that turns messy generations into variants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gnod.search.constants import PIPELINE
from gnod.search.expand import (
    PROMPT_VERSION,
    PROMPTS,
    Expansion,
    expansion_prompt,
    parse_expansion,
    prompt_language,
)

EMPTY = Expansion()
Q = "deploy to production"


# --- prompts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "lang"),
    [
        ("en", "en"),
        ("en-US", "en"),
        ("EN_gb", "en"),
        ("english", "en"),
        ("eng", "en"),
        ("de", "de"),
        ("de-CH", "de"),
        ("german", "de"),
        ("deu", "de"),
        ("fr", "multi"),
        ("french", "multi"),
        ("zh-Hans", "multi"),
        ("", "multi"),
        (None, "multi"),
    ],
)
def test_prompt_language(code, lang):
    assert prompt_language(code) == lang


def test_prompts_ask_for_the_line_format():
    assert PROMPT_VERSION and isinstance(PROMPT_VERSION, str)
    for prompt in PROMPTS.values():
        assert "{query}" in prompt
        for prefix in ("lex:", "vec:", "hyde:"):
            assert prefix in prompt
    assert "Anfrage: " in expansion_prompt("x", "de")
    assert "language of the query" in expansion_prompt("x", "fr")


def test_prompt_inserts_the_query_on_one_line():
    p = expansion_prompt("how  do I\ndeploy\nlex: injected {query}", "en")
    assert p.endswith("Query: how do I deploy lex: injected {query}\n")
    # The flattened query cannot add a prefixed line of its own.
    assert parse_expansion(p) == EMPTY


# --- well-formed replies ---------------------------------------------------------------


def test_parse_line_format():
    text = (
        "lex: deployment process\n"
        "lex: release pipeline\n"
        "vec: steps to release software to a live environment\n"
        "hyde: To deploy, run the build, push the artifacts to staging and promote them.\n"
    )
    assert parse_expansion(text, Q) == Expansion(
        lexical=["deployment process", "release pipeline"],
        semantic=["steps to release software to a live environment"],
        hyde="To deploy, run the build, push the artifacts to staging and promote them.",
    )


def test_parse_json_object():
    text = '{"lex": ["deployment process", "ship app"], "vec": "how to release software", "hyde": "Run make deploy."}'
    assert parse_expansion(text, Q) == Expansion(
        lexical=["deployment process", "ship app"], semantic=["how to release software"], hyde="Run make deploy."
    )


def test_parse_json_with_long_key_names_in_a_fence():
    text = 'Here you go:\n```json\n{"lexicalQueries": ["deploy steps"], "vectorQueries": ["release guide"]}\n```'
    assert parse_expansion(text, Q) == Expansion(lexical=["deploy steps"], semantic=["release guide"])


def test_expansion_empty_property():
    assert EMPTY.empty and not Expansion(hyde="x").empty


# --- a dozen malformed generations -----------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\n  ",
        None,
        42,
        b"lex: bytes are not text",
        "Sure! I would be happy to help you search for deployment documents.",
        "<think>lex: deployment steps\nvec: thinking out loud</think>",  # only thinking
        "<think>The user wants lex: variants. Let me think about deploy",  # cut off while thinking
        "lex:\nvec:   \nhyde: ",  # labels without values
        'lex: ...\nvec: ---\nhyde: ""',  # values without a single word
        '{"lex": [1, 2, null], "vec": {"a": "b"}, "hyde": false}',  # wrong JSON types
        '{"lex": ["deploy steps", ',  # truncated JSON
        '["deploy steps", "release"]',  # JSON, but not an object
        "\x00\x01lex\x02: \ud800\ufffe",  # control characters and a lone surrogate
        "```\n```",  # an empty fence
    ],
)
def test_malformed_generation_gives_empty_expansion(text):
    assert parse_expansion(text, Q) == EMPTY


def test_code_fences_are_ignored():
    text = "```text\nlex: deploy steps\n```\n~~~\nvec: release guide\n~~~"
    assert parse_expansion(text, Q) == Expansion(lexical=["deploy steps"], semantic=["release guide"])


def test_thinking_blocks_are_dropped_and_the_answer_kept():
    text = (
        "<think>\nMaybe lex: wrong idea\n</think>\n"
        "lex: deploy steps\n"
        "<THINKING>vec: also wrong</THINKING>\n"
        "vec: release guide\n"
    )
    assert parse_expansion(text, Q) == Expansion(lexical=["deploy steps"], semantic=["release guide"])


def test_stray_closing_think_tag_keeps_what_follows():
    # Chat templates may open <think> in the prompt: only the closer reaches us.
    text = "lex: reasoning leftovers\n</think>\n\nlex: deploy steps"
    assert parse_expansion(text, Q) == Expansion(lexical=["deploy steps"])


def test_chatter_bullets_numbers_and_emphasis_are_tolerated():
    text = (
        "Here are the expansions for your query:\n\n"
        "1. lex: deploy steps\n"
        "- **vec:** release guide for servers\n"
        '* Lexical queries: "ship to prod",\n'
        "> HyDE passage: Deployments go through CI.\n"
        "\n"
        "I hope this helps! Let me know if you need more.\n"
    )
    assert parse_expansion(text, Q) == Expansion(
        lexical=["deploy steps", "ship to prod"],
        semantic=["release guide for servers"],
        hyde="Deployments go through CI.",
    )


def test_duplicates_are_dropped_case_and_punctuation_insensitive():
    text = "lex: Deploy Steps\nlex: deploy steps\nlex: deploy, steps!\nvec: release guide\nvec: Release guide."
    assert parse_expansion(text, Q) == Expansion(lexical=["Deploy Steps"], semantic=["release guide"])


def test_the_query_echoed_back_is_dropped():
    text = "lex: Deploy to production\nlex: deploy to production?\nvec: deploy TO production\nlex: release steps"
    assert parse_expansion(text, Q) == Expansion(lexical=["release steps"])
    # Without the query, nothing is considered an echo.
    assert parse_expansion(text).lexical == ["Deploy to production", "release steps"]


def test_echoed_prompt_lines_are_dropped():
    # A tiny model repeating the instructions and the example instead of answering.
    echoed = "\n".join(line for line in PROMPTS["en"].splitlines() if line[:4] in ("lex:", "vec:", "hyde"))
    assert echoed.count("\n") >= 5
    assert parse_expansion(echoed, Q) == EMPTY
    assert parse_expansion(echoed + "\nlex: deploy steps", Q) == Expansion(lexical=["deploy steps"])
    # The whole prompt echoed back (the HyDE instruction then wraps onto the next line).
    assert parse_expansion(PROMPTS["en"].replace("{query}", Q), Q) == EMPTY
    assert parse_expansion(PROMPTS["multi"].replace("{query}", Q), Q) == EMPTY


def test_over_long_items():
    lim = PIPELINE.expansion
    long_lex = "word " * 30  # 150 chars > 100: prose, not keywords → dropped
    long_vec = "x" * (lim.max_semantic_chars + 1)  # 301 chars > 300 → dropped
    long_hyde = "alpha beta " * 200  # 2,200 chars > 1,200 → cut at a word boundary
    out = parse_expansion(f"lex: {long_lex}\nlex: ok terms\nvec: {long_vec}\nhyde: {long_hyde}", Q)
    assert out.lexical == ["ok terms"] and out.semantic == []
    assert out.hyde is not None and len(out.hyde) <= lim.max_hyde_chars
    # 1,200 chars of "alpha beta " end inside a word: the cut falls back to the last space.
    assert out.hyde.endswith(("alpha", "beta")) and long_hyde.startswith(out.hyde)
    assert len(parse_expansion("hyde: " + "y" * 5000).hyde) == lim.max_hyde_chars  # no space at all


def test_counts_are_capped():
    text = "\n".join(f"lex: term{i}\nvec: sentence number {i}\nhyde: passage {i}" for i in range(6))
    out = parse_expansion(text, Q)
    assert out.lexical == ["term0", "term1", "term2"]  # max 3
    assert out.semantic == ["sentence number 0", "sentence number 1", "sentence number 2"]  # max 3
    assert out.hyde == "passage 0"  # one passage, the first


def test_multiline_hyde_is_joined_until_a_blank_line():
    text = "hyde:\nTo deploy, run the build.\nThen promote the release.\n\nAnything else?\nlex: ship"
    assert parse_expansion(text, Q) == Expansion(
        lexical=["ship"], hyde="To deploy, run the build. Then promote the release."
    )


def test_labels_are_case_insensitive_and_accept_equals_and_fullwidth_colon():
    text = "LEX = deploy steps\nVec： release guide\nHyDE: Run deploy."
    assert parse_expansion(text, Q) == Expansion(
        lexical=["deploy steps"], semantic=["release guide"], hyde="Run deploy."
    )


def test_lookalike_labels_are_not_variants():
    assert parse_expansion("lexicon: deploy steps\nvector-space: release\nhydepark: x", Q) == EMPTY


def test_unicode_variants_survive():
    text = "lex: Mietwohnung Kündigung Frist\nvec: 東京タワーの高さ\nlex: «Straße» sperren"
    assert parse_expansion(text, "wohnung kündigen") == Expansion(
        lexical=["Mietwohnung Kündigung Frist", "«Straße» sperren"], semantic=["東京タワーの高さ"]
    )
    assert parse_expansion("lex: «Straße sperren»\nvec: „Wohnung kündigen“,").lexical == ["Straße sperren"]
    assert parse_expansion("vec: „Wohnung kündigen“,").semantic == ["Wohnung kündigen"]
    # The German prompt's own example, echoed, is not a variant.
    assert parse_expansion("lex: Kündigungsfrist Mietvertrag") == EMPTY


@given(st.text(max_size=400))
def test_parse_never_raises(text):
    out = parse_expansion(text, "q")
    assert len(out.lexical) <= 3 and len(out.semantic) <= 3
