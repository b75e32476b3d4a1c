"""The canonicalization contract, rule by rule, byte for byte: every content hash depends on it."""

from __future__ import annotations

import hashlib
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gnod.ingest.canonical import _clean, canonicalize, canonicalize_lines, mirror_hash
from gnod.lines import composed, expand, file_line, shifts, stored_line

REMOVED_CONTROLS = "".join(
    chr(c) for c in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F, *range(0x80, 0xA0)]
)


# Rule 1: "\r\n" -> "\n"


def test_crlf_becomes_lf() -> None:
    assert canonicalize("a\r\nb\r\n\r\nc\r\n") == "a\nb\n\nc\n"


# Rule 2: control characters


def test_every_listed_control_character_is_removed() -> None:
    assert canonicalize(f"a{REMOVED_CONTROLS}b") == "ab\n"


def test_tab_and_newline_are_kept() -> None:
    assert canonicalize("a\tb\nc") == "a\tb\nc\n"


def test_lone_cr_is_removed() -> None:
    assert canonicalize("a\rb\r\rc") == "abc\n"


@pytest.mark.parametrize("kept", ["\xa0", "\u200b", "\u00ad", "\u2028", "\ufeff"])
def test_neighbours_of_the_control_ranges_are_kept(kept: str) -> None:
    assert canonicalize(f"a{kept}b") == f"a{kept}b\n"


# Rule 3: byte order mark


def test_leading_bom_is_stripped() -> None:
    assert canonicalize("\ufeffhello") == "hello\n"


def test_repeated_leading_bom_is_stripped() -> None:
    assert canonicalize("\ufeff\ufeffhello") == "hello\n"


def test_bom_inside_the_text_is_kept() -> None:
    assert canonicalize("a\n\ufeffb") == "a\n\ufeffb\n"


# Rule 4: NFC


def test_nfd_is_composed() -> None:
    assert canonicalize("e\u0301") == "\u00e9\n"
    assert canonicalize("A\u030a ngstr\u00f6m") == "\u00c5 ngstr\u00f6m\n"


def test_nfc_is_not_nfkc() -> None:
    assert canonicalize("\ufb01le \u2163 x\u00b2") == "\ufb01le \u2163 x\u00b2\n"


# Rule 5: trailing whitespace


def test_trailing_whitespace_is_trimmed_per_line() -> None:
    assert canonicalize("a  \nb\t\t\nc \t ") == "a\nb\nc\n"


def test_unicode_trailing_whitespace_is_trimmed() -> None:
    assert canonicalize("a\u3000\xa0\u2009\nb") == "a\nb\n"


def test_leading_whitespace_is_kept() -> None:
    assert canonicalize("  indented\n\tcode") == "  indented\n\tcode\n"


# Rule 6: blank lines


def test_blank_line_runs_collapse_to_one() -> None:
    assert canonicalize("a\n\n\n\n\nb") == "a\n\nb\n"


def test_single_blank_line_is_kept() -> None:
    assert canonicalize("a\n\nb") == "a\n\nb\n"


def test_leading_blank_lines_collapse_to_one() -> None:
    assert canonicalize("\n\n\na") == "\na\n"
    assert canonicalize("\na") == "\na\n"


# Rule 7: trailing newline


def test_missing_final_newline_is_added() -> None:
    assert canonicalize("a") == "a\n"


def test_extra_final_newlines_are_removed() -> None:
    assert canonicalize("a\n\n\n") == "a\n"


@pytest.mark.parametrize("blank", ["", "\n", "\n\n\n", "   ", " \n\t\n", "\ufeff", "\r\n\x00"])
def test_empty_or_blank_document_is_a_single_newline(blank: str) -> None:
    assert canonicalize(blank) == "\n"


# Interactions


def test_crlf_with_trailing_spaces() -> None:
    assert canonicalize("a  \r\nb \t\r\n") == "a\nb\n"


def test_whitespace_only_lines_between_paragraphs_collapse() -> None:
    assert canonicalize("para one\n   \n\t\n \u3000\npara two") == "para one\n\npara two\n"


def test_cr_only_line_counts_as_blank() -> None:
    assert canonicalize("a\r\n\r\r\n\r\nb") == "a\n\nb\n"


def test_control_between_letter_and_combining_mark_still_composes() -> None:
    # Controls go before NFC, otherwise a second pass would compose what the first left.
    assert canonicalize("e\x00\u0301") == "\u00e9\n"


def test_control_before_bom_still_strips_it() -> None:
    assert canonicalize("\x00\ufeffa") == "a\n"


def test_bom_with_crlf_and_nfd() -> None:
    raw = "\ufeff# Caf\u0065\u0301  \r\n\r\n\r\n\r\ntext\r\n"
    assert canonicalize(raw) == "# Caf\u00e9\n\ntext\n"


# Properties

NASTY = st.sampled_from(
    [
        "a",
        "e",
        " ",
        "\t",
        "\n",
        "\r",
        "\r\n",
        "\ufeff",
        "\x00",
        "\x0b",
        "\x85",
        "\x9f",
        "\u0301",
        "\u0327",
        "\u0316",
        "\u3000",
        "\xa0",
        "\u2028",
        "\u1100",
        "\u1161",
        "\u11a8",
    ]
)
TEXTS = st.text() | st.lists(NASTY | st.characters(), max_size=40).map("".join)


@given(TEXTS)
@settings(max_examples=500)
def test_idempotent(text: str) -> None:
    once = canonicalize(text)
    assert canonicalize(once) == once


@given(TEXTS)
@settings(max_examples=300)
def test_output_shape(text: str) -> None:
    out = canonicalize(text)
    assert out.endswith("\n") and not out.endswith("\n\n") or out == "\n"
    assert "\n\n\n" not in out and not out.startswith("\n\n")
    assert not out.startswith("\ufeff")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)
    assert all(line == line.rstrip() for line in out.split("\n"))


# Hash


def test_pinned_hash_of_a_sample() -> None:
    raw = "\ufeff---\r\ntitle: Caf\u0065\u0301\r\n---\r\n\r\n\r\n# Heading  \r\nBody\x07 text.\t\r\n\r\n"
    expected = "---\ntitle: Caf\u00e9\n---\n\n# Heading\nBody text.\n"
    pinned = hashlib.sha256(expected.encode("utf-8")).hexdigest()
    assert canonicalize(raw) == expected
    assert mirror_hash(canonicalize(raw)) == pinned


def test_mirror_hash_is_lowercase_hex_sha256() -> None:
    assert mirror_hash("\n") == hashlib.sha256(b"\n").hexdigest()
    assert re.fullmatch("[0-9a-f]{64}", mirror_hash("caf\u00e9\n"))


# --- where the canonical lines were in the file ---------------------------------------

LINES_TEXT = st.text(alphabet=["a", "b", " ", "\t", "\n", "\n", "\n", "\r", "\x0c", "\ufeff", "é"], max_size=80)


@settings(max_examples=400, deadline=None)
@given(LINES_TEXT)
def test_the_line_shifts_map_every_canonical_line_to_its_file_line_and_back(text: str) -> None:
    canonical, shifts = canonicalize_lines(text)
    assert canonical == canonicalize(text)
    # The file's lines after rules 1-5 (tested above), which keep every line in place.
    file_lines = _clean(text).split("\n")
    assert len(file_lines) == text.replace("\r", "").count("\n") + 1
    stored = canonical.split("\n")[:-1]
    for i, line in enumerate(stored, 1):
        at = file_line(shifts, i)
        assert file_lines[at - 1] == line
        assert stored_line(shifts, at) == i
    last = file_line(shifts, len(stored)) if stored else 0
    # The blank lines put back: the file's lines as they were, up to its last kept one.
    assert expand(canonical, shifts).split("\n")[:last] == file_lines[:last]
    # And back: each of the file's lines is in the canonical line it maps to (a dropped
    # blank line in the blank line kept of its run).
    for at in range(1, last + 1):
        assert stored[stored_line(shifts, at) - 1] == file_lines[at - 1]


def test_line_shifts_of_python_and_markdown() -> None:
    text = "import os\n\n\ndef a():\n    pass\n\n\n\nclass B:\n    x = 1\n"
    canonical, shifts = canonicalize_lines(text)
    assert canonical == "import os\n\ndef a():\n    pass\n\nclass B:\n    x = 1\n"
    assert shifts == "3:1 6:3"
    assert [file_line(shifts, i) for i in range(1, 8)] == [1, 2, 4, 5, 6, 9, 10]
    assert [stored_line(shifts, i) for i in range(1, 11)] == [1, 2, 2, 3, 4, 5, 5, 5, 6, 7]
    assert expand(canonical, shifts) == text
    assert canonicalize_lines("\n\n\n# Title\n") == ("\n# Title\n", "2:2")
    assert canonicalize_lines("no blank runs\n\nhere\n") == ("no blank runs\n\nhere\n", "")
    assert file_line("", 7) == 7


CSV_CELL = st.sampled_from(["a", "b c", "", '"x\ny"', '"p\n\nq"', "1"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(CSV_CELL, min_size=1, max_size=3), min_size=1, max_size=8), st.lists(st.booleans(), max_size=8)
)
def test_a_csv_table_s_rows_are_numbered_as_its_file_s_lines(rows, blank_after) -> None:
    """`search CUST-ZX99` said line 1237 of a row at line 1236: the Markdown table's
    delimiter row was counted. Each row is where it starts in the file (blank lines, and
    cells holding line breaks, between them), the delimiter row on its header's line."""
    import csv
    import io

    from gnod.ingest.convert import convert_lines

    text = ""
    for row, blank in zip(rows, [*blank_after, *[False] * len(rows)]):
        text += ",".join(row) + "\n" + ("\n" if blank else "")
    markdown, placed = convert_lines(text.encode(), "t.csv")
    parsed = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)]
    if not parsed:
        assert (markdown, placed) == ("", "")
        return
    canonical, line_shifts = canonicalize_lines(markdown)
    line_shifts = composed(line_shifts, placed)
    stored = canonical.split("\n")[:-1]
    file_lines = text.split("\n")

    def first_word(cell: str) -> str:
        return (cell.strip('"').split() or [""])[0]

    for i, line in enumerate(stored, 1):
        at = file_line(line_shifts, i)
        if i != 2:  # a row's first cell starts its line (the delimiter row is on its header's)
            assert first_word(file_lines[at - 1].split(",")[0]) == first_word(line.split(" | ")[0][2:]), (i, at)
        assert stored_line(line_shifts, at) == (1 if i == 2 else i)
    # `get` numbers the file's lines: a row at its line, and no delimiter row among them.
    assert expand(canonical, line_shifts).split("\n")[file_line(line_shifts, 1) - 1] == stored[0]
    assert "| --- |" not in expand(canonical, line_shifts)


def test_line_shifts_of_a_csv_table_and_composed_with_blank_lines() -> None:
    assert shifts([1, 1, 2, 4, 6]) == "2:-1 4:0 5:1"
    assert [file_line("2:-1 4:0 5:1", n) for n in range(1, 6)] == [1, 1, 2, 4, 6]
    assert [stored_line("2:-1 4:0 5:1", n) for n in range(1, 7)] == [1, 3, 3, 4, 4, 5]
    assert expand("h\nsep\nr1\nr2\nr3", "2:-1 4:0 5:1") == "h\nr1\n\nr2\n\nr3"
    # Blank lines the canonical text dropped, then a converter's places: both apply.
    assert composed("5:2", "2:-1") == "2:-1 5:1"
    assert composed("", "2:-1") == "2:-1" and composed("5:2", "") == "5:2"


def _by_the_rules(text: str) -> str:
    """The module docstring's rules, one plain step each."""
    text = re.sub("[\x00-\x08\x0b-\x1f\x7f-\x9f]", "", text.replace("\r\n", "\n"))
    text = unicodedata.normalize("NFC", text.lstrip("\ufeff"))
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub("\n{3,}", "\n\n", re.sub(r"\A\n{2,}", "\n", text))
    return text.rstrip("\n") + "\n"


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=["a", "b", " ", "\t", "\n", "\n", "\r", "\x0c", "\xa0", "\u3000", "é"], max_size=60) | TEXTS)
def test_the_canonical_text_is_what_the_rules_give_step_by_step(text: str) -> None:
    # ASCII text without trailing whitespace or blank runs is let through uncopied: the
    # shortcut must give what the rules give, with every kind of whitespace at a line's end.
    assert canonicalize(text) == _by_the_rules(text)
