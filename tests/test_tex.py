"""TeX's accented letters read as letters (gnod.text.tex)."""

from __future__ import annotations

import pytest

from gnod.text.tex import decode_accents


@pytest.mark.parametrize(
    "tex, letters",
    [
        (r"G\"odel", "Gödel"),
        (r"G{\"o}del", "Gödel"),
        (r"G\"{o}del", "Gödel"),
        (r"G{\"{o}}del", "Gödel"),  # DBLP's
        (r"Erd{\H{o}}s", "Erdős"),
        (r"\v{C}ech and \v Cech", "Čech and Čech"),
        (r"Fran\c{c}ois", "François"),
        (r"\r{A}ngstr\"om", "Ångström"),
        (r"Sm\'{\i}th", "Smíth"),
        (r"Stra\ss e, {\ss}, Bj{\o}rn, \L{}ukasz", "Straße, ß, Bjørn, Łukasz"),
    ],
)
def test_accents_and_letter_commands_are_letters(tex, letters):
    assert decode_accents(tex) == letters


def test_other_commands_and_the_lines_stay_as_they_are():
    """Only accents: a section, a label, math and a line break are left; no line is joined."""
    text = '\\section{Intro}\\label{eq:1}\n$a \\cdot \\dot{x}$ \\\\\n\\item G\\"odel\n'
    assert decode_accents(text) == "\\section{Intro}\\label{eq:1}\n$a \\cdot \\dot{x}$ \\\\\n\\item Gödel\n"
