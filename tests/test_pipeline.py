"""The ingest pipeline against a real SQLite index: change detection, dedup, errors,
removal, and crash atomicity (a SIGKILLed writer never leaves half a document)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import lexical_ids, lexical_index, lexical_paths, write_tree
from gnod.config import SOURCE_LANGUAGE, CollectionConfig
from gnod.ingest.canonical import mirror_hash
from gnod.ingest.pipeline import index_collection, index_paths, stale_paths
from gnod.store import documents as store
from gnod.store import kept
from gnod.store.db import connect
from gnod.store.migrations import migrate
from gnod.text.analyzer import AnalyzerSet


def run(db, root, **kw):
    col = CollectionConfig(name="c", path=str(root), **kw)
    return index_collection(db, AnalyzerSet(), col)


def count(db, table: str) -> int:
    return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def check_invariants(db) -> None:
    """Every document has its content and chunks, and the lexical index holds exactly
    the documents SQLite does; no orphans."""
    with lexical_index(db, AnalyzerSet()) as lex:
        assert lexical_ids(lex) == {r[0] for r in db.execute("SELECT id FROM documents")}
    assert (
        db.execute(
            "SELECT count(*) FROM documents d LEFT JOIN content c USING(mirror_hash) WHERE c.id IS NULL"
        ).fetchone()[0]
        == 0
    )
    assert (
        db.execute(
            "SELECT count(*) FROM content c WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.mirror_hash = c.mirror_hash)"
        ).fetchone()[0]
        == 0
    )
    unchunked = db.execute(
        "SELECT c.markdown FROM content c WHERE NOT EXISTS (SELECT 1 FROM content_chunks k WHERE k.content_id = c.id)"
    ).fetchall()
    assert not [m for (m,) in unchunked if store.unpack(m).strip()]


def test_fresh_noop_modify_touch_delete(db, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(5):
        (root / f"d{i}.md").write_text(f"# Doc {i}\n\nbody number {i} about deployment\n")
    s = run(db, root)
    assert (s.scanned, s.added, s.errors) == (5, 5, 0)
    check_invariants(db)

    s = run(db, root)
    assert (s.added, s.updated, s.unchanged) == (0, 0, 5)

    (root / "d0.md").write_text("# Doc 0\n\nrewritten entirely\n")
    os.utime(root / "d1.md", ns=(1, 1))  # new stat, same bytes: hashed, not re-indexed
    (root / "d2.md").unlink()
    (root / "new.md").write_text("# New\n\nfresh\n")
    s = run(db, root)
    assert (s.added, s.updated, s.unchanged, s.removed) == (1, 1, 3, 1)
    check_invariants(db)
    mtime = db.execute("SELECT mtime_ns FROM documents WHERE rel_path='d1.md'").fetchone()[0]
    assert mtime == 1
    assert run(db, root).unchanged == 5


def test_identical_content_is_stored_once(db, tmp_path):
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text("# Same\n\nsame text\n")
    run(db, tmp_path)
    assert count(db, "documents") == 2 and count(db, "content") == 1
    (tmp_path / "a.md").unlink()
    run(db, tmp_path)
    assert count(db, "content") == 1  # still used by b.md
    (tmp_path / "b.md").unlink()
    run(db, tmp_path)
    assert count(db, "content") == 0 and count(db, "content_chunks") == 0


def test_failures_are_recorded_and_the_run_goes_on(db, tmp_path):
    (tmp_path / "good.md").write_text("# Good\n\nfine\n")
    (tmp_path / "bin.txt").write_bytes(b"\x00\x01binary")
    (tmp_path / "latin.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    s = run(db, tmp_path)
    assert (s.added, s.errors) == (2, 1)
    ((code, reason),) = db.execute("SELECT code, reason FROM ingest_errors").fetchall()
    assert code == "BINARY" and "NUL" in reason
    # An unchanged failing file is not retried; fixing it clears the error.
    assert run(db, tmp_path).errors == 1
    (tmp_path / "bin.txt").write_text("now text")
    s = run(db, tmp_path)
    assert (s.added, s.errors) == (1, 0) and count(db, "ingest_errors") == 0


def test_the_stale_paths_are_those_a_run_would_change(db, tmp_path):
    """The watcher's look for what changed while nothing watched (stale_paths), by the
    files' stats alone: the new, changed and gone files, a mailbox by its file, a failed
    file only once it changed; those paths indexed, nothing is stale."""
    box = b"".join(
        b"From ann@example.org Mon Jan  1 00:00:00 2024\nFrom: ann@example.org\nSubject: " + s + b"\n\nkiln\n\n"
        for s in (b"one", b"two")
    )
    (tmp_path / "same.md").write_text("# Same\n\nalpha\n")
    (tmp_path / "edited.md").write_text("# Edited\n\nbeta\n")
    (tmp_path / "gone.md").write_text("# Gone\n\ngamma\n")
    (tmp_path / "bin.txt").write_bytes(b"\x00\x01binary")
    (tmp_path / "bin2.txt").write_bytes(b"\x00\x01binary")
    (tmp_path / "inbox.mbox").write_bytes(box)
    s = run(db, tmp_path)
    assert (s.added, s.errors) == (5, 2)
    col = CollectionConfig(name="c", path=str(tmp_path))
    assert stale_paths(db, col) == set()
    (tmp_path / "edited.md").write_text("# Edited\n\nbeta, then delta\n")
    (tmp_path / "gone.md").unlink()
    (tmp_path / "new.md").write_text("# New\n\nepsilon\n")
    (tmp_path / "bin2.txt").write_bytes(b"\x00\x01binary, longer")
    (tmp_path / "inbox.mbox").unlink()
    stale = stale_paths(db, col)
    assert stale == {"edited.md", "gone.md", "new.md", "bin2.txt", "inbox.mbox"}
    index_paths(db, AnalyzerSet(), col, stale)
    assert stale_paths(db, col) == set()
    paths = {r[0] for r in db.execute("SELECT rel_path FROM documents")}
    assert paths == {"same.md", "edited.md", "new.md"}


def test_a_failure_goes_when_the_file_is_back_as_it_was_indexed(db, tmp_path):
    """A note broken by a bad write (its last good text stays indexed), then restored from
    a backup: the same bytes as indexed, so nothing is read again, and its failure was
    listed on (`update` and `status` disagreed on the failures)."""
    good = "# Methods\n\nWe sampled forty ponds.\n"
    (tmp_path / "ch3.md").write_text(good)
    run(db, tmp_path)
    (tmp_path / "ch3.md").write_bytes(b"\x00\x01 not text")
    assert run(db, tmp_path).errors == 1 and count(db, "ingest_errors") == 1
    (tmp_path / "ch3.md").write_text(good)
    s = run(db, tmp_path)
    assert (s.unchanged, s.errors) == (1, 0) and count(db, "ingest_errors") == 0


def test_a_noop_update_writes_nothing_and_reads_the_indexed_states_once(db, tmp_path):
    """A run that finds nothing changed leaves the database as it was, failures and the
    walk's own issues included, so the indexed states read for it serve the next run;
    anything that writes, through this connection or another, has them read again."""
    (tmp_path / "a.md").write_text("# A\n\nalpha\n")
    (tmp_path / "b.md").write_text("# B\n\nbeta\n")
    (tmp_path / "bin.txt").write_bytes(b"\x00\x01binary")
    os.close(os.open(os.path.join(os.fsencode(tmp_path), b"m-\xff.md"), os.O_CREAT | os.O_WRONLY))
    assert run(db, tmp_path).errors == 2
    cid = store.collection_ids(db)["c"]
    at = dict(db.execute("SELECT rel_path, at FROM ingest_errors").fetchall())
    db.execute("UPDATE ingest_errors SET at = 1")  # recorded long ago
    before = db.total_changes()
    s = run(db, tmp_path)
    assert (s.unchanged, s.errors, s.removed) == (2, 2, 0)
    assert db.total_changes() == before
    assert dict(db.execute("SELECT rel_path, at FROM ingest_errors").fetchall()) == dict.fromkeys(at, 1)
    states = kept.collection_states(db, cid)
    assert kept.collection_states(db, cid) is states and set(states) == {"a.md", "b.md"}

    other = connect(db.filename)
    with other:
        other.execute("UPDATE documents SET size = 0 WHERE rel_path = 'a.md'")
    other.close()
    assert kept.collection_states(db, cid)["a.md"].size == 0
    s = run(db, tmp_path)  # a.md's stat differs from the one indexed: hashed, the same bytes
    assert (s.unchanged, s.updated) == (2, 0)
    assert db.execute("SELECT size FROM documents WHERE rel_path = 'a.md'").fetchone()[0] > 0

    (tmp_path / "b.md").unlink()
    (tmp_path / "bin.txt").unlink()
    s = run(db, tmp_path)
    assert (s.unchanged, s.removed, s.errors) == (1, 1, 1)
    assert set(kept.collection_states(db, cid)) == {"a.md"}
    assert [r[0] for r in db.execute("SELECT code FROM ingest_errors")] == ["BAD_NAME"]
    check_invariants(db)


def test_frontmatter_title_language_and_chunks(db, tmp_path):
    body = "\n\n".join(f"## Part {i}\n\n" + "Lorem ipsum dolor sit amet. " * 40 for i in range(8))
    (tmp_path / "long.md").write_text(f"---\ntitle: Long One\ntags: [a, b]\n---\n{body}\n")
    (tmp_path / "de.md").write_text("Die Katzen laufen schnell über die Straße und die Hunde bleiben zu Hause.\n")
    run(db, tmp_path)
    title, meta, lang = db.execute(
        "SELECT title, metadata, language FROM documents WHERE rel_path='long.md'"
    ).fetchone()
    assert title == "Long One" and '"tags": ["a", "b"]' in meta
    assert db.execute("SELECT language FROM documents WHERE rel_path='de.md'").fetchone()[0] == "german"
    mirror = db.execute("SELECT mirror_hash FROM documents WHERE rel_path='long.md'").fetchone()[0]
    chunks = store.chunks_of(db, mirror)
    assert len(chunks) > 3
    assert chunks[0][3] == 5  # after the 4 frontmatter lines
    assert all(len(t) <= 3200 for _, _, t, _, _ in chunks)
    assert chunks[0][2].startswith("## Part 0") and "title: Long One" not in chunks[0][2]
    markdown = store.content_of(db, mirror)[0]
    lines = markdown.split("\n")
    for _, _, text, start, end in chunks:  # spans and line numbers agree with the markdown
        assert "\n".join(lines[start - 1 : end]).rstrip("\n").endswith(text.rstrip("\n"))
        assert lines[start - 1].endswith(text.split("\n")[0])


def test_the_mirror_hash_is_the_canonical_texts_whether_the_file_was_canonical_or_not(db, tmp_path):
    """A file already canonical takes its bytes' hash for its text's; one that is not
    must not: both name the same stored content."""
    (tmp_path / "clean.md").write_bytes(b"# Notes\n\nSome text.\n")
    (tmp_path / "messy.md").write_bytes(b"# Notes  \r\n\r\n\r\nSome text.\r\n\r\n")
    run(db, tmp_path)
    rows = dict(db.execute("SELECT rel_path, mirror_hash FROM documents").fetchall())
    assert rows["clean.md"] == rows["messy.md"] == mirror_hash("# Notes\n\nSome text.\n")
    assert db.execute("SELECT count(*) FROM content").fetchone()[0] == 1
    sources = dict(db.execute("SELECT rel_path, source_hash FROM documents").fetchall())
    assert sources["clean.md"] == rows["clean.md"] != sources["messy.md"]
    check_invariants(db)


def test_a_projects_script_without_an_extension_is_code_and_its_pages_are_prose(db, tmp_path):
    """In a project's tree a file without an extension is indexed: one that starts as a
    program does (`#!`) is code (titled by its name, not by a `# comment`, in the
    language source is indexed in), another a page like any text."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "decodecode").write_text("#!/bin/sh\n# Disassemble the Code: line of an oops\necho $1\n")
    abi = tmp_path / "Documentation" / "ABI"
    abi.mkdir(parents=True)
    (abi / "sysfs-class-net").write_text(
        "What:\t\t/sys/class/net/<iface>/operstate\nDescription:\n\t\tIndicates the interface RFC2863 operational state.\n"
    )
    s = run(db, tmp_path)
    assert s.added == 2
    rows = {r[0]: r[1:] for r in db.execute("SELECT rel_path, title, language FROM documents")}
    assert rows["scripts/decodecode"] == ("decodecode", SOURCE_LANGUAGE)
    assert rows["Documentation/ABI/sysfs-class-net"][0] == "sysfs-class-net"
    assert lexical_paths(db, AnalyzerSet(), "operstate") == ["Documentation/ABI/sysfs-class-net"]
    assert lexical_paths(db, AnalyzerSet(), "disassemble oops") == ["scripts/decodecode"]
    check_invariants(db)


def test_language_hint_wins(db, tmp_path):
    (tmp_path / "x.md").write_text("The cats are running quickly over the streets today.\n")
    run(db, tmp_path, language="french")
    assert db.execute("SELECT language FROM documents").fetchone()[0] == "french"


def test_missing_root_is_an_error_not_a_wipe(db, tmp_path):
    (tmp_path / "a.md").write_text("# A\n")
    run(db, tmp_path)
    col = CollectionConfig(name="c", path=str(tmp_path / "gone"))
    s = index_collection(db, AnalyzerSet(), col)
    assert s.errors == 1 and count(db, "documents") == 1


def test_delete_collection_removes_everything(db, tmp_path):
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    (tmp_path / "b.txt").write_bytes(b"\x00")
    run(db, tmp_path)
    assert store.delete_collection(db, "c") == 1
    for table in ("documents", "content", "content_chunks", "ingest_errors", "collections"):
        assert count(db, table) == 0, table
    check_invariants(db)


KILL_SCRIPT = """
import os, sys
from gnod.config import CollectionConfig
from gnod.ingest.lexical_text import deriver
from gnod.ingest.pipeline import index_collection
from gnod.store.db import connect
from gnod.store.migrations import migrate
from gnod.store.lexical_index import LexicalIndex
from gnod.store.migrations import migrate
from gnod.text.analyzer import AnalyzerSet
conn = connect(sys.argv[1]); migrate(conn)
analyzers = AnalyzerSet()
lex = LexicalIndex(os.path.dirname(sys.argv[1]), deriver(analyzers))
lex.open(); lex.reconcile(conn)
print("ready", flush=True)
index_collection(conn, analyzers, CollectionConfig(name="c", path=sys.argv[2]), lex=lex)
print("finished", flush=True)
"""


def _index_and_kill(db_path: str, root, conn) -> None:
    """Index `root` as gnod's writer does (SQLite, then the lexical index, batch by batch)
    in another process, and SIGKILL it once it has committed a document."""

    def state():
        return conn.execute("SELECT count(*), total(size), max(id) FROM documents").fetchone()

    before = state()
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, db_path, str(root)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 30
    while state() == before and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_sigkill_mid_index_leaves_only_whole_documents(tmp_path):
    """Killed between and inside batches, with rewrites, deletes and renames between the
    kills: SQLite holds whole documents only, and the lexical index, reconciled at start,
    holds exactly those, each with its current text."""
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(3000):
        (root / f"f{i:04d}.md").write_text(f"# File {i}\n\n" + f"word{i} and more words here. " * 30 + "\n")
    db_path = str(tmp_path / "index.sqlite")
    conn = connect(db_path)
    migrate(conn)
    _index_and_kill(db_path, root, conn)
    committed = count(conn, "documents")
    assert 0 < committed < 3000  # killed mid-run, between or inside batches
    check_invariants(conn)
    for i in range(0, 3000, 7):  # rewritten: a new word each
        (root / f"f{i:04d}.md").write_text(f"# File {i}\n\nrewritten{i} " * 20 + "\n")
    for i in range(1, 3000, 11):
        (root / f"f{i:04d}.md").unlink()
    for i in (i for i in range(2, 3000, 13) if i % 11 != 1):
        (root / f"f{i:04d}.md").rename(root / f"moved{i:04d}.md")
    _index_and_kill(db_path, root, conn)
    check_invariants(conn)
    s = index_collection(conn, AnalyzerSet(), CollectionConfig(name="c", path=str(root)))
    files = len(os.listdir(root))
    assert s.added + s.updated + s.unchanged == files and count(conn, "documents") == files
    check_invariants(conn)
    assert lexical_paths(conn, AnalyzerSet(), "rewritten7") == ["f0007.md"]
    assert lexical_paths(conn, AnalyzerSet(), "word7") == []
    assert lexical_paths(conn, AnalyzerSet(), "word1") == []  # deleted
    assert lexical_paths(conn, AnalyzerSet(), "word2") == ["moved0002.md"]


def paths_in(db) -> list[str]:
    return [r[0] for r in db.execute("SELECT rel_path FROM documents ORDER BY rel_path")]


def test_index_paths_updates_only_its_scope(db, tmp_path):
    from gnod.ingest.pipeline import index_paths

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.md").write_text("# X\n")
    (tmp_path / "a" / "y.md").write_text("# Y\n")
    (tmp_path / "b.md").write_text("# B\n")
    (tmp_path / ".gitignore").write_text("secret/\n")
    run(db, tmp_path)
    col = CollectionConfig(name="c", path=str(tmp_path))
    # A directory rename arrives as (old dir, new dir); a delete as a missing path.
    (tmp_path / "a").rename(tmp_path / "renamed")
    (tmp_path / "b.md").unlink()
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "s.md").write_text("# S\n")
    (tmp_path / "c.md").write_text("# C\n")
    s = index_paths(db, AnalyzerSet(), col, ["a", "renamed", "b.md", "secret/s.md", "secret", "c.md", "nope.md"])
    assert (s.added, s.removed) == (3, 3)
    assert paths_in(db) == ["c.md", "renamed/x.md", "renamed/y.md"]
    check_invariants(db)
    # Out-of-scope documents are untouched even if they changed on disk.
    (tmp_path / "c.md").write_text("# C changed\n")
    (tmp_path / "renamed" / "x.md").write_text("# X changed\n")
    s = index_paths(db, AnalyzerSet(), col, ["renamed/x.md"])
    assert (s.updated, s.unchanged, s.scanned) == (1, 0, 1)
    assert db.execute("SELECT title FROM documents WHERE rel_path='c.md'").fetchone()[0] == "C"


def test_index_paths_respects_ancestor_gitignore(db, tmp_path):
    from gnod.ingest.pipeline import index_paths

    (tmp_path / ".gitignore").write_text("build/\n*.tmp.md\n")
    (tmp_path / "build" / "deep").mkdir(parents=True)
    (tmp_path / "build" / "deep" / "x.md").write_text("# X\n")
    (tmp_path / "n.tmp.md").write_text("# N\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "m.md").write_text("# M\n")
    col = CollectionConfig(name="c", path=str(tmp_path))
    s = index_paths(db, AnalyzerSet(), col, ["build/deep/x.md", "build/deep", "n.tmp.md", "node_modules/m.md"])
    assert (s.scanned, s.added) == (0, 0)


# path → (text, title, language): `# …` is a heading in Markdown, a comment in code
# (Python, shell, YAML, a Makefile: titled by its name); in plain text only on its first
# line; build files are source, stemmed in English without a guess at their language; a
# README without an extension is prose in its own language.
BY_KIND = {
    "wire.py": ("# Once a frame has begun, the rest must follow\nHEADER = 4\n", "wire", "english"),
    "deploy.sh": ("#!/bin/sh\n# deploy the thing\necho hi\n", "deploy", "english"),
    "notes.md": ("# Release notes\n\ntext\n", "Release notes", None),
    "readme.txt": ("# Plain title\n\ntext\n", "Plain title", None),
    "CREDITS": ("\tThis is a partial credits-file.\n\nN: Matt\n\n# Don't add your name here\nN: Al\n", "CREDITS", None),
    "Makefile": ("# SPDX-License-Identifier: GPL-2.0\nobj-y += slab_common.o\n", "Makefile", "english"),
    "Kconfig.debug": (
        '# Debugging options\nconfig PAGE_OWNER\n\tbool "Track page owner"\n',
        "Kconfig.debug",
        "english",
    ),
    "entry.S": ("/* The entry points */\nSYM_CODE_START(entry_SYSCALL_64)\n", "entry", "english"),
    "README": (
        "# Das Projekt\n\nDieses Projekt sammelt Werkzeuge für die Verwaltung von Servern.\n",
        "Das Projekt",
        "german",
    ),
}


def test_titles_and_languages_by_kind_of_file(db, tmp_path):
    for name, (text, _, _) in BY_KIND.items():
        (tmp_path / name).write_text(text)
    run(db, tmp_path)
    rows = {r[0]: r[1:] for r in db.execute("SELECT rel_path, title, language FROM documents")}
    assert {path: title for path, (title, _) in rows.items()} == {p: t for p, (_, t, _) in BY_KIND.items()}
    assert {p: rows[p][1] for p, (_, _, lang) in BY_KIND.items() if lang} == {
        p: lang for p, (_, _, lang) in BY_KIND.items() if lang
    }


def test_a_runs_pace_counts_the_files_it_prepares_and_their_bytes(db, tmp_path):
    """The ETA of an index run is the bytes still to prepare at the rate so far: the files
    found unchanged cost nothing (a rescan said ETA 0 s while thousands of files waited),
    and a big file counts for its size (small first files gave half the real time). The
    rate counts from the first file prepared, and is said once files have been prepared
    for PACE_SETTLE_S: the walk and the workers' start before it said `ETA 27h09m` for
    a documentation tree indexed in 9 s."""
    from gnod.ingest.pipeline import PACE_SETTLE_S, _Run
    from gnod.ingest.walk import WalkEntry
    from gnod.ingest.workers import Failed, Task

    root = tmp_path / "t"
    root.mkdir()
    cid = store.upsert_collection(db, "t", str(root), None)
    run = _Run(db, CollectionConfig(name="t", path=str(root)), cid, {}, {}, None, None)
    sizes = [100, 100, 800]
    tasks = [
        run._planned(Task(WalkEntry(f"f{i}", str(root / f"f{i}"), n, 0, i), None, None)) for i, n in enumerate(sizes)
    ]
    assert run.pace(run.started + 1.0) == (None, None)  # the walk has not ended: the work is not known
    run.walked = True
    assert run.pace(run.started + 1.0) == (None, None)  # nothing prepared yet
    for task in tasks[:2]:
        run.store(task, Failed("EMPTY", "nothing in it"))
    first = run.first_stored
    assert first is not None and first >= run.started
    assert run.pace(first + PACE_SETTLE_S / 2) == (None, None)  # too soon to say
    assert run.pace(first + 2.0) == (1.0, 8.0)  # 2 files in 2 s; 800 bytes left at 100 a second


@pytest.mark.parametrize(
    ("seconds", "share", "staged", "batches"),
    [(3600.0, 0.0, 10**9, [4, 26]), (0.0, 1e9, 10**9, [4, 26]), (3600.0, 1e9, 1, [4] * 7 + [2])],
)
def test_a_long_run_announces_only_what_the_lexical_index_holds(
    db, tmp_path, monkeypatch, seconds, share, staged, batches
):
    """Batches commit to SQLite every BATCH_DOCS; the lexical index takes them at most
    every COMMIT_SECONDS and every COMMIT_SHARE of the run's time so far (the first at
    once), unless the text staged for it reaches STAGED_MAX_CHARS; each change is told
    only once the lexical index holds it."""
    from gnod.ingest import pipeline
    from gnod.store import lexical_index as lexical_index_module

    monkeypatch.setattr(pipeline, "BATCH_DOCS", 4)
    monkeypatch.setattr(lexical_index_module, "COMMIT_SECONDS", seconds)
    monkeypatch.setattr(lexical_index_module, "COMMIT_SHARE", share)
    monkeypatch.setattr(lexical_index_module, "STAGED_MAX_CHARS", staged)
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(30):
        (root / f"n{i:02d}.md").write_text(f"# Note {i}\n\nThe kingfisher number {i} dives.\n")
    with lexical_index(db, AnalyzerSet()) as lex:
        told: list[list[str]] = []

        def changed(_collection, changes):
            held = {
                r[0]
                for r in db.execute(
                    f"SELECT rel_path FROM documents WHERE id IN ({','.join(map(str, lexical_ids(lex)))})"
                )
            }
            paths = [p for _, p in changes]
            assert set(paths) <= held  # searchable before anyone is told
            told.append(paths)

        index_collection(db, AnalyzerSet(), CollectionConfig(name="c", path=str(root)), changed=changed, lex=lex)
        assert [len(t) for t in told] == batches  # the first batch at once, the rest when due
        assert count(db, "lexical_pending") == 0
        assert lexical_ids(lex) == {r[0] for r in db.execute("SELECT id FROM documents")}


def test_a_listing_by_prefix_holds_exactly_the_paths_that_start_with_it(db, tmp_path):
    """`ls --prefix` reads a range of the path index: it must end where the prefix's
    paths end, whatever its last character (a folder's "/", a letter before others, one
    outside ASCII), and not lose a path just past the range's start."""
    root = tmp_path / "notes"
    names = ["a.md", "a/x.md", "a0.md", "ab/y.md", "ab.md", "é/z.md", "éa.md", "f\U0001f600/q.md", "f\U0001f601.md"]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n\nA note.\n")
    run(db, root)
    for prefix in ["a", "a/", "ab", "é", "éa", "f\U0001f600", "f", "z", "\U0010ffff"]:
        listed = [d.rel_path for d in store.list_docs(db, "c", prefix, 100, 0)]
        assert listed == sorted(n for n in names if n.startswith(prefix)), prefix
        assert store.count_docs(db, None, prefix) == len(listed), prefix


def test_a_config_file_an_older_gnod_gave_a_language_takes_its_collections_at_the_next_run(db, tmp_path):
    """Migration 0014: a configuration file's language is a guess (an older gnod kept the
    detector's, Polish for a binding naming one Polish maintainer); the next run, with
    nothing changed on disk (the rescan at start), gives it the collection's language."""
    files = {
        f"notes/n{i}.md": f"# Note {i}\n\nThe controller of the garden pump stopped again on day {i}.\n"
        for i in range(5)
    }
    files["bindings/dmac.yaml"] = "title: ACME DMA Controller\nproperties:\n  reg:\n    maxItems: 1\n"
    root = tmp_path / "c"
    for rel, text in files.items():
        os.makedirs(os.path.dirname(root / rel), exist_ok=True)
        (root / rel).write_text(text)
    run(db, root)
    db.execute("UPDATE documents SET language = 'polish', language_confident = 1 WHERE rel_path = 'bindings/dmac.yaml'")
    db.execute("DELETE FROM migrations WHERE name = '0014_config_files_guessed'")
    assert migrate(db) == ["0014_config_files_guessed"]
    stats = run(db, root)
    assert (stats.added, stats.updated, stats.removed) == (0, 0, 0)
    assert db.execute("SELECT language FROM documents WHERE rel_path = 'bindings/dmac.yaml'").fetchone()[0] == "english"
    assert "bindings/dmac.yaml" in lexical_paths(db, AnalyzerSet(), "dma controllers")
    check_invariants(db)


def test_code_has_no_frontmatter_a_yaml_files_first_document_is_its_text(db, tmp_path):
    """A `---` line opens a note's frontmatter, but in code it is the code's own: the first
    of a Kubernetes manifest's documents (its Service) was read as frontmatter and left
    out of the file's text, and its words found nothing."""
    root = tmp_path / "c"
    manifest = "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: frontdoor\n---\nkind: Deployment\n"
    write_tree(str(root), {"deploy/app.yaml": manifest, "note.md": "---\ntags: [pumps]\n---\nThe frontdoor pump.\n"})
    run(db, root)
    read = {
        rel: (json.loads(meta), body_line)
        for rel, meta, body_line in db.execute(
            "SELECT d.rel_path, d.metadata, c.body_line FROM documents d JOIN content c USING(mirror_hash)"
        )
    }
    assert read == {"deploy/app.yaml": ({}, 1), "note.md": ({"tags": ["pumps"]}, 4)}
    assert sorted(lexical_paths(db, AnalyzerSet(), "frontdoor")) == ["deploy/app.yaml", "note.md"]
    check_invariants(db)
