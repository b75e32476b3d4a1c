"""Why a file a reference names is not in the index: what `get` says instead of a bare
NOT_FOUND when the file is there, in a collection's folder (`get LICENSES/preferred/GPL-2.0`
said only that no indexed document matched)."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator
from typing import Any

import apsw
import msgspec

from gnod import wire
from gnod.config import MEMBER_SEP, OUTPUT_DIRS, CollectionConfig
from gnod.ingest import obsidian
from gnod.ingest.walk import Filter, admit
from gnod.server.hits import URI_PREFIX
from gnod.server.rpc import Daemon
from gnod.store import documents as store

# A missing file's ref names at most this many documents of its file's name.
NAMED_SHOWN = 3


def explain(d: Daemon, conn: apsw.Connection, ref: str) -> tuple[str, dict[str, Any]] | None:
    """(message, details) for a `ref` that names a file in a collection's folder which
    the index lacks; None when it names no such file. `details.why`: CONTAINER (a mailbox
    or an archive: its documents are, each named `file!/member`), FAILED (reading or
    converting it failed: its code and reason), FILTERED (include or exclude globs, the
    default exclusions, a .gitignore), KIND (no default kind of file; an `also` glob
    takes it) or PENDING (not indexed yet)."""
    for col, rel in _places(d, ref):
        if not rel or not os.path.isfile(os.path.join(col.path, rel)):
            continue
        members = store.list_docs(conn, col.name, rel + MEMBER_SEP, 1, 0)
        if members:
            n = store.count_docs(conn, col.name, rel + MEMBER_SEP)
            first = f"{col.name}/{members[0].rel_path}"
            return (
                f"{wire.said(ref)} holds {n:,} document{'s' if n != 1 else ''}, each read on its own ({first!r}…): "
                f"`gnoctl ls {col.name}/{rel}` lists them",
                {"ref": ref, "collection": col.name, "path": rel, "why": "CONTAINER", "documents": n},
            )
        failed = conn.execute(
            "SELECT e.code, e.reason FROM ingest_errors e JOIN collections c ON c.id = e.collection_id "
            "WHERE c.name = ? AND e.rel_path = ?",
            (col.name, rel),
        ).fetchone()
        if failed is not None:
            why, text = "FAILED", f"it could not be indexed: {failed[0]} ({failed[1]})"
        elif admit(col.path, flt := Filter.of(msgspec.structs.replace(col, include=col.include or ["*"])), rel) is None:
            why = "FILTERED"
            folder = next((part for part in rel.split("/")[:-1] if part in flt.excluded_dirs), None)
            if folder is None:
                if obsidian.excluded_globs(col.path):
                    text = "the collection's globs, a .gitignore or the Obsidian vault's Excluded files leave it out"
                else:
                    text = "the collection's globs or a .gitignore leave it out"
            elif folder in OUTPUT_DIRS:
                text = (
                    f"it is in a folder named {folder}/, left out as build output where no .gitignore "
                    "at the collection's top (or its git work tree) says what the output is"
                )
            else:
                text = f"it is in a folder named {folder}/, which gnod never indexes"
        elif Filter.of(col).kind_left_out(os.path.basename(rel), rel):
            ext = os.path.splitext(os.path.basename(rel))[1]
            glob = f"*{ext}" if ext else rel
            why, text = (
                "KIND",
                "its kind of file is not indexed by default; an `also` glob in the collection's config "
                f'takes it besides the default kinds: also = ["{glob}"]',
            )
        else:
            why, text = "PENDING", "it is not indexed yet: `gnoctl update` indexes it"
        details = {"ref": ref, "collection": col.name, "path": rel, "why": why}
        return f"{wire.said(ref)} is in the folder of collection {col.name!r} but not indexed: {text}", details
    return None


def missing(d: Daemon, conn: apsw.Connection, ref: str) -> tuple[str, dict[str, Any]] | None:
    """(message, details) for a `ref` naming a file of a collection (`collection/path`,
    its gno:// uri or an absolute path) that is not in its folder: moved or deleted since
    it was found (an agent's `get` of a hit it had), with the documents of that name the
    collection has now (`details.why` MISSING, `details.named`); None for another ref."""
    place = _place(d, ref)
    if place is None:
        return None
    col, rel = place
    if os.path.lexists(os.path.join(col.path, rel)):
        return None
    named = [f"{col.name}/{p}" for p in store.paths_named(conn, col.name, os.path.basename(rel), NAMED_SHOWN)]
    there = f"; {col.name} has {', '.join(named)}" if named else ""
    return (
        f"{wire.said(ref)}: no such file in the folder of collection {col.name!r} (moved or deleted?){there}",
        {"ref": ref, "collection": col.name, "path": rel, "why": "MISSING", "named": named},
    )


def named_elsewhere(d: Daemon, conn: apsw.Connection, ref: str, path: str) -> tuple[str, dict[str, Any]]:
    """(message, details) for a `ref` that names no document at all (`path`: the ref
    without its line, `client.py` of `client.py:10`): with the documents whose file has
    its name, in any collection (`wire.py` for `repo/gnod/wire.py`, a file an agent
    names as it read it in a traceback; `client.py`, which several folders have), up to
    NAMED_SHOWN (`details.named`)."""
    base = os.path.basename(path.removeprefix(URI_PREFIX).rstrip("/"))
    found = documents_named(d, conn, base, NAMED_SHOWN + 1) if base else []
    named = [f"{col}/{p}" for col, p in found[:NAMED_SHOWN]]
    listed = ", ".join(named) + (", …" if len(found) > NAMED_SHOWN else "")
    if len(named) > 1 and base == path:  # a file's name alone, as a traceback gives it
        return (
            f"{wire.said(ref)}: more than one document is called {wire.said(base)} ({listed}): name one by its path",
            {"ref": ref, "named": named},
        )
    there = f"; documents of that name: {listed}" if named else ""
    return f"no indexed document matches {wire.said(ref)}{there}", {"ref": ref, "named": named}


def documents_named(d: Daemon, conn: apsw.Connection, name: str, most: int) -> list[tuple[str, str]]:
    """(collection, path) of up to `most` documents whose file is called `name`, in any
    folder of the collections in their config order."""
    found: list[tuple[str, str]] = []
    for col in d.config.collections:
        found += [(col.name, p) for p in store.paths_named(conn, col.name, name, most - len(found))]
        if len(found) >= most:
            break
    return found


def _place(d: Daemon, ref: str) -> tuple[CollectionConfig, str] | None:
    """The collection and path `ref` names by the collection's name, its uri or an absolute
    path in its folder; None for a bare path (any collection's)."""
    bare = ref.removeprefix(URI_PREFIX)
    if os.path.isabs(bare) or bare.startswith("~") or d.collection(bare.partition("/")[0]) is not None:
        return next((p for p in _places(d, ref) if p[1] and p[1] != "."), None)
    return None


def _places(d: Daemon, ref: str) -> Iterator[tuple[CollectionConfig, str]]:
    """(collection, path inside it) that `ref` may name, as handlers.resolve_ref reads it."""
    ref = ref.removeprefix(URI_PREFIX)
    if os.path.isabs(ref) or ref.startswith("~"):
        path = os.path.realpath(os.path.expanduser(ref))
        for col in d.config.collections:
            root = os.path.realpath(col.path)
            if path.startswith(root.rstrip("/") + "/"):
                yield col, os.path.relpath(path, root)
        return
    name, _, rel = ref.partition("/")
    named = d.collection(name)
    if named is not None:
        if (inside := _inside(rel)) is None:
            return  # out of its folder: no path of any collection
        yield named, inside
    if (inside := _inside(ref)) is not None:
        for col in d.config.collections:
            yield col, inside


def _inside(rel: str) -> str | None:
    """`rel` with its `.` and `..` folded, or None where it leads out of the folder it is
    relative to (`notes/../../../etc/passwd` is no file of the collection notes)."""
    if not rel:
        return rel
    folded = posixpath.normpath(rel)
    return None if folded == ".." or folded.startswith("../") else folded
