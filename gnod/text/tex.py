"""TeX's accented letters (`G\\"odel`, `Erd{\\H{o}}s`, `{\\ss}`) as the letters they
stand for: a BibTeX or LaTeX file spells names so, and its words were indexed as their
pieces (`G`, `odel`), found by no search for Gödel or Godel. Each line keeps its lines
(a passage's line is the file's)."""

from __future__ import annotations

import re
import unicodedata

# Each accent command and the combining mark it puts on its letter.
_ACCENTS = {
    '"': "\u0308",
    "'": "\u0301",
    "`": "\u0300",
    "^": "\u0302",
    "~": "\u0303",
    "=": "\u0304",
    ".": "\u0307",
    "u": "\u0306",
    "v": "\u030c",
    "H": "\u030b",
    "c": "\u0327",
    "k": "\u0328",
    "r": "\u030a",
    "d": "\u0323",
    "b": "\u0331",
}
# Letters of their own: `\ss` ß, `\o` ø, `\l` ł, `\aa` å; a dotless i or j under an accent.
_LETTERS = {
    "ss": "ß",
    "o": "ø",
    "O": "Ø",
    "l": "ł",
    "L": "Ł",
    "ae": "æ",
    "AE": "Æ",
    "oe": "œ",
    "OE": "Œ",
    "aa": "å",
    "AA": "Å",
    "i": "ı",
    "j": "ȷ",
}
_LETTER = r"(?:\\(?:i|j)(?![A-Za-z])|[A-Za-z])"
# An accent on a letter, the pair maybe in braces (`{\"o}`), the letter maybe too
# (`\"{o}`, `{\"{o}}`); a letter command's accent is a word (`\v c`, `\v{c}`).
_ACCENTED = re.compile(
    r"(\{)?\\(?:([\"'`^~=.])[ \t]*|([uvHckrdb])(?:[ \t]+|(?=\{)))"
    rf"(?:\{{[ \t]*({_LETTER})[ \t]*\}}|({_LETTER}))(?(1)\}})"
)
# A letter command ends at its first non-letter; spaces after it are TeX's, not text's
# (`Stra\ss e` is Straße).
_LETTER_COMMAND = re.compile(
    r"(\{)?\\(ss|aa|AA|ae|AE|oe|OE|o|O|l|L)(?![A-Za-z])(?:[ \t]*\{\}|[ \t]+(?=[A-Za-z]))?(?(1)\})"
)


def decode_accents(text: str) -> str:
    """`text` with its TeX accents and letter commands as letters (composed: NFC)."""
    if "\\" not in text:
        return text
    text = _ACCENTED.sub(_accented, text)
    return _LETTER_COMMAND.sub(lambda m: _LETTERS[m[2]], text)


def _accented(m: re.Match[str]) -> str:
    letter = m[4] or m[5]
    base = _LETTERS[letter[1:]] if letter.startswith("\\") else letter
    if base in "ıȷ":  # `\'{\i}`: the dot's place takes the accent
        base = "i" if base == "ı" else "j"
    return unicodedata.normalize("NFC", base + _ACCENTS[m[2] or m[3]])
