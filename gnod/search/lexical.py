"""Document-level BM25 over the lexical index: grammar → term and phrase queries → ranked rows.

Each document is indexed twice in tantivy (gnod.store.lexical_index): its stems (in its
own language) and its unstemmed words. A query is stemmed in the languages that matter
for it (`query_languages`) and matched as typed against the exact forms; a document's
bm25 is the weighted mean of the two, so the query's own word forms rank first while an
inflection still matches through its stem. Among near-equal matches, `Preferences` puts
first the page holding the query as a phrase, the page named as the query, and the page
in the query's language (or the index's main one).

The engine reads only the best blocks of each term's postings (block-max WAND), so the
cost follows the hits asked for, not the matches. Filters (collections, tags, dates,
path, language) are part of the engine's query, so a filtered search still fills `-n`.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, partial
from itertools import combinations
from typing import NamedTuple

import apsw
import tantivy
from tantivy import Occur, Query

from gnod.config import NAMED_FILES
from gnod.ingest.lexical_text import indexed_body
from gnod.ingest.line_symbols import LABEL
from gnod.ingest.symbols import COMPATIBLE, CONSTANT, VARIABLE, Symbol
from gnod.search import defining, filters, spelling, typed_runs
from gnod.search.constants import (
    AS_TYPED_READ_MAX,
    PATH_ANCHOR_MIN,
    PATH_SETTLED_MAX,
    PHRASE_RUN_WORDS,
    PIPELINE,
    Lexical,
)
from gnod.search.grammar import (
    NAMED_IN_CODE,
    Clause,
    CompiledQuery,
    QuerySyntaxError,
    compile_query,
    droppable,
    expand_prefixes,
    keep_informative,
    parse,
    text_not_syntax,
)
from gnod.search.snippet import Phrase
from gnod.store import documents as store
from gnod.store import kept
from gnod.store import symbols as symstore
from gnod.store.lexical_index import (
    COLLECTION,
    DAY,
    EXACT,
    ID,
    LANGUAGE,
    LANGUAGE_CODE,
    NAMES,
    PATH,
    PATH_PARTS,
    PATH_REVERSED,
    SCHEMA,
    SENDER,
    STEMS,
    TAG,
    LexicalIndex,
    any_of,
    language_code,
    words,
)
from gnod.store.tags import tag_key
from gnod.text.analyzer import SEPARATOR_TOKEN, AnalyzerSet, cjk_character, fold, tokenize
from gnod.text.language import query_language, query_language_candidates, unstemmed_script
from gnod.text.stopwords import is_stopword
from gnod.wire import said


def relative_scores(raw: Sequence[float]) -> list[float]:
    """Each hit's bm25 as a fraction of the best hit's: 1.0 for the best, and a hit half
    as relevant by BM25 scores 0.5 wherever it stands in the list (bm25 is negative,
    more negative is better)."""
    if not raw:
        return []
    best = min(raw)
    if best >= 0:
        return [1.0] * len(raw)
    return [min(1.0, max(0.0, s / best)) for s in raw]


def query_languages(
    query: str, counts: Mapping[str | None, int], lexical: Lexical = PIPELINE.lexical, asked: str | None = None
) -> list[str | None]:
    """The languages a query is stemmed in: the one its search is filtered to (`asked`,
    `--lang`), where the index holds it; its own when it is clearly written in one the
    index holds; none (None: matched as written) when it is written in a script without
    a stemmer (CJK, Thai…) and the index holds unstemmed documents; else, among the
    languages holding `min_language_share` of the index, those whose function words it
    holds (Spanish, Catalan or Romanian for "es un alias de"), or all of them (largest
    first) when it holds none. Weak evidence ("in vitro") never stems a query in a
    language of a few stray documents. `counts` is documents per language
    (store.language_counts).

    Stems of other languages would only add false matches to a clear query (an English
    word cut by a Basque stemmer); its exact forms still find every document. Only the
    query's prose tells its language (_prose): `spin_lock_ir*`, typed in a picker, read
    Lithuanian by its `ir` ("and"), which then dropped as a stopword with every hit."""
    if asked is not None and counts.get(asked):
        return [asked]
    query = _prose(query)
    own = query_language(query)
    if own is not None and counts.get(own):
        return [own]
    if own is None and counts.get(None) and unstemmed_script(query):
        return [None]
    total = sum(counts.values())
    major = [
        lang
        for lang, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0] or ""))
        if n >= lexical.min_language_share * total
    ]
    plausible: list[str | None] = [lang for lang in query_language_candidates(query) if lang in major]
    return plausible or major or ["english"]


# What marks a word of code (snake_case, camelCase, a dotted or `::` name) or one still
# being typed (`dev*`): not prose, so nothing of the language the query is written in.
_NOT_PROSE = re.compile(r"[A-Za-z0-9][_.:][A-Za-z0-9]|[a-z0-9][A-Z]|\*")


def _prose(query: str) -> str:
    """The query without its words of code and its prefixes (_NOT_PROSE). Word by word:
    one pattern over the whole query, `\\S*` around the mark, read a long word again from
    each of its letters (a 32,000-letter word took 21 s)."""
    return " ".join(word for word in query.split() if not _NOT_PROSE.search(word))


def doc_frequency(searcher: tantivy.Searcher) -> Callable[[str], int]:
    """token → how many documents hold it as typed (the exact-form field), memoized."""
    cache: dict[str, int] = {}

    def df(token: str) -> int:
        if token not in cache:
            cache[token] = searcher.doc_freq(EXACT, fold(token))
        return cache[token]

    return df


class Row(NamedTuple):
    doc_id: int
    score: float  # relative to the best hit (relative_scores), rounded as shown
    bm25: float  # the raw weighted bm25 (negative: lower is better)


@dataclass(slots=True)
class Result:
    rows: list[Row]  # best first
    total_candidates: int  # matches fetched before `min_score` and `limit`
    terms: list[str]
    dropped_stopwords: list[str]
    languages: list[str | None]  # the query was stemmed in these
    stems: frozenset[str]  # what a snippet or a highlight should mark
    notes: list[str]
    groups: tuple[frozenset[str], ...] = ()  # of `stems`: each prefix's, which a snippet counts once
    verbatim: frozenset[str] = frozenset()  # of `stems`: the quoted words, marked only as typed
    phrases: tuple[Phrase, ...] = ()  # for snippets (_phrases)
    name: str | None = None  # the query's one name of code (_code_name): a hit defining it shows where
    # Each document defining `name` (_defining): its first definition, where its passage opens.
    defined: dict[int, Symbol] = dataclasses.field(default_factory=dict)
    # Each document at the file the query names with a line (`fs/ext4/inode.c:1234`,
    # _placed): that line of its file, where its passage opens.
    at_line: dict[int, int] = dataclasses.field(default_factory=dict)
    instead: str | None = None  # the respelling searched, where nothing matched the query (SearchResult's)
    # The words asked for that no document holds (_absent): the hits were found without them.
    absent: list[str] = dataclasses.field(default_factory=list)


# The stemmed forms (one per language the query is stemmed in) of a run of exact words.
Stem = Callable[[Sequence[str]], list[tuple[str, ...]]]
# A query's matches where a condition scoring nothing holds (the condition → that query).
Within = Callable[[Query], Query]


def _only(query: Query, within: Query | None) -> Query:
    """`query` where `within` (scoring nothing) holds too; `query` for None. A condition
    that few documents meet goes on each clause of a disjunction, not around it: the
    engine seeks a disjunction by reading its clauses over the 4,096 documents from the
    one sought, so a condition around it read most of the matches of the query's phrases
    (`container_of`'s definitions among its matches: 0.98 ms, 0.15 with it on each)."""
    return query if within is None else Query.boolean_query([(Occur.Must, query), (Occur.Must, within)])


def _form_query(field: str, form: Sequence[str], stem: Stem | None = None, within: Query | None = None) -> Query:
    """One form: a term, or the phrase of its tokens (adjacent, in order). The exact
    field keeps no positions (they were half the index), so there a form of several
    words is each of them, exact, in a document that holds the form's `stem`med words
    as a phrase: the exact phrase, bar a document with the words exact elsewhere and the
    phrase only inflected. `within`: held only there (_only)."""
    folded: list[str | tuple[int, str]] = [fold(t) for t in form]
    if len(folded) == 1 and cjk_character(form[0]):
        return _in_runs(field, form[0], within)
    if len(folded) == 1:
        return _only(Query.term_query(SCHEMA, field, folded[0]), within)
    if field != EXACT:
        return _only(_phrase_query(field, folded), within)
    assert stem is not None, "a phrase of exact words needs its stemmed forms"
    return Query.boolean_query(exact_phrase(form, stem, within))


def _phrase_query(field: str, words: list[str | tuple[int, str]]) -> Query:
    """The phrase of `words`; past PHRASE_RUN_WORDS, each of its runs of that many (the
    last run ending with the phrase), once each, all of them."""
    if len(words) <= PHRASE_RUN_WORDS:
        return Query.phrase_query(SCHEMA, field, words)
    starts = [*range(0, len(words) - PHRASE_RUN_WORDS, PHRASE_RUN_WORDS), len(words) - PHRASE_RUN_WORDS]
    runs = dict.fromkeys(tuple(words[i : i + PHRASE_RUN_WORDS]) for i in starts)
    return Query.boolean_query([(Occur.Must, Query.phrase_query(SCHEMA, field, list(run))) for run in runs])


def _in_runs(field: str, char: str, within: Query | None = None) -> Query:
    """A word of one CJK character: the term alone (a run of one), and the bigrams it
    starts or ends (茶叶, 喝茶), matched by a regex, each document scored as one term."""
    return Query.boolean_query(
        [
            (Occur.Should, _only(Query.term_query(SCHEMA, field, char), within)),
            (Occur.Should, _only(Query.regex_query(SCHEMA, field, f"{char}.|.{char}"), within)),
        ]
    )


def _words(form: Sequence[str]) -> list[str]:
    """A form's distinct words, folded, as the exact field holds them: the separator a
    path's form has between its folders is in every document, and needs no term."""
    return list(dict.fromkeys(fold(t) for t in form if t != SEPARATOR_TOKEN))


def _stemmed_phrase(form: Sequence[str], stem: Stem) -> list[tuple[Occur, Query]]:
    """A form of several words as a conjunction's clause: its stemmed phrase (in each
    language that stems it apart, any of them), scoring nothing: held where its words
    follow each other in any of their forms (`write devicetree binding` in the title
    "writing Devicetree bindings")."""
    phrases = [_form_query(STEMS, s) for s in stem(form)]
    held = phrases[0] if len(phrases) == 1 else Query.boolean_query([(Occur.Should, p) for p in phrases])
    return [(Occur.Must, Query.const_score_query(held, 0.0))]


def exact_phrase(form: Sequence[str], stem: Stem, within: Query | None = None) -> list[tuple[Occur, Query]]:
    """A form of several exact words as a conjunction's clauses: each word, exact, and
    the form's stemmed phrase (in each language that stems it apart, any of them);
    `within`: held only there (_only)."""
    phrases = [_form_query(STEMS, s, within=within) for s in stem(form)]
    held = phrases[0] if len(phrases) == 1 else Query.boolean_query([(Occur.Should, p) for p in phrases])
    words_ = [(Occur.Must, Query.term_query(SCHEMA, EXACT, t)) for t in _words(form)]
    return [*words_, (Occur.Must, Query.const_score_query(held, 0.0))]


def match_query(
    sides: Sequence[tuple[str, CompiledQuery, float]],
    stem: Stem | None = None,
    blend: Mapping[tuple[str, ...], float] | None = None,
    as_written: bool = False,
    held: Stem | None = None,
    within: Query | None = None,
) -> list[tuple[Occur, Query]]:
    """Each (field, compiled query, weight) side's forms as one flat disjunction (flat,
    so the engine can skip blocks that cannot reach the top); a document holding a
    negated form of any side is excluded. `stem` gives an exact phrase its stemmed forms.

    An exact form of several words matches only where its stemmed phrase does, which
    the stems side scores too: where those phrases are its own, the two are one clause,
    Must(the stemmed phrases) + Should(the exact words), the same scores with each
    phrase read once (a phrase of common words is most of a search's time:
    `container_of`, `GFP_KERNEL`). `blend`: a share of the weight for the forms a prefix
    stands for (_blended). `as_written` (the index holds documents without a stemmer:
    Chinese, Japanese): such a clause's phrase holds where its words are as written too,
    where those documents hold `kmem cache free` and never `kmem cach free`; scoring
    nothing there (its words, rare in the stems field, would outweigh every stemmed
    match), a document so matched is ranked by its exact words, as for a word alone.
    `held` (search's _held_in): the stemmed phrases that hold an exact form, `stem`'s and
    those of the index's other languages where looked for; such a phrase counts as the
    form written as is does. `within` (a condition scoring nothing, that few documents
    meet): every form held only there, each of a disjunction's clauses apart (_only)."""
    held = held or stem
    share = (blend or {}).get
    weights = {field: weight for field, _, weight in sides}
    forms = {field: dict.fromkeys(f for clause in compiled.positives for f in clause) for field, compiled, _ in sides}
    quoted = {form for field, compiled, _ in sides if field == EXACT for form in compiled.verbatim}
    paired: dict[tuple[str, ...], list[tuple[str, ...]]] = {}  # exact form → its stemmed phrases
    taken: set[tuple[str, ...]] = set()
    if stem is not None and STEMS in forms and EXACT in forms:
        for form in forms[EXACT]:
            phrases = stem(form) if len(form) > 1 else []
            if phrases and all(p in forms[STEMS] and p not in taken for p in phrases):
                paired[form] = phrases
                taken.update(phrases)
    out: list[tuple[Occur, Query]] = []
    for form, phrases in paired.items():
        either = [(Occur.Should, _form_query(STEMS, p, within=within)) for p in phrases]
        unscored = [*(held(form) if held is not None else []), *([form] if as_written else [])]
        either += [
            (Occur.Should, Query.const_score_query(_form_query(STEMS, p, within=within), 0.0))
            for p in dict.fromkeys(unscored)
            if p not in phrases
        ]
        holding = Query.boolean_query(either)
        exact = Query.boolean_query([(Occur.Must, Query.term_query(SCHEMA, EXACT, t)) for t in _words(form)])
        group = [
            (Occur.Must, Query.boost_query(holding, weights[STEMS] * share(form, 1.0))),
            (
                Occur.Must if form in quoted else Occur.Should,
                Query.boost_query(exact, weights[EXACT] * share(form, 1.0)),
            ),
        ]
        out.append((Occur.Should, Query.boolean_query(group)))
    # A quoted clause's forms are its exact ones alone (grammar.verbatim), where there
    # are exact forms (a phrase's exact words are a Must of its pair, above), weighing as
    # much as the stems and exact forms of another together.
    whole = sum(weights.values())
    as_typed = EXACT in forms
    for field, compiled, weight in sides:
        done = taken if field == STEMS else paired.keys() if field == EXACT else ()
        out += [
            (
                Occur.Should,
                Query.boost_query(
                    _form_query(field, form, held, within),
                    (whole if form in compiled.verbatim else weight) * share(form, 1.0),
                ),
            )
            for form in forms[field]
            if form not in done and not (as_typed and field == STEMS and form in compiled.verbatim)
        ]
        out += [(Occur.MustNot, _form_query(field, form, held)) for form in compiled.negatives]
    return out


def filter_query(conn: apsw.Connection, f: filters.Filter, searcher: tantivy.Searcher) -> Query | None:
    """The filter as a query that adds no score; None when nothing is filtered."""
    if not filters.active(f):
        return None
    parts: list[Query] = []
    if f.collections:
        ids = store.collection_ids(conn)
        parts.append(any_of(COLLECTION, [ids[n] for n in f.collections if n in ids]))
    parts += [Query.term_query(SCHEMA, TAG, tag_key(tag)) for tag in f.tags]
    if f.since or f.until:
        day = filters.day_number
        parts.append(
            Query.range_query(
                SCHEMA,
                DAY,
                tantivy.FieldType.Integer,
                day(f.since) if f.since else -(1 << 62),
                day(f.until) if f.until else 1 << 62,
            )
        )
    taken, left_out = filters.globs(f)
    for admitted in (taken, filters.type_globs(f)):
        if admitted:
            parts.append(Query.boolean_query([(Occur.Should, path_filter(g, searcher, conn)) for g in admitted]))
    if f.lang:
        parts.append(Query.term_query(SCHEMA, LANGUAGE, f.lang))
    if f.sender:
        parts.append(Query.regex_query(SCHEMA, SENDER, f".*{filters.regex_literal(store.sender_key(f.sender))}.*"))
    clauses = [(Occur.Must, p) for p in parts or [Query.all_query()]]  # a query of exclusions alone matches nothing
    clauses += [(Occur.MustNot, path_filter(g, searcher, conn)) for g in left_out]
    return Query.const_score_query(Query.boolean_query(clauses), 0.0)


def path_filter(glob: str, searcher: tantivy.Searcher | None = None, conn: apsw.Connection | None = None) -> Query:
    """The documents a `--path` glob admits: those matching any of its readings
    (filters.path_globs: `**/Kconfig` is also the Kconfig at the top)."""
    queries = [path_query(g, searcher, conn) for g in filters.path_globs(glob)]
    return queries[0] if len(queries) == 1 else Query.boolean_query([(Occur.Should, q) for q in queries])


def path_query(glob: str, searcher: tantivy.Searcher | None = None, conn: apsw.Connection | None = None) -> Query:
    """The documents whose path matches `glob`, by the cheapest query that means it: a
    folder's glob, an extension's or both are terms of the path's parts (_parts_query);
    else a regex over the path, reversed when the glob's literal end is longer than its
    literal start, since the term dictionary is narrowed by the literal characters a
    regex starts with. With a `searcher`, a regex matching few documents is run once,
    as the set of their ids; with `conn` too, a glob that no literal end narrows finds
    those ids in SQLite."""
    atoms = filters.glob_atoms(glob)
    parts = _parts_query(atoms)
    if parts is not None:
        return parts
    chars = [a.char for a in atoms]
    lead = next((i for i, c in enumerate(chars) if c is None), len(chars))
    tail = next((i for i, c in enumerate(reversed(chars)) if c is None), len(chars))

    def regex() -> Query:
        """Built only where it is searched: compiling it took ~1 ms ("*.dts*")."""
        if tail > lead:
            return Query.regex_query(SCHEMA, PATH_REVERSED, filters.glob_regex(glob, reverse=True))
        return Query.regex_query(SCHEMA, PATH, filters.glob_regex(glob))

    if searcher is None:
        return regex()
    if conn is not None and max(lead, tail) < PATH_ANCHOR_MIN:
        found = kept.path_glob_ids(conn, glob, PATH_SETTLED_MAX + 1)
    else:
        hits = searcher.search(regex(), PATH_SETTLED_MAX + 1, count=False).hits
        found = [int(i) for i in searcher.fast_field_values(ID, [addr for _, addr in hits]) if i is not None]
    if len(found) > PATH_SETTLED_MAX:
        return regex()
    return any_of(ID, found)


def _parts_query(atoms: Sequence[filters.GlobAtom]) -> Query | None:
    """The glob as terms of the path's parts, when it is a folder's glob, an extension's
    or both ("a/b/*", "*/mm/*", "*.rst", "drivers/*/usb/*.c"); None for any other.

    Such a glob is `folder` + `*` + `ext`: `folder` ends with "/" and `ext` is empty or
    "." and letters without a "/" or a "." (each may be missing, not both). Since `*`
    matches any run, "/" included, a path matches it exactly when a folder of its (its
    path up to one of its "/") matches `folder`, and its extension (its name from the
    last ".") is `ext`: each folder and the extension are terms of PATH_PARTS. A
    `folder` with a wildcard is a regex over the folders alone (a tree has a few
    thousand), not over every path."""
    tail = len(atoms)
    while tail and atoms[tail - 1].char is not None:
        tail -= 1
    if not tail or atoms[tail - 1].regex != ".*":
        return None
    folder, ext = atoms[: tail - 1], "".join(a.char or "" for a in atoms[tail:])
    if not (folder or ext) or (folder and folder[-1].char != "/"):
        return None
    if ext and not (ext.startswith(".") and "/" not in ext and "." not in ext[1:]):
        return None
    parts = [Query.term_query(SCHEMA, PATH_PARTS, ext)] if ext else []
    if any(a.char is None for a in folder):
        parts.append(Query.regex_query(SCHEMA, PATH_PARTS, "".join(a.regex for a in folder)))
    elif folder:
        parts.append(Query.term_query(SCHEMA, PATH_PARTS, "".join(a.char or "" for a in folder)))
    return parts[0] if len(parts) == 1 else Query.boolean_query([(Occur.Must, q) for q in parts])


def _phrase(clauses: Sequence[Clause], lexical: Lexical) -> tuple[str, ...] | None:
    """The query's words in order, as one phrase, for a query of plain words (no
    negation, no prefix) of 2 to max_terms tokens in two clauses or more; None otherwise (a
    single clause, `snake_case` or a quoted phrase, is matched as a phrase already). A
    pasted message's values at its ends are left out (_printed)."""
    if len(clauses) < 2 or any(c.negated or c.prefix for c in clauses):
        return None
    tokens = _printed(clauses) if len(_split(clauses)) > 1 else tuple(t for c in clauses for t in c.tokens)
    return tokens if 2 <= len(tokens) <= lexical.max_terms else None


# Punctuation ending a word as typed that ends a part of the query (_parts).
_PART_ENDS = tuple(":;,.!?")
# A value a program printed into its message (a count, an id, an address): digits, hex
# after 0x, or eight hex digits and more with a digit among them. Its source holds the
# format there (`address: %px`), so no file holds the message's words and the value in a row.
_VALUE_RE = re.compile(r"\d+|0x[0-9a-f]+|(?=[a-f]*\d)[0-9a-f]{8,}")


def _split(clauses: Sequence[Clause]) -> list[Sequence[Clause]]:
    """The query's words as typed in parts, cut after each that punctuation ends."""
    parts: list[Sequence[Clause]] = []
    current: list[Clause] = []
    for c in clauses:
        current.append(c)
        if (c.raw + c.cut).endswith(_PART_ENDS):
            parts.append(current)
            current = []
    if current:
        parts.append(current)
    return parts


def _printed(part: Sequence[Clause]) -> tuple[str, ...]:
    """The tokens of a part of a pasted message without the values at its ends: the
    words as typed there that hold a value (_valued), while two tokens are left, then
    the values (_VALUE_RE) at the ends of what is left. What is left is what its
    program's source holds in a row: `BUG: kernel NULL pointer dereference, address:
    0000000000000008` is `… dereference, address: %px` in x86's fault.c, `BUG: scheduling
    while atomic: swapper/0/1/0x00000002` (a task's name, pid, cpu and count) is
    `…atomic: %s/%d/0x%08x` in sched/core.c, and `VFS: Unable to mount root fs on
    unknown-block(0,0)` is `… root fs on %s` in init/do_mounts.c; `ext4_lookup:1234:`,
    alone, keeps its name."""
    lo, hi = 0, len(part)
    left = sum(len(c.tokens) for c in part)
    while lo < hi and _valued(part[lo]) and left - len(part[lo].tokens) >= 2:
        left -= len(part[lo].tokens)
        lo += 1
    while hi > lo and _valued(part[hi - 1]) and left - len(part[hi - 1].tokens) >= 2:
        left -= len(part[hi - 1].tokens)
        hi -= 1
    tokens = [t for c in part[lo:hi] for t in c.tokens]
    lo, hi = 0, len(tokens)
    while lo < hi and _VALUE_RE.fullmatch(tokens[lo]):
        lo += 1
    while hi > lo and _VALUE_RE.fullmatch(tokens[hi - 1]):
        hi -= 1
    return tuple(tokens[lo:hi])


def _valued(c: Clause) -> bool:
    """Whether a word as typed holds a value a program printed (or is no word at all)."""
    return not c.tokens or any(_VALUE_RE.fullmatch(t) for t in c.tokens)


def _parts(clauses: Sequence[Clause]) -> list[tuple[str, ...]]:
    """The parts of a query of plain words (one _phrase) where punctuation after a word
    splits it, each without the values at its ends (_printed) and of two words or more:
    a pasted message joins what several lines print (`Kernel panic - not syncing: VFS:
    Unable to mount root fs`), which no file holds in a row, but one part of it is a
    program's line (`Unable to mount root fs`). None for a query of one part."""
    parts = _split(clauses)
    return [part for part in map(_printed, parts) if len(part) > 1] if len(parts) > 1 else []


class _Seen(NamedTuple):
    """What was read beside the matches: each one's language_code, and its place in the
    engine's order of equal scores (its address: the engine keeps the first of a tie)."""

    languages: dict[int, int]
    places: dict[int, tuple[int, int]]


class _Name(NamedTuple):
    """A name the query asks for (Preferences._names): the documents having it, and what
    each gets (name_match times its words' idf)."""

    query: Query
    credit: float


def _top(searcher: tantivy.Searcher, query: Query, n: int, seen: _Seen | None = None) -> list[tuple[int, float]]:
    """The best `n` matches: (doc id, bm25 as the engine scores it: higher is better),
    ties in the engine's order; `seen`, when given, gets each one's language and place."""
    hits = searcher.search(query, n, count=False).hits
    addrs = [addr for _, addr in hits]
    ids = searcher.fast_field_values(ID, addrs)
    if seen is not None:
        codes = searcher.fast_field_values(LANGUAGE_CODE, addrs)
        for i, c, a in zip(ids, codes, addrs):
            if i is not None:
                seen.languages[int(i)] = int(c or 0)
                seen.places[int(i)] = (a.segment_ord, a.doc)
    return [(int(doc_id), float(score)) for (score, _), doc_id in zip(hits, ids) if doc_id is not None]


def _settled(
    top: list[tuple[int, float]],
    ranked: list[tuple[int, float, float]],
    fetch: int,
    pool: int,
    lift: float,
    credit: float,
) -> bool:
    """Whether `ranked`'s best `pool` are those of every match: all were read (`top` is
    the best `fetch` by bm25), or one not read, scoring at most top[-1], lifted by at
    most `lift` and given at most `credit`, cannot pass the pool's last."""
    return len(top) < fetch or len(ranked) < pool or top[-1][1] * lift + credit <= ranked[pool - 1][2]


def _held_first(
    ranked: list[tuple[int, float, float]], held: Collection[int], best: float
) -> list[tuple[int, float, float]]:
    """`ranked` with the `held` documents first, in their order there, each ranked as the
    best match, `best` (so a score follows the order)."""
    if not held:
        return ranked
    return [(d, s, best) for d, s, _ in ranked if d in held] + [r for r in ranked if r[0] not in held]


def _placed_first(
    ranked: list[tuple[int, float, float]], located: Mapping[int, float], depth: Mapping[int, int]
) -> list[tuple[int, float, float]]:
    """`ranked` with the `located` documents first, the one nearest its collection's top
    first (`page_alloc.c`: mm/'s, then arch/arm64/kvm/hyp/nvhe/'s), then in their order
    there, each ranked as the best match."""
    if not located or not ranked:
        return ranked
    best = ranked[0][2]
    first = sorted((r for r in ranked if r[0] in located), key=lambda r: depth[r[0]])
    return [(d, s, best) for d, s, _ in first] + [r for r in ranked if r[0] not in located]


def _name_words(clauses: Sequence[Clause], stem: Stem, whole: str, languages: Sequence[str | None]) -> tuple[str, ...]:
    """The names a file named after part of the query has (`whole` aside): each word but
    a function word, as typed and as its stem (`forks` → fork.c), and two or three such
    words as typed, in the query's order, at most name_words_span apart (`coding style`
    → coding-style.rst, `page cache writeback` → page-writeback.c)."""
    plain = [
        c.tokens[0]
        if len(c.tokens) == 1 and not (c.negated or c.prefix or c.phrase or is_stopword(c.tokens[0], languages))
        else ""
        for c in clauses
    ]
    words = [fold(token) for token in plain]
    found: dict[str, None] = {}
    for i, word in enumerate(words):
        if not word:
            continue
        found.update(dict.fromkeys((word, *(fold(f[0]) for f in stem([plain[i]])))))
    at = [i for i, word in enumerate(words) if word]
    span = PIPELINE.lexical.name_words_span
    for n in (2, 3):
        for chosen in combinations(at, n):
            if chosen[-1] - chosen[0] < span:
                found[" ".join(words[i] for i in chosen)] = None
    found.pop(whole, None)
    return tuple(found)


class Preferences:
    """Preferences that scale a match's bm25, or add to it; `best` applies them to every
    match they could lift into the results, so the results do not depend on how many are
    asked for. Language is small, deciding near-ties only; a phrase grows with its length,
    as a long line found word for word is the known item; a name is worth its words:
    - by phrase, × (1 + phrase_match × words after the first): the document holds the
      query's words in order, in any of their forms (a pasted line, a description, an
      error message; `write devicetree binding` in the title "writing Devicetree
      bindings", which came 38th when only the words as typed counted), or else the
      words of its longest part as typed (_parts: a pasted message);
    - by name, + name_match × the idf of the name's words: the document's title or file
      name is the query, word for word ("tar" → tar.md), or, of a name few files have,
      part of it (_name_words: "how does printk work" → printk.c). Its names are as a
      short field of their own: a long file is named after what it holds, and its bm25
      for the words of its name is the lower the longer it is;
    - by language, × (1 + language_prior × share): the share of the document's language
      among the query's languages, relative to the largest. None (no stemmer: CJK, or
      not known) is many languages at once, so it earns no preference.
    Before all of them come the documents defining the query's name of code (`defined`),
    then the files it names by path (`placed`: _placed, each with its depth), then those
    holding a pasted message whole (`printed`: its phrase, of 3 words or more, where
    punctuation parts the query): the file printing `BUG: kernel NULL pointer
    dereference, address: …` came 7th, after six others' `kernel NULL pointer
    dereference` in shorter files."""

    def __init__(
        self,
        query: str,
        clauses: Sequence[Clause],
        languages: Sequence[str | None],
        counts: Mapping[str | None, int],
        lexical: Lexical,
        stem: Stem,
        defined: Mapping[int, defining.Standing] | None = None,
        placed: Mapping[int, int] | None = None,
        held: Stem | None = None,
    ) -> None:
        self.lexical = lexical
        self.stem = stem
        self.held = held or stem  # the stemmed phrases that hold a phrase (match_query)
        self.weights: dict[int, int] = {
            language_code(lang): counts.get(lang, 0) for lang in languages if lang is not None
        }
        self.top = max(self.weights.values(), default=0)
        self.by_language = len(counts) > 1 and lexical.language_prior > 0 and self.top > 0
        name = words(query) if lexical.name_match > 0 else ""
        self.name = name if name and name.count(" ") < lexical.max_terms else None
        self.name_words = _name_words(clauses, stem, self.name, languages) if self.name is not None else ()
        self.phrase = _phrase(clauses, lexical) if lexical.phrase_match > 0 else None
        self.phrase_bonus = lexical.phrase_match * (len(self.phrase) - 1) if self.phrase is not None else 0.0
        self.printed = self.phrase is not None and len(self.phrase) >= 3 and len(_split(clauses)) > 1
        # Each part's bonus, the longest first.
        self.parts = sorted(
            ((lexical.phrase_match * (len(part) - 1), part) for part in (_parts(clauses) if self.phrase else ())),
            reverse=True,
        )
        self.defined = defined or {}
        self.placed = placed or {}
        self.active = (
            self.by_language
            or self.name is not None
            or self.phrase is not None
            or bool(self.defined)
            or bool(self.placed)
        )

    def best(
        self,
        searcher: tantivy.Searcher,
        query: Query,
        pool: int,
        df: Callable[[str], int],
        within: Within | None = None,
    ) -> list[tuple[int, float, float]]:
        """The best `pool` of all matches of `query` by ranking bm25: (doc id, bm25,
        ranking bm25), bm25 negative (lower is better), as the protocol has always given it. The
        first `preference_pool` matches give the pool's last ranking value; while a match
        beyond them could still be lifted past it, more are read. `within`: the matches of
        `query` where a condition that few documents meet holds (its names, the
        documents defining its name), read apart; else the condition is put around it."""
        if not self.active:
            return [(doc_id, -s, -s) for doc_id, s in _top(searcher, query, pool)]
        fetch = max(pool, self.lexical.preference_pool)
        seen = _Seen({}, {})
        # The phrase's clauses (none without one), made once for every round.
        phrase = [] if self.phrase is None else _stemmed_phrase(self.phrase, self.held)
        held = Query.boolean_query(phrase) if phrase else None
        parts = [(bonus, exact_phrase(part, self.held)) for bonus, part in self.parts]
        # Any part held: one read of the matches finds the documents each part is among.
        any_part = Query.boolean_query([(Occur.Should, Query.boolean_query(c)) for _, c in parts]) if parts else None
        # Every holder of a pasted message is read: they come first, wherever their bm25 is.
        among = not self.printed and self._held_together(searcher.num_docs, df) >= self.lexical.phrase_among_from
        all_phrased = False
        names = self._names(searcher, df)  # looked up once
        # A condition that many documents meet (a phrase) goes around the query: on each
        # clause, it would be read for each.
        around = partial(_only, query)
        few = within or around
        while True:
            having, credit, unread = self._named(searcher, few, names, fetch, seen)
            defining, all_defining = self._subset(searcher, few, self._defined_query(), fetch, seen)
            located, _ = self._subset(searcher, few, self._placed_query(), fetch, seen)
            boosts = dict.fromkeys(defining, self.lexical.definition_match)
            top = _top(searcher, query, fetch, seen)
            lift = 1.0 + (self.lexical.language_prior if self.by_language else 0.0)
            lift += 0.0 if all_defining else self.lexical.definition_match
            read = {**dict(top), **having, **defining, **located}
            if among:  # a holder not read is lifted by at most the phrase's bonus
                phrased = self._among(searcher, phrase, top)
                parted = self._parted(searcher, parts, top)
                ranked = self._rank({**read, **phrased}, phrased, boosts, credit, seen, parted)
                if _settled(top, ranked, fetch, pool, lift + self.phrase_bonus, unread):
                    break
                among = False
            phrased, all_phrased = self._subset(searcher, around, held, fetch, seen)
            holders, all_parted = self._subset(searcher, around, any_part, fetch, seen)
            parted = self._parted(searcher, parts, list(holders.items()))
            ranked = self._rank({**read, **phrased, **holders}, phrased, boosts, credit, seen, parted)
            parts_lift = 0.0 if all_parted else self.parts[0][0]
            bound = lift + (parts_lift if all_phrased else self.phrase_bonus)
            if _settled(top, ranked, fetch, pool, bound, unread):
                break
            if all_phrased and not all_parted:  # a closer bound may spare a round
                parts_lift = self._parts_lift(searcher, around, parts, fetch, seen, holders)
                parted = self._parted(searcher, parts, list(holders.items()))
                ranked = self._rank({**read, **phrased, **holders}, phrased, boosts, credit, seen, parted)
                if _settled(top, ranked, fetch, pool, lift + parts_lift, unread):
                    break
            fetch *= self.lexical.pool_growth
        if self.printed and all_phrased and 0 < len(phrased) <= self.lexical.preference_pool:
            ranked = _held_first(
                ranked, phrased, ranked[0][2]
            )  # at most so many, so the results do not depend on the limit
        ranked = self._defined_first(_placed_first(ranked, located, self.placed), defining)
        return [(doc_id, -s, -r) for doc_id, s, r in ranked[:pool]]

    def _parts_lift(
        self,
        searcher: tantivy.Searcher,
        matching: Within,
        parts: list[tuple[float, list[tuple[Occur, Query]]]],
        fetch: int,
        seen: _Seen,
        holders: dict[int, float],
    ) -> float:
        """What a part lifts a match not read by at most: the bonus of the longest part
        whose holders were not all read (`holders` gets those of the longer parts, each
        read whole). A pasted `WARNING: CPU: 0 PID: 1 at …` has a part of common words
        (`0 pid`) in thousands of files, while its long part is in none: bounded by the
        long part's bonus, such a search read its matches twice (78 ms, now 56)."""
        for bonus, condition in parts:  # the longest first
            found, whole = self._subset(searcher, matching, Query.boolean_query(condition), fetch, seen)
            holders.update(found)
            if not whole:
                return bonus
        return 0.0

    def _defined_first(
        self, ranked: list[tuple[int, float, float]], defining: dict[int, float]
    ) -> list[tuple[int, float, float]]:
        """`ranked` with the documents defining the name first, as `search --symbol`
        orders them up to their paths (a vendored or test copy after the file nearest the
        top), then by rank, each ranked as the best match: a big header's bm25 for a name
        it holds once is a fraction of a short caller's (`devm_kzalloc`'s definition in
        device.h came 12th), and among files defining it the shortest copy scored best
        (`list_add`: scripts/mod/list.h, then tools/). Only where every defining document
        was read (at most preference_pool of them, however many are fetched), so the
        results do not depend on the limit; the others keep their order."""
        if not defining or len(self.defined) > self.lexical.preference_pool:
            return ranked
        best = ranked[0][2]
        first = sorted((r for r in ranked if r[0] in defining), key=lambda r: self.defined[r[0]])
        return [(doc_id, s, best) for doc_id, s, _ in first] + [r for r in ranked if r[0] not in defining]

    def _names(self, searcher: tantivy.Searcher, df: Callable[[str], int]) -> list[_Name]:
        """The names documents have that the query asks for: its own, and each of its
        parts that at most name_part_files_max documents have; none that no document
        has: a query's matches met with a name's were read whole (`wait_event_in*`:
        30 ms of 84)."""
        if self.name is None:
            return []
        found = [self.name] if searcher.doc_freq(NAMES, self.name) else []
        found += [w for w in self.name_words if 0 < searcher.doc_freq(NAMES, w) <= self.lexical.name_part_files_max]
        docs = searcher.num_docs
        return [
            _Name(
                Query.term_query(SCHEMA, NAMES, name),
                self.lexical.name_match * sum(_idf(max(df(w), 1), docs) for w in name.split()),
            )
            for name in found
        ]

    def _named(
        self, searcher: tantivy.Searcher, matching: Within, names: list[_Name], n: int, seen: _Seen
    ) -> tuple[dict[int, float], dict[int, float], float]:
        """The best `n` matches (`matching`) having any of the `names`, with their bm25;
        what names give each (the most of those it has: a second read, of those matches
        alone, where there are several names); and what a match not read may still get."""
        if not names:
            return {}, {}, 0.0
        condition = Query.boolean_query([(Occur.Should, name.query) for name in names])
        having, every = self._subset(searcher, matching, condition, n, seen)
        most = max(name.credit for name in names)
        if len(names) == 1 or not having:
            return having, dict.fromkeys(having, most), 0.0 if every else most
        credits = Query.disjunction_max_query([Query.const_score_query(m.query, m.credit) for m in names])
        among = Query.const_score_query(any_of(ID, list(having)), 0.0)
        both = Query.boolean_query([(Occur.Must, among), (Occur.Must, credits)])
        hits = searcher.search(both, len(having), count=False).hits
        ids = searcher.fast_field_values(ID, [addr for _, addr in hits])
        credit = {int(i): float(score) for (score, _), i in zip(hits, ids) if i is not None}
        return having, credit, 0.0 if every else most

    def _placed_query(self) -> Query | None:
        return any_of(ID, list(self.placed)) if self.placed else None

    def _defined_query(self) -> Query | None:
        return any_of(ID, list(self.defined)) if self.defined else None

    def _held_together(self, docs: int, df: Callable[[str], int]) -> float:
        """About how many of the `docs` documents hold every word of the phrase (`df`:
        a word's documents), were the words independent; 0 without a phrase."""
        if self.phrase is None or not docs:
            return 0.0
        estimate = float(docs)
        for word in dict.fromkeys(self.phrase):
            estimate *= df(word) / docs
        return estimate

    @staticmethod
    def _parted(
        searcher: tantivy.Searcher,
        parts: list[tuple[float, list[tuple[Occur, Query]]]],
        top: list[tuple[int, float]],
    ) -> dict[int, float]:
        """The bonus of the longest part (_parts) each of the matches `top` holds."""
        bonus: dict[int, float] = {}
        for value, condition in parts:  # the longest first
            for doc_id in Preferences._among(searcher, condition, top):
                bonus.setdefault(doc_id, value)
        return bonus

    @staticmethod
    def _among(
        searcher: tantivy.Searcher, condition: list[tuple[Occur, Query]], top: list[tuple[int, float]]
    ) -> dict[int, float]:
        """The matches of `top` that meet `condition` (a conjunction's clauses), with
        their bm25. The documents are a clause of their own beside the condition's: nested
        in a query of its own, a phrase was read over every document holding its words."""
        if not condition or not top:
            return {}
        scores = dict(top)
        hits = searcher.search(
            Query.boolean_query([(Occur.Must, any_of(ID, list(scores))), *condition]), len(scores), count=False
        ).hits
        found = searcher.fast_field_values(ID, [addr for _, addr in hits])
        return {int(i): scores[int(i)] for i in found if i is not None}

    @staticmethod
    def _subset(
        searcher: tantivy.Searcher, matching: Within, condition: Query | None, n: int, seen: _Seen
    ) -> tuple[dict[int, float], bool]:
        """The best `n` matches (`matching`) that meet `condition` (their bm25
        unchanged), and whether they are all of them."""
        if condition is None:
            return {}, True
        found = _top(searcher, matching(Query.const_score_query(condition, 0.0)), n + 1, seen)
        return dict(found[:n]), len(found) <= n

    def _rank(
        self,
        found: dict[int, float],
        phrased: dict[int, float],
        boosts: dict[int, float],
        credit: dict[int, float],
        seen: _Seen,
        parted: dict[int, float],
    ) -> list[tuple[int, float, float]]:
        """(doc id, bm25, ranking bm25), best first (higher is better here), a tie in the
        engine's order: then a match not read, which comes after those read in that
        order, never ties its way in, so the results do not depend on how many are read.
        `boosts`: what a definition adds for the documents holding one;
        `credit`: what names give those having them (_named), but in a language the
        query is not searched in (its translations share its name: `tar` in 40 languages
        of manual pages); `parted`: a part's bonus, for those holding one and not the phrase."""
        ranked = []
        for doc_id, score in found.items():
            f = 1.0 + boosts.get(doc_id, 0.0)
            f += self.phrase_bonus if doc_id in phrased else parted.get(doc_id, 0.0)
            given = credit.get(doc_id, 0.0)
            if self.by_language:
                code = seen.languages.get(doc_id, 0)
                f += self.lexical.language_prior * self.weights.get(code, 0) / self.top
                given = given if code == 0 or code in self.weights else 0.0
            ranked.append((doc_id, score, score * f + given))
        ranked.sort(key=lambda r: (-r[2], seen.places[r[0]]))
        return ranked


_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
# A device tree `compatible` string, `vendor,device`, typed alone (in quotes or not): the
# C driver whose match table holds it defines it (symbols.COMPATIBLE).
_COMPATIBLE = re.compile(r'"?([A-Za-z0-9][\w+-]*,[\w.+-]+)"?')
# A name as a compiler or linker quotes it in a message: 'kmap_atomic', `kmalloc_array', ‘ret’;
# or as Markdown marks code, `kmalloc` (in double quotes a word is the word as text); a
# declaration so quoted, 'struct page', is two clauses: 'struct and page'.
_COMPILER_QUOTED = re.compile(r"['`‘]([A-Za-z_$][\w$]*)['’]|`([A-Za-z_$][\w$]*)`")


def _quoted(raw: str) -> str | None:
    """The name a clause quotes (_COMPILER_QUOTED), if it is one quoted."""
    m = _COMPILER_QUOTED.fullmatch(raw)
    return next(name for name in m.groups() if name) if m else None


# An oops's label of the instruction pointer's frame: x86-64's RIP, i386's EIP, arm64's
# and RISC-V's pc (`pc : foo+0x1c/0x30`), MIPS's epc, LoongArch's era.
_POINTERS = frozenset({"rip", "eip", "pc", "epc", "era"})
_QUOTE_OPENED = re.compile(r"['`‘]([a-z]+)")
_QUOTE_CLOSED = re.compile(r"([A-Za-z_$][\w$]*)['’]")


def _code_name(
    clauses: Sequence[Clause], lexical: Lexical, inflected: Callable[[str], float], stop: Callable[[str], bool]
) -> tuple[str | None, bool, frozenset[str]]:
    """The query's one name of code, as typed, whose definitions come first
    (definition_match), and whether it is being typed (it ends with `*`); None for any
    other query (a phrase is no name of code). A name ending in a prefix is the name
    typed so far: a picker sends `mutex_lock*` for `mutex_lock` typed whole, whose
    definitions then come first too, and `spin_lock_i*` or `sched_*` as a name's next
    word is begun, whose words search no more than `spin_lock` or `sched` (too short a
    prefix) while the names completing it can be defined. A single plain word is a name
    where the index holds it uninflected (`inflected`: the share of documents holding
    another form of it; name_inflection_share): `kmalloc`, not `lock`; or where it is
    typed as a type's name is, with a capital (`Reconciler`: the types defined in its
    case); one being typed (`allocat*`, a picker's) is, as the names it completes may
    be defined (`allocate`), whatever other forms its words have. After a keyword
    declaring it (`struct page`, `fn main`: defining.DECLARING), a word is a name (after
    one that is a word of prose too, as it would be alone), whose definitions of the
    kinds the keyword asks for (the third value) come first. A stack frame's function
    is a name (`schedule+0x2e/0x90`), a device tree's `compatible` string
    (`"snps,dw-apb-uart"`) one its drivers define. Of a longer query, the one name of
    code it quotes as a compiler does (`implicit declaration of function 'kmap_atomic'`)
    or places in a frame (`ext4_fill_super+0x1a2b/0x1d80 [ext4]`), or else that a question
    names among words of prose (_asked_about)."""
    if lexical.definition_match <= 0:
        return None, False, frozenset()
    kinds = _declaring(clauses[0]) if len(clauses) == 2 else frozenset()
    any_word = bool(kinds) and clauses[0].raw not in defining.PROSE_KEYWORDS
    if kinds:
        clauses = clauses[1:]
    elif len(clauses) > 1:
        name, kinds = _quoted_name(clauses)
        return (name, False, kinds) if name is not None else (_asked_about(clauses, stop), False, frozenset())
    if clauses[0].negated:
        return None, False, frozenset()
    if _framed(clauses[0]):
        return clauses[0].raw, False, kinds
    if not kinds and (compatible := _COMPATIBLE.fullmatch(clauses[0].raw)) is not None:
        return compatible[1], False, frozenset({COMPATIBLE})
    raw = _quoted(clauses[0].raw) or clauses[0].raw
    typing = raw.endswith("*")
    raw = raw.removesuffix("*")
    if not _IDENTIFIER.fullmatch(raw):
        return None, False, frozenset()
    if NAMED_IN_CODE.search(raw):
        return raw, typing, kinds
    word = raw.lower()
    if (typing and not clauses[0].prefix) or stop(word):
        return None, False, frozenset()  # `k*`: one letter is no name yet
    if not any_word and not typing and inflected(word) > lexical.name_inflection_share:
        # A word of prose, but as a type's name is typed (`Reconciler`, `Console`): the
        # types defined in its case, where some are (_defining keeps those alone).
        capital = raw[:1].isupper() and not raw.isupper() and not kinds
        return (raw, typing, defining.TYPES) if capital else (None, False, frozenset())
    return raw, typing, kinds


def _quoted_name(clauses: Sequence[Clause]) -> tuple[str | None, frozenset[str]]:
    """The one name of code (snake_case, camelCase; any after a declaring keyword, with
    the kinds it asks for) that a pasted compiler or linker message quotes among its
    words (`'kmap_atomic'`, `'struct page' has no member named 'mappin'`), or a stack
    frame gives (_framed), or the one `compatible` string a pasted device tree line
    quotes (`compatible = "snps,dw-apb-uart";`); None where it names none or several.
    A declaration quoted beside other names is the one the message is about (`'struct
    sk_buff' has no member named 'csum_start'`: the struct whose members to read), and
    so is the frame the instruction pointer names in a pasted oops (`RIP:
    0010:__list_del_entry_valid+0x25/0xc0` above its call trace: where it happened)."""
    names: set[tuple[str, frozenset[str]]] = set()
    pointed: set[str] = set()
    for before, c, after in zip([None, *clauses], clauses, [*clauses[1:], None]):
        if c.negated:
            continue
        if (quoted := _quoted(c.raw)) and NAMED_IN_CODE.search(quoted):
            names.add((quoted, frozenset()))
        elif _framed(c):
            names.add((c.raw, frozenset()))
            if before is not None and before.raw.rstrip(":").lower() in _POINTERS:
                pointed.add(c.raw)
        elif c.raw.startswith('"') and (compatible := _COMPATIBLE.fullmatch(c.raw)):
            names.add((compatible[1], frozenset({COMPATIBLE})))
        elif (
            after is not None
            and (opened := _QUOTE_OPENED.fullmatch(c.raw))
            and opened[1] in defining.DECLARING
            and (closed := _QUOTE_CLOSED.fullmatch(after.raw))
        ):
            names.add((closed[1], defining.DECLARING[opened[1]]))
    declared = [n for n in names if n[1]]
    if len(declared) == 1:
        return declared[0]
    if len(pointed) == 1:
        return pointed.pop(), frozenset()
    return names.pop() if len(names) == 1 else (None, frozenset())


def _asked_about(clauses: Sequence[Clause], stop: Callable[[str], bool]) -> str | None:
    """The one name of code (snake_case, camelCase) a question names, unquoted, among words
    of prose, a function word among them (`how does mutex_lock work?`: `work` ruled, and
    test-ww_mutex.c came first); None for words of code alone (`kmalloc GFP_KERNEL` asks
    for their uses, not GFP_KERNEL's definition)."""
    if not any(len(c.tokens) == 1 and not c.negated and stop(c.tokens[0]) for c in clauses):
        return None
    named = {
        word
        for c in clauses
        if not c.negated and _IDENTIFIER.fullmatch(word := c.raw.rstrip(_ENDING)) and NAMED_IN_CODE.search(word)
    }
    return named.pop() if len(named) == 1 else None


# What ends a word of a sentence, not the word.
_ENDING = "?!.,;:"


# A word naming a file: a path (`kernel/sched/fair.c`, `/usr/src/linux/Makefile`) or a
# name with an extension (`page_alloc.c`).
_FILE_NAMED = re.compile(r"/?(?:[\w.+-]+/)+[\w.+-]*\w|[\w+-][\w.+-]*\.[A-Za-z]\w*")


# Around a file's name as code or prose writes it: `#include <linux/module.h>`, `"internal.h"`.
_ENCLOSING = "<>\"'`"
# A file's line as a place gives it, after its path (`:5413`, `:4312:5:`: grammar._LINE).
_LINE_CUT = re.compile(r":(\d+)")


def _placed(
    searcher: tantivy.Searcher, conn: apsw.Connection, clauses: list[Clause], most: int, frame: Frame | None = None
) -> tuple[list[Clause], dict[int, int], int | None]:
    """The documents at the one file the query names (`mm/page_alloc.c:5413` in a pasted
    warning, `kernel/sched/fair.c`, `<linux/module.h>`, a name files are known by spelled so: `MAINTAINERS`,
    `Makefile`: config.NAMED_FILES), by its longest end that is an indexed path or ends
    one, each with its depth in its collection, and the line it names there, if any;
    none where the query names several files, or the name is more than `most` files'
    (but for a name files are known by, asked for alone: those at a collection's top). A
    path's words are in many files' text, while the file so named is the one asked for.
    The clauses come back with an absolute path's (`/usr/src/linux/mm/slub.c`) cut to
    that end, the words it holds, but for a quoted one: the text asked for as typed (who
    links to `"Documentation/process/submitting-patches.rst"` where the collection's top
    is Documentation/). Of a pasted traceback's files, its `frame`'s is the one named,
    at its line."""
    named = [
        (i, path)
        for i, c in enumerate(clauses)
        if not c.negated
        and not c.prefix
        and (_FILE_NAMED.fullmatch(path := c.raw.strip(_ENCLOSING).removeprefix("./")) or path in NAMED_FILES)
    ]
    if frame is not None:
        named = [(i, path) for i, path in named if path == frame.path.removeprefix("./")][:1]
    if len({path for _, path in named}) != 1:
        return clauses, {}, None
    if named[0][1] in NAMED_FILES and searcher.doc_freq(NAMES, words(named[0][1])) > most:
        # `Makefile`: thousands, told by its name's term (a path regex reads them all);
        # asked for alone, the one at a collection's top is the project's own.
        top = store.ids_at_top(conn, named[0][1]) if len(clauses) == 1 else []
        return clauses, dict.fromkeys(top, 0), None
    parts = named[0][1].strip("/").split("/")
    for start in range(len(parts)):
        end = "/".join(parts[start:])
        hits = searcher.search(path_filter("**/" + end, searcher, conn), most + 1, count=False).hits
        if not hits:
            continue
        if len(hits) > most:
            return clauses, {}, None
        ids = [int(i) for i in searcher.fast_field_values(ID, [addr for _, addr in hits]) if i is not None]
        at = named[0][0]
        cut = _LINE_CUT.match(clauses[at].cut)
        line = int(cut.group(1)) if cut else frame.line if frame is not None else None
        if start and not clauses[at].raw.startswith('"'):  # a quoted path is searched as typed
            clauses = [*clauses[:at], replace(clauses[at], tokens=tuple(tokenize(end)), raw=end), *clauses[at + 1 :]]
        depths = {doc_id: doc.rel_path.count("/") for doc_id, doc in store.docs_by_ids(conn, ids).items()}
        return clauses, depths, line
    return clauses, {}, None


class Frame(NamedTuple):
    """A file and line a pasted traceback names."""

    path: str
    line: int


# A place a traceback gives as words: Python's frame (`File "/usr/lib/python3.11/http/
# client.py", line 1294, in request`), Perl's `die` (`at tools/fetch.pl line 42.`).
_FRAME = re.compile(r'\bFile "([^"\n]+)", line (\d+)|\bat (\S+) line (\d+)\b')


def _last_frame(query: str) -> Frame | None:
    """The last place the query gives so: a Python traceback lists the frame where the
    error was raised last."""
    found = None
    for m in _FRAME.finditer(query):
        found = Frame(m[1], int(m[2])) if m[1] is not None else Frame(m[3], int(m[4]))
    return found


def _framed(c: Clause) -> bool:
    """Whether the clause is a stack frame's function (`__schedule+0x2e3/0x8b0`), a name
    whatever words it holds."""
    return not c.negated and "+0x" in c.cut.lower()


def _declaring(c: Clause) -> frozenset[str]:
    """The kinds of definition a clause that is a declaring keyword asks for; none for
    another."""
    if c.negated or c.phrase or c.prefix:
        return frozenset()
    return defining.DECLARING.get(c.raw, frozenset())


def _defined_words(c: Clause, starting: defining.Starting) -> list[str]:
    """For an identifier being typed (`of_pr*`, positive), the words that follow its
    whole tokens in the names defined that start as typed (property, prop: not the
    words of prose after them, `of process`); none for another clause, or where no name
    or too many (`starting` gives None: Lexical.name_completions_max) start so."""
    typed = c.raw.removeprefix("+").removesuffix("*")
    if c.negated or len(c.tokens) < 2 or not _IDENTIFIER.fullmatch(typed) or tuple(tokenize(typed)) != c.tokens:
        return []
    k = len(c.tokens) - 1
    found: dict[str, None] = {}
    for name in starting(typed.lower()) or ():
        tokens = tokenize(name)
        if len(tokens) > k and tokens[k].startswith(c.tokens[k]) and tuple(tokens[:k]) == c.tokens[:k]:
            found[tokens[k]] = None
    return list(found)


def _held(searcher: tantivy.Searcher, condition: Query, forms: Sequence[Sequence[str]], stem: Stem) -> bool:
    """Whether a document meeting `condition` holds any of `forms` (words in a row)."""
    held = Query.boolean_query([(Occur.Should, _form_query(EXACT, form, stem)) for form in forms])
    return bool(
        searcher.search(Query.boolean_query([(Occur.Must, condition), (Occur.Must, held)]), 1, count=False).hits
    )


def _stem_frequency(searcher: tantivy.Searcher, stem: Stem) -> Callable[[str], list[int]]:
    """word → how many documents hold each of its stems (one per language the query is
    stemmed in that stems it to one word), memoized: what _inflected and _held_by weigh
    a word by."""
    cache: dict[str, list[int]] = {}

    def frequencies(word: str) -> list[int]:
        if word not in cache:
            stems = dict.fromkeys(form[0] for form in stem((word,)) if len(form) == 1)
            cache[word] = [searcher.doc_freq(STEMS, fold(s)) for s in stems]  # held as folded
        return cache[word]

    return frequencies


def _inflected(df: Callable[[str], int], stem_df: Callable[[str], list[int]]) -> Callable[[str], float]:
    """word → how far the documents holding its stem (in each of the query's languages)
    differ in number from those holding it as typed, as a share of the latter: a word of
    prose comes in other forms (`lock`: locks, locked; 5 % more documents), a name of
    code does not (`kmalloc`: 0.5 %). 1.0 for a word no document holds."""

    def share(word: str) -> float:
        exact = df(word)
        if not exact:
            return 1.0
        return max((abs(n - exact) / exact for n in stem_df(word)), default=1.0)

    return share


def _defining(
    conn: apsw.Connection,
    name: str | None,
    where: filters.Filter,
    object_like: defining.ObjectLike | None,
    completing: defining.Starting | None = None,
    whole: bool = True,
    kinds: frozenset[str] = frozenset(),
) -> tuple[dict[int, Symbol], dict[int, defining.Standing]]:
    """The documents defining `name` in its case (search.defining: Kconfig's `config PM`
    for `CONFIG_PM`), in the order `search --symbol` gives them, each with its first
    definition, and how that definition stands (defining.standing). A name being typed
    (`completing`: the names defined starting so) that nothing defines yet stands
    for the names completing its last word (`spin_lock_ir*`: spin_lock_irq, then
    spin_lock_irqsave; `whole` false: its next word is begun, `spin_lock_i*`, and only
    those names may be a `#define NAME`). A name no C file
    and no Kconfig option defines is looked for as C's `#define NAME value`
    (`object_like`: 8-12 ms on the kernel tree). For a plain word (`kmalloc`) a label
    (a device tree's `dma: dma@7e007000`) names a place, not what the word is, and in
    lower case it is no object-like macro (those are written in capitals), nor an
    enumerator (`usb` in a clock driver's `enum { …, usb, usb_phy }` names one clock,
    and came before every file about USB), nor a variable (`static int debug = 0;`).
    `kinds` (a declaring keyword's): only definitions of those kinds."""
    if name is None:
        return {}, {}
    plain = not NAMED_IN_CODE.search(name)
    labels = not plain
    word = plain and name.islower()
    if word:
        object_like = None
    found, names = defining.definitions(
        conn, name, where, object_like, kconfig_enough=True, completing=completing, whole=whole, kinds=kinds
    )
    out: dict[int, Symbol] = {}
    standings: dict[int, defining.Standing] = {}
    for f in found:
        if f.symbol.name not in names or f.doc_id in out or (kinds and f.symbol.kind not in kinds):
            continue
        if word and f.symbol.kind in (CONSTANT, VARIABLE):
            continue
        if labels or f.symbol.kind != LABEL:
            out[f.doc_id] = f.symbol
            standings[f.doc_id] = defining.standing(f, names)
    return out, standings


def search(
    index: LexicalIndex,
    conn: apsw.Connection,
    analyzers: AnalyzerSet,
    query: str,
    counts: Mapping[str | None, int],
    limit: int,
    where: filters.Filter = filters.NO_FILTER,
    min_score: float = 0.0,
    lexical: Lexical = PIPELINE.lexical,
    object_like: defining.ObjectLike | None = None,
    respell: bool = True,
) -> Result:
    """The documents matching `query`, best first. Raises grammar.QuerySyntaxError for
    malformed queries, lexical_index.NotReady before the index is open. `object_like`:
    where C defines a name as an object-like macro (search.macros), for a query of one
    name of code to prefer its `#define` (search.defining).

    `counts` is documents per language in the index (store.language_counts): it picks
    the languages the query is stemmed in. With `respell`, a query matching nothing is
    searched again with its words typed wrong respelled (_respelled), or its CJK runs
    apart (_cjk_apart), a note saying so; one matching fewer than `limit` gets a note suggesting them.
    """
    searcher = index.searcher()
    building = index.progress
    languages = query_languages(query, counts, lexical, where.lang)
    stem_langs = [lang for lang in languages if lang] or ["english"]

    def stop(t: str) -> bool:
        return is_stopword(t, stem_langs)

    notes: list[str] = []
    if building is not None:
        notes.append(
            f"the lexical index is still being built from the stored documents ({building[0]:,} of "
            f"{building[1]:,} added): documents not added yet are not found"
        )
    parsed = parse(query)
    notes += text_not_syntax(parsed, lexical.prefix_min_chars)
    df = doc_frequency(searcher)
    clauses, left_out = keep_informative(parsed, stop, lexical.max_terms, df)
    if left_out:
        first = sorted(left_out, key=stop)  # the words that would have counted, then function words
        shown = ", ".join(first[:10]) + (", …" if len(left_out) > 10 else "")
        notes.append(
            f"the query has more than {lexical.max_terms} terms: searched the "
            f"{lexical.max_terms} rarest in the index; left out {len(left_out)} ({shown})"
        )

    def stem(form: Sequence[str]) -> list[tuple[str, ...]]:
        return analyzers.stem_sequences(form, languages)

    held = _held_in(analyzers, stem, [lang for lang in counts if lang not in languages], df, lexical)

    condition = filter_query(conn, where, searcher)
    # The names defined starting as a prefix clause is typed: its words, then its definitions.
    starting = cache(partial(symstore.names_starting, conn, cap=lexical.name_completions_max))

    def complete(c: Clause) -> list[str]:
        """The index's words the prefix clause `c` stands for, most frequent first: for
        an identifier being typed, those following its whole tokens in the names the
        collections define (_defined_words), where any does and the documents searched
        hold one so (the names may be another collection's); else the words starting
        with its last token, after an identifier's whole tokens those most frequent in
        the documents holding them as a phrase (`mmc_add_ho*`: host, not however)."""
        before, prefix = c.tokens[:-1], c.tokens[-1]
        limit = lexical.phrase_prefix_expansions if before else lexical.prefix_expansions
        named = sorted((w for w in _defined_words(c, starting) if df(w)), key=df, reverse=True)
        if named and (condition is None or _held(searcher, condition, [(*before, w) for w in named[:limit]], stem)):
            return named[:limit]
        among = _form_query(EXACT, before, stem) if before else None
        found = searcher.terms_with_prefix(EXACT, fold(prefix), filter_query=among, limit=limit)
        return [term for term, _ in found]

    clauses, placed, line = _placed(
        searcher, conn, expand_prefixes(clauses, complete), lexical.preference_pool, _last_frame(query)
    )
    searched = [*clauses, *_said(clauses, stop, lexical)]
    stemmed = compile_query(searched, analyzers, languages, stop)
    exact = compile_query(searched, analyzers, [None], stop)
    groups = _prefix_groups(clauses, analyzers, languages, stop) + _word_groups(clauses, analyzers, languages, stop)
    phrases = _phrases(searched, analyzers, languages, stop) + _typed(clauses, analyzers, languages, lexical)

    pool = max(limit * lexical.pool_factor, lexical.min_pool)
    # bm25 = (bm25 over stems + w · bm25 over exact forms) / (1 + w)
    w = float(lexical.exact_weight)
    blend = _blended(clauses, df, searcher.num_docs, stem, lexical.prefix_longer_share)
    sides = [(STEMS, stemmed, 1 / (1 + w)), (EXACT, exact, w / (1 + w))]
    as_written = bool(counts.get(None)) and None not in languages

    def matching(within: Query | None = None) -> list[tuple[Occur, Query]]:
        """The query's clauses (held only `within`: match_query), and the filter's."""
        return _filtered(match_query(sides, stem, blend, as_written=as_written, held=held, within=within), condition)

    parts = matching()
    # What is left out (`kmalloc -staging`) does not make a name of code less of one.
    asked = [c for c in clauses if not c.negated] or clauses
    stem_df = _stem_frequency(searcher, stem)
    name, typed, kinds = _code_name(asked, lexical, _inflected(df, stem_df), stop)
    typing = starting if typed else None
    whole = not typed or clauses[-1].prefix
    defined, standings = _defining(conn, name, where, object_like, typing, whole, kinds)
    prefer = Preferences(query, parsed, languages, counts, lexical, stem, standings, placed, held)
    found = prefer.best(searcher, Query.boolean_query(parts), pool, df, lambda c: Query.boolean_query(matching(c)))
    found = _holding(conn, found, parsed, limit)
    if not found and condition is not None and not searcher.search(condition, 1, count=False).hits:
        notes.append(filters.none_pass(where))
    notes += _left_out(searcher, clauses, parts)
    # Rounded as shown, so `--min-score` keeps exactly the hits shown at or above it.
    scores = [round(s, 6) for s in relative_scores([r[2] for r in found])]
    rows = [Row(doc_id, score, raw) for (doc_id, raw, _), score in zip(found, scores) if score >= min_score]
    result = Result(
        rows=rows[:limit],
        total_candidates=len(found),
        terms=list(stemmed.terms),
        dropped_stopwords=list(stemmed.dropped_stopwords),
        languages=list(languages),
        stems=_marked(stemmed, exact),
        verbatim=frozenset(fold(f[0]) for f in exact.verbatim if len(f) == 1),
        notes=notes,
        groups=groups,
        phrases=phrases,
        name=name,
        defined=defined,
        at_line=dict.fromkeys(placed, line) if line else {},
    )
    held_by = _held_by(df, stem_df)
    some = bool(rows)
    respelled = (
        _respelled(df, held_by, stop, conn, query, parsed, lexical, some) if respell and len(rows) < limit else None
    )
    if respelled is not None and result.rows:
        result.notes.append(f"did you mean {said(respelled)}?")
        return result
    absent = _absent(held_by, parsed, stop, lexical.absent_said_max_words) if result.rows else []
    result.absent = absent
    if absent:
        shown = ", ".join(map(said, absent))
        result.notes.append(f"no document has {shown}: the results hold the rest of the query")
    if not (respell and not result.rows):
        return result
    retries = [(other, said(other)) for other in (respelled, _prefixed(df, query, parsed, lexical)) if other]
    apart = _cjk_apart(query, parsed)
    retries += [(apart, "its characters two by two, any of them")] if apart else []
    joined = _joined_apart(query, parsed)
    retries += [(joined, f"its words apart, {said(joined)}")] if joined else []
    for other, shown in retries:
        again = search(index, conn, analyzers, other, counts, limit, where, min_score, lexical, object_like, False)
        if again.rows:
            again.notes.insert(0, f"nothing matches {said(query)}: searched {shown}")
            again.instead = other if other == respelled else None
            return again
    return result


def _filtered(parts: list[tuple[Occur, Query]], condition: Query | None) -> list[tuple[Occur, Query]]:
    """match_query's clauses where the filter `condition` (scoring nothing) holds."""
    if condition is None:
        return parts
    matches = Query.boolean_query([(o, q) for o, q in parts if o == Occur.Should])
    return [(Occur.Must, condition), (Occur.Must, matches), *((o, q) for o, q in parts if o != Occur.Should)]


def _cjk_apart(query: str, parsed: Sequence[Clause]) -> str | None:
    """`query` with each bare word holding CJK (a run of its characters: no spaces part
    its words) as its tokens apart, each a word of its own (`東京の出版社の締め切りは
    いつ？` → `東京 京の の出 …`): a question asked as a sentence is no run a document
    holds whole, where a run's pairs (tokenize) find the notes that hold most of them, as
    the words of a European language's question do. None where no word holds CJK."""
    return _apart(query, parsed, lambda c: not c.prefix and any(cjk_character(ch) for t in c.tokens for ch in t))


def _joined_apart(query: str, parsed: Sequence[Clause]) -> str | None:
    """`query` with each bare word that joins others by a slash, a plus, an ampersand or
    the like (`Q1/Q2`, `GCN+GAT`, `R&D`), a run a document must hold as typed, as those
    words apart: notes that say Q1 and Q2 in their own places (a word being typed stays
    a prefix, `Q1/Q*`); None where no word joins others so. An identifier (`copy_to_us`)
    or a hyphenated compound is left whole: its words apart would be any words."""
    return _apart(query, parsed, lambda c: len(c.tokens) > 1 and _JOINED.search(c.raw) is not None)


def _apart(query: str, parsed: Sequence[Clause], taken: Callable[[Clause], bool]) -> str | None:
    """`query` with each bare (not negated, not quoted) clause `taken` says as its tokens
    apart, a prefix's last still a prefix; None where none is."""
    apart = query
    for c in parsed:
        if not (c.negated or c.raw.startswith('"')) and taken(c):
            apart = apart.replace(c.raw, " ".join([*c.tokens[:-1], c.tokens[-1] + ("*" if c.prefix else "")]))
    return apart if apart != query else None


_JOINED = re.compile(r"\w[/+&|,;]\w")


def _left_out(searcher: tantivy.Searcher, clauses: Sequence[Clause], parts: list[tuple[Occur, Query]]) -> list[str]:
    """The note saying how many documents the query's negations (its MustNot `parts`)
    left out of what the rest of it matches, if any: `set -euo pipefail`, pasted from a
    script, left out the script."""
    negated = [c.raw for c in clauses if c.negated]
    if not negated:
        return []
    rest = [(o, q) for o, q in parts if o != Occur.MustNot]
    if not any(o == Occur.Must for o, _ in rest):  # words alone: any of them
        rest = [(Occur.Must, Query.boolean_query(rest))]
    negations = Query.boolean_query([(Occur.Should, q) for o, q in parts if o == Occur.MustNot])
    found = searcher.search(Query.boolean_query([*rest, (Occur.Must, negations)]), 1, count=True)
    n = int(found.count)  # type: ignore[attr-defined]  # tantivy's stub leaves `count` out
    if not n:
        return []
    quoted = said(f'"{negated[0]}"')
    return [
        f"{', '.join(negated)} left out {n:,} document{'s' * (n != 1)} holding the other words;"
        f" to search for a word starting with -, quote it: {quoted}"
    ]


def _held_by(df: Callable[[str], int], stem_df: Callable[[str], list[int]]) -> Callable[[str], int]:
    """word → how many documents hold it in some form: as typed, or by its stem in one of
    the query's languages (the most of those), as the search itself finds it."""

    def held(word: str) -> int:
        return max([df(word), *stem_df(word)])

    return held


def _holding(
    conn: apsw.Connection, found: list[tuple[int, float, float]], parsed: Sequence[Clause], limit: int
) -> list[tuple[int, float, float]]:
    """The documents of `found` whose text holds one of the query's quoted runs, where
    it is made of them alone (typed_runs.phrases): read best first, `limit` at a time, until
    `limit` of them do (those shown); the matches after them are left as they are,
    counted unread (reading the 40 files of a kernel search took 4 ms). All of them
    where there are no runs; the runs' patterns are made only where something matched
    (a pasted run of 5,000 words took 7 ms to compile for no match). Those holding a
    run as typed with its marks (typed_runs.as_typed) come first, each ranked as the best
    match, so the scores follow the order (`--min-score 0.7` left out the first hit): read
    on until `limit` of them are found, or AS_TYPED_READ_MAX matches were
    (`"self._sock"` found `self.sock` first; the files holding it came 7th)."""
    typed = typed_runs.phrases(parsed) if found else []
    if not typed:
        return found
    marked = typed_runs.as_typed(parsed)
    kept: list[tuple[int, float, float]] = []
    first: list[tuple[int, float, float]] = []  # holding a run as typed
    for at in range(0, len(found), limit):
        batch = found[at : at + limit]
        texts = store.docs_with_contents(conn, [doc_id for doc_id, _, _ in batch])
        for r in batch:
            stored = texts[r[0]][1] if r[0] in texts else None
            if stored is None:
                continue
            text = fold(indexed_body(texts[r[0]][0].rel_path, store.unpack(stored)).lower())
            if any(p.search(text) for p in typed):
                (first if any(p.search(text) for p in marked) else kept).append(r)
        read = at + limit
        if len(first) >= limit or (len(first) + len(kept) >= limit and (not marked or read >= AS_TYPED_READ_MAX)):
            return _held_first(first + kept + found[read:], {r[0] for r in first}, found[0][2])
    return _held_first(first + kept, {r[0] for r in first}, found[0][2])


def _marked(stemmed: CompiledQuery, exact: CompiledQuery) -> frozenset[str]:
    """What a snippet or a highlight should mark: the terms of both sides, less the stems
    that a quoted word alone has (`"running"` marks no `runs`)."""
    others = {t for forms in stemmed.positives for f in forms if f not in stemmed.verbatim for t in f}
    quoted = {f[0] for f in stemmed.verbatim if len(f) == 1} - others
    return (stemmed.positive_stems - quoted) | exact.positive_stems


def _absent(held: Callable[[str], int], parsed: Sequence[Clause], stop: Callable[[str], bool], most: int) -> list[str]:
    """The words of the query asked for (not left out, not begun, not function words)
    that no document holds, as typed or by their stem in any of the query's languages:
    the results were found without them, which a person reading them should know (a
    search engine says "missing: …"). A run of CJK characters is searched by its bigrams,
    not as a word, and a compound's parts may be held joined (`data-base`): neither is
    said absent. None for a query of more than `most` such words: pasted text."""
    words = dict.fromkeys(
        t
        for c in parsed
        if not (c.negated or c.prefix or c.compound)
        for t in c.tokens
        if not (stop(t) or any(map(cjk_character, t)))
    )
    return [t for t in words if not held(t)] if len(words) <= most else []


def _prefixed(df: Callable[[str], int], query: str, parsed: Sequence[Clause], lexical: Lexical) -> str | None:
    """`query` with each plain word no document holds (of absent_prefix_min_chars letters
    or more, and no longer than a word respelled: a pasted DNA sequence is no word begun)
    as a prefix: the start of a longer word (`zephyr`, of zephyrine), which no stem joins
    to it; None where none is."""
    absent = [
        (t, t + "*")
        for c in parsed
        if not (c.negated or c.prefix or c.phrase)
        for t in c.tokens
        if lexical.absent_prefix_min_chars <= len(t) <= lexical.spelling_max_chars and not df(t)
    ]
    return spelling.respelled(query, absent) if absent else None


def _respelled(
    df: Callable[[str], int],
    held_by: Callable[[str], int],
    stop: Callable[[str], bool],
    conn: apsw.Connection,
    query: str,
    parsed: Sequence[Clause],
    lexical: Lexical,
    some: bool,
) -> str | None:
    """`query` (`parsed`: its clauses) with its words typed wrong respelled (search.spelling;
    `df`: the search's doc_frequency; `held_by`: _held_by's, a word's documents in any
    form, which a word is judged by: `forms`, held by its stem, is no typo of `form`),
    None where none seems to be. A function word is never what was meant (`stop`): it is
    in every document and searched for in none (`wall` is no `will`). With `some`
    matches, only rare words are looked at (spelling_rare_docs); with none, a snake_case
    name whose words are all words may be a defined name one edit away (`copy_form_user`)."""
    clauses = [c for c in parsed if not c.negated and not c.prefix]
    rare = lexical.spelling_rare_docs
    # As typed first: a word in more documents so is in more in any form.
    words = dict.fromkeys(t for c in clauses for t in c.tokens if not some or df(t) <= rare)

    def worded(word: str) -> int:
        return 0 if stop(word) else df(word)

    fixes: dict[str, str] = {}
    for word in words:
        held = held_by(word)
        if some and held > rare:
            continue
        right = spelling.correction(
            word,
            worded,
            lexical.spelling_ratio,
            lexical.spelling_min_chars,
            lexical.spelling_max_chars,
            lexical.spelling_absent_docs,
            held,
        )
        if right:
            fixes[word] = right
    if not fixes and not some:
        for c in clauses:
            name = c.raw.lower()
            if len(c.tokens) < 2 or name != "_".join(c.tokens):
                continue
            meant = spelling.name_corrections(name, df, lexical.spelling_min_chars, lexical.spelling_max_chars)
            right = spelling.most_defined(symstore.defined_names(conn, meant))
            if right is not None:
                fixes.update((a, b) for a, b in zip(c.tokens, right.split("_")) if a != b)
    respelled = spelling.respelled(query, fixes.items())
    return respelled if respelled != query else None


def _held_in(
    analyzers: AnalyzerSet, stem: Stem, others: Sequence[str | None], df: Callable[[str], int], lexical: Lexical
) -> Stem:
    """The stemmed phrases that hold a form of several words: `stem`'s (the query's
    languages), and where its rarest word is in at most phrase_elsewhere_docs documents,
    those of the index's `others` languages. A phrase copied from a note of a language
    the query is not stemmed in (a French note among English ones: a short phrase tells
    no language) is in that note's stems; a rare word bounds what the other phrases cost
    (a name of common words, `copy_from_user`, is read in the query's languages only)."""
    stemmed = [lang for lang in others if lang is not None]

    def held(form: Sequence[str]) -> list[tuple[str, ...]]:
        own = stem(form)
        if not stemmed or min(map(df, _words(form)), default=0) > lexical.phrase_elsewhere_docs:
            return own
        return list(dict.fromkeys([*own, *analyzers.stem_sequences(form, stemmed)]))

    return held


def _said(clauses: Sequence[Clause], stop: Callable[[str], bool], lexical: Lexical) -> list[Clause]:
    """The query as said (Lexical.said_max_words), as a phrase searched beside its terms,
    where its stopwords are left out of them; none for another query."""
    phrase = _phrase(clauses, lexical)
    stops = [droppable(c, stop) for c in clauses]
    if phrase is None or len(phrase) > lexical.said_max_words or all(stops) or not any(stops):
        return []
    return [Clause(phrase, phrase=True, compound=False, negated=False, raw=f'"{" ".join(c.raw for c in clauses)}"')]


def _blended(
    clauses: Sequence[Clause], df: Callable[[str], int], docs: int, stem: Stem, longer: float = 1.0
) -> dict[tuple[str, ...], float]:
    """Each form a positive prefix stands for (exact and stemmed), with the share of its
    bm25 that scores it with the idf of the prefix's most frequent word, as Lucene's
    blended rewrite of a prefix does: a rare word that starts as typed (`kmalloced`, in
    a few comments) does not outrank the word typed whole (`kmalloc*` while an editor's
    picker sends what is typed). bm25 is linear in idf, so the share is their ratio.
    Where the prefix is itself a word the index has, the longer words count `longer`
    times that (Lexical.prefix_longer_share)."""
    out: dict[tuple[str, ...], float] = {}
    for c in clauses:
        if not c.prefix or c.negated or not c.expansions:
            continue
        found = {word: max(df(word), 1) for word in c.expansions}
        top = _idf(max(found.values()), docs)
        typed = c.tokens[-1]
        for word, n in found.items():
            form = (*c.tokens[:-1], word)
            share = top / _idf(n, docs) * (longer if typed in found and word != typed else 1.0)
            for f in (form, *stem(form)):
                out[f] = max(out.get(f, 0.0), share)
    return out


def _idf(n: int, docs: int) -> float:
    """bm25's idf of a word in `n` of `docs` documents (as the engine computes it)."""
    return math.log(1 + (docs - n + 0.5) / (n + 0.5))


def _phrases(
    clauses: Sequence[Clause], analyzers: AnalyzerSet, languages: Sequence[str | None], stop: Callable[[str], bool]
) -> tuple[Phrase, ...]:
    """Each positive phrase of the query (quoted, an identifier, a compound, a CJK word):
    its words, each the set of its forms (as typed, and stemmed in each language the
    query is), its text as typed (the quotes off, blanks one space), and whether that
    text is open: typed unquoted with `*` at its end (what a picker sends), it is the
    start of what a line holds (`of_pr`, held by `of_property_read_u32(`, not by "of
    property"). A snippet prefers a line holding it so to one holding its words apart
    (`usb_register_driver` over `usb_register_device_driver`). An identifier ending in a
    prefix (`mmc_add*`) has for its last word the words the prefix stands for."""
    out = []
    for c in clauses:
        if c.phrase and not c.negated and len(c.tokens) > 1:
            whole = c.tokens[:-1] if c.prefix else c.tokens
            forms = [whole, *analyzers.stem_sequences(whole, languages)]
            words = tuple(frozenset(form[i] for form in forms) for i in range(len(whole)))
            if c.prefix:
                words = (*words, _terms([_last_word(c)], analyzers, languages, stop))
            if c.raw.removeprefix("-").startswith('"'):  # `-"a b"` alone is a phrase searched
                quoted = c.raw.removeprefix("-").removesuffix("*").strip('"')
                out.append(
                    Phrase(words, " ".join((quoted.removesuffix("*") if c.prefix else quoted).split()), c.prefix)
                )
            else:
                typed = c.raw.removeprefix("+")
                out.append(Phrase(words, typed.removesuffix("*"), typed.endswith("*")))
    return tuple(out)


def _typed(
    clauses: Sequence[Clause], analyzers: AnalyzerSet, languages: Sequence[str | None], lexical: Lexical
) -> tuple[Phrase, ...]:
    """The query of plain words as typed, a phrase a snippet prefers a line holding
    (Preferences.phrase ranks the documents so): `certbot renew` is shown where a
    command is `certbot renew --cert-name`, not at "Certbot renews it" above it. None
    (an empty tuple) for a query of one clause, or one with a negation or a prefix, or
    a pasted message whose printed values _phrase left out. Its words' run ranks no line: looking for
    runs of every query's words read past the lines that settled its snippets."""
    tokens = _phrase(clauses, lexical)
    if tokens is None or len(tokens) != sum(len(c.tokens) for c in clauses):
        return ()
    forms = [tokens, *analyzers.stem_sequences(tokens, languages)]
    words = tuple(frozenset(form[i] for form in forms) for i in range(len(tokens)))
    return (Phrase(words, " ".join(c.raw.strip('"') for c in clauses), False, runs=False),)


def _last_word(c: Clause) -> Clause:
    """A prefix clause's last token, alone: the word being typed."""
    return replace(c, tokens=c.tokens[-1:], phrase=False)


def _terms(
    group: Sequence[Clause], analyzers: AnalyzerSet, languages: Sequence[str | None], stop: Callable[[str], bool]
) -> frozenset[str]:
    """The positive terms of `group` (its words, and their stems in `languages`)."""
    try:
        return compile_query(group, analyzers, languages, stop).positive_stems | (
            compile_query(group, analyzers, [None], stop).positive_stems
        )
    except QuerySyntaxError:  # no word to search among them (a prefix nothing starts with)
        return frozenset()


def _word_groups(
    clauses: Sequence[Clause], analyzers: AnalyzerSet, languages: Sequence[str | None], stop: Callable[[str], bool]
) -> tuple[frozenset[str], ...]:
    """The terms of each positive word (as typed and its stems): one word, which a snippet
    counts once where a line holds it (`reported` is both `reported` and `report`: a
    table's header holding "Reported" outranked the row holding `login timeout`)."""
    words = [c for c in clauses if len(c.tokens) == 1 and not (c.negated or c.prefix)]
    return tuple(group for c in words if len(group := _terms([c], analyzers, languages, stop)) > 1)


def _prefix_groups(
    clauses: Sequence[Clause], analyzers: AnalyzerSet, languages: Sequence[str | None], stop: Callable[[str], bool]
) -> tuple[frozenset[str], ...]:
    """The terms of each positive prefix (its words and their stems), but those another
    clause also gives: the prefix's words are one word typed, which a snippet counts once
    (an identifier's whole tokens before it count each as a word)."""
    prefixes = [_last_word(c) for c in clauses if c.prefix and not c.negated]
    if not prefixes:
        return ()
    others = _terms([c for c in clauses if not c.negated and not c.prefix], analyzers, languages, stop)
    return tuple(_terms([c], analyzers, languages, stop) - others for c in prefixes)
