"""The index's SQLite connections: what a writer leaves on disk."""

from __future__ import annotations

import os

from gnod.store.db import WAL_KEEP_BYTES, connect


def test_a_burst_of_writes_leaves_the_wal_no_bigger_than_it_keeps(tmp_path):
    """A big transaction grows the WAL past SQLite's checkpoint; once checkpointed, the
    next write starts it again from the top and cuts it to WAL_KEEP_BYTES (it stayed at
    its largest, 10 MB of the kernel tree's index, until gnod stopped)."""
    path = str(tmp_path / "index.sqlite")
    conn = connect(path)
    conn.execute("CREATE TABLE t(x BLOB)")
    with conn:
        for _ in range(48):
            conn.execute("INSERT INTO t VALUES (?)", (os.urandom(256 << 10),))
    wal = path + "-wal"
    assert os.path.getsize(wal) > 3 * WAL_KEEP_BYTES
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    with conn:
        conn.execute("INSERT INTO t VALUES (x'00')")
    assert 0 < os.path.getsize(wal) <= WAL_KEEP_BYTES
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 49
