"""Snippets: the bounded line search picks what reading every line would pick."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gnod.search import snippet
from gnod.search.constants import SNIPPET_LOOK_PER_TERM
from gnod.search.snippet import Phrase, TermBits, _window, best_snippets, match_spans
from gnod.store import documents
from gnod.text.analyzer import TOKEN_RE, Analyzer, AnalyzerSet, char_codes, fold, tokenize


def snippets(pieces, body_line, analyzer, terms, n=1, groups=(), head=None, phrases=()):
    """best_snippets for one document: the query's TermBits made for it alone."""
    return best_snippets(pieces, body_line, TermBits(analyzer, terms, groups, phrases), n, head)


WORDS = [
    "network",
    "networks",
    "driver",
    "drivers",
    "reset",
    "resetting",
    "the",
    "memory",
    "memories",
    "barrier",
    "İstanbul",
    "İSTANBUL",
    "東京タワー",
    "x",
    "ab",
    "kmalloc",
    "GFP_KERNEL",
    "—",
    "ß",
    "naïve",
    "naive",
    "Gŭnther",
    "Günther",
]


def line_terms(line: str, analyzer: Analyzer, terms: frozenset[str]) -> frozenset[str]:
    """The definition of a line's terms: its tokens' own forms and stems among `terms`,
    all with their accents off, as the index holds them."""
    tokens = tokenize(line)
    forms = {fold(t) for t in [*tokens, *analyzer.stems(tokens)]}
    return frozenset(fold(t) for t in terms) & forms


def every_line(
    markdown: str,
    body_line: int,
    analyzer: Analyzer,
    terms: frozenset[str],
    n: int,
    groups: tuple = (),
    phrases: tuple = (),
) -> list:
    """The definition: score every line (a group's terms, a prefix's words, count as one;
    a phrase counts one more where the line holds its words and its text as typed, not
    inside a longer word), and of lines scoring the same, rank first those holding more
    of their phrases' runs (words following each other, a character between each two;
    one more where such a run is not joined by `_` to a longer name; both where the
    phrase is as typed); take the best non-overlapping ones."""
    terms = frozenset(map(fold, terms))
    group_of = {t: k for k, g in enumerate(groups) for t in g if t in terms}
    lines = markdown.split("\n")
    scored = []
    for i in range(max(body_line - 1, 0), len(lines)):
        hit = line_terms(lines[i], analyzer, terms) if lines[i] else set()
        if hit:
            lower = fold(lines[i].lower())
            keys = {group_of.get(h, h) for h in hit}
            runs = 0
            for words, text, open_end, with_runs in phrases:
                if all(hit & w for w in words):
                    typed = typed_in(lower, text, open_end)
                    keys |= {("phrase", text)} if typed else set()
                    if with_runs:
                        runs += 2 if typed else len(run_in(lower, analyzer, words))
            near = frozenset(t for t in terms if group_of.get(t, t) in keys)  # a group's every term marks it
            # A long line's window: around its first word holding one of them (else its first letters).
            words = (m.start() for m in TOKEN_RE.finditer(lines[i].lower()) if line_terms(m.group(), analyzer, near))
            col = next(words, min((lower.find(t[:3]) for t in near if lower.find(t[:3]) >= 0), default=0))
            scored.append((-len(keys), -runs, i, col))
    out, taken = [], []
    for _, _, i, col in sorted(scored):
        text, last, _ = _window(lines, i, col)
        if any(a <= last and i <= b for a, b in taken):
            continue
        taken.append((i, last))
        out.append((i + 1, text))
        if len(out) >= n:
            break
    return out


def typed_in(line: str, text: str, open_end: bool = False) -> bool:
    """`text` is in `line` as typed, not as a piece of a longer word (`open_end`: as the
    start of a word)."""
    before = r"(?<!\w)" if re.match(r"\w", text[0]) else ""
    after = r"(?!\w)" if re.match(r"\w", text[-1]) and not open_end else ""
    return re.search(before + re.escape(text) + after, line) is not None


def run_in(line: str, analyzer: Analyzer, words: tuple) -> set[str]:
    """ "near" where an ASCII line's tokens hold `words` (each a set of forms) in a run,
    one character between each two, and "whole" too where such a run has no `_` just
    before or after it."""
    tokens = list(re.finditer(r"[a-z0-9]+", line))
    out = set()
    for i in range(len(tokens) - len(words) + 1):
        run = tokens[i : i + len(words)]
        close = all(b.start() - a.end() == 1 for a, b in zip(run, run[1:]))
        if close and all({m.group(), analyzer.stem(m.group())} & w for m, w in zip(run, words)):
            out.add("near")
            if line[run[0].start() - 1 : run[0].start()] != "_" and line[run[-1].end() : run[-1].end() + 1] != "_":
                out.add("whole")
    return out


def first_lines(text: str, at: int) -> str:
    """The text's lines through the one holding character `at` (all of them past its end)."""
    cut = text.find("\n", at)
    return text if cut < 0 else text[:cut]


@pytest.mark.parametrize("look", [False, True], ids=["whole", "first-look"])
@pytest.mark.parametrize("small", [True, False], ids=["line-tests", "arrays"])
@pytest.mark.parametrize("seed", range(60))
def test_bounded_search_picks_what_reading_every_line_picks(seed, small, look, monkeypatch):
    """first-look: the text's first lines (up to a random length) are given to look at first."""
    monkeypatch.setattr(snippet, "SNIPPET_SMALL_TEXT", 10**9 if small else 0)  # every text by one way
    rng = random.Random(seed)
    analyzer = Analyzer("english")
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(1, 400))]
    markdown = "\n".join(lines)
    at = rng.randint(0, len(markdown))
    head = (lambda least: first_lines(markdown, at)) if look else None
    query = rng.sample(WORDS, rng.randint(1, 4))
    terms = frozenset(t for w in query for t in (w.lower(), analyzer.stem(w.lower())))
    n = rng.randint(1, 3)
    body_line = rng.randint(1, 3)
    expected = every_line(markdown, body_line, analyzer, terms, n)
    got = [(s.line, s.text) for s in snippets([markdown], body_line, analyzer, terms, n, head=head)]
    if expected:
        assert got == expected
    else:  # no line holds a term: the first non-empty line of the body
        first = next((i for i, line in enumerate(lines) if i >= body_line - 1 and line.strip()), None)
        assert [s[0] for s in got] == ([first + 1] if first is not None else [])


@pytest.mark.parametrize("look", [False, True], ids=["whole", "first-look"])
@pytest.mark.parametrize("small", [True, False], ids=["line-tests", "arrays"])
@pytest.mark.parametrize("seed", range(40))
def test_a_line_holding_a_phrase_as_typed_is_picked_as_reading_every_line_picks(seed, small, look, monkeypatch):
    """Phrases (an identifier, a quoted run of words) among lines holding their words
    joined otherwise, apart, in another order, inside longer names, or in a run joined
    to a longer name."""
    monkeypatch.setattr(snippet, "SNIPPET_SMALL_TEXT", 10**9 if small else 0)
    rng = random.Random(seed)
    analyzer = Analyzer("english")
    plain = ["network", "networks", "driver", "reset", "resetting", "memory", "barrier", "usb", "register", "re"]
    query_words = rng.sample(plain, rng.randint(2, 3))
    typed = rng.choice(["_", " ", "-"]).join(query_words)
    spellings = [typed, typed.upper(), "_".join(query_words), " ".join(reversed(query_words)), f"x{typed}x"]
    spellings += [
        f"{query_words[0]}_device_{'_'.join(query_words[1:])}",
        f"{typed}_debugfs",
        f"pre_{' '.join(query_words)}",
    ]
    spellings += [" *".join(query_words)]
    vocabulary = plain + spellings
    lines = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(1, 300))]
    markdown = "\n".join(lines)
    at = rng.randint(0, len(markdown))
    head = (lambda least: first_lines(markdown, at)) if look else None
    terms = frozenset(t for w in query_words + rng.sample(plain, 1) for t in (w, analyzer.stem(w)))
    if rng.random() < 0.5:  # a term of two letters that the phrase starts with (a family's root)
        terms |= {query_words[0][:2]}
    open_end = rng.random() < 0.3  # as a picker sends it: the last word typed in part
    text = typed[: len(typed) - rng.randint(0, len(query_words[-1]) - 1)] if open_end else typed
    phrases = (Phrase(tuple(frozenset({w, analyzer.stem(w)}) for w in query_words), text, open_end),)
    n = rng.randint(1, 3)
    expected = every_line(markdown, 1, analyzer, terms, n, phrases=phrases)
    got = [(s.line, s.text) for s in snippets([markdown], 1, analyzer, terms, n, head=head, phrases=phrases)]
    if expected:
        assert got == expected


@pytest.mark.parametrize("seed", range(20))
def test_one_query_s_term_bits_serve_its_documents_in_turn_as_their_own_would(seed):
    """A search makes the query's TermBits once per language and reads each of its hits
    with them: what the first documents taught them (each token's bits) changes nothing
    in the snippets of the next."""
    rng = random.Random(seed)
    analyzer = Analyzer("english")
    query = rng.sample(WORDS, rng.randint(1, 3))
    terms = frozenset(t for w in query for t in (w.lower(), analyzer.stem(w.lower())))
    phrases = (
        Phrase(tuple(frozenset({w.lower(), analyzer.stem(w.lower())}) for w in query), " ".join(query).lower(), False),
    )
    shared = TermBits(analyzer, terms, (), phrases)
    for _ in range(8):
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 10))) for _ in range(rng.randint(1, 200))]
        markdown = "\n".join(lines)
        n = rng.randint(1, 3)
        assert best_snippets([markdown], 1, shared, n) == snippets([markdown], 1, analyzer, terms, n, phrases=phrases)


@pytest.mark.parametrize("small", [True, False], ids=["line-tests", "arrays"])
def test_a_word_typed_with_accents_is_found_and_marked_where_the_text_has_none_and_back(small, monkeypatch):
    """The index holds words with their accents off, so `naïve` matches a file saying
    "naive": its snippet is that line, the word marked (it was the first line, unmarked,
    where an editor's jump landed); `Günther` finds "Gŭnther" the same way."""
    monkeypatch.setattr(snippet, "SNIPPET_SMALL_TEXT", 10**9 if small else 0)
    analyzer = Analyzer("english")
    markdown = (
        "// SPDX-License-Identifier: GPL-2.0\n" + "filler line\n" * 20 + "Use the naive mapping.\nGŭnther wrote it.\n"
    )
    for typed, line, word in (("naïve", 22, "naive"), ("Günther", 23, "Gŭnther")):
        terms = frozenset({typed.lower(), analyzer.stem(typed.lower())})
        [got] = snippets([markdown], 1, analyzer, terms)
        assert got.line == line
        [(start, end)] = got.matches
        assert got.text[start:end] == word


def test_an_identifier_s_snippet_is_a_line_holding_it_not_its_words_in_a_longer_name():
    analyzer = Analyzer("english")
    markdown = (
        "/* usb_register_device_driver - register a USB device driver */\n"
        "int usb_register_device_driver(struct usb_device_driver *drv);\n"
        + "filler line\n" * 50
        + "int usb_register_driver(struct usb_driver *new_driver);\n"
    )
    words = ("usb", "register", "driver")
    terms = frozenset(t for w in words for t in (w, analyzer.stem(w)))
    phrase = Phrase(tuple(frozenset({w, analyzer.stem(w)}) for w in words), "usb_register_driver", False)
    [without] = snippets([markdown], 1, analyzer, terms)
    [got] = snippets([markdown], 1, analyzer, terms, phrases=(phrase,))
    assert without.line == 1 and got.line == 53
    assert got.text.startswith("int usb_register_driver(")
    # Nor inside a longer name that holds it whole: the call, not a longer function's name.
    calls = (
        "void mmc_add_host_debugfs(struct mmc_host *host);\n" + "filler line\n" * 50 + "\tret = mmc_add_host(mmc);\n"
    )
    words = ("mmc", "add", "host")
    terms = frozenset(t for w in words for t in (w, analyzer.stem(w)))
    phrase = Phrase(tuple(frozenset({w, analyzer.stem(w)}) for w in words), "mmc_add_host", False)
    [got] = snippets([calls], 1, analyzer, terms, phrases=(phrase,))
    assert got.text == "\tret = mmc_add_host(mmc);"
    # The text as typed inside other words is not the phrase: its words are not there.
    pair = Phrase((frozenset({"usb"}), frozenset({"driver"})), "usb_driver", False)
    [other] = snippets(["xusb_driverx\nthe usb\n"], 1, analyzer, frozenset({"usb", "driver"}), phrases=(pair,))
    assert other.line == 2


@pytest.mark.parametrize("small", [True, False], ids=["line-tests", "arrays"])
def test_an_identifier_s_words_in_a_run_beat_its_words_apart_and_a_whole_run_beats_a_longer_name(small, monkeypatch):
    """Where no line holds the identifier as typed: `mmc_add` in `mmc_add_card(`, not the
    earlier line holding its words apart; `CONFIG_PM` at Kconfig's `config PM`, not at
    the `config PM_STD_PARTITION` before it."""
    monkeypatch.setattr(snippet, "SNIPPET_SMALL_TEXT", 10**9 if small else 0)
    analyzer = Analyzer("english")

    def snippet_of(text: str, typed: str) -> str:
        words = tuple(typed.lower().split("_"))
        terms = frozenset(t for w in words for t in (w, analyzer.stem(w)))
        phrase = Phrase(tuple(frozenset({w, analyzer.stem(w)}) for w in words), typed, False)
        [got] = snippets([text], 1, analyzer, terms, phrases=(phrase,))
        return got.text.split("\n")[0]

    bus = (
        '\tretval = add_uevent_var(env, "MMC_TYPE=%s", type);\n'
        + "\n" * 5
        + "int mmc_add_card(struct mmc_card *card)\n"
    )
    assert snippet_of(bus, "mmc_add") == "int mmc_add_card(struct mmc_card *card)"
    mutex = "struct rt_mutex *lock;\n" + "\n" * 5 + "mutex_lock_nested(lock, 0)\n"
    assert snippet_of(mutex, "mutex_lock") == "mutex_lock_nested(lock, 0)"
    kconfig = "config PM_STD_PARTITION\n\tstring\n" + "\n" * 5 + "config PM\n\tdef_bool y\n"
    assert snippet_of(kconfig, "CONFIG_PM") == "config PM"
    assert snippet_of(kconfig + "#ifdef CONFIG_PM_SLEEP\n#ifdef CONFIG_PM\n", "CONFIG_PM") == "#ifdef CONFIG_PM"


@pytest.mark.parametrize("small", [True, False], ids=["line-tests", "arrays"])
def test_an_identifier_being_typed_is_shown_where_a_name_starts_as_typed(small, monkeypatch):
    """`of_pr*`: the line where `of_property_read_u32(` is written, not the comment
    holding "of property" earlier (its words in a run, not joined to a longer name, as
    a name being typed always is); `spin_lock_ir*` where a name starts so, not inside
    `raw_spin_lock_irq`."""
    monkeypatch.setattr(snippet, "SNIPPET_SMALL_TEXT", 10**9 if small else 0)
    analyzer = Analyzer("english")

    def snippet_of(text: str, words: tuple[frozenset[str], ...], typed: str) -> str:
        terms = frozenset().union(*words)
        [got] = snippets([text], 1, analyzer, terms, phrases=(Phrase(words, typed, True),))
        return got.text.split("\n")[0]

    of = "/* @name: Name of property holding a phandle */\n" + "\n" * 5 + "\tret = of_property_read_u32(np, name);\n"
    words = (frozenset({"of"}), frozenset({"property", "propert", "prop"}))
    assert snippet_of(of, words, "of_pr") == "\tret = of_property_read_u32(np, name);"
    spin = "\traw_spin_lock_irq(&desc->lock);\n" + "\n" * 5 + "\tspin_lock_irqsave(&host->lock, flags);\n"
    words = (frozenset({"spin"}), frozenset({"lock"}), frozenset({"irq", "irqsave"}))
    assert snippet_of(spin, words, "spin_lock_ir") == "\tspin_lock_irqsave(&host->lock, flags);"


@pytest.mark.parametrize("small", [True, False], ids=["line-tests", "arrays"])
def test_a_phrase_counts_in_the_bound_of_a_line_beside_the_terms_its_first_letters_start(small, monkeypatch):
    """Where a short term ("re") makes its letters a family's root, one occurrence of them
    is bounded by the bits a word can give and the phrase starting there."""
    monkeypatch.setattr(snippet, "SNIPPET_SMALL_TEXT", 10**9 if small else 0)
    analyzer = Analyzer("english")
    terms = frozenset({"re", "resetting", "reset", "driver"})
    phrase = Phrase((frozenset({"resetting", "reset"}), frozenset({"driver"})), "resetting_driver", False)
    [got] = snippets(["resetting the driver\nresetting_driver\n"], 1, analyzer, terms, phrases=(phrase,))
    assert got.line == 2


@pytest.mark.parametrize("seed", range(40))
def test_a_text_in_pieces_is_snippeted_from_its_first_piece_with_a_matching_line(seed):
    """Each piece is searched as a text of its own, in order; the first that has a
    matching line gives the snippets, at their lines in the whole text."""
    rng = random.Random(seed)
    analyzer = Analyzer("english")
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 300))]
    markdown = "\n".join(lines) + "\n"
    pieces = list(documents.pieces(documents.pack(markdown), rng.randint(1, 2000)))
    query = rng.sample(WORDS, rng.randint(1, 3))
    terms = frozenset(t for w in query for t in (w.lower(), analyzer.stem(w.lower())))
    n = rng.randint(1, 3)
    body_line = rng.randint(1, 30)
    expected, before = [], 0
    for piece in pieces:
        expected = [(line + before, text) for line, text in every_line(piece, body_line - before, analyzer, terms, n)]
        if expected:
            break
        before += piece.count("\n")
    got = [(s.line, s.text) for s in snippets(pieces, body_line, analyzer, terms, n)]
    if expected:
        assert got == expected
    else:
        first = next((i for i, line in enumerate(lines) if i >= body_line - 1 and line.strip()), None)
        assert [s[0] for s in got] == ([first + 1] if first is not None else [])
    for line, text in got:  # a snippet is the text at its line
        assert markdown.split("\n")[line - 1].startswith(text.split("\n")[0].removesuffix("…"))


@pytest.mark.parametrize("size", [1, 7, 100, 10**6])
def test_stored_text_is_read_back_a_piece_at_a_time(size):
    """Pieces of at least `size` bytes, each ending after a line break, that make the
    text: compressed or stored as text before compression, one line or none longer."""
    text = "".join(f"línea {i} " * (i % 5) + "\n" for i in range(2000)) + "x" * 300 + "\nlast"
    got = list(documents.pieces(documents.pack(text), size))
    assert "".join(got) == text
    assert all(p.endswith("\n") and len(p.encode()) >= size for p in got[:-1])
    assert len(got) == 1 if len(text.encode()) <= size else len(got) > 1
    assert list(documents.pieces(text, size)) == [text]
    assert documents.unpack_utf8(documents.pack(text)) == documents.unpack_utf8(text) == text.encode()


def test_a_long_documents_later_pieces_are_not_read_when_its_first_matches():
    analyzer = Analyzer("english")
    first = "intro\nthe network\n" + "filler\n" * 400
    second = "the network driver reset\n" + "filler\n" * 400
    read = []

    def pieces():
        for piece in (first, second):
            read.append(piece)
            yield piece

    terms = frozenset({"network", "driver", "reset"})
    [got] = snippets(pieces(), 1, analyzer, terms)
    assert (got.line, got.text.split("\n")[0], len(read)) == (2, "the network", 1)
    read.clear()
    [got] = snippets(pieces(), 1, analyzer, frozenset())  # nothing to match: the first line
    assert (got.line, got.text.split("\n")[0], len(read)) == (1, "intro", 1)
    [got] = snippets(["intro\n" + "filler\n" * 400, second], 1, analyzer, terms)
    assert (got.line, got.text.split("\n")[0]) == (402, "the network driver reset")
    assert [got.text[a:b] for a, b in got.matches] == ["network", "driver", "reset"]


def test_a_later_piece_is_read_for_a_phrase_as_typed_that_the_first_lacks():
    """A 24 MB register header: its identifier at line 222,891, its words apart on lines
    of the first piece, whose snippet was given (line 6,348)."""
    analyzer = Analyzer("english")
    words = ("lane", "reserved", "mask")
    terms = frozenset(t for w in words for t in (w, analyzer.stem(w)))
    phrase = Phrase(tuple(frozenset({w, analyzer.stem(w)}) for w in words), "lane_reserved_mask", False)
    first = "#define LANE0_RESERVED_SPACE_MASK 0x1\n" + "#define OTHER 0x2\n" * 400
    inside = "#define PHY_LANE_RESERVED_MASK_HI 0x3\n" + "#define OTHER 0x2\n" * 400  # a piece of a longer name
    last = "#define OTHER 0x2\n" * 50 + "#define LANE_RESERVED_MASK 0x4\n"
    read = []

    def pieces(*texts):
        for piece in texts:
            read.append(piece)
            yield piece

    [got] = snippets(pieces(first, inside, last), 1, analyzer, terms, phrases=(phrase,))
    assert (got.line, got.text) == (853, "#define LANE_RESERVED_MASK 0x4") and len(read) == 3
    # Where the phrase stands apart nowhere, the first piece's snippet, every piece read.
    read.clear()
    [got] = snippets(pieces(first, inside), 1, analyzer, terms, phrases=(phrase,))
    assert got.line == 1 and len(read) == 2
    # Found in the first piece: no other is read.
    read.clear()
    [got] = snippets(pieces(last, first), 1, analyzer, terms, phrases=(phrase,))
    assert got.line == 51 and len(read) == 1


@pytest.mark.parametrize("small", [True, False], ids=["line-tests", "arrays"])
def test_the_function_words_a_query_left_out_neither_score_a_line_nor_are_marked(small, monkeypatch):
    """`how to submit a patch` searches submit and patch: its passage of
    submitting-patches.rst was a line saying "How to piss off a kernel subsystem
    maintainer" (how, to, a: three terms against the title line's two), where
    `submit patch` gave the title. The left-out words are only its phrase's words: a
    line holding the phrase as typed is still the best, and they mark nothing."""
    monkeypatch.setattr(snippet, "SNIPPET_SMALL_TEXT", 1 << 20 if small else 0)
    analyzer = Analyzer("english")
    words = ("how", "to", "submit", "a", "patch")
    terms = frozenset(t for w in words for t in (w, analyzer.stem(w)))
    quiet = frozenset({"how", "to", "a"})
    typed = Phrase(tuple(frozenset({w, analyzer.stem(w)}) for w in words), "how to submit a patch", False, runs=False)
    text = "Submitting patches: the essential guide\n\nSome filler text here.\n\nHow to piss off a maintainer, a guide to it.\n"

    def best(pieces: list[str], quiet: frozenset[str]) -> tuple[int, list[str]]:
        [got] = best_snippets(pieces, 1, TermBits(analyzer, terms, (), (typed,), frozenset(), quiet))
        return got.line, [got.text[a:b] for a, b in got.matches]

    assert best([text], frozenset())[0] == 5  # as it was: the function words counted
    assert best([text], quiet) == (1, ["Submitting", "patches"])
    as_typed = text + "\nThis is how to submit a patch by mail.\n"
    assert best([as_typed], quiet) == (7, ["submit", "patch"])


def test_the_terms_left_beside_a_title_are_none_where_only_function_words_are():
    """Where a document's title holds every word that scores (`how to submit a patch` in
    submitting-patches.rst), its lines are looked at again for the query's other words:
    left with only the function words, which score no line, there are none to look for
    (every line was read for them: a third of that search)."""
    analyzer = Analyzer("english")
    words = ("how", "to", "submit", "a", "patch", "mail")
    terms = frozenset(t for w in words for t in (w, analyzer.stem(w)))
    bits = TermBits(analyzer, terms, (), (), frozenset(), frozenset({"how", "to", "a"}))
    title = bits.held("Submitting patches")
    rest = bits.without(title)
    assert rest is not None and rest.marked == {"mail"}
    assert bits.without(title | bits.held("by mail")) is None


def test_a_word_whose_stem_does_not_start_as_it_does_is_found_after_every_piece_is_passed():
    """Each piece where no line showed a term's letters had every line read for such a
    word ("dying" → "die"): 0.7 s of a search whose word is at a 24 MB header's end. The
    pieces are read so only when no piece has a term's letters."""
    analyzer = Analyzer("english")
    assert analyzer.stem("dying") == "die"
    filler = "nothing here\n" * 300
    [got] = snippets([filler, "the star is dying\n" + filler], 1, analyzer, frozenset({"die"}))
    assert (got.line, got.text.split("\n")[0]) == (301, "the star is dying")
    [got] = snippets(["he was dying\n" + filler, "we die\n"], 1, analyzer, frozenset({"die"}))
    assert got.text == "we die"  # a piece with the term's letters first


def test_terms_the_text_may_lack_are_not_looked_for_word_by_word():
    """The query's words beside a title's (searching._passages) may be in no line of the
    text: its lines are not read word by word for a stem that does not start as its
    word does (a search of unrelated words read every line of most of its hits, for
    nothing); where the text matched the terms, they are."""
    analyzer = Analyzer("english")
    text = "# Star\n\nnothing here\nthe star is dying\n"
    bits = TermBits(analyzer, frozenset({"die"}))
    [got] = best_snippets([text], 1, bits)
    assert got.text.startswith("the star is dying") and got.matches
    [got] = best_snippets([text], 1, bits, matched=False)
    assert (got.line, got.text.split("\n")[0], got.matches) == (1, "# Star", [])


@pytest.mark.parametrize("small", [True, False], ids=["line-tests", "arrays"])
def test_a_phrase_inside_a_longer_name_adds_nothing_to_a_line_s_bound(small, monkeypatch):
    monkeypatch.setattr(snippet, "SNIPPET_SMALL_TEXT", 10**9 if small else 0)
    analyzer = Analyzer("english")
    words = ("mmc", "add", "host")
    terms = frozenset(t for w in words for t in (w, analyzer.stem(w)))
    phrase = Phrase(tuple(frozenset({w, analyzer.stem(w)}) for w in words), "mmc_add_host", False)
    text = "void mmc_add_host_debugfs(struct mmc_host *host);\n" * 30 + "\tret = mmc_add_host(mmc);\n"
    [got] = snippets([text], 1, analyzer, terms, phrases=(phrase,))
    assert (got.line, got.text) == (31, "\tret = mmc_add_host(mmc);")
    bits = snippet.TermBits(analyzer, terms, (), (phrase,))
    _, order, bounds = snippet._bounded(text, 0, bits)
    assert order[0] == 30 and bounds[0] == bits.ceiling and bounds[1] < bits.ceiling


def test_a_long_text_whose_first_lines_hold_every_term_is_read_no_further():
    analyzer = Analyzer("english")
    terms = frozenset({"network", "driver"})
    head = "intro\nthe network driver\n" + "filler\n" * 10
    text = head + "network driver reset\n" + "filler\n" * 20000
    read = []

    def pieces():
        read.append(text)
        yield text

    asked = []

    def first(least: int) -> str:
        asked.append(least)
        return head.removesuffix("\n")

    [got] = snippets(pieces(), 1, analyzer, terms, head=first)
    assert (got.line, got.text.split("\n")[0], len(read)) == (2, "the network driver", 0)
    assert [got.text[a:b] for a, b in got.matches] == ["network", "driver"]
    # No line there holds all three terms: the text is read for a line with them.
    [got] = snippets(pieces(), 1, analyzer, terms | {"reset"}, head=first)
    assert (got.line, got.text.split("\n")[0], len(read)) == (13, "network driver reset", 1)
    # The more terms, the longer a text must be to be looked at first.
    assert asked == [2 * SNIPPET_LOOK_PER_TERM, 3 * SNIPPET_LOOK_PER_TERM]


@pytest.mark.parametrize("size", [1, 19, 20, 100, 5000])
def test_a_stored_texts_head_is_its_first_lines_read_alone(size):
    text = "".join(f"line {i} of the text\n" for i in range(2000))
    stored = documents.pack(text)
    head = documents.head(stored, size, len(text))
    assert head is not None and text.startswith(head + "\n")
    assert len(head.encode()) + 1 >= size > len(head.rpartition("\n")[0].encode())  # through the size-th byte's line
    assert documents.head(stored, size, len(text) + 1) is None  # a shorter text than asked for
    assert documents.head(text, size, 0) is None  # stored before compression: whole already


# A prefix query's expansions: many terms share their first letters, and a short one
# ("un") starts the others.
PREFIXED = ["un", "unsigned", "unsign", "unset", "unlock", "unlocked", "unlikely", "unused", "under", "fun", "nun"]


@pytest.mark.parametrize("small", [True, False], ids=["line-tests", "arrays"])
@pytest.mark.parametrize("grouped", [False, True], ids=["terms", "a-prefix-s-words-as-one"])
@pytest.mark.parametrize("seed", range(40))
def test_terms_sharing_their_first_letters_pick_what_reading_every_line_picks(seed, grouped, small, monkeypatch):
    """Grouped: the terms are a prefix's words (and stems), counted once, beside words
    typed; a prefix alone is in every line's reach, so the first look mostly decides."""
    monkeypatch.setattr(snippet, "SNIPPET_SMALL_TEXT", 10**9 if small else 0)
    rng = random.Random(seed)
    analyzer = Analyzer("english")
    vocabulary = PREFIXED + WORDS if grouped else PREFIXED
    lines = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(1, 300))]
    markdown = "\n".join(lines)
    at = rng.randint(0, len(markdown))
    head = lambda least: first_lines(markdown, at)  # noqa: E731
    prefixed = frozenset(t for w in rng.sample(PREFIXED, rng.randint(3, 9)) for t in (w, analyzer.stem(w)))
    typed = rng.sample(WORDS, rng.randint(0, 2)) if grouped else []
    words = frozenset(t for w in typed for t in (w.lower(), analyzer.stem(w.lower())))
    terms, groups = prefixed | words, ((prefixed - words,) if grouped else ())
    n = rng.randint(1, 3)
    expected = every_line(markdown, 1, analyzer, terms, n, groups)
    assert [(s.line, s.text) for s in snippets([markdown], 1, analyzer, terms, n, groups, head)] == expected


def test_a_line_with_two_query_words_beats_one_with_many_words_of_a_prefix():
    markdown = "\n".join(
        ["devm_kzalloc(dev, size, flags); device_add(dev);", "p = kmalloc(size, GFP_KERNEL); dev = p;"]
    )
    analyzer = Analyzer("english")
    prefix = frozenset({"devm", "dev", "device", "devic"})
    terms = prefix | {"kmalloc"}
    [got] = snippets([markdown], 1, analyzer, terms, 1, (prefix,))
    assert got.line == 2
    [alone] = snippets([markdown], 1, analyzer, prefix, 1, (prefix,))  # the prefix alone: its first line
    assert alone.line == 1


@pytest.mark.parametrize("small", [True, False], ids=["line-tests", "arrays"])
def test_a_line_is_bounded_by_the_words_that_can_hold_its_terms(small):
    """What keeps a prefix query's snippets to a few lines read: one word is credited two
    terms at most, however many start with its letters, and a one-letter term's letters
    found alone credit that term only."""
    text = "\n".join(["unsigned int x;", "a data line", "and unlock unset", "nothing here"])
    terms = frozenset({"un", "unsigned", "unsign", "unset", "unlock", "a", "and"})
    probes = snippet._probes(snippet.TermBits(Analyzer("english"), terms).leads())
    per_word = snippet.TERMS_PER_WORD
    if small:
        order, bounds = snippet._small_bounds(text.lower(), 0, probes, len(terms), per_word)
    else:
        codes = char_codes(text.lower())
        order, bounds = snippet._big_bounds(codes, snippet._line_starts(codes), 0, probes, len(terms), per_word)
    assert dict(zip(order, bounds)) == {0: 2, 1: 1, 2: 6}


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="aab\nİı東", max_size=60),
    st.text(alphabet="abİı東", min_size=1, max_size=4),
)
def test_a_probe_is_found_wherever_it_starts_in_the_text(text, probe):
    """The array search for a probe's places gives every place `str.find` gives,
    overlapping ones and one at the text's very end included, in ASCII and other text."""
    codes = char_codes(text)
    at, found = text.find(probe), []
    while at >= 0:
        found.append(at)
        at = text.find(probe, at + 1)
    assert snippet._occurrences(codes, probe).tolist() == found


@pytest.mark.parametrize("small", [True, False], ids=["line-tests", "arrays"])
def test_a_long_line_is_cut_around_its_first_match(small, monkeypatch):
    monkeypatch.setattr(snippet, "SNIPPET_SMALL_TEXT", 10**9 if small else 0)
    analyzer = Analyzer("english")
    long_line = "fïller " * 200 + "the network driver reset path " + "tail " * 200
    markdown = f"short network line\n{long_line}\nend"
    [got] = snippets([markdown], 1, analyzer, frozenset({"network", "driver", "reset"}))
    assert got.line == 2
    assert got.text.startswith("…") and got.text.endswith("…")
    assert "network driver reset" in got.text
    # Where the window starts in the line, in bytes (each ï is two).
    assert long_line.encode()[got.offset :].decode().startswith(got.text[1:-1])
    assert (got.line, got.text) == every_line(markdown, 1, analyzer, frozenset({"network", "driver", "reset"}), 1)[0]


def test_a_big_document_gives_the_line_holding_most_terms():
    filler = "\n".join(f"static int network_{i}(void) {{ return reset(driver); }}" for i in range(20000))
    markdown = f"{filler}\n/* the network driver reset path */\n{filler}"
    analyzer = Analyzer("english")
    terms = frozenset({"network", "driver", "reset", "path"})
    [snippet] = snippets([markdown], 1, analyzer, terms)
    assert snippet.line == 20001
    assert snippet.text.startswith("/* the network driver reset path */")
    assert [snippet.text[a:b] for a, b in snippet.matches][:4] == ["network", "driver", "reset", "path"]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="abcDEF xyz_-.0129\n", max_size=200),
    st.frozensets(st.text(alphabet="abcdefxyz019", min_size=1, max_size=4), max_size=6),
)
def test_ascii_match_spans_are_those_of_the_word_by_word_reading(text, terms):
    analyzer = AnalyzerSet().get("english")
    assert match_spans(text, analyzer, terms) == snippet._spans_any_script(text, analyzer, terms, terms)


def test_match_spans_find_stems_and_exact_forms_in_any_case():
    analyzer = AnalyzerSet().get("english")
    text = "Running runners RUN; run_time x-run rerun"
    assert [text[a:b] for a, b in match_spans(text, analyzer, frozenset({"run"}))] == [
        "Running",
        "RUN",
        "run",
        "run",
    ]


def test_a_long_lines_window_holds_its_matching_word_not_an_earlier_one_sharing_its_letters():
    """`provisioning` at character 385 of a paragraph: the window was cut around the
    `pro` of `process` (character 16), and the word was left out of the snippet (no
    match marked; editors and --vimgrep went to column 1)."""
    analyzer = Analyzer("english")
    line = (
        "The deployment process starts when the release manager tags the build and the pipeline promotes "
        "the artifacts through staging, where the smoke tests run against a copy of production data and the "
        "on-call engineer reviews the dashboards for regressions in latency and error rates before anything "
        "is allowed to proceed further; only after that review does the final step begin, in which "
        "provisioning of the new hosts happens automatically."
    )
    terms = frozenset({"provisioning", analyzer.stem("provisioning")})
    [got] = snippets([f"# Deploy notes\n\n{line}\n"], 1, analyzer, terms)
    assert [got.text[a:b] for a, b in got.matches] == ["provisioning"]
    assert line.encode()[got.offset :].decode().startswith(got.text.removeprefix("…").removesuffix("…"))


def test_a_long_lines_window_is_cut_between_words():
    """A note's paragraph is one long line: its window began and ended inside words
    (`#öffentlic`)."""
    analyzer = Analyzer("english")
    line = " ".join(f"Wörter{i} überall" for i in range(60)) + " die Löschfristen gelten " + "#öffentlich " * 60
    [got] = snippets([f"# Fristen\n\n{line}\n"], 1, analyzer, frozenset({"gelten"}))
    inner = got.text.removeprefix("…").removesuffix("…")
    words = line.split(" ")
    assert got.text.startswith("…") and got.text.endswith("…") and "Löschfristen gelten" in inner
    assert inner.split(" ")[0] in words and inner.split(" ")[-1] in words, got.text
    assert line.encode()[got.offset :].decode().startswith(inner)


def test_a_word_after_a_blob_of_letters_holding_its_first_letters_is_found():
    """A line of a megabyte of letters with the term's first letters inside them: that
    is no word of the term (it is read at most a window wide each way), the word after is."""
    analyzer = Analyzer("english")
    line = "x" * 1_000_000 + "abcprovisioning" + "y" * 1000 + " provisioning here"
    [got] = snippets([f"# T\n\n{line}\n"], 1, analyzer, frozenset({"provisioning", analyzer.stem("provisioning")}))
    assert [got.text[a:b] for a, b in got.matches] == ["provisioning"]
    assert line.encode()[got.offset :].decode().startswith(got.text.removeprefix("…").removesuffix("…"))


def test_a_word_written_against_cjk_text_is_marked():
    """`HSK` in `（HSK五级）`, `Python` in `今日はPythonで`: the index holds them as words
    (tokenize splits the token at its CJK runs), and they were found but never marked,
    so editors and --vimgrep went to the line's start."""
    analyzer = AnalyzerSet().get(None)
    text = "下个月参加汉语水平考试（HSK五级）。今日はPythonでスクリプトを書いた。"
    marked = lambda terms: [text[a:b] for a, b in match_spans(text, analyzer, frozenset(terms))]  # noqa: E731
    assert marked({"hsk"}) == ["HSK"]
    assert marked({"python"}) == ["Python"]
    assert marked({"hsk", "五级"}) == ["HSK五级"]  # side by side: one mark
    assert marked({"スク", "クリ"}) == ["スクリ"]
