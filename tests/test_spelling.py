"""A word typed wrong: searched respelled where nothing matches, suggested where few do
(gnod.search.spelling, lexical.search, searching.definitions)."""

from __future__ import annotations

import pytest

from conftest import lexical_index, write_tree
from gnod.config import CollectionConfig
from gnod.ingest.pipeline import index_collection
from gnod.ingest.symbols import parse_batch
from gnod.protocol import SearchParams
from gnod.search import filters, lexical, spelling
from gnod.search.constants import PIPELINE
from gnod.server.searching import answer
from gnod.store import documents as docstore
from gnod.store import symbols as symstore
from gnod.text.analyzer import AnalyzerSet, fold


def test_edits_are_the_strings_one_edit_away():
    near = spelling.edits("lokc")
    assert {"lock", "loc", "lokcs", "lokec"} <= near and not {"look", "block"} & near  # those two edits away
    assert "lokc" not in near and "lo_kc" not in near
    # The first letter is kept: `wall` is another word than `all` or `call`, not a slip.
    assert not {"all", "call", "awll"} & spelling.edits("wall") and "walls" in spelling.edits("wall")
    assert "lo_kc" in spelling.edits("lokc", spelling.NAME_LETTERS) and "lok3" not in near
    # n deletions, n-1 swaps, 26n changes, 26(n+1) insertions, less the repeats
    assert len(spelling.edits("abcd")) <= 4 + 3 + 26 * 4 + 26 * 5


def test_a_correction_is_a_far_more_common_word_one_edit_away():
    df = {"cache": 800, "cahe": 2, "cahce": 1, "from": 3000, "form": 270, "lock": 500, "look": 40}.get

    def fix(word: str) -> str | None:
        return spelling.correction(word, lambda w: df(w) or 0, 50.0, 4, 64, 3)

    assert fix("cahce") == "cache"  # the tree's own typo (1 document) does not make it a word
    # A word no document holds: one in a few documents will do (a notes folder's words).
    notes = {"autovacuum": 17, "vacuum": 40, "autovacum": 0, "stagng": 0, "staging": 2}.get

    def fix_note(word: str) -> str | None:
        return spelling.correction(word, lambda w: notes(w) or 0, 50.0, 4, 64, 3)

    assert fix_note("autovacum") == "autovacuum" and fix_note("stagng") is None  # 2 of 3
    assert fix("lokc") == "lock"  # the most common of several
    assert fix("form") is None  # a word beside a commoner one stays
    assert fix("pmd") is None and fix("1234") is None  # too short; a number
    assert fix("cach3") is None  # a name with a digit, not a word typed wrong
    # The index holds words with their accents off: a word typed with them is looked up so
    # (`Gewährleistng` found nothing, `Gewahrleistng` its word).
    german = {"gewahrleistung": 9, "ubersetzung": 12}.get

    def fix_german(word: str) -> str | None:
        return spelling.correction(word, lambda w: german(fold(w)) or 0, 50.0, 4, 64, 3)

    assert fix_german("gewährleistng") == "gewahrleistung" and fix_german("übersetzng") == "ubersetzung"


def test_a_word_longer_than_any_slip_is_not_respelled():
    """Its edits are ~55 strings a letter, each as long as it: a pasted word of 32,000
    letters (the longest query) took 24 GB before the kernel ended the search. Past
    spelling_max_chars nothing is looked up, nor built."""
    asked: list[str] = []

    def df(word: str) -> int:
        asked.append(word)
        return 0

    longest = PIPELINE.lexical.spelling_max_chars
    for word in ("acgt" * 8000, "a" * (longest + 1)):
        assert spelling.correction(word, df, 50.0, 4, longest, 3) is None
        assert spelling.name_corrections(f"{word}_x", df, 4, longest) == []
        assert spelling.name_edits(word, longest) == []
    assert asked == []
    assert spelling.correction("b" * longest, df, 50.0, 4, longest, 3) is None and asked  # one as long is looked up


def test_a_respelled_query_keeps_the_rest_as_typed():
    fixes = [("cahce", "cache"), ("prempt", "preempt")]
    assert spelling.respelled("kmem_cahce_alloc -cachep", fixes) == "kmem_cache_alloc -cachep"
    assert spelling.respelled("CONFIG_PREMPT_RT", fixes) == "CONFIG_PREEMPT_RT"
    assert spelling.respelled("Cahce", fixes) == "Cache"  # a capital typed first stays (class names)
    assert spelling.respelled("cahcerow cahce", fixes) == "cahcerow cache"  # whole words only


@pytest.fixture
def tree(db, tmp_path):
    files = {
        f"mm/user{i}.c": f"/* from the cache of user {i} */\nint user_{i}(void)\n{{\n\treturn copy_from_user(p, q, {i});\n}}\n"
        for i in range(60)
    }
    files["include/uaccess.h"] = (
        "static inline long copy_from_user(void *to, const void *from, long n)\n{\n\treturn n;\n}\n"
    )
    files["mm/slab.c"] = "void *kmem_cache_alloc(struct kmem_cache *c)\n{\n\treturn c;\n}\n"
    files["tools/shell.py"] = "def console():\n    return Console()\n\n\nclass Console:\n    pass\n"
    files["Documentation/wall.rst"] = "Wall\n====\n\nA wall, as few files name it; we will see.\n"
    files.update({f"Documentation/will{i}.rst": f"Will {i}\n======\n\nWe will.\n" for i in range(60)})
    files["Documentation/typos.rst"] = "Typos\n=====\n\nA cahce, as one file spells it.\n"
    files["Documentation/catalyst.rst"] = "Catalyst\n========\n\nThe zephyrine catalyst.\n"
    files["Documentation/donnees.rst"] = "Data\n====\n\nLes données.\n"
    files.update(
        {f"Documentation/vertrag{i}.rst": f"Vertrag {i}\n=========\n\nDie Gewährleistung gilt.\n" for i in range(3)}
    )
    files.update({f"Documentation/form{i}.rst": f"Form {i}\n======\n\nA form to fill in.\n" for i in range(3)})
    files["Documentation/lecture.rst"] = "Lecture\n=======\n\nTaught by Prof. Jürgen Müller at TU München.\n"
    an = AnalyzerSet()
    index_collection(db, an, CollectionConfig(name="src", path=write_tree(str(tmp_path / "src"), files)))
    items = symstore.backlog(db)
    grammar = dict(items)
    symstore.put(db, [(i, grammar[i], symbols) for i, symbols in parse_batch(symstore.sources(db, items))])
    return db, an


def _search(tree, query: str, symbol: bool = False, limit: int = 10):
    db, an = tree
    with lexical_index(db, an) as index:
        params = SearchParams(query=query, symbol=symbol, limit=limit)
        return answer(index, db, an, params, docstore.language_counts(db), filters.resolve(filters.Filter()))


def test_a_query_matching_nothing_is_searched_respelled_with_a_note(tree):
    r = _search(tree, "kmem_cahce_alloc")
    assert [h.path for h in r.hits] == ["mm/slab.c"]
    assert r.notes == ["nothing matches 'kmem_cahce_alloc': searched 'kmem_cache_alloc'"]
    assert r.query == "kmem_cahce_alloc" and r.terms == ["kmem_cache_alloc"]
    r = _search(tree, "Gewährleistng")  # typed with its umlaut, as the word is written
    assert sorted(h.path for h in r.hits) == [f"Documentation/vertrag{i}.rst" for i in range(3)]
    assert r.notes == ["nothing matches 'Gewährleistng': searched 'Gewahrleistung'"]
    # A name whose words are all words, one of them wrong: the name defined one edit away.
    r = _search(tree, "copy_form_user")
    assert r.hits[0].path == "include/uaccess.h" and r.notes == [
        "nothing matches 'copy_form_user': searched 'copy_from_user'"
    ]
    # German's umlaut written with its `e`, in a document read as English (a student's
    # `Muenchen` found nothing, `Muller` found it): the word without the `e`, held once.
    for typed, plain in (("Muenchen", "Munchen"), ("Juergen", "Jurgen"), ("Mueller", "Muller")):
        r = _search(tree, typed)
        assert [h.path for h in r.hits] == ["Documentation/lecture.rst"], typed
        assert r.notes == [f"nothing matches {typed!r}: searched {plain!r}"]
    # Nothing near: nothing found, nothing said.
    r = _search(tree, "xyzzyplugh")
    assert r.hits == [] and r.notes == []


def test_a_word_nothing_holds_is_searched_as_the_start_of_longer_ones_with_a_note(tree):
    """`zephyr` matched nothing (no stem joins it to zephyrine): the page's box found
    it while it was typed, as `zephyr*`, and lost it at Enter. A respelling is tried
    first; a word shorter than absent_prefix_min_chars is no prefix, nor is a word left
    out."""
    r = _search(tree, "zephyr")
    assert [h.path for h in r.hits] == ["Documentation/catalyst.rst"]
    assert r.notes == ["nothing matches 'zephyr': searched 'zephyr*'"]
    assert _search(tree, "zep").hits == []  # too short
    r = _search(tree, "kmem_cahce_alloc")  # respelled, not a prefix
    assert r.notes == ["nothing matches 'kmem_cahce_alloc': searched 'kmem_cache_alloc'"]
    assert _search(tree, "catalyst -zephyr").notes == []


def test_a_rare_word_near_a_common_one_is_suggested_and_its_matches_kept(tree):
    r = _search(tree, "cahce")
    assert [h.path for h in r.hits] == ["Documentation/typos.rst"]
    assert r.notes == ["did you mean 'cache'?"]
    # As many matches as asked for: nothing looked at, nothing said.
    assert _search(tree, "cahce", limit=1).notes == []
    # A word of a few documents beside one in 61: not this far apart, no suggestion.
    assert _search(tree, "form").notes == []
    # A function word is never what was meant: it is searched for in no document.
    assert _search(tree, "wall").notes == []


def test_the_words_no_document_has_are_named_beside_the_results_found_without_them(tree):
    """`catalyst xyzzyplugh`: the results hold catalyst alone, and the reader is told why
    (a search engine's "missing: …"); a word held in another form (its stem), a word left
    out, begun or a function word is not said missing, nor one respelled."""
    r = _search(tree, "catalyst xyzzyplugh frobozz")
    assert [h.path for h in r.hits] == ["Documentation/catalyst.rst"]
    assert r.notes == ["no document has 'xyzzyplugh', 'frobozz': the results hold the rest of the query"]
    assert _search(tree, "catalysts forms").notes == []  # held by their stems
    r = _search(tree, "donnée")  # by its stem, which the index holds without accents
    assert [h.path for h in r.hits] == ["Documentation/donnees.rst"] and r.notes == []
    assert _search(tree, "catalyst -xyzzyplugh").notes == []
    assert _search(tree, "catalyst xyzzy*").notes == []
    assert _search(tree, "the catalyst").notes == []
    assert _search(tree, "catalyst cahce").notes == ["did you mean 'catalyst cache'?"]
    # Pasted text (more than absent_said_max_words words) is searched for what it shares.
    words = [f"wordnone{i}" for i in range(PIPELINE.lexical.absent_said_max_words)]
    assert _search(tree, " ".join(["catalyst", *words[1:]])).notes[0].startswith("no document has 'wordnone1', ")
    assert _search(tree, " ".join(["catalyst", *words])).notes == []


def test_a_name_no_definition_has_is_looked_up_as_the_defined_name_one_edit_away(tree):
    r = _search(tree, "kmem_cahce_alloc", symbol=True)
    assert [h.path for h in r.hits] == ["mm/slab.c"] and r.hits[0].snippet.symbol == "kmem_cache_alloc()"
    assert r.notes == ["nothing defines 'kmem_cahce_alloc': showing 'kmem_cache_alloc'"]
    r = _search(tree, "kmem_cache_alloc", symbol=True)
    assert r.notes == []
    # In capitals where typed so: the class, before the function of its name in lower case.
    r = _search(tree, "Consloe", symbol=True)
    assert r.hits[0].snippet.symbol == "class Console" and r.notes == ["nothing defines 'Consloe': showing 'Console'"]
    # A name's digits are what it names: user_75 (none) is not user_7, nor user_5.
    assert _search(tree, "user_75", symbol=True).hits == []
    assert "dwc_ep" not in spelling.name_edits("dwc3_ep", 64) and "dwc3_epp" in spelling.name_edits("dwc3_ep", 64)
    assert all("3" in e for e in spelling.name_edits("dwc3_ep", 64))


def test_the_lexical_search_respells_for_every_caller(tree):
    """The hybrid pipeline and the MCP bridge search through lexical.search too."""
    db, an = tree
    with lexical_index(db, an) as index:
        res = lexical.search(index, db, an, "kmem_cahce_alloc", docstore.language_counts(db), 5)
    assert res.rows and res.notes[0].startswith("nothing matches")
