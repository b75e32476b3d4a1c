"""The lexical index (tantivy) beside SQLite: derived from it, reconciled with it at start,
converted from an older index without reading a file again, and filtered inside its query."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
import threading
import time
import unicodedata

import apsw
import msgspec
import pytest
import tantivy
from hypothesis import given
from hypothesis import strategies as st

from conftest import (
    cleanup_home,
    cli_json,
    lexical_ids,
    lexical_index,
    lexical_paths,
    lexical_paths_in,
    make_env,
    make_home,
    migrated_db,
    start_gnod,
    write_tree,
)
from gnod.config import CollectionConfig
from gnod.ingest.lexical_text import deriver
from gnod.ingest.pipeline import index_collection
from gnod.ingest.workers import PreparePool
from gnod.paths import Paths
from gnod.search import lexical
from gnod.search.constants import PATH_GLOBS_KEPT, PIPELINE
from gnod.search.filters import Filter, FilterError, braces, resolve, type_globs, where
from gnod.search.grammar import expand_prefixes, parse
from gnod.search.lexical import filter_query, path_filter, path_query
from gnod.store import kept
from gnod.store import lexical_index as lexical_index_module
from gnod.store.db import connect
from gnod.store.documents import delete_collection, docs_by_ids, language_counts, unpack
from gnod.store.lexical_index import SCHEMA, add_path, folder_name
from gnod.store.migrations import MIGRATIONS, migrate
from gnod.text.analyzer import AnalyzerSet, fold
from gnod.text.stopwords import is_stopword

DOCS = {
    "deploying.md": "# Deploying\n\nDeploying the service to production takes a few minutes.\n",
    "deployed.md": "# Releases\n\nThe service was deployed yesterday evening by the pipeline.\n",
    "billing.md": "# Billing\n\nInvoices are generated at the end of each month.\n",
}


def write(root, files: dict[str, str]) -> None:
    root.mkdir(exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def old_index(db_path: str, root) -> None:
    """An index as the previous gno left it: documents in SQLite, their content stored as
    text, the lexical index in two FTS5 tables, no tantivy folder."""
    conn = connect(db_path)
    migrate(conn)
    index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    for rowid, packed in conn.execute("SELECT rowid, markdown FROM content").fetchall():  # stored as text
        conn.execute("UPDATE content SET markdown = ? WHERE rowid = ?", (unpack(packed), rowid))
    conn.execute(
        "DROP TABLE lexical_pending; "
        "CREATE VIRTUAL TABLE documents_fts USING fts5(filepath, title, body, content='', contentless_delete=1); "
        "CREATE VIRTUAL TABLE documents_exact USING fts5(filepath, title, body, content='', contentless_delete=1); "
        "CREATE VIRTUAL TABLE documents_exact_vocab USING fts5vocab(documents_exact, row); "
        "DROP INDEX documents_collection_language; DROP INDEX documents_unsure; DROP INDEX documents_other_languages; "
        "DROP INDEX documents_collection_indexed; "
        "DROP TABLE language_counts; DROP TRIGGER language_counts_insert; DROP TRIGGER language_counts_delete; "
        "DROP TRIGGER language_counts_update; "
        # Chunks named their content by its hash.
        "CREATE TABLE chunks_by_hash(id INTEGER PRIMARY KEY, mirror_hash TEXT NOT NULL "
        "REFERENCES content(mirror_hash) ON DELETE CASCADE, seq INTEGER NOT NULL, pos INTEGER NOT NULL, "
        "length INTEGER NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, UNIQUE(mirror_hash, seq)); "
        "INSERT INTO chunks_by_hash SELECT cc.id, ct.mirror_hash, cc.seq, cc.pos, cc.length, cc.start_line, "
        "cc.end_line FROM content_chunks cc JOIN content ct ON ct.id = cc.content_id; "
        "DROP TABLE content_chunks; ALTER TABLE chunks_by_hash RENAME TO content_chunks; "
        "CREATE TRIGGER content_chunks_tombstone AFTER DELETE ON content_chunks "
        "WHEN EXISTS (SELECT 1 FROM vec_models) "
        "BEGIN INSERT OR IGNORE INTO vec_tombstones(chunk_id) VALUES (old.id); END; "
        "DROP TABLE symbol_vocab; DROP TRIGGER content_symbols_delete; DROP TABLE symbol_names; "
        "DROP TABLE content_symbols; "
        "ALTER TABLE documents DROP COLUMN line_shifts; ALTER TABLE documents DROP COLUMN read_rules; "
        "DROP TABLE ocr_pending; "
        "DELETE FROM migrations WHERE name IN ('0004_lexical_index', '0005_language_indexes', "
        "'0006_collection_indexed_at', '0007_language_counts', '0008_chunks_by_content_id', '0009_symbols', "
        "'0010_line_shifts', '0011_ocr_pending', '0012_symbol_vocab', '0013_symbol_names_membership', "
        "'0014_config_files_guessed', '0015_read_rules', '0016_written_days', '0017_senders_folded', "
        "'0018_keywords_are_tags', '0019_tags_folded', '0020_named_days', '0021_aliases', '0022_tex_accents')"
    )
    conn.close()


def test_an_older_index_converts_from_what_is_stored(tmp_path):
    root = tmp_path / "docs"
    write(root, DOCS)
    db = str(tmp_path / "index.sqlite")
    old_index(db, root)
    shutil.rmtree(root)  # nothing is read from disk again
    conn = connect(db)
    chunks = conn.execute("SELECT id, mirror_hash, seq, pos, length FROM content_chunks ORDER BY id").fetchall()
    assert chunks
    assert (
        migrate(conn)
        == [
            "0004_lexical_index",
            "0005_language_indexes",
            "0006_collection_indexed_at",
            "0007_language_counts",
            "0008_chunks_by_content_id",
            "0009_symbols",
            "0010_line_shifts",
            "0011_ocr_pending",
            "0012_symbol_vocab",
            "0013_symbol_names_membership",
            "0014_config_files_guessed",
            "0015_read_rules",
            "0016_written_days",
            "0017_senders_folded",
            "0018_keywords_are_tags",
            "0019_tags_folded",
            "0020_named_days",
            "0021_aliases",
            "0022_tex_accents",
        ]
        == [m[0] for m in MIGRATIONS[3:]]
    )
    assert not conn.execute("SELECT count(*) FROM sqlite_master WHERE name GLOB 'documents_[fe][tx]*'").fetchone()[0]
    # The chunks keep their ids (vectors key on them), now naming their content by rowid.
    assert (
        conn.execute(
            "SELECT cc.id, ct.mirror_hash, cc.seq, cc.pos, cc.length FROM content_chunks cc "
            "JOIN content ct ON ct.id = cc.content_id ORDER BY cc.id"
        ).fetchall()
        == chunks
    )
    assert lexical_paths(conn, AnalyzerSet(), "deploying") == ["deploying.md", "deployed.md"]
    conn.close()


def test_gnod_converts_an_older_index_at_its_first_start(tmp_path):
    home = make_home()
    try:
        env = make_env(home)
        paths = Paths(home)
        root = tmp_path / "docs"
        write(root, DOCS)
        os.makedirs(paths.config_dir)
        with open(paths.config_file, "w") as f:
            f.write(f'[[collections]]\nname = "c"\npath = "{root}"\n')
        old_index(paths.db_file, root)
        handle = start_gnod(env)
        try:
            hits = cli_json("search", "deploying", "--json", env=env)["hits"]
            assert [h["path"] for h in hits] == ["deploying.md", "deployed.md"]
            assert "Deploying the service to production" in hits[0]["snippet"]["text"]
            lexical = cli_json("status", "--json", env=env)["lexical"]
            assert lexical["ready"] and lexical["documents"] == 3 and lexical["bytes"] > 0
            # The content stored as text is compressed in the background, and reads the same.
            deadline = time.monotonic() + 20
            while stored_kinds(paths.db_file) != {"blob"}:
                assert time.monotonic() < deadline, stored_kinds(paths.db_file)
                time.sleep(0.05)
            assert cli_json("get", "c/billing.md", "--json", env=env)["content"] == DOCS["billing.md"]
        finally:
            handle.stop()
    finally:
        cleanup_home(home)


def stored_kinds(db_path: str) -> set[str]:
    """How content.markdown values are stored: "text" (before compression), "blob"."""
    conn = sqlite3.connect(db_path)
    try:
        return {r[0] for r in conn.execute("SELECT DISTINCT typeof(markdown) FROM content")}
    finally:
        conn.close()


def indexed(tmp_path):
    """(connection, folder): DOCS indexed in SQLite, their lexical text still pending."""
    root = tmp_path / "docs"
    write(root, DOCS)
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    return conn, root


def test_a_phrase_of_words_holds_within_a_folder_of_a_path_unless_the_query_names_folders(tmp_path):
    """A path is indexed with a separator between its folders: `entry_SYSCALL_64` is no
    longer found in the path `entry/syscall_64.c` (nor a quoted `#include` line in
    `include/linux/module.h`), while a query that names folders (`x86/entry`) still
    finds the paths that hold them, and the text that writes them so."""
    root = tmp_path / "tree"
    write_tree(
        str(root),
        {
            "arch/x86/entry/syscall_64.c": "const sys_call_ptr_t sys_call_table[] = {\n};\n",
            "arch/x86/entry/entry_64.S": "SYM_CODE_START(entry_SYSCALL_64)\n\tswapgs\n",
            "tools/include/linux/module.h": "#ifndef _TOOLS_MODULE_H\n#define _TOOLS_MODULE_H\n",
            "drivers/foo.c": "#include <linux/module.h>\nstatic int foo;\n",
            "Documentation/x86/entry_64.rst": "The x86/entry code is written in assembler.\n",
        },
    )
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    an = AnalyzerSet()
    with lexical_index(conn, an) as index:
        assert lexical_paths_in(index, conn, an, "entry_SYSCALL_64") == ["arch/x86/entry/entry_64.S"]
        assert lexical_paths_in(index, conn, an, '"#include <linux/module.h>"') == ["drivers/foo.c"]
        found = lexical_paths_in(index, conn, an, "x86/entry")
        assert sorted(found) == [
            "Documentation/x86/entry_64.rst",
            "arch/x86/entry/entry_64.S",
            "arch/x86/entry/syscall_64.c",
        ]
        assert sorted(lexical_paths_in(index, conn, an, "linux/module.h")) == [
            "drivers/foo.c",
            "tools/include/linux/module.h",
        ]


def test_what_a_crash_left_pending_is_redone_at_start(tmp_path):
    conn, root = indexed(tmp_path)
    assert lexical_paths(conn, AnalyzerSet(), "invoices") == ["billing.md"]
    # Written to SQLite, then a crash before the lexical index took it: it stays pending.
    (root / "billing.md").write_text("# Billing\n\nReceipts are mailed every quarter.\n")
    (root / "deployed.md").unlink()
    index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    assert conn.execute("SELECT count(*) FROM lexical_pending").fetchone()[0] == 2
    assert lexical_paths(conn, AnalyzerSet(), "invoices") == []
    assert lexical_paths(conn, AnalyzerSet(), "receipts") == ["billing.md"]
    assert lexical_paths(conn, AnalyzerSet(), "deploying") == ["deploying.md"]
    assert conn.execute("SELECT count(*) FROM lexical_pending").fetchone()[0] == 0
    conn.close()


def test_a_document_written_since_the_index_took_it_is_no_hit_where_its_text_no_longer_matches(tmp_path):
    """During a long run SQLite holds a document's new text before the lexical index
    commits it: a search matched by the old text gave the new one's first line as its
    passage, no match in it. Such a hit goes; one whose new text still matches stays."""
    from gnod.protocol import SearchParams
    from gnod.server.searching import answer

    conn, root = indexed(tmp_path)
    an = AnalyzerSet()
    with lexical_index(conn, an) as index:
        (root / "billing.md").write_text("# Billing\n\nReceipts are mailed every quarter.\n")
        (root / "deploying.md").write_text("# Deploying\n\nDeploying the service takes an hour now.\n")
        index_collection(conn, an, CollectionConfig(name="c", path=str(root)))  # not in the index yet

        def found(query: str) -> list[str]:
            res = answer(index, conn, an, SearchParams(query=query), language_counts(conn), Filter())
            assert all(h.snippet and h.snippet.matches for h in res.hits), res.hits
            return [h.path for h in res.hits]

        assert found("invoices") == []
        assert found("receipts") == []  # not in the index yet
        assert found("deploying") == ["deploying.md", "deployed.md"]
        index.sync(conn)
        assert found("receipts") == ["billing.md"]
    conn.close()


def test_a_name_s_words_are_marked_only_inside_it_where_a_passage_holds_it(tmp_path):
    """`rcu_read_lock` marked the `RCU` of `CONFIG_PREEMPT_RCU` on the passage's next
    line, and --vimgrep listed that line as a place of the name; a passage holding only
    its words apart keeps them marked, and the query's other words stay marked."""
    from gnod.protocol import SearchParams
    from gnod.server.searching import answer

    root = tmp_path / "tree"
    write_tree(
        str(root),
        {
            "rcupdate.h": "/*\n * rcu_read_lock() starts a reader section, which\n"
            " * CONFIG_PREEMPT_RCU lets the scheduler preempt.\n */\n",
            "tree.c": "/* Tree RCU: while the rcu read lock is held, a list's lock is not taken. */\nint x;\n",
        },
    )
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    an = AnalyzerSet()
    index_collection(conn, an, CollectionConfig(name="c", path=str(root)))
    with lexical_index(conn, an) as index:

        def marked(query: str) -> dict[str, list[str]]:
            hits = answer(index, conn, an, SearchParams(query=query), language_counts(conn), Filter()).hits
            return {h.path: [h.snippet.text[a:b] for a, b in h.snippet.matches] for h in hits if h.snippet}

        found = marked("rcu_read_lock")
        assert "".join(found["rcupdate.h"]).lower() == "rcureadlock", found
        assert [w.lower() for w in found["tree.c"]] == ["rcu", "rcu", "read", "lock", "lock"], found
        assert [w.lower() for w in marked("rcu_read_lock preempt")["rcupdate.h"]][-1] == "preempt"
    conn.close()


def test_a_name_s_one_passage_holds_it_where_a_later_line_does(tmp_path):
    """`TotalCharges` showed a notebook's `df['total_charges']` line, its words, where
    `--per-doc 3` showed two lines holding the name itself, and --vimgrep listed only the
    first: one passage is the first of those holding the name, as with more."""
    from gnod.protocol import SearchParams
    from gnod.server.searching import answer

    code = "import pandas as pd\n\ndf['total_charges'].describe()\n" + "x = 1\n" * 10
    code += "df['TotalCharges'] = pd.to_numeric(df['TotalCharges'])\n"
    root = write_tree(str(tmp_path / "src"), {"eda.py": code})
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    an = AnalyzerSet()
    index_collection(conn, an, CollectionConfig(name="c", path=root))
    with lexical_index(conn, an) as index:
        for n in (1, 3):
            hit = answer(
                index, conn, an, SearchParams(query="TotalCharges", per_doc=n), language_counts(conn), Filter()
            )
            assert hit.hits[0].snippet is not None and hit.hits[0].snippet.line == 14, n
    conn.close()


def test_an_identifier_s_passage_is_where_its_words_run_and_a_word_typed_whole_ranks_first(tmp_path):
    """Typed whole or as a picker sends it (the last word a prefix): `mmc_add` shows
    `mmc_add_card(`, not a line holding its words apart; `CONFIG_PM` in a Kconfig file
    shows `config PM`, not `config PM_STD_PARTITION`; and `kmalloc*` ranks a page of
    kmalloc above a shorter one saying only "kmalloced"."""
    from gnod.protocol import SearchParams
    from gnod.server.searching import answer

    root = tmp_path / "tree"
    filler = "".join(f"\tint field_{i};\n" for i in range(12))
    write_tree(
        str(root),
        {
            "drivers/mmc/bus.c": "static int mmc_bus_uevent(void)\n{\n"
            '\tretval = add_uevent_var(env, "MMC_TYPE=%s", type);\n}\n\n'
            "int mmc_add_card(struct mmc_card *card)\n{\n\treturn 0;\n}\n",
            "kernel/power/Kconfig": 'config PM_STD_PARTITION\n\tstring "Default resume partition"\n\n'
            'config PM\n\tbool "Device power management core functionality"\n',
            "mm/slab.h": f"struct kmem_cache {{\n{filler}}};\nvoid *kmalloc(size_t size, gfp_t flags);\n",
            "kernel/params.c": f"/* parameters that are kmalloced */\nstruct param {{\n{filler[: len(filler) // 2]}}};\n",
        },
    )
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    an = AnalyzerSet()
    index_collection(conn, an, CollectionConfig(name="c", path=str(root)))
    with lexical_index(conn, an) as index:

        def first(query: str) -> tuple[str, str]:
            hit = answer(index, conn, an, SearchParams(query=query), language_counts(conn), Filter()).hits[0]
            assert hit.snippet is not None
            return hit.path, hit.snippet.text.split("\n")[0]

        for typed in ("mmc_add", "mmc_add*"):
            assert first(typed) == ("drivers/mmc/bus.c", "int mmc_add_card(struct mmc_card *card)")
        for typed in ("CONFIG_PM", "CONFIG_PM*"):
            assert first(typed) == ("kernel/power/Kconfig", "config PM")
        assert first("kmalloc*")[0] == "mm/slab.h"
        assert first("kmal*")[0] == "kernel/params.c"  # no word is `kmal`: each counts whole
    conn.close()


def test_a_writer_let_go_after_a_big_run_merges_on_its_own_thread(tmp_path, monkeypatch):
    """`rest` lets the writer go on a thread of its own (its merges take seconds after a
    big ingest, which the run's caller no longer waits for); `then` runs once it holds
    the index's lock no more, and the next write waits for that, then goes on."""
    monkeypatch.setattr(lexical_index_module, "REST_AFTER", 1)
    conn, root = indexed(tmp_path)
    analyzers = AnalyzerSet()
    freed: list[bool] = []
    with lexical_index(conn, analyzers) as lex:
        before = threading.active_count()

        def then() -> None:  # the lock is free: another writer may open
            tantivy.Index.open(lex.path).writer(15_000_000, 1).wait_merging_threads()
            freed.append(threading.current_thread() is not threading.main_thread())

        assert lex.rest(then=then)
        assert not lex.rest()  # nothing left to let go
        (root / "billing.md").write_text("# Billing\n\nReceipts are mailed every quarter.\n")
        index_collection(conn, analyzers, CollectionConfig(name="c", path=str(root)), lex=lex)
        assert freed == [True]
        assert threading.active_count() <= before
        assert lexical_paths_in(lex, conn, analyzers, "receipts") == ["billing.md"]
    conn.close()


def test_searches_read_the_segments_a_let_go_writer_s_merges_made(tmp_path, monkeypatch):
    """A writer's last commits leave many small segments that its merges join once they
    are over; searches went on reading the many (a search process too: it reloads when
    `commits` moves) until the next commit, after a big ingest until the next save."""
    monkeypatch.setattr(lexical_index_module, "REST_AFTER", 1)
    conn, root = indexed(tmp_path)
    analyzers = AnalyzerSet()
    col = CollectionConfig(name="c", path=str(root))
    with lexical_index(conn, analyzers) as lex:
        apart = lexical_index_module.LexicalIndex.for_search(os.path.dirname(lex.path))
        for i in range(9):  # a commit, and a segment, each: tantivy merges 8 of a size
            (root / f"refund{i}.md").write_text(f"# Refund {i}\n\nRefunds are wired within {i + 2} days.\n")
            index_collection(conn, analyzers, col, lex=lex)
        apart.refresh()
        seen = lex.commits
        assert lex.rest()
        lex._await_release()  # its merges are over
        with open(os.path.join(lex.path, "meta.json")) as f:
            on_disk = len(json.load(f)["segments"])
        assert on_disk < 9
        assert lex.searcher().num_segments == on_disk
        assert lex.commits > seen  # so a search process reloads
        apart.refresh()
        assert apart.searcher().num_segments == on_disk
        assert sorted(lexical_paths_in(lex, conn, analyzers, "refunds")) == [f"refund{i}.md" for i in range(9)]
    conn.close()


def test_a_save_is_committed_by_a_writer_of_one_thread_and_a_big_run_by_one_of_more(tmp_path, monkeypatch):
    """A few documents' commit (a save) is quicker with one indexing thread: a sync of
    fewer than ONE_THREAD_DOCS opens such a writer; a bigger one lets it go for one of
    WRITER_THREADS, losing nothing either took."""
    monkeypatch.setattr(lexical_index_module, "ONE_THREAD_DOCS", 3)
    monkeypatch.setattr(lexical_index_module, "WRITER_THREADS", 2)
    monkeypatch.setattr(lexical_index_module, "REST_AFTER", 1)
    conn, root = indexed(tmp_path)
    analyzers = AnalyzerSet()
    col = CollectionConfig(name="c", path=str(root))
    with lexical_index(conn, analyzers) as lex:
        assert lex.rest()  # the writer that built it is let go, as after a big run
        (root / "billing.md").write_text("# Billing\n\nReceipts are mailed every quarter.\n")
        index_collection(conn, analyzers, col, lex=lex)
        assert lex._threads == 1
        for i in range(4):
            (root / f"refund{i}.md").write_text(f"# Refund {i}\n\nRefunds are wired within {i + 2} days.\n")
        index_collection(conn, analyzers, col, lex=lex)
        assert lex._threads == 2
        (root / "billing.md").write_text("# Billing\n\nInvoices are mailed every quarter.\n")
        index_collection(conn, analyzers, col, lex=lex)
        assert lex._threads == 2  # a save after it keeps that writer
        assert lexical_paths_in(lex, conn, analyzers, "invoices") == ["billing.md"]
        assert lexical_paths_in(lex, conn, analyzers, "receipts") == []
        assert sorted(lexical_paths_in(lex, conn, analyzers, "refunds")) == [f"refund{i}.md" for i in range(4)]
    conn.close()


def test_segment_files_no_commit_names_are_deleted(tmp_path):
    """Segment files no commit names (after the kernel's ingest and a few edits, a
    merge's output no commit adopted: 94 MB beside a 332 MB index) are deleted when the
    index is opened, as when its writer closes, not only at a later commit."""
    conn, root = indexed(tmp_path)
    analyzers = AnalyzerSet()

    def files(path: str) -> tuple[set[str], set[str]]:
        with open(os.path.join(path, "meta.json")) as f:
            live = {seg["segment_id"].replace("-", "") for seg in json.load(f)["segments"]}
        return live, {n.split(".")[0] for n in os.listdir(path) if re.fullmatch(r"[0-9a-f]{32}\.\w+", n)}

    def orphan(path: str, live: set[str]) -> None:
        """A dead segment, as a merge leaves it: a live one's files under a new id,
        which tantivy's list of the files it wrote names (no meta.json does)."""
        source = sorted(live)[0]
        made = []
        for name in os.listdir(path):
            if name.startswith(source):
                made.append("f" * 32 + name[32:])
                shutil.copy(os.path.join(path, name), os.path.join(path, made[-1]))
        with open(os.path.join(path, ".managed.json")) as f:
            managed = json.load(f)
        with open(os.path.join(path, ".managed.json"), "w") as f:
            json.dump(managed + made, f)

    with lexical_index(conn, analyzers) as index:
        path = index.path
    live, on_disk = files(path)
    assert live and on_disk == live
    orphan(path, live)
    assert "f" * 32 in files(path)[1]
    with lexical_index(conn, analyzers):  # opened (nothing to commit): the dead files go
        assert files(path)[1] == files(path)[0]
    assert lexical_paths(conn, analyzers, "invoices") == ["billing.md"]
    conn.close()


def test_an_index_that_disagrees_with_the_database_is_mended(tmp_path):
    conn, _ = indexed(tmp_path)
    ids = {r[0] for r in conn.execute("SELECT id FROM documents")}
    with lexical_index(conn, AnalyzerSet()) as lex:
        assert lexical_ids(lex) == ids
    # Documents lost behind SQLite's back (a restored backup of one without the other).
    folder = os.path.join(str(tmp_path), folder_name())
    writer = tantivy.Index.open(folder).writer(15_000_000, 1)
    writer.delete_all_documents()
    writer.commit()
    writer.wait_merging_threads()
    assert tantivy.Index.open(folder).searcher().num_docs == 0
    with lexical_index(conn, AnalyzerSet(), rebuilt=True) as lex:
        assert lexical_ids(lex) == ids
    # One lost, and one the database no longer holds (its row deleted behind the index's back).
    lost, gone = sorted(ids)[:2]
    writer = tantivy.Index.open(folder).writer(15_000_000, 1)
    writer.delete_documents_by_query(tantivy.Query.term_query(SCHEMA, "id", lost))
    writer.commit()
    writer.wait_merging_threads()
    with conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("DELETE FROM documents WHERE id = ?", (gone,))
    with lexical_index(conn, AnalyzerSet(), rebuilt=True) as lex:
        assert lexical_ids(lex) == ids - {gone}
    # A folder that cannot be read as an index is replaced.
    shutil.rmtree(folder)
    os.makedirs(folder)
    with open(os.path.join(folder, "meta.json"), "w") as f:
        f.write("not json")
    with lexical_index(conn, AnalyzerSet(), rebuilt=True) as lex:
        assert lexical_ids(lex) == ids - {gone}
    conn.close()


def test_an_index_being_built_serves_what_it_holds_so_far(tmp_path, monkeypatch):
    """A new index (another layout) is filled from the database newest first, committing
    as it goes; searches are let in after its first commit and find what is in so far."""
    conn, _ = indexed(tmp_path)
    conn.execute("DELETE FROM lexical_pending")  # all of them were in an older layout's index
    monkeypatch.setattr(lexical_index_module, "READ_BATCH", 1)
    monkeypatch.setattr(lexical_index_module, "COMMIT_SECONDS", 0.0)
    monkeypatch.setattr(lexical_index_module, "COMMIT_SHARE", 0.0)
    newest = [r[0] for r in conn.execute("SELECT id FROM documents ORDER BY mtime_ns DESC, id")]
    lex = lexical_index_module.LexicalIndex(str(tmp_path), deriver(AnalyzerSet()))
    lex.open()
    seen: list[tuple[set[int], tuple[int, int] | None]] = []
    served: list[set[int]] = []
    lex.reconcile(
        conn,
        progress=lambda done, total: seen.append((lexical_ids(lex), lex.progress)),
        serving=lambda: served.append(lexical_ids(lex)),
    )
    try:
        assert served == [set(newest[:1])]
        assert seen == [
            (set(newest[:n]), (n, len(newest)) if n < len(newest) else None) for n in range(1, len(newest) + 1)
        ]
        assert lex.progress is None
        # While it is being built, a search says so.
        lex.progress = (1, 3)
        found = lexical.search(lex, conn, AnalyzerSet(), "deploying", {"english": 3}, 10)
        assert any("still being built" in n and "1 of 3" in n for n in found.notes), found.notes
        lex.progress = None
        # Syntax of other engines is text here, and the search says so.
        found = lexical.search(lex, conn, AnalyzerSet(), "deploying OR staging", {"english": 3}, 10)
        assert found.notes == [
            "OR: a word here, not an operator (every word is optional and ranked; -word leaves one out)",
            "no document has 'staging': the results hold the rest of the query",
        ]
    finally:
        lex.close()
    conn.close()


PATHS = [
    "a.md",
    "b.txt",
    "docs/a.md",
    "docs/sub/c.md",
    "x[1].md",
    "ä/ü.md",
    "a-b.md",
    "a.b.md",
    "^a.md",
    "notes/2024/jan.md",
    "Z.MD",
    "a]b.md",
    "a\\b.md",
    "(x).md",
    ".md",
    "docs.md/x",
    "src/x.tar.gz",
    "src/mm/page_alloc_test.c",
    "a.",
    "docs/sub/.hidden",
    "mm/slab.c",
    "arch/x86/mm/fault.c",
    "drivers/net/usb/lan78xx.c",
    "drivers/usb/core/hub.h",
    "Documentation/usb/gadget.rst",
    "Documentation/index.rst",
    "tools/mm/.c",
    "x.c/y.md",
    "Kconfig",
    "mm/Kconfig",
    "arch/x86/Kconfig",
    "arch/x86/Kconfig.debug",
]


@pytest.mark.parametrize(
    "glob",
    [
        "*.md",
        "docs/*",
        "docs/*.md",
        "?.md",
        "[ab].*",
        "[^ab]*",
        "[a-c].md",
        "x[[]1].md",
        "*[]]*",
        "ä/*",
        "a.b.md",
        "a-b.md",
        "^*",
        "*\\*",
        "(x)*",
        "notes/202[0-4]/*",
        "*.MD",
        "[!a]*",
        "a.*.md",
        "*",
        "docs/sub/*",
        "*.gz",
        "*.tar.gz",
        "*_test.c",
        "*/mm/*",
        "src/*.c",
        "*.",
        "/*",
        "*/",
        "docs*",
        "*.md/x",
        "docs/sub/.*",
        "drivers/*/usb/*",
        "*/usb/*.c",
        "Documentation/*.rst",
        "d*/*.[ch]",
        "*/?m/*",
        "[a-m]*/*",
        "*.c/*",
        "x.c/*.md",
        "*/*/*.h",
        "*mm/*.c",
    ],
)
def test_path_globs_match_what_sqlite_glob_matches(glob, path_searcher):
    searcher, stored = path_searcher
    db = sqlite3.connect(":memory:")
    expected = {p for p in PATHS if db.execute("SELECT ? GLOB ?", (p, glob)).fetchone()[0]}
    # a regex (or the path's parts), the ids it matches, or the ids SQLite finds
    for query in (path_query(glob), path_query(glob, searcher), path_query(glob, searcher, stored)):
        hits = searcher.search(query, 100).hits
        assert {PATHS[i] for i in searcher.fast_field_values("id", [a for _, a in hits])} == expected, glob


def test_a_glob_s_ids_read_from_sqlite_are_kept_until_the_database_changes(tmp_path):
    """A glob no literal end narrows (`*test*`) is a pass over every path in SQLite:
    asked again with nothing written, the ids read last time are the answer; a document
    another connection adds, or one this connection renames, is in the next answer."""
    file = str(tmp_path / "paths.sqlite")
    conn, other = apsw.Connection(file), apsw.Connection(file)
    conn.execute("CREATE TABLE documents (id INTEGER PRIMARY KEY, rel_path TEXT)")
    conn.executemany("INSERT INTO documents VALUES (?, ?)", [(1, "a_test.c"), (2, "b.c"), (3, "c/test/d.h")])
    first = kept.path_glob_ids(conn, "*test*", 100)
    assert sorted(first) == [1, 3]
    assert kept.path_glob_ids(conn, "*test*", 100) is first
    assert kept.path_glob_ids(conn, "*test*", 1) == [1]  # another limit is another read
    other.execute("INSERT INTO documents VALUES (4, 'tests/e.c')")
    assert sorted(kept.path_glob_ids(conn, "*test*", 100)) == [1, 3, 4]
    conn.execute("UPDATE documents SET rel_path = 'b_test.c' WHERE id = 2")
    assert sorted(kept.path_glob_ids(conn, "*test*", 100)) == [1, 2, 3, 4]
    for i in range(PATH_GLOBS_KEPT):  # the oldest globs are let go
        kept.path_glob_ids(conn, f"*{i}*", 100)
    assert kept.path_glob_ids(conn, "*test*", 100) is not kept.path_glob_ids(conn, "*.c*", 100)
    assert len(kept._kept[conn]["globs"]) == PATH_GLOBS_KEPT


@pytest.mark.parametrize(
    "glob, expected",
    [
        ("**/Kconfig", ["Kconfig", "arch/x86/Kconfig", "mm/Kconfig"]),
        ("arch/**/Kconfig*", ["arch/x86/Kconfig", "arch/x86/Kconfig.debug"]),
        ("**/mm/**/*.c", ["arch/x86/mm/fault.c", "mm/slab.c", "src/mm/page_alloc_test.c", "tools/mm/.c"]),
        ("**/*.rst", ["Documentation/index.rst", "Documentation/usb/gadget.rst"]),
        # A path without wildcards is also a folder (as git reads it); with a `/` at its end, only one.
        ("mm", ["mm/Kconfig", "mm/slab.c"]),
        ("drivers/usb/", ["drivers/usb/core/hub.h"]),
        ("Kconfig", ["Kconfig"]),
        ("arch/x86/Kconfig", ["arch/x86/Kconfig"]),
    ],
)
def test_a_glob_of_any_folders_also_matches_none(glob, expected, path_searcher):
    """`**/` is any folders or none, as in gitignore and ripgrep, in the lexical index and in
    SQLite alike (`*` runs over `/` already: `**/Kconfig` without the top's Kconfig); and a
    folder's path is what it holds."""
    searcher, stored = path_searcher
    for query in (path_filter(glob), path_filter(glob, searcher), path_filter(glob, searcher, stored)):
        hits = searcher.search(query, 100).hits
        assert sorted(PATHS[i] for i in searcher.fast_field_values("id", [a for _, a in hits])) == expected, glob
    sql, args = where(Filter(path=(glob,)))
    rows = stored.execute(f"SELECT d.rel_path FROM documents d WHERE {sql} ORDER BY 1", args)
    assert [r[0] for r in rows] == expected


@pytest.mark.parametrize(
    "globs, expected",
    [
        (("mm", "**/Kconfig"), ["Kconfig", "arch/x86/Kconfig", "mm/Kconfig", "mm/slab.c"]),
        (("**/mm/**/*.c", "!src/**"), ["arch/x86/mm/fault.c", "mm/slab.c", "tools/mm/.c"]),
        (("arch/*", "!*.debug", "!**/mm/*"), ["arch/x86/Kconfig"]),
        (("!*.md", "!*.c", "!*.h", "!*.rst", "!**/Kconfig*", "!*/*"), ["Z.MD", "a.", "b.txt"]),
        (("mm", "Kconfig", "!mm/slab.c"), ["Kconfig", "mm/Kconfig"]),
        # A `{a,b}` group is any of its alternatives, as in ripgrep and the shells; groups nest.
        (("{mm,arch/x86}/Kconfig",), ["arch/x86/Kconfig", "mm/Kconfig"]),
        (
            ("**/*.{c,h}", "!{src,tools}/**"),
            ["arch/x86/mm/fault.c", "drivers/net/usb/lan78xx.c", "drivers/usb/core/hub.h", "mm/slab.c"],
        ),
        (("drivers/{net/{usb,x},usb/core}/*",), ["drivers/net/usb/lan78xx.c", "drivers/usb/core/hub.h"]),
        (("!{*.md,*.c,*.h,*.rst,**/Kconfig*,*/*}",), ["Z.MD", "a.", "b.txt"]),
    ],
)
def test_several_path_globs_admit_any_of_them_but_those_a_bang_leaves_out(globs, expected, path_searcher):
    """`--path` repeated: a path matching any of the globs, and none of those after `!`
    (as ripgrep's `-g '!tests/'`); globs of exclusions alone admit every other path. The
    engine's filter and SQLite's (vectors, definitions) agree."""
    searcher, stored = path_searcher
    hits = searcher.search(filter_query(stored, Filter(path=globs), searcher), 100).hits
    assert sorted(PATHS[i] for i in searcher.fast_field_values("id", [a for _, a in hits])) == expected, globs
    sql, args = where(Filter(path=globs))
    rows = stored.execute(f"SELECT d.rel_path FROM documents d WHERE {sql} ORDER BY 1", args)
    assert [r[0] for r in rows] == expected


@pytest.mark.parametrize(
    "types, globs, expected",
    [
        (
            ("c",),
            (),
            [
                "arch/x86/mm/fault.c",
                "drivers/net/usb/lan78xx.c",
                "drivers/usb/core/hub.h",
                "mm/slab.c",
                "src/mm/page_alloc_test.c",
                "tools/mm/.c",
            ],
        ),
        (
            ("kconfig", "rst"),
            (),
            [
                "Documentation/index.rst",
                "Documentation/usb/gadget.rst",
                "Kconfig",
                "arch/x86/Kconfig",
                "arch/x86/Kconfig.debug",
                "mm/Kconfig",
            ],
        ),
        (("c",), ("mm",), ["mm/slab.c"]),
        (("kconfig",), ("!arch/**",), ["Kconfig", "mm/Kconfig"]),
    ],
)
def test_file_types_admit_their_files_and_paths_still_apply(types, globs, expected, path_searcher):
    """`-t c` is a file of one of the types' globs (config.FILE_TYPES) and of `--path`'s
    too; the engine's filter and SQLite's (vectors, definitions) agree."""
    searcher, stored = path_searcher
    f = resolve(Filter(types=types, path=globs))
    hits = searcher.search(filter_query(stored, f, searcher), 100).hits
    assert sorted(PATHS[i] for i in searcher.fast_field_values("id", [a for _, a in hits])) == expected, types
    sql, args = where(f)
    rows = stored.execute(f"SELECT d.rel_path FROM documents d WHERE {sql} ORDER BY 1", args)
    assert [r[0] for r in rows] == expected
    with pytest.raises(FilterError, match="no file type named 'cobol'"):
        resolve(Filter(types=("cobol",)))
    # An extension, with its dot or not, in any case, is the type that holds it; with its
    # dot, one no type holds is its own files'.
    assert resolve(Filter(types=(".PDF", "png", "yml", "Md", "md"))).types == ("pdf", "image", "yaml", "md")
    assert type_globs(resolve(Filter(types=(".Litmus",)))) == ["*.litmus", "*.LITMUS"]
    for refused in ("litmus", ".lit mus", "."):
        with pytest.raises(FilterError, match="no file type named"):
            resolve(Filter(types=(refused,)))
    # An ops folder's kinds, as ripgrep names them (`-t ini` was refused).
    assert resolve(Filter(types=("ini", "conf", ".service", "log", "cfg"))).types == ("ini", "config", "systemd", "log")
    # A language's own name is its files' type (`-t python` was refused, `py` too far to suggest).
    assert resolve(Filter(types=("python", "JavaScript", "C++", "bash", "markdown", "BibTeX"))).types == (
        "py",
        "js",
        "cpp",
        "sh",
        "md",
        "tex",  # a tryout's `-t bibtex` was pointed to tex, the type holding *.bib
    )
    # A program's or a format's name (an office tryout's `-t mbox`, `-t excel`, `-t word`).
    assert resolve(Filter(types=("mbox", "Excel", "word", "PowerPoint"))).types == ("mail", "xlsx", "docx", "pptx")
    # A data scientist's: `-t notebook` was refused, and `-t tsv` took the .csv files too.
    assert resolve(Filter(types=("notebook", "tsv"))).types == ("ipynb", "tsv")
    from gnod.search import filters

    assert len(resolve(Filter(types=tuple(filters._TYPE_OF_NAME))).types) > 10  # each a type


def test_an_ops_folders_types_take_its_drop_ins_rotated_logs_and_cnf_files():
    """`-t systemd` left out a unit's drop-in, `-t log` the rotated logs, `-t ini` my.cnf."""
    from gnod.config import CONFIG_EXTENSIONS, DEFAULT_EXTENSIONS, FILE_TYPES, extension
    from gnod.search.filters import glob_regex, path_globs

    def typed(path: str) -> set[str]:
        return {
            t
            for t, globs in FILE_TYPES.items()
            if any(re.fullmatch(glob_regex(g), path) for glob in globs for g in path_globs(glob))
        }

    assert "systemd" in typed("etc/systemd/system/myapp.service.d/override.conf")
    assert "systemd" not in typed("etc/sysctl.d/99-tuning.conf")
    assert all("log" in typed(p) for p in ("logs/app.log.1", "logs/app.log.2.gz", "var/log/syslog", "syslog.1"))
    assert "log" not in typed("blog/post.md") and "ini" in typed("etc/mysql/my.cnf")
    assert extension("my.cnf") in DEFAULT_EXTENSIONS and extension("openssl.cnf") in CONFIG_EXTENSIONS


def test_systemd_units_are_indexed_as_config():
    """An ops folder's `app.service` and `backup.timer` were left out as files of other kinds."""
    from gnod.config import CONFIG_EXTENSIONS, DEFAULT_EXTENSIONS, extension

    for name in ("app.service", "backup.timer", "data.mount", "gnod.socket"):
        assert extension(name) in DEFAULT_EXTENSIONS and extension(name) in CONFIG_EXTENSIONS, name


def test_a_glob_s_groups_of_alternatives_are_read_as_the_shells_read_them():
    """`{a,b}` is a or b (`*.{c,h}`, `drivers/usb/{serial,core}/**`): it matched nothing,
    and the user heard only that no document passed. A group left open is an error, as is
    one standing for too many globs."""
    assert braces("*.{c,h}") == ["*.c", "*.h"]
    assert braces("{a,{b,c}d}/x") == ["a/x", "bd/x", "cd/x"]
    assert braces("{,docs/}a.md") == ["a.md", "docs/a.md"]
    assert braces("{a}") == ["a"] and braces("a,b") == ["a,b"]
    with pytest.raises(FilterError, match="does not close"):
        resolve(Filter(path=("drivers/{usb,net/*",)))
    with pytest.raises(FilterError, match="more than 64 globs"):
        resolve(Filter(path=("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}",)))
    assert resolve(Filter(path=("!{a,b}/**",))).path == ("!{a,b}/**",)


@pytest.fixture(scope="module")
def path_searcher() -> tuple[tantivy.Searcher, apsw.Connection]:
    """PATHS in a lexical index (their path fields only) and as SQLite holds them (for
    globs that no literal end narrows)."""
    index = tantivy.Index(SCHEMA)
    writer = index.writer(15_000_000, 1)
    for i, path in enumerate(PATHS):
        doc = tantivy.Document()
        doc.add_unsigned("id", i)
        add_path(doc, path)
        writer.add_document(doc)
    writer.commit()
    index.reload()
    stored = apsw.Connection(":memory:")
    stored.execute("CREATE TABLE documents (id INTEGER PRIMARY KEY, rel_path TEXT)")
    stored.executemany("INSERT INTO documents VALUES (?, ?)", list(enumerate(PATHS)))
    return index.searcher(), stored


# Globs of folders and extensions: pieces that may or may not make a folder's glob, an
# extension's or both (the path's parts), or any other.
_GLOB_PIECES = ["*", "?", "/", "mm", "usb", "d", ".", "c", "md", "rst", "[a-m]", "x"]


@given(st.lists(st.sampled_from(_GLOB_PIECES), min_size=1, max_size=7))
def test_folder_and_extension_globs_match_what_sqlite_glob_matches(path_searcher, pieces):
    searcher, _ = path_searcher
    glob = "".join(pieces)
    db = sqlite3.connect(":memory:")
    expected = {p for p in PATHS if db.execute("SELECT ? GLOB ?", (p, glob)).fetchone()[0]}
    hits = searcher.search(path_query(glob, searcher), 100).hits
    assert {PATHS[i] for i in searcher.fast_field_values("id", [a for _, a in hits])} == expected, glob


@given(st.text(alphabet=st.sampled_from("aeiouAZ09 -_\u0301\u0308éüñÅḱ한국어東京\u1100\u1161\u11a8İıß\u0b47\u0b3e")))
def test_fold_looks_only_at_non_ascii_runs_and_agrees_with_whole_text_folding(text):
    from gnod.text.analyzer import _UNMARKED

    whole = "".join(ch for ch in unicodedata.normalize("NFD", text) if not unicodedata.combining(ch))
    assert fold(text) == unicodedata.normalize("NFC", whole).translate(_UNMARKED)


def test_a_prefix_finds_the_words_of_the_index_that_start_with_it(tmp_path):
    root = tmp_path / "docs"
    write(root, {**DOCS, "café.md": "# Café\n\nThe café opens at eight.\n"})
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    assert sorted(lexical_paths(conn, AnalyzerSet(), "depl*")) == ["deployed.md", "deploying.md"]
    assert lexical_paths(conn, AnalyzerSet(), "invo*") == ["billing.md"]
    assert lexical_paths(conn, AnalyzerSet(), "Caf*") == lexical_paths(conn, AnalyzerSet(), "café") == ["café.md"]
    assert lexical_paths(conn, AnalyzerSet(), "zzq*") == []
    # Beside whole words, ranked by bm25 as if the word were typed; negated, it excludes.
    assert lexical_paths(conn, AnalyzerSet(), "yesterday depl*")[0] == "deployed.md"
    assert lexical_paths(conn, AnalyzerSet(), "service -yest*") == ["deploying.md"]
    # What a snippet counts once: the prefix's words and stems, but those a word typed beside
    # it gives; and a word typed with its stems.
    with lexical_index(conn, AnalyzerSet()) as index:
        counts = language_counts(conn)
        assert lexical.search(index, conn, AnalyzerSet(), "depl*", counts, 10).groups == (
            frozenset({"deploying", "deployed", "deploy"}),
        )
        assert lexical.search(index, conn, AnalyzerSet(), "deploying depl*", counts, 10).groups == (
            frozenset({"deployed"}),
            frozenset({"deploying", "deploy"}),
        )
        assert lexical.search(index, conn, AnalyzerSet(), "deploying -depl*", counts, 10).groups == (
            frozenset({"deploying", "deploy"}),
        )
    conn.close()


def test_an_identifier_being_typed_finds_what_its_last_token_may_become(tmp_path):
    """`mmc_add_ho*`, what an editor's picker sends while `mmc_add_host` is typed, found
    nothing: only a one-token word could be a prefix. Its last token stands for the words
    starting so that follow in the documents holding the tokens before it, not the
    index's most frequent ones."""
    root = tmp_path / "src"
    hold = "Hold the lock; hold it while the holder holds the hook. " * 3
    write(
        root,
        {
            "host.c": "int probe(void)\n{\n\treturn mmc_add_host(mmc);\n}\n",
            "card.c": "int attach(void)\n{\n\treturn mmc_add_card(card);\n}\n",
            **{f"notes{i}.md": f"# Notes {i}\n\n{hold}\n" for i in range(4)},
        },
    )
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    analyzers = AnalyzerSet()
    index_collection(conn, analyzers, CollectionConfig(name="c", path=str(root)))
    one = msgspec.structs.replace(PIPELINE.lexical, prefix_expansions=1)  # hold, by the whole index
    with lexical_index(conn, analyzers) as index:
        counts = language_counts(conn)

        def paths(query: str) -> list[str]:
            rows = lexical.search(index, conn, analyzers, query, counts, 10, lexical=one).rows
            docs = docs_by_ids(conn, [r.doc_id for r in rows])
            return [docs[r.doc_id].rel_path for r in rows]

        assert paths("mmc_add_ho*") == ["host.c"]
        assert paths("mmc_add_ca*") == ["card.c"]
        assert sorted(paths("mmc_add_h*")) == sorted(paths("mmc_add_*")) == ["card.c", "host.c"]
        # A snippet counts the whole tokens each, and the words of the one being typed once.
        res = lexical.search(index, conn, analyzers, "mmc_add_ho*", counts, 10)
        assert res.groups == (frozenset({"host"}),) and {"mmc", "add"} <= res.stems
    conn.close()


def test_a_quoted_phrase_ending_in_a_prefix_finds_the_phrase_being_typed(tmp_path):
    """`"remaining budg*"` found nothing: a `*` in quotes was text, so the phrase's last
    word had to be whole, while a web page's box sends a phrase being typed so. Its last
    word stands for the words that start so after the words before it, adjacent, in
    order; `"remaining budg"*` is the same; a last word too short to be a prefix is
    left out, the words before it searched (a note says so: grammar.text_not_syntax)."""
    root = tmp_path / "docs"
    write(
        root,
        {
            "report.md": "# Report\n\nSpending is on track; the remaining budget covers the service contract.\n",
            "apart.md": "# Apart\n\nThe budget was cut and the remaining funds went to travel.\n",
            "order.md": "# Order\n\nA budgeted amount remaining from last year.\n",
            "rotor.md": "# Rotor\n\nA rotor imbalance stops the centrifuge.\n",
        },
    )
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    analyzers = AnalyzerSet()
    index_collection(conn, analyzers, CollectionConfig(name="c", path=str(root)))
    for query in ('"remaining budg*"', '"remaining budg"*', '"Remaining Budge*"'):
        assert lexical_paths(conn, analyzers, query) == ["report.md"], query
    assert lexical_paths(conn, analyzers, '"rotor imb*"') == ["rotor.md"]
    # A new word's first letter (what a page's box sends as it is typed): the words before it.
    assert lexical_paths(conn, analyzers, '"rotor i*"') == ["rotor.md"]
    assert lexical_paths(conn, analyzers, '"imbalance rot*"') == []  # in order
    assert sorted(lexical_paths(conn, analyzers, 'budg* -"remaining budg*"')) == ["apart.md", "order.md"]
    conn.close()


def test_quoted_words_are_matched_as_typed_in_the_documents_and_their_passages(tmp_path):
    """`"WebSocketDisconnect"`, `"add_tasks"`: quotes read as search engines read them,
    the words as typed (folded), not their stems' other words (WebSocketDisconnected, a
    lone add_task), in the documents found and in the lines shown and marked; unquoted,
    the stems find both."""
    from gnod.protocol import SearchParams
    from gnod.server.searching import answer
    from gnod.store.documents import language_counts

    root = tmp_path / "src"
    write(
        root,
        {
            "ws.py": "class WebSocketDisconnected(RuntimeError):\n    pass\n\n\n"
            "class WebSocketDisconnect(Exception):\n    pass\n",
            "other.py": "raise WebSocketDisconnected()\n",
            "runs.md": "# Runs\n\nThe runner runs.\n",
            "running.md": "# Running\n\nKeep running.\n",
            # add_task, and `tasks` elsewhere: its words as typed and their stems together.
            "bg.py": "def add_task(self, func):\n    self.tasks.append(func)\n",
            "bgs.py": "def add_tasks(self, funcs):\n    self.tasks += funcs\n",
            "memo.md": "# Memo\n\nA memory\nbarrier, across a line.\n",
        },
    )
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    analyzers = AnalyzerSet()
    index_collection(conn, analyzers, CollectionConfig(name="c", path=str(root)))
    assert lexical_paths(conn, analyzers, '"WebSocketDisconnect"') == ["ws.py"]
    assert sorted(lexical_paths(conn, analyzers, "WebSocketDisconnect")) == ["other.py", "ws.py"]
    assert lexical_paths(conn, analyzers, '"running"') == ["running.md"]
    assert sorted(lexical_paths(conn, analyzers, "running")) == ["running.md", "runs.md"]
    # A quoted run of words is read for where the index cannot tell (it keeps no places
    # of the exact words); any run of spaces between them.
    assert lexical_paths(conn, analyzers, '"add_tasks"') == ["bgs.py"]
    assert lexical_paths(conn, analyzers, '"add_tasks"', limit=1) == ["bgs.py"]  # read on past the first
    assert sorted(lexical_paths(conn, analyzers, "add_tasks")) == ["bg.py", "bgs.py"]
    assert lexical_paths(conn, analyzers, '"memory barrier"') == ["memo.md"]
    with lexical_index(conn, analyzers) as index:
        params = SearchParams(query='"WebSocketDisconnect"', per_doc=2)
        (hit,) = answer(index, conn, analyzers, params, language_counts(conn), Filter()).hits
        assert [(s.line, s.text) for s in hit.snippets or [hit.snippet]][0] == (
            5,
            "class WebSocketDisconnect(Exception):\n    pass",
        )
        assert all("Disconnected" not in s.text[a:b] for s in [hit.snippet, *hit.snippets] for a, b in s.matches)
    conn.close()


def test_a_quoted_run_typed_with_its_marks_puts_the_files_holding_it_so_first(tmp_path):
    """`"self._sock"` matched `self.sock` as well (the index keeps words, not the marks
    between them), and files using `self.sock` more often came first: the files holding
    the run as typed, marks and all, come before those holding its words otherwise, at
    any limit; typed with spaces alone, the run keeps bm25's order."""
    files = {f"plain{i}.py": "def close(self):\n" + "    self.sock.close()\n" * (6 - i) for i in range(4)}
    files["conn.py"] = "class Conn:\n    def __init__(self):\n" + "        pass\n" * 30 + "        self._sock = None\n"
    files["pool.py"] = "class Pool:\n" + "    size = 1\n" * 30 + "    def drop(self):\n        self._sock = None\n"
    files["notes.md"] = "# Notes\n\nThe socket is in self. sock, as said.\n"
    write(tmp_path / "src", files)
    conn = migrated_db(str(tmp_path / "index.sqlite"))
    analyzers = AnalyzerSet()
    index_collection(conn, analyzers, CollectionConfig(name="c", path=str(tmp_path / "src")))
    found = lexical_paths(conn, analyzers, '"self._sock"')
    assert sorted(found[:2]) == ["conn.py", "pool.py"] and len(found) == 7
    assert sorted(lexical_paths(conn, analyzers, '"self._sock"', limit=2)) == ["conn.py", "pool.py"]
    assert sorted(lexical_paths(conn, analyzers, '"self._sock = None"')) == ["conn.py", "pool.py"]
    plain = lexical_paths(conn, analyzers, '"self sock"')
    assert plain[:4] == [f"plain{i}.py" for i in range(4)]  # no marks typed: bm25's order
    # The scores follow the order: those put first score as the best (the first hit of a
    # kernel search scored 0.60, the second 1.0, and `--min-score 0.7` left it out).
    with lexical_index(conn, analyzers) as index:
        rows = lexical.search(index, conn, analyzers, '"self._sock"', language_counts(conn), 10).rows
        assert [r.score for r in rows[:2]] == [1.0, 1.0]
        assert all(a.score >= b.score for a, b in zip(rows, rows[1:])), [r.score for r in rows]
        kept = lexical.search(index, conn, analyzers, '"self._sock"', language_counts(conn), 10, min_score=0.99).rows
        assert {r.doc_id for r in kept} >= {r.doc_id for r in rows[:2]}
    conn.close()


def test_a_prefix_scores_its_words_with_the_most_frequent_one_s_idf(tmp_path):
    """`kmalloc*` (what an editor's picker sends for a word typed whole) put comments
    saying "kmalloced" above kmalloc's uses: each word a prefix stands for was scored
    with its own idf, and the rarest won. Blended as Lucene blends a prefix's terms, the
    word typed whole comes first where it is used as much."""
    root = tmp_path / "pets"
    write(
        root,
        {
            **{f"cat{i}.md": f"# Note {i}\n\nThe cat sat. The cat slept by door {i}.\n" for i in range(6)},
            "catalog.md": "# Shop\n\nThe catalog lists lamps by door 9.\n",
        },
    )
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    analyzers = AnalyzerSet()
    index_collection(conn, analyzers, CollectionConfig(name="c", path=str(root)))
    found = lexical_paths(conn, analyzers, "cat*")
    assert found[0].startswith("cat") and found[0] != "catalog.md" and "catalog.md" in found, found
    assert lexical_paths(conn, analyzers, "catal*") == ["catalog.md"]
    conn.close()


@pytest.mark.parametrize("terms_max", [0, 10**6], ids=["term-set", "terms"])
def test_documents_are_found_by_any_of_their_ids_either_way(terms_max, monkeypatch):
    monkeypatch.setattr(lexical_index_module, "ID_TERMS_MAX", terms_max)
    index = tantivy.Index(SCHEMA)
    writer = index.writer(15_000_000, 1)
    for i in range(50):
        doc = tantivy.Document()
        doc.add_unsigned("id", i)
        doc.add_unsigned("collection", i % 3)
        writer.add_document(doc)
    writer.commit()
    index.reload()
    searcher = index.searcher()

    def found(query) -> set[int]:
        return set(searcher.fast_field_values("id", [a for _, a in searcher.search(query, 100).hits]))

    rng = random.Random(3)
    for ids in ([], [7], [0, 49], rng.sample(range(50), 20), [3, 3, 99]):
        assert found(lexical_index_module.any_of("id", ids)) == set(ids) & set(range(50))
    assert found(lexical_index_module.any_of("collection", [2])) == set(range(2, 50, 3))


def test_a_phrase_looked_for_among_the_best_matches_first_ranks_what_every_match_ranks(tmp_path):
    """The phrase preference, whether its holders are first looked for among the best
    matches (common words) or over every match at once, and however few matches are read
    first (a part's bound on a match not read: Preferences._parts_lift), ranks as reading
    every match does."""
    rng = random.Random(7)
    words = ["static", "const", "struct", "page", "the", "of", "return", "if", "else", "lock"]
    docs = {f"d{i}.md": " ".join(rng.choice(words) for _ in range(rng.randint(3, 40))) + "\n" for i in range(160)}
    # And pages holding a phrase many times: its holders are then the best matches.
    for i in range(40):
        phrase = rng.choice(["static const struct", "if else return", "page lock"])
        docs[f"p{i}.md"] = f"{phrase} the of " * rng.randint(1, 6) + " ".join(rng.sample(words, 4)) + "\n"
    root = tmp_path / "docs"
    write(root, docs)
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    analyzers = AnalyzerSet()
    index_collection(conn, analyzers, CollectionConfig(name="c", path=str(root)))
    counts = language_counts(conn)
    queries = [
        "static const struct",
        "if else return",
        "page lock",
        "the of",
        "lock, static const struct",  # parts: the longest one each holds in a row counts
        "the page lock: if else return, of",
        # A part of common words many pages hold, beside a long one few do: the long part's
        # holders are read whole, and the bound on a page not read is the short part's.
        "the of, page lock if else return",
        "struct page lock if else: the of",
        *(" ".join(rng.sample(words, 3)) for _ in range(12)),
    ]
    with lexical_index(conn, analyzers) as index:
        for query in queries:
            for limit in (1, 5, 20):
                ranked = []
                for among_from, first in ((10**9, 10**6), (0, 3), (10**9, 3), (0, 40)):
                    lex = msgspec.structs.replace(PIPELINE.lexical, phrase_among_from=among_from, preference_pool=first)
                    rows = lexical.search(index, conn, analyzers, query, counts, limit, lexical=lex).rows
                    ranked.append([(r.doc_id, r.bm25) for r in rows])
                assert ranked[1:] == ranked[:1] * 3, (query, limit)
    conn.close()


def test_a_pasted_message_puts_the_file_printing_a_part_of_it_first(tmp_path):
    """A message as a console shows it joins what several lines print (`Kernel panic -
    not syncing: ` is panic()'s, the rest the caller's): no file holds it in a row, and
    bm25 put a comment holding its words apart first; the file printing its longest part
    comes first now. A part is split off by punctuation after a word; one of one word
    (`VFS`) is no phrase."""
    root = str(tmp_path / "src")
    filler = "".join(f"\tret = setup_{i}(dev, flags);\n" for i in range(8))
    files = {f"fs/f{i}.c": f"/* the kernel may panic {i}, not syncing */\nint f{i}(void);\n" for i in range(20)}
    files["init/do_mounts.c"] = (
        "void __init mount_root(void)\n{\n"
        + filler
        + '\tif (err)\n\t\tpanic("VFS: Unable to mount root fs on %s", b);\n}\n'
    )
    files["fs/super.c"] = (
        "/* The VFS: at mount time the root fs, unable to sync, is left to the kernel. */\nint sync_fs(void);\n"
    )
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    analyzers = AnalyzerSet()
    index_collection(conn, analyzers, CollectionConfig(name="c", path=write_tree(root, files)))
    pasted = "Kernel panic - not syncing: VFS: Unable to mount root fs"
    assert lexical_paths(conn, analyzers, pasted)[:2] == ["init/do_mounts.c", "fs/super.c"]
    # The same words without the punctuation: one part, which no file holds; bm25's order.
    assert lexical_paths(conn, analyzers, pasted.replace(":", "").replace(" -", ""))[:2] == [
        "fs/super.c",
        "init/do_mounts.c",
    ]
    conn.close()


def test_the_values_a_program_printed_at_a_messages_ends_are_no_words_of_its_source(tmp_path):
    """A pasted message ends with what its program printed from variables (`address:
    0000000000000008`), where the source holds the format (`%px`): the message without
    them is the phrase its printing file holds, and each part loses its own (`CPU: 0
    PID: 1` has parts `cpu` and `pid`). A file holding the message so comes first however
    long it is (x86's fault.c came 7th in the kernel, after shorter files' `kernel NULL
    pointer dereference`); a word as typed holding a value (`swapper/0/1/0x00000002`, a
    task's name, pid, cpu and count, `unknown-block(0,0)`) is one too, at an end."""
    root = str(tmp_path / "src")
    filler = "".join(f"\tret = setup_{i}(dev, flags);\n" for i in range(6))
    long = "".join(f"\tret = setup_{i}(dev, flags);\n" for i in range(300))
    files = {
        f"mm/f{i}.c": f"/* kernel page {i}: no pointer here */\nint f{i}(void) {{ BUG_ON(!x); }}\n" for i in range(20)
    }
    files["arch/x86/mm/fault.c"] = (
        "static void show_fault_oops(unsigned long address)\n{\n"
        + long
        + '\tpr_alert("BUG: kernel NULL pointer dereference, address: %px\\n", (void *)address);\n}\n'
    )
    files["kernel/sched/core.c"] = (
        "static void __schedule_bug(struct task_struct *prev)\n{\n"
        + long
        + '\tprintk(KERN_ERR "BUG: scheduling while atomic: %s/%d/0x%08x\\n", prev->comm, prev->pid, count);\n}\n'
    )
    files["net/ipvs/rr.c"] = "/* Round-robin scheduling: a BUG if the weight is not atomic */\nint rr(void);\n"
    files["init/do_mounts.c"] = filler + '\tpanic("VFS: Unable to mount root fs on %s", b);\n'
    files["fs/super.c"] = "/* Unable to mount the root fs: the VFS on an unknown block device */\nint s(void);\n"
    files["arch/m68k/mm/fault.c"] = (
        "int send_fault_sig(unsigned long address)\n{\n\tBUG_ON(!address);\n"
        + filler[: len(filler) // 2]
        + '\tpr_alert("Unable to handle kernel NULL pointer dereference at address %p", address);\n}\n'
    )
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    analyzers = AnalyzerSet()
    index_collection(conn, analyzers, CollectionConfig(name="c", path=write_tree(root, files)))
    for pasted in (
        "BUG: kernel NULL pointer dereference, address: 0000000000000008",
        "BUG: kernel NULL pointer dereference, address: 0x8",
        "[ 12.345678] BUG: kernel NULL pointer dereference, address: 0000000000000008",
    ):
        assert lexical_paths(conn, analyzers, pasted)[:2] == ["arch/x86/mm/fault.c", "arch/m68k/mm/fault.c"], pasted
    assert lexical_paths(conn, analyzers, "BUG: scheduling while atomic: swapper/0/1/0x00000002")[0] == (
        "kernel/sched/core.c"
    )
    pasted = "Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)"
    assert lexical_paths(conn, analyzers, pasted)[0] == "init/do_mounts.c"
    # Typed as words (no punctuation: one part), a number is one of them.
    assert lexical_paths(conn, analyzers, "kernel NULL pointer dereference address 8")[0] == "arch/m68k/mm/fault.c"
    conn.close()


def test_a_query_of_a_name_files_are_known_by_puts_that_file_first(tmp_path):
    """`MAINTAINERS`, typed as the file is named (config.NAMED_FILES), is that file: a big
    one, which bm25 put after every short file saying "maintainers"; so is the word, the
    file's name (Preferences: a name is worth its words)."""
    root = str(tmp_path / "src")
    entry = "".join(
        f"SUBSYSTEM {i}\nM:\tPerson {i} <p{i}@example.org>\nS:\tMaintained\nF:\tdrivers/d{i}/\n\n" for i in range(300)
    )
    files = {f"scripts/m{i}.pl": f"# parse the maintainers file, maintainers first ({i})\n" for i in range(5)}
    files["MAINTAINERS"] = "List of maintainers and how to submit kernel changes\n\n" + entry
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    analyzers = AnalyzerSet()
    index_collection(conn, analyzers, CollectionConfig(name="c", path=write_tree(root, files)))
    assert lexical_paths(conn, analyzers, "MAINTAINERS")[0] == "MAINTAINERS"
    assert lexical_paths(conn, analyzers, "MAINTAINERS Person 7")[0] == "MAINTAINERS"
    assert lexical_paths(conn, analyzers, "maintainers")[0] == "MAINTAINERS"
    # A name more files have than preference_pool: asked for alone, the one at the top.
    write_tree(root, {"Makefile": "all: vmlinux\n" + "# the top of the build\n" * 40})
    write_tree(root, {f"drivers/d{i}/Makefile": f"obj-y += d{i}.o\n" for i in range(4)})
    index_collection(conn, analyzers, CollectionConfig(name="c", path=root))
    few = msgspec.structs.replace(PIPELINE.lexical, preference_pool=3)
    with lexical_index(conn, analyzers) as index:

        def first(query: str) -> str:
            row = lexical.search(index, conn, analyzers, query, language_counts(conn), 5, lexical=few).rows[0]
            return docs_by_ids(conn, [row.doc_id])[row.doc_id].rel_path

        assert first("Makefile") == "Makefile"
        assert first("Makefile d2") == "drivers/d2/Makefile"  # a longer query: bm25's order
    conn.close()


def test_a_rebuild_derives_in_the_ingest_pool_what_one_thread_would(tmp_path):
    """More than a batch of documents is derived across the pool's processes and the
    calling thread, from the markdown as stored: the same lexical text, in any order."""
    root = tmp_path / "docs"
    many = {f"note{i:03d}.md": f"# Note {i}\n\nDeploying service {i} took {i % 7} minutes.\n" for i in range(130)}
    many["de.md"] = "# Anleitung\n\nDie Dienste werden nachts bereitgestellt und morgens geprüft.\n" * 20
    write(root, many)
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    ids = [r[0] for r in conn.execute("SELECT id FROM documents ORDER BY id DESC")]
    pool = PreparePool(1)
    try:
        spread = deriver(AnalyzerSet(), pool.spread)(conn, ids)
        assert pool.alive()  # the worker process took part
    finally:
        pool.close()
    assert spread == deriver(AnalyzerSet())(conn, ids) and len(spread) == len(many)
    conn.close()


def test_the_index_is_not_ready_until_reconcile_knows_it_is_whole(tmp_path):
    """status reads `progress`: while reconcile redoes what is pending and compares ids,
    the index must not say it is ready (a client waiting for that would stop waiting)."""
    conn, _ = indexed(tmp_path)  # its lexical text is still pending
    derive = deriver(AnalyzerSet())
    during: list[tuple[int, int] | None] = []

    def watched(c, ids):
        during.append(lex.progress)
        return derive(c, ids)

    lex = lexical_index_module.LexicalIndex(str(tmp_path), watched)
    lex.open()
    lex.reconcile(conn)
    assert during and None not in during
    assert lex.progress is None
    conn.close()


def test_a_rebuild_stops_between_batches_when_gnod_stops_and_the_next_start_adds_the_rest(tmp_path, monkeypatch):
    conn, _ = indexed(tmp_path)
    conn.execute("DELETE FROM lexical_pending")  # all of them were in an older layout's index
    monkeypatch.setattr(lexical_index_module, "READ_BATCH", 1)
    stop = threading.Event()
    stop.set()
    lex = lexical_index_module.LexicalIndex(str(tmp_path), deriver(AnalyzerSet()))
    lex.open()
    assert "stopped at 1 of 3" in lex.reconcile(conn, stop=stop)
    assert len(lexical_ids(lex)) == 1 and lex.progress == (1, 3)
    lex.close()
    lex = lexical_index_module.LexicalIndex(str(tmp_path), deriver(AnalyzerSet()))
    lex.open()
    assert "2 documents added" in lex.reconcile(conn)
    assert len(lexical_ids(lex)) == 3 and lex.progress is None
    lex.close()
    conn.close()


def test_a_snippet_prefers_the_query_s_identifiers_compounds_and_quoted_runs_as_typed():
    clauses = parse('usb_register_driver "Memory  Barriers" real-time plain words -not_this')
    got = lexical._phrases(clauses, AnalyzerSet(), ["english"], lambda t: is_stopword(t, ["english"]))
    assert all(p.runs for p in got)
    assert tuple(p[:3] for p in got) == (
        ((frozenset({"usb"}), frozenset({"register", "regist"}), frozenset({"driver"})), "usb_register_driver", False),
        ((frozenset({"memory", "memori"}), frozenset({"barriers", "barrier"})), "Memory Barriers", False),
        ((frozenset({"real"}), frozenset({"time"})), "real-time", False),
    )
    # An identifier being typed: its last word is the words its prefix stands for, and
    # its text as typed is the start of what a line holds (open); so is that of one
    # whose last token is too short to be a prefix, and of a quoted phrase ending in a
    # prefix, in the quotes or after them; a word too short to be one is left out.
    typing = expand_prefixes(
        parse('+mmc_add* mmc_add_h* "usb drv*" "pci dev"* "usb d*"'), lambda clause: ["add", "address"]
    )
    got = lexical._phrases(typing, AnalyzerSet(), ["english"], lambda t: is_stopword(t, ["english"]))
    assert tuple(p[:3] for p in got) == (
        ((frozenset({"mmc"}), frozenset({"add", "address"})), "mmc_add", True),
        ((frozenset({"mmc"}), frozenset({"add"})), "mmc_add_h", True),
        ((frozenset({"usb"}), frozenset({"add", "address"})), "usb drv", True),
        ((frozenset({"pci"}), frozenset({"add", "address"})), "pci dev", True),
    )  # `"usb d*"`: usb alone, a word, no phrase
    # Plain words typed apart are the query's phrase as typed, which ranks no run: a line
    # holding `certbot renew` is shown before one holding "Certbot renews" (_typed).
    typed = lexical._typed(parse("Certbot renew"), AnalyzerSet(), ["english"], PIPELINE.lexical)
    assert typed == (((frozenset({"certbot"}), frozenset({"renew"})), "Certbot renew", False, False),)
    for other in ("certbot", "certbot -renew", "certbot ren*", "error: disk 0x1f"):
        assert lexical._typed(parse(other), AnalyzerSet(), ["english"], PIPELINE.lexical) == (), other


def test_a_removed_collection_as_big_as_what_is_left_gives_its_space_back(db, tmp_path):
    """tantivy merges a segment with deleted documents only beside others of its size:
    removing a big collection that shared segments with a small one left the index at
    3.4 times its size built afresh. What is left is added again, and the segments of
    the removed documents go; a search finds what is left throughout."""
    analyzers = AnalyzerSet()
    small = write_tree(str(tmp_path / "small"), {f"s{i}.md": f"# S {i}\n\nsmall note {i} kept\n" for i in range(30)})
    words = " ".join(f"word{j} filler" for j in range(300))
    big = write_tree(str(tmp_path / "big"), {f"b{i}.md": f"# B {i}\n\n{words} big{i}\n" for i in range(400)})
    for name, root in (("small", small), ("big", big)):
        index_collection(db, analyzers, CollectionConfig(name=name, path=root))
    with lexical_index(db, analyzers) as index:  # both in one commit: the same segments
        whole = index.info()[1]
        removed = delete_collection(db, "big")
        index.sync(db)
        assert index.info()[1] > whole * 0.9  # deleted, not gone
        assert index.compact(db, removed) == 30
        held, size = index.info()
        assert held == 30 and size < whole / 5, (whole, size)
        assert lexical_ids(index) == {r[0] for r in db.execute("SELECT id FROM documents")}
        assert len(lexical_paths(db, analyzers, "kept")) == 10  # the search's limit: found
        # A removal smaller than what is left is tantivy's own merging's to take.
        assert index.compact(db, 29) == 0


def _indexed(tmp_path, files: dict[str, str]) -> apsw.Connection:
    """A new index of the collection `c` holding `files`."""
    root = tmp_path / "notes"
    write(root, files)
    conn = connect(str(tmp_path / "index.sqlite"))
    migrate(conn)
    index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    return conn


def _passing(conn, f) -> tuple[list[str], list[str]]:
    """The paths of the documents passing `f`, by the engine's filter and by SQLite's
    (vectors, definitions, ls), each in order: the two must agree."""
    with lexical_index(conn, AnalyzerSet()) as index:
        searcher = index.searcher()
        hits = searcher.search(filter_query(conn, f, searcher), 100).hits
        ids = [int(i) for i in searcher.fast_field_values("id", [a for _, a in hits])]
        engine = sorted(d.rel_path for d in docs_by_ids(conn, ids).values())
    sql, args = where(f)
    rows = conn.execute(
        f"SELECT d.rel_path FROM documents d JOIN collections c ON c.id = d.collection_id WHERE {sql} ORDER BY 1", args
    )
    return engine, [r[0] for r in rows]


def test_a_notes_created_is_its_date_in_the_engine_and_in_sqlite(tmp_path):
    """Obsidian's templates write `created:`, not `date:`: such a note was dated by its
    file's mtime (today), and `--until 2022-12-31` missed it. The engine's filter and
    SQLite's (vectors, definitions) agree."""
    conn = _indexed(
        tmp_path,
        {
            "created.md": "---\ncreated: 2021-03-04\n---\n# Lemur\n\nlemur notes\n",
            "dated.md": "---\ndate: 2020-01-01\ncreated: 2023-05-05\n---\n# Lemur two\n\nlemur notes\n",
            "empty.md": "---\ndate:\ncreated: 2022-06-07\n---\n# Lemur three\n\nlemur notes\n",
            "toml.md": "+++\ncreated = 2019-09-09\n+++\n# Lemur four\n\nlemur notes\n",
            "plain.md": "# Lemur five\n\nlemur notes\n",
        },
    )
    expected = ["created.md", "dated.md", "empty.md", "toml.md"]
    f = resolve(Filter(until="2022-12-31"))
    assert _passing(conn, f) == (expected, expected)


def test_a_date_written_as_people_write_it_is_the_notes_day_in_the_engine_and_in_sqlite(tmp_path):
    """`date: 03.11.2025` (as German notes write it), `2025/04/09` or `April 9, 2025` was
    no ISO day: the note was dated by its file's time, and `--since` gave the wrong set."""
    conn = _indexed(
        tmp_path,
        {
            "dotted.md": "---\ndate: 03.11.2025\n---\n# Lemur\n\nlemur notes\n",
            "slashed.md": "---\ndate: 2025/11/03\n---\n# Lemur two\n\nlemur notes\n",
            "named.md": "---\ndate: November 3, 2025\n---\n# Lemur three\n\nlemur notes\n",
            "german.md": "---\ndate: Montag, 3. November 2025\n---\n# Lemur four\n\nlemur notes\n",
            "ambiguous.md": "---\ndate: 03/11/2025\n---\n# Lemur five\n\nlemur notes\n",
            "iso.md": "---\ndate: 2025-11-04\n---\n# Lemur six\n\nlemur notes\n",
        },
    )
    f = resolve(Filter(since="2025-11-03", until="2025-11-03"))
    expected = ["dotted.md", "german.md", "named.md", "slashed.md"]  # the ambiguous one by its file's time
    assert _passing(conn, f) == (expected, expected)
    # An index written before takes those documents again, for their day, at the next start.
    conn.execute("DELETE FROM lexical_pending")
    conn.execute("DELETE FROM migrations WHERE name = '0016_written_days'")
    assert migrate(conn) == ["0016_written_days"]
    pending = {
        r[0] for r in conn.execute("SELECT d.rel_path FROM lexical_pending p JOIN documents d ON d.id = p.doc_id")
    }
    assert pending == {"ambiguous.md", *expected}


def test_keywords_are_tags_in_the_engine_and_in_sqlite_and_an_older_index_takes_them_again(tmp_path):
    conn = _indexed(
        tmp_path,
        {
            "paper.md": "---\nkeywords: [wetlands, nitrate]\n---\n# Paper\n\nlemur notes\n",
            "note.md": "---\ntags: [wetlands]\n---\n# Note\n\nlemur notes\n",
            "plain.md": "# Plain\n\nlemur notes\n",
        },
    )
    f = resolve(Filter(tags=("Wetlands",)))
    assert _passing(conn, f) == (["note.md", "paper.md"], ["note.md", "paper.md"])
    conn.execute("DELETE FROM lexical_pending")
    conn.execute("DELETE FROM migrations WHERE name = '0018_keywords_are_tags'")
    assert migrate(conn) == ["0018_keywords_are_tags"]
    pending = conn.execute("SELECT d.rel_path FROM lexical_pending p JOIN documents d ON d.id = p.doc_id").fetchall()
    assert pending == [("paper.md",)]


def test_a_tag_is_matched_alike_by_the_engine_and_by_sqlite_whatever_its_case_or_how_it_is_listed(tmp_path):
    """SQLite's lower() lowers ASCII only, and its json_each reads `tags: a, b` as one tag:
    `ls --tag überblick` missed `#Überblick` and `--tag ops` a note tagged `meeting, ops`,
    where a search (the engine's filter) found both."""
    conn = _indexed(
        tmp_path,
        {
            "umlaut.md": "---\ntags: [Überblick]\n---\n# Umlaut\n\nlemur\n",
            "listed.md": "---\ntags: meeting, ops\n---\n# Listed\n\nlemur\n",
            "hashed.md": "---\nkeywords: '#Ops'\n---\n# Hashed\n\nlemur\n",
            "inline.md": "# Inline\n\nlemur #ÜBERBLICK\n",
            "number.md": "---\ntags: [2024, ops-team]\n---\n# Number\n\nlemur\n",
            "plain.md": "# Plain\n\nlemur ops überblick\n",
            "nested.md": "---\ntags: [Projekt/Übersetzung, café]\n---\n# Nested\n\nlemur\n",
            "spaced.md": "---\ntags: alpha-one beta-two\n---\n# Spaced\n\nlemur #inline\n",  # Obsidian's
            "singular.md": "---\ntag: gamma\nkeywords: machine learning\n---\n# Singular\n\nlemur\n",
        },
    )
    cases = (
        ("überblick", ["inline.md", "umlaut.md"]),
        ("ueberblick", []),
        ("Uberblick", ["inline.md", "umlaut.md"]),  # accents off, as a search's words
        ("#OPS", ["hashed.md", "listed.md"]),
        ("meeting", ["listed.md"]),
        ("projekt", ["nested.md"]),  # a nested tag by its parent
        ("projekt/*", ["nested.md"]),
        ("projekt/ubersetzung", ["nested.md"]),
        ("übersetzung", []),  # a child alone is no tag
        ("cafe", ["nested.md"]),
        ("meeting,ops", ["listed.md"]),  # both, as `--tag meeting --tag ops`
        ("meeting,cafe", []),
        ("beta-two", ["spaced.md"]),  # `tags: alpha-one beta-two`: two tags
        ("inline", ["spaced.md"]),
        ("gamma", ["singular.md"]),  # Obsidian's older `tag`
        ("machine learning", ["singular.md"]),  # a keyword may be words
        ("machine", []),
    )
    for tag, expected in cases:
        assert _passing(conn, resolve(Filter(tags=(tag,)))) == (expected, expected), tag
    # An index written before takes the documents with such tags again, at the next start.
    conn.execute("DELETE FROM lexical_pending")
    conn.execute("DELETE FROM migrations WHERE name = '0019_tags_folded'")
    assert migrate(conn) == ["0019_tags_folded"]
    pending = conn.execute("SELECT d.rel_path FROM lexical_pending p JOIN documents d ON d.id = p.doc_id ORDER BY 1")
    assert [r[0] for r in pending] == ["inline.md", "nested.md", "umlaut.md"]


def test_what_a_negation_left_out_is_said_with_how_to_search_for_it(tmp_path):
    """`set -euo pipefail` pasted from a script left out the one script that holds it,
    silently: `-euo` is a negation. The search says what each query's negations left out
    of what its other words found, and how to search for such a word instead."""
    conn = _indexed(
        tmp_path,
        {
            "backup.sh": '#!/bin/sh\nset -euo pipefail\nfind "$DIR" -mtime +14 -delete\n',
            "deploy.md": "# Deploy\n\nThe pipeline sets the release tag.\n",
            "other.md": "# Other\n\nNothing of that here.\n",
        },
    )
    with lexical_index(conn, AnalyzerSet()) as index:

        def notes(query: str) -> list[str]:
            return lexical.search(index, conn, AnalyzerSet(), query, {"english": 3}, 10).notes

        hint = "-euo left out 1 document holding the other words; to search for a word starting with -, quote it: '\"-euo\"'"
        assert hint in notes("set -euo pipefail")
        assert "-mtime left out 1 document" in " ".join(notes("find -mtime"))
        assert not any("left out" in n for n in notes("pipeline -staging"))  # nothing to leave out
        assert not any("left out" in n for n in notes('"-euo" pipefail'))


def test_a_cjk_question_matching_no_run_whole_is_searched_by_its_characters_pairs(tmp_path):
    """No spaces part a Japanese or Chinese sentence's words: asked as a question, it is
    one word (a run of bigrams in a row) that no note holds whole, and `東京の出版社の締め切り
    はいつ？` found nothing (and `ask` said the notes do not answer it). Searched again by
    its pairs, the notes holding most of them come first."""
    conn = _indexed(
        tmp_path,
        {
            "tokyo.md": "# 東京出張メモ\n\n東京の出版社との打ち合わせ。締め切りは四月末です。\n",
            "osaka.md": "# 大阪\n\n大阪の出版社に電話した。\n",
            "shanghai.md": "# 合同\n\n北京公司与上海工厂之间的供货合同需要翻译。\n",
            "english.md": "# Notes\n\nNothing in Japanese here.\n",
        },
    )
    with lexical_index(conn, AnalyzerSet()) as index:

        def found(query: str) -> tuple[list[str], list[str]]:
            result = lexical.search(index, conn, AnalyzerSet(), query, {None: 3, "english": 1}, 10)
            paths = docs_by_ids(conn, [r.doc_id for r in result.rows])
            return [paths[r.doc_id].rel_path for r in result.rows], result.notes

        paths, notes = found("東京の出版社の締め切りはいつ？")
        assert paths[0] == "tokyo.md" and "english.md" not in paths
        assert (
            notes[0]
            == "nothing matches '東京の出版社の締め切りはいつ？': searched its characters two by two, any of them"
        )
        paths, _ = found("上海工厂的供货合同")
        assert paths[0] == "shanghai.md"
        # A run a note holds whole is still a phrase: no other note for its pairs alone.
        assert found("東京の出版社") == (["tokyo.md"], [])
        assert found('"東京の締め切り"') == ([], [])  # quoted: as typed, or nothing


def test_a_note_named_by_its_day_is_of_that_day_in_the_engine_and_in_sqlite(tmp_path):
    """A daily note (`Daily/2025-03-18.md`) or a blog's post (`2025-03-18-launch.md`)
    without a frontmatter date was dated by its file's mtime: `--since 2025-03-14 --until
    2025-03-22` left the week's daily notes out."""
    conn = _indexed(
        tmp_path,
        {
            "Daily/2025-03-18.md": "# Tuesday\n\nlemur\n",
            "_posts/2025-03-18-launch.md": "# Launch\n\nlemur\n",
            "2025-03-18 Standup.md": "# Standup\n\nlemur\n",
            "dated/2025-03-18.md": "---\ndate: 2024-01-01\n---\n# Dated\n\nlemur\n",  # its frontmatter's day
            "20250318.md": "# Compact\n\nlemur\n",
            "Zettel/202503181530 Idea.md": "# Idea\n\nlemur\n",  # a note's timestamp (a Zettelkasten ID)
            "202513181530 Not a day.md": "# Not a day\n\nlemur\n",
            "v2025-03-18.md": "# Version\n\nlemur\n",
            "2025-13-45.md": "# No day\n\nlemur\n",
            "2025-03-180.md": "# Longer number\n\nlemur\n",
        },
    )
    expected = [
        "2025-03-18 Standup.md",
        "Daily/2025-03-18.md",
        "Zettel/202503181530 Idea.md",
        "_posts/2025-03-18-launch.md",
    ]
    assert _passing(conn, resolve(Filter(since="2025-03-14", until="2025-03-22"))) == (expected, expected)
    conn.execute("DELETE FROM lexical_pending")
    conn.execute("DELETE FROM migrations WHERE name = '0020_named_days'")
    assert migrate(conn) == ["0020_named_days"]
    assert conn.execute("SELECT count(*) FROM lexical_pending").fetchone()[0] == 7


def test_a_notes_aliases_are_its_other_names(tmp_path):
    """Obsidian's `aliases` were used nowhere: `Rechtsglossar`, a note's other name, found
    nothing. They are searched with the title's weight, as names of the note."""
    conn = _indexed(
        tmp_path,
        {
            "Glossar Recht.md": "---\naliases: [Rechtsglossar, glossaire juridique]\n---\n# Glossar Recht\n\nVertrag, Haftung.\n",
            "Notiz.md": "---\nalias: Merkzettel\n---\n# Notiz\n\nEinkaufen.\n",
            "other.md": "# Other\n\nThe juridique word once, and a glossaire.\n",
        },
    )
    with lexical_index(conn, AnalyzerSet()) as index:

        def first(query: str) -> str:
            result = lexical.search(index, conn, AnalyzerSet(), query, {"german": 2, "english": 1}, 10)
            return docs_by_ids(conn, [result.rows[0].doc_id])[result.rows[0].doc_id].rel_path

        assert first("Rechtsglossar") == "Glossar Recht.md"
        assert first("glossaire juridique") == "Glossar Recht.md"
        assert first("merkzettel") == "Notiz.md"
    conn.execute("DELETE FROM lexical_pending")
    conn.execute("DELETE FROM migrations WHERE name = '0021_aliases'")
    assert migrate(conn) == ["0021_aliases"]
    pending = conn.execute("SELECT d.rel_path FROM lexical_pending p JOIN documents d ON d.id = p.doc_id ORDER BY 1")
    assert [r[0] for r in pending] == ["Glossar Recht.md", "Notiz.md"]


def test_a_notes_other_properties_are_words_of_its_text(tmp_path):
    """Obsidian's properties (`company`, `role`, a budget, a linked project) were found by
    no search: only the body was indexed, and the title, aliases, tags and date."""
    note = (
        "---\ntitle: Carla Ruiz\ncompany: Weiß & Partner\nrole: Head of Design\nbudget_eur: 120000\n"
        'project: "[[Project Alpha]]"\npast: [Freelance, Studio]\nactive: true\n---\n'
        "# Carla Ruiz\n\nMet at the conference.\n"
    )
    conn = _indexed(
        tmp_path,
        {
            "People/Carla.md": note,
            "People/Ben.md": "---\nrole: engineer\n---\n# Ben\n\nWorks on the alpha release.\n",
            "notes.txt": "---\ncompany: Initech\n---\nA text file's lines.\n",
        },
    )
    with lexical_index(conn, AnalyzerSet()) as index:

        def found(query: str) -> list[str]:
            return lexical_paths_in(index, conn, AnalyzerSet(), query, respell=False)

        assert found("Partner") == ["People/Carla.md"]
        assert found("weiss") == ["People/Carla.md"]
        assert found('"Head of Design"') == ["People/Carla.md"]
        assert found("120000") == ["People/Carla.md"]
        assert found("Freelance") == ["People/Carla.md"]  # in a list
        assert found("studio") == ["People/Carla.md"]
        assert found("Project Alpha")[0] == "People/Carla.md"
        assert found("true") == []  # a yes/no value says nothing
        assert found("Initech") == []  # only a Markdown note's
        from gnod.protocol import SearchParams
        from gnod.server.searching import answer

        # Its passage is the property's line, which no line of its body matches.
        result = answer(
            index, conn, AnalyzerSet(), SearchParams(query="Partner"), language_counts(conn), resolve(Filter())
        )
        (hit,) = result.hits
        assert (hit.path, hit.snippet.line) == ("People/Carla.md", 3)
        (start, end), *_ = hit.snippet.matches
        assert hit.snippet.text[start:end] == "Partner"
        result = answer(
            index, conn, AnalyzerSet(), SearchParams(query="conference"), language_counts(conn), resolve(Filter())
        )
        assert [(h.path, h.snippet.line) for h in result.hits] == [("People/Carla.md", 12)]


def test_a_passage_holding_only_title_words_gives_way_to_one_holding_the_query_s_other_words(tmp_path):
    """`Anna marathon` showed `# Anna Schmidt`, the title shown beside it, where a later
    line says "Runs marathons": both hold one word of the query, and the first won."""
    from gnod.protocol import SearchParams
    from gnod.server.searching import answer

    note = "# Anna Schmidt\n\n## Context\n\nLeads the platform team.\n\nRuns marathons; ask about Berlin.\n"
    conn = _indexed(tmp_path, {"People/Anna Schmidt.md": note, "other.md": "# Other\n\nNothing here.\n"})
    with lexical_index(conn, AnalyzerSet()) as index:

        def passage(query: str) -> tuple[int, list[str]]:
            params = SearchParams(query=query)
            (hit,) = answer(index, conn, AnalyzerSet(), params, language_counts(conn), resolve(Filter())).hits
            return hit.snippet.line, [hit.snippet.text[a:b] for a, b in hit.snippet.matches]

        assert passage("Anna marathon") == (7, ["marathons"])
        assert passage("Anna platform") == (5, ["platform"])
        assert passage("Anna Schmidt") == (1, ["Anna", "Schmidt"])  # the title's words alone


def test_a_tex_file_s_accented_letters_are_found_as_letters(tmp_path):
    """A BibTeX file spells names `G{\\"o}del`, `Erd{\\H{o}}s`: indexed as their pieces,
    found by no search for Gödel or Godel, and its passage held no match."""
    conn = _indexed(
        tmp_path,
        {
            "refs.bib": '@book{goedel1931,\n  author = {G{\\"o}del, Kurt},\n  title = {{\\"U}ber formal}\n}\n'
            "@article{erdos1947,\n  author = {Erd{\\H{o}}s, Paul},\n}\n",
            "ch1.tex": '\\section{Incompleteness}\nAs G\\"odel showed, Stra\\ss e.\n',
            "plain.md": "# Plain\n\nNothing about logicians.\n",
        },
    )
    with lexical_index(conn, AnalyzerSet()) as index:
        for query in ("Gödel", "godel", "Erdős", "erdos", '"Gödel, Kurt"', "über formal", "straße"):
            result = lexical.search(index, conn, AnalyzerSet(), query, {"english": 3}, 10)
            paths = {docs_by_ids(conn, [r.doc_id])[r.doc_id].rel_path for r in result.rows}
            assert paths and paths <= {"refs.bib", "ch1.tex"}, query
        from gnod.protocol import SearchParams
        from gnod.server.searching import answer

        found = answer(
            index, conn, AnalyzerSet(), SearchParams(query="erdos"), language_counts(conn), resolve(Filter())
        )
        (hit,) = found.hits
        assert (hit.path, hit.snippet.line) == ("refs.bib", 6)
        assert hit.snippet.text.startswith("  author = {Erdős, Paul},")
        (start, end), *_ = hit.snippet.matches
        assert hit.snippet.text[start:end] == "Erdős"
    conn.execute("DELETE FROM lexical_pending")
    conn.execute("DELETE FROM migrations WHERE name = '0022_tex_accents'")
    assert migrate(conn) == ["0022_tex_accents"]
    pending = conn.execute("SELECT d.rel_path FROM lexical_pending p JOIN documents d ON d.id = p.doc_id ORDER BY 1")
    assert [r[0] for r in pending] == ["ch1.tex", "refs.bib"]


def test_words_joined_by_a_slash_that_no_document_holds_so_are_searched_apart(tmp_path):
    """`Q1/Q2` found nothing in notes that say Q1 and Q2 in their own places: a run joined
    by a slash, a plus or an ampersand is searched apart when nothing holds it as typed
    (a word being typed stays a prefix); an identifier is not."""
    conn = _indexed(
        tmp_path,
        {"budget.md": "# Budget\n\nThe Q1 numbers and the Q2 plan.\n", "other.md": "# Other\n\nNothing here.\n"},
    )
    with lexical_index(conn, AnalyzerSet()) as index:

        def found(query: str) -> tuple[list[str], list[str]]:
            result = lexical.search(index, conn, AnalyzerSet(), query, {"english": 2}, 10)
            return [docs_by_ids(conn, [r.doc_id])[r.doc_id].rel_path for r in result.rows], result.notes

        assert found("Q1/Q2") == (["budget.md"], ["nothing matches 'Q1/Q2': searched its words apart, 'q1 q2'"])
        assert found("Q1/Q*")[0] == ["budget.md"]
        assert found("numbers+plan")[0] == ["budget.md"]
        assert found("q1_q2_numbers")[0] == []  # an identifier nothing defines: no words apart
