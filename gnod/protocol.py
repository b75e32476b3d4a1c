"""Typed wire contract: one params Struct and one result Struct per JSON-RPC method.

The daemon decodes every request's params with the method's own decoder (built once),
so bad input is rejected with msgspec's message (path + reason) as INVALID_PARAMS
before any handler runs. Clients may send plain JSON; see docs/protocol.md.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct

from gnod.wire import PROTOCOL_VERSION

Limit = Annotated[int, Meta(ge=1, le=1000)]
Score = Annotated[float, Meta(ge=0.0, le=1.0)]
Name = Annotated[str, Meta(min_length=1, max_length=64)]


class Request(Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: int | str | None = None
    method: str
    params: msgspec.Raw = msgspec.Raw(b"{}")
    gno: int = PROTOCOL_VERSION


class Params(Struct, forbid_unknown_fields=True, kw_only=True):
    """Base for all params: unknown fields are a client bug worth reporting."""


# --- params --------------------------------------------------------------------------


class StatusParams(Params):
    pass


class CollectionAddParams(Params):
    name: Name
    path: Annotated[str, Meta(min_length=1)]
    include: list[str] = []
    exclude: list[str] = []
    language: str | None = None
    gitignore: bool = True
    index: bool = True  # index right away (progress is streamed)


class CollectionNameParams(Params):
    name: Name


class CollectionListParams(Params):
    pass


class IndexParams(Params):
    collection: str | None = None  # None: every collection


class SearchParams(Params):
    query: Annotated[str, Meta(max_length=2000)]
    limit: Limit = 10
    min_score: Score = 0.0
    collections: list[str] = []
    snippets: bool = True
    # Wait up to this long for pending changes (watcher) to be indexed before searching.
    wait_s: Annotated[float, Meta(ge=0.0, le=600.0)] = 0.0


class VSearchParams(Params):
    query: Annotated[str, Meta(min_length=1, max_length=8000)]
    limit: Limit = 10
    min_score: Score = 0.0
    collections: list[str] = []


class EmbedParams(Params):
    force: bool = False  # drop this model's vectors and embed everything again
    wait: bool = True  # return when the backlog is empty (progress is streamed)


class ModelsParams(Params):
    pass


class ModelPullParams(Params):
    # A role (embed, rerank, generate) of the configured preset, or a model URI.
    target: Annotated[str, Meta(min_length=1)] = "all"


class ModelUseParams(Params):
    # A preset name, or role=URI to override one role.
    preset: str | None = None
    role: str | None = None
    uri: str | None = None


class ModelClearParams(Params):
    uri: str | None = None  # None: every cached model file


class GetParams(Params):
    ref: Annotated[str, Meta(min_length=1)]
    from_line: Annotated[int, Meta(ge=1)] | None = None
    lines: Annotated[int, Meta(ge=1)] | None = None


class MultiGetParams(Params):
    refs: list[str] = []
    pattern: str | None = None  # glob over `collection/rel_path`
    max_bytes: Annotated[int, Meta(ge=1)] = 1_048_576


class LsParams(Params):
    collection: str | None = None
    prefix: str = ""
    limit: Annotated[int, Meta(ge=1, le=100_000)] = 1000
    offset: Annotated[int, Meta(ge=0)] = 0


class ShutdownParams(Params):
    pass


# --- results -------------------------------------------------------------------------


class Snippet(Struct):
    line: int  # 1-based line of the stored Markdown where `text` starts
    text: str


class SearchHit(Struct):
    docid: int
    uri: str  # gno://collection/rel_path
    collection: str
    path: str  # relative to the collection root
    abs_path: str
    title: str
    score: float  # normalized per query to [0, 1]; not comparable across queries
    bm25: float  # raw FTS5 bm25 (more negative = better)
    language: str | None
    snippet: Snippet | None = None


class Freshness(Struct):
    """How up to date a collection is: what the watcher has seen and not yet indexed."""

    collection: str
    watching: bool = False
    files: int | None = None  # files in the collection at the last full pass
    pending: int = 0  # changed paths seen, not yet indexed
    indexing: bool = False
    last_change_at: float | None = None  # unix time of the last filesystem event
    last_indexed_at: float | None = None
    last_error: str | None = None


class SearchResult(Struct):
    query: str
    hits: list[SearchHit]
    total_candidates: int
    terms: list[str]
    dropped_stopwords: list[str]
    languages: list[str | None]
    took_ms: float
    freshness: list[Freshness] = []


class Document(Struct):
    docid: int
    uri: str
    collection: str
    path: str
    abs_path: str
    title: str
    language: str | None
    metadata: dict[str, Any]
    mirror_hash: str
    from_line: int
    to_line: int
    total_lines: int
    content: str
    truncated: bool = False


class MultiGetResult(Struct):
    documents: list[Document]
    missing: list[str]
    truncated: bool


class LsEntry(Struct):
    docid: int
    uri: str
    collection: str
    path: str
    title: str
    size: int
    mtime_ns: int
    language: str | None


class LsResult(Struct):
    entries: list[LsEntry]
    total: int


class CollectionInfo(Struct):
    name: str
    path: str
    include: list[str]
    exclude: list[str]
    language: str | None
    gitignore: bool
    documents: int = 0
    errors: int = 0
    last_indexed_at: int | None = None


class CollectionListResult(Struct):
    collections: list[CollectionInfo]


class IndexStats(Struct):
    collection: str
    scanned: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    errors: int = 0
    seconds: float = 0.0


class IndexResult(Struct):
    collections: list[IndexStats]
    seconds: float


class Progress(Struct):
    """Sent as a `progress` notification while a long call runs."""

    id: int | str | None
    collection: str
    phase: str  # "scan" | "index" | "done" | "embed" | "pull"
    done: int
    total: int
    path: str = ""


class IngestErrorInfo(Struct):
    collection: str
    path: str
    code: str
    reason: str
    at: int


class JobInfo(Struct):
    running: bool
    collection: str | None = None
    done: int = 0
    total: int = 0


class ModelInfo(Struct):
    role: str
    uri: str
    state: str  # unloaded | loading | ready | missing (not downloaded) | error
    path: str | None = None
    size_bytes: int | None = None
    rss_bytes: int | None = None  # resident memory the load added
    load_seconds: float | None = None
    last_used_at: float | None = None
    error: str | None = None
    fix: str | None = None


class VectorInfo(Struct):
    available: bool  # sqlite-vec loaded and an embedding model usable
    reason: str | None = None  # why not, once, for every client
    model: str | None = None  # the embedding model new vectors are made with
    serving: str | None = None  # the model whose vectors vsearch uses (differs while switching)
    chunks: int = 0
    embedded: int = 0
    pending: int = 0
    embedding: bool = False
    rate_per_s: float | None = None


class StatusResult(Struct):
    version: str
    protocol: int
    pid: int
    uptime_s: float
    db_path: str
    db_bytes: int
    config_path: str
    socket_path: str
    documents: int
    collections: list[CollectionInfo]
    languages: list[str | None]
    job: JobInfo
    recent_errors: list[IngestErrorInfo]
    freshness: list[Freshness] = []
    config_error: str | None = None
    models: list[ModelInfo] = []
    vectors: VectorInfo | None = None


class VSearchHit(Struct):
    docid: int
    uri: str
    collection: str
    path: str
    abs_path: str
    title: str
    score: float  # 1 - cosine distance / 2 = (1 + cos) / 2, in [0, 1]
    cosine: float
    chunk: int  # sequence number of the best-matching chunk
    start_line: int
    end_line: int
    text: str  # that chunk's text


class VSearchResult(Struct):
    query: str
    model: str
    hits: list[VSearchHit]
    took_ms: float


class EmbedResult(Struct):
    model: str
    embedded: int
    pending: int
    seconds: float


class ModelEntry(Struct):
    role: str
    uri: str
    preset: str | None
    cached: bool
    path: str | None = None
    size_bytes: int | None = None
    licence: str | None = None


class ModelsResult(Struct):
    preset: str
    presets: list[str]
    models: list[ModelEntry]
    cache_dir: str
    loaded: list[ModelInfo] = []


class ModelPullResult(Struct):
    pulled: list[ModelEntry]


class OkResult(Struct):
    ok: bool = True
    message: str = ""


class CollectionRemoveResult(Struct):
    name: str
    documents_removed: int


class ErrorData(Struct):
    name: str
    details: dict[str, Any] = {}


METHOD_PARAMS: dict[str, type[Params]] = {
    "status": StatusParams,
    "collection.add": CollectionAddParams,
    "collection.list": CollectionListParams,
    "collection.remove": CollectionNameParams,
    "index": IndexParams,
    "search": SearchParams,
    "get": GetParams,
    "multi_get": MultiGetParams,
    "ls": LsParams,
    "shutdown": ShutdownParams,
    "vsearch": VSearchParams,
    "embed": EmbedParams,
    "models.list": ModelsParams,
    "models.pull": ModelPullParams,
    "models.use": ModelUseParams,
    "models.clear": ModelClearParams,
}
