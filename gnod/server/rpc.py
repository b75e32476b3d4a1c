"""What a method handler sees of the server: the daemon, its call, and how to fail.

Handlers import this module, never `server/app.py`: the app imports the method table
(`server/methods.py`), which imports the handlers, so dependencies flow one way.
`Daemon` is the part of `app.Daemon` handlers may use; mypy checks that the class
matches it where the app dispatches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from gnod import wire
from gnod.models.base import ModelUnavailable
from gnod.server.call import Call

if TYPE_CHECKING:
    import apsw

    from gnod.config import CollectionConfig, Config
    from gnod.models.manager import Models
    from gnod.paths import Paths
    from gnod.protocol import SearchParams, SearchResult
    from gnod.search.filters import Filter
    from gnod.server.events import Events
    from gnod.server.jobs import Writer
    from gnod.server.ocr import OcrBacklog
    from gnod.server.search_process import SearchProcess
    from gnod.server.symbols import Symbols
    from gnod.server.vectors import Vectors
    from gnod.server.watcher import Watcher
    from gnod.store.lexical_index import LexicalIndex
    from gnod.store.llm_cache import LlmCache
    from gnod.text.analyzer import AnalyzerSet

# Where a read runs (Daemon.read): the readers clients share, or a thread of its own.
Lane = Literal["clients", "control", "background"]
T = TypeVar("T")


class RpcError(Exception):
    """An error for the client: a JSON-RPC code, a message for a person, details."""

    def __init__(self, code: int, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}


def model_unavailable(e: ModelUnavailable) -> RpcError:
    """A missing or broken model, with its fix, as the client sees it."""
    return RpcError(wire.MODEL_UNAVAILABLE, e.text(), {"role": e.role, "fix": e.fix})


class Daemon(Protocol):
    """The daemon's state and services, as handlers use them."""

    paths: Paths
    config: Config
    config_error: str | None  # a hand edit that failed to load (the old config is kept)
    started: float
    stopping: asyncio.Event
    writer: Writer
    search_process: SearchProcess | None  # answers searches beside the readers (None on one core)
    models: Models
    vectors: Vectors
    symbols: Symbols
    ocr: OcrBacklog
    events: Events
    watcher: Watcher | None

    @property
    def llm_cache(self) -> LlmCache: ...

    async def read(
        self,
        fn: Callable[[apsw.Connection, AnalyzerSet], T],
        lane: Lane = "clients",
        remote: Callable[[], T] | None = None,
    ) -> T: ...

    def search_remote(self, p: SearchParams, where: Filter) -> Callable[[], SearchResult] | None: ...

    def reader_load(self) -> tuple[int, int, list[float]]: ...

    def language_counts(self, conn: apsw.Connection) -> dict[str | None, int]: ...

    async def lexical(self) -> LexicalIndex: ...

    def languages(self, conn: apsw.Connection) -> list[str | None]: ...

    def collection(self, name: str) -> CollectionConfig | None: ...

    async def reload_config(self) -> None: ...

    async def apply_config(self, config: Config, rescan: bool) -> None: ...

    def request_stop(self) -> None: ...


Handler = Callable[[Daemon, Any, Call], Awaitable[Any]]
