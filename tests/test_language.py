"""Per-document language detection, language-name normalization and stopword lists.

Real detection throughout (lingua included when the cheap stages leave a tie); no mocks.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gnod.text import analyzer, language
from gnod.text.analyzer import LANGUAGES, Analyzer
from gnod.text.language import ISO_TO_SNOWBALL, detect_language, normalize_language, unstemmed_script
from gnod.text.stopwords import STOPWORDS, is_stopword

SAMPLES = {
    "english": [
        "The index is rebuilt in the background whenever a file changes, so searches always reflect what is on disk.",
        "Archive files into a tarball.",
        "List the contents of a directory, including hidden files.",
        "# tar\n\n> Archiving utility.\n> More information: <https://www.gnu.org/software/tar>.\n\n"
        "- Create an archive from files:\n\n`tar cf {{target.tar}} {{file1 file2 file3}}`\n\n"
        "- Extract an archive in the current directory:\n\n`tar xf {{source.tar}}`\n",
    ],
    "german": [
        "Der Index wird im Hintergrund neu aufgebaut, sobald sich eine Datei ändert, "
        "damit die Suche immer den aktuellen Stand zeigt.",
        "Erstelle ein Archiv aus den angegebenen Dateien und schreibe es auf die Festplatte.",
    ],
    "french": [
        "L'index est reconstruit en arrière-plan dès qu'un fichier change, afin que les "
        "recherches reflètent toujours le contenu du disque.",
    ],
    "spanish": [
        "El índice se reconstruye en segundo plano cada vez que cambia un archivo, para "
        "que las búsquedas siempre reflejen lo que hay en el disco.",
        "¿Dónde están los archivos que descargué ayer por la tarde?",
    ],
    "portuguese": [
        "O índice é reconstruído em segundo plano sempre que um arquivo muda, para que "
        "as pesquisas reflitam sempre o que está no disco.",
    ],
    "italian": [
        "L'indice viene ricostruito in background ogni volta che un file cambia, così "
        "le ricerche riflettono sempre il contenuto del disco.",
    ],
    "dutch": [
        "De index wordt op de achtergrond opnieuw opgebouwd zodra een bestand verandert, "
        "zodat zoekopdrachten altijd laten zien wat er op de schijf staat.",
    ],
    "swedish": [
        "Indexet byggs om i bakgrunden så fort en fil ändras, så att sökningar alltid visar det som finns på disken.",
    ],
    "russian": [
        "Индекс перестраивается в фоновом режиме при каждом изменении файла, чтобы поиск "
        "всегда показывал то, что есть на диске.",
    ],
    "turkish": [
        "Bir dosya değiştiğinde dizin arka planda yeniden oluşturulur, böylece aramalar "
        "her zaman diskteki içeriği gösterir.",
    ],
    "greek": [
        "Το ευρετήριο ξαναχτίζεται στο παρασκήνιο κάθε φορά που αλλάζει ένα αρχείο, ώστε "
        "οι αναζητήσεις να δείχνουν πάντα τι υπάρχει στον δίσκο.",
    ],
    "arabic": [
        "يتم إعادة بناء الفهرس في الخلفية كلما تغير ملف، بحيث تعكس عمليات البحث دائما ما هو موجود على القرص.",
    ],
}


@pytest.mark.parametrize(
    ("expected", "text"),
    [(lang, text) for lang, texts in SAMPLES.items() for text in texts],
    ids=[f"{lang}-{i}" for lang, texts in SAMPLES.items() for i in range(len(texts))],
)
def test_detects_language(expected: str, text: str) -> None:
    assert expected in LANGUAGES
    assert detect_language(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "这是一个用于测试语言检测的中文句子，里面没有任何英文单词。",
        "これは言語検出をテストするための日本語の文章です。",
        "이것은 언어 감지를 테스트하기 위한 한국어 문장입니다.",
        "# 命令\n\n> 将文件归档为 tarball。\n> 更多信息：<https://www.gnu.org/software/tar>。\n",
    ],
)
def test_cjk_has_no_stemmer(text: str) -> None:
    assert detect_language(text) is None


def test_languages_without_a_stemmer_are_none() -> None:
    ukrainian = "Індекс перебудовується у фоновому режимі щоразу, коли змінюється файл."
    hebrew = "האינדקס נבנה מחדש ברקע בכל פעם שקובץ משתנה, כך שהחיפוש תמיד מעודכן."
    assert detect_language(ukrainian) is None
    assert detect_language(hebrew) is None


@pytest.mark.parametrize("text", ["", "   \n\n", "Hello", "Hello world", "Привет мир", "42"])
def test_too_little_text_is_none(text: str) -> None:
    assert detect_language(text) is None


def test_hint_wins() -> None:
    english = SAMPLES["english"][0]
    assert detect_language(english, hint="german") == "german"
    assert detect_language(english, hint="de") == "german"
    assert detect_language("", hint="french") == "french"
    assert detect_language(english, hint="auto") == "english"
    with pytest.raises(ValueError):
        detect_language(english, hint="klingon")


def test_code_is_not_prose() -> None:
    german = (
        "# Installation\n\n"
        "Die folgenden Befehle installieren das Paket und starten den Dienst:\n\n"
        "```sh\n"
        "# install the package and start the service for the current user\n"
        "pip install the-package && systemctl --user start the-service\n"
        'for f in *.md; do echo "is the file in the index? $f"; done\n'
        "```\n\n"
        "    if the_file is not None and it is in the list: return the_value\n\n"
        "Danach ist die Suche sofort verfügbar.\n"
    )
    assert detect_language(german) == "german"


def test_tldr_pages_in_several_languages() -> None:
    pages = {
        "english": "# ls\n\n> List directory contents.\n> More information: "
        "<https://www.gnu.org/software/coreutils/ls>.\n\n- List files one per line:\n\n"
        "`ls -1`\n\n- List all files, including hidden files:\n\n`ls {{[-a|--all]}}`\n",
        "german": "# ls\n\n> Listet Verzeichnisinhalte auf.\n> Weitere Informationen: "
        "<https://www.gnu.org/software/coreutils/ls>.\n\n- Liste Dateien auf, eine pro "
        "Zeile:\n\n`ls -1`\n\n- Liste alle Dateien auf, inklusive versteckter Dateien:\n\n"
        "`ls {{[-a|--all]}}`\n",
        "spanish": "# ls\n\n> Lista los contenidos de directorios.\n> Más información: "
        "<https://www.gnu.org/software/coreutils/ls>.\n\n- Lista un archivo por línea:\n\n"
        "`ls -1`\n\n- Lista todos los archivos, incluyendo archivos ocultos:\n\n"
        "`ls {{[-a|--all]}}`\n",
        "norwegian": "# cat\n\n> Skriv ut og slå sammen filer.\n> Mer informasjon: "
        "<https://manned.org/cat>.\n\n- Skriv ut innholdet i en fil til `stdout`:\n\n"
        "`cat {{fil}}`\n\n- Slå sammen flere filer til en utdatafil:\n\n"
        "`cat {{fil1 fil2 ...}} > {{utdatafil}}`\n",
        "danish": "# cd\n\n> Denne kommando er et alias af `chdir`.\n\n- Se dokumentation for "
        "den oprindelige kommando:\n\n`tldr chdir`\n",
    }
    for expected, page in pages.items():
        assert detect_language(page) == expected, expected


def test_lingua_fallback_for_text_without_function_words() -> None:
    before = language._lingua_calls
    assert detect_language("Synchronize directories recursively.") == "english"
    assert language._lingua_calls == before + 1
    # Detectors are built once, then reused.
    detectors = dict(language._lingua_detectors)
    assert detect_language("Synchronize directories recursively.") == "english"
    assert language._lingua_detectors == detectors


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gives_a_stemmer_or_none(text: str) -> None:
    assert detect_language(text) in LANGUAGES | {None}


def test_importing_does_not_import_lingua() -> None:
    code = (
        "import sys\n"
        "import gnod.text.language as language\n"
        "assert 'lingua' not in sys.modules, 'lingua imported at module import'\n"
        "assert language.detect_language('The index is rebuilt in the background "
        "whenever a file changes, so that the results are always fresh.') == 'english'\n"
        "assert 'lingua' not in sys.modules, 'lingua imported for clear English text'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- normalize_language --------------------------------------------------------------------


@pytest.mark.parametrize("value", ["de", "DE", "German", "german", " GERMAN ", "de-AT", "de_CH"])
def test_normalize_language_accepts_codes_and_names(value: str) -> None:
    assert normalize_language(value) == "german"


def test_normalize_language_aliases_and_auto() -> None:
    assert normalize_language("nb") == "norwegian"
    assert normalize_language("Bokmål") == "norwegian"
    assert normalize_language("pt-BR") == "portuguese"
    assert normalize_language("Farsi") == "persian"
    assert normalize_language("auto") is None
    assert normalize_language("") is None


def test_normalize_language_rejects_unknown_values_naming_valid_ones() -> None:
    with pytest.raises(ValueError) as err:
        normalize_language("klingon")
    message = str(err.value)
    assert "klingon" in message
    assert "german" in message and "english" in message and "de" in message


def test_normalize_language_rejects_languages_without_a_stemmer() -> None:
    for value in ("zh", "ja", "ko", "uk", "chinese"):
        with pytest.raises(ValueError):
            normalize_language(value)


def test_iso_codes_map_to_existing_stemmers() -> None:
    assert set(ISO_TO_SNOWBALL.values()) <= LANGUAGES
    assert ISO_TO_SNOWBALL["en"] == "english"
    assert ISO_TO_SNOWBALL["no"] == ISO_TO_SNOWBALL["nb"] == "norwegian"
    for iso, name in ISO_TO_SNOWBALL.items():
        assert normalize_language(iso) == name


# --- stopwords ----------------------------------------------------------------------------


def test_stopword_lists_cover_the_main_languages() -> None:
    required = {
        "english", "german", "french", "spanish", "portuguese", "italian", "dutch",
        "swedish", "norwegian", "danish", "finnish", "russian", "turkish", "polish",
        "indonesian", "hungarian", "romanian", "czech", "catalan",
    }  # fmt: skip
    assert required <= set(STOPWORDS)
    assert set(STOPWORDS) <= LANGUAGES
    for lang, words in STOPWORDS.items():
        assert 30 <= len(words) <= 160, lang
        assert all(w == w.lower() and w.strip() == w and w for w in words), lang


def test_is_stopword() -> None:
    assert is_stopword("the", ["english"])
    assert is_stopword("und", ["english", "german"])
    assert not is_stopword("und", ["english"])
    assert not is_stopword("archive", ["english", "german", "french"])
    assert not is_stopword("the", [None, "klingon"])
    assert not is_stopword("the", [])


@pytest.mark.parametrize(
    "text, unstemmed",
    [
        ("このコマンドは `soffice` のエイリアスです", True),
        ("数据库备份", True),
        ("docker コンテナ", True),  # CJK letters weigh more than Latin ones, as in detection
        ("ภาษาไทย", True),
        ("git commit", False),
        ("café au lait", False),
        ("Москва хорошая погода", False),  # Cyrillic has stemmers
        ("see https://example.com/a-long-path 東", False),
    ],
)
def test_unstemmed_script(text, unstemmed):
    assert unstemmed_script(text) is unstemmed


def test_a_full_stem_cache_starts_again_with_the_words_at_hand(monkeypatch) -> None:
    """A source tree's vocabulary outgrows the cache; past the bound it holds the recent
    words (each stemmed once), never more than the bound, and stems stay right."""
    monkeypatch.setattr(analyzer, "_MAX_CACHE", 50)
    a = Analyzer("english")
    words = [f"running{i}x" for i in range(120)]
    assert a.stems(words) == words  # Snowball leaves these as they are
    assert len(a._cache) <= 50
    assert a.stems(["running", "connections"]) == ["run", "connect"]
    assert {"running", "connections"} <= a._cache.keys()
