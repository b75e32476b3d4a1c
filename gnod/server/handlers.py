"""One coroutine per JSON-RPC method. Params arrive already decoded and validated."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import unicodedata
from typing import Any
from urllib.parse import unquote

import apsw
import msgspec
import pathspec

from gnod import __version__, wire
from gnod.config import (
    CONVERTED,
    DOCUMENT_EXTENSIONS,
    MEMBER_SEP,
    NOTE_SUFFIX,
    TEXT_EXTENSIONS,
    CollectionConfig,
    Config,
    ConfigError,
    extension,
    save,
    validate_collection,
)
from gnod.ingest import ocr
from gnod.ingest.pipeline import Cancelled, Pace
from gnod.ingest.symbols import grammar_for
from gnod.lines import expand, file_line
from gnod.models.base import ModelUnavailable
from gnod.models.manager import rss_bytes
from gnod.paths import FILE_URL, file_url_path
from gnod.protocol import (
    CollectionAddParams,
    CollectionDescribeParams,
    CollectionInfo,
    CollectionListResult,
    CollectionNameParams,
    CollectionRemoveResult,
    CollectionSetParams,
    Document,
    EmbedParams,
    EmbedResult,
    Filters,
    GetParams,
    IndexParams,
    IndexResult,
    IndexStats,
    IngestErrorInfo,
    LexicalInfo,
    LoadInfo,
    LsEntry,
    LsFolder,
    LsParams,
    LsResult,
    MultiGetParams,
    MultiGetResult,
    OcrInfo,
    OkResult,
    Progress,
    StatusResult,
    WatchParams,
    WatchResult,
)
from gnod.search import filters
from gnod.search.constants import PATH_BRACE_GLOBS_MAX
from gnod.search.defining import definitions, in_c
from gnod.search.macros import defines as macros_defined
from gnod.server import unindexed
from gnod.server.checks import check_collections, find_collection, holding, search_filter
from gnod.server.events import Subscription
from gnod.server.hits import URI_PREFIX, failing_notes, identity
from gnod.server.jobs import StorageError
from gnod.server.rpc import Call, Daemon, RpcError, model_unavailable
from gnod.server.watcher import freshness_list
from gnod.store import documents as store
from gnod.store import ocr as ocr_backlog
from gnod.store import symbols as symstore
from gnod.store.documents import DocRow
from gnod.text.headings import MARKDOWN, headings, markup, section_spans, title_key


def _collection_infos(d: Daemon, conn) -> list[CollectionInfo]:
    stats = {row[0]: row for row in store.collection_stats(conn)}
    out = []
    for c in d.config.collections:
        row = stats.get(c.name)
        out.append(
            CollectionInfo(
                name=c.name,
                path=c.path,
                include=c.include,
                exclude=c.exclude,
                language=c.language,
                gitignore=c.gitignore,
                follow_symlinks=c.follow_symlinks,
                documents=row[3] if row else 0,
                errors=row[4] if row else 0,
                last_indexed_at=row[5] if row else None,
                description=c.description,
                also=c.also,
            )
        )
    return out


async def status(d: Daemon, params, call: Call) -> StatusResult:
    freshness = freshness_list(d.watcher, [c.name for c in d.config.collections])  # loop-owned state

    def read(conn, _analyzers) -> StatusResult:
        cols = _collection_infos(d, conn)
        errors = [IngestErrorInfo(*r) for r in store.recent_errors(conn, None, params.errors)]
        try:
            db_bytes = sum(
                os.path.getsize(d.paths.db_file + s) for s in ("", "-wal") if os.path.exists(d.paths.db_file + s)
            )
        except OSError:
            db_bytes = 0
        return StatusResult(
            version=__version__,
            protocol=wire.PROTOCOL_VERSION,
            pid=os.getpid(),
            uptime_s=round(time.time() - d.started, 3),
            db_path=d.paths.db_file,
            db_bytes=db_bytes,
            config_path=d.paths.config_file,
            socket_path=d.paths.socket_path,
            documents=sum(c.documents for c in cols),
            collections=cols,
            languages=d.languages(conn),
            job=d.writer.job,
            recent_errors=errors,
            errors_total=store.error_count(conn),
            freshness=freshness,
            config_error=d.config_error,
            models=d.models.infos(),
            vectors=d.vectors.info(),
            storage_error=d.writer.storage_error,
            upkeep=d.writer.upkeep,
            gpu=d.models.gpu_info(),  # on this reader thread: the first call imports llama_cpp
            threads=d.models.threads_info(),
            rss_bytes=rss_bytes(),
            lexical=_lexical_info(d),
            load=_load_info(d),
            ocr=_ocr_info(d, conn),
            symbols=d.symbols.info(),
        )

    return await d.read(read, "control")


def _ocr_info(d: Daemon, conn) -> OcrInfo:
    """Whether the converter helpers, which inherit gnod's PATH, can OCR (checked at most
    once a minute), and how far the backlog is (counted in the database: a file indexed
    a moment ago is there before the backlog's task has looked)."""
    try:
        _, version, languages = ocr.installed()
        info = OcrInfo(available=True, version=version, languages=list(languages))
    except ocr.OcrFailure as f:
        info = OcrInfo(available=False, reason=f.what, fix=f.fix)
    info.pending = ocr_backlog.count(conn)
    info.reading = list(d.ocr.reading)
    info.read = d.ocr.read
    info.error = d.ocr.failed
    return info


def _load_info(d: Daemon) -> LoadInfo:
    running, queued, took = d.reader_load()
    took.sort()

    def ms(q: float) -> float | None:
        return round(took[min(len(took) - 1, int(q * len(took)))] * 1000, 3) if took else None

    proc = d.search_process
    return LoadInfo(
        running=running,
        queued=queued,
        calls=len(took),
        p50_ms=ms(0.5),
        p99_ms=ms(0.99),
        search_process_pid=proc.pid if proc else None,
        search_process_searches=proc.served if proc else 0,
    )


def _lexical_info(d: Daemon) -> LexicalInfo:
    lex = d.writer.lexical
    held, size = lex.info()
    done, total = lex.progress or (0, 0)
    return LexicalInfo(ready=lex.progress is None, documents=held, bytes=size, path=lex.path, done=done, total=total)


async def collection_list(d: Daemon, params, call: Call) -> CollectionListResult:
    await d.reload_config()
    return CollectionListResult(await d.read(lambda conn, _a: _collection_infos(d, conn)))


async def collection_add(d: Daemon, p: CollectionAddParams, call: Call) -> IndexResult:
    await d.reload_config()
    if not os.path.isabs(os.path.expanduser(p.path)):
        # gnod's working directory is not the caller's (gnoctl sends the path absolute).
        raise RpcError(
            wire.INVALID_PARAMS, f"{wire.said(p.path)} is not an absolute path: give one from / or ~", {"path": p.path}
        )
    try:
        # The params are the config's fields (tests/test_config.py keeps them so) plus how to add.
        col = validate_collection(CollectionConfig(**{f: getattr(p, f) for f in CollectionConfig.__struct_fields__}))
    except ConfigError as e:
        raise RpcError(wire.INVALID_PARAMS, str(e)) from None
    if not os.path.isdir(col.path):
        raise RpcError(wire.INVALID_PARAMS, f"{col.path} is not a directory", {"path": col.path})
    for other in d.config.collections:
        if other.name == col.name:
            again = os.path.realpath(other.path) == os.path.realpath(col.path)
            fix = (
                f"`gnoctl update {col.name}` indexes what changed in it"
                if again
                else "pick another name (--name), or remove that collection first"
            )
            raise RpcError(
                wire.INVALID_PARAMS,
                f"a collection named {col.name!r} already exists ({other.path}): {fix}",
                {"name": col.name, "path": other.path},
            )
    if not p.allow_overlap:
        _refuse_overlap(d, col)
    config = msgspec.structs.replace(d.config, collections=[*d.config.collections, col])
    return await _adopted(d, col, config, p.index, call)


async def _adopted(d: Daemon, col: CollectionConfig, config: Config | None, index: bool, call: Call) -> IndexResult:
    """Keep `config` (where it holds `col` new or changed; None: nothing changed), watch
    `col` as it says, then index `col` unless `index` is false."""
    if config is not None:
        save(d.paths.config_file, config)
        await d.apply_config(config, rescan=not index)
        if d.watcher is not None:
            await d.watcher.wait_ready(col.name)
    if not index:
        return IndexResult(collections=[IndexStats(collection=col.name)], seconds=0.0)
    return await _run_index(d, [col], call)


def _refuse_overlap(d: Daemon, col: CollectionConfig) -> None:
    """A folder indexed twice makes every result appear twice: name the collection that covers it."""
    new = os.path.realpath(col.path)
    for other in d.config.collections:
        have = os.path.realpath(other.path)
        if new == have:
            how = "is already the collection"
        elif new.startswith(have.rstrip(os.sep) + os.sep):
            how = "is inside the collection"
        elif have.startswith(new.rstrip(os.sep) + os.sep):
            how = "contains the collection"
        else:
            continue
        raise RpcError(
            wire.INVALID_PARAMS,
            f"{col.path} {how} {other.name!r} ({other.path}): its documents would be indexed "
            "twice and every result would repeat (`allow_overlap` adds it anyway: gnoctl collection add "
            "--allow-overlap)",
            {"path": col.path, "collection": other.name, "collection_path": other.path},
        )


async def collection_remove(d: Daemon, p: CollectionNameParams, call: Call) -> CollectionRemoveResult:
    await d.reload_config()
    find_collection(d, p.name)
    config = msgspec.structs.replace(d.config, collections=[c for c in d.config.collections if c.name != p.name])
    save(d.paths.config_file, config)
    removed = await d.writer.remove_collection(p.name)
    await d.apply_config(config, rescan=False)
    return CollectionRemoveResult(name=p.name, documents_removed=removed)


async def collection_describe(d: Daemon, p: CollectionDescribeParams, call: Call) -> CollectionInfo:
    """Say (or, with "", stop saying) what a collection holds; its files are left alone."""
    await d.reload_config()
    described = validate_collection(msgspec.structs.replace(find_collection(d, p.name), description=p.description))
    config = msgspec.structs.replace(
        d.config, collections=[described if c.name == p.name else c for c in d.config.collections]
    )
    save(d.paths.config_file, config)
    await d.apply_config(config, rescan=False)
    # Watchers hear of it: an MCP bridge's tools name each collection with what it holds.
    d.events.publish(p.name, [("changed", None)])
    infos = await d.read(lambda conn, _a: _collection_infos(d, conn))
    return next(i for i in infos if i.name == p.name)


async def collection_set(d: Daemon, p: CollectionSetParams, call: Call) -> IndexResult:
    """Change which files a collection indexes (its globs, language, .gitignore, links),
    then index it: the files the new settings take in are added, those they leave out
    removed."""
    await d.reload_config()
    old = find_collection(d, p.name)
    given = {f: getattr(p, f) for f in _SETTINGS if getattr(p, f) is not None}
    if given.get("language") == "auto":
        given["language"] = None
    try:
        col = validate_collection(msgspec.structs.replace(old, **given))
    except ConfigError as e:
        raise RpcError(wire.INVALID_PARAMS, str(e)) from None
    changed = [col if c.name == p.name else c for c in d.config.collections]
    config = msgspec.structs.replace(d.config, collections=changed) if col != old else None
    if col.language != old.language:  # its files are read again in it (they kept their stems)
        await d.writer.run_content(lambda conn: store.read_collection_again(conn, col.name))
    return await _adopted(d, col, config, p.index, call)


# What `collection.set` changes (its params but the collection's name and whether to
# index): which files a collection indexes, and how it reads them.
_SETTINGS = tuple(f for f in CollectionSetParams.__struct_fields__ if f not in ("name", "index"))


async def _run_index(d: Daemon, cols: list[CollectionConfig], call: Call) -> IndexResult:
    t0 = time.perf_counter()
    results = []
    for col in cols:

        def progress(phase: str, done: int, total: int, path: str, pace: Pace, _name: str = col.name) -> None:
            call.notify_threadsafe("progress", Progress(call.id, _name, phase, done, total, path, *pace))

        try:
            stats = await d.writer.index(col, progress)
            results.append(stats)
            if d.watcher is not None:
                await d.watcher.note_full_index(col.name, stats.scanned)
        except Cancelled:
            raise RpcError(wire.CANCELLED, "indexing stopped: gnod is shutting down (done so far is kept)") from None
        except StorageError as e:
            if d.watcher is not None:
                d.watcher.request(col.name, full=True)  # retried until space returns
            raise RpcError(e.code, e.message, {"path": e.path}) from None
        if d.stopping.is_set():
            raise RpcError(wire.CANCELLED, "indexing stopped: gnod is shutting down (done so far is kept)")
    return IndexResult(collections=results, seconds=round(time.perf_counter() - t0, 4))


async def index(d: Daemon, p: IndexParams, call: Call) -> IndexResult:
    await d.reload_config()
    cols = [find_collection(d, p.collection)] if p.collection else list(d.config.collections)
    return await _run_index(d, cols, call)


async def embed(d: Daemon, p: EmbedParams, call: Call) -> EmbedResult:
    if d.vectors.ext_error:
        raise RpcError(
            wire.MODEL_UNAVAILABLE,
            f"sqlite-vec is not available: {d.vectors.ext_error}",
            {"fix": "pip install sqlite-vec"},
        )
    t0 = time.monotonic()
    try:
        await d.models.get("embed")
    except ModelUnavailable as e:
        raise model_unavailable(e) from None
    start = d.vectors.done
    if p.force:
        d.vectors.force_uri = d.models.uri("embed")
    d.vectors.requested = True  # also when background embedding is off in the config
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if call.id is not None and now - last[0] >= 0.2:
            last[0] = now
            call.notify("progress", Progress(id=call.id, collection="", phase="embed", done=done, total=total))

    if p.wait:
        await d.vectors.wait_idle(on_progress=progress)
    else:
        d.vectors.wake.set()
    info = d.vectors.info()
    if p.wait and d.vectors.model_error:
        raise RpcError(wire.MODEL_UNAVAILABLE, d.vectors.model_error)
    return EmbedResult(
        model=info.model or "",
        embedded=max(0, info.embedded - (0 if p.force else start)),
        pending=info.pending,
        seconds=round(time.monotonic() - t0, 3),
    )


_MAX_DOCID = 2**63 - 1  # SQLite's rowid range: a larger number names no document
DEFINITIONS_NAMED = 12  # of a file with no definition asked for by `path:NAME`: some it has


def _number(text: str) -> int | None:
    """A plain decimal number (ASCII digits only: `str.isdigit` accepts `²`), or None."""
    return int(text) if text.isascii() and text.isdigit() else None


def resolve_ref(conn, d: Daemon, ref: str) -> DocRow | None:
    """`gno://col/path`, `col/path`, an absolute path, `#docid`, or a path inside the one
    collection that has it (`include/linux/slab.h`, as grep and editors give paths;
    INVALID_PARAMS naming them where several have it). A `gno://` URI no document has
    as given is also read percent-decoded, as a client that made it a URL sends it
    (`gno://notes/odd%20dir/a.md`), and a name no document has as given is also read in
    Unicode's composed and decomposed forms: a name typed or pasted in one (a macOS copy,
    `naïve` as i + ¨) names the file stored in the other. A `file://` URI of this machine
    (as editors and language servers name files) is its path."""
    if ref.startswith(FILE_URL) and (local := file_url_path(ref)) is not None:
        ref = local
    doc = _resolved(conn, d, ref)
    if doc is None and ref.startswith(URI_PREFIX) and "%" in ref and (plain := unquote(ref)) != ref:
        ref = plain
        doc = _resolved(conn, d, ref)
    for form in ("NFC", "NFD") if doc is None and not ref.isascii() else ():
        if (other := unicodedata.normalize(form, ref)) != ref and (doc := _resolved(conn, d, other)) is not None:
            break
    return doc


def _resolved(conn, d: Daemon, ref: str) -> DocRow | None:
    """resolve_ref of `ref` as given."""
    if "\0" in ref:
        raise RpcError(wire.INVALID_PARAMS, "a document reference cannot contain a NUL byte", {"ref": ref})
    docid = _number(ref[1:]) if ref.startswith("#") else None
    if docid is not None:
        return store.docs_by_ids(conn, [docid]).get(docid) if docid <= _MAX_DOCID else None
    if ref.startswith(URI_PREFIX):
        ref = ref[len(URI_PREFIX) :]
    elif os.path.isabs(ref) or ref.startswith("~"):
        return store.doc_by_abs_path(conn, os.path.realpath(os.path.expanduser(ref))) or store.doc_by_abs_path(
            conn, os.path.abspath(os.path.expanduser(ref))
        )
    if "." in ref.split("/"):  # `./README.md`, `repo/./src/a.py`: the folder itself, as a shell reads it
        ref = "/".join(part for part in ref.split("/") if part != ".")
    name, _, rel = ref.partition("/")
    doc = store.doc_by_path(conn, name, rel) if rel else None
    if doc is not None:
        return doc
    col = d.collection(name) if ".." in rel.split("/") else None
    if col is not None:  # `kernel/../include/linux/sched.h`: where it leads, another collection's maybe
        there = os.path.normpath(os.path.join(col.path, rel))
        return store.doc_by_abs_path(conn, os.path.realpath(there)) or store.doc_by_abs_path(conn, there)
    found = store.docs_by_rel_path(conn, ref)
    if len(found) > 1:
        names = [f.collection for f in found]
        raise RpcError(
            wire.INVALID_PARAMS,
            f"{wire.said(ref)} is in collections {', '.join(names)}: name one ({names[0]}/{ref})",
            {"ref": ref, "collections": names},
        )
    if found or "/" in ref or ":" in ref or "#" in ref:
        return found[0] if found else None
    # A note is named without its `.md` too, as a wiki link names it (`Project Alpha`).
    return _named_once(conn, d, ref) or (_named_once(conn, d, ref + NOTE_SUFFIX) if not extension(ref) else None)


def _named_once(conn, d: Daemon, name: str) -> DocRow | None:
    """The one document whose file is called `name` in any folder of any collection
    (`get fetcher.py:1`, as a traceback or an agent names a file); None where none is
    or several are (NOT_FOUND then names them: unindexed.named_elsewhere). Each name
    costs a scan of the paths (20-50 ms in the kernel tree's index), so one holding a
    reference's suffix (`client.py:request`, `notes.md#Install`) is not looked for: its
    name alone is, next (_ref_lines)."""
    named = unindexed.documents_named(d, conn, name, 2)
    return store.doc_by_path(conn, *named[0]) if len(named) == 1 else None


def _definition_lines(conn: apsw.Connection, doc: DocRow, name: str, ref: str) -> tuple[int, int]:
    """The file lines (first, how many) of the definition `name` (`Class.method` or
    `Class::method` for a member) in `doc`, as `search --symbol` finds it; NOT_FOUND
    naming some the file has where it has none so named."""
    container, _, member = name.replace("::", ".").rpartition(".")
    defined = symstore.of_documents(conn, [(doc.rel_path, doc.mirror_hash)]).get(doc.mirror_hash, [])
    if not container and in_c(doc.rel_path) and not any(s.name == member for s in defined):
        # An object-like macro is not stored (search.macros): read from the file, as `--symbol` does.
        stored = store.docs_with_contents(conn, [doc.id]).get(doc.id, (None, None, 0))[1]
        defined = [*(macros_defined(store.unpack_utf8(stored), member) if stored is not None else []), *defined]
    for s in defined:
        if s.name == member and (not container or s.container == container):
            first = file_line(doc.line_shifts, _decorated(conn, doc, s.start_line))
            return first, file_line(doc.line_shifts, s.end_line) - first + 1
    names = list(dict.fromkeys(s.name for s in defined if s.name))
    some = ", ".join(names[:DEFINITIONS_NAMED]) + (", …" if len(names) > DEFINITIONS_NAMED else "")
    has = f"its definitions: {some}" if names else "it has none parsed"
    raise RpcError(
        wire.NOT_FOUND,
        f"{wire.said(ref)}: no definition named {wire.said(name)} in {doc.collection}/{doc.rel_path} ({has})",
        {"ref": ref, "name": name},
    )


def not_found(d: Daemon, conn: apsw.Connection, ref: str) -> RpcError:
    """NOT_FOUND for a `ref` that names no indexed document, saying what it names: a file
    in a collection's folder that the index lacks (and why), a folder, a file moved or
    deleted since, or nothing, with the documents of its file's name."""
    path = _split_line_suffix(ref)[0]
    left_out = unindexed.explain(d, conn, path)
    if left_out is not None:
        return RpcError(wire.NOT_FOUND, *left_out)
    # A folder by its absolute path, as a shell completes it (a collection's own folder too).
    held = holding(d, path) if os.path.isabs(path) else None
    folder = _folder(conn, "/".join(part for part in held if part) if held is not None else path)
    if folder is not None:
        return RpcError(
            wire.NOT_FOUND,
            f"{wire.said(ref)} is a folder of {folder:,} indexed document{'s' if folder != 1 else ''}, "
            f"not a document: `ls` with `folders` lists it (gnoctl ls {ref.rstrip('/')} -d)",
            {"ref": ref, "documents": folder},
        )
    gone = unindexed.missing(d, conn, path)
    if gone is not None:
        return RpcError(wire.NOT_FOUND, *gone)
    # A definition named after the file (`slab.h:kmalloc`), or a section (`coding-style.rst#Indentation`):
    # the documents of the file's name.
    if (m := _DEFINITION_SUFFIX.search(path)) and m.start() > 0:
        path = path[: m.start()]
    elif marks := _section_marks(path):
        path = path[: marks[-1]]
    return RpcError(wire.NOT_FOUND, *unindexed.named_elsewhere(d, conn, ref, path))


def _folder(conn: apsw.Connection, ref: str) -> int | None:
    """How many documents the folder `ref` names holds (`collection/folder`, or a folder
    inside the collections, as `get` takes a path), or None where it names none."""
    path = ref.removeprefix(URI_PREFIX).strip("/")
    name, _, rel = path.partition("/")
    if name in store.collection_ids(conn):
        held = store.count_docs(conn, name, rel + "/" if rel else "")
        if held:
            return held
    if not path:
        return None
    return store.count_docs(conn, None, path + "/") or None


def _document(conn, doc: DocRow, from_line: int | None, lines: int | None, max_bytes: int | None) -> Document:
    """The file's lines from `from_line` on: the stored text with the blank lines its
    canonical form dropped put back, so that a line's number in `content` is the file's
    (an agent edits the file by them)."""
    content = store.content_of(conn, doc.mirror_hash)
    all_lines = expand(content[0], doc.line_shifts).split("\n") if content else []
    if all_lines and all_lines[-1] == "":
        all_lines.pop()
    total = len(all_lines)
    if from_line and from_line > max(total, 1):
        raise RpcError(
            wire.INVALID_PARAMS,
            f"line {from_line} is past the end of {doc.collection}/{doc.rel_path} "
            f"({total} line{'' if total == 1 else 's'})",
            {"ref": f"{doc.collection}/{doc.rel_path}", "total_lines": total},
        )
    start = (from_line or 1) - 1
    end = total if lines is None else min(total, start + lines)
    if max_bytes is not None:  # join no more lines than can be given (a line's bytes ≥ its characters)
        size = 0
        for i in range(start, end):
            size += len(all_lines[i]) + 1
            if size > max_bytes:
                end = i + 1
                break
    text = "\n".join(all_lines[start:end]) + ("\n" if end > start else "")
    truncated = False
    if max_bytes is not None and len(data := text.encode()) > max_bytes:
        # Whole lines, so that reading on from to_line + 1 misses nothing; a first line
        # longer than the budget is given in part (to_line names it).
        cut = data.rfind(b"\n", 0, max_bytes) + 1 or max_bytes
        text = data[:cut].decode("utf-8", "ignore")
        end = start + max(1, text.count("\n"))
        truncated = True
    return _described(
        doc,
        from_line=start + 1,
        to_line=end if end > start else start,  # nothing returned: the line before from_line
        total_lines=total,
        content=text,
        truncated=truncated,
    )


def _described(
    doc: DocRow, from_line: int = 0, to_line: int = 0, total_lines: int = 0, content: str = "", truncated: bool = False
) -> Document:
    """A document's fields with the lines given (none read: content "", lines 0)."""
    return Document(
        **identity(doc),
        language=doc.language,
        metadata=json.loads(doc.metadata),
        mirror_hash=doc.mirror_hash,
        from_line=from_line,
        to_line=to_line,
        total_lines=total_lines,
        content=content,
        truncated=truncated,
    )


# A reference's lines: `:LINE` (a search snippet's; `:LINE:`, pasted with the colon the
# human output puts before the text), `:LINE:COLUMN` (vimgrep's; the column is dropped)
# or `:FIRST-LAST`; or as GitHub links them, `#L42` and `#L42-L50`.
_LINE_SUFFIX = re.compile(r"(?::([0-9]+)(?::[0-9]*|-([0-9]+))?|#L([0-9]+)(?:-L([0-9]+))?)$")


def _split_line_suffix(ref: str) -> tuple[str, int | None, int | None]:
    """`notes/a.md:42` → (`notes/a.md`, 42, None); `:42:7` and `:42:` → line 42; `:42-50`
    and `#L42-L50` → (…, 42, 9 lines)."""
    m = _LINE_SUFFIX.search(ref)
    head = ref[: m.start()] if m else ""
    if m is None or not head or head.endswith("gno"):
        return ref, None, None
    first, last = int(m[1] or m[3]), m[2] or m[4]
    return head, first, int(last) - first + 1 if last else None


# `kernel/fork.c:copy_process`, `parser.py:Parser.parse`: a definition in the file.
_DEFINITION_SUFFIX = re.compile(r":([A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*)$")


def _decorated(conn: apsw.Connection, doc: DocRow, line: int) -> int:
    """The stored line a definition starting at `line` is read from: in Python, its first
    decorator's (`@classmethod`, `@dataclass(frozen=True)`: `get money.py:Money.parse`
    left them out), a line of its own each; else `line`. A search's passage and a jump
    to the definition still start at its name's line."""
    if line < 2 or grammar_for(doc.rel_path) != "python":
        return line
    stored = store.docs_with_contents(conn, [doc.id]).get(doc.id, (None, None, 0))[1]
    lines = store.unpack(stored).split("\n") if stored is not None else []
    while line > 1 and line - 2 < len(lines) and lines[line - 2].lstrip().startswith("@"):
        line -= 1
    return line


# `guide.md#Install`, `paper.pdf:Page 2`: the section under that heading of a document,
# whose name may hold a `:` too (`kapitel.md:Chapter 3: Methods`): the marks tried.
SECTION_MARKS_TRIED = 3


def _section_marks(ref: str) -> list[int]:
    """Where a section's name may start in `ref`: at a `#` or `:` after its last `/`, not
    first, with more than blanks and marks after it; the last SECTION_MARKS_TRIED, the
    last first (each costs a look for a document by the name before it)."""
    out: list[int] = []
    named = False  # a letter of a name follows
    for i in range(len(ref) - 1, 0, -1):
        ch = ref[i]
        if ch in "/\n" or len(out) == SECTION_MARKS_TRIED:
            break
        if ch in "#:":
            if named:
                out.append(i)
        elif not ch.isspace():
            named = True
    return out


_FIRST_PAGE = title_key("Page 1")
_PAGE_KEY = re.compile(r"page\d+")  # a `## Page N` section's title, as title_key gives it


def _section_lines(conn: apsw.Connection, doc: DocRow, name: str, ref: str) -> tuple[int, int, list[str]]:
    """The file lines (first, how many) of the section under the heading `name` in `doc`
    (text.headings: a PDF's `Page 2`, a deck's slide, a note's `Install`), else of a
    definition so named, as a heading's name is compared (a LaTeX file's `\\section{}`,
    a BibTeX entry's key), with a note where several sections are so named (the first is
    given: it was, without a word of the others); NOT_FOUND naming some of its headings
    where none is so named."""
    stored = store.docs_with_contents(conn, [doc.id]).get(doc.id, (None, None, 0))[1]
    text = store.unpack(stored) if stored is not None else ""
    marked = markup(extension(doc.rel_path)) or MARKDOWN  # a converted text's, a plain text's `# ` lines
    spans = section_spans(text, name, marked)
    found = spans[0] if spans else None
    if found is None and title_key(name) == _FIRST_PAGE and extension(doc.rel_path) in CONVERTED["pdf"]:
        if not any(_PAGE_KEY.fullmatch(title_key(title)) for _, _, title in headings(text)):
            found = (1, text.count("\n") or 1)  # a PDF of one page: it has no `## Page N` sections
    defined = symstore.of_documents(conn, [(doc.rel_path, doc.mirror_hash)]).get(doc.mirror_hash, [])
    if found is None:
        found = next(((s.start_line, s.end_line) for s in defined if title_key(s.name) == title_key(name)), None)
    if found is not None:
        first, last = file_line(doc.line_shifts, found[0]), file_line(doc.line_shifts, found[1])
        starts = ", ".join(str(file_line(doc.line_shifts, at)) for at, _ in spans)
        several = f"{len(spans)} sections are named {wire.said(name)}, at lines {starts}: this is the first"
        return first, last - first + 1, [several] if len(spans) > 1 else []
    titles = list(dict.fromkeys([*(title for _, _, title in headings(text, marked)), *(s.name for s in defined)]))
    some = ", ".join(titles[:DEFINITIONS_NAMED]) + (", …" if len(titles) > DEFINITIONS_NAMED else "")
    has = f"its headings: {some}" if titles else "it has no headings"
    raise RpcError(
        wire.NOT_FOUND,
        f"{wire.said(ref)}: no section named {wire.said(name)} in {doc.collection}/{doc.rel_path} ({has})",
        {"ref": ref, "headings": titles[:DEFINITIONS_NAMED]},
    )


def ref_document(conn, d: Daemon, ref: str) -> DocRow | None:
    """The document `ref` names as `get` reads it, whatever its suffix names in it (a
    line, lines, a definition, a section): `similar` of a hit's `path:LINE` said the
    file was not indexed yet."""
    return _ref_target(conn, d, ref)[0]


def _ref_target(conn, d: Daemon, ref: str) -> tuple[DocRow | None, int | None, int | None, list[str]]:
    """The document `ref` names and the lines it names in it (_ref_lines), else where the
    qualified name it is is defined (_qualified), with what to note of that."""
    doc, line, count, notes = _ref_lines(conn, d, ref)
    if doc is None and (qualified := _qualified(conn, ref)) is not None:
        return qualified
    return doc, line, count, notes


def _ref_lines(conn, d: Daemon, ref: str) -> tuple[DocRow | None, int | None, int | None, list[str]]:
    """The document `ref` names (resolve_ref) and the lines its suffix names: the first,
    and how many (None: to the end); a suffix naming a definition in it (source code),
    its lines, or a heading of it (another document: `#Install`, `:Page 2`), its
    section's; and what to note of them."""
    name, line, count = _split_line_suffix(ref)
    doc = resolve_ref(conn, d, name)
    if doc is None and line is not None:  # a name that ends so (`notes:2024`)
        return resolve_ref(conn, d, ref), None, None, []
    if doc is None and (m := _DEFINITION_SUFFIX.search(ref)) and m.start() > 0:
        doc = resolve_ref(conn, d, ref[: m.start()])
        if doc is not None and grammar_for(doc.rel_path) is not None:
            return doc, *_definition_lines(conn, doc, m[1], ref), []
        doc = None  # a document's section (`guide.md:Install`)
    for at in _section_marks(ref) if doc is None else ():
        doc = resolve_ref(conn, d, ref[:at])
        if doc is not None:
            return doc, *_section_lines(conn, doc, ref[at + 1 :].strip(), ref)
    if doc is not None and line == 0:
        raise RpcError(wire.INVALID_PARAMS, f"{wire.said(ref)} names line 0: lines start at 1", {"ref": ref})
    if doc is not None and count is not None and count < 1:
        raise RpcError(wire.INVALID_PARAMS, f"{wire.said(ref)} names its last line before its first", {"ref": ref})
    return doc, line, count, []


# A name qualified by its module or class, as Python and Java name one
# (`http.client.HTTPConnection.request`, `settings::load`): no path, no line.
_READ_EXTENSIONS = frozenset(TEXT_EXTENSIONS + DOCUMENT_EXTENSIONS)
_QUALIFIED_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)+")


def _qualified(conn: apsw.Connection, ref: str) -> tuple[DocRow, int, int, list[str]] | None:
    """The definition a qualified name that names no document names (`get
    http.client.HTTPConnection.request`, as a traceback or an import gives it), as
    `search --symbol` finds it first (defining.within), with its lines and, where
    several documents define it, a note saying so; None where none does, and for a
    file's name (`fork.c`, `notes.md`: its last part an extension gno reads)."""
    if _QUALIFIED_NAME.fullmatch(ref) is None:
        return None
    container, _, name = ref.replace("::", ".").rpartition(".")
    if "." + name.lower() in _READ_EXTENSIONS:
        return None
    found, _ = definitions(conn, name, filters.NO_FILTER, None, container=container, wanted=DEFINITIONS_NAMED)
    if not found:
        return None
    best = found[0]
    doc = store.docs_by_ids(conn, [best.doc_id]).get(best.doc_id)
    if doc is None:
        return None
    first = file_line(doc.line_shifts, _decorated(conn, doc, best.symbol.start_line))
    count = file_line(doc.line_shifts, best.symbol.end_line) - first + 1
    several = any(f.doc_id != best.doc_id for f in found)
    notes = (
        [f"other documents define {wire.said(ref)} too: `gnoctl search --symbol {ref}` lists them"] if several else []
    )
    return doc, first, count, notes


PICTURE_WITHOUT_TEXT = "no text was read from the picture (too small, or OCR found none): it is found by its name"
PICTURE_WAITING = (
    "the picture is waiting for OCR: its text is read in the background (gnoctl status says how many wait)"
)


async def get(d: Daemon, p: GetParams, call: Call) -> Document:
    def run(conn, _a) -> Document:
        doc, line, count, notes = _ref_target(conn, d, p.ref)
        if doc is None:
            raise not_found(d, conn, p.ref)
        # A definition's lines are where to start, and how many unless `lines` says (its
        # first lines: `fork.c:copy_process --lines 20`); a range typed is given once.
        ranged = _split_line_suffix(p.ref)[2] is not None
        for named, given, said in (
            (line, p.from_line, f"line {line}, and from_line (--from-line) is {p.from_line}"),
            (count if ranged else None, p.lines, f"{count} lines, and lines (--lines) is {p.lines}"),
        ):
            if named is not None and given is not None and named != given:
                raise RpcError(wire.INVALID_PARAMS, f"{wire.said(p.ref)} names {said}: give them once", {"ref": p.ref})
        out = _document(conn, doc, p.from_line or line, p.lines or count, p.max_bytes)
        out.notes = notes + failing_notes(store.failing(conn, [doc.id]), "the document")
        if not out.content.strip() and extension(doc.rel_path) in CONVERTED["image"]:
            # A blank line and status 0 said nothing of why (an icon, a photo without words).
            out.notes.append(PICTURE_WAITING if ocr_backlog.waiting(conn, doc.id) else PICTURE_WITHOUT_TEXT)
        return out

    return await d.read(run)


async def multi_get(d: Daemon, p: MultiGetParams, call: Call) -> MultiGetResult:
    if not p.refs and not p.pattern:
        raise RpcError(wire.INVALID_PARAMS, "multi_get needs refs or a pattern (gnoctl multi-get REF… or -p GLOB)")

    def run(conn, _a) -> MultiGetResult:
        docs: list[tuple[DocRow, int | None, int | None]] = []  # each with the lines its ref names
        missing: list[str] = []
        for ref in p.refs:
            try:
                doc, line, count, _notes = _ref_lines(conn, d, ref)
            except RpcError as e:
                if e.code != wire.NOT_FOUND:  # a malformed ref (`:0`) is the call's error
                    raise
                doc = None  # a definition the file does not have: missing, as a file that is not there
            if doc is None:
                missing.append(ref)
            else:
                docs.append((doc, line, count))
        seen = {doc.id for doc, _, _ in docs}
        for pattern in [p.pattern] if isinstance(p.pattern, str) else p.pattern or []:
            matched = _globbed(conn, pattern)
            if not matched:  # as a reference naming nothing
                missing.append(pattern)
            docs += [(doc, None, None) for doc in matched if doc.id not in seen]
            seen.update(doc.id for doc in matched)
        if not p.content:
            return MultiGetResult(documents=[_described(doc) for doc, _, _ in docs], missing=missing, truncated=False)
        out, budget = [], p.max_bytes
        for doc, line, count in docs:
            if budget <= 0:
                break
            item = _document(conn, doc, line, count, budget)
            budget -= len(item.content.encode())
            out.append(item)
        left_out = len(docs) - len(out)
        truncated = left_out > 0 or any(item.truncated for item in out)
        return MultiGetResult(documents=out, missing=missing, truncated=truncated, left_out=left_out)

    return await d.read(run)


def _globbed(conn: apsw.Connection, pattern: str) -> list[DocRow]:
    """The documents `multi_get`'s glob matches: over `collection/path`, gitignore-style
    (`*` stays inside one folder, `**` spans them), or over the paths inside every
    collection where its first folder is no collection's name; `{a,b}` stands for each
    alternative, as in search's path globs."""
    pat = pattern[len(URI_PREFIX) :] if pattern.startswith(URI_PREFIX) else pattern
    globs = filters.braces(pat)
    if len(globs) > PATH_BRACE_GLOBS_MAX:
        raise RpcError(
            wire.INVALID_PARAMS,
            f"pattern {wire.said(pattern)} stands for more than {PATH_BRACE_GLOBS_MAX} globs",
            {"pattern": pattern},
        )
    out: dict[int, DocRow] = {}
    collections = store.collection_ids(conn)
    for glob in globs:
        name = glob.split("/", 1)[0]
        scope = None if any(ch in name for ch in "*?[") else name
        # A first folder that is no collection's name: a path inside any, as `get` takes one.
        inside = scope is not None and scope not in collections
        scope = None if inside else scope
        anchored = glob.lstrip("/")
        try:
            spec = pathspec.GitIgnoreSpec.from_lines(["/" + anchored])
        except ValueError as e:  # pathspec's pattern errors are ValueErrors
            raise RpcError(
                wire.INVALID_PARAMS, f"invalid pattern {wire.said(pattern)}: {e}", {"pattern": pattern}
            ) from None
        # Only the paths starting as the glob's literal start does (`tree/mm/*.c`: mm/) are
        # tested: a listing's range of the index, not each of the tree's 76k paths (0.8 s).
        in_collection = anchored if inside else anchored.partition("/")[2] if scope else ""
        literal = re.split(r"[*?\[\\]", in_collection, maxsplit=1)[0]
        for doc in store.list_docs(conn, scope, literal, 1_000_000, 0):
            if doc.id not in out and spec.match_file(doc.rel_path if inside else f"{doc.collection}/{doc.rel_path}"):
                out[doc.id] = doc
    return list(out.values())


async def ls(d: Daemon, p: LsParams, call: Call) -> LsResult:
    collection, asked, named, inside = _ls_scope(d, p)
    passing = _ls_passing(d, collection, p)

    def run(conn, _a) -> LsResult:
        prefix = _as_printed(conn, collection, asked)
        path = prefix.strip("/")
        folders: list[LsFolder] = []
        one = store.doc_by_path(conn, collection, path) if collection and path and (named or p.folders) else None
        # A folder named is that folder (`ls tree/driver` is not drivers/); a mailbox or an
        # archive named is a folder of its documents (`mail/archive.mbox!/3.eml`).
        folder = path + "/" if path else ""
        if path and (named or p.folders) and not store.list_docs(conn, collection, folder, 1, 0):
            folder = path + MEMBER_SEP
        if one is not None:  # a document named, as ls(1) lists a file
            passes = passing is None or store.any_passing(conn, f"d.id = ? AND ({passing[0]})", [one.id, *passing[1]])
            rows, total = ([one], 1) if passes else ([], 0)
        elif p.folders:
            found, rows, total = store.list_folder(conn, collection, folder, p.limit, p.offset)
            folders = [LsFolder(name, folder, n) for name, folder, n in found]
        else:
            under = folder if named and path else prefix
            rows = store.list_docs(conn, collection, under, p.limit, p.offset, passing)
            total = store.count_docs(conn, collection, under, passing)
            if not total and passing is not None and store.count_docs(conn, collection, under):
                return LsResult(entries=[], total=0, folders=[])  # there, but the filters leave it all out
        entries = [LsEntry(**identity(r), size=r.size, mtime_ns=r.mtime_ns, language=r.language) for r in rows]
        if not total and not folders and one is None and any(ch in prefix for ch in "*?["):
            given = p.prefix or p.collection or ""
            raise RpcError(
                wire.INVALID_PARAMS,
                f"no path begins with {wire.said(given)}: `ls` takes a folder, not a glob; a glob filters "
                f"what it lists (`gnoctl ls --path '{given}'`: ls's filters.path)",
                {"prefix": given},
            )
        if inside and not total and not folders and one is None:
            given = p.collection or ""
            if "/" not in given.strip("/"):
                find_collection(d, given)  # neither a collection nor a folder: says which there are
            names = ", ".join(c.name for c in d.config.collections) or "none"
            said = f"no folder or document {wire.said(given)} in the collections (moved or deleted?)"
            raise RpcError(wire.NOT_FOUND, f"{said} (collections: {names})", {"name": given})
        return LsResult(entries=entries, total=total, folders=folders)

    return await d.read(run)


def _as_printed(conn: apsw.Connection, collection: str | None, prefix: str) -> str:
    """`prefix` in `collection`, where it starts as `ls` prints paths, with the
    collection's name (`ls usbcore --prefix usbcore/host` listed usbcore/usbcore/host),
    and the collection has no folder of its own name there (a repository's folder named
    after it, `requests/requests/`, is that folder)."""
    if collection and prefix.startswith(collection + "/") and not store.list_docs(conn, collection, prefix, 1, 0):
        return prefix[len(collection) + 1 :]
    return prefix


def _ls_scope(d: Daemon, p: LsParams) -> tuple[str | None, str, bool, bool]:
    """The collection `ls` lists (None: all), the prefix in it, whether that prefix was
    named as a folder or document (`ls notes/2024`), and whether it is a folder inside
    every collection (`ls mm`); NOT_FOUND for an unknown collection or a folder of none."""
    collection: str | None = p.collection
    prefix = p.prefix.removeprefix(URI_PREFIX)
    among = [collection] if collection and not os.path.isabs(collection) else None
    if os.path.isabs(prefix) and (held := holding(d, prefix, among)) is not None:
        # An absolute path, as every hit gives one, inside a collection's folder (else `/guides`
        # is the collection's guides/).
        collection, there = held
        prefix = there + "/" if there and p.prefix.endswith("/") else there
    if collection and os.path.isabs(collection):  # a folder or file from gnoctl's working directory (`ls .`)
        held = holding(d, collection)
        if held is None:
            raise RpcError(wire.NOT_FOUND, f"{collection} is in no collection's folder", {"path": collection})
        name, there = held
        if prefix:  # `--prefix` inside that folder
            collection, prefix = name, "/".join(part for part in (there, prefix) if part)
        else:
            collection = "/".join(part for part in held if part)
    # `ls notes/2024`: a folder (or a document) of a collection, as `ls` prints paths.
    named = inside = False
    if collection and not prefix and d.collection(collection) is None:
        # Or a folder inside the collections (`ls mm`, `ls include/linux`), as `get` takes a path.
        inside = d.collection(collection.partition("/")[0]) is None
        prefix, collection, named = collection, None, True
    if collection:
        find_collection(d, collection)
    # As `ls` prints a path, `collection/path`: a first folder that is a collection's name
    # (and no collection chosen) names it, as in `get`.
    head, slash, rest = prefix.partition("/")
    if collection is None and slash and d.collection(head) is not None:
        collection, prefix = head, rest
    return collection, prefix, named, inside


def _ls_passing(d: Daemon, collection: str | None, p: LsParams) -> tuple[str, list[Any]] | None:
    """The SQL condition of `ls`'s filters (filters.where), resolved as a search's; None
    when none is given. One level of a folder (`folders`) counts every document under
    each folder it shows, so it takes none: INVALID_PARAMS."""
    if p.filters == Filters():
        return None
    if p.folders:
        raise RpcError(
            wire.INVALID_PARAMS,
            "filters list documents, not one level of a folder: give them without `folders` (gnoctl ls without -d)",
        )
    return filters.where(search_filter(d, [collection] if collection else [], p.filters))


async def watch(d: Daemon, p: WatchParams, call: Call) -> WatchResult:
    """Stream `change` notifications until the client closes its side or the daemon stops."""
    check_collections(d, p.collections)
    sub = Subscription(call, p.collections, p.queue)
    task = asyncio.current_task()
    assert task is not None  # a handler always runs as a task
    call.conn.subscriptions.add(task)
    d.events.subscribe(sub)
    try:
        await sub.pump(d.stopping)
    finally:
        d.events.unsubscribe(sub)
        call.conn.subscriptions.discard(task)
    return WatchResult(sent=sub.sent, dropped=sub.total_dropped)


async def shutdown(d: Daemon, params, call: Call) -> OkResult:
    asyncio.get_running_loop().call_soon(d.request_stop)
    return OkResult(message="gnod is stopping")
