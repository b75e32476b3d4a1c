"""The MCP tools: what an agent is told about each, its input schema, the gnod call it
makes and the compact text it reads back (the protocol's JSON rides along as
structuredContent).

Schemas carry the daemon's limits (tighter where an agent's context is the limit), so a
bad argument is refused before it costs a round trip; the daemon still validates.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from gnoctl.days import FORMS, filter_day
from gnod.config import converted
from gnod.protocol import METHOD_PARAMS
from gnod.wire import said

# Most text shown per passage of a hit, in its lines; the full passage is in structuredContent.
SNIPPET_CHARS = 240
# Results an agent may ask for in one call (the daemon allows more; a context window does not).
MAX_RESULTS = 100
# Text `get` and `multi_get` give an agent unless it asks for more: ~16k tokens (a generated
# register header is 24 MB, which took 29 s to come back whole and would fill any context;
# multi_get's 256 KB of include/linux/*.h was past what agents take from one call).
GET_MAX_BYTES = 65_536
# Text a search's results give an agent at most (~16k tokens, as `get`): 100 documents of 10
# passages each came to 204,000 characters, past what hosts take from one call.
TEXT_MAX_CHARS = 65_536


@dataclass(frozen=True)
class ToolSpec:
    name: str
    method: str  # the gnod method it calls
    title: str
    description: str
    properties: dict
    required: tuple[str, ...]
    render: Callable[[dict], str]
    params: Callable[[dict], dict] = dict  # tool arguments → method params
    write: bool = False  # offered only with --enable-write
    destructive: bool = False
    streams: bool = False  # long: daemon progress (or ask's tokens) becomes MCP progress
    # Synonyms, one of which is required: checked on a call (McpServer.call_tool), not said
    # in the schema, whose top level hosts take without anyOf/oneOf/allOf (the Anthropic
    # API refuses such a tool, and some hosts drop it or every tool with it).
    one_of: tuple[str, ...] = ()

    def input_schema(self) -> dict:
        return {
            "type": "object",
            "properties": self.properties,
            "required": list(self.required),
            "additionalProperties": False,
        }


# --- argument schemas ---------------------------------------------------------------------------


def _param(method: str, field: str, description: str, **tighter: object) -> dict:
    """A params field's JSON Schema as gnod/protocol.py declares it (type, range, lengths,
    default; Optional and nested Structs resolved), with the agent's description and
    `tighter` bounds overlaid (a context window is a limit too)."""
    schema = _schema(method)
    defs = schema["$defs"]
    prop = _resolved(defs[schema["$ref"].rsplit("/", 1)[1]]["properties"][field], defs)
    return {**prop, **tighter, "description": description}


@functools.cache
def _schema(method: str) -> dict:
    """A method's params schema, made once (the tools ask it for one field at a time)."""
    return msgspec.json.schema(METHOD_PARAMS[method])


def _resolved(prop: dict, defs: dict) -> dict:
    """`prop` without references, a null alternative or a Struct's title."""
    if "anyOf" in prop:
        (prop,) = [p for p in prop["anyOf"] if p.get("type") != "null"]
    if "$ref" in prop:
        prop = dict(defs[prop["$ref"].rsplit("/", 1)[1]])
        prop["properties"] = {k: _resolved(v, defs) for k, v in prop["properties"].items()}
        for key in ("title", "description", "required"):
            prop.pop(key, None)
    return prop


def _query(method: str, what: str) -> dict:
    return _param(method, "query", what, minLength=1)


_LIMIT = _param("search", "limit", "Most results to return.", maximum=MAX_RESULTS)
_MIN_SCORE = _param("search", "min_score", "Drop results scoring below this (scores are in [0, 1]).")
_MIN_RELATIVE_SCORE = _param(
    "search",
    "min_score",
    "Drop results scoring below this. A score is relative to the best result's (1.0): this keeps "
    "those nearly as good as the best, however good that is, and tells nothing of relevance.",
)
_COLLECTIONS = _param(
    "search",
    "collections",
    "Only these collections (default: all). `ls` or `status` lists them.",
    items={"type": "string", "minLength": 1, "maxLength": 64},
    maxItems=32,
)


def _filters() -> dict:
    """The filters' schema, its days as the tools take them: gnoctl's forms (days.FORMS),
    made the daemon's YYYY-MM-DD by the bridge (with_days), as `--since` takes them."""
    schema = _param(
        "search",
        "filters",
        "Only documents that pass all of these: `path` a glob over the path in its collection (`drivers/mmc/**`, "
        "`*.h`; a first folder that names a collection: in it; a list passes any, and `!tests/**` in it leaves "
        "those out), `types` file types as ripgrep's -t (`c`, `py`, "
        f"`md`, `pdf`…), `since`/`until` days ({FORMS}), `tags`, `lang` (also the language the query is "
        "read in), `from` (a message's sender).",
    )
    days = {"type": "string", "minLength": 1, "maxLength": 64}
    return {**schema, "properties": {**schema["properties"], "since": days, "until": days}}


def with_days(args: dict) -> dict:
    """`args` with their filters' `since` and `until` as YYYY-MM-DD (days.filter_day, on this
    machine's calendar); ValueError saying which forms are read."""
    given = args.get("filters")
    if not isinstance(given, dict) or not ({"since", "until"} & given.keys()):
        return args
    days = {key: filter_day(key, given[key]) for key in ("since", "until") if isinstance(given.get(key), str)}
    return {**args, "filters": {**given, **days}}


_FILTERS = _filters()
_MODE = _param("query", "mode", "`deep` searches a bigger pool (slower; needs at least 2 keywords).", type="string")
_WAIT = _param(
    "search", "wait_s", "First wait up to this many seconds for files saved just now to be indexed.", maximum=60.0
)
_variants = _param(
    "query",
    "variants",
    "Variants you write yourself, used instead of the local LLM's (faster, and the full pipeline "
    "on a machine without a generator). Repeats and past-the-cap items are left out (see notes).",
)
_VARIANTS = {
    **_variants,
    "properties": {
        name: {**_variants["properties"][name], "description": description}
        for name, description in (
            ("lexical", "Keyword queries (BM25), e.g. exact names and synonyms; up to 3 are used."),
            ("semantic", "Rephrasings of the query, searched by meaning; up to 3 are used."),
            ("hyde", "A short passage that would answer the query, searched by meaning."),
        )
    },
}
_REF = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4096,
    "description": "A document: its absolute path or `gno://collection/path`, `:LINE` after either (as "
    "results give them), `collection/path`, `:FIRST-LAST` or `#LFIRST-LLAST` (those lines), or "
    "`#docid`; `PATH:NAME` is the definition NAME in a source file (a function, a class, "
    "`Class.method`), or by its qualified name alone (`http.client.HTTPConnection.request`), "
    "`PATH#HEADING` a document's section under that heading (a PDF's `Page 2`).",
}


# --- compact text -------------------------------------------------------------------------------


def _line(text: str) -> str:
    """A passage as the text shows it: its lines as they are, each indented under its
    hit, blank ones and trailing spaces left out, cut at SNIPPET_CHARS. Joined into one
    line, code lost its lines and its indentation (`class X(Exception): def __init__…`)."""
    lines = [line.rstrip() for line in text.split("\n") if line.strip()]
    shown = "\n  ".join(lines)
    return shown if len(shown) <= SNIPPET_CHARS else shown[: SNIPPET_CHARS - 1] + "…"


def _place(doc: dict) -> str:
    """Where a result names a document: its file's absolute path, which an agent's own
    tools read and edit (and `get` takes, with `:line`); a converted document's gno://
    uri (a PDF's text, a mailbox's message), whose text is gno's, not its file's."""
    return str(doc["uri"] if converted(doc["path"]) else doc["abs_path"])


def _search_text(r: dict) -> str:
    if not r["hits"]:
        return "\n".join([f"No documents match {said(r['query'])}.", *r.get("notes", [])])
    out: list[str] = []
    size = 0
    for n, h in enumerate(r["hits"]):
        if size > TEXT_MAX_CHARS:
            out.append(
                f"(text cut at {TEXT_MAX_CHARS:,} characters after {n} of {len(r['hits'])} documents: "
                "lower limit or per_doc to read them all here)"
            )
            return "\n".join(out + r.get("notes", []))
        lines = []
        for i, snip in enumerate(h.get("snippets") or [h.get("snippet") or {}]):
            where = f"  in {snip['symbol']}" if snip.get("symbol") else ""
            head = f"  {h['title']}  ({h['score']:.2f})" if i == 0 else ""
            lines.append(f"{_place(h)}:{snip.get('line', 1)}{where}{head}")
            if snip.get("text"):
                lines.append(f"  {_line(snip['text'])}")
        out += lines
        size += sum(len(line) + 1 for line in lines)
    if r.get("total_candidates", 0) > len(r["hits"]):
        out.append(f"({len(r['hits'])} shown; more documents match: raise limit, or narrow with filters)")
    return "\n".join(out + r.get("notes", []))


def _vsearch_text(r: dict) -> str:
    if not r["hits"]:
        return f"No documents have vectors close to {said(r['query'])}." + "".join(f"\n{n}" for n in r.get("notes", []))
    out = []
    for h in r["hits"]:
        out.append(f"{_place(h)}:{h['start_line']}  {h['title']}  ({h['score']:.2f})")
        out.append(f"  {_line(h['text'])}")
    return "\n".join(out + r.get("notes", []))


def _query_text(r: dict) -> str:
    out = []
    for h in r["hits"]:
        prev = h.get("preview") or {}
        out.append(f"{_place(h)}:{prev.get('start_line', 1)}  {h['title']}  ({h['score']:.2f})")
        if prev.get("text"):
            out.append(f"  {_line(prev['text'])}")
    if not out:
        out.append(f"No documents match {said(r['query'])}.")
    out += [f"note: {d}" for d in r.get("degraded", [])] + r.get("notes", [])
    return "\n".join(out)


def _ask_text(r: dict) -> str:
    """The answer and its sources; without an answer asked for (`answer: false`), each
    source's passage too, its lines numbered: what the agent asked for to read itself."""
    if r["abstained"]:
        head = f"No answer: {r['abstain_reason']}"
        sources = r["considered"]
    else:
        head = r["answer"] or "(sources only; no answer was generated)"
        sources = r["sources"] or r["considered"]
    passages = not r["abstained"] and r["answer"] is None
    lines = []
    for s in sources:
        lines.append(f"[{s['n']}] {_place(s)}:{s['start_line']}-{s['end_line']}  {s['title']}")
        if passages and s.get("text"):
            lines.append(_numbered(s["text"].rstrip("\n"), s["start_line"]))
    return head + ("\n\nSources:\n" + "\n".join(lines) if lines else "")


def _similar_text(r: dict) -> str:
    how = "by meaning" if r["method"] == "vector" else "by its words: " + ", ".join(r["terms"])
    out = [f"Documents like {r['uri']} ({how}):"] if r["hits"] else [f"No documents are like {r['uri']}."]
    out += [f"{_place(h)}  {h['title']}  ({h['score']:.2f})" for h in r["hits"]]
    return "\n".join(out + r.get("notes", []))


def _document_text(d: dict) -> str:
    more = ""
    if d.get("truncated"):  # whole lines, unless the one line asked for is longer than max_bytes
        cut_line = d["content"] and not d["content"].endswith("\n")
        more = (
            f" (line {d['to_line']} is longer than max_bytes: shown in part; raise max_bytes to read it whole)"
            if cut_line
            else f" (cut at max_bytes: read on with from_line={d['to_line'] + 1})"
        )
    head = f"{_place(d)}  lines {d['from_line']}-{d['to_line']} of {d['total_lines']}{more}"
    notes = "".join(f"\nNote: {n}" for n in d.get("notes", []))
    return f"{head}{notes}\n\n{_numbered(d['content'], d['from_line'])}"


def _numbered(content: str, first: int) -> str:
    """`content`'s lines, each after its number in the file and a tab (as `cat -n` writes
    them): an agent cites or edits line 121 without counting from the header."""
    lines = content.split("\n")
    end = lines.pop() if lines and lines[-1] == "" else None  # after the last line's break
    numbered = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, first))
    return numbered + ("\n" if end is not None else "")


def _multi_get_text(r: dict) -> str:
    if r["documents"] and not any(d["from_line"] for d in r["documents"]):  # content false: which documents
        listed = [f"{_place(d)}  {d['title']}" for d in r["documents"]]
        parts = ["\n".join([*listed, f"({len(listed)} document{'s' if len(listed) != 1 else ''})"])]
    else:
        parts = [_document_text(d) for d in r["documents"]]
    if r["missing"]:
        parts.append("Not found: " + ", ".join(r["missing"]))
    if r.get("left_out"):
        parts.append(
            f"(stopped at max_bytes: {r['left_out']} more documents not read; ask for fewer documents, "
            "a larger max_bytes, or their list with content: false)"
        )
    return "\n\n---\n\n".join(parts) or "No documents matched."


def _ls_text(r: dict) -> str:
    lines = [f"gno://{f['collection']}/{f['path']}  ({f['documents']} documents)" for f in r.get("folders", [])]
    lines += [f"{_place(e)}  {e['title']}" for e in r["entries"]]
    more = "; `offset` pages through the others" if len(r["entries"]) < r["total"] else ""
    return "\n".join(lines + [f"({len(r['entries'])} of {r['total']} documents{more})"])


def _status_text(s: dict) -> str:
    out = [f"gnod {s['version']} (pid {s['pid']}): {s['documents']} documents"]
    for c in s["collections"]:
        out.append(
            f"  {c['name']}: {c['documents']} documents, {c['errors']} failed  {c['path']}"
            + (f"\n    {c['description']}" if c.get("description") else "")
        )
    for m in s.get("models", []):
        out.append(f"  model {m['role']}: {m['state']}  {m['uri']}")
    vec = s.get("vectors") or {}
    if vec:
        out.append(
            f"  vectors: {vec.get('embedded', 0)} of {vec.get('chunks', 0)} chunks embedded"
            + (f" ({vec['reason']})" if vec.get("reason") else "")
        )
    sym = s.get("symbols") or {}
    if sym.get("pending"):
        out.append(f"  definitions: {sym['pending']} source files still to parse (search with symbol misses them)")
    ocr = s.get("ocr") or {}
    if ocr.get("pending"):
        what = "picture or scan" if ocr["pending"] == 1 else "pictures or scans"
        out.append(f"  ocr: {ocr['pending']} {what} still to read (only their names are searchable)")
    if s.get("upkeep"):
        out.append(f"  upgrade: {s['upkeep']}")
    if s.get("config_error"):
        out.append(f"  config error: {s['config_error']}")
    return "\n".join(out)


def _index_text(r: dict) -> str:
    from gnoctl.output.collections import run_lines

    if not r["collections"]:
        return "No collections to index: add one with collection_add."
    return "\n".join(
        run_lines(
            r,
            lambda c: (
                f"{c['collection']}: {c['added']} added, {c['updated']} updated, {c['removed']} removed, "
                f"{c['unchanged']} unchanged, {c['errors']} errors"
            ),
        )
    )


# --- argument → params ---------------------------------------------------------------------------


def _ask_params(a: dict) -> dict:
    # Always streamed: the tokens become progress, and a cancelled call shows to gnod as a
    # closed socket at the next token, which stops the generation. `query` is accepted
    # for `question`, as every other tool names it.
    params = {k: v for k, v in a.items() if k not in ("question", "query")}
    return {**params, "query": a.get("question") or a["query"], "stream": True}


def _add_params(a: dict) -> dict:
    """collection.add's: indexed now, named after its folder where no name is given (as
    `gnoctl collection add` names it)."""
    from gnod.config import name_for

    return {**a, "name": a.get("name") or name_for(a.get("path") or ""), "index": True}


READ_ONLY_TOOLS = [
    ToolSpec(
        "search",
        "search",
        "Keyword search",
        "Find documents containing exact words, names, code identifiers (snake_case, os.path.join), error "
        'messages or "quoted phrases" (BM25, fast, no models). Use this first for anything literal. '
        "Supports -negated words. Returns path:line (a file's absolute path; a converted document's gno:// "
        "uri), title, score and the matching line for each hit "
        "(in source code, the function or class it is in). With `symbol`, finds where a name is defined.",
        {
            "query": _query("search", 'Words, "phrases", -negated words, identifiers, or a pasted passage.'),
            "limit": _LIMIT,
            "min_score": _MIN_RELATIVE_SCORE,
            "collections": _COLLECTIONS,
            "filters": _FILTERS,
            "per_doc": _param(
                "search", "per_doc", "Passages per document: >1 shows each document's other matching places too."
            ),
            "wait_s": _WAIT,
            "symbol": _param(
                "search",
                "symbol",
                "Find where `query`, one name (foo_probe, Parser.parse, module.name, or a prefix such as kmalloc*), is "
                "defined in source code (C, C++, Java, Python, Go, Rust, TypeScript, JavaScript, C#, Ruby, PHP, "
                "Swift), not where it is mentioned.",
            ),
        },
        ("query",),
        _search_text,
    ),
    ToolSpec(
        "vsearch",
        "vsearch",
        "Search by meaning",
        "Find passages by meaning when the words may differ from the documents' (synonyms, paraphrases, "
        "another language). Needs the embedding model; returns each document's best passage.",
        {
            "query": _query("vsearch", "A description of what you are looking for."),
            "limit": _LIMIT,
            "min_score": _MIN_SCORE,
            "collections": _COLLECTIONS,
            "filters": _FILTERS,
        },
        ("query",),
        _vsearch_text,
    ),
    ToolSpec(
        "query",
        "query",
        "Hybrid search",
        "Best-quality search for questions and topics in natural language: keyword and meaning search for "
        "the question and its variants (the local LLM's, or better, your own in `variants`), fused and "
        "reranked. Slower than `search` (up to seconds). "
        "Returns path:line (as search does), title, score and the best passage of each document.",
        {
            "query": _query("query", "A question or topic, or a pasted passage."),
            "limit": {**_LIMIT, "maximum": 100},
            "mode": _MODE,
            "min_score": _MIN_SCORE,
            "collections": _COLLECTIONS,
            "filters": _FILTERS,
            "expand": {
                "type": "boolean",
                "default": True,
                "description": "Let the LLM write query variants (off: faster).",
            },
            "variants": _VARIANTS,
            "rerank": {"type": "boolean", "default": True, "description": "Rerank with the cross-encoder."},
            "wait_s": _WAIT,
        },
        ("query",),
        _query_text,
    ),
    ToolSpec(
        "ask",
        "ask",
        "Answer from the documents",
        "Answer a question from the user's documents, citing them as [1], [2] (or say that they do not "
        "answer it). Runs hybrid search, then the local generate model: can take tens of seconds; progress "
        "carries the answer as it is written. Prefer `query` + `get` when you want to read the sources yourself.",
        {
            "question": _query("ask", "The question (required, as this or as `query`)."),
            "query": _query("ask", "The question (the same as `question`, named as the other tools name it)."),
            "sources": _param("ask", "sources", "Most sources to give the generator."),
            "mode": _MODE,
            "collections": _COLLECTIONS,
            "filters": _FILTERS,
            "variants": _VARIANTS,
            "answer": {
                "type": "boolean",
                "default": True,
                "description": "false: only select the sources, generate nothing (fast).",
            },
            "max_tokens": _param("ask", "max_tokens", "Longest answer in tokens."),
        },
        (),
        _ask_text,
        params=_ask_params,
        streams=True,
        one_of=("question", "query"),
    ),
    ToolSpec(
        "get",
        "get",
        "Read a document",
        "Read one document (or some lines of it) as indexed Markdown, e.g. a search hit's `path:line`, "
        "which reads from that line on. Use from_line/lines to read around a hit instead of the whole "
        "file. At most max_bytes of whole lines come back; the header says where to read on.",
        {
            "ref": _REF,
            "from_line": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
            "lines": {"type": "integer", "minimum": 1, "maximum": 100_000, "description": "Number of lines."},
            "max_bytes": {
                "type": "integer",
                "minimum": 1,
                "maximum": 4_194_304,
                "default": GET_MAX_BYTES,
                "description": "At most this much text (whole lines).",
            },
        },
        ("ref",),
        _document_text,
    ),
    ToolSpec(
        "similar",
        "similar",
        "Documents like this one",
        "Find the documents most like a given one (by meaning with the embedding model, else by its rarest "
        "words): related notes, other versions, the same topic elsewhere. The document itself and its "
        "identical copies are left out.",
        {
            "ref": _REF,
            "limit": _LIMIT,
            "collections": _COLLECTIONS,
            "filters": _FILTERS,
        },
        ("ref",),
        _similar_text,
    ),
    ToolSpec(
        "multi_get",
        "multi_get",
        "Read several documents",
        "Read several documents at once, by reference and/or a glob over `collection/path` "
        "(e.g. `notes/meetings/2024-*.md`), up to max_bytes in total.",
        {
            "refs": {
                "type": "array",
                "items": _REF,
                "maxItems": 100,
                "default": [],
                "description": "Documents to read.",
            },
            "pattern": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1024,
                "description": "A glob over collection/path (`*` within a folder, `**` across, `{a,b}` either).",
            },
            "max_bytes": {
                "type": "integer",
                "minimum": 1,
                "maximum": 4_194_304,
                "default": GET_MAX_BYTES,
                "description": "Stop after this much text in all (whole lines; the documents past it are counted).",
            },
            "content": {
                "type": "boolean",
                "default": True,
                "description": "False: only which documents match (uri, title, path), no text and no byte budget.",
            },
        },
        (),
        _multi_get_text,
    ),
    ToolSpec(
        "ls",
        "ls",
        "List documents",
        "List indexed documents (path and title), optionally of one collection and under a path prefix, "
        "and only those passing `filters` (as search's: tags, days, path globs, file types, language). "
        "Use to browse, or to learn the collections' layout: with folders true, one level of a folder "
        "(its sub-folders with their document counts, then the documents directly in it; no filters then).",
        {
            "collection": {"type": "string", "minLength": 1, "maxLength": 64, "description": "One collection."},
            "prefix": {
                "type": "string",
                "maxLength": 1024,
                "default": "",
                "description": "Path prefix inside the collection (no glob: multi_get's pattern takes one).",
            },
            "folders": {
                "type": "boolean",
                "default": False,
                "description": "One level: the prefix is a folder; its sub-folders, then its own documents.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 1000,
                "default": 100,
                "description": "Documents to list at most.",
            },
            "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Documents to skip (paging)."},
            "filters": _FILTERS,
        },
        (),
        _ls_text,
    ),
    ToolSpec(
        "status",
        "status",
        "Index status",
        "The state of the index: collections and their document counts, what is still being indexed, "
        "the models (loaded or missing) and errors. Use when results look stale or a tool fails.",
        {},
        (),
        _status_text,
    ),
]

WRITE_TOOLS = [
    ToolSpec(
        "collection_add",
        "collection.add",
        "Add a folder",
        "Add a folder to the index as a named collection and index it now (progress is reported); it is "
        "then kept up to date as files change.",
        {
            "name": {
                "type": "string",
                "minLength": 1,
                "maxLength": 64,
                "description": "Collection name (default: the folder's name).",
            },
            "path": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "Absolute folder path."},
            "include": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": 64,
                "default": [],
                "description": "Glob patterns to index, instead of the default kinds (text, Markdown, code).",
            },
            "also": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": 64,
                "default": [],
                "description": "Glob patterns of files to index besides the default kinds (or `include`).",
            },
            "exclude": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": 64,
                "default": [],
                "description": "Glob patterns to skip.",
            },
            "description": {
                "type": "string",
                "maxLength": 500,
                "description": "What the collection holds, in a sentence (shown to agents choosing where to search).",
            },
            "allow_overlap": {
                "type": "boolean",
                "default": False,
                "description": "Add it although another collection covers the folder (the same, a parent or a "
                "sub-folder): its files are then indexed twice.",
            },
        },
        ("path",),
        _index_text,
        params=_add_params,
        write=True,
        streams=True,
    ),
    ToolSpec(
        "collection_remove",
        "collection.remove",
        "Remove a collection",
        "Remove a collection: its documents leave the index (the files stay on disk). Ask the user first.",
        {"name": {"type": "string", "minLength": 1, "maxLength": 64, "description": "Collection name."}},
        ("name",),
        lambda r: f"removed {r['name']} ({r['documents_removed']} documents)",
        write=True,
        destructive=True,
    ),
    ToolSpec(
        "update",
        "index",
        "Re-index",
        "Re-index now (all collections, or one): normally unnecessary, gnod watches the folders.",
        {"collection": {"type": "string", "minLength": 1, "maxLength": 64, "description": "One collection."}},
        (),
        _index_text,
        write=True,
        streams=True,
    ),
    ToolSpec(
        "embed",
        "embed",
        "Embed the backlog",
        "Embed every chunk not embedded yet and wait (progress is reported); `force` embeds all again.",
        {"force": {"type": "boolean", "default": False}},
        (),
        lambda r: f"embedded {r['embedded']} chunks with {r['model']}; {r['pending']} pending",
        write=True,
        streams=True,
    ),
]


def tools(enable_write: bool) -> dict[str, ToolSpec]:
    return {t.name: t for t in READ_ONLY_TOOLS + (WRITE_TOOLS if enable_write else [])}
