"""Text → index terms: the one place that decides what a "word" is and how it is stemmed.

Documents are stemmed in their own language before they reach the lexical index (it
only sees space-separated stems), and queries are stemmed in the languages that
matter for them (gnod.search.lexical.query_languages), so both sides meet through the
same function; `exact_text` gives the unstemmed tokens the exact-form index holds.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import add
from typing import TYPE_CHECKING, NamedTuple

import Stemmer

if TYPE_CHECKING:
    import numpy as np

# Alphanumeric runs (plus the combining marks that Indic, Thai, Hebrew and Arabic words
# carry inside them, which `\w` does not match): `_` and `-` separate parts, so
# `snake_case` and `real-time` become adjacent tokens that the grammar matches as phrases.
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
    "\u0900-\u0dff\u0e00-\u0e7f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
)
TOKEN_RE = re.compile(rf"(?:[^\W_]|[{_MARKS}])+")
# ASCII text (most code, much prose): A-Z becomes a-z, every other byte but a-z and 0-9 a
# space, and str.split gives the lowercase tokens TOKEN_RE would, at a fifth to a ninth
# of its cost (and without a str.lower pass of its own).
_ASCII_SEPARATORS = bytes(
    c + 32 if 65 <= c <= 90 else c if chr(c) in "abcdefghijklmnopqrstuvwxyz0123456789" else 32 for c in range(256)
)
# The same keeping line breaks, to tokenize many lines at once (line_tokens).
_ASCII_LINE_SEPARATORS = _ASCII_SEPARATORS[:10] + b"\n" + _ASCII_SEPARATORS[11:]
# The same for UTF-8 with other letters in it: bytes from 0x80 on (never part of an ASCII
# character) stay, so each word holding one is still whole, for TOKEN_RE to split.
_ASCII_SEPARATORS_ONLY = _ASCII_SEPARATORS[:128] + bytes(range(128, 256))
NON_ASCII_RE = re.compile(r"[^\x00-\x7f]+")
# non_ascii_runs looks for them this many characters at a time: a block without one is
# passed over by str.isascii, in C, where the regex reads every character (a 700 KB
# driver with an accented name in its header: 5.8 ms a scan, 0.3 so).
ASCII_SCAN_CHARS = 4096
# fold reads a block holding at least this many bytes of UTF-8 beyond one a character
# (a Chinese character has two, an accented letter one) whole, by arrays, not run by
# run: about where the two cost the same.
FOLD_DENSE_BYTES = 64
# Between the parts of an indexed text (its path, title and body; a path's folders): a
# token of its own, which no phrase spans. Never a query's (tokens are alphanumeric) but
# where a query names a path's folders (`x86/entry`, grammar._clause_forms).
SEPARATOR = " | "
SEPARATOR_TOKEN = SEPARATOR.strip()
# Text whose UTF-8 has at most this share of bytes beyond ASCII's (a name in a copyright
# line, a few accented words) is split by the byte table first; with more (Russian,
# French prose), nearly every word would meet the regex on its own, slower than at once.
MOSTLY_ASCII_SHARE = 1 / 32

# Chinese, Japanese and Korean have no spaces between words, so a CJK run is indexed as
# its overlapping character bigrams ("東京タワー" → 東京 京タ タワ ワー): a query word
# then becomes the adjacent phrase of its own bigrams and matches wherever it occurs.
# Han (with 々〆〇), Hiragana, Katakana (with ー, half-width forms) and Hangul syllables
# form one run; a run of one character stays a unigram.  Supplementary planes 2 and 3
# hold only Han ideographs.
_CJK = (
    "\u3005-\u3007\u303b\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003ffff"
)
_CJK_RE = re.compile(f"[{_CJK}]")
CJK_RUN_RE = re.compile(f"([{_CJK}]+)")
# Every byte except the UTF-8 lead bytes of U+3000-U+DFFF, U+F000-U+FFFF and planes
# 1-3, which hold every CJK character: deleting them all (one C pass) leaves nothing
# for text without CJK, at a half to a fifth of the cost of a `_CJK_RE` scan.
_NOT_CJK_LEADS = bytes(sorted(set(range(256)) - {*range(0xE3, 0xEE), 0xEF, 0xF0}))


def non_ascii_blocks(text: str, block: int = ASCII_SCAN_CHARS) -> Iterator[tuple[int, int]]:
    """The [start, end) of each of `text`'s blocks of `block` characters that holds a
    non-ASCII character, in order, found by str.isascii (in C); a run across a block's
    end is read whole with the block it starts in, which ends after it."""
    at, n = 0, len(text)
    while at < n:
        end = min(at + block, n)
        if not text[at:end].isascii():
            if end < n and not text[end - 1].isascii() and not text[end].isascii():
                end = NON_ASCII_RE.match(text, end).end()  # type: ignore[union-attr]  # text[end] is one
            yield at, end
        at = end


def non_ascii_runs(text: str, block: int = ASCII_SCAN_CHARS) -> Iterator[re.Match[str]]:
    """NON_ASCII_RE's matches in `text`, in order, read by the regex only in the blocks
    that hold one (non_ascii_blocks)."""
    for at, end in non_ascii_blocks(text, block):
        yield from NON_ASCII_RE.finditer(text, at, end)


def cjk_character(token: str) -> bool:
    """Whether `token` is one CJK character: a word (茶, 猫) that a document holds mostly
    inside runs, which are indexed as their bigrams (喝茶, 茶叶)."""
    return len(token) == 1 and _CJK_RE.match(token) is not None


def is_word_char(ch: str) -> bool:
    """Whether `ch` is a character a word goes on with, as tokenize reads words: a letter
    or a digit, not of a CJK run (a run beside a word is a token of its own:
    `用kmem_cache_create创建`)."""
    return ch.isalnum() and _CJK_RE.match(ch) is None


# The forms of another width that Japanese (and Chinese, Korean) input methods type:
# full-width Latin letters, digits and signs (ＰＤＦ, ３つ, Ｗｉ－Ｆｉ) and half-width
# katakana (ﾃｽﾄ), read as their usual forms (NFKC), as search engines' CJK width
# filters read them. UTF-8 of U+FF00-U+FFFF starts with one of _WIDTH_LEADS.
_WIDTH_FORMS_RE = re.compile("[\uff01-\uffee]+")
_WIDTH_LEADS = (b"\xef\xbc", b"\xef\xbd", b"\xef\xbe", b"\xef\xbf")


def narrow(text: str) -> str:
    """`text` with its width forms as their usual ones (ＰＤＦ → PDF, ﾃｽﾄ → テスト)."""
    return _WIDTH_FORMS_RE.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)


def _has_cjk(text: str, data: bytes) -> bool:
    """Whether non-ASCII `text` (`data`: its UTF-8) holds a CJK character."""
    if not data.translate(None, _NOT_CJK_LEADS):
        return False
    return _CJK_RE.search(text) is not None


# Snowball algorithms that PyStemmer ships, by the names we store in the index.
LANGUAGES: frozenset[str] = frozenset(a for a in Stemmer.algorithms() if a not in ("porter", "dutch_porter"))

# Longer tokens are hashes, base64 or minified junk: indexed verbatim, never stemmed.
_MAX_STEM_LEN = 40
# Stems kept per language: a prose corpus's vocabulary fits; a source tree's identifiers
# would not (526k English tokens in 40% of the Linux tree, ~130 bytes each). A full cache
# starts again empty: it then holds the vocabulary of the files at hand (a subsystem's
# identifiers), where one that stopped growing missed every new word at each occurrence
# (7.8M misses of ~1 µs there instead of 0.8M).
_MAX_CACHE = 100_000


# A long text is stemmed a piece of about this many characters at a time (cut at a line's
# end, which no token spans): the token objects of a 24 MB generated header took ten
# times its size at once, and a piece's stay in the CPU's cache while they are stemmed
# and joined (the kernel tree's 40 biggest headers: 9 % less CPU for their stems and
# words, and preparing them peaks at 236 MB instead of 454).
PIECE_CHARS = 1 << 18


class _StemCache(dict):
    """token → stem; a miss stems once. `map(cache.__getitem__, tokens)` keeps hits in C."""

    __slots__ = ("_stemmer",)

    def __init__(self, stemmer: Stemmer.Stemmer | None) -> None:
        super().__init__()
        self._stemmer = stemmer

    def __missing__(self, token: str) -> str:
        out = token
        if self._stemmer is not None and len(token) <= _MAX_STEM_LEN and not token.isdigit():
            # A word that is its own stem (most of code's) maps to itself: one object, not two.
            out = self._stemmer.stemWord(token) or token
            if out == token:
                out = token
        if len(self) >= _MAX_CACHE:
            self.clear()
        self[token] = out
        return out


class Analyzer:
    """Tokenizes and stems text for one language (or none).

    PyStemmer's own cache is slower than a dict lookup, so it is disabled and stems
    are memoized here, in a bounded cache (a prose corpus's vocabulary fits easily).
    """

    __slots__ = ("language", "_cache", "stem")

    def __init__(self, language: str | None) -> None:
        if language is not None and language not in LANGUAGES:
            raise ValueError(f"no Snowball stemmer for language {language!r}")
        self.language = language
        self._cache = _StemCache(Stemmer.Stemmer(language, 0) if language else None)
        # Stem one lowercase token: the cache's own lookup (no Python call per token).
        self.stem: Callable[[str], str] = self._cache.__getitem__

    def stems(self, tokens: Iterable[str]) -> list[str]:
        return list(map(self.stem, tokens))

    def index_text(self, text: str) -> str:
        """The space-joined stems the lexical index stores for `text`."""
        return " ".join(map(self.stem, tokenize(text)))

    def stems_and_words(self, text: str, piece: int = PIECE_CHARS) -> tuple[str, str]:
        """`index_text(text)` and `exact_text(text)`, made a piece of `piece` characters
        at a time."""
        stems: list[str] = []
        words: list[str] = []
        at = 0
        while at < len(text):
            end = text.find("\n", at + piece)
            end = len(text) if end < 0 else end
            tokens = tokenize(text[at:end])
            if tokens:
                stems.append(" ".join(map(self.stem, tokens)))
                words.append(" ".join(tokens))
            at = end
        return " ".join(stems), " ".join(words)


# camelCase identifiers: a lower-case letter or digit followed by a capital marks one, as
# do three capitals and a lower-case letter (HTTPServer, IOError; not IDs); its parts are
# runs of capitals before a capitalised word, capitalised or lower-case words, digits kept
# with the word before them (utf8Decode → utf8, decode).
_HUMP_RE = re.compile(r"[a-z0-9][A-Z]|[A-Z]{3}[a-z]")
_RUN_END_RE = re.compile(r"[A-Za-z0-9]*")
_PART_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")
MAX_IDENTIFIER = 100  # longer camel runs are data (base64, hashes), not names


def identifier_parts(text: str) -> list[list[str]]:
    """The lower-cased parts of each camelCase identifier in `text`, once each, in order
    of first appearance: `kmallocNode` → [kmalloc, node], `HTTPServer` → [http, server].
    Linear: each hump is found by one scan, and its identifier read around it."""
    found: dict[str, None] = {}
    end = -1
    for m in _HUMP_RE.finditer(text):
        at = m.start()
        if at < end:  # a second hump of the identifier just read
            continue
        start = at
        while start and text[start - 1] < "\x80" and text[start - 1].isalnum():
            start -= 1
        run = _RUN_END_RE.match(text, at)
        end = run.end() if run else at
        if end - start <= MAX_IDENTIFIER and not text[start].isdigit():  # 0xFF is a number
            found[text[start:end]] = None
    out = []
    for name in found:
        parts = _PART_RE.findall(name)
        if len(parts) > 1:
            out.append([p.lower() for p in parts])
    return out


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric tokens in order, CJK runs as overlapping bigrams.

    Documents and queries both come through here; ASCII text costs one byte pass and a
    split, other text without CJK a byte pass and one `findall` at most.
    """
    # ASCII is lowered by the byte table; other text may lower to ASCII (the Kelvin sign: "k").
    lowered = text if text.isascii() else text.lower()
    if lowered.isascii():
        return lowered.encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").split()
    data = lowered.encode("utf-8", "surrogatepass")
    if any(lead in data for lead in _WIDTH_LEADS):
        lowered = narrow(lowered)
        if lowered.isascii():
            return lowered.encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").split()
        data = lowered.encode("utf-8", "surrogatepass")
    if not _has_cjk(lowered, data):
        if len(data) - len(lowered) <= len(data) * MOSTLY_ASCII_SHARE:
            return _mostly_ascii_tokens(data)
        return TOKEN_RE.findall(lowered)
    out: list[str] = []
    for token in TOKEN_RE.findall(lowered):
        if _CJK_RE.search(token) is None:
            out.append(token)
            continue
        # split() alternates other text (even indexes, maybe empty) and CJK runs (odd):
        # "python3を使う" → python3 を使 使う.
        for i, part in enumerate(CJK_RUN_RE.split(token)):
            if i % 2 and len(part) > 2:
                out += map(add, part, part[1:])
            elif part:
                out.append(part)
    return out


def line_tokens(lines: Sequence[str]) -> Iterable[list[str]]:
    """`tokenize` of each of `lines` (none holding a line break): ASCII lines in one byte
    pass and one split for them all, not a call each."""
    joined = "\n".join(lines)
    if not joined.isascii():
        return map(tokenize, lines)
    return map(str.split, joined.encode("ascii").translate(_ASCII_LINE_SEPARATORS).decode("ascii").split("\n"))


def _mostly_ascii_tokens(data: bytes) -> list[str]:
    """TOKEN_RE.findall of lowercase text without CJK, given as UTF-8: ASCII separators
    become spaces in one byte pass, the ASCII stretches are split, and only the words
    holding another character go through the regex (source files with a name in their
    copyright line: a third of the cost; German, Spanish or Italian prose: two thirds)."""
    spaced = data.translate(_ASCII_SEPARATORS_ONLY).decode("utf-8", "surrogatepass")
    out: list[str] = []
    at = 0  # where the text not yet tokenized starts
    for m in non_ascii_runs(spaced):
        if m.start() < at:  # in the word just read
            continue
        start = spaced.rfind(" ", 0, m.start()) + 1
        end = spaced.find(" ", m.end())
        if end < 0:
            end = len(spaced)
        out += spaced[at:start].split()
        out += TOKEN_RE.findall(spaced, start, end)
        at = end
    out += spaced[at:].split()
    return out


def fold(text: str) -> str:
    """Accents off, as FTS5's `remove_diacritics` did (é → e, ü → u), the letters
    without a mark that people type in ASCII (œ → oe, ł → l, ß → ss: _UNMARKED), and
    the forms of another width as their usual ones (narrow: ＰＤＦ → PDF); Hangul
    and other composed letters stay composed. Only the blocks holding a non-ASCII
    character are looked at (non_ascii_blocks: a mark is never ASCII, and no ASCII letter
    composes with a non-ASCII one but a mark), so a source file with one name in its
    copyright line costs a str.isascii pass and the regex over one block; in such a
    block, its non-ASCII runs one by one, or, where they are many (FOLD_DENSE_BYTES), the
    block whole by arrays (_fold_dense: a Chinese page of 22k characters, 2.7 → 0.7 ms)."""
    if text.isascii():
        return text
    out: list[str] = []
    done = 0  # text before it is in `out`
    for at, end in non_ascii_blocks(text):
        block = text[at:end]
        if len(block.encode("utf-8", "surrogatepass")) - len(block) >= FOLD_DENSE_BYTES:
            out += (text[done:at], _fold_dense(block))
            done = end
        else:
            for m in NON_ASCII_RE.finditer(text, at, end):
                out += (text[done : m.start()], _fold_run(m.group()))
                done = m.end()
    out.append(text[done:])
    return "".join(out)


class _FoldCache(dict):
    """word → fold(word); a miss folds once. A search's passages judge each word of the
    lines they read (snippet.TermBits), and the same words come back search after search:
    through fold's general path (blocks, runs, two normalizations), ~5 µs a word, a
    quarter of the passages of tldr's pages in other scripts went there."""

    __slots__ = ()

    def __missing__(self, word: str) -> str:
        out = fold(word)
        if len(self) >= _MAX_CACHE:
            self.clear()
        self[word] = out
        return out


# fold() of one word (a token, a stem), kept: what is asked of it per word.
fold_word = _FoldCache().__getitem__


def _fold_run(run: str) -> str:
    stripped = "".join(ch for ch in unicodedata.normalize("NFD", narrow(run)) if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", stripped).translate(_UNMARKED)


def _fold_dense(text: str) -> str:
    """fold's work on a text of many non-ASCII characters, by array lookups of each
    character's code (_FoldTables): as _fold_run does to each run, in a few passes in C."""
    tables = _fold_tables()
    if _held(tables.width, char_codes(text)).any():
        text = narrow(text)
    decomposed = unicodedata.normalize("NFD", text)
    codes = char_codes(decomposed)
    marks = _held(tables.mark, codes)
    if marks.any():
        decomposed = codes[~marks].tobytes().decode("utf-32-le", "surrogatepass")
    composed = unicodedata.normalize("NFC", decomposed)
    if _held(tables.unmarked, char_codes(composed)).any():
        composed = composed.translate(_UNMARKED)
    return composed


def char_codes(text: str) -> np.ndarray:
    """The text's characters as numbers, one per character (so offsets are string offsets)."""
    import numpy as np

    if text.isascii():
        return np.frombuffer(text.encode("ascii"), np.uint8)
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)


def _held(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per character code (char_codes), whether `table` (_FoldTables) holds it: none
    ASCII (codes of a byte each), none past the table's last."""
    import numpy as np

    if codes.dtype == np.uint8:
        return np.zeros(len(codes), bool)
    return table[np.minimum(codes, len(table) - 1)]


class _FoldTables(NamedTuple):
    """Per character code, whether it is a width form (narrow), a combining mark (a
    nonzero canonical combining class: every one is in the first two planes) or in
    _UNMARKED; a code past a table's end is none of them, as is its last."""

    width: np.ndarray
    mark: np.ndarray
    unmarked: np.ndarray


@functools.cache
def _fold_tables() -> _FoldTables:
    """Built on first use (~6 ms), not at import: most texts never need them."""
    import numpy as np

    last = 0x20000
    width, mark, unmarked = (np.zeros(last + 1, bool) for _ in range(3))
    width[0xFF01:0xFFEF] = True  # _WIDTH_FORMS_RE's
    mark[[c for c in range(0x80, last) if unicodedata.combining(chr(c))]] = True
    unmarked[list(_UNMARKED)] = True
    return _FoldTables(width, mark, unmarked)


# Letters that carry no mark to take off (no decomposition) but that people type
# without, as search engines' ASCII folding reads them: `oeufs` is `œufs`, `lodz` is
# `łódź`, `strasse` is `Straße`.
_UNMARKED = str.maketrans(
    {
        "œ": "oe",
        "Œ": "OE",
        "æ": "ae",
        "Æ": "AE",
        "ø": "o",
        "Ø": "O",
        "ł": "l",
        "Ł": "L",
        "đ": "d",
        "Đ": "D",
        "ð": "d",
        "Ð": "D",
        "þ": "th",
        "Þ": "TH",
        "ß": "ss",
        "ẞ": "SS",
        "ı": "i",
    }
)


def exact_text(text: str) -> str:
    """The space-joined unstemmed tokens of `text`: what the exact-form index stores
    (lexical_index.fold takes accents off)."""
    return " ".join(tokenize(text))


def path_text(rel_path: str, text_of: Callable[[str], str]) -> str:
    """A path as an indexed text: each folder's and the name's `text_of`, SEPARATOR between
    them, so that a phrase of words holds within one (`entry_SYSCALL_64` is not the path
    `entry/syscall_64.c`) unless the query names the folders (`x86/entry`)."""
    return SEPARATOR.join(part for part in map(text_of, rel_path.split("/")) if part)


class AnalyzerSet:
    """One Analyzer per language, created on demand and kept warm for the process."""

    def __init__(self) -> None:
        self._by_lang: dict[str | None, Analyzer] = {}

    def get(self, language: str | None) -> Analyzer:
        a = self._by_lang.get(language)
        if a is None:
            a = self._by_lang[language] = Analyzer(language)
        return a

    def stem_sequences(self, tokens: Sequence[str], languages: Iterable[str | None]) -> list[tuple[str, ...]]:
        """Distinct stemmed forms of a token sequence, one per language, first seen first.

        A query meets a document's stems only through that document's language, so a
        term (or phrase) is looked up under each language the query is stemmed in.
        """
        seen: dict[tuple[str, ...], None] = {}
        for lang in languages:
            seen.setdefault(tuple(self.get(lang).stems(tokens)), None)
        return list(seen)


_for_ingest: AnalyzerSet | None = None


def ingest_analyzers() -> AnalyzerSet:
    """The AnalyzerSet of this process's ingest work, however it reaches the process (the
    writer thread, a pool worker preparing files or deriving a rebuild's text): one set
    of stem caches each. Readers keep their own per thread."""
    global _for_ingest
    if _for_ingest is None:
        _for_ingest = AnalyzerSet()
    return _for_ingest
