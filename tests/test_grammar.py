"""The lexical query grammar: parsing, compiling to term and phrase forms, and running them in the real index."""

from __future__ import annotations

import pytest
import tantivy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gnod.search.grammar import (
    MAX_QUERY_CHARS,
    Clause,
    CompiledQuery,
    QuerySyntaxError,
    compile_query,
    expand_prefixes,
    keep_informative,
    parse,
    text_not_syntax,
)
from gnod.search.lexical import match_query
from gnod.store.documents import LexicalText
from gnod.store.lexical_index import SCHEMA, any_of, document
from gnod.text.analyzer import TOKEN_RE, AnalyzerSet, exact_text, tokenize

STOPWORDS = {"the", "a", "of"}


def is_stopword(token: str) -> bool:
    return token in STOPWORDS


ANALYZERS = AnalyzerSet()
EN = ["english"]
EN_DE = ["english", "german"]


def compiled(query: str, languages=EN) -> CompiledQuery:
    return compile_query(parse(query), ANALYZERS, languages, is_stopword)


def written(q: CompiledQuery) -> str:
    """The compiled forms written out: ("a" OR "b c") per clause, OR-ed, then NOT (...)."""

    def quote(form):
        return '"' + " ".join(form) + '"'

    out = " OR ".join("(" + " OR ".join(map(quote, forms)) + ")" for forms in q.positives)
    if q.negatives:
        out = f"{f'({out})' if len(q.positives) > 1 else out} NOT ({' OR '.join(map(quote, q.negatives))})"
    return out


def C(tokens, *, phrase=False, compound=False, negated=False, raw, prefix=False, cut=""):
    return Clause(tuple(tokens), phrase, compound, negated, raw, prefix, cut=cut)


# --------------------------------------------------------------------------- parse


@pytest.mark.parametrize(
    "query, expected",
    [
        (
            "deploy production",
            [C(["deploy"], raw="deploy"), C(["production"], raw="production")],
        ),
        ("  Deploy\tPRODUCTION\n", [C(["deploy"], raw="Deploy"), C(["production"], raw="PRODUCTION")]),
        ('"exact phrase"', [C(["exact", "phrase"], phrase=True, raw='"exact phrase"')]),
        ('"single"', [C(["single"], phrase=True, raw='"single"')]),
        (
            'deploy -staging -"dry run"',
            [
                C(["deploy"], raw="deploy"),
                C(["staging"], negated=True, raw="-staging"),
                C(["dry", "run"], phrase=True, negated=True, raw='-"dry run"'),
            ],
        ),
        ("real-time", [C(["real", "time"], phrase=True, compound=True, raw="real-time")]),
        ("gpt-4", [C(["gpt", "4"], phrase=True, compound=True, raw="gpt-4")]),
        ("DEC-0054", [C(["dec", "0054"], phrase=True, compound=True, raw="DEC-0054")]),
        (
            "state-of-the-art",
            [C(["state", "of", "the", "art"], phrase=True, compound=True, raw="state-of-the-art")],
        ),
        (
            "x -real-time",
            [
                C(["x"], raw="x"),
                C(["real", "time"], phrase=True, compound=True, negated=True, raw="-real-time"),
            ],
        ),
        ("snake_case", [C(["snake", "case"], phrase=True, raw="snake_case")]),
        ("my_var_name", [C(["my", "var", "name"], phrase=True, raw="my_var_name")]),
        ("os.path.join", [C(["os", "path", "join"], phrase=True, raw="os.path.join")]),
        # Mixed joiners: an identifier phrase, not a compound.
        ("foo-bar_baz", [C(["foo", "bar", "baz"], phrase=True, raw="foo-bar_baz")]),
        ("real--time", [C(["real", "time"], phrase=True, raw="real--time")]),
        # Quoted text keeps hyphens as separators but is a plain phrase.
        ('"real-time data"', [C(["real", "time", "data"], phrase=True, raw='"real-time data"')]),
        # What other engines read as syntax is just text.
        (
            "deploy AND production OR NOT x",
            [
                C(["deploy"], raw="deploy"),
                C(["and"], raw="AND"),
                C(["production"], raw="production"),
                C(["or"], raw="OR"),
                C(["not"], raw="NOT"),
                C(["x"], raw="x"),
            ],
        ),
        (
            "deploy* ^prod +ci",
            [C(["deploy"], raw="deploy*", prefix=True), C(["prod"], raw="^prod"), C(["ci"], raw="+ci")],
        ),
        # A prefix is a last token of two characters or more before a last `*`; else `*` is text.
        ("Dock* -stag*", [C(["dock"], raw="Dock*", prefix=True), C(["stag"], negated=True, raw="-stag*", prefix=True)]),
        (
            "d* os.pa* dock** a*b",
            [
                C(["d"], raw="d*"),
                C(["os", "pa"], phrase=True, raw="os.pa*", prefix=True),
                C(["dock"], raw="dock**"),
                C(["a", "b"], phrase=True, raw="a*b"),
            ],
        ),
        # An identifier being typed: its whole tokens and the one being typed, when it is
        # long enough to be a prefix; else the whole ones alone (not a phrase that ends in
        # one letter and matches next to nothing: each keystroke of `mmc_add_host` in an
        # editor's picker had "no matches" but two).
        (
            "mmc_add_ho* mmc_add_h* mmc_* spin_lock_i*",
            [
                C(["mmc", "add", "ho"], phrase=True, raw="mmc_add_ho*", prefix=True),
                C(["mmc", "add"], phrase=True, raw="mmc_add_h*"),
                C(["mmc"], raw="mmc_*"),
                C(["spin", "lock"], phrase=True, raw="spin_lock_i*"),
            ],
        ),
        ("mmc_a*", [C(["mmc"], raw="mmc_a*")]),
        ("dock dock*", [C(["dock"], raw="dock"), C(["dock"], raw="dock*", prefix=True)]),
        ("title:foo", [C(["title", "foo"], phrase=True, raw="title:foo")]),
        ("(deploy)", [C(["deploy"], raw="(deploy)")]),
        ("NEAR(a b)", [C(["near", "a"], phrase=True, raw="NEAR(a"), C(["b"], raw="b)")]),
        # A quote inside a word is text, and so is one after a closed phrase's word.
        ('don"t', [C(["don", "t"], phrase=True, raw='don"t')]),
        ('5" screen', [C(["5"], raw='5"'), C(["screen"], raw="screen")]),
        ('"a b"c', [C(["a", "b"], phrase=True, raw='"a b"'), C(["c"], raw="c")]),
        # Emoji, control characters, diacritics: tokenized like documents.
        ("🚀deploy", [C(["deploy"], raw="🚀deploy")]),
        ("a\x00b", [C(["a", "b"], phrase=True, raw="a\x00b")]),
        ("Café", [C(["café"], raw="Café")]),
        # Clauses without searchable words vanish; a lone dash is not a negation.
        ('deploy !!! - "" -!!!', [C(["deploy"], raw="deploy")]),
        # Nor is a dash before a digit or a symbol: code's `return -1`, `p->next`, `-->`.
        ("return -1", [C(["return"], raw="return"), C(["1"], raw="-1")]),
        ("list ->next", [C(["list"], raw="list"), C(["next"], raw="->next")]),
        ("-_x y", [C(["x"], raw="-_x"), C(["y"], raw="y")]),
        # Nor before a word in capitals alone: an error code, a flag (`-usb` negates USB).
        ("return -ENODEV", [C(["return"], raw="return"), C(["enodev"], raw="-ENODEV")]),
        ("-E2BIG -DDEBUG", [C(["e2big"], raw="-E2BIG"), C(["ddebug"], raw="-DDEBUG")]),
        ("-EINVAL,", [C(["einval"], raw="-EINVAL,")]),
        ("usb -Gadget", [C(["usb"], raw="usb"), C(["gadget"], negated=True, raw="-Gadget")]),
        # Nor before one letter, with digits or not: a pasted command's flag, no word to leave out.
        (
            "systemctl show -p MemoryMax -j4 -x,",
            [
                C(["systemctl"], raw="systemctl"),
                C(["show"], raw="show"),
                C(["p"], raw="-p"),
                C(["memorymax"], raw="MemoryMax"),
                C(["j4"], raw="-j4"),
                C(["x"], raw="-x,"),
            ],
        ),
        (
            "kmalloc -pX -a-b",
            [
                C(["kmalloc"], raw="kmalloc"),
                C(["px"], negated=True, raw="-pX"),
                C(["a", "b"], phrase=True, compound=True, negated=True, raw="-a-b"),
            ],
        ),
        # Negations alone leave nothing out of anything: they are text (a flag, `-Wall`).
        ("-Wall", [C(["wall"], raw="-Wall")]),
        ('-deploy -"a b" !!!', [C(["deploy"], raw="-deploy"), C(["a", "b"], phrase=True, raw='-"a b"')]),
        # What places a word in a program's output is cut off it: a stack frame's offset (and
        # a clone's suffix), a file's line and column; the rest is searched.
        ("__schedule+0x2e3/0x8b0", [C(["schedule"], raw="__schedule", cut="+0x2e3/0x8b0")]),
        (
            "RIP: 0010:memcpy_orig+0x10/0x120",
            [C(["rip"], raw="RIP:"), C(["memcpy", "orig"], phrase=True, raw="memcpy_orig", cut="+0x10/0x120")],
        ),
        (
            "ext4_lookup.isra.0+0x1a/0x30",
            [C(["ext4", "lookup"], phrase=True, raw="ext4_lookup", cut=".isra.0+0x1a/0x30")],
        ),
        (
            "mm/slub.c:4312:5: -warning",
            [
                C(["mm", "slub", "c"], phrase=True, raw="mm/slub.c", cut=":4312:5:"),
                C(["warning"], negated=True, raw="-warning"),
            ],
        ),
        ("page_alloc.c:12", [C(["page", "alloc", "c"], phrase=True, raw="page_alloc.c", cut=":12")]),
        # A sentence's punctuation after it: every `kernel BUG at …` line ends with `!`.
        ("mm/slub.c:4312!", [C(["mm", "slub", "c"], phrase=True, raw="mm/slub.c", cut=":4312!")]),
        # A time, a port, a name without an extension keep their numbers.
        (
            "10:30 localhost:8080 Makefile:12",
            [
                C(["10", "30"], phrase=True, raw="10:30"),
                C(["localhost", "8080"], phrase=True, raw="localhost:8080"),
                C(["makefile", "12"], phrase=True, raw="Makefile:12"),
            ],
        ),
        # A possessive asks for the word (most documents hold it without `'s`).
        ("Hartmann's comments", [C(["hartmann"], raw="Hartmann's"), C(["comments"], raw="comments")]),
        ("Müller’s", [C(["müller"], raw="Müller’s")]),
        ("it's", [C(["it"], raw="it's")]),
        ("o's", [C(["o", "s"], phrase=True, raw="o's")]),  # no word before it
        ("rock'n'roll", [C(["rock", "n", "roll"], phrase=True, raw="rock'n'roll")]),
        # An elided article asks for the word (another article is as likely before it).
        ("d'épistémologie", [C(["épistémologie"], raw="d'épistémologie")]),
        ("qu’entretien dell'arte", [C(["entretien"], raw="qu’entretien"), C(["arte"], raw="dell'arte")]),
        ('"l\'enquête de terrain"', [C(["enquête", "de", "terrain"], phrase=True, raw='"l\'enquête de terrain"')]),
        ("o'clock don't", [C(["o", "clock"], phrase=True, raw="o'clock"), C(["don", "t"], phrase=True, raw="don't")]),
        # Duplicates (after lowercasing) are kept once, first spelling wins.
        ("Deploy deploy DEPLOY", [C(["deploy"], raw="Deploy")]),
        (
            "deploy -deploy",
            [C(["deploy"], raw="deploy"), C(["deploy"], negated=True, raw="-deploy")],
        ),
    ],
)
def test_parse(query, expected):
    assert parse(query) == expected


@pytest.mark.parametrize(
    "query, notes",
    [
        ("kmalloc kfree", []),
        ("kmalloc OR kfree OR vfree", ["OR: a word here"]),
        ("a AND b NOT c", ["AND, NOT: a word here"]),
        ("or and not", []),  # lowercase: words of the sentence
        ("dock* k*alloc *alloc", ["k*alloc: `*` only ends a prefix of 2 letters or more"]),
        ("d* x", ["d*: `*` only ends a prefix"]),
        ("x mmc_add_h*", ["mmc_add_h*: `*` ends a prefix of 2 letters or more; searched mmc_add alone"]),
        ("x -mmc_a*", ["-mmc_a*: `*` ends a prefix of 2 letters or more; searched mmc alone"]),
        # Nothing after a separator: the name is searched (it said "only ends a prefix of 2 letters").
        ("kmalloc_*", ["kmalloc_*: `*` ends a word's first letters, not a `_`; searched kmalloc, which finds"]),
        ("x spin_lock_*", ["spin_lock_*: `*` ends a word's first letters, not a `_`; searched spin_lock,"]),
        ('"a*b" c', []),  # quoted: text, as asked
        # A quoted phrase's last word begun, too short to be a prefix: the words before it.
        ('"rotate API k*"', ['"rotate API k*": `*` ends a prefix of 2 letters or more; searched "rotate api" alone']),
        ('"rotate API k"*', ['"rotate API k"*: `*` ends a prefix of 2 letters or more; searched "rotate api" alone']),
        ('"k*"', ['"k*": `*` only ends a prefix of 2 letters or more ("rotor imb*"); here it is text']),
        ('"rotor imb*"', []),
        ("NOT k*alloc", ["NOT: a word here", "k*alloc: `*` only ends"]),
        ("-Wall -fno-common", ["-Wall, -fno-common: searched as text, since the query holds nothing else"]),
        ("x -Wall", []),
        # A passage pasted: its `-word` is a word of it (it left out the passage's own file).
        (
            "Adaptive spinning for mutexes by Peter Zijlstra. (Ported to mainline from the -rt tree",
            ["-rt: searched as text, a word of the passage"],
        ),
        ("usb storage driver for the old camera -gadget", []),  # 7 words: a negation
        # Other engines' fields (Obsidian's, GitHub's): words here, and the filter named.
        ("kafka tag:#legal", ["tag:#legal: words here, not a field; the filter is --tag legal"]),
        ("file:Roadmap", ["file:Roadmap: words here, not a field; the filter is --path '*Roadmap*'"]),
        (
            "x Path:docs/api ext:py",
            ["Path:docs/api: words here, not a field; the filter is --path 'docs/api*'", "ext:py"],
        ),
        ("std::vector file:///home/x TODO:fix http://example.com", []),
    ],
)
def test_syntax_of_other_engines_is_text_and_said_so(query, notes):
    got = text_not_syntax(parse(query))
    assert len(got) == len(notes) and all(g.startswith(n) for g, n in zip(got, notes)), got


@pytest.mark.parametrize(
    "query, message",
    [
        ("", "empty query"),
        ("   \t\n", "empty query"),
        ('"abc', "unbalanced double quote: the quote at character 1 is never closed"),
        ('deploy "to prod', "unbalanced double quote: the quote at character 8 is never closed"),
        ('x -"to prod', "unbalanced double quote: the quote at character 4 is never closed"),
        ('"a" "', "unbalanced double quote: the quote at character 5 is never closed"),
        ("!!!", "no searchable words"),
        ("-->", "no searchable words"),
        ('"" -!!! ** ()', "no searchable words"),
        ("x" * (MAX_QUERY_CHARS + 1), "query is too long (32,001 characters; the limit is 32,000)"),
    ],
)
def test_parse_errors(query, message):
    with pytest.raises(QuerySyntaxError) as info:
        parse(query)
    assert message in info.value.message
    assert isinstance(info.value, ValueError)
    assert str(info.value) == info.value.message


def test_limits_are_inclusive():
    assert len(parse("x" * MAX_QUERY_CHARS)) == 1
    # Any number of distinct terms parses (keep_informative caps them); duplicates merge.
    assert len(parse(" ".join(f"w{i}" for i in range(500)))) == 500
    assert len(parse(" ".join(["same"] * 500))) == 1


def test_keep_informative_keeps_the_rarest_terms_in_query_order():
    clauses = parse("the alpha beta gamma delta -omega -sigma epsilon")
    df = {"alpha": 50, "beta": 2, "gamma": 0, "delta": 7, "epsilon": 2}.get
    kept, left_out = keep_informative(clauses, lambda t: t == "the", 3, lambda t: df(t, 0))
    # Stopword first, then the most common; a term in no document matches nothing.
    assert [c.raw for c in kept] == ["beta", "delta", "-omega", "-sigma", "epsilon"]
    assert left_out == ["the", "alpha", "gamma"]
    # Under the cap nothing changes.
    assert keep_informative(clauses, lambda t: t == "the", 8, lambda t: 1) == (clauses, [])


# --------------------------------------------------------------------------- compile


@pytest.mark.parametrize(
    "query, match",
    [
        ("deploy", '("deploy")'),
        ("deploy production", '("deploy") OR ("product")'),
        ("Deploying deployed", '("deploy")'),  # same stem: one clause in the MATCH
        ('"exact phrases"', '("exact phrase")'),
        ("real-time", '("real time" OR "realtim")'),
        ("gpt-4", '("gpt 4" OR "gpt4")'),
        ("snake_case", '("snake case")'),
        ("os.path.join", '("os path join")'),
        # A dotted word's last part that is a name of code stands for itself too.
        ("kernel.panic_on_oops", '("kernel panic on oop" OR "panic on oop")'),
        ("self.assertEqual", '("self assertequ" OR "assertequ")'),
        ("x -kernel.panic_on_oops", '("x") NOT ("kernel panic on oop")'),
        ('"kernel.panic_on_oops"', '("kernel panic on oop")'),
        ("self.x_1._", '("self x 1")'),  # a last part with no word in it stands for nothing
        ("-production deploy", '("deploy") NOT ("product")'),
        (
            'deploy servers -production -"dry runs"',
            '(("deploy") OR ("server")) NOT ("product" OR "dri run")',
        ),
        ("deploy AND NOT x", '("deploy") OR ("and") OR ("not") OR ("x")'),
        ("title:foo NEAR(a", '("titl foo") OR ("near a")'),
        # Words typed across `/` also name a path's folders (the separator between them).
        ("x86/entry", '("x86 entri" OR "x86 | entri")'),
        ('"#include <linux/modules.h>"', '("includ linux modul h" OR "includ linux | modul h")'),
        ("entry_SYSCALL_64", '("entri syscal 64")'),
        ("https://a.org/x", '("https a org x" OR "https | a org | x")'),
    ],
)
def test_compile_english(query, match):
    assert written(compiled(query, EN)) == match


def test_the_separator_of_a_paths_form_is_no_word_of_the_query():
    assert compiled("x86/entry").positive_stems == frozenset({"x86", "entri"})


@pytest.mark.parametrize(
    "query, match",
    [
        ("deploy", '("deploy")'),  # both languages agree: one form
        ("production", '("product" OR "production")'),
        ("Katzen", '("katzen" OR "katz")'),
        ('"running cats"', '("run cat" OR "running cat")'),
        ("real-time", '("real time" OR "real tim" OR "realtim")'),
        (
            "deploy -laufen",
            '("deploy") NOT ("laufen" OR "lauf")',
        ),
    ],
)
def test_compile_english_german(query, match):
    assert written(compiled(query, EN_DE)) == match


def test_a_prefix_stands_for_the_words_it_was_expanded_to():
    words = {"runn": ["running", "runner"], "cat": []}
    asked = []

    def complete(clause):
        prefix, before = clause.tokens[-1], clause.tokens[:-1]
        asked.append((prefix, before))
        return words[prefix]

    q = compile_query(expand_prefixes(parse("runn* cat* -dog"), complete), ANALYZERS, EN, is_stopword)
    # Each word as if typed; a prefix nothing starts with matches nothing.
    assert written(q) == '(("run" OR "runner") OR ()) NOT ("dog")'
    assert q.positive_stems == frozenset({"run", "runner"})
    assert asked == [("runn", ()), ("cat", ())]
    unexpanded = compiled("runn*")
    assert unexpanded.positives == ((),)
    # An identifier's last token: the phrase with each word it stands for, which are asked
    # for among the documents holding the tokens before it.
    asked.clear()
    words["ho"] = ["host", "hosting"]
    q = compile_query(expand_prefixes(parse("mmc_add_ho*"), complete), ANALYZERS, EN, is_stopword)
    assert written(q) == '("mmc add host")'  # hosting's stem is host's
    assert asked == [("ho", ("mmc", "add"))]


def test_compile_without_languages_does_not_stem():
    assert written(compiled("running cats", [None])) == '("running") OR ("cats")'
    assert written(compiled("running cats", [])) == '("running") OR ("cats")'


def test_compiled_fields():
    q = compiled('Deploying the "state of art" real-time -prod', EN_DE)
    assert q.terms == ("Deploying", '"state of art"', "real-time")
    assert q.dropped_stopwords == ("the",)
    assert q.positive_stems == frozenset(
        {"deploy", "deploying", "state", "stat", "of", "art", "real", "time", "tim", "realtim"}
    )
    assert "prod" not in q.positive_stems


def test_stopwords_dropped_when_something_else_remains():
    q = compiled("the history of a city")
    assert written(q) == '("histori") OR ("citi")'
    assert q.dropped_stopwords == ("the", "of", "a")
    assert q.terms == ("history", "city")


def test_a_german_question_s_function_words_are_dropped():
    """`wann muss ich mich ummelden` searched `wann` and `muss`, and said no document had
    them: a question's words and modal verbs are function words, as `when` and `must`."""
    from gnod.text import stopwords

    def german(query: str) -> CompiledQuery:
        return compile_query(parse(query), ANALYZERS, ["german"], lambda t: stopwords.is_stopword(t, ["german"]))

    q = german("wann muss ich mich ummelden")
    assert q.terms == ("ummelden",)
    assert q.dropped_stopwords == ("wann", "muss", "ich", "mich")
    assert german("welche Unterlagen sollte ich mitbringen").terms == ("Unterlagen", "mitbringen")


def test_stopwords_kept_when_nothing_else_remains():
    q = compiled("the a of")
    assert written(q) == '("the") OR ("a") OR ("of")'
    assert q.dropped_stopwords == ()


def test_phrases_keep_their_stopwords():
    q = compiled('"the state of the art" of')
    assert written(q) == '("the state of the art")'
    assert q.dropped_stopwords == ("of",)
    # A quoted single stopword is explicit, so it is kept and counts as a real clause.
    q = compiled('"the" a')
    assert written(q) == '("the")'
    assert q.dropped_stopwords == ("a",)
    # A stopword-only compound is a phrase too.
    assert written(compiled("of-the")) == '("of the" OR "ofth")'


def test_negated_stopwords_are_kept():
    assert written(compiled("deploy -the")) == '("deploy") NOT ("the")'


def test_compile_rejects_negation_only_clauses():
    clauses = [C(["x"], negated=True, raw="-x")]
    with pytest.raises(QuerySyntaxError, match="negation needs at least one positive term"):
        compile_query(clauses, ANALYZERS, EN, is_stopword)
    with pytest.raises(QuerySyntaxError, match="no searchable words"):
        compile_query([], ANALYZERS, EN, is_stopword)


def test_compile_deduplicates_clauses():
    clauses = [C(["deploy"], raw="deploy"), C(["deploy"], raw="Deploy")]
    q = compile_query(clauses, ANALYZERS, EN, is_stopword)
    assert written(q) == '("deploy")'
    assert q.terms == ("deploy",)


# --------------------------------------------------------------------------- the index


def make_db(docs: list[tuple[str, str | None]]) -> tantivy.Index:
    """An in-memory lexical index holding `docs` (text, language) stemmed as gnod does."""
    index = tantivy.Index(SCHEMA)
    writer = index.writer(15_000_000, 1)
    for i, (text, lang) in enumerate(docs, start=1):
        a = ANALYZERS.get(lang)
        path, title, tokens = f"/docs/doc_{i}.md", text.split()[0], tokenize(text)
        lexical = LexicalText(
            a.index_text(path),
            a.index_text(title),
            " ".join(a.stems(tokens)),
            exact_text(path),
            exact_text(title),
            " ".join(tokens),
        )
        writer.add_document(document(i, 1, path, title, lang, {}, 0, lexical))
    writer.commit()
    index.reload()
    return index


DOCS = [
    ("Real-time streaming", "english"),  # 1
    ("realtime analytics", "english"),  # 2
    ("the snake_case convention", "english"),  # 3
    ("Deploying to production", "english"),  # 4
    ("Die Katzen laufen schnell", "german"),  # 5
    ("deploy the staging servers", "english"),  # 6
]
DB = make_db(DOCS)


def search(query: str, languages=EN_DE, db=DB) -> set[int]:
    """The documents the stems of `query` find (the exact forms are searched beside them
    by gnod.search.lexical; here the stems alone are tested)."""
    searcher = db.searcher()
    hits = searcher.search(
        tantivy.Query.boolean_query(match_query([("stems", compiled(query, languages), 1.0)])), 100
    ).hits
    return set(searcher.fast_field_values("id", [addr for _, addr in hits]))


def test_index_compound_finds_both_spellings():
    assert search("real-time") == {1, 2}
    assert search("realtime") == {2}  # the concatenation does not imply the compound
    assert search('"real time"') == {1}


def test_a_possessive_finds_the_word_without_it():
    """`Hartmann's comments` found only the note holding "Hartmann's", not the four
    holding "Hartmann"."""
    db = make_db([("Hartmann reviewed it", "english"), ("Hartmann's review", "english"), ("a review", "english")])
    searcher = db.searcher()
    query = tantivy.Query.boolean_query(match_query([("stems", compiled("Hartmann's"), 1.0)]))
    hits = searcher.search(query, 10).hits
    assert set(searcher.fast_field_values("id", [addr for _, addr in hits])) == {1, 2}


def test_an_elided_article_finds_the_word_after_another():
    """`d'épistémologie` found nothing where the notes wrote `l'épistémologie`."""
    db = make_db(
        [("l'épistémologie de Bachelard", "french"), ("une épistémologie", "french"), ("le terrain", "french")]
    )
    searcher = db.searcher()
    query = tantivy.Query.boolean_query(match_query([("stems", compiled("d'épistémologie", ["french"]), 1.0)]))
    hits = searcher.search(query, 10).hits
    assert set(searcher.fast_field_values("id", [addr for _, addr in hits])) == {1, 2}


def test_index_identifier_phrase():
    assert search("snake_case") == {3}
    assert search('"case snake"') == set()  # order matters in a phrase


def test_index_exact_phrase_needs_the_words_together():
    """The exact field keeps no positions: an exact phrase is its words, exact, where
    their stems stand together; the words apart do not make it, in either order."""
    db = make_db(
        [
            ("memory barriers order the writes", "english"),  # 1: the phrase, inflected
            ("a memory barrier orders writes", "english"),  # 2: the phrase, exact
            ("the barrier keeps memory safe", "english"),  # 3: both words, apart
        ]
    )

    def exact(query: str) -> set[int]:
        q = compiled(query, [None])
        sides = match_query([("exact", q, 1.0)], lambda f: ANALYZERS.stem_sequences(f, EN))
        searcher = db.searcher()
        hits = searcher.search(tantivy.Query.boolean_query(sides), 10).hits
        return set(searcher.fast_field_values("id", [addr for _, addr in hits]))

    assert exact('"memory barrier"') == {2}
    assert exact('"memory barriers"') == {1}
    assert exact('"barrier memory"') == set()
    assert exact("memory_barrier") == {2}
    assert exact('barrier -"memory barrier"') == {3}
    assert search('"memory barrier"', EN, db) == {1, 2}  # the stems find both spellings


def test_an_exact_phrase_and_its_stemmed_phrase_are_read_once_with_the_same_scores():
    """match_query pairs an exact form of several words with its stemmed phrases (one
    clause: the phrase read once); the scores are those of the two sides apart."""
    db = make_db(
        [
            ("memory barriers order the writes; a memory barrier", "english"),
            ("a memory barrier orders writes", "english"),
            ("the barrier keeps memory safe, snake_case and real-time", "english"),
            ("kmalloc with GFP_KERNEL flags, then memory_barrier", "english"),
            ("Real time data, memory", "english"),
        ]
    )
    searcher = db.searcher()

    def scores(parts) -> dict[int, float]:
        hits = searcher.search(tantivy.Query.boolean_query(parts), 10).hits
        ids = searcher.fast_field_values("id", [addr for _, addr in hits])
        return {int(i): score for (score, _), i in zip(hits, ids)}

    for query in ('"memory barrier"', "memory_barrier writes", "kmalloc GFP_KERNEL", "real-time -safe", "snake_case"):
        stems, exact = compiled(query, EN_DE), compiled(query, [None])

        def stem(form):
            return ANALYZERS.stem_sequences(form, EN_DE)

        paired = scores(match_query([("stems", stems, 0.4), ("exact", exact, 0.6)], stem))
        apart = scores(match_query([("stems", stems, 0.4)], stem) + match_query([("exact", exact, 0.6)], stem))
        assert paired and paired.keys() == apart.keys(), query
        assert all(abs(paired[d] - apart[d]) <= 1e-5 * abs(apart[d]) for d in apart), (query, paired, apart)


def test_a_condition_on_each_clause_gives_the_matches_and_scores_of_one_around_the_query():
    """match_query's `within` (a condition that few documents meet, such as the ones
    defining the query's name) goes on each clause of every disjunction, where the
    engine reads it at each place it seeks, not a window of documents: the matches and
    their scores are those of the condition put around the whole query."""
    db = make_db(
        [
            ("memory barriers order the writes; a memory barrier", "english"),
            ("a memory barrier orders writes, container_of", "english"),
            ("the barrier keeps memory safe, snake_case and real-time", "english"),
            ("kmalloc with GFP_KERNEL flags, then memory_barrier", "english"),
            ("Real time data, memory container of", "english"),
            ("Katzen laufen, eine Speicherbarriere", "german"),
            ("喝茶 茶叶 memory barrier 内存屏障", None),
            ("container of memory, not a barrier", "english"),
        ]
    )
    searcher = db.searcher()
    languages = [*EN_DE, None]

    def scores(query) -> dict[int, float]:
        hits = searcher.search(query, 10).hits
        ids = searcher.fast_field_values("id", [addr for _, addr in hits])
        return {int(i): score for (score, _), i in zip(hits, ids)}

    def stem(form):
        return ANALYZERS.stem_sequences(form, EN_DE)

    def held(form):
        return ANALYZERS.stem_sequences(form, languages)

    queries = ('"memory barrier"', "memory_barrier writes", "container_of", "real-time -safe", "茶", "Katzen memory")
    for query in queries:
        sides = [("stems", compiled(query, EN_DE), 0.4), ("exact", compiled(query, [None]), 0.6)]
        whole = tantivy.Query.boolean_query(match_query(sides, stem, as_written=True, held=held))
        for ids in ([1, 2], [2, 5, 7], [3, 4, 6, 8], [7]):
            few = tantivy.Query.const_score_query(any_of("id", ids), 0.0)
            around = scores(tantivy.Query.boolean_query([(tantivy.Occur.Must, whole), (tantivy.Occur.Must, few)]))
            each = scores(tantivy.Query.boolean_query(match_query(sides, stem, as_written=True, held=held, within=few)))
            assert each.keys() == around.keys() <= set(ids), (query, ids)
            assert all(each[d] == around[d] for d in around), (query, ids, each, around)


def test_index_stemming_and_negation():
    assert search("deploy") == {4, 6}
    assert search("-production deploy") == {6}
    assert search('deploy -"staging servers"') == {4}


def test_index_terms_are_ored_not_anded():
    # No document holds every word of a question; each word still finds its documents.
    assert search("how do I deploy realtime analytics") == {2, 4, 6}


def test_index_german_query_needs_german_stemming_in_the_language_set():
    assert search("Katze", EN_DE) == {5}
    assert search("laufen Katzen", EN_DE) == {5}
    # Under English only, the inflected German word misses the German stem.
    assert search("laufen", EN) == set()


def test_index_syntax_is_text():
    for q in (
        "deploy AND",
        "NEAR(x deploy)",
        "deploy**",
        "title: deploy",
        "^deploy",
        "deploy:",
        "deploy OR",
        "NOT deploy",
    ):
        assert 4 in search(q), q
    # Punctuation inside a word joins its parts into a phrase, exactly as the document
    # text was indexed, so `NEAR(deploy` is the phrase "near deploy".
    assert search("NEAR(deploy") == search("title:deploy") == set()


# --------------------------------------------------------------------------- properties

PROPERTY_LANGUAGES = [None, "english", "german", "russian", "turkish", "greek"]

SYNTAX = st.sampled_from(
    [
        '"',
        "-",
        "_",
        ".",
        " ",
        "  ",
        "*",
        ":",
        "(",
        ")",
        "^",
        "+",
        "NEAR",
        "AND",
        "OR",
        "NOT",
        "'",
        "\\",
        "\x00",
        "\x1f",
        "\u200b",
        "İ",
        "ß",
        "é",
        "🚀",
        "\u0301",
        "ﬁ",
        "²",
        "٣",
        "the",
        "a",
        "of",
        "deploy",
        "real",
        "time",
        "Katzen",
        "x",
    ]
)
GRAMMARISH = st.lists(SYNTAX, max_size=25).map("".join)
ANY_TEXT = st.one_of(st.text(max_size=120), GRAMMARISH)


def _check_query(db: tantivy.Index, text: str, languages) -> None:
    try:
        clauses = parse(text)
    except QuerySyntaxError as e:
        assert e.message and isinstance(e.message, str)
        return
    assert clauses
    assert any(not c.negated for c in clauses)
    for c in clauses:
        assert c.tokens and all(TOKEN_RE.fullmatch(t) and t == t.lower() for t in c.tokens)
        assert c.compound <= c.phrase
        assert c.phrase or len(c.tokens) == 1
        assert c.raw and c.raw in text
    q = compile_query(clauses, ANALYZERS, languages, is_stopword)
    exact = compile_query(clauses, ANALYZERS, [None], is_stopword)
    # Only tokens reach the index: every form is a non-empty run of alphanumeric stems.
    for form in [f for forms in q.positives for f in forms] + list(q.negatives):
        assert form and all(t and not any(ch.isspace() for ch in t) for t in form)
    # A prefix stands for the index's words that start with it (none here: expand_prefixes
    # is not run), so a query of prefixes alone may have no stems; it must still search.
    assert q.terms and (q.positive_stems or any(c.prefix for c in clauses))
    sides = match_query([("stems", q, 0.5), ("exact", exact, 0.5)], lambda f: ANALYZERS.stem_sequences(f, languages))
    db.searcher().search(tantivy.Query.boolean_query(sides), 10)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=ANY_TEXT, languages=st.lists(st.sampled_from(PROPERTY_LANGUAGES), min_size=1, max_size=3))
def test_property_parse_and_match_never_crash(text, languages):
    _check_query(DB, text, languages)


@settings(max_examples=150, deadline=None)
@given(text=st.text(min_size=100, max_size=MAX_QUERY_CHARS + 50))
def test_property_long_queries(text):
    _check_query(DB, text, EN_DE)


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=6), min_size=1, max_size=6))
def test_property_plain_words_always_find_their_document(words):
    """A document containing the query's words is always found, in any language set."""
    text = " ".join(words)
    db = make_db([(text, "english")])
    assert search(text, ["english", "german"], db=db) == {1}


def test_a_negation_in_a_passage_is_a_word_of_it():
    pasted = parse("Adaptive spinning for mutexes by Peter Zijlstra. (Ported to mainline from the -rt tree")
    assert [c.tokens for c in pasted if c.negated] == [] and ("rt",) in [c.tokens for c in pasted]
    typed = parse("usb storage driver for the old camera -gadget")
    assert [c.tokens for c in typed if c.negated] == [("gadget",)]


def test_a_number_matches_its_other_ways_of_being_written():
    """An office tryout's amounts were found only as typed: `1.234,56` missed a sheet's
    1234.56, `14880` an invoice's 14.880,00."""
    db = make_db(
        [
            ("Betrag 1.234,56 EUR", "german"),
            ("amount 1234.56", "english"),
            ("total 1,234.56", "english"),
            ("Leasing 14.880,00 EUR", "german"),
            ("version 10.0.1", "english"),
        ]
    )
    searcher = db.searcher()

    def found(q: str) -> set[int]:
        query = tantivy.Query.boolean_query(match_query([("stems", compiled(q), 1.0)]))
        return set(searcher.fast_field_values("id", [addr for _, addr in searcher.search(query, 10).hits]))

    assert found("1.234,56") == found("1234.56") == found("1,234.56") == {1, 2, 3}
    assert found("14880") == {4}
    assert found('"1234.56"') == {2}  # quoted: as typed
    assert found("10.0.1") == {5}
