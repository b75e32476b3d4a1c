"""A collection's indexed stats, kept between index runs while the database is unchanged.

A no-op update of a big tree compares one stat per file with what is indexed; reading
what is indexed (76k rows made into a dict) was a sixth of its time. The rows are kept
with the database's stamp when they were read and read again only once it moved: any
row this connection changed (`total_changes`, which a rolled-back change also moves) or
a commit by another connection (`PRAGMA data_version`). Whatever wrote, the stamp moves:
nothing stale is used, at the cost of reading again after any write.
"""

from __future__ import annotations

import weakref

import apsw

from gnod.store.documents import DocState, doc_states

_kept: weakref.WeakKeyDictionary[apsw.Connection, dict[int, tuple[tuple[int, int], dict[str, DocState]]]] = (
    weakref.WeakKeyDictionary()
)


def stamp(conn: apsw.Connection) -> tuple[int, int]:
    """What moves whenever a row of the database changes, through `conn` or another."""
    return conn.total_changes(), conn.execute("PRAGMA data_version").fetchone()[0]


def collection_states(conn: apsw.Connection, collection_id: int) -> dict[str, DocState]:
    """`doc_states` of the whole collection, as read last time if nothing has changed
    since. The dict is shared between runs: callers only read it."""
    now = stamp(conn)
    by_collection = _kept.setdefault(conn, {})
    kept = by_collection.get(collection_id)
    if kept is not None and kept[0] == now:
        return kept[1]
    states = doc_states(conn, collection_id)
    by_collection.clear()  # one collection's at a time: the memory of one dict, not of all
    by_collection[collection_id] = (now, states)
    return states
