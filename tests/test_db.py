"""The index's SQLite connections: what a writer leaves on disk."""

from __future__ import annotations

import os

from conftest import write_tree
from gnod.store.db import WAL_KEEP_BYTES, connect, empty_wal


def burst(path: str, blobs: int):
    """A writer's connection to a new index at `path`, after one transaction of `blobs`
    random 256 KB rows."""
    conn = connect(path)
    conn.execute("CREATE TABLE t(x BLOB)")
    with conn:
        for _ in range(blobs):
            conn.execute("INSERT INTO t VALUES (?)", (os.urandom(256 << 10),))
    return conn


def test_a_burst_of_writes_leaves_the_wal_no_bigger_than_it_keeps(tmp_path):
    """A big transaction grows the WAL past SQLite's checkpoint; once checkpointed, the
    next write starts it again from the top and cuts it to WAL_KEEP_BYTES (it stayed at
    its largest, 10 MB of the kernel tree's index, until gnod stopped)."""
    path = str(tmp_path / "index.sqlite")
    conn = burst(path, 48)
    wal = path + "-wal"
    assert os.path.getsize(wal) > 3 * WAL_KEEP_BYTES
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    with conn:
        conn.execute("INSERT INTO t VALUES (x'00')")
    assert 0 < os.path.getsize(wal) <= WAL_KEEP_BYTES
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 49


def test_at_rest_the_wal_is_emptied_unless_a_reader_holds_it_and_the_writer_never_waits(tmp_path):
    """After a burst of writes (a collection's run, definitions parsed), what the WAL
    keeps for the next burst goes back to the file system: the kernel tree's index
    kept 4 MB of it for good. A reader still on an older snapshot keeps it, and the
    writer does not wait for that reader (its thread serves every write)."""
    import time

    path = str(tmp_path / "index.sqlite")
    conn = burst(path, 24)
    wal = path + "-wal"
    assert os.path.getsize(wal) > 0
    empty_wal(conn)
    assert os.path.getsize(wal) == 0
    reader = connect(path, readonly=True)
    with conn:
        conn.execute("INSERT INTO t VALUES (x'00')")
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM t").fetchone()[0] == 25  # a snapshot held
    with conn:
        conn.execute("INSERT INTO t VALUES (x'01')")
    t0 = time.monotonic()
    empty_wal(conn)
    assert time.monotonic() - t0 < 1.0 and os.path.getsize(wal) > 0
    reader.execute("COMMIT")
    empty_wal(conn)
    assert os.path.getsize(wal) == 0
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 26


def test_a_list_of_more_ids_than_sqlite_binds_reads_them_all(db, tmp_path):
    """`search -n 100000 --files include` on the kernel tree (61,686 hits) failed with
    "too many SQL variables": a statement binds at most 32,766 values."""
    from gnod.config import CollectionConfig
    from gnod.ingest.pipeline import index_collection
    from gnod.store import documents
    from gnod.text.analyzer import AnalyzerSet

    root = write_tree(str(tmp_path / "tree"), {f"f{i}.c": f"int f{i}(void) {{ return {i}; }}\n" for i in range(3)})
    index_collection(db, AnalyzerSet(), CollectionConfig(name="t", path=root))
    ids = [r[0] for r in db.execute("SELECT id FROM documents ORDER BY id")]
    many = list(range(1, 40_000)) + ids
    assert sorted(documents.docs_with_contents(db, many)) == ids
    assert sorted(documents.docs_by_ids(db, many)) == ids


def test_converting_an_older_index_builds_its_new_file_on_disk_not_in_memory(tmp_path):
    """An index from before incremental auto-vacuum is converted by one VACUUM, which
    builds the new file in a temporary database: with the connection's temp_store=MEMORY
    that was in memory, an older gno's 2 GB kernel index held 1.5 GB through an upgrade.
    Here a 200 MB one: the converting process stays under that size, and the connection
    keeps its in-memory temporary tables afterwards."""
    import subprocess
    import sys

    import apsw

    path = str(tmp_path / "old.sqlite")
    old = apsw.Connection(path)  # as an older gno made it: no auto_vacuum
    old.execute("CREATE TABLE t(x BLOB)")
    with old:
        for _ in range(200):
            old.execute("INSERT INTO t VALUES (randomblob(1000000))")
    old.close()
    script = (  # VmHWM: this process's peak (ru_maxrss counts the forking parent's pages too)
        "import sys\n"
        "from gnod.store.db import connect, reclaim\n"
        "conn = connect(sys.argv[1]); reclaim(conn)\n"
        "peak = next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:'))\n"
        "print(conn.execute('PRAGMA auto_vacuum').fetchone()[0], conn.execute('PRAGMA temp_store').fetchone()[0],"
        " peak // 1024)\n"
    )
    r = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True, check=True)
    incremental, temp_store, peak_mb = map(int, r.stdout.split())
    assert (incremental, temp_store) == (2, 2)  # converted; MEMORY again
    assert peak_mb < 200, peak_mb
