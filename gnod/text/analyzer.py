"""Text → index terms: the one place that decides what a "word" is and how it is stemmed.

Documents are stemmed in their own language before they reach FTS5 (the FTS table
only sees space-separated stems), and queries are stemmed with every language the
index holds, so both sides always meet through the same function.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import Stemmer

# Alphanumeric runs (plus the combining marks that Indic, Thai, Hebrew and Arabic words
# carry inside them, which `\w` does not match): `_` and `-` separate parts, so
# `snake_case` and `real-time` become adjacent tokens that the grammar matches as phrases.
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
    "\u0900-\u0dff\u0e00-\u0e7f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
)
TOKEN_RE = re.compile(rf"(?:[^\W_]|[{_MARKS}])+")

# Snowball algorithms that PyStemmer ships, by the names we store in the index.
LANGUAGES: frozenset[str] = frozenset(
    a for a in Stemmer.algorithms() if a not in ("porter", "dutch_porter")
)

# Longer tokens are hashes, base64 or minified junk: indexed verbatim, never stemmed.
_MAX_STEM_LEN = 40
_MAX_CACHE = 500_000


class _StemCache(dict):
    """token → stem; a miss stems once. `map(cache.__getitem__, tokens)` keeps hits in C."""

    __slots__ = ("_stemmer",)

    def __init__(self, stemmer: Stemmer.Stemmer | None) -> None:
        super().__init__()
        self._stemmer = stemmer

    def __missing__(self, token: str) -> str:
        if self._stemmer is None or len(token) > _MAX_STEM_LEN or token.isdigit():
            out = token
        else:
            out = self._stemmer.stemWord(token) or token
        if len(self) < _MAX_CACHE:
            self[token] = out
        return out


class Analyzer:
    """Tokenizes and stems text for one language (or none).

    PyStemmer's own cache is slower than a dict lookup, so it is disabled and stems
    are memoized here; the cache is bounded (a corpus vocabulary fits easily).
    """

    __slots__ = ("language", "_cache")

    def __init__(self, language: str | None) -> None:
        if language is not None and language not in LANGUAGES:
            raise ValueError(f"no Snowball stemmer for language {language!r}")
        self.language = language
        self._cache = _StemCache(Stemmer.Stemmer(language, 0) if language else None)

    def stem(self, token: str) -> str:
        """Stem one lowercase token."""
        return self._cache[token]

    def stems(self, tokens: Iterable[str]) -> list[str]:
        return list(map(self._cache.__getitem__, tokens))

    def index_text(self, text: str) -> str:
        """The space-joined stems FTS5 stores for `text`."""
        return " ".join(map(self._cache.__getitem__, TOKEN_RE.findall(text.lower())))


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric tokens in order."""
    return TOKEN_RE.findall(text.lower())


class AnalyzerSet:
    """One Analyzer per language, created on demand and kept warm for the process."""

    def __init__(self) -> None:
        self._by_lang: dict[str | None, Analyzer] = {}

    def get(self, language: str | None) -> Analyzer:
        a = self._by_lang.get(language)
        if a is None:
            a = self._by_lang[language] = Analyzer(language)
        return a

    def stem_sequences(
        self, tokens: Sequence[str], languages: Iterable[str | None]
    ) -> list[tuple[str, ...]]:
        """Distinct stemmed forms of a token sequence, one per language, first seen first.

        A query meets a document only through that document's language, so a term
        (or phrase) must be looked up under every language the index holds.
        """
        seen: dict[tuple[str, ...], None] = {}
        for lang in languages:
            seen.setdefault(tuple(self.get(lang).stems(tokens)), None)
        return list(seen)
