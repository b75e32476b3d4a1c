"""A process of its own that answers `search` beside the daemon's reader thread.

The daemon's threads share one GIL, and a search is mostly Python (parsing, ranking
preferences, snippets): with many clients the reader thread was the limit while the
second core had room. This process holds its own read-only SQLite connection and its
own view of the lexical index (reloaded when the writer has committed to it) and
answers with the same code (gnod.server.searching), so which of the two answers a
search does not change its result. One call at a time over a pipe: the daemon sends a
Request (msgpack), the process sends back the SearchResult or what went wrong.

If the process dies or fails on a call, that call is answered in the daemon and the
process is started again for the next one.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import threading
import time
from multiprocessing.connection import Connection

import msgspec

from gnod.protocol import SearchParams, SearchResult
from gnod.search.filters import Filter
from gnod.search.grammar import QuerySyntaxError
from gnod.server.fair import Unanswered

log = logging.getLogger("gnod.search")

# After the process stopped unasked, how long searches stay in the daemon before another
# is started (a process that cannot start is not started again for every search).
RESTART_AFTER_S = 2.0
# Reply kinds, the first byte of a reply.
_RESULT, _SYNTAX, _FAILED = b"R", b"Q", b"E"


class Request(msgspec.Struct, array_like=True, frozen=True):
    params: SearchParams
    where: Filter
    commits: int  # the lexical index's: when it moved on, there is a commit to reload
    progress: tuple[int, int] | None  # the lexical index's build, while it is (re)built


class SearchProcess:
    """The daemon's side: `ask(request)` from one thread at a time (a FairExecutor
    worker of its own), blocking while the process works, without the GIL."""

    def __init__(self, db_file: str, data_dir: str) -> None:
        self.db_file = db_file
        self.data_dir = data_dir
        self.served = 0  # searches this process answered
        self._proc: multiprocessing.process.BaseProcess | None = None
        self._pipe: Connection | None = None
        self._up = False  # the process said it is ready
        self._restart_at = 0.0  # monotonic time before which none is started
        self._lock = threading.Lock()
        self._encode = msgspec.msgpack.Encoder().encode
        self._decode = msgspec.msgpack.Decoder(SearchResult).decode

    @property
    def pid(self) -> int | None:
        """The process's, once it is ready (None while a search holds the pipe and it has
        not said so yet)."""
        if self._lock.acquire(blocking=False):
            try:
                self._heard_ready()
            finally:
                self._lock.release()
        return self._proc.pid if self._proc is not None and self._up else None

    def ask(self, request: Request) -> SearchResult:
        """The process's answer; QuerySyntaxError for a malformed query, Unanswered when
        the daemon must answer this call itself (the process is down or failed on it)."""
        with self._lock:
            try:
                pipe = self._ready()
                pipe.send_bytes(self._encode(request))
                reply = pipe.recv_bytes()
            except (OSError, EOFError) as e:
                log.warning("the search process stopped (%s): starting another", e or type(e).__name__)
                self._stop()
                self._restart_at = time.monotonic() + RESTART_AFTER_S
                raise Unanswered(str(e)) from None
        kind, body = reply[:1], reply[1:]
        if kind == _RESULT:
            self.served += 1
            return self._decode(body)
        if kind == _SYNTAX:
            raise QuerySyntaxError(body.decode())
        log.warning("the search process failed on a search (answered here instead): %s", body.decode())
        raise Unanswered(body.decode())

    def start(self) -> None:
        """Start the process now, when the daemon starts, rather than at the first search:
        started then, it took a core for its imports while the daemon answered the first
        searches, each on a cold start of its own (a first round of queries on the kernel
        tree took twice as long as the next)."""
        with self._lock:
            if self._pipe is None:
                self._start()

    def _ready(self) -> Connection:
        """The pipe to a process that has said it is ready; Unanswered until then
        (searches meanwhile are answered in the daemon; after the process stopped, the
        next search starts another)."""
        if self._pipe is None:
            if time.monotonic() >= self._restart_at:
                self._start()
            raise Unanswered("the search process is starting")
        if not self._heard_ready():
            raise Unanswered("the search process is starting")
        return self._pipe

    def _heard_ready(self) -> bool:
        """Whether the process has said it is ready (its first message), without waiting
        for it (hold the lock)."""
        if not self._up and self._pipe is not None and self._pipe.poll():
            self._pipe.recv_bytes()  # its "ready"
            self._up = True
        return self._up

    def _start(self) -> None:
        # spawn, not fork: the daemon has threads, and fork would copy their locks.
        ctx = multiprocessing.get_context("spawn")
        ours, theirs = ctx.Pipe()
        proc = ctx.Process(target=serve, args=(theirs, self.db_file, self.data_dir), name="gnod-search", daemon=True)
        proc.start()
        theirs.close()
        self._proc, self._pipe, self._up = proc, ours, False

    def _stop(self) -> None:
        if self._pipe is not None:
            self._pipe.close()
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(timeout=5)
        self._proc = self._pipe = None
        self._up = False

    def close(self) -> None:
        with self._lock:
            self._stop()


def serve(pipe: Connection, db_file: str, data_dir: str) -> None:
    """The process: answer requests until the daemon closes the pipe (or is gone)."""
    from gnod.server.searching import answer
    from gnod.store import documents as store
    from gnod.store.db import connect
    from gnod.store.lexical_index import LexicalIndex
    from gnod.text.analyzer import AnalyzerSet

    decode = msgspec.msgpack.Decoder(Request).decode
    encode = msgspec.msgpack.Encoder().encode
    conn = connect(db_file, readonly=True)
    analyzers = AnalyzerSet()
    index = LexicalIndex.for_search(data_dir)
    commits, counts = -1, {}
    gc.freeze()  # what is loaded now lives as long as the process: keep it out of GC scans
    pipe.send_bytes(b"ready")
    while True:
        try:
            req = decode(pipe.recv_bytes())
        except (EOFError, OSError):
            return
        try:
            if req.commits != commits:
                index.refresh()
                counts = store.language_counts(conn)
                commits = req.commits
            index.progress = req.progress
            reply = _RESULT + encode(answer(index, conn, analyzers, req.params, counts, req.where))
        except QuerySyntaxError as e:
            reply = _SYNTAX + e.message.encode()
        except Exception as e:  # the daemon answers this one itself, and says what failed
            commits = -1  # reload the index next time: it may be what failed
            reply = _FAILED + f"{type(e).__name__}: {e}".encode()
        pipe.send_bytes(reply)
