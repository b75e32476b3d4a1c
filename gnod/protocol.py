"""Typed wire contract: one params Struct and one result Struct per JSON-RPC method.

The daemon decodes every request's params with the method's own decoder (built once),
so bad input is rejected with msgspec's message (path + reason) as INVALID_PARAMS
before any handler runs. Clients may send plain JSON; see docs/protocol.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, TypeVar

import msgspec
from msgspec import Meta, Struct

from gnod.wire import FILE_LIST_MAX, PROTOCOL_VERSION, SEARCH_RESULTS_MAX, STATUS_ERRORS_MAX

Limit = Annotated[int, Meta(ge=1, le=SEARCH_RESULTS_MAX)]
Score = Annotated[float, Meta(ge=0.0, le=1.0)]
Name = Annotated[str, Meta(min_length=1, max_length=64)]
# A collection's description: a sentence or two for people and agents, not a document.
DESCRIPTION_MAX = 500
Description = Annotated[str, Meta(max_length=DESCRIPTION_MAX)]
# A pasted paragraph or page is a query too: past the term cap, the rarest terms are kept.
QueryText = Annotated[str, Meta(min_length=1, max_length=32_000)]


ChangeKind = Literal["added", "changed", "removed"]  # what a commit did to a document (`watch`)


class Request(Struct, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: int | str | None = None
    method: str
    params: msgspec.Raw = msgspec.Raw(b"{}")
    gno: int = PROTOCOL_VERSION


class Params(Struct, forbid_unknown_fields=True, kw_only=True):
    """Base for all params: unknown fields are a client bug worth reporting."""


def cli(*flags: str, help: str, metavar: str | None = None, complete: str | None = None, words: bool = False) -> Meta:
    """A params field as gnoctl's command of the method's name spells it: its flags (none:
    the command's argument; `words`: all its words, joined by spaces), help and metavar;
    `complete` names a shell completion. The JSON Schemas do not show it:
    scripts/gen_schemas.py writes gnoctl/spec.py from it, and gnoctl's fast parser, typer
    options and range checks all come from that."""
    extra = {"cli": flags, "help": help, "metavar": metavar, "complete": complete, "words": words}
    return Meta(extra=extra)


# A params field holding a Struct whose fields are options of the command too.
NESTED = Meta(extra={"cli_nested": True})
COLLECTION = cli("-c", "--collection", help="Only this collection (repeatable).", complete="collections")
WAIT = cli(
    "--wait",
    metavar="SECONDS",
    help="First wait up to SECONDS for changes the watcher has seen, and a collection add or "
    "update under way, to be indexed, and pictures and scans saved in the last 2 minutes to be read by OCR "
    "(read-your-writes after saving a file).",
)
MODE = cli(
    "--mode",
    help="standard: fast, up to 32 results; deep: a bigger pool, up to 100 results, needs at least 2 keywords.",
)
NO_EXPAND = cli(
    "--no-expand", help="Do not generate query variants with the LLM (they are skipped anyway when BM25 is confident)."
)
NO_RERANK = cli("--no-rerank", help="Keep the fused order; do not run the cross-encoder.")


# --- params --------------------------------------------------------------------------


class StatusParams(Params):
    # How many ingest errors `recent_errors` lists, the most recent first.
    errors: Annotated[int, Meta(ge=0, le=STATUS_ERRORS_MAX)] = 20


class CollectionAddParams(Params):
    name: Name
    path: Annotated[str, Meta(min_length=1)]
    include: list[str] = []
    exclude: list[str] = []
    also: list[str] = []  # files indexed besides those `include` (or the default kinds) takes
    language: str | None = None
    gitignore: bool = True
    follow_symlinks: bool = False  # follow links whose targets stay inside the collection
    index: bool = True  # index right away (progress is streamed)
    # Accept a folder another collection covers (same folder, parent or sub-folder).
    allow_overlap: bool = False
    description: Description | None = None


class CollectionNameParams(Params):
    name: Name


class CollectionDescribeParams(Params):
    name: Name
    description: Description  # "" removes it


class CollectionSetParams(Params):
    """A collection's settings of which files it indexes: each one given replaces the
    one in force (a list given empty empties it); null leaves it as it is."""

    name: Name
    include: list[str] | None = None
    exclude: list[str] | None = None
    also: list[str] | None = None
    language: str | None = None  # "auto": detected per document again
    gitignore: bool | None = None
    follow_symlinks: bool | None = None
    index: bool = True  # index right away what the new settings take in or leave out


class CollectionListParams(Params):
    pass


class IndexParams(Params):
    collection: str | None = None  # None: every collection


DAY_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
IsoDate = Annotated[str, Meta(pattern=DAY_PATTERN)]


class Filters(Params):
    """Which documents a search may return; applied inside the index query, so `limit`
    results still come back when that many documents pass (see docs/protocol.md)."""

    # Every one among the document's tags (case-insensitive): its frontmatter `tags` and
    # `keywords`, and a Markdown note's `#tags` in its text.
    tags: Annotated[
        list[str],
        cli(
            "--tag",
            help="Only documents with this tag: frontmatter tags or keywords, a note's #tags; case and accents "
            "ignored, a parent finds its nested tags (repeatable: all of them).",
        ),
    ] = []
    # The document's date (frontmatter `date` or `created`, else its file's name's day, else mtime, UTC) ≥
    since: (
        Annotated[
            IsoDate,
            cli(
                "--since",
                metavar="DAY",
                help="Only documents dated on or after this day (YYYY-MM-DD, 14.03.2025, yesterday, 3.days.ago, "
                "2 weeks ago; a month, 2024-10 or 'october 2024', or a year from its first day; the document's "
                "frontmatter `date` or `created`, else a day its file's name starts with, 2025-03-14.md, else the "
                "file's modification time).",
            ),
        ]
        | None
    ) = None
    # The document's date ≤
    until: (
        Annotated[
            IsoDate,
            cli(
                "--until",
                metavar="DAY",
                help="Only documents dated on or before this day (a month or a year: to its last).",
            ),
        ]
        | None
    ) = None
    # Glob over the path inside its collection (`*` spans `/`), or several: a document
    # passes when it matches one of those without `!` (if any) and none of those with `!`.
    path: (
        Annotated[
            str | list[str],
            cli(
                "--path",
                metavar="GLOB",
                help="Only documents whose path in its collection matches GLOB (`*` spans folders; `**/` may be "
                "none; `{c,h}`: either; a folder: what it holds; a first folder that names a collection: in it; "
                "`.`, `./usb/*`: from the working directory; repeatable: any of them; `!GLOB`: none of those).",
            ),
        ]
        | None
    ) = None
    # Kinds of files (gnod.config.FILE_TYPES' names): a document of any of them passes.
    types: Annotated[
        list[str],
        cli(
            "-t",
            "--type",
            metavar="TYPE",
            help="Only files of this type, as ripgrep's -t (c, cpp, py, go, rust, js, ts, java, sh, asm, dts, kconfig, "
            "make, md, rst, txt, yaml, json, pdf, office, docx, csv, mail, image…; an extension in any case, for "
            "the type holding it: png is image, .PDF pdf; one no type holds, with its dot, for its files: .litmus; a "
            "document's file matches whether its extension is .pdf or .PDF; an unknown name lists the types; "
            "repeatable: any of them).",
            complete="types",
        ),
    ] = []
    # The document's language: a Snowball name or an ISO code.
    lang: (
        Annotated[
            str, cli("--lang", help="Only documents in this language (de, german, …); the query is stemmed in it.")
        ]
        | None
    ) = None
    # Part of the frontmatter `from` (a message's sender, "Name <address>"), in any case.
    sender: (
        Annotated[
            str,
            cli(
                "--from",
                metavar="SENDER",
                help="Only messages whose sender holds SENDER, in any case, accents aside (an address, a domain, "
                "a name).",
            ),
        ]
        | None
    ) = msgspec.field(default=None, name="from")


class SearchParams(Params):
    query: Annotated[str, Meta(max_length=32_000), cli(help='Words, "quoted phrases", -negated terms.', words=True)]
    # At most SEARCH_RESULTS_MAX with passages, FILE_LIST_MAX without (gnod.server.retrieval).
    limit: Annotated[
        int,
        Meta(ge=1, le=FILE_LIST_MAX),
        cli(
            "-n",
            "--limit",
            help=f"Number of results (at most {SEARCH_RESULTS_MAX:,}; "
            f"{FILE_LIST_MAX:,} with --files or --no-snippets).",
        ),
    ] = 10
    min_score: Annotated[Score, cli("--min-score", help="Drop results scoring below this.")] = 0.0
    collections: Annotated[list[str], COLLECTION] = []
    filters: Annotated[Filters, NESTED] = msgspec.field(default_factory=Filters)
    snippets: Annotated[
        bool, cli("--no-snippets", help="Leave out the matching lines: faster on big documents (with --files, say).")
    ] = True
    symbol: Annotated[
        bool,
        cli(
            "--symbol",
            help="Find where QUERY is defined in source code (a function, method, class, type or macro; "
            "any case; NAME* for names starting so; `struct NAME`, `fn NAME`: that kind first; `Class.method`, "
            "`module.NAME`, `module::NAME`: by its class, or the file or folder it is in), not where it is "
            "mentioned.",
        ),
    ] = False
    # Passages (snippets) per document.
    per_doc: Annotated[
        int,
        Meta(ge=1, le=10),
        cli(
            "--per-doc",
            metavar="N",
            help="Up to N passages per document (--csv: a line each; --vimgrep: a line per matching line).",
        ),
    ] = 1
    # Each passage as the N lines before its matching line, that line and the N after it
    # (the file's lines); null: the matching line and the lines after it that fit.
    context: (
        Annotated[
            int,
            Meta(ge=0, le=50),
            cli(
                "-C",
                "--context",
                metavar="N",
                help="Show N lines before and after each passage's matching line, as grep -C (--vimgrep: "
                "the matching lines alone).",
            ),
        ]
        | None
    ) = None
    # Wait up to this long for pending changes (watcher) to be indexed before searching.
    wait_s: Annotated[float, Meta(ge=0.0, le=600.0), WAIT] = 0.0


class VSearchParams(Params):
    query: Annotated[QueryText, cli(help="What you are looking for, in your own words.", words=True)]
    limit: Annotated[Limit, cli("-n", "--limit", help="Number of results.")] = 10
    min_score: Annotated[Score, cli("--min-score", help="Drop results below this similarity (0-1).")] = 0.0
    collections: Annotated[list[str], COLLECTION] = []
    filters: Annotated[Filters, NESTED] = msgspec.field(default_factory=Filters)


class Variants(Struct, forbid_unknown_fields=True, kw_only=True):
    """Query variants a client (an agent) wrote itself, used instead of the local generator's."""

    lexical: Annotated[
        list[Annotated[str, Meta(min_length=1, max_length=200)]],
        Meta(max_length=8),
        cli(
            "--lex",
            metavar="KEYWORDS",
            help="Your own keyword variant, searched with BM25 (repeatable; with --vec/--hyde instead of the LLM's).",
        ),
    ] = []
    semantic: Annotated[
        list[Annotated[str, Meta(min_length=1, max_length=1000)]],
        Meta(max_length=8),
        cli("--vec", metavar="TEXT", help="Your own rephrasing, searched by meaning (repeatable)."),
    ] = []
    hyde: (
        Annotated[
            str,
            Meta(min_length=1, max_length=4000),
            cli("--hyde", metavar="TEXT", help="A passage that would answer the query, searched by meaning."),
        ]
        | None
    ) = None


class QueryParams(Params):
    """Hybrid search (BM25 + vectors + expansion + reranking); see docs/protocol.md."""

    query: Annotated[QueryText, cli(help="What you are looking for: keywords or a question.", words=True)]
    # Capped at the mode's maximum (standard 32, deep 100).
    limit: Annotated[
        Limit, cli("-n", "--limit", help="Number of results (at most 32 in standard mode, 100 in deep).")
    ] = 10
    mode: Annotated[Literal["standard", "deep"], MODE] = "standard"
    min_score: Annotated[Score, cli("--min-score", help="Drop results below this final score.")] = 0.0
    collections: Annotated[list[str], COLLECTION] = []
    filters: Annotated[Filters, NESTED] = msgspec.field(default_factory=Filters)
    # LLM query expansion (skipped anyway on a strong BM25 signal).
    expand: Annotated[bool, NO_EXPAND] = True
    rerank: Annotated[bool, NO_RERANK] = True  # cross-encoder reranking of the top candidates
    # Per-hit and per-query breakdown (QueryExplain).
    explain: Annotated[
        bool,
        cli(
            "--explain",
            help="Show how each score was made: lists, fusion, reranker, blend, floors; and each stage's time.",
        ),
    ] = False
    wait_s: Annotated[float, Meta(ge=0.0, le=600.0), WAIT] = 0.0
    variants: Annotated[Variants, NESTED] | None = None  # given: used as the expansion, no generator runs


class AskParams(Params):
    """Retrieve, then answer from the sources with citations [1], [2]…"""

    # The question goes into the generator's prompt beside the sources: a question, not a page.
    query: Annotated[str, Meta(min_length=1, max_length=2000), cli(help="A question about your documents.", words=True)]
    # Most sources given to the generator.
    sources: Annotated[int, Meta(ge=1, le=10), cli("-n", "--sources", help="Most sources given to the model.")] = 5
    mode: Annotated[Literal["standard", "deep"], MODE] = "standard"
    collections: Annotated[list[str], COLLECTION] = []
    filters: Annotated[Filters, NESTED] = msgspec.field(default_factory=Filters)
    expand: Annotated[bool, NO_EXPAND] = True
    rerank: Annotated[bool, NO_RERANK] = True
    # False: return the selected sources only.
    answer: Annotated[
        bool, cli("--no-answer", help="Only find the sources; generate nothing (no generate model needed).")
    ] = True
    variants: Variants | None = None  # as in `query`
    stream: bool = True  # send the answer as `token` notifications while it is generated
    max_tokens: Annotated[int, Meta(ge=16, le=4096), cli("--max-tokens", help="Longest answer, in tokens.")] = 512
    explain: Annotated[
        bool, cli("--explain", help="Also show how the sources were retrieved (as `query --explain`).")
    ] = False


class EmbedParams(Params):
    force: bool = False  # drop this model's vectors and embed everything again
    wait: bool = True  # return when the backlog is empty (progress is streamed)


class ModelsParams(Params):
    pass


class ModelPullParams(Params):
    # A role (embed, rerank, generate) of the configured preset, or a model URI.
    target: Annotated[str, Meta(min_length=1)] = "all"


class ModelUseParams(Params):
    # A preset name, and/or role=URI overrides: all applied at once, or none.
    preset: str | None = None
    role: str | None = None
    uri: str | None = None
    roles: dict[str, str] = {}  # role → URI, several at once


class ModelClearParams(Params):
    uri: str | None = None  # None: every cached model file


class GetParams(Params):
    ref: Annotated[
        str,
        Meta(min_length=1),
        cli(
            help="collection/path[:line, :first-last, :NAME (a definition in it) or :Heading / #Heading (a "
            "section)], gno://collection/path, an absolute path, #docid, a path inside the one collection that "
            "has it, a file's name alone (a note's without .md), or (gnoctl) a path from the working directory "
            "to a file, which it is first."
        ),
    ]
    from_line: Annotated[int, Meta(ge=1), cli("--from-line", help="First line to print.")] | None = None
    lines: Annotated[int, Meta(ge=1), cli("-l", "--lines", help="Number of lines.")] | None = None
    # At most this many bytes of text, whole lines (`truncated`, `to_line` the last one
    # given): what an agent's context holds of a 24 MB generated header.
    max_bytes: Annotated[int, Meta(ge=1)] | None = None


class MultiGetParams(Params):
    refs: list[str] = []
    # Globs over `collection/rel_path` (one, or a list: the documents of any of them).
    pattern: str | list[str] | None = None
    max_bytes: Annotated[int, Meta(ge=1)] = 1_048_576
    # False: the documents without their text (content "", lines 0) and no byte budget:
    # what a list of their files needs (`multi-get --files`).
    content: bool = True


class LsParams(Params):
    collection: str | None = None
    prefix: str = ""
    limit: Annotated[int, Meta(ge=1, le=100_000)] = 1000
    offset: Annotated[int, Meta(ge=0)] = 0
    # One level, as ls(1): the folders right in `prefix` (a folder) and the documents directly in it.
    folders: bool = False
    # Only the documents that pass these, as a search's (tags, days, path globs, types, language,
    # sender); not with `folders`.
    filters: Annotated[Filters, NESTED] = msgspec.field(default_factory=Filters)


class SimilarParams(Params):
    """Documents like a given one: by its vectors when it has them, else by its rarest words."""

    # As `get`: collection/path, gno://…, an absolute path, #docid; a suffix (`:120`, `:NAME`) names the whole document.
    ref: Annotated[
        str,
        Meta(min_length=1),
        cli(
            help="A document: collection/path, gno://collection/path, an absolute path, #docid, or (gnoctl) a "
            "path from the working directory to a file, which it is first; a line or definition after it (a "
            "hit's path:LINE) names the whole document."
        ),
    ]
    limit: Annotated[Limit, cli("-n", "--limit", help="Number of results.")] = 10
    collections: Annotated[list[str], COLLECTION] = []
    filters: Annotated[Filters, NESTED] = msgspec.field(default_factory=Filters)


class ShutdownParams(Params):
    pass


class WatchParams(Params):
    collections: list[str] = []  # empty: every collection, including ones added later
    # Events held for a subscriber that reads slower than they come; beyond this it
    # gets one `lagged` notice instead of unbounded buffering.
    queue: Annotated[int, Meta(ge=1, le=100_000)] = 1000


# --- results -------------------------------------------------------------------------


class Snippet(Struct):
    line: int  # 1-based line of the file where `text` starts (docs/protocol.md: lines)
    text: str
    matches: list[list[int]] = []  # [start, end) character offsets in `text` of the matched words
    # In source code: the definition the passage is in, `foo_probe()`, `Parser.parse()`, `struct foo`.
    symbol: str | None = None
    # `text` cut from a long line after its start ("…" first): the UTF-8 bytes of the line
    # before the cut (a match's byte column is this plus its bytes after the "…"); else 0.
    offset: int = 0
    # The lines of `text` before the line it was found by (search's `context`); else 0.
    before: int = 0
    # A passage of a table's rows (a spreadsheet's, a CSV's, a Markdown table's) far below
    # its header row: that row, which names the columns; else null.
    table_header: str | None = None


class DocumentIdentity(Struct, kw_only=True):
    """Which document a hit or a read is: the fields every client shows and links from
    (built in one place, server/hits.py `identity`). Keyword-only, here and in each
    result that has these fields: a field with a default may be added here, and the
    fields are still sent in this order."""

    docid: int
    uri: str  # gno://collection/rel_path
    collection: str
    path: str  # relative to the collection root
    abs_path: str
    title: str
    # Its text is not abs_path's: converted from another format (HTML, PDF, Office, mail…)
    # or a member of an archive or mailbox. Its lines number that text, as `get` gives it.
    converted: bool = False
    # Its own date as its frontmatter, a mail's Date or an event's start gives it (not its
    # file's), and a mail's sender; else null.
    date: str | None = None
    sender: str | None = None


class SearchHit(DocumentIdentity, kw_only=True):
    score: float  # ranking bm25 / the best hit's, in (0, 1] (docs/protocol.md); not comparable across queries
    bm25: float  # (bm25 of stems + w · bm25 of exact forms) / (1 + w); more negative = better
    language: str | None
    snippet: Snippet | None = None  # the best passage
    snippets: list[Snippet] = []  # with per_doc > 1: up to per_doc passages, best first


class SimilarHit(DocumentIdentity, kw_only=True):
    language: str | None
    score: float  # vector: (1 + cos) / 2 of the best chunk; terms: bm25 relative to the best hit


class SimilarResult(Struct):
    ref: str
    docid: int
    uri: str
    method: Literal["vector", "terms"]  # vector: the mean of its chunks' vectors; terms: its rarest words
    terms: list[str]  # the words searched for (method "terms")
    hits: list[SimilarHit]  # the document itself and identical copies are left out
    took_ms: float
    notes: list[str] = []
    # The uris of the documents with the same text as it (identical copies), in any collection.
    copies: list[str] = []


class Freshness(Struct):
    """How up to date a collection is: what the watcher has seen and not yet indexed."""

    collection: str
    watching: bool = False
    # Files in the collection at the last full pass, with the documents the watcher added
    # and removed since (a mailbox's or an archive's count each of theirs).
    files: int | None = None
    pending: int = 0  # changed paths seen, not yet indexed
    indexing: bool = False
    last_change_at: float | None = None  # unix time of the last filesystem event
    last_indexed_at: float | None = None
    last_error: str | None = None
    changes: int = 0  # changed paths being indexed now (a batch of them; a rescan's count is the job's)


class SearchResult(Struct):
    query: str
    hits: list[SearchHit]
    total_candidates: int
    terms: list[str]
    dropped_stopwords: list[str]
    languages: list[str | None]  # the languages the query was stemmed in
    took_ms: float
    freshness: list[Freshness] = []
    notes: list[str] = []  # what the search changed about the query (e.g. terms left out)
    # The words the hits are for, where nothing matched the query as typed and a respelling
    # did (`kmem_cahce_alloc`: `kmem_cache_alloc`; `--symbol init_task`: `init_mask`).
    instead: str | None = None


class Document(DocumentIdentity, kw_only=True):
    language: str | None
    metadata: dict[str, Any]
    mirror_hash: str
    from_line: int
    to_line: int
    total_lines: int
    content: str  # the file's lines from_line..to_line (blank lines as many as it has)
    truncated: bool = False
    # `get`'s: where the file could not be read since it was indexed (too large now,
    # damaged), that this is the text read last.
    notes: list[str] = []


class MultiGetResult(Struct):
    documents: list[Document]
    missing: list[str]
    truncated: bool
    left_out: int = 0  # documents found but not read: max_bytes was spent


class LsEntry(DocumentIdentity, kw_only=True):
    size: int
    mtime_ns: int
    language: str | None


class LsFolder(Struct):
    collection: str
    path: str  # ends with "/"
    documents: int  # under it, at any depth


class LsResult(Struct):
    entries: list[LsEntry]
    total: int  # documents listed with this limit and offset: with `folders`, those directly in the folder
    folders: list[LsFolder] = []  # with `folders`: each folder right in the prefix


class CollectionInfo(Struct):
    name: str
    path: str
    include: list[str]
    exclude: list[str]
    language: str | None
    gitignore: bool
    documents: int = 0
    errors: int = 0
    follow_symlinks: bool = False
    last_indexed_at: int | None = None
    description: str | None = None
    also: list[str] = []


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
    # A walk of the whole collection without include globs: the files it left out for
    # their kind (an extension no converter reads), by extension ("" for none), most first.
    other_kinds: dict[str, int] = {}
    # The same walk's folders left out as build output for their name alone (build/, dist/
    # outside a project's tree: no .gitignore at the collection's top), by name, most first.
    output_folders: dict[str, int] = {}
    # The collection's globs anchored at its top (a `/` inside, as .gitignore reads it)
    # under a folder that is not there (`sites-available/*`): meant at any depth, they match nothing.
    unanchored: list[str] = []


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
    rate: float | None = None  # an index run's files read and prepared a second (the unchanged cost nothing)
    eta_s: float | None = None  # an index run's seconds left, by the bytes still to prepare


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
    started_at: float | None = None  # unix time files began to be indexed
    rate: float | None = None  # files read and prepared a second, once the walk has ended
    eta_s: float | None = None  # seconds left, by the bytes still to prepare


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
    latency_ms: float | None = None  # a remote model's last request round trip


class GpuInfo(Struct):
    offload_supported: bool  # this llama.cpp build can put layers on a GPU (CUDA, Metal, Vulkan…)
    gpu_layers: int = 0  # configured: layers per local model on the GPU (-1: all)
    main_gpu: int = 0


class ThreadRate(Struct):
    threads: int
    tokens_per_s: float  # embedding throughput measured with this many threads


class ThreadsInfo(Struct):
    count: int  # llama.cpp threads each local model uses now
    fixed: bool  # [models] threads sets it; otherwise it is measured on background embedding
    rates: list[ThreadRate] = []  # what each count tried so far achieved, fewest threads first


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
    # How vsearch finds neighbours: "exact" (every vector scored) or "graph" (an HNSW
    # graph's candidates re-scored, from 50,000 vectors); null without vectors.
    knn: Literal["exact", "graph"] | None = None


class LexicalInfo(Struct):
    ready: bool  # False while it is being built from the stored documents (searches wait)
    documents: int  # held by the index
    bytes: int  # on disk
    path: str
    done: int = 0  # while building: documents added so far, of `total`
    total: int = 0


class LoadInfo(Struct):
    """The reader threads that serve searches and reads, now and over the last minute."""

    running: int  # calls being served
    queued: int  # calls waiting for a reader
    calls: int  # calls that ended in the last minute
    p50_ms: float | None = None  # their time from arrival to answer
    p99_ms: float | None = None
    # The process that answers searches beside the reader threads (not on one core):
    # its pid (None before the first search, or while it is being started again),
    # and the searches it answered.
    search_process_pid: int | None = None
    search_process_searches: int = 0


class OcrInfo(Struct):
    """Tesseract, which reads images and scanned PDFs (in gnod's converter helper)."""

    available: bool  # a `tesseract` on gnod's PATH, with language data
    version: str | None = None
    languages: list[str] = []  # Tesseract's codes (eng, deu…): a collection's language is read when listed
    reason: str | None = None  # why not: such files are listed with code NEEDS_OCR
    fix: str | None = None
    # The backlog: pictures and scans indexed by their name whose text is read in the background.
    pending: int = 0  # waiting (reading included): only their names are searchable yet
    reading: list[str] = []  # collection/path of each file being read now
    read: int = 0  # files read since gnod started (their text stored, or why not in recent_errors)
    error: str | None = None  # the last look at the backlog failed: why (retried at the next change)


class SymbolInfo(Struct):
    """The definitions in source code (tree-sitter), read in the background after indexing."""

    parsed: int = 0  # contents of source files parsed
    pending: int = 0  # still to parse: `search --symbol` does not find their definitions yet
    parsing: bool = False
    error: str | None = None  # the last cycle failed: why (retried at the next change)
    rate: float | None = None  # contents parsed a second, while a backlog is parsed
    eta_s: float | None = None  # seconds until it is, at that rate


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
    errors_total: int = 0  # the ingest errors held, listed or not
    config_error: str | None = None
    models: list[ModelInfo] = []
    vectors: VectorInfo | None = None
    gpu: GpuInfo | None = None
    threads: ThreadsInfo | None = None
    rss_bytes: int | None = None  # gnod's resident memory, models included
    lexical: LexicalInfo | None = None  # the lexical (BM25) index beside db_path
    load: LoadInfo | None = None  # the readers: calls running and waiting, their latency lately
    # The last index write failed for lack of space or an I/O error: what, where, the fix.
    # Searches still work; writes are retried until one succeeds, which clears this.
    storage_error: str | None = None
    ocr: OcrInfo | None = None
    symbols: SymbolInfo | None = None
    # A start-up step converting what an older gno stored, as it goes (compressing its
    # content: "…: 12,000 rows so far"); None when there is none.
    upkeep: str | None = None


class VSearchHit(DocumentIdentity, kw_only=True):
    score: float  # 1 - cosine distance / 2 = (1 + cos) / 2, in [0, 1]
    cosine: float
    chunk: int  # sequence number of the best-matching chunk
    start_line: int
    end_line: int
    text: str  # that chunk's text
    symbol: str | None = None  # in source code: the definition the chunk starts in (as Snippet.symbol)


class VSearchResult(Struct):
    query: str
    model: str
    hits: list[VSearchHit]
    took_ms: float
    notes: list[str] = []  # what the vectors cannot see yet (chunks still to embed, a model switch)


class Preview(Struct):
    """What to show of a hit: its best passage, or the whole document when `complete`."""

    text: str
    start_line: int
    end_line: int
    complete: bool  # text is the whole document (short, confident hits are auto-expanded)
    truncated: bool = False  # text was cut to the preview length
    matches: list[list[int]] = []  # [start, end) character offsets in `text` of the matched words
    symbol: str | None = None  # in source code: the definition the passage starts in (as Snippet.symbol)


class ListContribution(Struct):
    """One retrieval list's vote for a hit (explain)."""

    list: int  # index into QueryExplain.lists
    source: str  # bm25 | vector
    kind: str  # original | variant | hyde
    rank: int
    score: float
    weight: float
    standard: float  # (score − the list's floor) / its deviation
    contribution: float  # weight × standard / the lists' total weight


class RerankInput(Struct):
    """What the reranker was shown for a hit (explain)."""

    chunks: list[int]  # chunk sequence numbers, in document order
    chars: int
    cached: bool


class HitExplain(Struct):
    fused_position: int
    contributions: list[ListContribution]
    fusion: float  # Σ contributions
    fusion_norm: float  # min-max over the pool (reranked); fusion / best possible (no reranker)
    rerank: float | None  # the reranker's score; None when not reranked
    keyword_floor: float  # 0.30 x fraction of query terms found literally
    synthetic: float | None  # smart-skip score that stood in for the reranker
    fusion_weight: float
    rerank_weight: float
    floors: list[str]  # which floors changed something for this hit
    rerank_input: RerankInput | None = None


class QueryHit(DocumentIdentity, kw_only=True):
    language: str | None
    score: float  # final blended score in [0, 1]
    sources: list[str]  # retrievers that found it: bm25, vector
    preview: Preview
    explain: HitExplain | None = None


class QueryCounts(Struct):
    candidates: int  # distinct documents from all lists
    pool: int  # after content-hash dedup and the mode's pool limit
    reranked: int
    returned: int


class Distribution(Struct):
    """Where the results come from: per collection, and per frontmatter tag."""

    collections: dict[str, int]
    tags: dict[str, int]


class ExpansionInfo(Struct):
    lexical: list[str]
    semantic: list[str]
    hyde: str | None
    model: str  # the generator's URI; "" when the client gave the variants
    prompt: str  # prompt language: en | de | multi ("" when given)
    prompt_version: str
    cached: bool
    source: Literal["generator", "client"] = "generator"


class Stage(Struct):
    name: str
    ms: float
    skipped: str | None = None  # why the stage did not run


class ListInfo(Struct):
    source: str
    kind: str
    query: str
    hits: int
    weight: float
    floor: float  # what a document the list did not return counts as (docs/protocol.md)
    deviation: float  # the spread its scores are divided by


class QueryExplain(Struct):
    constants: dict[str, Any]
    prompt_version: str
    stages: list[Stage]
    lists: list[ListInfo]
    strong_signal: dict[str, Any]
    models: dict[str, str]


class QueryResult(Struct):
    query: str
    mode: str
    hits: list[QueryHit]
    counts: QueryCounts
    distribution: Distribution
    expansion: ExpansionInfo | None
    degraded: list[str]  # components that were missing, said once per result
    notes: list[str]  # skipped stages and limits applied, in words
    took_ms: float
    explain: QueryExplain | None = None
    freshness: list[Freshness] = []


class Source(Struct):
    """A cited source of an answer; `n` is the number used in the answer text."""

    n: int
    docid: int
    uri: str
    title: str
    path: str
    abs_path: str
    collection: str
    start_line: int
    end_line: int
    score: float
    text: str = ""  # the passage the generator was given (lines start_line..end_line)


class AskResult(Struct):
    query: str
    answer: str | None  # None with --no-answer or when abstaining
    abstained: bool
    abstain_reason: str | None
    sources: list[Source]  # cited sources, renumbered 1..n in order of first citation
    considered: list[Source]  # what the generator was given (its numbering)
    model: str | None
    retrieval: QueryResult
    took_ms: float


class Change(Struct):
    """Sent as a `change` notification to `watch` subscribers once a change is committed."""

    id: int | str | None
    collection: str
    kind: ChangeKind
    path: str | None  # None: the whole collection was removed
    uri: str | None
    abs_path: str | None


class Lagged(Struct):
    """Sent to a `watch` subscriber whose queue overflowed: `dropped` changes were not sent."""

    id: int | str | None
    dropped: int


class WatchResult(Struct):
    """The end of a subscription (the daemon is stopping)."""

    sent: int
    dropped: int


class Token(Struct):
    """Sent as a `token` notification while `ask` generates (raw text, not yet renumbered)."""

    id: int | str | None
    text: str


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
    size_bytes: int | None = None  # the file's size; before download, the preset's (approximate)
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


PT = TypeVar("PT", bound=Params)
RT = TypeVar("RT", bound=Struct)
METHODS: dict[str, Method[Any, Any]] = {}  # every method by name, in order (each Method adds itself)


class Method(Generic[PT, RT]):
    """A JSON-RPC method: its name, the Struct its params decode into and the one it
    answers. gnod's dispatch table (server/methods.py) pairs each with its handler, typed
    by the two, and the schemas and gnoctl's options come from the Structs."""

    __slots__ = ("name", "params", "result")

    def __init__(self, name: str, params: type[PT], result: type[RT]) -> None:
        self.name = name
        self.params = params
        self.result = result
        METHODS[name] = self


STATUS = Method("status", StatusParams, StatusResult)
COLLECTION_ADD = Method("collection.add", CollectionAddParams, IndexResult)
COLLECTION_LIST = Method("collection.list", CollectionListParams, CollectionListResult)
COLLECTION_REMOVE = Method("collection.remove", CollectionNameParams, CollectionRemoveResult)
COLLECTION_DESCRIBE = Method("collection.describe", CollectionDescribeParams, CollectionInfo)
COLLECTION_SET = Method("collection.set", CollectionSetParams, IndexResult)
INDEX = Method("index", IndexParams, IndexResult)
SEARCH = Method("search", SearchParams, SearchResult)
GET = Method("get", GetParams, Document)
MULTI_GET = Method("multi_get", MultiGetParams, MultiGetResult)
LS = Method("ls", LsParams, LsResult)
SHUTDOWN = Method("shutdown", ShutdownParams, OkResult)
VSEARCH = Method("vsearch", VSearchParams, VSearchResult)
QUERY = Method("query", QueryParams, QueryResult)
ASK = Method("ask", AskParams, AskResult)
SIMILAR = Method("similar", SimilarParams, SimilarResult)
EMBED = Method("embed", EmbedParams, EmbedResult)
MODELS_LIST = Method("models.list", ModelsParams, ModelsResult)
MODELS_PULL = Method("models.pull", ModelPullParams, ModelPullResult)
MODELS_USE = Method("models.use", ModelUseParams, OkResult)
MODELS_CLEAR = Method("models.clear", ModelClearParams, OkResult)
WATCH = Method("watch", WatchParams, WatchResult)

METHOD_PARAMS: dict[str, type[Params]] = {name: m.params for name, m in METHODS.items()}
METHOD_RESULTS: dict[str, type[Struct]] = {name: m.result for name, m in METHODS.items()}

# Server → client notifications during a call, by method name.
NOTIFICATIONS: dict[str, type[Struct]] = {"progress": Progress, "token": Token, "change": Change, "lagged": Lagged}
