"""Documents that mix languages: each block is stemmed in its own language, so a query
in either language meets its inflected words, while a single-language document is
stemmed exactly as before.  Real SQLite and lexical indexes, no mocks."""

from __future__ import annotations

import os
import pickle

import pytest

from conftest import lexical_paths
from gnod.config import CollectionConfig
from gnod.ingest.pipeline import index_collection
from gnod.ingest.prepare import prepare
from gnod.ingest.sections import language_sections, stem_body
from gnod.ingest.walk import WalkEntry
from gnod.search import lexical
from gnod.store.db import connect
from gnod.store.documents import (
    delete_collection,
    dominant_language,
    index_languages,
    language_counts,
    restem_document,
)
from gnod.store.migrations import migrate
from gnod.text.analyzer import SEPARATOR, AnalyzerSet, exact_text, tokenize
from gnod.text.language import detect_language

ENGLISH = (
    "This tool copies your files to a remote server every night. It keeps the last "
    "seven snapshots and deletes older ones, so that the disk never fills up.\n\n"
    "The schedule is configured in the settings file. After you have changed it, "
    "restart the service and check the log for the next run.\n\n"
    "Any of the kept snapshots can be restored with the restore command, which asks "
    "before it overwrites a file that was changed since.\n"
)
GERMAN = (
    "Dieses Werkzeug kopiert jede Nacht Ihre Dateien auf einen entfernten Server. Es "
    "behält die letzten sieben Sicherungen und löscht die älteren, damit die Festplatten "
    "niemals voll werden.\n\n"
    "Die Zeitpläne stehen in den Einstellungen. Wenn Sie sie geändert haben, starten Sie "
    "den Dienst neu und prüfen Sie das Protokoll.\n"
)
RUSSIAN = (
    "Этот инструмент каждую ночь копирует ваши файлы на удалённый сервер. Он хранит "
    "последние резервные копии и удаляет старые, чтобы диск никогда не переполнялся.\n"
)

# An English page with a German section, and one with a Russian section.
EN_DE = f"# Backup tool\n\n{ENGLISH}\n```sh\nbackup --keep 7\n```\n\n## Deutsch\n\n{GERMAN}"
EN_RU = f"# Backup tool\n\n{ENGLISH}\n## По-русски\n\n{RUSSIAN}"
# A German page (German is the longer part) with an English section.
DE_EN = (
    f"# Sicherung\n\n{GERMAN}\nDie Sicherungen liegen auf dem Server und werden jede "
    "Woche von einem zweiten Werkzeug geprüft, bevor die alten gelöscht werden.\n\n"
    f"## English\n\n{ENGLISH}"
)
# Bilingual paragraph by paragraph.
ALTERNATING = "# Backup\n\n" + "\n".join(
    p + "\n" for pair in zip(ENGLISH.split("\n\n"), GERMAN.split("\n\n")) for p in pair
)

OTHER_ENGLISH = {
    "deploy.md": "# Deploy\n\nThe service is deployed to production by the release pipeline "
    "after the tests have passed on the main branch.\n",
    "billing.md": "# Billing\n\nInvoices are generated at the end of each month and sent to "
    "the customers by mail, together with a summary of their usage.\n",
}
OTHER_GERMAN = {
    "katze.md": "# Die Katze\n\nDie Katze schläft am Morgen in dem Haus und danach geht sie "
    "in den Garten, wenn das Wetter schön ist.\n",
}


def build(tmp_path, files: dict[str, str], language: str | None = None):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    stats = index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root), language=language))
    assert (stats.added, stats.errors) == (len(files), 0)
    return conn


def paths(conn, query: str) -> list[str]:
    return lexical_paths(conn, AnalyzerSet(), query)


def prepared(text: str, hint: str | None = None, name: str = "page.md"):
    data = text.encode()
    return prepare(WalkEntry(name, "/nowhere/" + name, len(data), 0, 0), data, "h", hint, AnalyzerSet())


@pytest.fixture
def make(tmp_path):
    conns = []

    def _make(files: dict[str, str], language: str | None = None):
        sub = tmp_path / f"ix{len(conns)}"
        sub.mkdir()
        conns.append(build(sub, files, language))
        return conns[-1]

    yield _make
    for c in conns:
        c.close()


# --- search -----------------------------------------------------------------------------


def test_german_query_finds_the_german_section_of_an_english_page(make):
    conn = make({"backup.md": EN_DE, **OTHER_ENGLISH})
    # The page is English (most of it is), and no page is German: the query is stemmed
    # in German because the index recorded that a block was.
    assert conn.execute("SELECT language FROM documents WHERE rel_path = 'backup.md'").fetchone()[0] == "english"
    assert index_languages(conn) == ["english"]
    # "Sicherung", "Einstellung", "Festplatte": only German stemming meets "Sicherungen",
    # "Einstellungen", "Festplatten".
    for query in ("Sicherung", "Einstellung", "Festplatte", "Sicherung Festplatte"):
        assert paths(conn, query)[:1] == ["backup.md"], query
    # An English query still finds its section.
    assert paths(conn, "deleting snapshot")[:1] == ["backup.md"]
    assert paths(conn, "deployment")[:1] == ["deploy.md"]


def test_the_same_page_stemmed_as_one_language_misses_the_german_query(make):
    # What per-block stemming is responsible for: with an English hint the whole page is
    # stemmed in English (as before), and the German inflections no longer meet.
    conn = make({"backup.md": EN_DE, **OTHER_ENGLISH}, language="english")
    for query in ("Sicherung", "Einstellung", "Festplatte"):  # nothing searched otherwise (a word as a prefix)
        assert "backup.md" not in lexical_paths(conn, AnalyzerSet(), query, respell=False), query
    assert paths(conn, "deleting snapshot")[:1] == ["backup.md"]


def test_english_query_finds_the_english_section_of_a_german_page(make):
    conn = make({"sicherung.md": DE_EN, **OTHER_GERMAN})
    assert dict(conn.execute("SELECT rel_path, language FROM documents")) == {
        "sicherung.md": "german",
        "katze.md": "german",
    }
    # "deleting" meets "deletes" only through English stemming.
    assert paths(conn, "deleting")[:1] == ["sicherung.md"]
    assert paths(conn, "Sicherung Festplatte")[:1] == ["sicherung.md"]
    assert paths(conn, "Katzen")[:1] == ["katze.md"]

    hinted = make({"sicherung.md": DE_EN, **OTHER_GERMAN}, language="german")
    assert "sicherung.md" not in paths(hinted, "deleting")


def test_paragraph_by_paragraph_bilingual_page(make):
    sections = language_sections(ALTERNATING, detect_language(ALTERNATING))
    assert [lang for _, _, lang in sections] == ["english", "german", "english", "german"]
    conn = make({"both.md": ALTERNATING, **OTHER_ENGLISH})
    assert paths(conn, "Sicherung Einstellung")[:1] == ["both.md"]
    assert paths(conn, "deleting snapshot")[:1] == ["both.md"]


def test_russian_section_of_an_english_page(make):
    # No Latin function words point at Russian: the script does.
    doc = prepared(EN_RU)
    assert (doc.language, doc.other_languages) == ("english", ("russian",))
    conn = make({"backup.md": EN_RU, **OTHER_ENGLISH})
    # "копия" (копии) and "резервная" (резервные) meet only through Russian stemming.
    assert paths(conn, "резервная копия")[:1] == ["backup.md"]
    assert paths(conn, "deleting snapshot")[:1] == ["backup.md"]


def test_diacritics_still_fold_in_a_german_section(make):
    conn = make({"backup.md": EN_DE, **OTHER_ENGLISH})
    assert paths(conn, "loscht")[:1] == ["backup.md"]  # löscht
    assert paths(conn, "Zeitplane")[:1] == ["backup.md"]  # Zeitpläne


# --- what is stemmed how ------------------------------------------------------------------


SINGLE_LANGUAGE = {
    "english": f"# Backup tool\n\n{ENGLISH}\n```sh\nbackup --keep 7\n```\n\n{ENGLISH}",
    "german": f"# Sicherung\n\n{GERMAN}\n```sh\nbackup --keep 7\n```\n\n{GERMAN}",
    "tldr": "# tar\n\n> Archiving utility.\n> More information: <https://www.gnu.org>.\n\n"
    "- [c]reate an archive and write it to a file:\n\n`tar cf path/to/target.tar "
    "path/to/file1 path/to/file2`\n\n- E[x]tract a (compressed) archive file into the "
    "current directory verbosely:\n\n`tar xvf path/to/source.tar[.gz|.bz2|.xz]`\n",
    "long_english": "\n\n".join([ENGLISH] * 40),
}


@pytest.mark.parametrize("name", sorted(SINGLE_LANGUAGE))
def test_single_language_page_is_stemmed_as_before(name):
    text = SINGLE_LANGUAGE[name]
    doc = prepared(text)
    language = detect_language(text)
    assert language is not None
    assert doc.language == language
    assert doc.other_languages == ()
    # German's stems go on with its compounds' heads (test_compounds), after a separator.
    assert doc.text.stem_body.partition(SEPARATOR)[0] == AnalyzerSet().get(language).index_text(text)


def test_collection_hint_is_authoritative():
    doc = prepared(EN_DE, hint="english")
    assert (doc.language, doc.other_languages) == ("english", ())
    assert doc.text.stem_body == AnalyzerSet().get("english").index_text(EN_DE)
    doc = prepared(EN_DE, hint="german")
    assert (doc.language, doc.other_languages) == ("german", ())


def test_mixed_page_keeps_every_token_and_stems_each_block_in_its_language():
    doc = prepared(EN_DE)
    assert (doc.language, doc.other_languages) == ("english", ("german",))
    stems = doc.text.stem_body.split()
    assert len(stems) == len(tokenize(EN_DE))
    assert {"sicher", "festplatt", "einstell"} <= set(stems)  # German stems
    assert {"snapshot", "delet", "configur"} <= set(stems)  # English stems
    assert "sicherungen" not in stems


def test_a_heading_belongs_to_the_section_it_opens():
    sections = language_sections(EN_DE, "english")
    assert [lang for _, _, lang in sections] == ["english", "german"]
    start, end, _ = sections[1]
    assert EN_DE[start:].startswith("## Deutsch")
    assert end == len(EN_DE)
    # The title heading opens the English part; the code block follows the prose before it.
    assert sections[0][0] == 0
    assert "backup --keep 7" in EN_DE[sections[0][0] : sections[0][1]]


def test_a_short_foreign_paragraph_does_not_split_a_page():
    text = f"# Notes\n\n{ENGLISH}\nDas ist nicht so gut.\n\n{ENGLISH}\n{ENGLISH}"
    doc = prepared(text)
    assert (doc.language, doc.other_languages) == ("english", ())
    assert doc.text.stem_body == AnalyzerSet().get("english").index_text(text)


def test_foreign_text_in_code_blocks_is_not_prose():
    # German inside fenced code (with blank lines in the fence) is not a German section.
    fenced = GERMAN.replace("\n\n", "\n\n\n")
    text = f"# Fixtures\n\n{ENGLISH}\n```text\n{fenced}\n{GERMAN}```\n\n{ENGLISH}"
    doc = prepared(text)
    assert (doc.language, doc.other_languages) == ("english", ())
    assert doc.text.stem_body == AnalyzerSet().get("english").index_text(text)


def test_a_code_block_inside_a_german_section_is_part_of_it():
    text = EN_DE + "\n```sh\nbackup --restore\n```\n\n" + GERMAN
    sections = language_sections(text, "english")
    assert [lang for _, _, lang in sections] == ["english", "german"]
    assert "backup --restore" in text[sections[1][0] : sections[1][1]]


def test_cjk_block_inside_an_english_page(make):
    cjk = "東京タワーは東京都港区芝公園にある総合電波塔です。\n"
    text = f"# Trip\n\n{ENGLISH}\n{cjk}\n{ENGLISH}"
    doc = prepared(text)
    # CJK has no stemmer, and its bigrams are the same under any: nothing to split.
    assert (doc.language, doc.other_languages) == ("english", ())
    assert doc.text.stem_body == AnalyzerSet().get("english").index_text(text)
    conn = make({"trip.md": text, **OTHER_ENGLISH})
    assert paths(conn, "東京タワー")[:1] == ["trip.md"]
    assert paths(conn, "電波塔")[:1] == ["trip.md"]
    # ... and a CJK block inside a mixed page keeps its bigrams too.
    conn = make({"backup.md": EN_DE + "\n" + cjk, **OTHER_ENGLISH})
    assert paths(conn, "東京タワー")[:1] == ["backup.md"]
    assert paths(conn, "Sicherung")[:1] == ["backup.md"]


def test_stem_body_without_per_block_is_the_plain_analyzer():
    analyzers = AnalyzerSet()
    out = stem_body(EN_DE, "english", analyzers, per_block=False)
    assert out == ("english", analyzers.get("english").index_text(EN_DE), exact_text(EN_DE), ())


# --- plumbing -----------------------------------------------------------------------------


def test_prepared_documents_cross_process_boundaries():
    # The worker pool pickles outcomes: the extra languages must survive it.
    doc = prepared(EN_DE)
    back = pickle.loads(pickle.dumps(doc))
    assert back == doc and back.other_languages == ("german",)


def _counts_by_scan(conn) -> list[tuple]:
    return conn.execute(
        "SELECT collection_id, ifnull(language, ''), other_languages, count(*) FROM documents "
        "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
    ).fetchall()


def _counts_kept(conn) -> list[tuple]:
    return conn.execute("SELECT * FROM language_counts WHERE n > 0 ORDER BY 1, 2, 3").fetchall()


def test_language_counts_follow_every_write_and_an_old_index_gains_them(make, tmp_path):
    conn = make({"backup.md": EN_DE, "ru.md": EN_RU, **OTHER_ENGLISH})
    root = tmp_path / "ix0" / "docs"
    other = tmp_path / "other"
    other.mkdir()
    (other / "ru.md").write_text(EN_RU, encoding="utf-8")
    index_collection(conn, AnalyzerSet(), CollectionConfig(name="o", path=str(other)))
    assert _counts_kept(conn) == _counts_by_scan(conn) and len(_counts_kept(conn)) >= 3
    # Rewritten in another language, re-stemmed, deleted, a collection removed.
    (root / "backup.md").write_text(f"# Backup tool\n\n{ENGLISH}", encoding="utf-8")
    os.remove(root / "ru.md")
    index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    doc = conn.execute("SELECT id FROM documents ORDER BY id LIMIT 1").fetchone()[0]
    with conn:
        restem_document(conn, doc, "german")
    assert _counts_kept(conn) == _counts_by_scan(conn)
    with conn:
        delete_collection(conn, "o")
    assert _counts_kept(conn) == _counts_by_scan(conn)
    assert dominant_language(conn, 1)[0] == "english"
    # An index written before the counts existed gains them from its documents.
    with conn:
        conn.execute("DROP TABLE language_counts")
        for name in ("insert", "delete", "update"):
            conn.execute(f"DROP TRIGGER language_counts_{name}")
        conn.execute("DELETE FROM migrations WHERE name = '0007_language_counts'")
    assert migrate(conn) == ["0007_language_counts"]
    assert _counts_kept(conn) == _counts_by_scan(conn)


def test_section_languages_count_towards_the_query_languages(make, tmp_path):
    conn = make({"backup.md": EN_DE, "again.md": EN_DE + "\n" + ENGLISH, "ru.md": EN_RU, **OTHER_ENGLISH})
    counts = language_counts(conn)
    english = counts["english"]
    assert counts == {"english": english, "german": 2, "russian": 1}
    # Each holds well over 5% of this small index: queries are stemmed in all three.
    assert set(lexical.query_languages("Festplatte", counts)) == {"english", "german", "russian"}

    # Rewriting the pages in English only takes German out of the counts.
    root = tmp_path / "ix0" / "docs"
    (root / "backup.md").write_text(f"# Backup tool\n\n{ENGLISH}", encoding="utf-8")
    os.remove(root / "again.md")
    stats = index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    assert (stats.updated, stats.removed) == (1, 1)
    assert language_counts(conn) == {"english": english - 1, "russian": 1}
    assert paths(conn, "deleting snapshot")[:1] == ["backup.md"]


def test_a_table_takes_its_collection_s_language_over_the_names_in_its_cells(make):
    """A CSV of English headers whose cells name Polish operators (Łukasz) was read as
    Polish for certain: `operators` missed its `operator` column. A table's language is
    a guess, which an English collection settles."""
    rows = "".join(f"R{i:03d},{11 + i % 4},{50 + i * 0.7:.1f},{'Łukasz' if i % 3 else 'Zoë'}\n" for i in range(30))
    more = {f"note{i}.md": f"# Note {i}\n\n{text}" for i, text in enumerate(OTHER_ENGLISH.values())}
    conn = make({"measurements.csv": "run_id,temperature_mK,t2_us,operator\n" + rows, **OTHER_ENGLISH, **more})
    (language,) = conn.execute("SELECT language FROM documents WHERE rel_path = 'measurements.csv'").fetchone()
    assert language == "english"
    assert paths(conn, "operators") == ["measurements.csv"]
    assert prepared(rows, name="alone.csv").language == "polish"  # its own guess, before the collection's
