"""Compounds in the languages that write them as one word: a word asked for alone finds
the compounds it starts or ends (`Steuer`: Steuerberater, `Frist`: Kündigungsfrist),
after the documents holding it alone, and their passages mark the compound."""

from __future__ import annotations

import pytest

from conftest import lexical_paths, write_tree
from gnod.config import CollectionConfig
from gnod.ingest.pipeline import index_collection
from gnod.search.snippet import TermBits, best_snippets, match_spans
from gnod.store.db import connect
from gnod.store.migrations import migrate
from gnod.text.analyzer import Analyzer, AnalyzerSet
from gnod.text.compounds import parts

PAGES = {
    "frist.md": (
        "# Abgabe\n\nDie Frist für die Abgabe der Steuererklärung endet im Juli. Bitte alle "
        "Belege rechtzeitig sammeln und an das Finanzamt schicken. Der Steuerberater hilft.\n"
    ),
    "miete.md": (
        "# Wohnung\n\nDie Kündigungsfrist für den Mietvertrag beträgt drei Monate. Der "
        "Vermieter muss die Kündigung schriftlich erhalten, und die Wohnung ist besenrein "
        "zu übergeben. Die Kaution wird nach dem Auszug zurückgezahlt, sobald alle "
        "Nebenkosten abgerechnet sind.\n"
    ),
    "huur.md": (
        "# Verhuizen\n\nHet huurcontract van het appartement loopt af in maart. De "
        "verhuurder wil dat we de sleutels op tijd inleveren en de woning schoon "
        "achterlaten, anders houdt hij de borg in.\n"
    ),
    "plan.md": (
        "# Release plan\n\nThe timeframe for the release is two weeks. The bookkeeping "
        "team checks the invoices while the engineers deploy the new service.\n"
    ),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = write_tree(str(tmp_path_factory.mktemp("notes")), PAGES)
    conn = connect(str(tmp_path_factory.mktemp("db") / "index.sqlite"))
    migrate(conn)
    analyzers = AnalyzerSet()
    stats = index_collection(conn, analyzers, CollectionConfig(name="c", path=root))
    assert (stats.added, stats.errors) == (len(PAGES), 0)
    languages = dict(conn.execute("SELECT rel_path, language FROM documents"))
    assert languages == {"frist.md": "german", "miete.md": "german", "huur.md": "dutch", "plan.md": "english"}
    yield conn, analyzers
    conn.close()


def paths(index, query: str) -> list[str]:
    conn, analyzers = index
    return lexical_paths(conn, analyzers, query, respell=False)


def test_a_word_finds_the_compounds_it_starts_or_ends_after_the_documents_holding_it_alone(index):
    assert paths(index, "Frist") == ["frist.md", "miete.md"]
    assert paths(index, "Fristen") == ["frist.md", "miete.md"]  # stemmed as the parts are
    assert paths(index, "Vertrag") == ["miete.md"]
    assert paths(index, "Kosten") == ["miete.md"]
    assert paths(index, "Steuer") == ["frist.md"]  # Steuererklärung, Steuerberater
    assert paths(index, "Kündigung") == ["miete.md"]  # the word itself, and Kündigungsfrist
    assert paths(index, "contract") == ["huur.md"]  # Dutch


def test_a_quoted_word_is_not_found_inside_a_compound(index):
    assert paths(index, '"Frist"') == ["frist.md"]


def test_a_word_of_three_letters_is_no_compound_s_head(index):
    assert paths(index, "Amt") == []  # Finanzamt: as many words that are no compounds end so


def test_english_words_are_not_split(index):
    assert paths(index, "frame") == []
    assert paths(index, "keeping") == []


def test_parts_are_the_starts_and_ends_long_enough_beside_a_rest_long_enough():
    assert parts("mietvertrag", 4, 3) == [
        *("miet", "mietv", "mietve", "mietver", "mietvert"),
        *("trag", "rtrag", "ertrag", "vertrag", "tvertrag"),
    ]
    assert parts("zinsrate", 4, 3) == ["zins", "zinsr", "rate", "srate"]
    assert parts("miete", 4, 3) == []
    assert parts("version2024", 4, 3) == []


def test_a_compound_is_marked_and_its_line_shown_for_its_head():
    german = Analyzer("german")
    line = "Die Kündigungsfrist für den Mietvertrag beträgt drei Monate."
    assert [line[a:b] for a, b in match_spans(line, german, frozenset({"frist"}))] == ["Kündigungsfrist"]
    assert [line[a:b] for a, b in match_spans(line, german, frozenset({"vertrag"}))] == ["Mietvertrag"]
    assert [line[a:b] for a, b in match_spans(line, german, frozenset({"miet"}))] == ["Mietvertrag"]
    assert match_spans(line, german, frozenset({"frist"}), verbatim=frozenset({"frist"})) == []
    assert match_spans("the timeframe", Analyzer("english"), frozenset({"frame"})) == []
    text = "# Wohnung\n\nDie Wohnung liegt im dritten Stock.\n\n" + line + "\n"
    (found,) = best_snippets([text], 1, TermBits(german, frozenset({"frist"})), 1)
    assert found.text.startswith("Die Kündigungsfrist") and found.matches == [[4, 19]]
