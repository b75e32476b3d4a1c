"""Per-document language detection: cheap first guesses, lingua only as a fallback.

Every document is stemmed with the Snowball stemmer of its own language, so the
ingest path calls `detect_language` once per document.  It has to be fast (tens of
microseconds for a typical page) and small in memory, which rules out running lingua
on everything.  The strategy, cheapest first:

1. a collection-level hint wins outright;
2. take a prose sample: the first ~1,500 characters of lines that are not code
   (fenced and indented blocks, lines starting with a backtick as tldr's command
   lines do, headings, HTML);
3. the writing system decides for non-Latin scripts (Cyrillic, Greek, Arabic,
   Armenian, Devanagari, Tamil, Hebrew); CJK, Vietnamese, Icelandic and scripts
   without a stemmer give None;
4. for Latin script, count the sample's distinct function words of each language (a
   word shared by n languages is worth 1/n to each), plus a few telltale letters; a
   clear winner is returned.  The first few hundred characters usually suffice, and
   English is recognized without even unpacking the per-language scores;
5. on a tie, character sequences that tell close relatives apart (Danish/Norwegian,
   Spanish/Catalan, Finnish/Estonian, ...) break it if they give a clear lead;
6. only otherwise ask lingua, in low-accuracy mode, restricted to the few languages
   the function words point at (plus the most common ones when they point nowhere):
   lingua is imported on first use, its detectors are cached, and each language model
   it loads (~2 MB, ~20 ms) is loaded once per process.

`detect_language` returns a Snowball algorithm name from
`gnod.text.analyzer.LANGUAGES`, or None when the text is too short, is written in a
language without a stemmer, or is too ambiguous.

Documents that mix languages are the exception to "one language per document":
`may_mix_languages` is a cheap check over the tokens ingestion has anyway, and only
when it fires is each block judged by `detect_block_language` (see
`gnod.ingest.sections`).
"""

from __future__ import annotations

import re
import struct
import threading
from bisect import bisect_right
from collections.abc import Iterable
from typing import Any

from gnod.text.analyzer import LANGUAGES, TOKEN_RE
from gnod.text.fences import without_fenced
from gnod.text.stopwords import STOPWORDS

__all__ = [
    "ISO_TO_SNOWBALL",
    "detect_block_language",
    "detect_language",
    "detect_language_sure",
    "may_mix_languages",
    "normalize_language",
    "query_language",
    "query_language_candidates",
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
ISO_TO_SNOWBALL: dict[str, str] = {iso: name for iso, name in sorted(_ISO_CANDIDATES.items()) if name in LANGUAGES}

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

# Common languages without a Snowball stemmer, for a clearer error message.
_NO_STEMMER = frozenset(
    "zh ja ko uk he bg vi th ur bn mk sk sl hr bs is ms "
    "chinese japanese korean ukrainian hebrew bulgarian vietnamese thai urdu bengali "
    "macedonian slovak slovene slovenian croatian bosnian icelandic malay".split()
)

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
        what = "unknown language"
        if key in _NO_STEMMER or key.split("-", 1)[0] in _NO_STEMMER:
            what = "no Snowball stemmer for language"
        raise ValueError(
            f"{what} {value!r}: expected 'auto', a Snowball language name "
            f"({', '.join(sorted(LANGUAGES))}) or an ISO 639-1 code "
            f"({', '.join(ISO_TO_SNOWBALL)})"
        )
    return name


# --------------------------------------------------------------------------------------
# Prose sample

_SAMPLE_CHARS = 1500
_QUICK_CHARS = 400  # first pass over the start of the sample; most texts stop there
_SCAN_CHARS = 5000  # how much of the document head is scanned for prose lines
_MIN_TOKENS = 3

# Lines that are not prose: starting with a backtick (tldr command lines, lines that
# are one inline-code span), a shell prompt, `<` (HTML, autolinks), `#` (headings:
# tldr titles are command names; shebangs, C preprocessor) or a tab / 4 spaces
# (indented code).  A regular expression with a literal "\n" prefix is the cheapest
# way to drop them; the rest of the fast path avoids per-character regexes.
_NOT_PROSE_RE = re.compile(r"\n(?:[`$<#\t]|    )[^\n]*")

# Inline code and URLs vanish; tldr's option markers `[c]reate`, `E[x]tract` are
# unwrapped.  Only applied to the (rare) samples handed to lingua.
_NOISE_RE = re.compile(r"`[^`\n]*`|<?(?:https?|ftp)://[^\s>)\]]*>?|\[(\w{1,3})\]")

# Word splitting works on UTF-8 bytes: bytes.translate turns ASCII punctuation into
# spaces at C speed.  `/`, `-`, `[` are kept, so paths, URLs, options and tldr's
# `[c]reate` stay single (harmless) words.
_PUNCT = b".,:;()!?\"'*_{}`<>|=+&\n\r\t"
_PUNCT_TABLE = bytes.maketrans(_PUNCT, b" " * len(_PUNCT))
# Non-ASCII punctuation that commonly sticks to words: apostrophe, quotes, ¿ ¡.
_PUNCT_OTHER = ("\u2019", "\xab", "\xbb", "\u201c", "\u201e", "\xbf", "\xa1")


def _prose_sample(text: str) -> str:
    """The first ~1,500 characters of the lines of `text` that look like prose."""
    head = text[:_SCAN_CHARS]
    if "```" in head or "~~~" in head:
        head = without_fenced(head)
    sample = _NOT_PROSE_RE.sub("", "\n" + head).strip()
    return sample[:_SAMPLE_CHARS] if len(sample) > _SAMPLE_CHARS else sample


def _normalized(text: str, ascii_only: bool) -> bytes:
    """`text` lowercased as UTF-8 bytes, punctuation turned into spaces.

    Splitting this is much cheaper than a tokenizing regex."""
    if ascii_only:
        return text.encode("ascii").lower().translate(_PUNCT_TABLE)
    low = text.lower()
    for p in _PUNCT_OTHER:
        if p in low:
            low = low.replace(p, " ")
    return low.encode("utf-8", "replace").translate(_PUNCT_TABLE)


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

_CHARS_PREFIX = 400  # characters of the sample whose scripts and letters are counted
# A script other than Latin wins when its letters are at least half as many as the ASCII
# letters; CJK characters are syllables or whole words, so they count several times.
_CJK_WEIGHT = 4


_script_cache: dict[str, int] = {}
_ASCII = frozenset(map(chr, range(128)))
_LATIN_END = "\u0250"  # below: ASCII, Latin-1 and Latin Extended-A/B only
# Letters of Latin-script languages we cannot stem: Vietnamese (ơ ư and the vowels with
# a dot below or hook above), Icelandic and Faroese (þ ð).
_NO_STEMMER_LATIN = frozenset("ơưƠƯþÞðÐ" + "".join(map(chr, range(0x1EA0, 0x1EFA))))


def _script_of(ch: str) -> int:
    script = _script_cache.get(ch)
    if script is None:
        script = _RANGE_SCRIPTS[bisect_right(_RANGE_STARTS, ord(ch)) - 1]
        if len(_script_cache) < 100_000:
            _script_cache[ch] = script
    return script


class _Chars:
    """The non-ASCII characters of the first _CHARS_PREFIX characters of a sample
    (a prefix tells the script as well as the whole)."""

    __slots__ = ("prefix", "distinct", "non_ascii")

    def __init__(self, sample: str) -> None:
        self.prefix = prefix = sample[:_CHARS_PREFIX]
        self.non_ascii = len(prefix) - len(prefix.encode("ascii", "ignore"))
        self.distinct = set(prefix)
        self.distinct -= _ASCII

    def count(self, letters: str) -> int:
        """Occurrences of any of `letters` (str.count is a fast C loop)."""
        distinct, prefix = self.distinct, self.prefix
        return sum(prefix.count(c) for c in letters if c in distinct)

    def script(self) -> tuple[int, int]:
        """(dominant script other than Latin or 0, estimated number of its letters)."""
        by_script = [0] * (_OTHER + 1)  # distinct characters per script
        latin_or_symbols = []
        cached = _script_cache.get
        for ch in self.distinct:
            script = cached(ch)
            if script is None:
                script = _script_of(ch)
            by_script[script] += 1
            if script == 0 or script == _LATIN:
                latin_or_symbols.append(ch)
        by_script[0] = by_script[_LATIN] = 0
        most = max(by_script)
        if not most:
            return 0, 0
        found = self.non_ascii - sum(map(self.prefix.count, latin_or_symbols))
        return by_script.index(most), found


def _cyrillic(chars: _Chars) -> str | None:
    serbian = chars.count("ђјљњћџЂЈЉЊЋЏ")
    macedonian = chars.count("ѓќѕЃЌЅ")
    ukrainian = chars.count("іїєґўІЇЄҐЎ")  # Ukrainian and Belarusian
    russian = chars.count("ыэёЫЭЁ")
    if serbian > ukrainian and serbian > russian:
        return None if macedonian else _known("serbian")
    if ukrainian > russian:
        return None  # no Ukrainian stemmer
    if chars.count("әғқңөұүһӘҒҚҢӨҰҮҺ") > 2:
        return None  # Kazakh, Tatar, Bashkir, ...
    if russian == 0 and (chars.count("ъ") or _is_bulgarian(chars.prefix)):
        return None  # Bulgarian: no stemmer (ъ is a common vowel there, ы/э never occur)
    return _known("russian")


# Frequent Bulgarian words that are not Russian ones, and words both languages use.
_BULGARIAN = frozenset(
    "е са ще тази този това тези които който която което към със във съм сме сте "
    "бъде беше няма нещо защото когато където".split()
)
_RUSSIAN_AND_BULGARIAN = frozenset("и в на за да не от до по без при или но а с к о у из над под през".split())


def _is_bulgarian(sample: str) -> bool:
    russian = STOPWORDS.get("russian", frozenset())
    bg = ru = 0
    for word in sample.lower().split():
        word = word.strip(".,;:!?()[]{}\"'«»-–—")
        if word in _BULGARIAN:
            bg += 1
        elif word in russian and word not in _RUSSIAN_AND_BULGARIAN:
            ru += 1
    return bg > ru


def _arabic(chars: _Chars) -> str | None:
    if chars.count("ٹڈڑںےھ") > 2:
        return None  # Urdu
    persian = chars.count("پچژگیک")
    arabic = chars.count("يكةى")
    return _known("persian") if persian > arabic else _known("arabic")


def _hebrew(chars: _Chars) -> str | None:
    # Yiddish writes its vowels: the ligatures װ ױ ײ and pasekh/kamets under alef.
    if chars.count("\u05f0\u05f1\u05f2\u05b7\u05b8\ufb1f\ufb2e\ufb2f") > 1:
        return _known("yiddish")
    return None  # Hebrew: no stemmer


def _devanagari(sample: str) -> str | None:
    """Hindi, or Nepali if the sample has more Nepali function words."""
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
        "english",
        "german",
        "french",
        "spanish",
        "portuguese",
        "italian",
        "dutch",
        "swedish",
        "norwegian",
        "danish",
        "finnish",
        "turkish",
        "polish",
        "indonesian",
        "hungarian",
        "romanian",
        "czech",
        "catalan",
        "basque",
        "estonian",
        "lithuanian",
        "esperanto",
        "irish",
        "serbian",
    )  # fmt: skip
    if lang in LANGUAGES and lang in STOPWORDS
]
_LANG_INDEX = {lang: i for i, lang in enumerate(_PROFILE_LANGS)}
_N = len(_PROFILE_LANGS)

# Frequent words that are not quite function words (so not in STOPWORDS, which also
# filters queries) but are as telling: used for detection only.
_EXTRA_WORDS: dict[str, str] = {
    "english": """
        using without within instead every another whether either onto upon although
        though unless since many much several already always never often still yet
        specific specified given current currently available following multiple
        show display print remove delete enable disable search convert generate extract
        execute write read edit send save load replace move copy rename view connect
        add get
    """,
}

# Each distinct function word of a text adds its languages' scores.  Scores are summed
# as packed integers, one 32-bit field per language (and a last one, see _pack), so
# that adding them up is a single C-level `sum`: the high 20 bits of a field hold the
# score in fixed point (_SCALE is 1.0), the low 12 bits the number of function words,
# so comparing fields compares scores.  A 1,500-character sample cannot overflow them.
_SCALE = 840  # divisible by 1..8: a word shared by n languages scores _SCALE // n
_SCORE_SHIFT = 12
_HITS_MASK = (1 << _SCORE_SHIFT) - 1
_FIELDS = struct.Struct(f"<{_N}I")
_FIELDS_BYTES = _FIELDS.size + 8  # the language fields, then the non-English bound
_ENGLISH = _LANG_INDEX.get("english", -1)
_FIELD_MASK = (1 << 32) - 1
_ENGLISH_SHIFT = 32 * max(_ENGLISH, 0)
_BOUND_SHIFT = 32 * _N + _SCORE_SHIFT


def _pack(pairs: list[tuple[int, int]]) -> int:
    """Packed fields for (language index, field value) pairs.

    One more field, after the languages, holds an upper bound for the score of any
    language but English: the largest non-English score of each word (or letter), summed
    up.  When English beats twice that bound, it beats every other language and the
    fields need not be unpacked (the common case for an English corpus).
    """
    packed = sum(value << (32 * i) for i, value in pairs)
    bound = max((value >> _SCORE_SHIFT for i, value in pairs if i != _ENGLISH), default=0)
    return packed + ((bound << _SCORE_SHIFT) << (32 * _N))


def _is_latin_word(word: str) -> bool:
    return all(c.isascii() or _script_of(c) == _LATIN for c in word)


def _build_word_table() -> dict[bytes, int]:
    owners: dict[str, list[int]] = {}
    for i, lang in enumerate(_PROFILE_LANGS):
        words = set(STOPWORDS[lang]) | set(_EXTRA_WORDS.get(lang, "").split())
        for word in words:
            if _is_latin_word(word):
                owners.setdefault(word, []).append(i)
    table = {}
    for word, langs in owners.items():
        # A word shared by n languages is worth 1/n to each; single letters are weak.
        score = _SCALE // len(langs) // (2 if len(word) == 1 else 1)
        table[word.encode()] = _pack([(i, (score << _SCORE_SHIFT) + 1) for i in langs])
    return table


_WORD_TABLE = _build_word_table()
_WORD_SET = frozenset(_WORD_TABLE)


# Letters that point at a few languages: letter → ((language, weight), ...).  Counted
# at most _MAX_LETTER_HITS times each, so they tip balances rather than decide alone.
_LETTER_SIGNALS_SRC: dict[str, tuple[tuple[str, float], ...]] = {
    "ß": (("german", 1.0),),
    "ä": (("german", 0.3), ("swedish", 0.3), ("finnish", 0.3), ("estonian", 0.2)),
    "ö": (("german", 0.3), ("swedish", 0.3), ("finnish", 0.3), ("turkish", 0.2), ("hungarian", 0.2), ("estonian", 0.2)),
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
    "č": (("czech", 0.3), ("serbian", 0.3), ("lithuanian", 0.3)),
    "š": (("czech", 0.3), ("serbian", 0.3), ("lithuanian", 0.3)),
    "ž": (("czech", 0.3), ("serbian", 0.3), ("lithuanian", 0.3)),
    "ć": (("serbian", 0.6), ("polish", 0.6)),
}
_LETTER_SIGNALS: dict[str, int] = {}
for _ch, _pairs in _LETTER_SIGNALS_SRC.items():
    _sig = _pack([(_LANG_INDEX[lang], round(w * _SCALE) << _SCORE_SHIFT) for lang, w in _pairs if lang in _LANG_INDEX])
    if _sig:
        _LETTER_SIGNALS[_ch] = _sig
        _LETTER_SIGNALS.setdefault(_ch.upper(), _sig)
_MAX_LETTER_HITS = 3


# Character sequences (on lowercase text with spaces at word boundaries) that tell close
# languages apart: checked only when function words and letters leave a tie, before
# asking lingua.  Counted at most _MAX_LETTER_HITS times each, like letters.
_NGRAM_SIGNALS_SRC: dict[str, tuple[tuple[str, float], ...]] = {
    # Spanish / Catalan / Portuguese / Italian
    "ción ": (("spanish", 1.0),),
    "ciones ": (("spanish", 1.0),),
    "dad ": (("spanish", 0.5),),
    "ció ": (("catalan", 1.0),),
    "cions ": (("catalan", 1.0),),
    "tat ": (("catalan", 0.5),),
    "l·l": (("catalan", 1.0),),
    "ção ": (("portuguese", 1.0),),
    "ções ": (("portuguese", 1.0),),
    "dade ": (("portuguese", 0.5),),
    "zione ": (("italian", 1.0),),
    "zioni ": (("italian", 1.0),),
    "tà ": (("italian", 0.5),),
    # Danish / Norwegian / Swedish
    "sjon": (("norwegian", 1.0),),
    "øy": (("norwegian", 1.0),),
    "kj": (("norwegian", 0.5),),
    "gj": (("norwegian", 0.5),),
    "het ": (("norwegian", 0.3), ("swedish", 0.3)),
    "øj": (("danish", 1.0),),
    "hed ": (("danish", 0.5),),
    "ej ": (("danish", 0.3),),
    "tion": (("danish", 0.3), ("swedish", 0.3), ("english", 0.3), ("french", 0.3)),
    # Finnish / Estonian
    "ää": (("finnish", 0.5), ("estonian", 0.3)),
    "yy": (("finnish", 0.5),),
    "ssa ": (("finnish", 0.5),),
    "ssä ": (("finnish", 1.0),),
    "stä ": (("finnish", 1.0),),
    "llä ": (("finnish", 1.0),),
    "lla ": (("finnish", 0.5),),
    "lle ": (("finnish", 0.5), ("estonian", 0.3)),
    "ksi ": (("finnish", 0.5),),
    # Dutch / German / English
    "ij": (("dutch", 0.5),),
    "lijk": (("dutch", 1.0),),
    "heid ": (("dutch", 1.0),),
    "lich": (("german", 1.0),),
    "keit ": (("german", 1.0),),
    "ung ": (("german", 0.5),),
    "sch": (("german", 0.3), ("dutch", 0.3)),
    "ing ": (("english", 0.5),),
    "th": (("english", 0.3),),
    "ly ": (("english", 0.3),),
    # French
    "eau": (("french", 0.5),),
    "aux ": (("french", 0.5),),
    "eux ": (("french", 0.5),),
    "ée": (("french", 0.5),),
}
_NGRAM_SIGNALS: list[tuple[bytes, int]] = []
for _ng, _pairs in _NGRAM_SIGNALS_SRC.items():
    _sig = _pack([(_LANG_INDEX[lang], round(w * _SCALE) << _SCORE_SHIFT) for lang, w in _pairs if lang in _LANG_INDEX])
    if _sig:
        _NGRAM_SIGNALS.append((_ng.encode(), _sig))


def _ngram_score(normalized: bytes) -> int:
    padded = b" " + normalized + b" "
    total = 0
    for ngram, sig in _NGRAM_SIGNALS:
        n = padded.count(ngram)
        if n:
            total += sig * min(n, _MAX_LETTER_HITS)
    return total


# A clear winner has a score of at least 1 (one word of its own, or several shared
# ones) and leads the runner-up by _WEAK_RATIO; or it has _MIN_HITS function words and
# leads by _MIN_RATIO in score or by _HITS_RATIO in function words.
_MIN_SCORE = 1.0
_WEAK_RATIO = 4.0
_MIN_HITS = 3
_MIN_RATIO = 2.0
_HITS_RATIO = 3
_MIN_FIELD = int(_MIN_SCORE * _SCALE) << _SCORE_SHIFT
_TIE_MARGIN = 5  # after n-grams: lead by 1.0 and by 1/_TIE_MARGIN of the score


def _word_score(words: list[bytes]) -> int:
    """Packed scores of the distinct function words among `words`."""
    return sum(map(_WORD_TABLE.__getitem__, _WORD_SET.intersection(words)))


def _rank(total: int) -> tuple[int, int, int]:
    """(best language index or -1, its packed field, the runner-up's packed field)."""
    if not total:
        return -1, 0, 0
    fields = _FIELDS.unpack_from(total.to_bytes(_FIELDS_BYTES, "little"))
    top = max(fields)
    return fields.index(top), top, sorted(fields)[-2]


def _clear(best: int, top: int, runner_up: int) -> bool:
    """Whether the best language (packed fields of it and the runner-up) wins clearly."""
    if best < 0 or top < _MIN_FIELD:
        return False
    score = top >> _SCORE_SHIFT
    second = runner_up >> _SCORE_SHIFT
    if score >= _WEAK_RATIO * second:
        return True
    hits = top & _HITS_MASK
    return hits >= _MIN_HITS and (score >= _MIN_RATIO * second or hits >= _HITS_RATIO * (runner_up & _HITS_MASK))


def _letter_score(chars: _Chars) -> int:
    total = 0
    for ch in chars.distinct.intersection(_LETTER_SIGNALS):
        total += _LETTER_SIGNALS[ch] * min(chars.prefix.count(ch), _MAX_LETTER_HITS)
    return total


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
}
# lingua's confidence (0..1, relative to the candidate languages) needed to trust it
# over the function-word leader.
_LINGUA_MIN_CONFIDENCE = 0.6

# Relatives lingua should also consider when a language is a candidate.
_RELATIVES: dict[str, tuple[str, ...]] = {
    "czech": ("SLOVAK",),
    "serbian": ("CROATIAN", "BOSNIAN", "SLOVENE"),
    "indonesian": ("MALAY",),
    "dutch": ("AFRIKAANS",),
}
_SNOWBALL_TO_LINGUA: dict[str, tuple[str, ...]] = {}
for _name, _snowball in _LINGUA_TO_SNOWBALL.items():
    if _snowball is not None and _snowball in LANGUAGES:
        _SNOWBALL_TO_LINGUA[_snowball] = _SNOWBALL_TO_LINGUA.get(_snowball, ()) + (_name,)
# Languages lingua chooses among: those within this fraction of the leader's score;
# when function words gave no clear evidence, the most common languages as well.  Each
# language lingua considers costs ~2 MB and ~20 ms to load its model (once), so it is
# never asked to consider all of them.
_CANDIDATE_FRACTION = 3
_MAX_CANDIDATES = 3
_CORE = ("english", "german", "french", "spanish", "portuguese", "italian", "dutch",
         "indonesian")  # fmt: skip
_LINGUA_SAMPLE_CHARS = 600  # enough for lingua's trigram model; cost grows with length

_lingua_lock = threading.Lock()
_lingua_detectors: dict[frozenset[str], Any] = {}  # lingua names → detector
_lingua_calls = 0  # how many times detect_language fell back to lingua (for benchmarks)


def _lingua(names: frozenset[str] | None = None) -> Any:
    """A lingua detector (low-accuracy mode) for the given lingua language names (all
    of _LINGUA_TO_SNOWBALL by default), built on first use and cached.  lingua is
    imported only here; its detectors share the language models they load."""
    if names is None:
        names = _ALL_LINGUA
    detector = _lingua_detectors.get(names)
    if detector is None:
        with _lingua_lock:
            detector = _lingua_detectors.get(names)
            if detector is None:
                from lingua import Language, LanguageDetectorBuilder

                langs = [getattr(Language, n) for n in sorted(names) if hasattr(Language, n)]
                detector = LanguageDetectorBuilder.from_languages(*langs).with_low_accuracy_mode().build()
                if len(_lingua_detectors) < 64 or names == _ALL_LINGUA:
                    _lingua_detectors[names] = detector
    return detector


_ALL_LINGUA = frozenset(
    name for name, snowball in _LINGUA_TO_SNOWBALL.items() if snowball is None or snowball in LANGUAGES
)


def _candidates(total: int, top: int) -> frozenset[str]:
    """lingua names of the languages lingua should choose among: those whose score is
    close to the leader's (and their relatives), plus _CORE if the evidence is weak."""
    fields = _FIELDS.unpack_from(total.to_bytes(_FIELDS_BYTES, "little")) if total else ()
    floor = max(1 << _SCORE_SHIFT, top // _CANDIDATE_FRACTION)
    close = sorted((f, i) for i, f in enumerate(fields) if f >= floor)[-_MAX_CANDIDATES:]
    langs = [_PROFILE_LANGS[i] for _, i in close]
    if top < _MIN_FIELD:
        langs.extend(_CORE)
    names: set[str] = set()
    for lang in langs:
        names.update(_SNOWBALL_TO_LINGUA.get(lang, ()))
        names.update(_RELATIVES.get(lang, ()))
    return frozenset(names)


def _ask_lingua(sample: str, names: frozenset[str]) -> tuple[str | None, float]:
    """(Snowball name or None, confidence) of lingua's best guess for `sample` among
    the lingua languages `names`."""
    global _lingua_calls
    _lingua_calls += 1
    if len(names) < 2:  # nothing to choose between
        name = next(iter(names), None)
        return _LINGUA_TO_SNOWBALL.get(name) if name else None, 1.0 if name else 0.0
    values = _lingua(names).compute_language_confidence_values(sample)
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
        if hint in LANGUAGES:
            return hint
        language = normalize_language(hint)  # None for "auto"
        if language is not None:
            return language
    return _detect(_prose_sample(text), True)


def detect_language_sure(text: str) -> tuple[str | None, bool]:
    """(language, sure): `detect_language` without a hint, and whether its verdict rests
    on clear evidence (function words, letters, script) rather than on lingua's guess
    or a slight lead among relatives."""
    sample = _prose_sample(text)
    clear = _detect(sample, False)
    if clear is not None:
        return clear, True
    guess = _detect(sample, True)
    return guess, guess is None


def query_language(query: str) -> str | None:
    """The language a query is clearly written in, or None (too short, ambiguous)."""
    return _detect(query.strip()[:_SAMPLE_CHARS], False)


def query_language_candidates(query: str) -> list[str]:
    """Languages whose function words a query holds, when no one of them is clear: those
    scoring at least half the leader's score, best first ("Este comando es un alias"
    reads Spanish, Portuguese or Italian; never English).  [] without function words."""
    sample = query.strip()[:_SAMPLE_CHARS]
    if not sample:
        return []
    total = _word_score(_normalized(sample, sample.isascii()).split())
    if not total:
        return []
    fields = _FIELDS.unpack_from(total.to_bytes(_FIELDS_BYTES, "little"))
    top = max(fields) >> _SCORE_SHIFT
    if 2 * top < _SCALE:  # less than half a function word's worth (a word shared by 3+ languages)
        return []
    found = [(f >> _SCORE_SHIFT, i) for i, f in enumerate(fields) if 2 * (f >> _SCORE_SHIFT) >= top]
    return [_PROFILE_LANGS[i] for _, i in sorted(found, key=lambda si: (-si[0], si[1]))]


def _detect(sample: str, lingua: bool) -> str | None:
    """Language of a prose sample; `lingua` says whether ambiguous samples may ask lingua."""
    if not sample:
        return None
    if sample.isascii():
        return _latin(sample, True, 0, lingua)

    chars = _Chars(sample)
    if not chars.distinct.isdisjoint(_NO_STEMMER_LATIN):
        found = chars.distinct & _NO_STEMMER_LATIN
        if len(found) >= 2 or not found.isdisjoint("þÞðÐ"):
            return None  # Vietnamese, Icelandic, Faroese: no stemmer
    if max(chars.distinct, default="") < _LATIN_END:  # accented Latin letters only
        return _latin(sample, False, _letter_score(chars), lingua)
    script = _winning_script(chars)
    if script:
        if script < _CJK and len(sample.split(None, _MIN_TOKENS)) < _MIN_TOKENS:
            return None
        return _by_script(script, chars)
    return _latin(sample, False, _letter_score(chars), lingua)


def _winning_script(chars: _Chars) -> int:
    """The script other than Latin a sample is written in, or 0 when Latin prevails."""
    script, letters = chars.script()
    if not script:
        return 0
    if script == _CJK:
        letters *= _CJK_WEIGHT
    # Another script wins if its letters are at least ~half as many as the ASCII
    # letters (roughly 3/4 of ASCII characters; URLs are left out when it matters).
    prefix = chars.prefix
    ascii_letters = (len(prefix) - chars.non_ascii) * 3 // 4
    if letters * 6 >= ascii_letters > letters * 2 and "://" in prefix:
        ascii_letters = (len(_NOISE_RE.sub("", prefix)) - chars.non_ascii) * 3 // 4
    return script if letters * 2 >= ascii_letters else 0


def unstemmed_script(text: str) -> bool:
    """Whether `text` is written in a script no stemmer serves (CJK, Thai, Georgian…),
    as `detect_language` judges scripts: such a query is matched as written, never cut
    by the stemmers of the other languages an index holds."""
    sample = text.strip()[:_SAMPLE_CHARS]
    if sample.isascii():
        return False
    chars = _Chars(sample)
    if max(chars.distinct, default="") < _LATIN_END:
        return False
    return _winning_script(chars) >= _CJK


def _latin(sample: str, ascii_only: bool, letters: int, lingua: bool = True) -> str | None:
    """Language of a Latin-script sample; `letters` is its packed letter score.  Without
    `lingua`, a sample the function words and n-grams leave ambiguous gives None."""
    # Function words of the first few hundred characters, then of all.
    quick = len(sample) > _QUICK_CHARS
    normalized = _normalized(sample[:_QUICK_CHARS] if quick else sample, ascii_only)
    words = normalized.split()
    if len(words) < 8 and len(TOKEN_RE.findall(sample)) < _MIN_TOKENS:
        return None
    total = sum(map(_WORD_TABLE.__getitem__, _WORD_SET.intersection(words))) + letters
    english = (total >> _ENGLISH_SHIFT) & _FIELD_MASK if _ENGLISH >= 0 else 0
    if (
        english >= _MIN_FIELD
        and english & _HITS_MASK >= _MIN_HITS
        and english >> _SCORE_SHIFT >= _MIN_RATIO * (total >> _BOUND_SHIFT)
    ):
        return "english"  # beats twice what any other language could have scored
    best, top, runner_up = _rank(total)
    if _clear(best, top, runner_up):
        return _PROFILE_LANGS[best]
    if quick:
        normalized = _normalized(sample, ascii_only)
        total = _word_score(normalized.split()) + letters
        best, top, runner_up = _rank(total)
        if _clear(best, top, runner_up):
            return _PROFILE_LANGS[best]

    # Still a tie: character sequences that tell close relatives apart; with them, a
    # lead of one language-specific word (and a fifth of the score) is enough.
    total += _ngram_score(normalized)
    best, top, runner_up = _rank(total)
    if best >= 0 and top >= _MIN_FIELD:
        score = top >> _SCORE_SHIFT
        if score - (runner_up >> _SCORE_SHIFT) >= max(_SCALE, score // _TIE_MARGIN):
            return _PROFILE_LANGS[best]

    # Genuinely ambiguous (or no function words at all): ask lingua.
    if not lingua:
        return None
    lingua_sample = _NOISE_RE.sub(r"\1", sample)[:_LINGUA_SAMPLE_CHARS]
    guess, confidence = _ask_lingua(lingua_sample, _candidates(total, top))
    if confidence >= _LINGUA_MIN_CONFIDENCE:
        return guess
    if best >= 0 and top >> _SCORE_SHIFT > runner_up >> _SCORE_SHIFT:
        return _PROFILE_LANGS[best]  # lingua is unsure too: take the function words' lead
    return guess if confidence >= _LINGUA_MIN_CONFIDENCE / 2 else None


def _by_script(script: int, chars: _Chars) -> str | None:
    if script == _CYRILLIC:
        return _cyrillic(chars)
    if script == _GREEK:
        return _known("greek")
    if script == _ARABIC:
        return _arabic(chars)
    if script == _ARMENIAN:
        return _known("armenian")
    if script == _DEVANAGARI:
        return _devanagari(chars.prefix)
    if script == _TAMIL:
        return _known("tamil")
    if script == _HEBREW:
        return _hebrew(chars)
    return None  # CJK, Thai, Bengali, Georgian, ...: no stemmer


# --------------------------------------------------------------------------------------
# Documents that mix languages
#
# `detect_language` judges a document by its head, but a document can go on in another
# language (a bilingual README, notes quoting a German manual).  Ingestion asks
# `may_mix_languages` first, which costs one set intersection over the tokens it has
# anyway (and, for text that is not ASCII, one bytes pass); only when it says yes is
# each block of the document given to `detect_block_language`.

_MIX_MIN_CHARS = 400  # shorter documents are taken to be in one language
# Evidence of another language: distinct function words it does not share with the main
# language, worth at least this score and this many words.  A foreign paragraph of
# ~300 characters scores ~5 with ~7 words (tldr pages); stray words ("de", "la", "die")
# rarely give a single-language page that much (long documents sometimes do, which
# costs a block pass that finds nothing).
_MIX_MIN_FIELD = (4 * _SCALE) << _SCORE_SHIFT
_MIX_MIN_HITS = 5
_MIX_MIN_LETTERS = 40  # letters of a script other than the main language's
_BLOCK_MIN_WORDS = 8  # fewer prose words than this: a block has no language of its own
_BLOCK_MIN_FOREIGN = 2  # function words (or letters) of other languages worth a closer look
_BLOCK_SWITCH_SCORE = 2 * _SCALE  # function-word score a block needs to leave a language
_BLOCK_SWITCH_RATIO = 3  # ... and its lead over that language's score

_WORDS_BY_TEXT: dict[str, int] = {w.decode(): v for w, v in _WORD_TABLE.items()}
_WORD_TEXTS = frozenset(_WORDS_BY_TEXT)
# Words too weak to count as signs of a second language anywhere in a document: single
# letters (command-line options, list markers) and the command-like verbs of
# _EXTRA_WORDS ("show", "remove") that code in any language is full of.
_WEAK_WORDS = frozenset(w for w in _WORD_TEXTS if len(w) == 1).union(*(ws.split() for ws in _EXTRA_WORDS.values()))
_foreign_words: dict[str | None, frozenset[str]] = {}  # language → the others' words


def _foreign_words_of(language: str | None) -> frozenset[str]:
    """The table's words that are not function words of `language`, weak words left
    out (built once per language)."""
    words = _foreign_words.get(language)
    if words is None:
        own = STOPWORDS.get(language, ()) if language in _LANG_INDEX else ()
        words = _WORD_TEXTS.difference(own, _WEAK_WORDS)
        _foreign_words[language] = words
    return words


# UTF-8 lead bytes of the non-Latin scripts that have stemmers (0xE0 covers Devanagari
# and Tamil; neighbours sharing a lead byte are counted too, which is harmless), and
# the ones each language writes in itself.  CJK needs no block of its own: its bigrams
# are the same whichever stemmer a block gets.
_SCRIPT_LEADS: dict[str, bytes] = {
    "greek": b"\xce\xcf",
    "cyrillic": bytes(range(0xD0, 0xD4)),
    "armenian": b"\xd4\xd5\xd6",
    "hebrew": b"\xd6\xd7",
    "arabic": bytes(range(0xD8, 0xDC)),
    "indic": b"\xe0",
}
_OWN_SCRIPT = {
    "greek": "greek", "russian": "cyrillic", "serbian": "cyrillic", "armenian": "armenian",
    "yiddish": "hebrew", "arabic": "arabic", "persian": "arabic", "hindi": "indic",
    "nepali": "indic", "tamil": "indic",
}  # fmt: skip
_ALL_LEADS = b"".join(_SCRIPT_LEADS.values())


def _delete_all_but(leads: bytes) -> bytes:
    return bytes(b for b in range(256) if b not in leads)


_FOREIGN_LETTERS_LATIN = _delete_all_but(_ALL_LEADS)  # bytes.translate deletion tables
_FOREIGN_LETTERS: dict[str, bytes] = {
    lang: _delete_all_but(bytes(set(_ALL_LEADS) - set(_SCRIPT_LEADS[script]))) for lang, script in _OWN_SCRIPT.items()
}


def may_mix_languages(text: str, tokens: Iterable[str], main: str | None) -> bool:
    """Cheap check: could `text` hold prose in another language than `main` (its
    detected language)?  `tokens` are its analyzer tokens.

    False for nearly every single-language document; True is only a reason to look at
    the blocks (`detect_block_language`), which may still all agree with `main`.
    """
    if len(text) < _MIX_MIN_CHARS:
        return False
    found = _foreign_words_of(main).intersection(tokens)
    if len(found) >= _MIX_MIN_HITS:
        total = sum(map(_WORDS_BY_TEXT.__getitem__, found))
        for field in _FIELDS.unpack_from(total.to_bytes(_FIELDS_BYTES, "little")):
            if field >= _MIX_MIN_FIELD and field & _HITS_MASK >= _MIX_MIN_HITS:
                return True
    # (A document of unknown language is not split by script.)
    return main is not None and _foreign_letters(text, main) >= _MIX_MIN_LETTERS


def _foreign_letters(text: str, language: str | None) -> int:
    """About how many letters of `text` belong to a non-Latin script other than the
    one `language` is written in."""
    if text.isascii():
        return 0
    delete = _FOREIGN_LETTERS.get(language or "", _FOREIGN_LETTERS_LATIN)
    return len(text.encode("utf-8", "surrogatepass").translate(None, delete))


def detect_block_language(text: str, current: str | None) -> str | None:
    """Language of one block (a paragraph, a list) of a document that mixes languages,
    where `current` is the language of the text before it; None when the block has no
    clear language of its own (and should simply follow its neighbours).

    A block with no more than a stray function word or letter of anything but `current`
    (words are split at spaces only, so this errs towards `current`) is taken to be in
    `current` without further ado.  Otherwise it is judged like
    `detect_language` judges a document, but more strictly: fewer than _BLOCK_MIN_WORDS
    prose words, or function words, letters and n-grams that leave it ambiguous, give
    None (lingua is not asked).
    """
    words = text.lower().split()
    if len(words) < _BLOCK_MIN_WORDS:
        return None
    if (
        len(_foreign_words_of(current).intersection(words)) < _BLOCK_MIN_FOREIGN
        and _foreign_letters(text, current) < _BLOCK_MIN_FOREIGN
    ):
        return current
    sample = _prose_sample(text)
    if len(sample.split(None, _BLOCK_MIN_WORDS)) < _BLOCK_MIN_WORDS:
        return None
    verdict = _detect(sample, False)
    if verdict != current and verdict in _LANG_INDEX and current in _LANG_INDEX:
        # Leaving one Latin-script language for another takes function words of its own,
        # not a slight lead among close relatives (a Spanish line that reads Italian).
        total = _word_score(_normalized(sample, sample.isascii()).split())
        fields = _FIELDS.unpack_from(total.to_bytes(_FIELDS_BYTES, "little"))
        new = fields[_LANG_INDEX[verdict]] >> _SCORE_SHIFT
        old = fields[_LANG_INDEX[current]] >> _SCORE_SHIFT
        if new < _BLOCK_SWITCH_SCORE or new < _BLOCK_SWITCH_RATIO * old:
            return current
    return verdict
