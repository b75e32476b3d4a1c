"""Chinese, Japanese and Korean: CJK runs become overlapping bigrams on both sides, so
a query word (a phrase of its bigrams) finds the documents that contain it."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import cli_json, lexical_index, lexical_paths, migrated_db, write_tree
from gnod.config import CollectionConfig
from gnod.ingest.pipeline import index_collection
from gnod.search.grammar import Clause, compile_query, parse
from gnod.text.analyzer import (
    _UNMARKED,
    ASCII_SCAN_CHARS,
    NON_ASCII_RE,
    TOKEN_RE,
    Analyzer,
    AnalyzerSet,
    _fold_tables,
    exact_text,
    fold,
    fold_word,
    narrow,
    non_ascii_runs,
    tokenize,
)


@pytest.mark.parametrize(
    "text, tokens",
    [
        # Chinese: punctuation ends a run; a one-character run stays a unigram.
        ("我喜欢学习中文", ["我喜", "喜欢", "欢学", "学习", "习中", "中文"]),
        ("你好，世界！", ["你好", "世界"]),
        ("猫。狗", ["猫", "狗"]),
        ("人々", ["人々"]),
        # Japanese: kanji, hiragana and katakana (with ー) form one run; ・ separates.
        ("東京タワーに行く", ["東京", "京タ", "タワ", "ワー", "ーに", "に行", "行く"]),
        ("ひらがな", ["ひら", "らが", "がな"]),
        ("コーヒー・ショップ", ["コー", "ーヒ", "ヒー", "ショ", "ョッ", "ップ"]),
        ("ｺｰﾋｰ", ["コー", "ーヒ", "ヒー"]),  # half-width katakana as its usual form
        ("ＰＤＦファイル", ["pdf", "ファ", "ァイ", "イル"]),  # full-width Latin too
        # Korean: words are space-separated; each is bigrammed.
        ("한국어를 배우다", ["한국", "국어", "어를", "배우", "우다"]),
        # Mixed with Latin and digits: split at the script boundary.
        ("Python3を使う", ["python3", "を使", "使う"]),
        ("iPhone15の価格", ["iphone15", "の価", "価格"]),
        ("第3章", ["第", "3", "章"]),
        ("2024年3月5日", ["2024", "年", "3", "月", "5", "日"]),
        ("使用git-commit命令", ["使用", "git", "commit", "命令"]),
    ],
)
def test_tokenize_cjk(text, tokens):
    assert tokenize(text) == tokens
    assert Analyzer("english").index_text(text) == " ".join(tokens)


@pytest.mark.parametrize(
    "text",
    [
        "Deploy the real-time snake_case service",
        "Café naïve Straße İstanbul ΣΊΣΥΦΟΣ",
        "Москва хорошая погода",
        "हिन्दी भाषा ภาษาไทย עִבְרִית العَرَبِيَّة",
        "emoji 🚀 and ＡＢＣ fullwidth — “quotes”",
        # ASCII takes a byte-table fast path: every code point, then code.
        "".join(map(chr, range(128))) * 2,
        "static int __init kmalloc_GFP_KERNEL(void *p) { return x86_64 + 0x1F; } // Use-after-free",
        # Not ASCII until lowered: the Kelvin sign lowers to "k".
        "\u212aELVIN at 5\u212a",
    ],
)
def test_non_cjk_text_is_tokenized_as_before(text):
    assert tokenize(text) == TOKEN_RE.findall(narrow(text.lower()))


# Stretches of ASCII, each followed by a letter or mark of another script, a symbol or
# space that is not ASCII (it ends a word), or a lone surrogate (from a file read with
# surrogateescape): no CJK. Mostly ASCII, as a source file with a name in it, or not.
_NON_ASCII = ["é", "İ", "ß", "\u0301", "\u093f", "ก", "©", "—", "\xa0", "\u2028", "\udcff", "🚀"]
_MIXED = st.lists(
    st.tuples(st.text(st.sampled_from("aZ09 _-.\n\t"), min_size=20, max_size=400), st.sampled_from(_NON_ASCII))
).map(lambda parts: "".join(a + b for a, b in parts))


@given(_MIXED)
def test_text_with_other_characters_is_tokenized_as_the_regex_does(text):
    """Text with few non-ASCII characters splits its ASCII stretches by a byte table and
    only its other words by TOKEN_RE; other text goes through TOKEN_RE whole: the tokens
    are TOKEN_RE's, in order, either way."""
    assert tokenize(text) == TOKEN_RE.findall(text.lower())


@given(st.text(st.sampled_from("ab \néß—\u0301한\u1100\u1161🚀")), st.integers(1, 6))
def test_non_ascii_runs_are_the_regexs_whatever_the_blocks(text, block):
    """Blocks without a non-ASCII character are passed over, and a run across a block's
    end is still one run."""
    runs = [m.span() for m in non_ascii_runs(text, block)]
    assert runs == [m.span() for m in NON_ASCII_RE.finditer(text)]


def test_a_long_text_with_runs_across_blocks_is_tokenized_and_folded_as_a_whole():
    """Where a source file's few accented words fall across the scan's blocks, its tokens
    and its folded text are those of the whole text read at once."""
    text = list("int x_1;\n" * (4 * ASCII_SCAN_CHARS // 10))
    for at, run in (
        (0, "é"),
        (ASCII_SCAN_CHARS - 2, "éÈêË"),
        (2 * ASCII_SCAN_CHARS - 1, "\u1100\u1161"),
        (3 * ASCII_SCAN_CHARS, "e\u0301"),
    ):
        text[at : at + len(run)] = run
    text = "".join(text)
    assert len(list(non_ascii_runs(text))) == 4
    assert tokenize(text) == TOKEN_RE.findall(text.lower())
    whole = "".join(ch for ch in unicodedata.normalize("NFD", text) if not unicodedata.combining(ch))
    assert fold(text) == unicodedata.normalize("NFC", whole)


def _folded_whole(text: str) -> str:
    """fold's result by its definition, the whole text at once."""
    whole = "".join(ch for ch in unicodedata.normalize("NFD", narrow(text)) if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", whole).translate(_UNMARKED)


@given(
    st.text(
        st.sampled_from("aZ9 \n-_éÅİıßœŁ\u0301\u0308東京タﾃﾞＰＤＦ한국\u1100\u1161\u11a8\u0b47\u0b3eд\u05b8"),
        min_size=50,
    )
)
def test_a_text_of_many_non_ascii_characters_is_folded_as_by_definition(text):
    """Such a text's blocks are folded whole, by arrays (FOLD_DENSE_BYTES), not run by
    run: marks, width forms and the letters without a mark come out the same."""
    text = "東京" * 40 + text
    assert fold(text) == _folded_whole(text)


@given(st.text(st.sampled_from("aZ9-_éÅİıßœŁ\u0301\u0308東京タﾃﾞＰＤＦ한국\u1100\u1161д\u05b8"), max_size=12))
def test_a_word_folded_once_is_folded_as_fold_does_every_time_it_is_asked(word):
    assert fold_word(word) == fold(word) == fold_word(word)


def test_dense_and_sparse_blocks_and_a_run_across_their_end_are_folded_as_a_whole():
    """A block of many non-ASCII characters (folded whole) beside blocks of few (run by
    run), a run across each end: a Hangul syllable's jamo, a mark after a letter of the
    block before, a width form cut in two."""
    text = list("int x_1;\n" * (4 * ASCII_SCAN_CHARS // 10))
    for at, run in (
        (10, "Ｐｒｉｎｔ ＰＤＦ " * 40),
        (ASCII_SCAN_CHARS - 1, "\u1100\u1161"),
        (2 * ASCII_SCAN_CHARS - 3, "ÉÈ中文日本語\u0301ﾃﾞ" * 20),
        (3 * ASCII_SCAN_CHARS, "\u0301"),
        (4 * ASCII_SCAN_CHARS - 2, "ＰＤ"),
    ):
        text[at : at + len(run)] = run
    text = "".join(text)
    assert fold(text) == _folded_whole(text)
    assert fold(text).count("Print PDF ") == 40
    assert fold("Éé" * 50) == "Ee" * 50  # a block that folds to ASCII


def test_the_fold_tables_hold_every_combining_mark_of_this_python_s_unicode():
    """Every code point with a combining class is a mark there, and none lies above the
    tables' end (a later Unicode could add one: this test would say so)."""
    tables = _fold_tables()
    marks = [c for c in range(0x80, 0x110000) if unicodedata.combining(chr(c))]
    assert max(marks) < len(tables.mark) - 1
    assert tables.mark.nonzero()[0].tolist() == marks


@given(st.text(st.sampled_from("aZ9é\u0301東京タ _-.\n"), max_size=300), st.integers(1, 40))
def test_a_text_stemmed_a_piece_at_a_time_is_stemmed_as_a_whole(text, piece):
    """Pieces end at a line's end: no token (nor CJK run) is cut in two."""
    analyzer = Analyzer("english")
    assert analyzer.stems_and_words(text, piece) == (analyzer.index_text(text), exact_text(text))


def test_a_word_that_is_its_own_stem_is_kept_once():
    """The stem cache maps such a word to itself (most of a source tree's identifiers):
    one string held, not an equal second one."""
    analyzer = Analyzer("english")
    word, plural = "".join(["kmal", "loc"]), "".join(["allocation", "s"])
    assert analyzer.stem(word) is word
    assert analyzer.stem(plural) == "alloc" and analyzer.stem(plural) is not plural
    assert Analyzer(None).stem(word) is word


def test_query_words_become_bigram_phrases():
    assert parse("東京タワー 大阪") == [
        Clause(("東京", "京タ", "タワ", "ワー"), True, False, False, "東京タワー"),
        Clause(("大阪",), False, False, False, "大阪"),
    ]
    assert parse("Python3を使う")[0].tokens == ("python3", "を使", "使う")
    # A hyphenated CJK compound also tries the concatenation, bigrammed across the join.
    q = compile_query(parse("東京-大阪"), AnalyzerSet(), [None], lambda t: False)
    assert q.positives == ((("東京", "大阪"), ("東京", "京大", "大阪")),)


# --------------------------------------------------------------------------- end to end

PAGES = {
    "zh.md": (
        "# 数据库备份\n\n本文介绍如何使用命令行工具备份数据库。每天晚上自动运行备份脚本，并把压缩文件上传到服务器。\n"
    ),
    "ja.md": (
        "# コーヒーの淹れ方\n\n美味しいコーヒーを淹れるには、新鮮な豆を使うことが大切です。"
        "お湯の温度は九十度くらいがいいでしょう。Python3を使うスクリプトで時間を計ります。\n"
    ),
    "ko.md": ("# 한국어 학습\n\n매일 한국어를 공부하면 실력이 빨리 늘어요. 드라마를 보면서 듣기 연습을 하세요.\n"),
    "en.md": (
        "# Deployment guide\n\nHow to deploy the billing service to production. Run the "
        "release pipeline, watch the dashboards and roll back when the error rate climbs.\n"
    ),
    "fr.md": (
        "# Le petit déjeuner\n\nChaque matin, je prends un café noir avec un croissant "
        "à la boulangerie du quartier, puis je marche jusqu'au bureau.\n"
    ),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("cjk")
    for name, text in PAGES.items():
        (root / name).write_text(text, encoding="utf-8")
    conn = migrated_db(str(tmp_path_factory.mktemp("db") / "index.sqlite"))
    analyzers = AnalyzerSet()
    stats = index_collection(conn, analyzers, CollectionConfig(name="c", path=str(root)))
    assert (stats.added, stats.errors) == (len(PAGES), 0)
    yield conn, analyzers
    conn.close()


def paths(index, query: str) -> list[str]:
    conn, analyzers = index
    return lexical_paths(conn, analyzers, query)


def test_languages_of_the_pages(index):
    conn, _ = index
    langs = dict(conn.execute("SELECT rel_path, language FROM documents"))
    assert langs == {"zh.md": None, "ja.md": None, "ko.md": None, "en.md": "english", "fr.md": "french"}


def test_the_index_keeps_bigrams_whole(index):
    conn, analyzers = index
    with lexical_index(conn, analyzers) as lex:
        searcher = lex.searcher()
        for field in ("stems", "exact"):
            assert all(searcher.doc_freq(field, t) for t in ("数据", "据库", "コー", "ーヒ", "한국", "국어", "python3"))
            assert not any(searcher.doc_freq(field, t) for t in ("数", "据", "コ", "한"))


@pytest.mark.parametrize(
    "query, page",
    [
        ("数据库", "zh.md"),  # 3 characters, in the title and the body
        ("服务器", "zh.md"),
        ("压缩文件", "zh.md"),  # 4 characters
        ("备份", "zh.md"),  # 2 characters: a single bigram
        ("コーヒー", "ja.md"),  # katakana with the prolonged sound mark
        ("温度", "ja.md"),  # kanji
        ("でしょう", "ja.md"),  # hiragana
        ("Python3を使う", "ja.md"),  # mixed Latin, digits and kana
        ("한국어", "ko.md"),  # inside 한국어를
        ("드라마", "ko.md"),
        ("deploying", "en.md"),  # English still stemmed
        ("cafe", "fr.md"),  # diacritics folded
    ],
)
def test_word_finds_its_page(index, query, page):
    assert paths(index, query)[:1] == [page]


@pytest.mark.parametrize(
    "query, page",
    [
        ("库", "zh.md"),  # ends its run (数据库。): only the bigram 据库 holds it
        ("器", "zh.md"),  # 服务器。
        ("豆", "ja.md"),  # 新鮮な豆を: inside a run
        ("늘", "ko.md"),  # 늘어요
    ],
)
def test_a_one_character_word_is_found_inside_a_run(index, query, page):
    """Everyday words of one character (茶, 猫, 肉) were found only standing alone: a
    run is indexed as its bigrams."""
    assert paths(index, query) == [page]
    assert paths(index, f"数据库 -{query}") == ([] if page == "zh.md" else ["zh.md"])


def test_a_one_character_words_snippet_marks_it():
    from gnod.search.snippet import TermBits, best_snippets

    text = "# 题目\n\n无关的一行。\n我喜欢喝茶，我的猫也喜欢。\n"
    [got] = best_snippets([text], 1, TermBits(Analyzer(None), frozenset({"茶"})))
    assert got.line == 4 and [got.text[a:b] for a, b in got.matches] == ["茶"]


def test_absent_words_sharing_characters_do_not_match(index):
    assert paths(index, "库存") == []  # shares 库 with 数据库, but not a bigram
    assert paths(index, "文本") == []  # 本文 reversed: bigrams keep the order


def test_multi_word_and_mixed_queries(index):
    assert set(paths(index, "数据库 コーヒー")) == {"zh.md", "ja.md"}
    assert set(paths(index, "한국어 deploy")) == {"ko.md", "en.md"}
    assert paths(index, '"新鮮な豆"') == ["ja.md"]
    assert paths(index, "コーヒー -温度") == []


TRANSLATED = {
    **{
        f"en/{i}.md": f"# Slab notes {i}\n\nFree objects with kmem_cache_free() once the cache {i} is done.\n"
        for i in range(30)
    },
    "zh/slab.md": "# 内存分配\n\nslab缓存应该用kmem_cache_free()来释放，而不是kfree。缓存用kmem_cache_create创建。\n",
}


def test_a_name_of_code_in_a_page_without_a_stemmer_is_found_as_written(tmp_path):
    """A Chinese page among English ones (the kernel's translations) holds its words
    unstemmed: an identifier's phrase is searched as written too, not only stemmed in
    the query's languages (`kmem cach free` never meets the page's `kmem cache free`)."""
    conn = migrated_db(str(tmp_path / "index.sqlite"))
    analyzers = AnalyzerSet()
    root = write_tree(str(tmp_path / "tree"), TRANSLATED)
    index_collection(conn, analyzers, CollectionConfig(name="c", path=root))
    for query in ("kmem_cache_free", "kmem_cache_create", "kmem_cache"):
        assert "zh/slab.md" in lexical_paths(conn, analyzers, query, limit=40), query
    assert "zh/slab.md" in lexical_paths(conn, analyzers, '"kmem cache create"', limit=40)


# --------------------------------------------------------------------------- through gnod

ALIAS_PAGES = {
    "ja/soffice.md": "# libreoffice\n\n> このコマンドは `soffice` のエイリアスです。\n\n"
    "- 元のコマンドのドキュメントを表示する:\n\n`tldr soffice`\n",
    "sv/soffice.md": "# libreoffice\n\n> Det här kommandot är ett alias för `soffice`.\n\n"
    "- Visa dokumentationen för det ursprungliga kommandot:\n\n`tldr soffice`\n",
    "en/soffice.md": "# libreoffice\n\n> This command is an alias of `soffice`.\n\n"
    "- View documentation for the original command:\n\n`tldr soffice`\n",
    "de/soffice.md": "# libreoffice\n\n> Dieser Befehl ist ein Alias von `soffice`.\n\n"
    "- Zeige die Dokumentation für den ursprünglichen Befehl an:\n\n`tldr soffice`\n",
}


def test_a_cjk_query_is_matched_as_written_not_stemmed_in_other_languages(daemon, env, tmp_path):
    cli_json("collection", "add", write_tree(str(tmp_path), ALIAS_PAGES), "--name", "alias", "--json", env=env)
    res = cli_json("search", "このコマンドは soffice のエイリアスです", "--json", env=env)
    assert res["languages"] == [None]
    assert res["hits"][0]["path"] == "ja/soffice.md"
    # A query in a language with a stemmer keeps its own.
    assert cli_json("search", "Dieser Befehl ist ein Alias von soffice", "--json", env=env)["languages"] == ["german"]


def notes_index(tmp_path, files: dict[str, str]):
    """(connection, analyzers) of an index of `files`, a folder of notes."""
    conn = migrated_db(str(tmp_path / "index.sqlite"))
    analyzers = AnalyzerSet()
    index_collection(conn, analyzers, CollectionConfig(name="c", path=write_tree(str(tmp_path / "notes"), files)))
    return conn, analyzers


def test_forms_of_another_width_find_and_mark_their_usual_ones(tmp_path):
    """Japanese input methods type ＰＤＦ, ３つ, Ｗｉ－Ｆｉ and ﾃｽﾄ; none was found by
    PDF, 3つ, wifi or テスト, nor the other way round. And a word with a voiced kana
    (ガス, データ) was found but not marked: its letters were compared unfolded."""
    from gnod.search.snippet import TermBits, best_snippets

    conn, analyzers = notes_index(
        tmp_path,
        {
            "wide.md": "# メモ\n\nＰＤＦファイルを３つ送った。Ｗｉ－Ｆｉが遅い。\n",
            "half.md": "# 結果\n\nﾃｽﾄの結果はまだです。\n",
            "usual.md": "# 家\n\n東京ガスのデータを見た。\n",
        },
    )
    for query, page in (("PDF", "wide.md"), ("wi-fi", "wide.md"), ("Ｗｉ－Ｆｉ", "wide.md"), ("テスト", "half.md")):
        assert lexical_paths(conn, analyzers, query) == [page], query
    assert lexical_paths(conn, analyzers, "ﾃﾞｰﾀ") == ["usual.md"]
    marked = {}
    for text, terms in (
        ("ＰＤＦファイル", {"pdf"}),
        ("ﾃｽﾄの結果", {"テス", "スト"}),
        ("東京ガスのデータ", {"ガス", "デー", "ータ"}),
    ):
        [got] = best_snippets([text], 1, TermBits(Analyzer(None), frozenset(terms)))
        marked[text] = [got.text[a:b] for a, b in got.matches]
    assert marked == {"ＰＤＦファイル": ["ＰＤＦ"], "ﾃｽﾄの結果": ["ﾃｽﾄ"], "東京ガスのデータ": ["ガス", "データ"]}


def test_letters_without_a_mark_are_folded_as_people_type_them(tmp_path):
    """`oeufs` did not find `œufs`, nor `lodz` `Łódź`: only marks were taken off."""
    assert fold("Œuvre cœur Straße Łódź Ærø þorn") == "OEuvre coeur Strasse Lodz AEro thorn"
    conn, analyzers = notes_index(
        tmp_path,
        {
            "fr.md": "# Recette\n\nBattre les œufs avec le sucre, puis ajouter la farine et le lait.\n",
            "pl.md": "# Podróż\n\nW sobotę jedziemy pociągiem do Łodzi, a potem do Gdańska na weekend.\n",
        },
    )
    for query, page in (("oeufs", "fr.md"), ("œufs", "fr.md"), ("lodzi", "pl.md"), ("Łodzi", "pl.md")):
        assert lexical_paths(conn, analyzers, query) == [page], query
