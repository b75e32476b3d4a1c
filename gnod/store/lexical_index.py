"""The lexical index: one tantivy document per document, derived from SQLite.

SQLite is the source of truth. Every write that changes what a document's text or
filters are (put, delete, re-stem) records the document's id in `lexical_pending` in
the same transaction; after the transaction commits, `sync` brings those ids over
(delete, then add what SQLite still holds) and commits tantivy, then clears them. A
crash anywhere in between leaves the ids pending, so start-up (`reconcile`) redoes
them, then compares the ids the index holds with SQLite's: what SQLite lacks goes, what
the index lacks (everything, for an index that is missing or of another layout) is
derived from what SQLite stores (nothing is re-read from disk) and added, newest first,
with searches served from the first commit on. Readers search a snapshot: a commit in
progress is never half seen.

Fields: `stems` (the document's stems in its language) and `exact` (its unstemmed
words), each holding the path, the title and the body, the path and title repeated
(BM25F by repetition: one length and one IDF per field, as FTS5's weighted columns
gave; a separate field per part would give each its own saturation and IDF, which
over-rewards a short title). Only `stems` keeps positions: they were half the index
per field, and a phrase of exact words is its words exact where their stems make the
phrase (gnod.search.lexical). `names` holds the title and the file name as whole
words, for the name preference; the rest are filters (the path three ways, so that
common globs are one term or a narrow regex). Both text fields are folded
(case and accents) by `analyzer.fold`, which queries and snippets use too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import apsw
import msgspec
import tantivy

from gnod.search.constants import ID_TERMS_MAX, INDEXING
from gnod.store.documents import LexicalText, aliases_of, date_of, senders_of
from gnod.store.tags import tag_keys, tags_of
from gnod.text.analyzer import SEPARATOR, fold, tokenize
from gnod.text.dates import mtime_day, named_day, written_day

log = logging.getLogger("gnod")

ID = "id"
STEMS = "stems"
EXACT = "exact"
NAMES = "names"
COLLECTION = "collection"
LANGUAGE = "language"
LANGUAGE_CODE = "language_code"  # language_code(): read beside each match's id, for the language preference
TAG = "tag"
SENDER = "sender"  # documents.senders_of: what `--from` matches
DAY = "day"
PATH = "path"
PATH_REVERSED = "path_reversed"  # for a glob with a literal end ("*_test.c")
PATH_PARTS = "path_parts"  # each folder ("a/", "a/b/") and the extension (".rst"): one term for "a/*", "*.rst"
# Bump when the fields or what goes into them change: the index is then rebuilt.
# 6: the parts of camelCase names (ingest.lexical_text).
# 7: a separator between a path's folders (analyzer.path_text).
# 8: œ, ł, ß and the other letters without a mark folded to ASCII (analyzer.fold); a
#    frontmatter `created` as the date where there is no `date` (documents.DATE_KEYS).
# 9: full-width Latin and half-width katakana as their usual forms (analyzer.narrow).
# 10: the parts of compounds in German, Dutch and the Scandinavian languages
#     (ingest.lexical_text, text.compounds); a note's other frontmatter properties
#     (documents.properties_text).
LAYOUT = 10
# The writer's indexing heap (shared by its threads; tantivy takes of it only what the
# documents waiting for a commit need, so a save's commit costs the same with any). A
# thread whose share fills writes a segment, which tantivy merges again and again as
# they pile up, and a search reads every segment. The kernel tree's fresh ingest at 384
# MB instead of 96 (two alternated rounds): 4-5 segments instead of 8-9, the same CPU
# and peak memory, searches of the index 5.4 → 5.15 ms p50 in-process.
WRITER_HEAP_BYTES = 384_000_000
# Indexing threads (the heap is shared among them): with two, a big ingest no longer
# waits on one thread at each commit (drivers/net, 136 MB: 6.9 → 5.5 s on 2 cores).
WRITER_THREADS = min(2, os.cpu_count() or 1)
# A sync of fewer documents (a save, a few files changed) opens a writer of one thread:
# each thread's segment is written at every commit, and a save's commit took 40 ms with
# two on the kernel tree (22 with one), most of its save→searchable. A bigger sync
# while such a writer is open lets it go for one of WRITER_THREADS.
ONE_THREAD_DOCS = 100
READ_BATCH = 1000  # documents derived and added per step of a rebuild
# A long write (an ingest, a rebuild) commits at most every COMMIT_SECONDS, so searches
# find what it has added so far, and at most every COMMIT_SHARE of the time it has taken:
# each commit writes segments that tantivy merges again and again as they pile up (the
# kernel tree's fresh ingest: tantivy's work 43 CPU-s committing every 2 s, 37 so).
COMMIT_SECONDS = 2.0
COMMIT_SHARE = 0.25
# An ingest also commits once the text staged for the next commit (each document's stems
# and exact forms, about 1.5 times its body) reaches this many characters: the memory it
# holds stays bounded however long the run (the kernel tree stages ~27 MB a second).
STAGED_MAX_CHARS = 128_000_000
REST_AFTER = 1000  # documents taken by a writer before `rest` closes it
COLLECT_HEAP_BYTES = 15_000_000  # the smallest heap tantivy gives a writer: one that only deletes files


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field(ID, indexed=True, fast=True)
    sb.add_text_field(STEMS, tokenizer_name="whitespace", index_option="position")
    sb.add_text_field(EXACT, tokenizer_name="whitespace", index_option="freq")
    for name in (NAMES, LANGUAGE, TAG, SENDER, PATH, PATH_REVERSED, PATH_PARTS):
        sb.add_text_field(name, tokenizer_name="raw", index_option="basic")
    sb.add_unsigned_field(COLLECTION, indexed=True, fast=True)
    sb.add_unsigned_field(LANGUAGE_CODE, fast=True)
    sb.add_integer_field(DAY, indexed=True, fast=True)
    return sb.build()


SCHEMA = _schema()


def folder_name() -> str:
    """The index folder's name: it changes with anything that changes what is indexed."""
    key = json.dumps([LAYOUT, msgspec.to_builtins(INDEXING)]).encode()
    return f"lexical-{LAYOUT}-{hashlib.sha256(key).hexdigest()[:8]}"


def words(text: str) -> str:
    """A title or file name as the `names` field holds it: folded words, one space apart."""
    return fold(" ".join(tokenize(text)))


def commit_due(started: float, last: float, now: float) -> bool:
    """Whether a long write begun at `started` (time.monotonic), which last committed at
    `last`, commits again `now`."""
    return now - last >= max(COMMIT_SECONDS, COMMIT_SHARE * (now - started))


# ids → their LexicalText, derived from what SQLite stores (gnod.ingest.lexical_text).
Derive = Callable[[apsw.Connection, Sequence[int]], dict[int, LexicalText]]


class NotReady(Exception):
    """The index is being built from SQLite; `done` of `total` documents so far."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"the lexical index is being built from the stored documents ({done:,} of {total:,})")
        self.done = done
        self.total = total


def document_day(metadata: dict[str, Any], rel_path: str, mtime_ns: int) -> int:
    """A document's date as a day number (date.toordinal): its frontmatter date
    (documents.DATE_KEYS) where that is a day as people write one (text.dates), else
    the day its file's name starts with (a daily note's), else the file's mtime (UTC
    day)."""
    raw = date_of(metadata)
    day = written_day(raw) if raw is not None else None
    day = day or named_day(rel_path)
    if day is not None:
        return day.toordinal()
    return mtime_day(mtime_ns)


def language_code(language: str | None) -> int:
    """A language as a number (0: none), the same in every process and version."""
    if language is None:
        return 0
    return int.from_bytes(hashlib.blake2b(language.encode(), digest_size=8).digest(), "big") | 1


def _joined(path: str, title: str, body: str) -> str:
    parts = [path] * INDEXING.path_repeat + [title] * INDEXING.title_repeat + [body]
    return fold(SEPARATOR.join(parts))


def document(
    doc_id: int,
    collection_id: int,
    rel_path: str,
    title: str,
    language: str | None,
    metadata: dict[str, Any],
    mtime_ns: int,
    text: LexicalText,
) -> tantivy.Document:
    """One document as the index holds it."""
    doc = tantivy.Document()
    doc.add_unsigned(ID, doc_id)
    doc.add_text(STEMS, _joined(text.stem_path, text.stem_title, text.stem_body))
    doc.add_text(EXACT, _joined(text.exact_path, text.exact_title, text.exact_body))
    stem = os.path.splitext(os.path.basename(rel_path))[0]
    for name in dict.fromkeys((words(title), words(stem), *map(words, aliases_of(metadata)))):
        if name:
            doc.add_text(NAMES, name)
    doc.add_unsigned(COLLECTION, collection_id)
    doc.add_text(LANGUAGE, language or "")
    doc.add_unsigned(LANGUAGE_CODE, language_code(language))
    for key in tag_keys(tags_of(metadata)):
        doc.add_text(TAG, key)
    for sender in senders_of(metadata):
        doc.add_text(SENDER, sender)
    doc.add_integer(DAY, document_day(metadata, rel_path, mtime_ns))
    add_path(doc, rel_path)
    return doc


def add_path(doc: tantivy.Document, rel_path: str) -> None:
    """The path fields that path globs are matched against (search.lexical.path_query)."""
    doc.add_text(PATH, rel_path)
    doc.add_text(PATH_REVERSED, rel_path[::-1])
    folder, _, name = rel_path.rpartition("/")
    parts = folder.split("/") if folder else []
    for i in range(len(parts)):
        doc.add_text(PATH_PARTS, "/".join(parts[: i + 1]) + "/")
    if "." in name:
        doc.add_text(PATH_PARTS, name[name.rfind(".") :])


def any_of(field: str, values: Sequence[int]) -> tantivy.Query:
    """The documents holding any of these values of a numeric `field` (ID_TERMS_MAX
    says how)."""
    if len(values) > ID_TERMS_MAX:
        return tantivy.Query.term_set_query(SCHEMA, field, list(values))
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, tantivy.Query.term_query(SCHEMA, field, v)) for v in values]
    )


def _no_derive(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, LexicalText]:
    raise RuntimeError("a lexical index opened for searching derives nothing")


class LexicalIndex:
    """The tantivy index in `folder` (beside index.sqlite). Writes happen on gnod's writer
    thread only; any thread may search."""

    def __init__(self, data_dir: str, derive: Derive) -> None:
        self.path = os.path.join(data_dir, folder_name())
        self.data_dir = data_dir
        self.derive = derive
        self._index: tantivy.Index | None = None
        self._writer: tantivy.IndexWriter | None = None
        self._threads = 0  # the open writer's indexing threads
        self._staged: dict[int, tuple[str | None, LexicalText]] = {}  # id → (language, text)
        self._staged_chars = 0
        self._taken = 0  # documents the open writer took
        self._letting_go: threading.Thread | None = None  # a writer `rest` let go, until its merges end
        self.progress: tuple[int, int] | None = (0, 0)  # (done, total) while (re)building
        # Commits so far, and writers let go once their merges ended: a searcher in another
        # process reloads when it moves.
        self.commits = 0

    # --- reading --------------------------------------------------------------------

    @classmethod
    def for_search(cls, data_dir: str) -> LexicalIndex:
        """The index of `data_dir` as a process other than the writer's searches it:
        opened by `refresh`, never written."""
        return cls(data_dir, _no_derive)

    def refresh(self) -> None:
        """Search what the writer has committed since (open the index the first time)."""
        if self._index is None:
            self._index = tantivy.Index.open(self.path)
        self._index.reload()

    def searcher(self) -> tantivy.Searcher:
        """The latest committed snapshot (while `progress` is set, of an index still
        being filled from SQLite); NotReady before the index is open."""
        if self._index is None:
            raise NotReady(*(self.progress or (0, 0)))
        return self._index.searcher()

    def info(self) -> tuple[int, int]:
        """(documents held, bytes on disk); (0, 0) before the index is open."""
        held = self._index.searcher().num_docs if self._index is not None else 0
        size = 0
        for entry in os.scandir(self.path) if os.path.isdir(self.path) else []:
            try:
                size += entry.stat().st_size
            except OSError:  # a segment merged away meanwhile
                pass
        return held, size

    # --- writing (the writer thread) -------------------------------------------------

    def open(self) -> None:
        """Open the index, or create an empty one (new, or unreadable: `reconcile` fills
        it). Older layouts' folders are removed."""
        for name in os.listdir(self.data_dir) if os.path.isdir(self.data_dir) else []:
            if name.startswith("lexical-") and name != os.path.basename(self.path):
                shutil.rmtree(os.path.join(self.data_dir, name), ignore_errors=True)
        fresh = not os.path.isdir(self.path)
        if not fresh:
            try:
                self._index = tantivy.Index(SCHEMA, path=self.path, reuse=True)
            except (ValueError, OSError) as e:
                log.warning("lexical index %s unreadable (%s): rebuilding it", self.path, e)
                shutil.rmtree(self.path, ignore_errors=True)
            else:
                self._collect()
                return
        os.makedirs(self.path, exist_ok=True)
        self._index = tantivy.Index(SCHEMA, path=self.path, reuse=False)

    def _collect(self) -> None:
        """Delete the segment files no commit names. tantivy deletes them at its next
        commit, so those a writer's last merges leave (after the kernel's ingest and a
        few edits, a merge's output no commit adopted: 94 MB beside a 332 MB index) stay
        until this. It takes the writer's lock, so it runs while no writer is open: at
        start and when the writer closes."""
        assert self._index is not None and self._writer is None
        try:
            writer = self._index.writer(heap_size=COLLECT_HEAP_BYTES, num_threads=1)
        except ValueError as e:  # the lock is held: the files wait for the next time
            log.warning("lexical index: dead segment files not deleted (%s)", e)
            return
        try:
            writer.garbage_collect_files()
        finally:
            writer.wait_merging_threads()  # gives the lock back

    def _w(self, threads: int | None = None) -> tantivy.IndexWriter:
        """The open writer, or a new one of `threads` (WRITER_THREADS by default). Given
        only where nothing is written since the last commit: an open writer of fewer
        threads is let go (waiting for its merges) for one of `threads`; one of more stays."""
        if self._writer is not None and threads is not None and self._threads < threads:
            self._writer.wait_merging_threads()
            self._writer = None
        if self._writer is None:
            assert self._index is not None
            self._await_release()
            self._threads = threads or WRITER_THREADS
            self._writer = self._index.writer(heap_size=WRITER_HEAP_BYTES, num_threads=self._threads)
        return self._writer

    def stage(self, doc_id: int, language: str | None, text: LexicalText) -> None:
        """Text already analyzed for a document put in the open transaction (saves
        `sync` deriving it again), valid while the document keeps `language`."""
        self._staged[doc_id] = (language, text)
        self._staged_chars += len(text.stem_body) + len(text.exact_body)

    @property
    def staged_full(self) -> bool:
        """Whether the text staged since the last sync reached STAGED_MAX_CHARS."""
        return self._staged_chars >= STAGED_MAX_CHARS

    def discard(self) -> None:
        """The open transaction rolled back: what was staged is dropped (what committed
        batches left pending is derived from SQLite by the next sync)."""
        self._unstage()

    def _unstage(self) -> None:
        self._staged.clear()
        self._staged_chars = 0

    def sync(self, conn: apsw.Connection) -> int:
        """Bring the pending documents over and commit; returns how many. Call after the
        SQLite transaction that recorded them committed."""
        ids = [r[0] for r in conn.execute("SELECT doc_id FROM lexical_pending")]
        if not ids:
            self._unstage()
            return 0
        threads = 1 if len(ids) < ONE_THREAD_DOCS else WRITER_THREADS
        self._w(threads).delete_documents_by_query(any_of(ID, ids))
        self._add(conn, ids)
        self._commit()
        conn.execute("DELETE FROM lexical_pending WHERE doc_id IN (SELECT value FROM json_each(?))", (json.dumps(ids),))
        self._unstage()
        self._taken += len(ids)
        return len(ids)

    def compact(self, conn: apsw.Connection, removed: int) -> int:
        """After `removed` documents went at once (a collection removed, SQLite's
        transaction committed): where they were at least as many as those left, those
        left are added again (each batch deleted and added in one commit, so a search
        finds every one throughout), and the segments that held the removed ones, left
        with none live, are dropped. tantivy merges a segment with deleted documents only
        beside others of its size: removing a 5,798-file collection beside a 2,177-file
        one left the index at 55 MiB, where it is 16 MiB built afresh. Returns how many
        were added again."""
        self.sync(conn)
        left = [r[0] for r in conn.execute("SELECT id FROM documents ORDER BY id")]
        if not removed or not left or removed < len(left):
            return 0
        t0 = committed = time.monotonic()
        self._w(WRITER_THREADS)  # a save's writer of one thread, if open, is let go
        for start in range(0, len(left), READ_BATCH):
            batch = left[start : start + READ_BATCH]
            self._w().delete_documents_by_query(any_of(ID, batch))
            self._add(conn, batch)
            if commit_due(t0, committed, time.monotonic()) or start + READ_BATCH >= len(left):
                self._commit()
                committed = time.monotonic()
        self._taken += len(left)
        return len(left)

    def rest(self, then: Callable[[], None] | None = None) -> bool:
        """After a job: a writer that took REST_AFTER documents or more is let go, giving
        back the memory it holds (its indexing heap). That waits for the merges its last
        commits started (after the kernel tree's ingest, ~4 s of one core), so it
        happens on a thread of its own: the job's caller is answered once its documents
        are searchable, not once they are merged. `then` runs after it (to give the
        memory back to the system). The next sync opens another writer once it is over.
        True when it let one go."""
        if self._writer is None or self._taken < REST_AFTER:
            return False
        writer, self._writer, self._taken = self._writer, None, 0

        def let_go() -> None:
            try:
                writer.wait_merging_threads()
            except Exception as e:  # a merge failed (on this thread, no caller to tell): its segments stay as they were
                log.warning("lexical index: merging after a big run failed (%s)", e)
            self._merged()
            self._collect()
            if then is not None:
                then()

        self._letting_go = threading.Thread(target=let_go, name="gnod-lexical-rest", daemon=True)
        self._letting_go.start()
        return True

    def _merged(self) -> None:
        """Searches read the segments a writer's last merges made (no new writer commits
        meanwhile: it waits for this thread). Until a reload they read the many segments
        of the last commit, files deleted: after the kernel tree's ingest, ~8 ms a search
        where the merged index takes ~5."""
        try:
            self._reload()
        except Exception as e:  # on this thread, no caller to tell: the next commit reloads
            log.warning("lexical index: reading it again after its merges failed (%s)", e)

    def _await_release(self) -> None:
        """Wait until a writer `rest` let go is gone: it holds the index's lock until then."""
        if self._letting_go is not None:
            self._letting_go.join()
            self._letting_go = None

    def _add(self, conn: apsw.Connection, ids: Sequence[int]) -> None:
        """Add the documents SQLite holds among `ids` (a deleted one is simply absent)."""
        rows = conn.execute(
            "SELECT id, collection_id, rel_path, title, language, metadata, mtime_ns FROM documents "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(ids)),),
        ).fetchall()
        texts = {r[0]: staged[1] for r in rows if (staged := self._staged.get(r[0])) and staged[0] == r[4]}
        missing = [r[0] for r in rows if r[0] not in texts]
        if missing:
            texts.update(self.derive(conn, missing))
        w = self._w()
        for doc_id, cid, rel_path, title, language, metadata, mtime_ns in rows:
            if doc_id in texts:
                w.add_document(
                    document(doc_id, cid, rel_path, title, language, json.loads(metadata), mtime_ns, texts[doc_id])
                )

    def _commit(self) -> None:
        self._w().commit()
        self._reload()

    def _reload(self) -> None:
        """Searches read what the index holds now: here at once, in a search process at
        its next search (`commits` moved)."""
        assert self._index is not None
        self._index.reload()
        self.commits += 1

    def reconcile(
        self,
        conn: apsw.Connection,
        progress: Callable[[int, int], None] | None = None,
        serving: Callable[[], None] | None = None,
        stop: threading.Event | None = None,
    ) -> str:
        """Make the index agree with SQLite: redo what a crash left pending, remove what
        SQLite no longer holds, then add what the index lacks (all of it when the index
        is new: another layout, or unreadable), newest first, committing as it goes.
        `serving` is called once the index may be searched: after the first commit of
        the adding (a small index is whole by then), so searches of a big one find what
        is in already (`progress` says how much) instead of waiting for the whole. `stop`
        set (gnod stopping) ends it after the batch at hand: the next start adds the rest.
        Returns what was done, for the log. Until it knows, the index is not ready."""
        assert self._index is not None
        self.sync(conn)
        searcher = self._index.searcher()
        hits = searcher.search(tantivy.Query.all_query(), max(searcher.num_docs, 1), count=False).hits
        held = Counter(int(i) for i in searcher.fast_field_values(ID, [addr for _, addr in hits]) if i is not None)
        stored = [r[0] for r in conn.execute("SELECT id FROM documents ORDER BY mtime_ns DESC, id")]
        # An id held twice (never written so; a damaged index) is added again once.
        stale = [i for i, n in held.items() if n > 1] + list(held.keys() - set(stored))
        if stale:
            self._w().delete_documents_by_query(any_of(ID, stale))
            self._commit()
        missing = [i for i in stored if held.get(i) != 1]
        if not missing:
            self.progress = None
            if serving is not None:
                serving()
            return f"lexical index up to date ({len(stored):,} documents{f', {len(stale):,} removed' if stale else ''})"
        if held:
            log.warning("lexical index lacks %d of the database's %d documents: adding them", len(missing), len(stored))
        t0 = committed = time.monotonic()
        self.progress = (0, len(missing))
        self._w(WRITER_THREADS)  # a save's writer of one thread, if open, is let go
        for start in range(0, len(missing), READ_BATCH):
            self._add(conn, missing[start : start + READ_BATCH])
            done = min(start + READ_BATCH, len(missing))
            if stop is not None and stop.is_set() and done < len(missing):
                self._commit()
                self.progress = (done, len(missing))
                return f"lexical index: stopped at {done:,} of {len(missing):,} added (the rest at the next start)"
            if commit_due(t0, committed, time.monotonic()) or done == len(missing):
                self._commit()
                committed = time.monotonic()
                self.progress = (done, len(missing)) if done < len(missing) else None
                if progress is not None:
                    progress(done, len(missing))
                if serving is not None:  # after the first commit: a small index is whole by then
                    serving()
                    serving = None
        self.progress = None
        return f"lexical index: {len(missing):,} documents added from the database in {time.monotonic() - t0:.1f} s"

    def close(self) -> None:
        self._await_release()
        if self._writer is not None:
            self._writer.wait_merging_threads()
            self._writer = None
            self._collect()
