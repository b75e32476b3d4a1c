"""Snippets with line numbers and match offsets, cut from the stored Markdown (the
lexical index holds only stems).

A line's score is the number of distinct query terms it holds (stems in the
document's language, or the exact words typed, with their accents off as the index
holds both: `naïve` is found in "the naive mapping"; the words a prefix stands for, and
their stems, count as one: `kmalloc dev*` prefers a line holding both to one with three words
starting with dev, and `dev*` alone takes the first line holding one, as no line can
score more), and one more for each phrase of the query (an identifier, a quoted run of
words) it holds as typed: `usb_register_driver` is shown where it is written, not in
`usb_register_device_driver`. Of lines scoring the same, one holding a phrase's words
in a run is shown first, and of those one whose run is not joined by `_` to a longer
name: `mmc_add` at `mmc_add_card(`, not at `add_uevent_var(env, "MMC_TYPE`; `CONFIG_PM`
in a Kconfig file at `config PM`, not at `config PM_STD_PARTITION` (a line holding
the phrase as typed holds such a run). Each term's first three letters, and each
phrase, found by substring tests (a small text) or array compares over the whole text
(a big one), bound what a line can score, so only the few lines that could be best are
read.
A word is at most two terms (its own form and its stem), so a line's bound from three
letters that many terms share (a prefix query's expansions) grows with how often they
occur in it, not with how many terms share them; and letters that start others (the
term "un" beside "unsigned") bound those others' credit too.
The best lines open the snippets, which never overlap; in each, the matched words are
given as offsets. A long text's first lines can be looked at first: when they give every
snippet with all the terms, the rest is not read.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import reduce
from operator import or_
from typing import NamedTuple, Protocol

import numpy as np

from gnod.search.constants import (
    INDEXING,
    SNIPPET_COLUMN_WORDS,
    SNIPPET_LOOK_PER_TERM,
    SNIPPET_LOOK_TERMS,
    SNIPPET_MAX_CHARS,
    SNIPPET_MAX_LINES,
    SNIPPET_SMALL_TEXT,
)
from gnod.text.analyzer import (
    CJK_RUN_RE,
    TOKEN_RE,
    Analyzer,
    char_codes,
    cjk_character,
    fold,
    fold_word,
    line_tokens,
    tokenize,
)
from gnod.text.compounds import COMPOUNDING, parts

# The terms one word can match: its own lowercase form and its stem (a phrase that
# starts with it is one more: TermBits.per_word).
TERMS_PER_WORD = 2
# What a phrase's run gives a line, which decides between lines of the same score: its
# words in a run, and that run not joined to a longer name (_PhraseBit).
RUN_BITS = 2


class Phrase(NamedTuple):
    """A phrase of the query, as a line is judged by it (search.lexical._phrases)."""

    words: Sequence[frozenset[str]]  # each word's forms among the terms
    text: str  # as typed
    open: bool  # `text` is the start of what a line holds (typed with `*` at its end)
    # Whether its words in a run rank lines of the same score (RUN_BITS); without, only
    # a line holding it as typed is preferred (the query's words typed apart: lexical._typed).
    runs: bool = True


class Snippet(NamedTuple):
    line: int  # 1-based line of the stored Markdown where `text` starts
    text: str
    matches: list[list[int]]  # [start, end) character offsets in `text` of the matched words
    # `text` cut from a long line after its start ("…" first): the UTF-8 bytes of the line
    # before the cut, so a match's byte column in the line is at hand (0: not cut so).
    offset: int = 0


class TermBits(dict[str, int]):
    """token → the query terms it matches (its own form, its stem) as bits of an int, so
    a line's distinct terms are the bits of its tokens' OR: a lookup per token, each
    token judged once per search (made once for a query and its documents' language, it
    serves each of them). Each phrase of the query has a bit too, which a line holds
    where it holds the phrase's words and the phrase as typed, and RUN_BITS more for how
    closely it holds its words, which rank lines of the same score (`line`). `terms`:
    the query's stems and exact forms; `groups`: sets of them counted as one (a prefix's
    words); `phrases`: the query's (its words, each the set of its forms among `terms`,
    and its text as typed); `verbatim`: the terms a word holds only as typed, not by its
    stem (a quoted word's: `"WebSocketDisconnect"` is not in WebSocketDisconnected);
    `quiet`: the function words the query left out (lexical: `how to submit a patch`
    searches submit and patch), terms only as its phrases' words: a line holding them
    scores nothing for them, nor are they marked (a line saying "How to piss off a
    maintainer" was the passage of submitting-patches.rst, whose title holds both words)."""

    def __init__(
        self,
        analyzer: Analyzer,
        terms: frozenset[str],
        groups: Iterable[frozenset[str]] = (),
        phrases: Iterable[Phrase] = (),
        verbatim: frozenset[str] = frozenset(),
        quiet: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__()
        self.analyzer, self.terms = analyzer, _folded(terms)
        self.compounding = analyzer.language in COMPOUNDING  # its words' parts are terms too (_part_stems)
        self.verbatim = _folded(verbatim)
        self.bit = _bits(self.terms, [_folded(g) for g in groups])
        self.quiet_terms = _folded(quiet) & self.terms
        self.marked = self.terms - self.quiet_terms  # what a passage marks
        self.quiet = reduce(or_, (self.bit[t] for t in self.quiet_terms), 0)
        self.phrases = _phrase_bits(self.bit, phrases)
        self.typed = reduce(or_, (p.bit for p in self.phrases), 0)  # the phrases' bits
        self.runs = reduce(or_, (p.near | p.whole for p in self.phrases), 0)  # their runs' bits
        # The probes that are phrases alone (no term's first letters), each with whether
        # it is open: a line holds one only where it stands apart from the words around
        # it (_standalone).
        leads = {t[:3] for t in self.bit}
        self.apart = {p.text: p.open for p in self.phrases if p.bit and p.text not in leads}
        counted = {b for b in self.bit.values() if not b & self.quiet}
        self.ceiling = len(counted) + self.typed.bit_count()  # what a line can score at most
        self.run_ceiling = RUN_BITS * sum(1 for p in self.phrases if p.near)  # what its runs can give it at most
        self.per_word = TERMS_PER_WORD + self.typed.bit_count()  # the bits one word can give a line
        self.probes = _probes(self.leads())

    def __missing__(self, token: str) -> int:
        stem = self.analyzer.stem(token)
        bits = self.bit.get(token, 0) | (self.bit.get(stem, 0) if stem not in self.verbatim else 0)
        if not token.isascii():  # the terms are folded (_folded)
            stem = fold_word(stem)
            bits |= self.bit.get(fold_word(token), 0) | (self.bit.get(stem, 0) if stem not in self.verbatim else 0)
            if len(token) == 2 and cjk_character(token[0]):  # a run's bigram holds its characters
                bits |= self.bit.get(token[0], 0) | self.bit.get(token[1], 0)
        for part in _part_stems(token, self.analyzer) if self.compounding else ():
            if part not in self.verbatim:
                bits |= self.bit.get(part, 0)
        self[token] = bits
        return bits

    def line(self, text: str, tokens: Sequence[str]) -> int:
        """The bits of the terms a line (`text`, its `tokens`) holds, and of its phrases,
        where it holds a phrase's words: `bit` where its text as typed, in any case, is,
        not inside a longer word (`usb_register_driver`, not `usb_register_device_driver`;
        `mmc_add_host(mmc)`, not `mmc_add_host_debugfs(`; `if (ret)`, not `if (!ret)`),
        and its run's: `near` where its words follow each other, one character between
        each two (`mmc_add_card` for `mmc_add`, not `rt_mutex *lock` for `mutex_lock`),
        `whole` where such a run is not joined by `_` to a word beside it (`config PM`,
        not `config PM_STD_PARTITION`, for `CONFIG_PM`); as typed is all three."""
        found: int = reduce(or_, map(self.__getitem__, tokens), 0)
        lower = ""
        for phrase in self.phrases:
            if all(map(found.__and__, phrase.masks)):
                lower = lower or _lowered(text)
                if phrase.bit and phrase.text in lower and _standalone(lower, phrase.text, phrase.open):
                    found |= phrase.bit | phrase.near | phrase.whole
                elif phrase.near:
                    found |= self._run(phrase, lower, tokens)
        return found

    def _run(self, phrase: _PhraseBit, lower: str, tokens: Sequence[str]) -> int:
        """`phrase`'s near and whole bits on a line (`lower`, its `tokens`). A line in
        ASCII is read again for where its tokens are; in another script its tokens in
        order are a whole run."""
        masks, size = phrase.masks, len(phrase.masks)
        held = list(map(self.__getitem__, tokens))
        last = len(held) - size
        first, rest = masks[0], list(enumerate(masks[1:], 1))
        starts = [i for i, h in enumerate(held) if h & first and i <= last and all(held[i + k] & m for k, m in rest)]
        if not starts or not lower.isascii():
            return phrase.near | phrase.whole if starts else 0
        spans = list(_ASCII_TOKEN_RE.finditer(lower))  # an ASCII line's tokens, where they are
        out = 0
        for i in starts:
            run = spans[i : i + size]
            if all(b.start() - a.end() == 1 for a, b in zip(run, run[1:])):
                out = phrase.near
                if not (_joined(lower, run[0].start() - 1) or _joined(lower, run[-1].end())):
                    return phrase.near | phrase.whole
        return out

    def held(self, text: str) -> int:
        """The bits of the terms `text`'s words hold (no phrase's)."""
        return reduce(or_, map(self.__getitem__, tokenize(text)), 0)

    def without(self, mask: int) -> TermBits | None:
        """The TermBits of the terms whose bits are not in `mask` (a prefix's words still
        one; no phrase), None where no term that scores is left: with only quiet ones, no
        line could score, and every line of the text was read to find none (`how to
        submit a patch` in submitting-patches.rst, its title holding submit and patch:
        a third of the search)."""
        rest: dict[int, set[str]] = {}
        for term, bit in self.bit.items():
            if not bit & mask:
                rest.setdefault(bit, set()).add(term)
        if all(bit & self.quiet for bit in rest):
            return None
        groups = [frozenset(terms) for terms in rest.values() if len(terms) > 1]
        return TermBits(self.analyzer, frozenset().union(*rest.values()), groups, (), self.verbatim, self.quiet_terms)

    def score(self, found: int) -> tuple[int, int]:
        """A line's (-score, -what its runs give) from its bits: lines sort best first."""
        return -(found & ~(self.runs | self.quiet)).bit_count(), -(found & self.runs).bit_count()

    def leads(self) -> list[tuple[str, int]]:
        """(what a line holding it holds, bit): each term's first three letters (but a
        quiet one's: it scores nothing), each phrase's text as typed."""
        return [
            *((t[:3], b) for t, b in self.bit.items() if t and not b & self.quiet),
            *((p.text, p.bit) for p in self.phrases if p.bit),
        ]


def _in_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _standalone(text: str, typed: str, open_end: bool = False) -> bool:
    """Whether `typed` occurs in `text` other than as a piece of a longer word: a word
    character at either end of it must not go on into one beside it (`open_end`: at its
    start only, as the start of a word)."""
    head, tail = _in_word(typed[0]), _in_word(typed[-1]) and not open_end
    at = text.find(typed)
    while at >= 0:
        end = at + len(typed)
        if not (head and at and _in_word(text[at - 1])) and not (tail and end < len(text) and _in_word(text[end])):
            return True
        at = text.find(typed, at + 1)
    return False


def _joined(text: str, at: int) -> bool:
    """Whether `text` has a `_` at `at`: there a word goes on into a longer name."""
    return 0 <= at < len(text) and text[at] == "_"


def _find_apart(text: str, typed: str, start: int, open_end: bool = False) -> int:
    """Where `typed` next occurs in `text` from `start` on other than as a piece of a
    longer word (_standalone), or -1."""
    at = text.find(typed, start)
    while at >= 0 and not _standalone(text[max(at - 1, 0) : at + len(typed) + 1], typed, open_end):
        at = text.find(typed, at + 1)
    return at


def _word_codes(codes: np.ndarray) -> np.ndarray:
    """Which of the lowercased text's characters go on a word: ASCII digits, letters and
    `_` (any other character does not: a bound may only be too high, never too low)."""
    word: np.ndarray = ((codes >= 48) & (codes <= 57)) | ((codes >= 97) & (codes <= 122)) | (codes == 95)
    return word


def _apart(codes: np.ndarray, at: np.ndarray, typed: str, open_end: bool = False) -> np.ndarray:
    """Which occurrences `at` of `typed` in `codes` are not pieces of a longer word
    (`open_end`: at its start only)."""
    keep = np.ones(len(at), dtype=bool)
    if _in_word(typed[0]):
        keep &= (at == 0) | ~_word_codes(codes[np.maximum(at - 1, 0)])
    if _in_word(typed[-1]) and not open_end:
        end = at + len(typed)
        keep &= (end >= len(codes)) | ~_word_codes(codes[np.minimum(end, len(codes) - 1)])
    return keep


class _PhraseBit(NamedTuple):
    bit: int  # held as typed (0: it has no text as typed)
    near: int  # its words in a run
    whole: int  # such a run not joined to a longer name
    masks: tuple[int, ...]  # each word's: the bits of its forms
    text: str  # as typed, lowercase
    open: bool  # held where a word starts with `text` (Phrase.open)
    leads: tuple[frozenset[str], ...]  # each word's: its terms' first three letters


def _phrase_bits(bit: dict[str, int], phrases: Iterable[Phrase]) -> list[_PhraseBit]:
    """A bit and RUN_BITS more for each distinct phrase, after the terms'; a phrase
    without a text as typed has only the RUN_BITS, and `bit` 0; one without runs
    (Phrase.runs) only its bit, `near` and `whole` 0."""
    out: dict[str | tuple[int, ...], _PhraseBit] = {}
    k = len(set(bit.values()))
    for words, text, open_end, runs in phrases:
        forms_of = [_folded(forms) for forms in words]
        masks = tuple(reduce(or_, (bit.get(t, 0) for t in forms), 0) for forms in forms_of)
        typed = _lowered(text)
        key = typed or masks
        if all(masks) and key not in out and (typed or runs):
            own = 1 << k if typed else 0
            k += bool(typed)
            leads = tuple(frozenset(t[:3] for t in forms if t in bit) for forms in forms_of)
            near, whole = (1 << k, 1 << (k + 1)) if runs else (0, 0)
            out[key] = _PhraseBit(own, near, whole, masks, typed, open_end, leads)
            k += RUN_BITS * runs
    return list(out.values())


def _bits(terms: frozenset[str], groups: Iterable[frozenset[str]]) -> dict[str, int]:
    """Each term's bit. The terms of a group (the words a prefix stands for, and their
    stems) share one: a line holding three of them holds the prefix once."""
    bit: dict[str, int] = {}
    k = 0
    for group in groups:
        members = [t for t in group if t in terms and t not in bit]
        if members:
            bit.update(dict.fromkeys(members, 1 << k))
            k += 1
    for t in terms:
        if t not in bit:
            bit[t] = 1 << k
            k += 1
    return bit


def _folded(terms: frozenset[str]) -> frozenset[str]:
    """Terms as the index holds them, accents off (analyzer.fold): a line's words are
    judged by their folded forms too."""
    return terms if all(map(str.isascii, terms)) else frozenset(map(fold, terms))


def _lowered(text: str) -> str:
    """`text` lowercased with its accents off, where its lines are searched for the
    folded terms' letters and phrases (a mark is never a line break: lines stay lines)."""
    return fold(text.lower())


def match_spans(
    text: str, analyzer: Analyzer, terms: frozenset[str], verbatim: frozenset[str] = frozenset()
) -> list[list[int]]:
    """[start, end) character offsets in `text` of the words a query matched: a word
    whose stem (in `analyzer`'s language) or whose own lowercase form is among `terms`
    (only the latter for those `verbatim`: TermBits); in CJK runs, each matching
    character bigram (adjacent ones merged)."""
    if not terms:
        return []
    terms = _folded(terms)
    by_stem = terms - _folded(verbatim) if verbatim else terms
    if not text.isascii():
        return _spans_any_script(text, analyzer, terms, by_stem)
    # An ASCII token is a run of letters and digits (tokenize's byte table): each is
    # judged as it comes, its stem from the analyzer's cache, so no pattern is built for
    # a snippet (compiling one per snippet was ~0.2 ms of a new query's search).
    stem, spans, compounds = analyzer.stem, [], analyzer.language in COMPOUNDING
    for m in _ASCII_TOKEN_RE.finditer(text):
        word = m.group().lower()
        if word in terms or stem(word) in by_stem or compounds and not by_stem.isdisjoint(_part_stems(word, analyzer)):
            spans.append([m.start(), m.end()])
    return spans


def _part_stems(word: str, analyzer: Analyzer) -> list[str]:
    """The folded stems of the parts of `word` (lowercase) in a language of compounds, as
    the index holds them (ingest.lexical_text): `Kündigungsfrist` is marked for `Frist`."""
    if analyzer.language not in COMPOUNDING:
        return []
    found = parts(word, INDEXING.compound_part_min, INDEXING.compound_rest_min)
    return [fold_word(analyzer.stem(part)) for part in found]


_ASCII_TOKEN_RE = re.compile(r"[A-Za-z0-9]+")
_BLANK = re.compile(r"\s+")


def _spans_any_script(text: str, analyzer: Analyzer, terms: frozenset[str], by_stem: frozenset[str]) -> list[list[int]]:
    spans: list[list[int]] = []
    for m in TOKEN_RE.finditer(text):
        if _matched(m.group(), analyzer, terms, by_stem):
            spans.append([m.start(), m.end()])
            continue
        if m.group().isascii():  # no CJK run in it
            continue
        # The token's other text and CJK runs alternate, as tokenize splits them
        # (`HSK五级` is `hsk` and `五级`): a word beside a run is judged as a word.
        at = m.start()
        for i, part in enumerate(CJK_RUN_RE.split(m.group())):
            if not i % 2:
                if part and _matched(part, analyzer, terms, by_stem):
                    spans.append([at, at + len(part)])
                at += len(part)
                continue
            # The terms are folded (ガス is held as カス, ﾃｽﾄ as テスト): so is the run,
            # whole where that keeps its length, else a piece at a time.
            folded = fold(part)
            piece = folded.__getitem__ if len(folded) == len(part) else lambda cut: fold(part[cut])
            for k in range(len(part)):
                pair = len(part) > k + 1 and piece(slice(k, k + 2)) in terms
                width = 2 if pair else 1 if piece(slice(k, k + 1)) in terms else 0  # a bigram, or a word of one
                if width:
                    start = at + k
                    if spans and spans[-1][1] >= start:
                        spans[-1][1] = max(spans[-1][1], start + width)
                    else:
                        spans.append([start, start + width])
            at += len(part)
    return spans


def _matched(token: str, analyzer: Analyzer, terms: frozenset[str], by_stem: frozenset[str]) -> bool:
    """Whether a word (its lowercase form, or its stem among `by_stem`, either without
    accents) is a term."""
    word = token.lower()
    stem = analyzer.stem(word)
    return (
        word in terms
        or stem in by_stem
        or fold_word(word) in terms
        or fold_word(stem) in by_stem
        or not by_stem.isdisjoint(_part_stems(word, analyzer))
    )


class _LineSource(Protocol):
    """A text's lines by index: a list of them, or _Lines."""

    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> str: ...


class _Lines:
    """A text's lines, cut out only when asked for: a big document is not split whole."""

    def __init__(self, text: str, starts: np.ndarray) -> None:
        self.text = text
        self.starts = starts  # offset of each line's first character

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i: int) -> str:
        end = int(self.starts[i + 1]) - 1 if i + 1 < len(self.starts) else len(self.text)
        return self.text[int(self.starts[i]) : end]


def _line_starts(codes: np.ndarray) -> np.ndarray:
    return np.concatenate((np.zeros(1, np.int64), (codes == 10).nonzero()[0] + 1))


def _occurrences(codes: np.ndarray, probe: str) -> np.ndarray:
    """Where `probe` starts in the text of `codes` (overlapping occurrences included):
    the places of its first letter, kept where each next letter follows (comparing the
    whole text once per letter took twice as long: `pag` in mm/memory.c, 240 → 120 µs)."""
    wanted = [ord(c) for c in probe]
    n = len(codes) - len(wanted) + 1
    if n <= 0 or (codes.dtype == np.uint8 and max(wanted) > 127):
        return np.zeros(0, np.int64)
    at: np.ndarray = (codes[:n] == wanted[0]).nonzero()[0]
    for k, c in enumerate(wanted[1:], 1):
        at = at[codes[at + k] == c]
    return at


def _extended(codes: np.ndarray, at: np.ndarray, have: int, probe: str) -> np.ndarray:
    """The places among `at` (where `probe`'s first `have` letters start) where the
    whole of `probe` does."""
    at = at[at + len(probe) <= len(codes)]
    rest = [ord(c) for c in probe[have:]]
    if not rest or not len(at):
        return at
    if codes.dtype == np.uint8 and max(rest) > 127:
        return np.zeros(0, np.int64)
    following = codes[at[:, None] + np.arange(have, len(probe))]  # each place's next letters, a row each
    whole: np.ndarray = at[(following == rest).all(axis=1)]
    return whole


def best_snippets(
    pieces: Iterable[str],
    body_line: int,
    bits: TermBits,
    n: int = 1,
    head: Callable[[int], str | None] | None = None,
    matched: bool = True,
) -> list[Snippet]:
    """Up to `n` non-overlapping snippets, best first (more distinct terms, then earlier),
    from the first of the text's `pieces` (documents.pieces) that holds a matching line:
    as search engines bound the text they highlight, a long document's snippets come
    from its first SNIPPET_PIECE_BYTES when a line there matches, and its later pieces
    are read (and decompressed) only when none does, or when none there holds every
    phrase of the query as typed (a 24 MB register header's identifier is at its line
    222,891, its words apart in many lines before). A document without a matching line
    gets its first non-empty line. `bits`: the query's terms and phrases (TermBits, in
    the document's language); a line holding a phrase counts one more (TermBits.line).
    `head(least)`: the text's first lines if it has at least `least` bytes
    (documents.head), looked at first when the text is long for the query's terms
    (SNIPPET_LOOK_PER_TERM bytes a term): when a line there may hold every term, and
    those lines give every snippet asked for holding them all, these are the text's (the
    best lines, then the earliest), and no piece is read. `matched`: the text holds a term
    in some form (it matched them), so where no line shows a term's first letters, its
    words are read one by one for a stem that does not start as its word does (_read);
    not so for terms it may lack (those of a query beside its title's words: a search of
    unrelated words read every line of most of its hits, finding nothing)."""
    analyzer, terms = bits.analyzer, bits.terms
    if head is not None and terms:
        opening = head(SNIPPET_LOOK_PER_TERM * min(bits.ceiling, SNIPPET_LOOK_TERMS))
        out = _look(opening, max(body_line - 1, 0), bits, n) if opening is not None else []
        if out:
            return [s._replace(matches=match_spans(s.text, analyzer, bits.marked, bits.verbatim)) for s in out]
    return [
        s._replace(matches=match_spans(s.text, analyzer, bits.marked, bits.verbatim))
        for s in _read(pieces, body_line, bits, n, matched)
    ]


def _read(pieces: Iterable[str], body_line: int, bits: TermBits, n: int, matched: bool = True) -> list[Snippet]:
    """best_snippets from the text's pieces (their matches not yet found). Past the first
    piece, one where no line can count is passed over by scans in C: for a phrase the
    snippets lack, for any term before there is a snippet (a word holds its stem, but
    for one that does not start as it does, which only `unread` finds)."""
    first: list[Snippet] = []  # the body's first non-empty line, if no line matches
    found: list[Snippet] = []  # the snippets of the first piece with the most phrases on their first line
    typed = 0  # those phrases' bits
    unread: list[tuple[str, int]] = []  # the pieces, and the lines before each, while none has a term's letters
    before = 0  # lines in the pieces before this one
    for text in pieces:
        start = max(body_line - 1 - before, 0)
        lower = _lowered(text)
        passed = (
            not any(_standalone(lower, p.text, p.open) for p in bits.phrases if p.bit and not p.bit & typed)
            if found
            else bool(first) and not any(term in lower for term in bits.bit)
        )
        lines, out = (None, []) if passed else _matching(text, lower, start, bits, n)
        if out and lines is not None:
            held = _held(lines[out[0].line - 1], bits) & bits.typed if bits.typed else 0
            if not found or held.bit_count() > typed.bit_count():
                found, typed, unread = [s._replace(line=s.line + before) for s in out], held, []
            if typed == bits.typed:
                break
        elif not found:
            unread.append((text, before))
            if not first and lines is not None:
                at = next((i for i in range(start, len(lines)) if lines[i].strip()), -1)
                if at >= 0:
                    first = [s._replace(line=s.line + before) for s in _pick(lines, [(0, 0, at, 0)], n, bits)[0]]
            if first and not bits.terms:  # no later piece can match
                break
        before += text.count("\n")
    searched = unread if matched and bits.terms and not found else []
    for text, before in searched:  # a stem that does not start as its word does
        found = [s._replace(line=s.line + before) for s in _every_line(text, max(body_line - 1 - before, 0), bits, n)]
        if found:
            break
    return found or first


def _look(head: str, start: int, bits: TermBits, n: int) -> list[Snippet]:
    """The snippets of a text whose first lines are `head`, if those lines decide them
    (every one holds all the terms); else none. Where no line may hold them all (by
    its bound), it costs the bounds alone."""
    lower = _lowered(head)
    lines, order, bounds = _bounded(head, start, bits, lower)
    if not bounds or bounds[0] < bits.ceiling:
        return []
    out = _by_bound(lines, order, bounds, bits, n, lower)
    return out if len(out) == n and all(_whole(s, lines, bits) for s in out) else []


def _matching(text: str, lower: str, start: int, bits: TermBits, n: int) -> tuple[_LineSource, list[Snippet]]:
    """The text's lines and the snippets (their matches not yet found) of its best lines
    from line index `start` on that hold a term's first letters, if any does."""
    lines, order, bounds = _bounded(text, start, bits, lower)
    if not bits.terms:
        return lines, []
    return lines, _by_bound(lines, order, bounds, bits, n, lower)


def _every_line(text: str, start: int, bits: TermBits, n: int) -> list[Snippet]:
    """The snippets of the text's best lines from line index `start` on, each line's
    words read: for a stem that does not start as its word does ("dying" → "die"), which
    no line's letters show. Only where no piece of the text has a term's first letters:
    per piece, it took 0.7 s of a search whose word is at a 24 MB header's end."""
    every = text.split("\n")
    scored: list[_Scored] = []
    _count(every, range(start, len(every)), bits, scored)
    return _pick(every, scored, n, bits)[0]


def _whole(snippet: Snippet, lines: _LineSource, bits: TermBits) -> bool:
    """Whether `snippet`, found in a text's first lines, is as the whole text gives it:
    its line holds every term, and its window ends before those lines do."""
    i = snippet.line - 1
    if i + SNIPPET_MAX_LINES > len(lines):
        return False
    return -bits.score(_held(lines[i], bits))[0] == bits.ceiling


def _held(line: str, bits: TermBits) -> int:
    """The bits of the terms and phrases `line` holds."""
    (tokens,) = line_tokens([line])
    return bits.line(line, tokens)


def _bounded(
    text: str, start: int, bits: TermBits, lower: str | None = None
) -> tuple[_LineSource, list[int], list[int]]:
    """The text's lines, and those from `start` on that may hold a term, best bound
    first, with their bounds (by line tests for a small text, by arrays for a big one);
    `lower`: the text lowercased, when it is at hand."""
    lower = _lowered(text) if lower is None else lower  # may change lengths (İ → i̇), never the line breaks
    if len(text) <= SNIPPET_SMALL_TEXT:
        return text.split("\n"), *_small_bounds(lower, start, bits.probes, bits.ceiling, bits.per_word, bits.apart)
    low_codes = char_codes(lower)
    low_starts = _line_starts(low_codes)
    starts = low_starts if len(lower) == len(text) else _line_starts(char_codes(text))
    return _Lines(text, starts), *_big_bounds(
        low_codes, low_starts, start, bits.probes, bits.ceiling, bits.per_word, bits.apart
    )


def _probes(leads: Iterable[tuple[str, int]]) -> Counter[str]:
    """Each probe (TermBits.leads: a term's first three letters, a phrase as typed), with
    how many distinct terms (by their bits: a group's are one) a line holding it may hold."""
    found: dict[str, set[int]] = {}
    for probe, b in leads:
        found.setdefault(probe, set()).add(b)
    return Counter({probe: len(bits) for probe, bits in found.items()})


_NOTHING_APART: Mapping[str, bool] = {}


def _roots(probes: Counter[str]) -> dict[str, str]:
    """The probes that start with a shorter one, each with the shortest it starts with:
    a term of one or two letters ("un") is found wherever the longer probes it starts
    ("uns", "unl") are, so a line's words holding those are at most as many as its
    occurrences of it. Usually empty."""
    short = sorted((q for q in probes if len(q) < 3), key=len)
    if not short:
        return {}
    return {p: r for p in probes if (r := next((q for q in short if p.startswith(q)), p)) != p}


def _small_bounds(
    lower: str,
    start: int,
    probes: Counter[str],
    ceiling: int,
    per_word: int,
    apart: Mapping[str, bool] = _NOTHING_APART,
) -> tuple[list[int], list[int]]:
    """The lines from `start` on that hold a term's first three letters, best bound first
    (then in order), and their bounds: found by `str.find` over the lowercased text, a
    line's number by counting the line breaks before it (cheaper than arrays for a small
    text). No bound is above `ceiling`, the distinct terms there are (a prefix's words
    one); an occurrence of a probe is at most `per_word` of them. A probe of `apart` (a
    phrase, with whether it is open) counts only where it is not a piece of a longer word."""
    root = _roots(probes)
    families = set(root.values())
    bound: dict[int, int] = {}
    credit: dict[str, dict[int, int]] = {}  # a family's root → line → its probes' credit there
    caps: dict[str, dict[int, int]] = {}  # a family's root → line → per_word per occurrence of it
    for probe, weight in probes.items():
        r = root.get(probe, probe)
        into = credit.setdefault(r, {}) if r in families else bound
        is_root = probe in families
        counting = weight > per_word or is_root  # one word is not all the terms that start so
        alone, open_end = probe in apart, apart.get(probe, False)
        pos = _find_apart(lower, probe, 0, open_end) if alone else lower.find(probe)
        line, counted = 0, 0  # the line `counted` is on
        while pos >= 0:
            line += lower.count("\n", counted, pos)
            counted = pos
            end = lower.find("\n", pos)  # the rest of this line is credited now
            if counting:
                most = per_word * lower.count(probe, pos, len(lower) if end < 0 else end)
                into[line] = into.get(line, 0) + min(weight, most)
                if is_root:
                    caps.setdefault(probe, {})[line] = most
            else:
                into[line] = into.get(line, 0) + weight
            if end < 0:
                break
            line += 1
            counted = end + 1
            pos = _find_apart(lower, probe, counted, open_end) if alone else lower.find(probe, counted)
    for r, lines in credit.items():
        for i, c in lines.items():  # a line holding a longer probe holds its root too
            bound[i] = bound.get(i, 0) + min(c, caps[r][i])
    found = sorted((-min(b, ceiling), i) for i, b in bound.items() if i >= start)
    return [i for _, i in found], [-b for b, _ in found]


def _big_bounds(
    low_codes: np.ndarray,
    low_starts: np.ndarray,
    start: int,
    probes: Counter[str],
    ceiling: int,
    per_word: int,
    apart: Mapping[str, bool] = _NOTHING_APART,
) -> tuple[list[int], list[int]]:
    """As _small_bounds, by array compares over the whole text (`low_codes`, the
    lowercased text's characters), so a big document costs little more than a small one."""
    root = _roots(probes)
    families = set(root.values())
    bound = np.zeros(len(low_starts), dtype=np.int32)
    credit: dict[str, np.ndarray] = {}  # a family's root → per line, its probes' credit
    caps: dict[str, np.ndarray] = {}  # a family's root → per line, per_word per occurrence of it
    root_at: dict[str, np.ndarray] = {}  # a family root's occurrences
    seen: dict[str, np.ndarray] = {}  # a probe's occurrences, for a phrase that starts so
    for probe in sorted(probes, key=len):  # a family's root before its longer probes
        weight = probes[probe]
        r = root.get(probe, probe)
        # A longer probe is looked for only where its root is, a phrase where its first letters are.
        if r != probe:
            at = _extended(low_codes, root_at[r], len(r), probe)
        elif len(probe) > 3:
            start_at = seen.get(probe[:3])
            at = _extended(low_codes, _occurrences(low_codes, probe[:3]) if start_at is None else start_at, 3, probe)
        else:
            at = seen[probe] = _occurrences(low_codes, probe)
        if r in families and r == probe:
            root_at[r] = at
        if probe in apart:
            at = at[_apart(low_codes, at, probe, apart[probe])]
        if not len(at):
            continue
        rows = low_starts.searchsorted(at, side="right") - 1
        if r not in families and weight <= per_word:
            # A line holding the probe twice is credited once: `+=` through an index
            # array adds once per distinct index.
            bound[rows] += weight
            continue
        most = np.bincount(rows, minlength=len(bound)) * per_word  # the terms its occurrences can be
        c = np.minimum(most, weight)  # as many words as it occurs in a line, at most
        if r not in families:
            bound += c.astype(np.int32)
            continue
        credit[r] = credit[r] + c if r in credit else c
        if probe == r:
            caps[r] = most
    for r, c in credit.items():  # a line holding a longer probe holds its root too
        bound += np.minimum(c, caps[r]).astype(np.int32)
    bound[:start] = 0
    np.minimum(bound, ceiling, out=bound)
    found = bound.nonzero()[0]
    order = found[np.lexsort((found, -bound[found]))]
    return order.tolist(), bound[order].tolist()


def _by_bound(
    lines: _LineSource, order: list[int], bounds: list[int], bits: TermBits, n: int, lower: str
) -> list[Snippet]:
    """The snippets among the lines of `order`, read best bound first: a line holds at
    most as many terms as it holds their first three letters (its bound), so once the
    snippets chosen beat every unread line's bound, and its runs' most, no unread line
    can change them. Once they beat every unread line but by a run, only the lines where
    a run may be (_run_lines over `lower`, the text lowercased) are read on."""
    scored: list[_Scored] = []
    read, step = 0, n  # lines read so far, and how many more before the next check (doubling)
    narrowed = False
    while read < len(order):
        _count(lines, order[read : read + step], bits, scored)
        read += step
        step *= 2
        out, last = _pick(lines, scored, n, bits)
        if read >= len(order) or (len(out) == n and last < (-bounds[read], -bits.run_ceiling, order[read])):
            return out
        if not narrowed and len(out) == n and last < (-bounds[read], 0, order[read]):
            narrowed = True
            runs = _run_lines(lower, bits)
            if runs is not None:
                keep = [k for k in range(read, len(order)) if order[k] in runs]
                order = order[:read] + [order[k] for k in keep]
                bounds = bounds[:read] + [bounds[k] for k in keep]
                if read >= len(order):
                    return out
    return []


def _run_lines(lower: str, bits: TermBits) -> set[int] | None:
    """The lines of an ASCII text (`lower`) where a phrase's words may run (tokens
    starting with each word's terms' first letters, one character between each two), by
    a regular expression's scan; None for other text, whose tokens are not runs of ASCII
    letters and digits. A match never spans lines, so one hidden by another is on a line
    found already."""
    if not lower.isascii():
        return None
    out: set[int] = set()
    for phrase in bits.phrases:
        if not phrase.near:
            continue  # no run of it ranks a line
        words = ["(?:" + "|".join(map(re.escape, sorted(word))) + ")" for word in phrase.leads]
        line, counted = 0, 0
        for m in re.finditer("[a-z0-9]*[^a-z0-9\n]".join(words), lower):
            line += lower.count("\n", counted, m.start())
            counted = m.start()
            out.add(line)
    return out


# A scored line: (-its score, -what its runs give, its index, its bits).
_Scored = tuple[int, int, int, int]


def _count(lines: _LineSource, which: Sequence[int], bits: TermBits, scored: list[_Scored]) -> None:
    """Add each line of `which` that holds a term to `scored` (_Scored): its bits are the
    OR of its tokens' bits, a lookup each (a prefix query reads thousands of lines in a
    big header), and its phrases' (TermBits.line)."""
    texts = [lines[i] for i in which]
    look, line = bits.__getitem__, bits.line
    for i, text, tokens in zip(which, texts, line_tokens(texts)):
        found = line(text, tokens) if bits.phrases else reduce(or_, map(look, tokens), 0)
        if found:
            scored.append((*bits.score(found), i, found))


def _column(line: str, bits: TermBits, found: int) -> int:
    """Where the first word of `line` holding one of the query terms it holds (`found`,
    as _count gave their bits) starts: the words holding a term's first three letters
    are read in order until one holds it (`provisioning`, not the `process` before it,
    whose window left the word out), up to SNIPPET_COLUMN_WORDS of them; else where the
    first of them starts (a stem that does not start as its word does). The line is
    lowercased, not folded (ß → ss would move the places): a term folded from its word
    (`oeufs`) is looked for there as folded, and found only if written so."""
    lower = line.lower()
    probes = {t[:3] for t, bit in bits.bit.items() if found & bit}
    ahead = [(at, p) for p in probes if (at := lower.find(p)) >= 0]  # each probe's next place
    heapq.heapify(ahead)
    first = ahead[0][0] if ahead else 0
    for _ in range(SNIPPET_COLUMN_WORDS):
        if not ahead:
            break
        at, probe = ahead[0]
        lo, hi = at, at + len(probe)
        # The word around it, read at most a window wide each way (a blob of letters is no word).
        while lo > at - SNIPPET_MAX_CHARS and lo and lower[lo - 1].isalnum():
            lo -= 1
        while hi < at + SNIPPET_MAX_CHARS and hi < len(lower) and lower[hi].isalnum():
            hi += 1
        if any(bits[t] & found for t in tokenize(lower[lo:hi])):
            return lo
        while ahead and ahead[0][0] < hi:  # past this word, for every probe in it
            _, p = heapq.heappop(ahead)
            if (nxt := lower.find(p, hi)) >= 0:
                heapq.heappush(ahead, (nxt, p))
    return first


def _pick(
    lines: _LineSource, scored: list[_Scored], n: int, bits: TermBits
) -> tuple[list[Snippet], tuple[int, int, int]]:
    """The best `n` scored lines' snippets (their matches not yet found), never
    overlapping, and the last one's (-score, -what its runs give, line index)."""
    out: list[Snippet] = []
    last = (0, 0, -1)
    taken: list[tuple[int, int]] = []  # line ranges of the snippets so far
    for score, runs, i, found in sorted(scored):
        if any(a <= i <= b for a, b in taken):
            continue
        line = lines[i]
        text, end, offset = _window(lines, i, _column(line, bits, found) if len(line) > SNIPPET_MAX_CHARS else 0)
        if any(a <= end and i <= b for a, b in taken):
            continue
        taken.append((i, end))
        out.append(Snippet(line=i + 1, text=text, matches=[], offset=offset))
        last = (score, runs, i)
        if len(out) >= n:
            break
    return out, last


def _window(lines: _LineSource, i: int, col: int) -> tuple[str, int, int]:
    """The snippet text starting at line `i`, the index of its last line, and where a
    window cut from a long line starts in it (Snippet.offset): between words where
    blanks part them before and after the match (`#öffentlic` was cut in one)."""
    first = lines[i]
    if len(first) > SNIPPET_MAX_CHARS:
        lo = max(0, min(col - SNIPPET_MAX_CHARS // 3, len(first) - SNIPPET_MAX_CHARS))
        hi = lo + SNIPPET_MAX_CHARS
        if lo and not first[lo - 1].isspace() and (m := _BLANK.search(first, lo, col)) is not None:
            lo = m.end()
        if hi < len(first) and not first[hi].isspace():
            end = max(first.rfind(" ", col, hi), first.rfind("\t", col, hi))
            hi = end if end > col else hi
        text = first[lo:hi]
        cut = "…" + text if lo else text
        return cut + ("…" if hi < len(first) else ""), i, _utf8_len(first[:lo])
    out = [first]
    size = len(first)
    for j in range(i + 1, min(i + SNIPPET_MAX_LINES, len(lines))):
        nxt = lines[j]
        if size + len(nxt) + 1 > SNIPPET_MAX_CHARS:
            break
        out.append(nxt)
        size += len(nxt) + 1
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out), i + max(len(out), 1) - 1, 0


def _utf8_len(text: str) -> int:
    """The UTF-8 bytes of `text` (a lone surrogate as three, as canonical text encodes it)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
