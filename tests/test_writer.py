"""The single writer: a short job of another collection runs between a long run's
batches (an edit is not kept waiting behind a big `collection add`); one of the same
collection waits for the run to end."""

from __future__ import annotations

import asyncio
import os
import threading

import apsw

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


def test_titles_taken_by_older_rules_are_taken_again_from_what_is_stored(tmp_path):
    """An index written before reStructuredText titles were read keeps a page's old title
    (a shell comment in a literal block) until its file changes: the writer takes the
    prose documents' titles again from the stored text, once per change of the rules
    (markdown.TITLE_RULES, in schema_meta), and the lexical index takes each changed one."""
    from gnod.ingest import titles
    from gnod.ingest.markdown import TITLE_RULES

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
    finally:
        writer.close()
