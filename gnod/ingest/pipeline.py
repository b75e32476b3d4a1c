"""Index a collection, or some paths of it: walk → stat compare → hash → prepare → store.

Runs on the daemon's single writer thread. Unchanged files cost a stat; a changed
stat with the same bytes costs a hash; only new bytes are converted and indexed.
Documents are written in short batch transactions of whole documents, so readers
see whole documents only (the lexical index takes them every few seconds); a
file that fails to convert is recorded and skipped, and a store failure rolls back
the open batch (those files are simply redone next run).
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import apsw
import msgspec

from gnod.config import MEMBER_SEP, CollectionConfig
from gnod.ingest import containers, ocr
from gnod.ingest.failure import GONE, IngestFailure
from gnod.ingest.obsidian import named_by_files
from gnod.ingest.walk import (
    Filter,
    WalkEntry,
    WalkIssue,
    admit,
    anchored_nowhere,
    bad_name,
    shown,
    through_link,
    valid_name,
    walk,
)
from gnod.ingest.workers import Expanded, Failed, Outcome, PreparePool, Task, Unchanged, mailbox_spans
from gnod.protocol import ChangeKind, IndexStats
from gnod.store import documents as store
from gnod.store import kept
from gnod.store import ocr as ocr_backlog
from gnod.store.documents import PreparedDoc
from gnod.store.lexical_index import LexicalIndex, commit_due
from gnod.store.ocr import Waiting
from gnod.text.analyzer import AnalyzerSet

BATCH_SECONDS = 0.25
BATCH_DOCS = 2000
PROGRESS_SECONDS = 0.2
PACE_SETTLE_S = 0.5  # files prepared this long before a rate and an ETA are said (Run.pace)
HASH_BATCH = 256  # changed files whose indexed hashes are read in one statement
# A collection whose documents are at least this share in one language gives that
# language to its short documents whose own language was only a guess.
DOMINANT_SHARE = 0.75


class Pace(NamedTuple):
    """An index run's pace once its walk has ended and files were prepared (else none)."""

    rate: float | None = None  # files read and prepared a second
    eta_s: float | None = None  # seconds left, by the bytes still to prepare


ProgressFn = Callable[[str, int, int, str, Pace], None]  # (phase, done, total, path, pace)
# Told after each commit what it changed: (collection, [(kind, rel_path)]), kind
# "added" | "changed" | "removed". Called on the writer thread.
ChangeFn = Callable[[str, list[tuple[ChangeKind, str | None]]], None]


class Cancelled(Exception):
    """The daemon is shutting down; the batch so far is committed."""


def index_collection(
    conn: apsw.Connection,
    analyzers: AnalyzerSet,
    col: CollectionConfig,
    progress: ProgressFn | None = None,
    stop: threading.Event | None = None,
    pool: PreparePool | None = None,
    changed: ChangeFn | None = None,
    lex: LexicalIndex | None = None,
    between: Callable[[], None] | None = None,
) -> IndexStats:
    """Bring the whole collection up to date (a stat-only pass when nothing changed).
    `lex`: the lexical index, brought up to date after each commit (without one, what
    changed stays pending in SQLite for the next LexicalIndex.reconcile); `between`:
    called between batches, outside any transaction (the writer runs short jobs there)."""
    t0 = time.perf_counter()
    cid = _collection_id(conn, col)
    if cid is None:
        return IndexStats(collection=col.name, errors=1, seconds=time.perf_counter() - t0)
    walk_errors: list[WalkIssue] = []
    flt = Filter.of(col)
    others: Counter[str] = Counter()
    outputs: Counter[str] = Counter()
    entries = walk(col.path, flt, walk_errors, follow_symlinks=col.follow_symlinks, others=others, outputs=outputs)
    stats = _apply(
        conn, analyzers, col, cid, entries, None, walk_errors, progress, stop, pool, t0, changed, lex, between
    )
    stats.other_kinds = dict(others.most_common())
    stats.output_folders = dict(outputs.most_common())
    stats.unanchored = anchored_nowhere(col.path, [*col.include, *col.also, *col.exclude])
    return stats


def stale_paths(conn: apsw.Connection, col: CollectionConfig) -> set[str]:
    """The collection's paths whose files are not as indexed, by a walk's stats alone
    (nothing read, nothing written): new files, changed ones (a container by its file),
    and what is indexed but gone (a member by its container's file); a failed file only
    if it changed since. What `index_paths` of them brings up to date is what a whole
    run would: the watcher looks so, between another collection's batches, for what
    changed while nothing watched."""
    cid = _collection_id(conn, col)
    if cid is None:
        return set()
    states = kept.collection_states(conn, cid)
    failed = store.error_states(conn, cid, None, _retried())
    held = _containers_held(states, failed)
    stale: set[str] = set()
    walked: set[str] = set()
    issues: list[WalkIssue] = []
    for e in walk(col.path, Filter.of(col), issues, follow_symlinks=col.follow_symlinks):
        rel, stat = e.rel_path, (e.size, e.mtime_ns, e.inode)
        walked.add(rel)
        old = states.get(rel)
        if rel in held:
            known = held[rel][0] == stat
        elif old is not None:
            known = (old.size, old.mtime_ns, old.inode) == stat
        else:
            known = failed.get(rel) == stat
        if not known:
            stale.add(rel)
    unreadable = _unreadable(issues)
    stale.update(
        f
        for rel in states
        if (f := containers.file_of(rel)) not in walked and not (unreadable and rel.startswith(unreadable))
    )
    return stale


def _containers_held(
    states: dict[str, store.DocState], failed: dict[str, tuple[int, int, int]]
) -> dict[str, tuple[tuple[int, int, int], list[str]]]:
    """Each container's stat and member paths (documents and failures) as indexed."""
    held: dict[str, tuple[tuple[int, int, int], list[str]]] = {}
    members = [(rel, (s.size, s.mtime_ns, s.inode)) for rel, s in states.items() if MEMBER_SEP in rel]
    for rel, stat in members + [(rel, stat) for rel, stat in failed.items() if MEMBER_SEP in rel]:
        held.setdefault(containers.file_of(rel), (stat, []))[1].append(rel)
    return held


def _unreadable(walk_errors: Iterable[WalkIssue]) -> tuple[str, ...]:
    """The folders a walk could not read, each with its "/": what they held stays indexed
    until they can be read again."""
    return tuple(i.rel_path + "/" for i in walk_errors if i.code == "NOT_ACCESSIBLE")


def index_paths(
    conn: apsw.Connection,
    analyzers: AnalyzerSet,
    col: CollectionConfig,
    rel_paths: Iterable[str],
    stop: threading.Event | None = None,
    pool: PreparePool | None = None,
    changed: ChangeFn | None = None,
    lex: LexicalIndex | None = None,
) -> IndexStats:
    """Bring just these paths (files or directories, relative to the root) up to date:
    what exists and belongs is indexed, what is gone (or now excluded) is removed."""
    t0 = time.perf_counter()
    cid = _collection_id(conn, col)
    if cid is None:
        return IndexStats(collection=col.name, errors=1, seconds=time.perf_counter() - t0)
    flt = Filter.of(col)
    walk_errors: list[WalkIssue] = []
    entries: dict[str, WalkEntry] = {}
    scope: set[str] = set()
    real_root = os.path.realpath(col.path)
    for rel in set(rel_paths):
        if not valid_name(rel):
            # Not storable as text: its display form is what `ingest_errors` may hold.
            scope.add(shown(rel))
            if os.path.lexists(os.path.join(col.path, rel)):
                walk_errors.append(bad_name(rel))
            continue
        scope.add(rel)
        if not col.follow_symlinks and through_link(col.path, real_root, rel):
            if os.path.islink(os.path.join(col.path, rel)):
                admit(col.path, flt, rel, walk_errors)  # reports a link out of the collection, as a walk does
            continue  # not the collection's: what it held under this path goes
        if os.path.isdir(os.path.join(col.path, rel)):
            for e in walk(col.path, flt, walk_errors, start=rel, follow_symlinks=col.follow_symlinks):
                entries[e.rel_path] = e
        else:
            admitted = admit(col.path, flt, rel, walk_errors, col.follow_symlinks)
            if admitted is not None:
                entries[admitted.rel_path] = admitted
    return _apply(
        conn,
        analyzers,
        col,
        cid,
        list(entries.values()),
        sorted(scope),
        walk_errors,
        None,
        stop,
        pool,
        t0,
        changed,
        lex,
    )


def store_ocr(
    conn: apsw.Connection,
    col: CollectionConfig,
    waited: Waiting,
    stat: tuple[int, int, int],
    outcome: PreparedDoc | Failed,
    changed: ChangeFn | None = None,
    lex: LexicalIndex | None = None,
) -> bool:
    """Store what OCR read of a document that waited for it (gnod.server.ocr) as an index
    run reading it then would have: the document with its text, or the failure in its
    place (EMPTY, TIMEOUT…). `stat`: the file's when it was read. False, storing nothing,
    when the document was indexed again or removed meanwhile (its new state is what counts)."""
    cid = store.collection_ids(conn).get(col.name)
    if cid is None:
        return False
    states = store.doc_states(conn, cid, [waited.rel_path])
    now = states.get(waited.rel_path)
    if now != store.DocState(waited.doc_id, waited.size, waited.mtime_ns, waited.inode):
        return False
    if not ocr_backlog.waiting(conn, waited.doc_id):
        return False
    run = _Run(conn, col, cid, states, store.error_states(conn, cid, [waited.rel_path]), changed, lex)
    conn.execute("BEGIN")
    try:
        if not isinstance(outcome, Failed):
            run.seen.add(waited.rel_path)  # else finish() removes the document the failure replaces
        run._store(waited.rel_path, stat, outcome)
        run.finish([])
    except BaseException:
        run.roll_back()
        raise
    return True


def _collection_id(conn: apsw.Connection, col: CollectionConfig) -> int | None:
    """The collection's id, or None (with the reason recorded) when its root is unusable."""
    with conn:
        cid = store.upsert_collection(conn, col.name, col.path, col.language)
        if os.path.isdir(col.path):
            store.clear_errors(conn, cid, ["."])
            return cid
        store.record_error(
            conn,
            cid,
            ".",
            "NOT_ACCESSIBLE",
            f"collection path {col.path} is not an accessible directory",
            *_stat_or_zero(col.path),
        )
    return None


def _apply(
    conn: apsw.Connection,
    analyzers: AnalyzerSet,
    col: CollectionConfig,
    cid: int,
    entries: Iterable[WalkEntry],
    scope: list[str] | None,
    walk_errors: list[WalkIssue],
    progress: ProgressFn | None,
    stop: threading.Event | None,
    pool: PreparePool | None,
    t0: float,
    changed: ChangeFn | None = None,
    lex: LexicalIndex | None = None,
    between: Callable[[], None] | None = None,
) -> IndexStats:
    """Index `entries` (a walk under way, or the entries found) and remove what the index
    holds within `scope` (None: the whole collection) that is not among them."""
    failed = store.error_states(conn, cid, scope, _retried())
    states = kept.collection_states(conn, cid) if scope is None else store.doc_states(conn, cid, scope)
    run = _Run(conn, col, cid, states, failed, changed, lex)

    def walked() -> None:
        if progress:
            progress("scan", run.done, run.stats.scanned, "", Pace())

    next_progress = time.monotonic() + PROGRESS_SECONDS
    # The pool takes the plan as the walk goes: its workers start on the first files found.
    outcomes = (pool or PreparePool(0)).run(run.plan(entries, walked), analyzers)
    conn.execute("BEGIN")
    try:
        for task, outcome in outcomes:
            run.store(task, outcome)
            now = time.monotonic()
            run.end_batch_when_due(now, stop, between)
            if progress and run.walked and now >= next_progress:
                progress("index", run.done, run.stats.scanned, task.entry.rel_path, run.pace(now))
                next_progress = now + PROGRESS_SECONDS
        run.finish(walk_errors)
    except BaseException:
        run.roll_back()
        raise
    run.stats.seconds = time.perf_counter() - t0
    if progress:
        progress("done", run.stats.scanned, run.stats.scanned, "", Pace())
    return run.stats


class _Run:
    """One index run's writes: short batch transactions of whole documents, each told
    (`changed`) once committed and searchable. The lexical index takes the first batch
    at once (a search right after `collection add` finds something), the next ones as
    often as lexical_index.commit_due says or when the text staged for it grows large,
    and the rest at the end: a short run commits to it once."""

    def __init__(
        self,
        conn: apsw.Connection,
        col: CollectionConfig,
        cid: int,
        states: dict[str, store.DocState],
        failed: dict[str, tuple[int, int, int]],
        changed: ChangeFn | None,
        lex: LexicalIndex | None,
    ) -> None:
        self.conn, self.col, self.cid = conn, col, cid
        self.named = named_by_files(col.path)  # an Obsidian vault's notes: titled by their files
        self.states, self.failed = states, failed
        self.changed, self.lex = changed, lex
        self.stats = IndexStats(collection=col.name)
        self.planned = 0  # tasks the plan has given so far
        self.prepared = 0  # their outcomes stored
        self.planned_bytes = self.prepared_bytes = 0  # the same, in bytes to read
        self.first_stored: float | None = None  # when the first outcome was stored (pace)
        self.walked = False  # the walk has ended: stats.scanned counts every file
        # What the run has seen of what the index holds: the paths walked, and the rest
        # (a container's members, failed files) in `seen`; `known`: walked paths indexed.
        self.walked_paths: list[str] = []
        self.known = 0
        self.seen: set[str] = set()
        self.committed: list[tuple[ChangeKind, str | None]] = []  # what the open batch changes
        self.lexical_at: float | None = None  # when the lexical index last took this run's batches
        self.started = time.monotonic()
        self.in_batch = 0
        self.batch_end = self.started + BATCH_SECONDS
        self.containers = _containers_held(states, failed)

    def plan(self, entries: Iterable[WalkEntry], walked: Callable[[], None]) -> Iterator[Task]:
        """The files to prepare, as the walk finds them: new, or changed since indexed (or
        since they failed). `walked` is called once the walk has ended."""
        # Every file of a no-op update passes here: names bound once, fields compared
        # without building tuples, counts kept in locals.
        walked_path, states, failed, kind = self.walked_paths.append, self.states, self.failed, containers.kind
        scanned = unchanged = errors = known = 0
        held: list[tuple[WalkEntry, int]] = []  # changed files, with their indexed id, until their hashes are read
        for e in entries:
            scanned += 1
            rel = e.rel_path
            walked_path(rel)
            old = states.get(rel)
            if old is not None:
                known += 1
            if kind(rel) is not None:
                for task in self._plan_container(e, (e.size, e.mtime_ns, e.inode)):
                    yield self._planned(task)
            elif old is not None and old.mtime_ns == e.mtime_ns and old.size == e.size and old.inode == e.inode:
                unchanged += 1
            elif old is None and failed.get(rel) == (e.size, e.mtime_ns, e.inode):
                errors += 1  # failed before and unchanged since: not retried
                self.seen.add(rel)
            elif old is None:
                yield self._planned(Task(e, None, self.col.language, self.col.follow_symlinks, named=self.named))
            else:
                held.append((e, old.id))
                if len(held) >= HASH_BATCH:
                    yield from self._with_hashes(held)
                    held = []
        yield from self._with_hashes(held)
        self.stats.scanned += scanned
        self.stats.unchanged += unchanged
        self.stats.errors += errors
        self.known += known
        self.walked = True
        walked()

    def _with_hashes(self, held: list[tuple[WalkEntry, int]]) -> Iterator[Task]:
        """Tasks for changed files, each with its indexed source hash (same bytes: no work)."""
        hashes = store.source_hashes(self.conn, [doc_id for _, doc_id in held])
        for e, doc_id in held:
            task = Task(e, hashes.get(doc_id), self.col.language, self.col.follow_symlinks, named=self.named)
            yield self._planned(task)

    def _planned(self, task: Task) -> Task:
        self.planned += 1
        self.planned_bytes += _task_bytes(task)
        return task

    def _plan_container(self, e: WalkEntry, stat: tuple[int, int, int]) -> list[Task]:
        """No task when the container is as indexed (its members count as seen), else its
        task; for a mailbox bigger than a shard, a task per shard of its messages."""
        held = self.containers.get(e.rel_path)
        if held is not None and held[0] == stat:
            self.seen.update(held[1])
            self.stats.unchanged += len(held[1])  # documents, as `added` counts them: its members
            return []
        if self.failed.get(e.rel_path) == stat:  # failed, unchanged since: what it held stays
            self.seen.update(held[1] if held is not None else ())
            self.stats.errors += 1
            return []
        ids = {self.states[rel].id: rel for rel in held[1] if rel in self.states} if held else {}
        old = {ids[doc_id]: h for doc_id, h in store.source_hashes(self.conn, list(ids)).items()}
        rules = (tuple(self.col.include), tuple(self.col.exclude), tuple(self.col.also))
        task = Task(e, None, self.col.language, self.col.follow_symlinks, old, rules)
        if containers.kind(e.rel_path) != "mailbox" or e.size <= containers.MAILBOX_SHARD_BYTES:
            return [task]
        try:
            spans = mailbox_spans(e.abs_path, self.col.follow_symlinks)
        except IngestFailure as f:
            return [msgspec.structs.replace(task, old_members={}, failed=(f.code, f.reason))]
        out = []
        for shard in containers.shards(spans):
            names = [f"{e.rel_path}{MEMBER_SEP}{n}.eml" for n in range(shard[0], shard[0] + len(shard[1]))]
            mine = {rel: old[rel] for rel in names if rel in old}
            out.append(msgspec.structs.replace(task, old_members=mine, shard=shard))
        return out

    @property
    def done(self) -> int:
        """Files dealt with so far, once the walk has ended (`walked`): those the plan
        found nothing to do for, and the outcomes stored (a mailbox's shards each count
        as one)."""
        return self.stats.scanned - self.planned + self.prepared

    def pace(self, now: float) -> Pace:
        """Files prepared a second and seconds left, once the walk has ended and files have
        been prepared for PACE_SETTLE_S. The time left is that of the bytes still to
        prepare at the rate so far: a file's size says more of its cost than its count
        (the kernel tree's first files, small device trees, gave an ETA half the real
        time), and the files found unchanged cost nothing (a rescan's ETA was 0 s while
        thousands waited). The rate counts from the first file prepared: the walk and the
        workers' start before it, over a few small files, said `ETA 27h09m` for a
        documentation tree indexed in 9 s."""
        if not (self.walked and self.first_stored is not None and now - self.first_stored >= PACE_SETTLE_S):
            return Pace()
        elapsed = now - self.first_stored
        left = self.planned_bytes - self.prepared_bytes
        return Pace(self.prepared / elapsed, left * elapsed / self.prepared_bytes)

    def store(self, task: Task, outcome: Outcome) -> None:
        if self.first_stored is None:
            self.first_stored = time.monotonic()
        self.prepared += 1
        self.prepared_bytes += _task_bytes(task)
        e = task.entry
        stat = (e.size, e.mtime_ns, e.inode)
        if not isinstance(outcome, Expanded):
            if isinstance(outcome, Failed) and outcome.code != GONE and e.rel_path in self.containers:
                # A container that cannot be read now (damaged, grown past a limit) keeps
                # what it held indexed, as an unreadable directory does.
                self.seen.update(self.containers[e.rel_path][1])
            self._store(e.rel_path, stat, outcome)
            return
        if e.rel_path in self.failed:  # it failed before; its members are what is indexed now
            store.clear_errors(self.conn, self.cid, [e.rel_path])
        for rel, member in outcome.members:
            self.seen.add(rel)
            self._store(rel, stat, member)

    def _store(self, rel_path: str, stat: tuple[int, int, int], outcome: PreparedDoc | Unchanged | Failed) -> None:
        old = self.states.get(rel_path)
        if isinstance(outcome, Failed) and outcome.code == GONE:
            # Removed since the walk listed it: gone now, as the next walk would find.
            if rel_path in self.failed:
                store.clear_errors(self.conn, self.cid, [rel_path])
            if old is not None:
                store.delete_documents(self.conn, [old.id])
                self.stats.removed += 1
                self.committed.append(("removed", rel_path))
        elif isinstance(outcome, Failed):
            store.record_error(self.conn, self.cid, rel_path, outcome.code, outcome.reason, *stat)
            self.stats.errors += 1
        elif isinstance(outcome, Unchanged):
            assert old is not None
            store.touch_document(self.conn, old.id, *stat, old.mtime_ns)
            if rel_path in self.failed:  # it failed since; now it is back as indexed (a backup restored)
                store.clear_errors(self.conn, self.cid, [rel_path])
            self.stats.unchanged += 1
        else:
            # A store failure (disk full, I/O) propagates: the batch rolls back whole.
            doc_id = store.put_document(self.conn, self.cid, outcome, old, rel_path in self.failed)
            if self.lex is not None:
                self.lex.stage(doc_id, outcome.language, outcome.text)
            if old is None:
                self.stats.added += 1
            else:
                self.stats.updated += 1
            self.committed.append(("added" if old is None else "changed", rel_path))
            self.in_batch += 1

    def end_batch_when_due(self, now: float, stop: threading.Event | None, between: Callable[[], None] | None) -> None:
        """Commit the open batch once it is big or old enough; stop there when asked to."""
        if not (self.in_batch >= BATCH_DOCS or (self.in_batch and now >= self.batch_end)):
            return
        cancelled = stop is not None and stop.is_set()
        self.commit(final=cancelled)
        if cancelled:
            raise Cancelled()
        if between is not None:
            between()
        self.conn.execute("BEGIN")
        self.in_batch = 0
        self.batch_end = now + BATCH_SECONDS

    def finish(self, walk_errors: list[WalkIssue]) -> None:
        """Remove what is gone, record what the walk refused, and commit the last batch."""
        unreadable = _unreadable(walk_errors)
        gone: list[tuple[str, int]] = []
        seen = self.seen
        # Unless every indexed path was walked (each is walked once), what was not is gone;
        # a no-op update makes no set of its walked paths, nor of the indexed ones.
        if self.known != len(self.states):
            seen = seen.union(self.walked_paths)
            gone = [
                (rel, self.states[rel].id)
                for rel in sorted(self.states.keys() - seen)
                if not (unreadable and rel.startswith(unreadable))
            ]
        store.delete_documents(self.conn, [doc_id for _, doc_id in gone])
        self.stats.removed += len(gone)
        self.committed.extend(("removed", rel) for rel, _ in gone)
        # A failure the walk reports again stays as recorded (a no-op update writes nothing).
        reported = {i.rel_path for i in walk_errors}
        stale = [p for p in self.failed if p not in seen and p not in reported]
        if stale and seen is self.seen:
            walked = set(self.walked_paths)
            stale = [p for p in stale if p not in walked]
        store.clear_errors(self.conn, self.cid, stale)
        for issue in walk_errors:
            store.record_error(self.conn, self.cid, issue.rel_path, issue.code, issue.reason, 0, 0, 0)
            self.stats.errors += 1
        # Also after a run that changed nothing: guesses a migration left (0014) settle then.
        settle_languages(self.conn, self.cid)
        self.commit(final=True)

    def commit(self, final: bool = False) -> None:
        self.conn.execute("COMMIT")
        now = time.monotonic()
        if self.lex is not None:
            last = self.lexical_at
            if not (final or last is None or self.lex.staged_full or commit_due(self.started, last, now)):
                return  # its documents stay pending (in SQLite) until the next sync
            self.lex.sync(self.conn)  # searchable before anyone is told of the change
            self.lexical_at = now
        if self.changed is not None and self.committed:
            self.changed(self.col.name, self.committed[:])
        self.committed.clear()

    def roll_back(self) -> None:
        if not self.conn.getautocommit():
            self.conn.execute("ROLLBACK")
            if self.lex is not None:
                self.lex.discard()


def _task_bytes(task: Task) -> int:
    """What a task reads: its file, or its shard of a big mailbox."""
    return task.shard[1][-1][1] - task.shard[1][0][0] if task.shard is not None else task.entry.size


def _retried() -> tuple[str, ...]:
    """Failure codes whose cause may be gone now: a file that needed OCR is read again
    once Tesseract is installed, though it did not change."""
    return ("NEEDS_OCR",) if ocr.tesseract() is not None else ()


def settle_languages(conn: apsw.Connection, cid: int) -> int:
    """Short documents whose language was only a guess take the collection's dominant
    language (when it holds DOMINANT_SHARE of the documents): a few abstracts that
    lingua took for French no longer make an English collection look multilingual, and
    they meet English queries through English stems.  Returns documents re-stemmed."""
    dominant, share = store.dominant_language(conn, cid)
    if share < DOMINANT_SHARE:
        return 0
    ids = store.unsure_documents(conn, cid, dominant)
    for doc_id in ids:
        store.restem_document(conn, doc_id, dominant)
    return len(ids)


def _stat_or_zero(path: str) -> tuple[int, int, int]:
    try:
        st = os.stat(path)
        return (st.st_size, st.st_mtime_ns, st.st_ino)
    except OSError:
        return (0, 0, 0)
