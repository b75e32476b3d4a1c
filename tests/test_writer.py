"""The single writer: a short job of another collection runs between a long run's
batches (an edit is not kept waiting behind a big `collection add`); one of the same
collection waits for the run to end."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable

import apsw
import pytest

from conftest import lexical_ids
from gnod.config import CollectionConfig
from gnod.ingest import pipeline
from gnod.ingest.pipeline import index_paths
from gnod.server.jobs import Writer
from gnod.store import documents as store


def test_an_edit_elsewhere_runs_between_the_batches_of_a_long_run(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "BATCH_SECONDS", 0.0)  # every document is a batch of its own
    big, small = tmp_path / "big", tmp_path / "small"
    big.mkdir()
    small.mkdir()
    for i in range(50):
        (big / f"f{i:04d}.md").write_text(f"# File {i}\n\nplain words number {i} for the long run\n")
    (small / "note.md").write_text("# Note\n\nquokka sightings\n")
    cols = {
        c.name: c
        for c in (CollectionConfig(name="big", path=str(big)), CollectionConfig(name="small", path=str(small)))
    }
    writer = Writer(str(tmp_path / "index.sqlite"), ingest_workers=0)
    writer.open()
    started = threading.Event()
    queued = threading.Event()

    def progress(phase: str, done: int, total: int, path: str, pace) -> None:
        if phase == "scan":  # hold the long run (on the writer thread) until the short jobs are queued
            started.set()
            queued.wait(10)

    def paths_job(name: str):
        return lambda conn: index_paths(conn, writer.analyzers, cols[name], ["note.md"], lex=writer.lexical)

    async def scenario() -> tuple[list[str], dict]:
        await writer.reconcile_lexical(lambda: None)
        await writer.sync_collections(list(cols.values()))
        order: list[str] = []
        seen: dict = {}
        long_run = asyncio.create_task(writer.index(cols["big"], progress))
        long_run.add_done_callback(lambda _t: order.append("big done"))
        await asyncio.to_thread(started.wait, 10)
        (big / "note.md").write_text("# Late\n\nwombat\n")

        async def short(name: str) -> None:
            await writer.run_content(paths_job(name), aside=name)
            order.append(f"{name} edit")
            if name == "small":
                seen["big running"] = writer.job.running
                assert writer._conn is not None
                (note,) = writer._conn.execute(
                    "SELECT d.id FROM documents d JOIN collections c ON c.id = d.collection_id WHERE c.name = 'small'"
                ).fetchall()
                seen["searchable"] = note[0] in lexical_ids(writer.lexical)

        edits = [asyncio.create_task(short("big")), asyncio.create_task(short("small"))]
        await asyncio.sleep(0.1)  # both are queued on the writer
        queued.set()
        await asyncio.gather(long_run, *edits)
        return order, seen

    try:
        order, seen = asyncio.run(scenario())
        assert order == ["small edit", "big done", "big edit"]
        assert seen == {"big running": True, "searchable": True}
        conn = writer._conn
        assert conn is not None
        assert {r[0] for r in conn.execute("SELECT rel_path FROM documents")} >= {"note.md", "f0000.md", "f0049.md"}
        assert len(store.collection_ids(conn)) == 2
    finally:
        writer.close()


def test_a_whole_collection_run_gives_its_memory_back(tmp_path):
    """After a whole collection's run (an ingest, a rescan) and the start's look for content
    to compress, the writer connection's page cache goes back to the system: a big ingest
    filled it to cache_size, a no-op rescan with every document's state, the look with the
    whole content table. What it read is in the OS's cache still."""
    root = tmp_path / "notes"
    root.mkdir()
    for i in range(30):  # words that do not compress: pages of content to read
        (root / f"n{i:02d}.md").write_text(f"# Note {i}\n\n" + " ".join(os.urandom(4).hex() for _ in range(600)) + "\n")
    col = CollectionConfig(name="notes", path=str(root))
    writer = Writer(str(tmp_path / "index.sqlite"), ingest_workers=0)
    writer.open()

    def cache_used(conn: apsw.Connection) -> int:
        return conn.status(apsw.SQLITE_DBSTATUS_CACHE_USED)[0]

    async def scenario() -> tuple[int, int, int, int]:
        await writer.reconcile_lexical(lambda: None)
        await writer.sync_collections([col])
        page = await writer.run(lambda conn: conn.execute("PRAGMA page_size").fetchone()[0])
        added = (await writer.index(col, None)).added
        after_run = await writer.run(cache_used)
        await writer.pack_old_content()  # at every start: it reads the whole content table
        return page, added, after_run, await writer.run(cache_used)

    try:
        page, added, after_run, after_start = asyncio.run(scenario())
        assert added == 30 and after_run < 8 * page, after_run  # 30 documents' pages were written through it
        assert after_start < 8 * page, after_start
    finally:
        writer.close()


def test_titles_taken_by_older_rules_are_taken_again_from_what_is_stored(tmp_path, monkeypatch):
    """An index written before reStructuredText titles were read keeps a page's old title
    (a shell comment in a literal block) until its file changes: the writer takes the
    prose documents' titles again from the stored text, once per change of the rules
    (markdown.TITLE_RULES, in schema_meta), and the lexical index takes each changed one.
    Meanwhile `status` says so (Writer.upkeep: how far it is), and nothing after."""
    from gnod.ingest import titles
    from gnod.ingest.markdown import TITLE_RULES

    monkeypatch.setattr(titles, "RETITLE_BATCH", 1)  # a batch a document: the upkeep seen between them
    said: list[str | None] = []
    retitle = titles.retitle

    def watched(conn: apsw.Connection, after: int):
        said.append(writer.upkeep)
        return retitle(conn, after)

    monkeypatch.setattr(titles, "retitle", watched)

    root = tmp_path / "docs"
    root.mkdir()
    (root / "sched.rst").write_text("========\nDeadline\n========\n\nRun::\n\n  # rt-app -t 1\n")
    (root / "guide.md").write_text("# Guide\n\nText.\n")
    (root / "main.c").write_text("# define X 1\nint x;\n")
    col = CollectionConfig(name="docs", path=str(root))
    writer = Writer(str(tmp_path / "index.sqlite"), ingest_workers=0)
    writer.open()

    def titled(conn: apsw.Connection) -> dict[str, str]:
        return dict(conn.execute("SELECT rel_path, title FROM documents").fetchall())

    def stale(conn: apsw.Connection) -> None:  # as the rules before this one left it
        with conn:
            conn.execute("UPDATE documents SET title = '# rt-app -t 1' WHERE rel_path = 'sched.rst'")
            store.set_meta_value(conn, "title_rules", str(TITLE_RULES - 1))

    async def scenario() -> list:
        await writer.reconcile_lexical(lambda: None)
        await writer.sync_collections([col])
        await writer.index(col, None)
        fresh = await writer.run(titled)
        await writer.retitle()  # a new index: its titles are today's already
        await writer.run(stale)
        due = await writer.run(titles.due)
        await writer.retitle()
        pending = await writer.run(lambda conn: conn.execute("SELECT count(*) FROM lexical_pending").fetchone()[0])
        return [fresh, due, await writer.run(titled), await writer.run(titles.due), pending]

    try:
        fresh, due, after, due_after, pending = asyncio.run(scenario())
        expected = {"sched.rst": "Deadline", "guide.md": "Guide", "main.c": "main"}
        assert fresh == expected and due is True
        assert after == expected and due_after is False and pending == 0
        going = "taking the prose documents' titles again"
        assert said == 2 * [None, f"{going}: 1 row so far", f"{going}: 2 rows so far"]
        assert writer.upkeep is None
    finally:
        writer.close()


def test_files_read_by_older_rules_are_read_again_once_when_the_index_opens(tmp_path, monkeypatch):
    """An index written before TOML frontmatter was read, and while a YAML file's first
    document was taken for frontmatter, keeps what those readings gave until each file
    changes. Opening it marks the documents an older gno read (documents.read_rules) of
    the kinds read otherwise since (reread.READINGS; a code file only where it was read
    with frontmatter), and a container holding one; the next walk reads them again, and
    they come out as a fresh index of today's reads them (lexical index, body line and
    chunks alike). Once; and each document by the gno that read it last (an index went
    back to an older gno and forward again kept what the older one read)."""
    import zipfile

    from conftest import lexical_paths_in
    from gnod.ingest import markdown, prepare

    root = tmp_path / "site"
    root.mkdir()
    (root / "post.md").write_text('+++\ntitle = "Pumps"\ntags = ["garden"]\n+++\nThe pump of the pond.\n')
    (root / "app.yaml").write_text("---\nkind: Service\nname: frontdoor\n---\nkind: Deployment\n")
    (root / "main.c").write_text("int main(void) { return 0; }\n")
    with zipfile.ZipFile(root / "notes.zip", "w") as z:  # its first member is read as it was
        z.writestr("a.c", "int pond;\n")
        z.writestr("z.md", '+++\ntitle = "Zinc"\n+++\nZinc plating.\n')
    col = CollectionConfig(name="site", path=str(root))

    def indexed(path) -> tuple[dict, object]:
        """Open the index at `path` (a Writer, as gnod starts), walk the collection: what
        each document holds, and the walk's counts."""
        writer = Writer(str(path), ingest_workers=0)
        writer.open()

        def held(conn: apsw.Connection) -> dict:
            rows = conn.execute(
                "SELECT d.rel_path, d.title, d.metadata, c.body_line, c.id FROM documents d "
                "JOIN content c ON c.mirror_hash = d.mirror_hash"
            ).fetchall()
            chunks = (
                "SELECT seq, pos, length, start_line, end_line FROM content_chunks WHERE content_id = ? ORDER BY seq"
            )
            found = {q: lexical_paths_in(writer.lexical, conn, writer.analyzers, q) for q in ("frontdoor", "garden")}
            return {
                "documents": {r[0]: (r[1], r[2], r[3], conn.execute(chunks, (r[4],)).fetchall()) for r in rows},
                "found": found,
            }

        async def scenario():
            await writer.reconcile_lexical(lambda: None)
            await writer.sync_collections([col])
            stats = await writer.index(col, None)
            return await writer.run(held), stats

        try:
            return asyncio.run(scenario())
        finally:
            writer.close()

    fresh, _ = indexed(tmp_path / "fresh.sqlite")
    old = tmp_path / "old.sqlite"
    with monkeypatch.context() as m:  # the readings of an older gno
        m.setattr(markdown, "_split_toml", lambda text: ({}, text, 0))
        m.setattr(prepare, "CODE_EXTENSIONS", frozenset())
        stale, _ = indexed(old)
    conn = apsw.Connection(str(old))
    conn.execute("UPDATE documents SET read_rules = 1")  # as the older gno that read them left them
    conn.close()
    again, stats = indexed(old)
    _, later = indexed(old)
    conn = apsw.Connection(str(old))  # an older gno ran on it again, and read post.md anew
    conn.execute("UPDATE documents SET read_rules = 1 WHERE rel_path = 'post.md'")
    conn.close()
    _, back = indexed(old)
    assert stale["found"]["frontdoor"] == [] and stale["documents"]["post.md"][1] == "{}"
    assert again == fresh and fresh["found"] == {"frontdoor": ["app.yaml"], "garden": ["post.md"]}
    assert fresh["documents"]["notes.zip!/z.md"][0] == "Zinc"
    assert (stats.updated, stats.unchanged) == (3, 2)  # post.md, app.yaml, z.md; main.c, a.c
    assert (later.updated, later.unchanged) == (0, 5)  # the zip unchanged counts its two documents
    assert (back.updated, back.unchanged) == (1, 4)


def _indexed(path: str, col: CollectionConfig, word: str):
    """Open the index at `path` as gnod starts (a Writer), walk `col`: the documents the
    lexical index finds by `word`, and the walk's counts."""
    from conftest import lexical_paths_in

    writer = Writer(path, ingest_workers=0)
    writer.open()

    async def scenario():
        await writer.reconcile_lexical(lambda: None)
        await writer.sync_collections([col])
        stats = await writer.index(col, None)
        found = await writer.run(lambda conn: lexical_paths_in(writer.lexical, conn, writer.analyzers, word))
        return found, stats

    try:
        return asyncio.run(scenario())
    finally:
        writer.close()


def test_a_text_read_as_latin_1_before_legacy_charsets_is_read_again(tmp_path, monkeypatch):
    """A Shift_JIS note indexed as Latin-1 mojibake stays so until it changes, unless
    the index's opening marks it (its Latin-1 letters come in runs); a note in ASCII,
    or in UTF-8 with its accented letters one at a time, is not read again."""
    from gnod.ingest import convert

    root = tmp_path / "notes"
    root.mkdir()
    (root / "osaka.txt").write_bytes("大阪に行きました。たこ焼きがおいしかった。".encode("shift_jis"))
    (root / "plain.txt").write_text("Nothing but ASCII here.\n")
    (root / "cafe.txt").write_text("Un café crème, s'il vous plaît.\n")  # UTF-8: read so before too
    col = CollectionConfig(name="notes", path=str(root))
    path = str(tmp_path / "index.sqlite")

    with monkeypatch.context() as m:  # the reading of an older gno
        m.setattr(convert, "decode_legacy", lambda data, declared=None: data.decode("latin-1"))
        stale, _ = _indexed(path, col, "大阪")
    conn = apsw.Connection(path)
    conn.execute("UPDATE documents SET read_rules = 2")  # the rules before legacy charsets
    conn.close()
    again, stats = _indexed(path, col, "大阪")
    assert stale == [] and again == ["osaka.txt"]
    assert (stats.updated, stats.unchanged) == (1, 2)


def test_a_text_that_failed_as_binary_before_utf16_without_a_bom_was_read_is_tried_again(tmp_path, monkeypatch):
    """A note a Windows tool saved as UTF-16 without a byte order mark failed as binary;
    an index opened by a gno that reads it tries it again once, and not the texts read."""
    from gnod.ingest import convert

    root = tmp_path / "notes"
    root.mkdir()
    (root / "auen.txt").write_bytes("Überschwemmungsgebiet und Auen.\r\n".encode("utf-16-le"))
    (root / "plain.txt").write_text("Nothing but ASCII here.\n")
    col = CollectionConfig(name="notes", path=str(root))
    path = str(tmp_path / "index.sqlite")

    with monkeypatch.context() as m:  # the reading of an older gno
        m.setattr(convert, "_utf16_without_bom", lambda data: None)
        stale, stale_stats = _indexed(path, col, "auen")
    conn = apsw.Connection(path)
    conn.execute("UPDATE documents SET read_rules = 4")
    conn.execute("UPDATE schema_meta SET value = '4' WHERE key = 'failures_read_rules'")
    conn.close()
    again, stats = _indexed(path, col, "auen")
    assert stale == [] and stale_stats.errors == 1
    assert again == ["auen.txt"] and (stats.added, stats.updated, stats.unchanged, stats.errors) == (1, 0, 1, 0)


def test_a_gzip_file_that_failed_as_binary_before_is_tried_again(tmp_path, monkeypatch):
    """A rotated log an `also` glob took failed as binary while gno read a gzip file's
    own bytes: an index opened by a gno that reads the file it holds tries it again."""
    import gzip

    from gnod.ingest import convert

    root = tmp_path / "logs"
    root.mkdir()
    (root / "syslog.2.gz").write_bytes(gzip.compress(b"Nov 29 sshd[123]: Failed password for root\n"))
    col = CollectionConfig(name="logs", path=str(root), also=["*.gz"])
    path = str(tmp_path / "index.sqlite")

    with monkeypatch.context() as m:  # the reading of an older gno
        m.setattr(convert, "_GZIP_MAGIC", b"not gzip")
        stale, stale_stats = _indexed(path, col, "sshd")
    conn = apsw.Connection(path)
    conn.execute("UPDATE schema_meta SET value = '6' WHERE key = 'failures_read_rules'")
    conn.close()
    again, stats = _indexed(path, col, "sshd")
    assert stale == [] and stale_stats.errors == 1
    assert again == ["syslog.2.gz"] and (stats.added, stats.errors) == (1, 0)


def _c_files_writer(tmp_path, n: int) -> tuple[CollectionConfig, Writer]:
    """A collection of `n` one-function C files and an open writer (no ingest pool)."""
    root = tmp_path / "src"
    root.mkdir()
    for i in range(n):
        (root / f"f{i}.c").write_text(f"int f{i}(void) {{ return {i}; }}\n")
    writer = Writer(str(tmp_path / "index.sqlite"), ingest_workers=0)
    writer.open()
    return CollectionConfig(name="src", path=str(root)), writer


def _read_on(writer: Writer, before: Callable[[], object] = lambda: None) -> Callable:
    """Daemon.read's stand-in for a backlog: fn(conn, analyzers) on a read-only
    connection of its own, `before()` first."""
    from gnod.store.db import connect

    async def read(fn):
        before()
        conn = connect(writer.db_path, readonly=True)
        try:
            return fn(conn, None)
        finally:
            conn.close()

    return read


def test_the_definitions_eta_leaves_out_the_first_batch(tmp_path, monkeypatch):
    """The first batch's time is mostly the parsing workers starting: timed with the
    others, it made an ETA of 20 h for a parse of 4 min (an upgraded kernel index). The
    rate is the batches' after it: none is said until the second batch is done."""
    from gnod.server import symbols as backlog
    from gnod.store import symbols as symstore

    col, writer = _c_files_writer(tmp_path, 6)
    monkeypatch.setattr(backlog, "BATCH_CONTENTS", 2)  # three batches
    rates: list[float | None] = []
    put = symstore.put

    def watched(conn: apsw.Connection, items):
        rates.append(parsing.rate)  # the rate said while this batch is stored
        return put(conn, items)

    monkeypatch.setattr(symstore, "put", watched)

    parsing = backlog.Symbols(writer, _read_on(writer))

    async def scenario() -> None:
        await writer.reconcile_lexical(lambda: None)
        await writer.sync_collections([col])
        await writer.index(col, None)
        await parsing._cycle(asyncio.Event())

    try:
        asyncio.run(scenario())
    finally:
        writer.close()
    assert parsing.parsed == 6 and len(rates) == 3
    assert rates[:2] == [None, None] and rates[2] is not None and rates[2] > 0


def test_status_says_definitions_are_being_parsed_from_a_change_until_its_backlog_is_read(tmp_path):
    """Between an index job's end and the look at the backlog (a while on a big tree),
    `pending` was still 0: status said nothing was being parsed, and `search --symbol`
    had no note, while none of the new files' definitions were found."""
    from gnod.server import symbols as backlog

    col, writer = _c_files_writer(tmp_path, 3)
    seen: list[tuple[bool, str | None]] = []

    # What status and a search's note say while each look reads the backlog.
    parsing = backlog.Symbols(
        writer, _read_on(writer, lambda: seen.append((parsing.info().parsing, parsing.lag_note())))
    )

    async def scenario() -> list[tuple[bool, str | None]]:
        await writer.reconcile_lexical(lambda: None)
        await writer.sync_collections([col])
        await parsing._cycle(asyncio.Event())  # gnod's first look: nothing indexed yet
        looked = [(parsing.info().parsing, parsing.lag_note())]
        await writer.index(col, None)
        parsing.changed()  # as the writer's listener does once the job is over
        looked.append((parsing.info().parsing, parsing.lag_note()))
        await parsing._cycle(asyncio.Event())
        looked.append((parsing.info().parsing, parsing.lag_note()))
        return looked

    try:
        before, after_job, parsed = asyncio.run(scenario())
    finally:
        writer.close()
    assert before == (False, None) and parsed == (False, None)
    assert after_job[0] and "still being parsed" in (after_job[1] or "")
    assert all(looking for looking, _ in seen)  # each look, until its backlog is read
    assert parsing.parsed == 3 and parsing.pending == 0


@pytest.mark.parametrize("edited", ["as the watch is replaced", "once it is"])
def test_an_edit_waits_for_no_long_run_of_another_collection_while_the_watch_is_replaced(tmp_path, monkeypatch, edited):
    """Adding a collection replaces the watch over every root while the new collection's
    long run holds the writer. An edit of another collection is indexed between the run's
    batches, not after the whole run (50 busy clients' edits waited out a 20 s add): one
    made once the new watch is live, and one made as it replaces the old, which the old
    hands over (it stopped at once, and the edit waited for a rescan behind the run)."""
    from gnod.server.watcher import Watcher

    monkeypatch.setattr(pipeline, "BATCH_SECONDS", 0.0)  # every document is a batch of its own
    big, notes = tmp_path / "big", tmp_path / "notes"
    big.mkdir()
    notes.mkdir()
    for i in range(50):
        (big / f"f{i:04d}.md").write_text(f"# File {i}\n\nplain words number {i} for the long run\n")
    (notes / "n.md").write_text("# Note\n\nquokka sightings\n")
    cols = {
        c.name: c
        for c in (CollectionConfig(name="big", path=str(big)), CollectionConfig(name="notes", path=str(notes)))
    }
    writer = Writer(str(tmp_path / "index.sqlite"), ingest_workers=0)
    writer.open()
    committed: list[str] = []  # the collection of each commit that changed documents, in order
    writer.on_changes = lambda name, _changes: committed.append(name)
    held, release = threading.Event(), threading.Event()

    def progress(phase: str, done: int, total: int, path: str, pace) -> None:
        if phase == "scan":  # hold the long run (on the writer thread) until the edit is seen
            held.set()
            release.wait(10)

    async def scenario() -> list[str]:
        await writer.reconcile_lexical(lambda: None)
        await writer.sync_collections([cols["notes"]])
        await writer.index(cols["notes"], None)
        watcher = Watcher(writer, [], cols.get)
        try:
            watcher.sync([cols["notes"]])
            await watcher.wait_ready("notes")
            await writer.sync_collections(list(cols.values()))
            long_run = asyncio.create_task(writer.index(cols["big"], progress))
            await asyncio.to_thread(held.wait, 10)
            watcher.sync(list(cols.values()))  # new roots: the watch is replaced
            if edited == "as the watch is replaced":
                (notes / "n.md").write_text("# Note\n\nwombat sightings\n")
            await watcher.wait_ready("big")
            if edited == "once it is":
                (notes / "n.md").write_text("# Note\n\nwombat sightings\n")
            for _ in range(300 if edited == "once it is" else 0):  # until the watch has taken the edit
                if watcher.freshness("notes").changes:
                    break
                await asyncio.sleep(0.01)
            committed.clear()
            release.set()
            await long_run
            await watcher.wait_idle(["notes"], 10)
            return committed
        finally:
            await watcher.close()

    try:
        committed = asyncio.run(scenario())
        assert committed.count("notes") == 1 and committed[-1] == "big", committed  # between the run's batches
        conn = writer._conn
        assert conn is not None
        (size,) = conn.execute("SELECT size FROM documents WHERE rel_path = 'n.md'").fetchone()
        assert size == (notes / "n.md").stat().st_size
    finally:
        writer.close()


def test_pdfs_and_office_files_are_read_again_for_their_titles_but_not_scans(tmp_path):
    """PDFs, DOCX and PPTX files an older gno read are read again once (their metadata
    titles, Word's Title style, a slide's marker); a scanned PDF, whose text OCR read and
    whose reading is the same, is not: it would be OCRed again, seconds a page."""
    from fpdf import FPDF

    from gnod.ingest import reread
    from gnod.store.documents import pack

    root = tmp_path / "papers"
    root.mkdir()
    for name in ("report.pdf", "scan.pdf"):
        pdf = FPDF()
        pdf.set_title("Quarterly Grant Report")
        pdf.add_page()
        pdf.set_font("helvetica", size=12)
        pdf.multi_cell(0, 10, text=f"The text of {name}.")
        (root / name).write_bytes(bytes(pdf.output()))
    (root / "note.txt").write_text("Note\n\nA plain note.\n")  # no reading since 3 reads it otherwise
    col = CollectionConfig(name="papers", path=str(root))
    writer = Writer(str(tmp_path / "index.sqlite"), ingest_workers=0)
    writer.open()

    async def scenario() -> None:
        await writer.reconcile_lexical(lambda: None)
        await writer.sync_collections([col])
        await writer.index(col, None)

    try:
        asyncio.run(scenario())
        conn = writer._conn
        assert conn is not None
        with conn:  # as OCR stores a scan's pages, and as the gno before these readings left them
            conn.execute(
                "UPDATE content SET markdown = ? WHERE mirror_hash = "
                "(SELECT mirror_hash FROM documents WHERE rel_path = 'scan.pdf')",
                (pack("## Page 1\n\nThe text of scan.pdf.\n"),),
            )
            conn.execute("UPDATE documents SET read_rules = 3")
        with conn:
            assert reread.mark(conn) == 1
        again = {r[0] for r in conn.execute("SELECT rel_path FROM documents WHERE inode = -1")}
        assert again == {"report.pdf"}
    finally:
        writer.close()
