"""Per-document language detection, cheap first guesses and lingua only as a fallback.

Every document is stemmed with the Snowball stemmer of its own language, so the
ingest path calls `detect_language` once per document.  It has to be fast (tens of
microseconds for a typical page) and small in memory, which rules out running lingua
on everything.  The strategy, cheapest first:

1. a collection-level hint wins outright;
2. take a prose sample: the first ~1,500 characters of lines that are not code
   (fenced blocks, indented blocks, lines that are one inline-code span, as in tldr
   pages), with inline code, URLs and tldr's ``[c]reate`` option markers removed;
3. the writing system decides for non-Latin scripts (Cyrillic, Greek, Arabic,
   Armenian, Devanagari, Tamil, Hebrew; CJK and scripts without a stemmer → None);
4. for Latin script, score the sample's tokens against per-language function-word
   lists (a word shared by n languages counts 1/n for each) plus a few diacritics;
   a clear winner is returned;
5. only otherwise ask lingua, restricted to the Latin-script languages we can stem,
   in low-accuracy mode, built lazily once.

`detect_language` returns a Snowball algorithm name from
`gnod.text.analyzer.LANGUAGES`, or None when the text is too short, is written in a
language without a stemmer, or is too ambiguous.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from typing import Any

from gnod.text.analyzer import LANGUAGES, TOKEN_RE
from gnod.text.stopwords import STOPWORDS

__all__ = [
    "ISO_TO_SNOWBALL",
    "detect_language",
    "normalize_language",
]

# --------------------------------------------------------------------------------------
# Names

_ISO_CANDIDATES: dict[str, str] = {
    "ar": "arabic",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "en": "english",
    "eo": "esperanto",
    "es": "spanish",
    "et": "estonian",
    "eu": "basque",
    "fa": "persian",
    "fi": "finnish",
    "fr": "french",
    "ga": "irish",
    "hi": "hindi",
    "hu": "hungarian",
    "hy": "armenian",
    "id": "indonesian",
    "it": "italian",
    "lt": "lithuanian",
    "nb": "norwegian",
    "ne": "nepali",
    "nl": "dutch",
    "nn": "norwegian",
    "no": "norwegian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "st": "sesotho",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}

# ISO 639-1 code → Snowball algorithm name, for the stemmers PyStemmer actually ships.
ISO_TO_SNOWBALL: dict[str, str] = {
    iso: name for iso, name in sorted(_ISO_CANDIDATES.items()) if name in LANGUAGES
}

# Other English names people write for the same languages.
_ALIASES: dict[str, str] = {
    "bokmal": "norwegian",
    "bokmål": "norwegian",
    "nynorsk": "norwegian",
    "norwegian bokmal": "norwegian",
    "norwegian bokmål": "norwegian",
    "norwegian nynorsk": "norwegian",
    "farsi": "persian",
    "sotho": "sesotho",
    "southern sotho": "sesotho",
    "irish gaelic": "irish",
    "gaelic": "irish",
    "brazilian portuguese": "portuguese",
    "castilian": "spanish",
    "flemish": "dutch",
    "moldovan": "romanian",
}

# Values meaning "no hint: detect per document".
_AUTO = frozenset({"", "auto", "detect"})

_NAMES: dict[str, str] = {name: name for name in LANGUAGES}
_NAMES.update(ISO_TO_SNOWBALL)
_NAMES.update({k: v for k, v in _ALIASES.items() if v in LANGUAGES})


def normalize_language(value: str | None) -> str | None:
    """Snowball name for an ISO 639-1 code, a Snowball name or an English name.

    Case-insensitive; region subtags are ignored (``pt-BR``, ``en_US``).  ``auto``
    (or an empty value) means "no hint, detect per document" and gives None.
    Anything else raises ValueError naming the accepted values.
    """
    if value is None:
        return None
    key = " ".join(str(value).strip().lower().replace("_", "-").split())
    if key in _AUTO:
        return None
    name = _NAMES.get(key)
    if name is None and "-" in key:
        name = _NAMES.get(key.split("-", 1)[0])
    if name is None:
        raise ValueError(
            f"unknown language {value!r}: expected 'auto', a Snowball language name "
            f"({', '.join(sorted(LANGUAGES))}) or an ISO 639-1 code "
            f"({', '.join(ISO_TO_SNOWBALL)})"
        )
    return name


# --------------------------------------------------------------------------------------
# Prose sample

_SAMPLE_CHARS = 1500
_SCAN_CHARS = 5000  # how much of the document head is scanned for prose lines
_MIN_TOKENS = 3

# A line is not prose if it starts with a backtick (tldr command lines, inline-code-only
# lines), a shell prompt, `<` (HTML, autolinks), `#` (headings: tldr titles are command
# names; also shebangs and C preprocessor lines) or a tab / 4 spaces (indented code).
_NOT_PROSE_FIRST = "`$<#\t"
_FENCES = ("```", "~~~")

# Inline code and URLs vanish; tldr's option markers `[c]reate`, `E[x]tract` are
# unwrapped.  Only applied to the (rare) samples handed to lingua: regular expressions
# over the whole sample cost more than the rest of the fast path together.
_NOISE_RE = re.compile(r"`[^`\n]*`|<?(?:https?|ftp)://[^\s>)\]]*>?|\[(\w{1,3})\]")

# Punctuation turned into spaces before splitting into words (cheaper than a regex).
_PUNCT_ASCII = (".", ",", ":", ";", "(", ")", "!", "?", '"', "'", "*", "_")
_PUNCT_OTHER = ("\u2019", "\u201c", "\u201d", "\u201e", "\xab", "\xbb", "\xbf", "\xa1", "\u2014")


def _prose_sample(text: str) -> str:
    """The first ~1,500 characters of lines that look like prose, joined by newlines."""
    head = text[:_SCAN_CHARS]
    lines = head.split("\n")
    if "```" in head or "~~~" in head:
        lines = _drop_fenced(lines)
    prose = [
        line for line in lines if line and line[0] not in _NOT_PROSE_FIRST and line[:4] != "    "
    ]
    sample = "\n".join(prose)
    return sample[:_SAMPLE_CHARS] if len(sample) > _SAMPLE_CHARS else sample


def _drop_fenced(lines: list[str]) -> list[str]:
    out: list[str] = []
    fence = ""
    for line in lines:
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
        elif stripped.startswith(_FENCES):
            fence = stripped[:3]
        else:
            out.append(line)
    return out


def _words(sample: str, ascii_only: bool) -> list[str]:
    """Lowercase words of `sample` for the function-word profile (split, not regex)."""
    low = sample.lower()
    for p in _PUNCT_ASCII:
        low = low.replace(p, " ")
    if not ascii_only:
        for p in _PUNCT_OTHER:
            low = low.replace(p, " ")
    return low.split()


# --------------------------------------------------------------------------------------
# Scripts

_LATIN, _GREEK, _CYRILLIC, _ARMENIAN, _HEBREW, _ARABIC = 1, 2, 3, 4, 5, 6
_DEVANAGARI, _TAMIL, _CJK, _OTHER = 7, 8, 9, 10

# (first code point of a range, script); a code point belongs to the last range that
# starts at or before it.  0 = not a letter of interest (punctuation, symbols, emoji).
_RANGES: list[tuple[int, int]] = [
    (0x0000, 0),
    (0x00C0, _LATIN),  # Latin-1 letters, Latin Extended-A/B
    (0x00D7, 0),
    (0x00D8, _LATIN),
    (0x00F7, 0),
    (0x00F8, _LATIN),
    (0x0250, 0),  # IPA, spacing modifiers, combining marks
    (0x0370, _GREEK),
    (0x0400, _CYRILLIC),
    (0x0530, _ARMENIAN),
    (0x0590, _HEBREW),
    (0x0600, _ARABIC),
    (0x0700, _OTHER),  # Syriac, Thaana, NKo, ...
    (0x0750, _ARABIC),  # Arabic Supplement
    (0x0780, _OTHER),
    (0x0900, _DEVANAGARI),
    (0x0980, _OTHER),  # Bengali, Gurmukhi, Gujarati, Oriya
    (0x0B80, _TAMIL),
    (0x0C00, _OTHER),  # Telugu ... Thai, Lao, Tibetan, Myanmar, Georgian, Ethiopic ...
    (0x1100, _CJK),  # Hangul Jamo
    (0x1200, _OTHER),
    (0x1E00, _LATIN),  # Latin Extended Additional (Vietnamese)
    (0x1F00, _GREEK),  # Greek Extended
    (0x2000, 0),  # punctuation, symbols
    (0x2E80, _CJK),  # CJK radicals, kana, Han, Hangul, ...
    (0xA000, _OTHER),  # Yi, Vai, ...
    (0xAC00, _CJK),  # Hangul syllables
    (0xD7B0, 0),
    (0xF900, _CJK),  # CJK compatibility ideographs
    (0xFB00, 0),
    (0xFB1D, _HEBREW),  # Hebrew presentation forms
    (0xFB50, _ARABIC),  # Arabic presentation forms
    (0xFE00, 0),
    (0xFE70, _ARABIC),
    (0xFF00, 0),  # fullwidth forms
    (0xFF66, _CJK),  # halfwidth kana
    (0xFFA0, 0),
    (0x20000, _CJK),  # supplementary ideographs
    (0x30000, 0),
]
_RANGE_STARTS = [start for start, _ in _RANGES]
_RANGE_SCRIPTS = [script for _, script in _RANGES]

_MAX_COUNTED = 64  # distinct non-ASCII characters counted exactly; beyond, estimated
# A script other than Latin wins when its letters are at least half as many as the ASCII
# letters; CJK characters are syllables or whole words, so they count several times.
_CJK_WEIGHT = 4


def _script_of(ch: str) -> int:
    return _RANGE_SCRIPTS[bisect_right(_RANGE_STARTS, ord(ch)) - 1]


def _non_ascii_chars(sample: str) -> tuple[dict[str, int], int]:
    """({non-ASCII character: count}, total non-ASCII characters) of `sample`.

    Counts are exact for up to _MAX_COUNTED distinct characters (str.count is a fast C
    loop); for more (CJK text) each gets the mean count, which is enough to tell scripts.
    """
    total = len(sample) - len(sample.encode("ascii", "ignore"))
    distinct = [c for c in set(sample) if c > "\x7f"]
    if len(distinct) <= _MAX_COUNTED:
        return {c: sample.count(c) for c in distinct}, total
    mean = max(1, total // len(distinct))
    return dict.fromkeys(distinct, mean), total


def _count(chars: dict[str, int], letters: str) -> int:
    return sum(chars.get(c, 0) for c in letters)


def _cyrillic(chars: dict[str, int]) -> str | None:
    serbian = _count(chars, "ђјљњћџЂЈЉЊЋЏ")
    macedonian = _count(chars, "ѓќѕЃЌЅ")
    ukrainian = _count(chars, "іїєґўІЇЄҐЎ")  # Ukrainian and Belarusian
    russian = _count(chars, "ыэёЫЭЁ")
    if serbian > ukrainian and serbian > russian:
        return None if macedonian else _known("serbian")
    if ukrainian > russian:
        return None  # no Ukrainian stemmer
    if _count(chars, "әғқңөұүһӘҒҚҢӨҰҮҺ") > 2:
        return None  # Kazakh, Tatar, Bashkir, ...
    if russian == 0 and chars.get("ъ", 0) >= 3:
        return None  # Bulgarian: ъ is a common vowel there, ы/э never occur
    return _known("russian")


def _arabic(chars: dict[str, int]) -> str | None:
    if _count(chars, "ٹڈڑںےھ") > 2:
        return None  # Urdu
    persian = _count(chars, "پچژگیک")
    arabic = _count(chars, "يكةى")
    return _known("persian") if persian > arabic else _known("arabic")


def _hebrew(chars: dict[str, int]) -> str | None:
    # Yiddish writes its vowels: the ligatures װ ױ ײ and pasekh/kamets under alef.
    if _count(chars, "\u05f0\u05f1\u05f2\u05b7\u05b8\ufb1f\ufb2e\ufb2f") > 1:
        return _known("yiddish")
    return None  # Hebrew: no stemmer


def _devanagari(sample: str) -> str | None:
    hindi = STOPWORDS.get("hindi", frozenset())
    nepali = STOPWORDS.get("nepali", frozenset())
    h = n = 0
    for word in sample.split():
        word = word.strip(".,;:!?()[]{}\"'।॥-–—")
        h += word in hindi
        n += word in nepali
    if n > h:
        return _known("nepali")
    return _known("hindi")


def _known(name: str) -> str | None:
    return name if name in LANGUAGES else None


# --------------------------------------------------------------------------------------
# Latin script: function-word profiles

# Languages scored by function words, in tie-break order (the most common first).
_PROFILE_LANGS: list[str] = [
    lang
    for lang in (
        "english", "german", "french", "spanish", "portuguese", "italian", "dutch",
        "swedish", "norwegian", "danish", "finnish", "turkish", "polish", "indonesian",
        "hungarian", "romanian", "czech", "catalan", "basque", "estonian", "lithuanian",
        "esperanto", "irish", "serbian",
    )  # fmt: skip
    if lang in LANGUAGES and lang in STOPWORDS
]
_LANG_INDEX = {lang: i for i, lang in enumerate(_PROFILE_LANGS)}


def _is_latin_word(word: str) -> bool:
    return all(c.isascii() or _script_of(c) == _LATIN for c in word)


def _build_weights() -> dict[str, tuple[tuple[int, float], ...]]:
    owners: dict[str, list[int]] = {}
    for i, lang in enumerate(_PROFILE_LANGS):
        for word in STOPWORDS[lang]:
            if _is_latin_word(word):
                owners.setdefault(word, []).append(i)
    weights = {}
    for word, langs in owners.items():
        # A word shared by n languages is worth 1/n to each; single letters are weak.
        w = (0.5 if len(word) == 1 else 1.0) / len(langs)
        weights[word] = tuple((i, w) for i in langs)
    return weights


_WEIGHTS = _build_weights()

# Letters that point at a few languages: letter → ((language, weight), ...).  Counted
# at most _MAX_LETTER_HITS times each, so they tip balances rather than decide alone.
_LETTER_SIGNALS_SRC: dict[str, tuple[tuple[str, float], ...]] = {
    "ß": (("german", 1.0),),
    "ä": (("german", 0.3), ("swedish", 0.3), ("finnish", 0.3), ("estonian", 0.2)),
    "ö": (("german", 0.3), ("swedish", 0.3), ("finnish", 0.3), ("turkish", 0.2),
          ("hungarian", 0.2), ("estonian", 0.2)),
    "ü": (("german", 0.4), ("turkish", 0.3), ("hungarian", 0.2), ("estonian", 0.2)),
    "ñ": (("spanish", 1.0),),
    "¿": (("spanish", 1.0),),
    "¡": (("spanish", 1.0),),
    "ã": (("portuguese", 1.0),),
    "õ": (("portuguese", 0.6), ("estonian", 0.6)),
    "ç": (("portuguese", 0.3), ("french", 0.3), ("catalan", 0.3), ("turkish", 0.3)),
    "å": (("swedish", 0.4), ("norwegian", 0.4), ("danish", 0.4)),
    "ø": (("norwegian", 0.6), ("danish", 0.6)),
    "æ": (("norwegian", 0.6), ("danish", 0.6)),
    "ş": (("turkish", 1.0),),
    "ğ": (("turkish", 1.0),),
    "ı": (("turkish", 1.0),),
    "ș": (("romanian", 1.0),),
    "ț": (("romanian", 1.0),),
    "ă": (("romanian", 1.0),),
    "ő": (("hungarian", 1.0),),
    "ű": (("hungarian", 1.0),),
    "ł": (("polish", 1.0),),
    "ą": (("polish", 0.8), ("lithuanian", 0.3)),
    "ę": (("polish", 0.8), ("lithuanian", 0.3)),
    "ś": (("polish", 1.0),),
    "ź": (("polish", 1.0),),
    "ż": (("polish", 1.0),),
    "ń": (("polish", 1.0),),
    "ř": (("czech", 1.0),),
    "ů": (("czech", 1.0),),
    "ě": (("czech", 1.0),),
    "è": (("french", 0.4), ("italian", 0.3), ("catalan", 0.3)),
    "ê": (("french", 0.5), ("portuguese", 0.4)),
    "à": (("french", 0.4), ("italian", 0.3), ("catalan", 0.3), ("portuguese", 0.2)),
    "ù": (("french", 0.5), ("italian", 0.3)),
    "ì": (("italian", 0.6),),
    "ò": (("italian", 0.5), ("catalan", 0.5)),
    "œ": (("french", 1.0),),
    "ŀ": (("catalan", 1.0),),
    "ĉ": (("esperanto", 1.0),),
    "ĝ": (("esperanto", 1.0),),
    "ŝ": (("esperanto", 1.0),),
    "ŭ": (("esperanto", 1.0),),
    "ė": (("lithuanian", 1.0),),
    "ų": (("lithuanian", 1.0),),
    "į": (("lithuanian", 1.0),),
    "ū": (("lithuanian", 1.0),),
    "đ": (("serbian", 1.0),),
    "ć": (("serbian", 0.6), ("polish", 0.6)),
}
_LETTER_SIGNALS: dict[str, tuple[tuple[int, float], ...]] = {}
for _ch, _pairs in _LETTER_SIGNALS_SRC.items():
    _sig = tuple((_LANG_INDEX[lang], w) for lang, w in _pairs if lang in _LANG_INDEX)
    if _sig:
        _LETTER_SIGNALS[_ch] = _sig
        _LETTER_SIGNALS.setdefault(_ch.upper(), _sig)
_MAX_LETTER_HITS = 3

# A winner needs this many function-word hits and this lead over the runner-up.
_MIN_HITS = 3
_MIN_RATIO = 2.0
# Short texts (a title, one tldr line) have few function words: one or two
# language-specific ones with a wide lead will do.
_SHORT_TOKENS = 12
_SHORT_MIN_SCORE = 1.0
_SHORT_MIN_RATIO = 3.0


def _profile(words: list[str], chars: dict[str, int] | None) -> tuple[list[float], list[str]]:
    """(score per profile language, the words that are function words) of a sample."""
    weights = _WEIGHTS
    scores = [0.0] * len(_PROFILE_LANGS)
    found = [w for w in words if w in weights]
    for word in found:
        for i, w in weights[word]:
            scores[i] += w
    if chars:
        for ch, n in chars.items():
            sig = _LETTER_SIGNALS.get(ch)
            if sig is not None:
                if n > _MAX_LETTER_HITS:
                    n = _MAX_LETTER_HITS
                for i, w in sig:
                    scores[i] += w * n
    return scores, found


# --------------------------------------------------------------------------------------
# lingua fallback

# lingua name → Snowball name for the Latin-script languages we stem; lingua languages
# that are easily confused with them are included as well so that, say, Slovak text is
# not forced into Czech (those map to None) — or map to a close stemmer.
_LINGUA_TO_SNOWBALL: dict[str, str | None] = {
    "ENGLISH": "english",
    "GERMAN": "german",
    "FRENCH": "french",
    "SPANISH": "spanish",
    "PORTUGUESE": "portuguese",
    "ITALIAN": "italian",
    "DUTCH": "dutch",
    "SWEDISH": "swedish",
    "BOKMAL": "norwegian",
    "NYNORSK": "norwegian",
    "DANISH": "danish",
    "FINNISH": "finnish",
    "TURKISH": "turkish",
    "POLISH": "polish",
    "INDONESIAN": "indonesian",
    "HUNGARIAN": "hungarian",
    "ROMANIAN": "romanian",
    "CZECH": "czech",
    "CATALAN": "catalan",
    "BASQUE": "basque",
    "ESTONIAN": "estonian",
    "LITHUANIAN": "lithuanian",
    "ESPERANTO": "esperanto",
    "IRISH": "irish",
    "SOTHO": "sesotho",
    # Close relatives without a stemmer of their own.
    "MALAY": "indonesian",
    "CROATIAN": "serbian",
    "BOSNIAN": "serbian",
    "SLOVAK": None,
    "SLOVENE": None,
    "AFRIKAANS": None,
    "LATIN": None,
    "ICELANDIC": None,
    "VIETNAMESE": None,
}
# lingua's confidence (0..1, relative to the candidate languages) needed to trust it
# over the function-word leader.
_LINGUA_MIN_CONFIDENCE = 0.6

_lingua_lock = threading.Lock()
_lingua_detector: Any = None
_lingua_calls = 0  # how many times detect_language fell back to lingua (for benchmarks)


def _lingua() -> Any:
    """The lingua detector, built on first use (lingua is imported only here)."""
    global _lingua_detector
    detector = _lingua_detector
    if detector is None:
        with _lingua_lock:
            detector = _lingua_detector
            if detector is None:
                from lingua import Language, LanguageDetectorBuilder

                langs = []
                for name, snowball in _LINGUA_TO_SNOWBALL.items():
                    lang = getattr(Language, name, None)
                    if lang is not None and (snowball is None or snowball in LANGUAGES):
                        langs.append(lang)
                detector = (
                    LanguageDetectorBuilder.from_languages(*langs)
                    .with_low_accuracy_mode()
                    .build()
                )
                _lingua_detector = detector
    return detector


def _ask_lingua(sample: str) -> tuple[str | None, float]:
    """(Snowball name or None, confidence) of lingua's best guess for `sample`."""
    global _lingua_calls
    _lingua_calls += 1
    values = _lingua().compute_language_confidence_values(sample)
    if not values:
        return None, 0.0
    top = values[0]
    return _LINGUA_TO_SNOWBALL.get(top.language.name), top.value


# --------------------------------------------------------------------------------------
# Detection


def detect_language(text: str, hint: str | None = None) -> str | None:
    """Snowball language name of `text` (one of `LANGUAGES`), or None if unknown.

    `hint` (a collection-level language, any form `normalize_language` accepts) wins
    outright.  None means: too little text, a language without a stemmer (Chinese,
    Japanese, Korean, Hebrew, Ukrainian, ...), or too ambiguous to tell.
    """
    if hint:
        return hint if hint in LANGUAGES else normalize_language(hint)
    sample = _prose_sample(text)
    if not sample:
        return None

    chars: dict[str, int] | None = None
    ascii_only = sample.isascii()
    if not ascii_only:
        chars, non_ascii = _non_ascii_chars(sample)
        by_script = [0] * (_OTHER + 1)
        for ch, n in chars.items():
            by_script[_script_of(ch)] += n
        by_script[_CJK] *= _CJK_WEIGHT
        by_script[0] = by_script[_LATIN] = 0
        found = max(by_script)
        if found and found * 2 >= (len(sample) - non_ascii) * 3 // 4:
            script = by_script.index(found)
            if script < _CJK and len(sample.split(None, _MIN_TOKENS)) < _MIN_TOKENS:
                return None
            return _by_script(script, chars, sample)

    words = _words(sample, ascii_only)
    if len(words) < 8 and len(TOKEN_RE.findall(sample)) < _MIN_TOKENS:
        return None
    scores, found_words = _profile(words, chars)
    top = max(scores)
    if top > 0:
        best = scores.index(top)
        second = sorted(scores)[-2]
        lang = _PROFILE_LANGS[best]
        if top >= _MIN_RATIO * second:
            if sum(map(STOPWORDS[lang].__contains__, found_words)) >= _MIN_HITS:
                return lang
            if len(words) <= _SHORT_TOKENS and top >= _SHORT_MIN_SCORE and top >= _SHORT_MIN_RATIO * second:
                return lang
    else:
        lang, second = None, 0.0

    guess, confidence = _ask_lingua(_NOISE_RE.sub(r"\1", sample))
    if confidence >= _LINGUA_MIN_CONFIDENCE:
        return guess
    if top > second:
        return lang
    return guess if confidence >= 0.4 else None


def _by_script(script: int, chars: dict[str, int], sample: str) -> str | None:
    if script == _CYRILLIC:
        return _cyrillic(chars)
    if script == _GREEK:
        return _known("greek")
    if script == _ARABIC:
        return _arabic(chars)
    if script == _ARMENIAN:
        return _known("armenian")
    if script == _DEVANAGARI:
        return _devanagari(sample)
    if script == _TAMIL:
        return _known("tamil")
    if script == _HEBREW:
        return _hebrew(chars)
    return None  # CJK, Thai, Bengali, Georgian, ...: no stemmer
