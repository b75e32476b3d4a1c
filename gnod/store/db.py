"""SQLite connections through APSW: WAL, busy timeout, foreign keys, extension loading.

APSW (not the stdlib sqlite3) because it bundles a current SQLite and can load
extensions such as sqlite-vec.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import apsw

from gnod.store.tags import has_tag
from gnod.text.analyzer import fold
from gnod.text.dates import iso_day, iso_named_day

BUSY_TIMEOUT_MS = 5_000
DAY_FUNCTION = "gno_day"  # SQL's text.dates.iso_day (connect)
NAMED_DAY_FUNCTION = "gno_named_day"  # SQL's text.dates.iso_named_day (connect)
FOLD_FUNCTION = "gno_fold"  # SQL's analyzer.fold of a text in lower case (connect)
TAG_FUNCTION = "gno_has_tag"  # SQL's tags.has_tag (connect)
READER_MMAP_BYTES = 8 << 30  # address space only: pages are mapped as read
# A rewrite that leaves more than this share of the file's pages free gives them back
# (reclaim_freed): definitions parsed again after an upgrade left 1 % of the kernel
# tree's index free and its WAL at 12 MB (2 % of the index on disk, until reused).
RECLAIM_FREE_SHARE = 0.005
# What the WAL keeps on disk once checkpointed (journal_size_limit): a burst of writes (a
# collection's ingest, every definition parsed again) grew it to 10-12 MB on the kernel
# tree, kept until gnod stopped; this is about what SQLite's automatic checkpoint lets it
# reach between two (1,000 pages), so steady writes do not shrink and grow it each time.
WAL_KEEP_BYTES = 4 << 20
# Values bound one `?` each in an `IN (…)` list (in_list); more go as one JSON array. A
# statement takes at most 32,766 (SQLITE_MAX_VARIABLE_NUMBER): `search -n 100000
# --files include` failed with "too many SQL variables".
IN_BINDS_MAX = 500


def in_list(values: Sequence[int | str]) -> tuple[str, list[int | str] | list[str]]:
    """`(… )` for `x IN (…)` and the values it binds: a `?` each for a search's few hits,
    one JSON array that json_each reads for many."""
    if len(values) <= IN_BINDS_MAX:
        return f"({','.join('?' * len(values))})", list(values)
    return "(SELECT value FROM json_each(?))", [json.dumps(list(values))]


def connect(path: str, *, readonly: bool = False) -> apsw.Connection:
    """Open the index. Writers create it; readers get a read-only handle."""
    if readonly:
        flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    else:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_URI
    conn = apsw.Connection(path, flags=flags)
    conn.setbusytimeout(BUSY_TIMEOUT_MS)
    conn.enable_load_extension(True)
    if not readonly:
        # Only takes effect on a new file (before its first table); older files convert in reclaim().
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA journal_size_limit={WAL_KEEP_BYTES}")
    # Where a document's frontmatter date is no ISO day (`03.11.2025`), SQL reads it so:
    # filters.DOC_DATE, as the lexical index's day (lexical_index.document_day).
    conn.createscalarfunction(DAY_FUNCTION, iso_day, 1, deterministic=True)
    conn.createscalarfunction(NAMED_DAY_FUNCTION, iso_named_day, 1, deterministic=True)
    # A sender's text as `--from` compares it (documents.sender_key).
    conn.createscalarfunction(FOLD_FUNCTION, _folded, 1, deterministic=True)
    # Whether a document has a tag, as `--tag` compares it (tags.tag_key).
    conn.createscalarfunction(TAG_FUNCTION, has_tag, 2, deterministic=True)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute("PRAGMA cache_size=-65536")
    if readonly:
        # Every commit empties a reader's page cache: mapped pages are read back without a copy.
        conn.execute(f"PRAGMA mmap_size={READER_MMAP_BYTES}")
    return conn


def _folded(text: object) -> object:
    return fold(text.lower()) if isinstance(text, str) else text


def reclaim(conn: apsw.Connection) -> None:
    """Give the pages freed by a big deletion back to the file system (the file shrinks).

    SQLite otherwise keeps them for reuse: a removed collection would leave the index
    its full size. An index made before incremental auto-vacuum is converted by one
    VACUUM; after that, `incremental_vacuum` releases only the free pages. The
    checkpoint moves the result from the WAL into the (now shorter) main file.
    """
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:  # incremental
        conn.execute("PRAGMA incremental_vacuum").fetchall()  # one page per step: run them all
    else:
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        # VACUUM builds the new file in a temporary database: on disk, not in memory as
        # the connection's own temporary tables are (an older gno's 2 GB kernel index
        # held 1.5 GB of memory for the minutes of an upgrade).
        conn.execute("PRAGMA temp_store=FILE")
        try:
            conn.execute("VACUUM")
        finally:
            conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def empty_wal(conn: apsw.Connection) -> None:
    """Checkpoint the WAL and cut it to nothing, after a burst of writes (a collection's
    run, definitions parsed): the WAL_KEEP_BYTES journal_size_limit keeps for the next
    burst stayed on disk at rest. Where a reader is still on an older snapshot it is left
    for the next time, without waiting: the writer's thread serves every write."""
    conn.setbusytimeout(0)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except apsw.BusyError:
        pass
    finally:
        conn.setbusytimeout(BUSY_TIMEOUT_MS)


def reclaim_freed(conn: apsw.Connection) -> bool:
    """reclaim() where more than RECLAIM_FREE_SHARE of the file's pages are free (after a
    rewrite of many rows, as every content's definitions parsed again); whether it ran."""
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    if free <= RECLAIM_FREE_SHARE * conn.execute("PRAGMA page_count").fetchone()[0]:
        return False
    reclaim(conn)
    return True
