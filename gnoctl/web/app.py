"""The page's routes: search, a document, answers, collections and status.

Every route is a call (or a few) to gnod over DaemonLink, rendered by the Jinja2
templates in templates/ (autoescaped). Live parts are server-sent events: the answer
as it is written, gnod's `watch` changes for an open result list, and the status panel
re-rendered when something changed (and, while gnod is busy indexing, once a second).
"""

from __future__ import annotations

import asyncio
import mimetypes
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from gnoctl.client import DaemonError
from gnoctl.mcp.daemon import DaemonLink
from gnoctl.output.common import size
from gnoctl.web import render, search, wiki
from gnoctl.web.live import ENDED, STOPPED, Hub, sse
from gnoctl.web.urls import doc_href, file_href
from gnod import editor_url, wire
from gnod.config import MEMBER_SEP, name_for

STATIC = os.path.join(os.path.dirname(__file__), "static")
BUSY_POLL_S = 1.0
SETTLE_S = 0.2  # a burst of changes (a checkout) becomes one refresh
PING_S = 15.0
# How long a re-index asked from the page is awaited for a refusal (an unknown collection)
# before it is said to run: gnod refuses at once, and a run goes on in the background.
REFUSAL_WAIT_S = 0.5
SIMILAR = 8
# The files a `[[wiki link]]`'s name may be that are weighed (gnoctl.web.wiki.chosen):
# notes of one name in that many folders is more than a vault holds.
WIKI_CANDIDATES = 1000
# A document's lines the page shows at once, around the hit: a 24 MB generated header whole
# was 37 MB of HTML (8 s to make) that kept the browser busy for 106 s.
DOC_LINES = 2000
DOC_BYTES = 1_000_000
# A table's first lines read for its header row (after the blank lines a file may open with).
TABLE_HEAD_LINES = 5
MARKS_MAX = 20  # words a document's address may ask to be marked on its hit's line
# An original file shown by the browser must not run script in the page's origin.
SCRIPTED = (
    "text/html",
    "image/svg+xml",
    "application/xhtml+xml",
    "text/xml",
    "application/xml",
    "text/javascript",
    "application/javascript",
)
FILE_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; object-src 'self'; sandbox"


class Web:
    def __init__(self, link: DaemonLink, editor_template: str) -> None:
        self.link = link
        self.hub = Hub(link)
        self.editor_template = editor_template
        self.jinja = Environment(
            loader=PackageLoader("gnoctl.web", "templates"),
            autoescape=select_autoescape(),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.jinja.globals.update(doc_href=doc_href, file_href=file_href, ago=_ago, size=size)
        self.tasks: set[asyncio.Task] = set()

    def page(self, request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        context.update(csrf=request.scope.get("state", {}).get("csrf", ""), path=request.url.path)
        return HTMLResponse(
            self.jinja.get_template(name).render(context),
            status_code=status_code,
            headers={"cache-control": "no-store"},
        )

    def fragment(self, name: str, **context: Any) -> str:
        return self.jinja.get_template(name).render(context)

    async def collections(self) -> list[dict]:
        try:
            return (await self.link.call("collection.list", {}))["collections"]
        except DaemonError:
            return []

    # --- search ------------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        req = search.Request.from_query(request.query_params)
        hits, result, error = await self._search(req)
        return self.page(
            request, "search.html", req=req, hits=hits, result=result, error=error, collections=await self.collections()
        )

    async def api_search(self, request: Request) -> Response:
        req = search.Request.from_query(request.query_params)
        hits, result, error = await self._search(req)
        body: dict[str, Any] = {"mode": req.mode, "sent": req.sent(), "error": error}
        if error is None:
            body.update(
                count=len(hits),
                more=req.more(hits, result),
                took_ms=result.get("took_ms") if result else None,
                hits=[
                    {
                        "ref": h.ref,
                        "line": h.line,
                        "uri": h.uri,
                        "title": h.title,
                        "href": h.href,
                        "score": h.score,
                        "passages": [str(p) for p in h.passages],
                        "symbol": h.symbol,
                    }
                    for h in hits
                ],
                html=self.fragment("_results.html", hits=hits, result=result, req=req),
            )
        status = 200 if error is None else 400 if error["bad_input"] else 503
        return JSONResponse(body, status_code=status, headers={"cache-control": "no-store"})

    async def _search(self, req: search.Request) -> tuple[list[search.Hit], dict | None, dict | None]:
        if not req.text.strip() and not req.filtered():
            return [], None, None
        try:
            hits, result = await search.run(self.link, req)
        except DaemonError as e:
            return [], None, _error(e)
        return hits, result, None

    # --- documents ---------------------------------------------------------------------

    async def doc(self, request: Request) -> Response:
        ref = request.query_params.get("ref", "")
        line = _int(request.query_params.get("line"))
        start = _int(request.query_params.get("from")) or (max(1, line - DOC_LINES // 2) if line else 1)
        marks = tuple(w for w in request.query_params.getlist("mark")[:MARKS_MAX] if w.strip())
        if not ref.strip():
            missing = {"name": "INVALID_PARAMS", "message": "which document? /doc?ref=collection/path", "details": {}}
            return self.page(request, "error.html", status_code=400, error=missing, title="Document")
        try:
            if ":" in ref.removeprefix("gno://"):  # `path:12`, `path:3-9`, `path:NAME`, as gnoctl get takes them
                named = await self.link.call("get", {"ref": ref, "lines": 1})
                ref = f"{named['collection']}/{named['path']}"
                if line is None and named["from_line"] > 1:
                    line = named["from_line"]
                    start = _int(request.query_params.get("from")) or max(1, line - DOC_LINES // 2)
            doc = await self._window(ref, start)
        except DaemonError as e:
            status = {"NOT_FOUND": 404, "INVALID_PARAMS": 400}.get(e.name, 502)
            return self.page(request, "error.html", status_code=status, error=_error(e), title="Document")
        line_asked = line
        if line is not None and not doc["from_line"] <= line <= doc["to_line"]:
            line = None
        name = f"{doc['collection']}/{doc['path']}"
        earlier = max(1, doc["from_line"] - DOC_LINES) if doc["from_line"] > 1 else None
        later = doc["to_line"] + 1 if doc["to_line"] < doc["total_lines"] else None
        try:
            alike = await self.link.call("similar", {"ref": ref, "limit": SIMILAR})
        except DaemonError:
            alike = {"hits": [], "notes": []}
        abs_path = doc["abs_path"]
        header = await self._header(name) if render.kind_of(doc["path"]) == "table" and doc["from_line"] > 1 else None
        return self.page(
            request,
            "doc.html",
            doc=doc,
            line=line,
            ref=name,
            earlier=doc_href(name, line, earlier) if earlier else None,
            later=doc_href(name, line, later) if later else None,
            html=render.document(doc["content"], doc["path"], line, doc["from_line"], doc["collection"], marks, header),
            query=request.query_params.get("q", "").strip(),
            similar=alike["hits"],
            similar_notes=alike["notes"],  # how they were found, where not by meaning
            converted=doc["converted"],
            past=line_asked if line_asked is not None and line_asked > doc["total_lines"] else None,
            editor_url=None
            if self.editor_template == editor_url.template("file")
            else editor_url.url(self.editor_template, abs_path, line or 1),
        )

    async def wiki(self, request: Request) -> Response:
        """A `[[wiki link]]` followed: the page of the note it names (gnoctl.web.wiki)."""
        collection = request.query_params.get("c", "")
        folder = request.query_params.get("in", "")
        name = request.query_params.get("name", "").strip()
        try:
            if not (collection and name):
                raise DaemonError(wire.INVALID_PARAMS, "which note? /wiki?c=collection&name=Note")
            listed = await self.link.call(
                "ls", {"collection": collection, "limit": WIKI_CANDIDATES, "filters": {"path": wiki.patterns(name)}}
            )
            path = wiki.chosen(name, folder, [e["path"] for e in listed["entries"]])
            if path is None:
                raise DaemonError(
                    wire.NOT_FOUND,
                    f"no note of {collection} is named {name!r}: a [[link]] names a note by its file name, without .md",
                    {"collection": collection, "name": name},
                )
        except DaemonError as e:
            status = {"NOT_FOUND": 404, "INVALID_PARAMS": 400}.get(e.name, 502)
            return self.page(request, "error.html", status_code=status, error=_error(e), title="Note")
        return RedirectResponse(doc_href(f"{collection}/{path}"), status_code=303)

    async def _header(self, ref: str) -> str | None:
        """A table's header row, for a window of its rows below it: its first row."""
        try:
            top = await self.link.call("get", {"ref": ref, "lines": TABLE_HEAD_LINES})
        except DaemonError:
            return None
        return next((r for r in top["content"].split("\n") if r.startswith("|")), None)

    async def _window(self, ref: str, start: int) -> dict:
        """The document's DOC_LINES lines (at most DOC_BYTES) from `start`, or from its first
        line when `start` is past its end (a line number from before it got shorter)."""
        window = {"ref": ref, "lines": DOC_LINES, "max_bytes": DOC_BYTES}
        try:
            return await self.link.call("get", {**window, "from_line": start})
        except DaemonError as e:
            if e.name != "INVALID_PARAMS" or start == 1:
                raise
            return await self.link.call("get", {**window, "from_line": 1})

    async def original(self, request: Request) -> Response:
        """The document's own file (a PDF as the browser shows it), read where gnod indexed
        it; a page saying why where there is none (it was a bare JSON error)."""

        def missing(error: dict) -> Response:
            return self.page(request, "error.html", status_code=404, error=error, title="Original file")

        try:
            doc = await self.link.call("get", {"ref": request.query_params.get("ref", ""), "lines": 1})
        except DaemonError as e:
            return missing(_error(e))
        kind = mimetypes.guess_type(doc["abs_path"])[0] or "application/octet-stream"
        textual = kind in SCRIPTED or kind.startswith("text/")
        if textual:
            kind = "text/plain; charset=utf-8"
        if not os.path.isfile(doc["abs_path"]):
            return missing({"message": f"{doc['abs_path']} is gone: deleted or moved since it was indexed"})
        if MEMBER_SEP in doc["path"] or (textual and not await asyncio.to_thread(_utf8_file, doc["abs_path"])):
            # A mailbox's message, an archive's member: not the whole container; a text in
            # Latin-1 or another legacy charset (sent as UTF-8 it was mojibake): as gno read it.
            try:
                read = await self.link.call(
                    "get", {"ref": f"{doc['collection']}/{doc['path']}", "max_bytes": DOC_BYTES}
                )
            except DaemonError as e:
                return missing(_error(e))
            headers = {"content-security-policy": FILE_CSP, "cache-control": "no-store"}
            return Response(read["content"], media_type="text/plain; charset=utf-8", headers=headers)
        return FileResponse(
            doc["abs_path"],
            media_type=kind,
            content_disposition_type="inline",
            filename=os.path.basename(doc["abs_path"]),
            headers={"content-security-policy": FILE_CSP, "cache-control": "no-store"},
        )

    # --- answers -----------------------------------------------------------------------

    async def ask(self, request: Request) -> Response:
        req = search.Request.from_query(request.query_params)
        return self.page(
            request, "ask.html", req=req, collections=await self.collections(), writer=await self._writer()
        )

    async def _writer(self) -> dict | None:
        """The generate model, where it cannot write answers (not downloaded, failing):
        said before a question is asked (the page said so only after it)."""
        try:
            models = (await self.link.call("status", {}))["models"]
        except DaemonError:
            return None
        found = next((m for m in models if m["role"] == "generate"), None)
        return found if found is not None and found["state"] in ("missing", "error") else None

    async def api_ask(self, request: Request) -> Response:
        req = search.Request.from_query(request.query_params)
        params = {"query": req.text.strip()[:2000], "collections": list(req.collections), "filters": req.filters()}
        return _stream(self._answer(params))

    async def _answer(self, params: dict) -> AsyncIterator[str]:
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        async def on_notify(method: str, p: dict) -> None:
            if method == "token":
                await queue.put(("token", p.get("text", "")))

        async def run() -> None:
            try:
                await queue.put(("done", await self.link.call("ask", {**params, "stream": True}, on_notify)))
            except DaemonError as e:
                if e.name != "MODEL_UNAVAILABLE":
                    await queue.put(("error", e))
                    return
                try:  # the sources it would have used, and what to install
                    await queue.put(("unavailable", (e, await self.link.call("ask", {**params, "answer": False}))))
                except DaemonError as e2:
                    await queue.put(("error", e2))

        task = asyncio.create_task(run())
        try:
            while True:
                kind, value = await queue.get()
                if kind == "token":
                    yield sse("token", value)
                    continue
                if kind == "error":
                    html = self.fragment("_answer.html", error=_error(value))
                elif kind == "unavailable":
                    html = self.fragment("_answer.html", unavailable=_error(value[0]), **self._answered(value[1]))
                else:
                    html = self.fragment("_answer.html", **self._answered(value))
                yield sse("done", {"html": html})
                return
        finally:
            task.cancel()  # the page went away: closing gnod's connection stops the generation

    def _answered(self, result: dict) -> dict:
        sources = result["sources"] or result["considered"]
        by_n = {s["n"]: s for s in sources}

        def link(n: int) -> str | None:
            s = by_n.get(n)
            return doc_href(f"{s['collection']}/{s['path']}", s["start_line"]) if s else None

        for s in sources:
            s["href"] = link(s["n"])
        text = result.get("answer")
        return {"result": result, "sources": sources, "answer": render.answer(text, link) if text else None}

    # --- collections and status --------------------------------------------------------

    async def status(self, request: Request) -> Response:
        html, _ = await self._status_panel()
        return self.page(request, "status.html", panel=html)

    async def _status_panel(self, start: bool = True) -> tuple[str, bool]:
        """(the status panel's HTML, whether gnod is busy indexing, embedding, parsing or
        reading scans). `start`: gnod may be started for it (the page opening, which
        starts gnod as every client does; not its stream: a gnod stopped while the page
        is open stays stopped)."""
        try:
            st = await self.link.call("status", {}, start=start)
        except DaemonError as e:
            return self.fragment("_status.html", error=_error(e)), False
        errors: dict[str, list[dict]] = {}
        for err in st.get("recent_errors") or []:
            errors.setdefault(err.get("collection") or "", []).append(err)
        fresh = {f["collection"]: f for f in st.get("freshness") or []}
        vectors = st.get("vectors") or {}
        lexical = st.get("lexical") or {}
        busy = (
            st["job"]["running"]
            or any(f["indexing"] or f["pending"] for f in fresh.values())
            or bool(vectors.get("embedding"))
            or lexical.get("ready") is False
            or any((st.get(part) or {}).get("pending") for part in ("symbols", "ocr"))
        )
        return self.fragment("_status.html", st=st, fresh=fresh, errors=errors, now=time.time()), busy

    async def status_events(self, request: Request) -> Response:
        return _stream(self._status_stream())

    async def _status_stream(self) -> AsyncIterator[str]:
        with self.hub.listen() as changes:
            shown = None
            while True:
                html, busy = await self._status_panel(start=False)
                if html != shown:
                    yield sse("status", {"html": html})
                    shown = html
                try:
                    change = await asyncio.wait_for(changes.get(), BUSY_POLL_S if busy else PING_S)
                except TimeoutError:
                    if not busy:
                        yield ": ping\n\n"
                    continue
                if change["kind"] == ENDED:
                    return
                await asyncio.sleep(SETTLE_S)
                while not changes.empty():
                    changes.get_nowait()

    async def change_events(self, request: Request) -> Response:
        return _stream(self._change_stream())

    async def _change_stream(self) -> AsyncIterator[str]:
        with self.hub.listen() as changes:
            yield "retry: 2000\n\n"
            try:
                await asyncio.wait_for(self.hub.live.wait(), 5.0)
                yield sse("ready", {})
            except TimeoutError:
                pass  # gnod is not running: the changes come once it is back
            while True:
                try:
                    change = await asyncio.wait_for(changes.get(), PING_S)
                except TimeoutError:
                    yield ": ping\n\n"
                    continue
                if change["kind"] == ENDED:
                    return
                if change["kind"] != STOPPED:  # a list searched again would start gnod again
                    yield sse("change", change)

    async def add_collection(self, request: Request) -> Response:
        form = await _json_object(request)
        if isinstance(form, Response):
            return form
        params: dict[str, Any] = {
            "name": str(form.get("name", "")).strip(),
            "path": str(form.get("path", "")).strip(),
            "index": False,
        }
        if form.get("description"):
            params["description"] = str(form["description"])
        if not params["path"]:
            return _bad_request("a folder is needed")
        params["path"] = os.path.expanduser(params["path"])
        if not os.path.isabs(params["path"]):  # the page has no working directory to start from
            return _bad_request(f"{params['path']!r} is not a full path: give one from / or ~")
        params["path"] = os.path.normpath(params["path"])
        if not params["name"]:
            params["name"] = name_for(params["path"])
        try:
            added = await self.link.call("collection.add", params)
        except DaemonError as e:
            return _error_response(e)
        # gnod indexes it now in the background (a rescan, as after a hand edit of the config);
        # its progress reaches the status page like any other run's.
        return JSONResponse({"ok": True, "message": f"added {params['name']}: indexing", "result": added})

    async def remove_collection(self, request: Request) -> Response:
        form = await _json_object(request)
        if isinstance(form, Response):
            return form
        name = str(form.get("name", ""))
        try:
            removed = await self.link.call("collection.remove", {"name": name})
        except DaemonError as e:
            return _error_response(e)
        self.hub.publish({"kind": "removed", "collection": name})
        n = removed["documents_removed"]
        return JSONResponse({"ok": True, "message": f"removed {name} ({n:,} document{'s' if n != 1 else ''})"})

    async def reindex(self, request: Request) -> Response:
        form = await _json_object(request)
        if isinstance(form, Response):
            return form
        name = str(form.get("name", "")) or None
        run = self._index(name)
        done, _ = await asyncio.wait({run}, timeout=REFUSAL_WAIT_S)
        refused = run.result() if done else None
        if refused is not None:
            return _error_response(refused)
        return JSONResponse({"ok": True, "message": f"re-indexing {name or 'every collection'}"})

    def _index(self, collection: str | None) -> asyncio.Task[DaemonError | None]:
        """An index run in the background; its progress moves the status page. The task
        ends with what gnod refused, if it did."""

        async def progress(method: str, params: dict) -> None:
            if method == "progress":
                self.hub.publish({"kind": "progress", "collection": params.get("collection")})

        async def run() -> DaemonError | None:
            try:
                await self.link.call("index", {"collection": collection}, progress)
            except DaemonError as e:
                self.hub.publish({"kind": "error", "collection": collection, "message": e.message})
                return e
            finally:
                self.hub.publish({"kind": "indexed", "collection": collection})
            return None

        task = asyncio.create_task(run())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def code_css(self, request: Request) -> Response:
        return Response(render.code_css(), media_type="text/css", headers={"cache-control": "max-age=3600"})

    def close(self) -> None:
        self.hub.close()
        for task in self.tasks:
            task.cancel()
        self.link.close()


def _utf8_file(path: str) -> bool:
    """Whether the file's bytes are UTF-8 (or it cannot be read: the file response says so)."""
    try:
        with open(path, "rb") as f:
            f.read().decode("utf-8")
    except UnicodeDecodeError:
        return False
    except OSError:
        return True
    return True


def _stream(events: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(
        events, media_type="text/event-stream", headers={"cache-control": "no-store", "x-accel-buffering": "no"}
    )


def _error(e: DaemonError) -> dict:
    return {"name": e.name, "message": e.message, "details": e.details, "bad_input": wire.bad_input(e.code)}


async def _json_object(request: Request) -> dict[str, Any] | Response:
    """The JSON object a POST carries, or the 400 that says it carries none."""
    try:
        body = await request.json()
    except ValueError:  # not JSON, or not UTF-8
        return _bad_request("the request's body is not JSON")
    return body if isinstance(body, dict) else _bad_request("the request's body is not a JSON object")


def _bad_request(message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message}}, status_code=400)


def _error_response(e: DaemonError) -> JSONResponse:
    return JSONResponse({"error": _error(e)}, status_code=400 if wire.bad_input(e.code) else 503)


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def _ago(ts: float | None, now: float) -> str:
    if not ts:
        return "never"
    s = max(0, int(now - ts))
    return f"{s} s ago" if s < 120 else f"{s // 60} min ago" if s < 7200 else f"{s // 3600} h ago"


def create(web: Web) -> Starlette:
    return Starlette(
        routes=[
            Route("/", web.home),
            Route("/api/search", web.api_search),
            Route("/doc", web.doc),
            Route("/file", web.original),
            Route("/wiki", web.wiki),
            Route("/ask", web.ask),
            Route("/api/ask", web.api_ask),
            Route("/status", web.status),
            Route("/events/status", web.status_events),
            Route("/events/changes", web.change_events),
            Route("/api/collections", web.add_collection, methods=["POST"]),
            Route("/api/collections/remove", web.remove_collection, methods=["POST"]),
            Route("/api/index", web.reindex, methods=["POST"]),
            Route("/code.css", web.code_css),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]
    )
