"""A mixed-language collection: each page is stemmed in its own language, queries in
every language the index holds, so an inflected query word meets its page."""

from __future__ import annotations

import pytest

from conftest import lexical_index, lexical_paths
from gnod.config import CollectionConfig
from gnod.ingest.pipeline import index_collection
from gnod.search import filters, lexical
from gnod.store.db import connect
from gnod.store.documents import language_counts
from gnod.store.migrations import migrate
from gnod.text.analyzer import Analyzer, AnalyzerSet

PAGES = {
    "de.md": (
        "# Unser Haus\n\nDie Katze schläft am Morgen in dem Haus und danach geht sie in den "
        "Garten. Sie ist eine sehr neugierige Katze, die gerne mit dem Hund spielt, wenn "
        "das Wetter schön ist.\n",
        "german",
    ),
    "fr.md": (
        "# La chanteuse\n\nLa chanteuse du village chante chaque soir dans le petit théâtre "
        "de la place, et les voisins viennent l'écouter avec leurs enfants.\n",
        "french",
    ),
    "es.md": (
        "# El mercado\n\nLos domingos vamos al mercado de la ciudad para comprar frutas y "
        "verduras frescas, y después comemos en una pequeña taberna con los amigos.\n",
        "spanish",
    ),
    "ru.md": (
        "# Кошки\n\nНаши кошки любят спать на солнце, а вечером они играют в саду и ждут, "
        "когда мы вернёмся домой с работы.\n",
        "russian",
    ),
    "en.md": (
        "# Release notes\n\nThe children were running through the gardens while the "
        "engineers deployed the new billing service to production on Tuesday.\n",
        "english",
    ),
}


class NoStemAnalyzers(AnalyzerSet):
    """The same pipeline without stemming, to show what stemming is responsible for."""

    def get(self, language: str | None) -> Analyzer:
        return super().get(None)


def build(tmp_path_factory, analyzers: AnalyzerSet):
    root = tmp_path_factory.mktemp("pages")
    for name, (text, _) in PAGES.items():
        (root / name).write_text(text, encoding="utf-8")
    conn = connect(str(tmp_path_factory.mktemp("db") / "index.sqlite"))
    migrate(conn)
    stats = index_collection(conn, analyzers, CollectionConfig(name="c", path=str(root)))
    assert (stats.added, stats.errors) == (len(PAGES), 0)
    return conn, analyzers


@pytest.fixture(scope="module")
def stemmed(tmp_path_factory):
    conn, analyzers = build(tmp_path_factory, AnalyzerSet())
    yield conn, analyzers
    conn.close()


@pytest.fixture(scope="module")
def unstemmed(tmp_path_factory):
    conn, analyzers = build(tmp_path_factory, NoStemAnalyzers())
    yield conn, analyzers
    conn.close()


def paths(index, query: str) -> list[str]:
    conn, analyzers = index
    return lexical_paths(conn, analyzers, query)


def test_each_page_is_detected_in_its_language(stemmed):
    conn, _ = stemmed
    assert dict(conn.execute("SELECT rel_path, language FROM documents")) == {
        name: lang for name, (_, lang) in PAGES.items()
    }


# Query words that occur in their page only in another inflection.
INFLECTED = [
    ("Katzen", "de.md"),  # Katze
    ("Häuser", "de.md"),  # Haus
    ("Gartens", "de.md"),  # Garten (Gärten would meet it by diacritics folding alone)
    ("neugierig Hunde", "de.md"),  # neugierige, Hund
    ("chanteuses", "fr.md"),  # chanteuse
    ("mercados", "es.md"),  # mercado
    ("кошка", "ru.md"),  # кошки
    ("deploying", "en.md"),  # deployed
]


@pytest.mark.parametrize("query, page", INFLECTED)
def test_inflected_query_finds_its_page_through_stemming(stemmed, unstemmed, query, page):
    assert paths(stemmed, query)[:1] == [page]
    conn, analyzers = unstemmed  # nothing searched otherwise where nothing matches (a word as a prefix)
    assert page not in lexical_paths(conn, analyzers, query, respell=False)


@pytest.mark.parametrize(
    "query, page",
    [("billing service production", "en.md"), ("children running", "en.md"), ("Katze Garten", "de.md")],
)
def test_exact_words_find_their_page(stemmed, unstemmed, query, page):
    assert paths(stemmed, query)[:1] == [page]
    assert paths(unstemmed, query)[:1] == [page]


def test_a_query_is_stemmed_in_the_languages_its_function_words_point_to(stemmed):
    conn, _ = stemmed
    counts = language_counts(conn)
    # Too short for a clear verdict, but its function words are German (or Dutch, or
    # Polish, which the index does not hold): German stems only, no French or Russian.
    assert lexical.query_languages("die Katzen im Garten", counts) == ["german"]
    assert paths(stemmed, "die Katzen im Garten")[:1] == ["de.md"]
    # No function words at all: every language holding 5% of the index.
    assert set(lexical.query_languages("Katzen", counts)) == set(counts)
    # A clear sentence: its own language.
    assert lexical.query_languages("los mercados de la ciudad", counts) == ["spanish"]
    # Weak evidence never picks a language of a few stray documents: 2% German here.
    assert lexical.query_languages("die Katzen im Garten", {"english": 98, "german": 2}) == ["english"]
    assert lexical.query_languages(
        "Die Katzen schlafen im Garten, wenn die Sonne scheint", {"english": 98, "german": 2}
    ) == ["german"]
    # Words of code, and a word being typed, are not prose: a picker's `spin_lock_ir*` is
    # not Lithuanian for its `ir` ("and"), nor is `dog_ir` or `sIr`; prose beside them is.
    source_tree = {"english": 97, "lithuanian": 3}
    assert lexical.query_language("spin lock ir") == "lithuanian"
    for query in ("spin_lock_ir*", "spin lock ir*", "dog_ir", "spinLockIr"):
        assert lexical.query_languages(query, source_tree) == ["english"], query
    assert lexical.query_languages("mutex_lock die Katzen schlafen im Garten", counts) == ["german"]


@pytest.fixture(scope="module")
def mostly_english(tmp_path_factory):
    """Notes in English, and a French and a German one: too few for their languages to
    stem a query that does not clearly say so."""
    root = tmp_path_factory.mktemp("notes")
    for i in range(30):
        (root / f"en{i}.md").write_text(f"# Note {i}\n\nThe garden pump stopped on day {i}; we fixed the valve.\n")
    (root / "tarte.md").write_text(
        "# Pâte brisée\n\nMélanger la farine et le beurre. Laisser reposer la pâte une heure au frais.\n"
    )
    (root / "schluessel.md").write_text(
        "# Schlüssel\n\nDanach müssen die Gateways neu gestartet werden. Führe rotate_api_keys_now aus.\n"
    )
    conn = connect(str(tmp_path_factory.mktemp("db") / "index.sqlite"))
    migrate(conn)
    index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    yield conn, AnalyzerSet()
    conn.close()


@pytest.mark.parametrize(
    "query, page",
    [
        ('"Laisser reposer la pâte"', "tarte.md"),
        ('"Danach müssen die Gateways"', "schluessel.md"),
        ("rotate_api_keys_now", "schluessel.md"),  # a name's words are a phrase too
    ],
)
def test_a_phrase_copied_from_a_note_finds_it_whatever_the_query_is_stemmed_in(mostly_english, query, page):
    """Such a short phrase tells no language: it is stemmed in the index's, English
    alone here, and the note's words hold it only in their own language's stems (`pâte`
    is `pât` in English, `pat` in French): its exact words were there, the phrase not.
    Where its rarest word is rare, a phrase holds in the other languages' stems too."""
    conn, analyzers = mostly_english
    with lexical_index(conn, analyzers) as index:
        r = lexical.search(index, conn, analyzers, query, language_counts(conn), 10)
    assert r.languages == ["english"] and [row.doc_id for row in r.rows] == [doc_id(conn, page)]


def test_a_search_filtered_to_a_language_is_stemmed_in_it(mostly_english):
    """`--lang fr` asks for French documents: the query is French, and its inflected
    words meet theirs (`reposait`: French `repos`, English `reposait`)."""
    conn, analyzers = mostly_english
    french = filters.resolve(filters.Filter(lang="fr"))
    with lexical_index(conn, analyzers) as index:
        r = lexical.search(index, conn, analyzers, "reposait", language_counts(conn), 10, french)
        assert r.languages == ["french"] and [row.doc_id for row in r.rows] == [doc_id(conn, "tarte.md")]
        assert lexical.search(index, conn, analyzers, "reposait", language_counts(conn), 10).rows == []


def doc_id(conn, rel_path: str) -> int:
    return conn.execute("SELECT id FROM documents WHERE rel_path = ?", (rel_path,)).fetchone()[0]
