"""The daemon process: asyncio Unix-socket server, framing, JSON-RPC dispatch.

Each request runs as its own task, so a long `index` on one connection never
delays `status` or `search` on it or any other. Replies carry the request id.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import itertools
import logging
import os
import re
import select
import signal
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import apsw
import msgspec
import watchfiles

from gnod import __version__, wire
from gnod.config import CollectionConfig, Config, ConfigError, parse
from gnod.ingest.walk import set_own_dirs
from gnod.models.manager import Models
from gnod.models.worker import arrived
from gnod.paths import Paths
from gnod.protocol import DAY_PATTERN, METHOD_PARAMS, ErrorData, Request, SearchParams, SearchResult
from gnod.search.constants import READERS
from gnod.search.filters import Filter
from gnod.server.events import ChangeList, Events
from gnod.server.fair import FairExecutor, Overloaded
from gnod.server.jobs import Writer
from gnod.server.lifecycle import Instance
from gnod.server.methods import METHODS
from gnod.server.ocr import OcrBacklog
from gnod.server.rpc import Call, Lane, RpcError
from gnod.server.search_process import Request as SearchRequest
from gnod.server.search_process import SearchProcess
from gnod.server.symbols import Symbols
from gnod.server.vectors import Vectors
from gnod.server.watcher import Watcher
from gnod.store import documents as store
from gnod.store import page_cache
from gnod.store import vectors as vecstore
from gnod.store.db import connect
from gnod.store.lexical_index import LexicalIndex, NotReady
from gnod.store.llm_cache import LlmCache
from gnod.text.analyzer import AnalyzerSet

log = logging.getLogger("gnod")
T = TypeVar("T")

# At start, a search waits this long for the lexical index to be reconciled (milliseconds
# when it is current) before it is answered BUSY with how far a rebuild is.
LEXICAL_WAIT_S = 5.0
# A hand edit of config.toml is read once the file has been left alone this long (an
# editor's save in place is a truncate and a write, milliseconds apart).
CONFIG_QUIET_S = 0.1
# ...and a config read so that drops collections, once nothing has written it for this
# long: a save held up between its truncate and its write (a busy machine) would drop
# every collection's index, where a removal by hand waits a second.
CONFIG_DROP_QUIET_S = 1.0

# The connection a request's task serves (None: gnod's own work): whose reads these are.
CLIENT: contextvars.ContextVar[Hashable] = contextvars.ContextVar("client", default=None)
_connections = itertools.count(1)

_encoder = msgspec.json.Encoder()
_request_decoder = msgspec.json.Decoder(Request)
_param_decoders = {m: msgspec.json.Decoder(t) for m, t in METHOD_PARAMS.items()}


_TEXT_LENGTH = re.compile(r"`str` of length ([<>]=) (\d+)")


def _as_read(e: msgspec.ValidationError) -> str:
    """A params error as a person reads it: the field first (`limit: expected `int` <=
    1000`, where msgspec ends with "- at `$.limit`"), a day's pattern as a day, a text's
    length in characters (`query: expected text of at most 32,000 characters`)."""
    said = str(e).replace(f"`str` matching regex {DAY_PATTERN!r}", "a day as YYYY-MM-DD")
    said = _TEXT_LENGTH.sub(
        lambda m: f"text of {'at most' if m[1] == '<=' else 'at least'} {int(m[2]):,} characters", said
    )
    what, at, where = said.rpartition(" - at `$.")
    return f"{where.removesuffix('`')}: {what[:1].lower()}{what[1:]}" if at else said


class Connection:
    def __init__(self, daemon: Daemon, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.daemon = daemon
        self.reader = reader
        self.writer = writer
        self.loop = asyncio.get_running_loop()
        self.tasks: set[asyncio.Task] = set()
        self.subscriptions: set[asyncio.Task] = set()  # `watch` calls: they end with the client's input
        self.number = next(_connections)  # what its reads are ranked under (CLIENT)

    def hung_up(self) -> bool:
        """The client closed its socket (not only its sending side, after a last request):
        nobody will read an answer."""
        sock = self.writer.get_extra_info("socket")
        if sock is None:
            return True
        poller = select.poll()
        poller.register(sock.fileno(), 0)  # POLLHUP is reported whatever is asked for
        return any(ev & select.POLLHUP for _, ev in poller.poll(0))

    def send(self, message: Any) -> None:
        if self.writer.is_closing():
            return
        body = _encoder.encode(message)
        self.writer.write(wire.frame(body))

    def send_error(self, req_id: Any, code: int, message: str, details: dict | None = None) -> None:
        data = ErrorData(name=wire.ERROR_NAMES.get(code, "ERROR"), details=details or {})
        self.send({"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message, "data": data}})

    async def serve(self) -> None:
        try:
            while True:
                try:
                    first = await self.reader.readexactly(1)
                except asyncio.IncompleteReadError:
                    for t in self.subscriptions:
                        t.cancel()
                    others = self.tasks - self.subscriptions
                    if others and not self.hung_up():
                        # The client half-closed after its last request: still answer it.
                        await asyncio.wait(others)
                    return  # gone: what it had queued is cancelled, never run
                try:
                    async with asyncio.timeout(wire.FRAME_TIMEOUT_S):
                        header = first + await self.reader.readexactly(wire.HEADER_SIZE - 1)
                        size = wire.frame_size(header)
                        if size > wire.MAX_FRAME:
                            # The stream can't be resynchronized without reading the body: say why, hang up.
                            self.send_error(
                                None,
                                wire.FRAME_TOO_LARGE,
                                f"frame of {size} bytes exceeds the {wire.MAX_FRAME}-byte limit",
                            )
                            await self.writer.drain()
                            return
                        body = await self.reader.readexactly(size)
                except TimeoutError:
                    self.send_error(
                        None,
                        wire.INVALID_REQUEST,
                        f"incomplete frame: nothing more arrived within {wire.FRAME_TIMEOUT_S:g} s",
                    )
                    await self.writer.drain()
                    return
                task = asyncio.create_task(self.handle(body))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            for t in self.tasks:
                t.cancel()
            self.writer.close()

    async def handle(self, body: bytes) -> None:
        try:
            req = _request_decoder.decode(body)
        except msgspec.ValidationError as e:
            self.send_error(None, wire.INVALID_REQUEST, f"invalid request: {e}")
            return
        except (msgspec.DecodeError, UnicodeDecodeError) as e:
            self.send_error(None, wire.PARSE_ERROR, f"request is not valid JSON: {e}")
            return
        except RecursionError:
            self.send_error(None, wire.PARSE_ERROR, "request is nested too deeply")
            return
        CLIENT.set(self.number)  # this request's task only: its reads are ranked by this connection's use
        arrived()  # and its model calls by when it came
        try:
            result = await self.daemon.dispatch(req, Call(self, req.id))
        except RpcError as e:
            if req.id is None:  # JSON-RPC: a notification is never answered, not even with an error
                log.info("notification %s failed: %s", req.method, e.message)
            else:
                self.send_error(req.id, e.code, e.message, e.details)
            return
        except asyncio.CancelledError:
            raise
        except Exception as e:  # the daemon stays up whatever a handler does
            log.exception("internal error in %s", req.method)
            if req.id is not None:
                self.send_error(req.id, wire.INTERNAL_ERROR, f"internal error: {type(e).__name__}: {e}")
            return
        if req.id is not None:
            try:
                self.send({"jsonrpc": "2.0", "id": req.id, "result": result})
            except (TypeError, ValueError) as e:  # a result that cannot be encoded is our bug
                log.exception("cannot encode the result of %s", req.method)
                self.send_error(req.id, wire.INTERNAL_ERROR, f"internal error: {type(e).__name__}: {e}")
        try:
            await self.writer.drain()
        except ConnectionError:
            pass


class Daemon:
    def __init__(self, paths: Paths, config: Config) -> None:
        self.paths = paths
        self.config = config
        self.config_digest = _digest(paths.config_file)
        self.rejected_digest: bytes | None = None
        self.started = time.time()
        self.writer = Writer(paths.db_file, config.daemon.ingest_workers)
        self.instance = Instance(paths)
        self.stopping = asyncio.Event()
        # Searches are answered by a process of their own as well, on another core.
        self.search_process = SearchProcess(paths.db_file, paths.data_dir) if (os.cpu_count() or 1) > 1 else None
        self._readers = FairExecutor(READERS, "gnod-read", remote=1 if self.search_process else 0)
        self.writer.pool.busy = self._readers.busy  # ingest leaves the GIL to clients' reads
        # Reads that must not queue behind clients' searches, each on a thread of its own.
        self._lanes = {
            lane: ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"gnod-{lane}")
            for lane in ("control", "background")
        }
        self._local = threading.local()
        self._languages: tuple[int, dict[str | None, int]] = (-1, {})
        self._connections: set[Connection] = set()
        self.watcher: Watcher | None = None
        self.config_error: str | None = None  # a hand edit that failed to load (old config kept)
        self.models = Models(config.models, paths.model_cache_dir)
        self.vectors = Vectors(
            self.writer,
            self.models,
            lambda fn: self.read(fn, "background"),
            lambda: self.config.models.embed_in_background,
            os.path.dirname(paths.db_file),
        )
        self.symbols = Symbols(self.writer, lambda fn: self.read(fn, "background"))
        self.ocr = OcrBacklog(self.writer, lambda fn: self.read(fn, "background"), self.collection)
        self._llm_cache: LlmCache | None = None
        self.events = Events(lambda name: c.path if (c := self.collection(name)) else None)
        self.lexical_ready = asyncio.Event()

    @property
    def llm_cache(self) -> LlmCache:
        """Expansion and rerank cache, opened on first use (a file beside the model cache)."""
        if self._llm_cache is None:
            self._llm_cache = LlmCache(self.paths.llm_cache_file)
        return self._llm_cache

    # --- reads ---------------------------------------------------------------------

    def _reader_state(self) -> tuple[apsw.Connection, AnalyzerSet]:
        st = getattr(self._local, "state", None)
        if st is None:
            conn = connect(self.paths.db_file, readonly=True)
            vecstore.load_extension(conn)  # failure is reported once, by the writer's attempt
            st = self._local.state = (conn, AnalyzerSet())
        return st

    async def read(
        self,
        fn: Callable[[apsw.Connection, AnalyzerSet], T],
        lane: Lane = "clients",
        remote: Callable[[], T] | None = None,
    ) -> T:
        """Run `fn(conn, analyzers)` on a reader thread with its own read-only connection.
        `clients`: the readers shared fairly between connections; `control`: the thread
        kept for `status`, which searches never occupy; `background`: the embedder's,
        so loading a million vectors holds no search up. `remote`: the same call as the
        search process answers it (see `search_remote`), for the readers' remote worker."""

        def call() -> T:
            return fn(*self._reader_state())

        if lane != "clients":
            return await asyncio.get_running_loop().run_in_executor(self._lanes[lane], call)
        try:
            future = self._readers.submit(CLIENT.get(), call, remote)
        except Overloaded as e:
            retry_ms = max(1, round(e.wait_s * 1000))
            raise RpcError(
                wire.BUSY,
                f"gnod is overloaded: this call would wait {e.wait_s:.1f} s "
                f"behind those queued before it; retry in {retry_ms} ms, or send fewer at once",
                {"retry_after_ms": retry_ms},
            ) from None
        result: T = await asyncio.wrap_future(future)
        return result

    def search_remote(self, p: SearchParams, where: Filter) -> Callable[[], SearchResult] | None:
        """`search` as the search process answers it; None without one."""
        proc, lexical = self.search_process, self.writer.lexical
        if proc is None:
            return None
        return lambda: proc.ask(SearchRequest(p, where, lexical.commits, lexical.progress))

    def reader_load(self) -> tuple[int, int, list[float]]:
        """(reads running, reads waiting, seconds each read of the last minute took)."""
        return self._readers.load()

    def language_counts(self, conn: apsw.Connection) -> dict[str | None, int]:
        """Documents per language in the index, cached until the writer commits again."""
        gen = self.writer.generation
        cached_gen, counts = self._languages
        if cached_gen != gen:
            counts = store.language_counts(conn)
            self._languages = (gen, counts)
        return counts

    async def lexical(self) -> LexicalIndex:
        """The lexical index once it may serve: at start it may still be redoing what a
        crash left (BUSY past LEXICAL_WAIT_S); while it is filled from the database it
        answers with what it holds so far (lexical.search says so in its notes)."""
        if not self.lexical_ready.is_set():
            try:
                async with asyncio.timeout(LEXICAL_WAIT_S):
                    await self.lexical_ready.wait()
            except TimeoutError:
                done, total = self.writer.lexical.progress or (0, 0)
                raise RpcError(
                    wire.BUSY,
                    f"{NotReady(done, total)}; searches work once it is done (gnoctl status shows how far it is)",
                    {"done": done, "total": total},
                ) from None
        return self.writer.lexical

    async def _reconcile_lexical(self) -> None:
        """The first writer jobs: the lexical index made to agree with the database, then
        content from before compression compressed and titles taken by older rules taken
        again (searches need only the first)."""
        loop = asyncio.get_running_loop()

        def serving() -> None:
            loop.call_soon_threadsafe(self.lexical_ready.set)

        try:
            await self.writer.reconcile_lexical(serving)
        except Exception:
            log.exception("the lexical index could not be reconciled with the database")
            return
        try:
            await self.writer.pack_old_content()
        except Exception:
            log.exception("stored content could not be compressed (it stays readable as it is)")
        try:
            await self.writer.retitle()
        except Exception:
            log.exception("the prose documents' titles could not be taken again (they stay as they were)")

    def languages(self, conn: apsw.Connection) -> list[str | None]:
        """Languages present in the index, largest first."""
        counts = self.language_counts(conn)
        return sorted(counts, key=lambda lang: -counts[lang])

    # --- config ----------------------------------------------------------------------

    async def reload_config(self, quiet_s: float = 0.0) -> None:
        """Pick up edits made to the config file by hand since we last read it. The
        digest kept is that of the bytes loaded: an edit landing meanwhile (a file
        written in two steps) is read by the next call, not taken as seen. `quiet_s`
        (the watch's reloads): the file is read once nothing has written it for that long,
        and for CONFIG_DROP_QUIET_S when what it holds would drop collections."""
        try:
            raw = await _settled(self.paths.config_file, quiet_s) if quiet_s else _read(self.paths.config_file)
        except OSError as e:
            raise RpcError(wire.CONFIG_ERROR, f"cannot read {self.paths.config_file}: {e.strerror or e}") from None
        digest = None if raw is None else hashlib.sha256(raw).digest()
        if digest == self.config_digest:
            self.config_error = None  # the file holds the config in use (a broken edit undone)
            return
        try:
            config = Config() if raw is None else parse(raw, self.paths.config_file)
        except ConfigError as e:
            self.config_error = str(e)
            self.rejected_digest = digest
            raise RpcError(wire.CONFIG_ERROR, str(e)) from None
        if quiet_s and quiet_s < CONFIG_DROP_QUIET_S and _dropped(self.config, config):
            await self.reload_config(CONFIG_DROP_QUIET_S)
            return
        self.config_error = None
        log.info("config changed: %d collections", len(config.collections))
        await self.apply_config(config, rescan=True)
        self.config_digest = digest

    async def apply_config(self, config: Config, rescan: bool) -> None:
        """Adopt a config: rows of removed collections go, watches follow the collections."""
        self.config = config
        self.config_digest = _digest(self.paths.config_file)
        self.models.configure(config.models)
        self.vectors.wake.set()
        await self.writer.sync_collections(config.collections)
        if self.watcher is not None:
            self.watcher.sync(config.collections, rescan=rescan)

    def collection(self, name: str) -> CollectionConfig | None:
        return next((c for c in self.config.collections if c.name == name), None)

    async def _watch_config(self) -> None:
        """Hand edits of config.toml take effect without a restart (errors are kept in status).

        The watch also wakes every 2 s to compare the file's digest: an edit made before
        the OS watch was in place (right after start) is still picked up."""
        folder = self.paths.config_dir
        os.makedirs(folder, exist_ok=True)
        target = os.path.realpath(self.paths.config_file)
        async for _ in watchfiles.awatch(
            folder,
            stop_event=self.stopping,
            step=50,
            debounce=500,
            rust_timeout=2000,
            yield_on_timeout=True,
            watch_filter=lambda _c, p: os.path.realpath(p) == target,
        ):
            if self.config_error and _digest(self.paths.config_file) == self.rejected_digest:
                continue  # the same broken file, already reported
            try:
                await self.reload_config(CONFIG_QUIET_S)
            except RpcError as e:
                log.warning("config not reloaded: %s", e.message)

    # --- dispatch ------------------------------------------------------------------

    async def dispatch(self, req: Request, call: Call) -> Any:
        if req.gno != wire.PROTOCOL_VERSION:
            raise RpcError(
                wire.VERSION_MISMATCH,
                f"client speaks protocol {req.gno}, this gnod speaks {wire.PROTOCOL_VERSION}; "
                "restart the daemon (gnoctl daemon restart)",
                {"daemon": wire.PROTOCOL_VERSION, "client": req.gno},
            )
        handler = METHODS.get(req.method)
        if handler is None:
            raise RpcError(
                wire.METHOD_NOT_FOUND, f"unknown method {wire.said(req.method)}", {"methods": sorted(METHODS)}
            )
        if self.stopping.is_set() and req.method != "status":
            raise RpcError(wire.SHUTTING_DOWN, "gnod is shutting down")
        try:
            params = _param_decoders[req.method].decode(req.params)
        except msgspec.ValidationError as e:
            raise RpcError(wire.INVALID_PARAMS, f"invalid params for {req.method}: {_as_read(e)}") from None
        except (msgspec.DecodeError, UnicodeDecodeError) as e:
            raise RpcError(wire.PARSE_ERROR, f"params for {req.method} are not valid JSON: {e}") from None
        except RecursionError:
            raise RpcError(wire.PARSE_ERROR, f"params for {req.method} are nested too deeply") from None
        return await handler(self, params, call)

    # --- lifecycle -------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        uid = wire.peer_uid(sock) if sock is not None else None
        if uid is not None and uid != os.getuid():
            log.warning("refused a connection from uid %s", uid)
            conn = Connection(self, reader, writer)
            conn.send_error(None, wire.PERMISSION_DENIED, "permission denied: gnod serves only its own user")
            await writer.drain()
            writer.close()
            return
        conn = Connection(self, reader, writer)
        if len(self._connections) >= wire.MAX_CONNECTIONS:
            log.warning("refused a connection: %d are open", len(self._connections))
            conn.send_error(
                None,
                wire.BUSY,
                f"gnod serves at most {wire.MAX_CONNECTIONS} connections at once; close idle clients, "
                f"or retry in {wire.CONNECTIONS_RETRY_MS} ms",
                {"retry_after_ms": wire.CONNECTIONS_RETRY_MS},
            )
            await writer.drain()
            writer.close()
            return
        self._connections.add(conn)
        try:
            await conn.serve()
        finally:
            self._connections.discard(conn)

    def request_stop(self) -> None:
        if not self.stopping.is_set():
            log.info("stopping")
            self.stopping.set()
            self.writer.stop.set()

    async def serve(self) -> None:
        """Run until SIGTERM/SIGINT or a `shutdown` call; always cleans up."""
        self.instance.acquire()
        try:
            loop = asyncio.get_running_loop()

            def on_changes(collection: str, changes: ChangeList) -> None:  # on the writer thread
                loop.call_soon_threadsafe(self.events.publish, collection, changes)

            self.writer.on_changes = on_changes
            applied = self.writer.open()
            if applied:
                log.info("migrated index: %s", ", ".join(applied))
            # What searches read, into memory while the rest starts (after a restart it is on the disk).
            warm = (self.writer.lexical.path, self.paths.db_file)
            threading.Thread(target=page_cache.warm, args=warm, name="page-cache", daemon=True).start()
            await self.writer.sync_collections(self.config.collections)
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.request_stop)
            old_umask = os.umask(0o177)
            try:
                server = await asyncio.start_unix_server(self._accept, path=self.paths.socket_path)
            finally:
                os.umask(old_umask)
            os.chmod(self.paths.socket_path, 0o600)
            log.info("gnod %s listening on %s (pid %d)", __version__, self.paths.socket_path, os.getpid())
            # First on the writer: searches wait for it, new writes queue behind it.
            reconcile_task = asyncio.create_task(self._reconcile_lexical(), name="lexical:reconcile")
            # Watch first, then reconcile (stat-only): nothing changed meanwhile is missed.
            p = self.paths
            own = [p.home] if p.home else [p.data_dir, p.state_dir, p.runtime_dir, p.cache_dir, p.config_dir]
            for d in own:
                os.makedirs(d, exist_ok=True)
            set_own_dirs(own)
            self.watcher = Watcher(self.writer, own, self.collection)
            self.watcher.sync(self.config.collections, rescan=True)
            config_task = asyncio.create_task(self._watch_config(), name="watch:config")
            if self.search_process is not None:
                self.search_process.start()
            await self.vectors.start()

            def on_content_change() -> None:
                self.vectors.wake.set()
                self.symbols.changed()
                self.ocr.wake.set()

            self.writer.on_content_change = on_content_change
            background = [
                asyncio.create_task(self.vectors.run(self.stopping), name="vectors"),
                asyncio.create_task(self.symbols.run(self.stopping), name="symbols"),
                asyncio.create_task(self.ocr.run(self.stopping), name="ocr"),
                asyncio.create_task(self.models.idle_loop(self.stopping), name="models:idle"),
            ]
            if self.config.models.eager:
                background.append(asyncio.create_task(self.models.load_eager(), name="models:eager"))
            async with server:
                await self.stopping.wait()
                server.close()
                config_task.cancel()
                reconcile_task.cancel()
                for t in background:
                    t.cancel()
                await self.watcher.close()
                # Drain: let in-flight calls finish (the writer stops at its next batch).
                pending = [t for c in self._connections for t in c.tasks]
                if pending:
                    await asyncio.wait(pending, timeout=10)
                for c in list(self._connections):
                    c.writer.close()
                await self.vectors.close()
        finally:
            await asyncio.get_running_loop().run_in_executor(None, self.models.close)
            if self._llm_cache is not None:
                self._llm_cache.close()
            await asyncio.get_running_loop().run_in_executor(None, self.writer.close)
            self._readers.shutdown()
            if self.search_process is not None:
                self.search_process.close()
            for lane in self._lanes.values():
                lane.shutdown(wait=False, cancel_futures=True)
            self.instance.release()
            log.info("stopped")


def _read(path: str) -> bytes | None:
    """The config file's bytes; None when there is none (an empty config)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


async def _settled(path: str, quiet_s: float) -> bytes | None:
    """_read, once the file has not been written for `quiet_s` and was not written while
    it was read: an editor saving in place truncates the file before writing it, and read
    in between it is a config without collections."""
    while True:
        try:
            before = os.stat(path)
        except FileNotFoundError:
            return None
        age = time.time() - before.st_mtime
        if 0 <= age < quiet_s:
            await asyncio.sleep(quiet_s - age)
            continue
        raw = _read(path)
        after = os.stat(path)
        if (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size):
            return raw


def _dropped(old: Config, new: Config) -> bool:
    """Whether adopting `new` would remove a collection `old` has."""
    return bool({c.name for c in old.collections} - {c.name for c in new.collections})


def _digest(path: str) -> bytes | None:
    """The config's content hash: edits are noticed even within one mtime tick."""
    try:
        raw = _read(path)
    except OSError:
        return None
    return None if raw is None else hashlib.sha256(raw).digest()
