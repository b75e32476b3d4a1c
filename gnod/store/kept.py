"""Reads kept per connection while the database is unchanged.

Some reads are asked again and again with nothing written in between, and cost more
than the work they feed:
- a collection's indexed stats (`collection_states`): a no-op update of a big tree
  compares one stat per file with what is indexed, and reading that (76k rows made into
  a dict) was a sixth of its time;
- the documents a path glob with no literal start or end matches (`path_glob_ids`,
  SQLite's GLOB over every path: ~9 ms on the kernel tree's 78k), which an editor's
  search sends again with every key typed.
A read is kept with the database's stamp when it was made, and made again only once the
stamp moved: any row this connection changed (`total_changes`, which a rolled-back change
also moves) or a commit by another connection (`PRAGMA data_version`). Whatever wrote,
the stamp moves: nothing stale is used, at the cost of reading again after any write.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import apsw

from gnod.search.constants import PATH_GLOBS_KEPT
from gnod.store.documents import DocState, doc_states, ids_by_path_glob

T = TypeVar("T")
Stamp = tuple[int, int]

# Per connection, per kind of read: its key → (the stamp it was read at, what it read).
_kept: weakref.WeakKeyDictionary[apsw.Connection, dict[str, dict[Hashable, tuple[Stamp, Any]]]] = (
    weakref.WeakKeyDictionary()
)


def stamp(conn: apsw.Connection) -> Stamp:
    """What moves whenever a row of the database changes, through `conn` or another."""
    return conn.total_changes(), conn.execute("PRAGMA data_version").fetchone()[0]


def _kept_read(conn: apsw.Connection, kind: str, key: Hashable, read: Callable[[], T], most: int) -> T:
    """`read()`, or what it gave for `key` last time if the stamp has not moved since;
    at most `most` reads of a `kind` are kept, the oldest let go first."""
    now = stamp(conn)
    kept = _kept.setdefault(conn, {}).setdefault(kind, {})
    found = kept.pop(key, None)
    value: T = found[1] if found is not None and found[0] == now else read()
    while len(kept) >= most:
        del kept[next(iter(kept))]
    kept[key] = (now, value)
    return value


def collection_states(conn: apsw.Connection, collection_id: int) -> dict[str, DocState]:
    """`doc_states` of the whole collection, as read last time if nothing has changed
    since; one collection's at a time (the memory of one dict, not of all). The dict is
    shared between runs: callers only read it."""
    return _kept_read(conn, "states", collection_id, lambda: doc_states(conn, collection_id), 1)


def path_glob_ids(conn: apsw.Connection, glob: str, limit: int) -> list[int]:
    """`ids_by_path_glob`, as read last time if nothing has changed since (the last
    PATH_GLOBS_KEPT globs). The list is shared: callers only read it."""
    return _kept_read(conn, "globs", (glob, limit), lambda: ids_by_path_glob(conn, glob, limit), PATH_GLOBS_KEPT)
