"""Text → index terms: the one place that decides what a "word" is and how it is stemmed.

Documents are stemmed in their own language before they reach FTS5 (the FTS table
only sees space-separated stems), and queries are stemmed with every language the
index holds, so both sides always meet through the same function.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import Stemmer

# Alphanumeric runs only: `_` and `-` separate parts, so `snake_case` and `real-time`
# become two adjacent tokens and are matched as phrases by the query grammar.
TOKEN_RE = re.compile(r"[^\W_]+")

# Snowball algorithms that PyStemmer ships, by the names we store in the index.
LANGUAGES: frozenset[str] = frozenset(
    a for a in Stemmer.algorithms() if a not in ("porter", "dutch_porter")
)

# Longer tokens are hashes, base64 or minified junk: indexed verbatim, never stemmed.
_MAX_STEM_LEN = 40


class Analyzer:
    """Tokenizes and stems text for one language (or none), caching stems in a dict.

    PyStemmer's own cache is slower than a plain dict lookup, so it is disabled and
    we memoize here; the cache is bounded by the vocabulary of the corpus.
    """

    __slots__ = ("language", "_stemmer", "_cache")

    def __init__(self, language: str | None) -> None:
        if language is not None and language not in LANGUAGES:
            raise ValueError(f"no Snowball stemmer for language {language!r}")
        self.language = language
        self._stemmer = Stemmer.Stemmer(language, 0) if language else None
        self._cache: dict[str, str] = {}

    def stem(self, token: str) -> str:
        """Stem one lowercase token."""
        cached = self._cache.get(token)
        if cached is not None:
            return cached
        if self._stemmer is None or len(token) > _MAX_STEM_LEN or token.isdigit():
            out = token
        else:
            out = self._stemmer.stemWord(token) or token
        if len(self._cache) < 500_000:
            self._cache[token] = out
        return out

    def stems(self, tokens: Iterable[str]) -> list[str]:
        cache = self._cache
        stem = self.stem
        return [cache.get(t) or stem(t) for t in tokens]

    def index_text(self, text: str) -> str:
        """The space-joined stems FTS5 stores for `text`."""
        return " ".join(self.stems(tokenize(text)))


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
