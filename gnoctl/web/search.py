"""What the search box sends to gnod, and the hits as the page shows them.

As you type: lexical `search`, the word being typed as a prefix (`dock` → `dock*`, as
editors/nvim does), fast enough for every keystroke. On Enter: hybrid `query` (BM25,
vectors, expansion, reranking: slower, better). `definitions`: where a name is defined
in source code (`search --symbol`), linked from a one-word search. All come back as the
same rows.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

from markupsafe import Markup
from starlette.datastructures import QueryParams

from gnoctl.mcp.daemon import DaemonLink
from gnoctl.output.hits import passages
from gnoctl.web import render
from gnoctl.web.urls import doc_href

LIMIT = 20  # results a search shows first; "more results" asks for twice as many
MAX_LIMIT = 320
MODES = ("lexical", "hybrid", "definitions")


def as_typed(text: str) -> str:
    """`text` with its last word as a prefix, unless that word is done (a space after
    it), quoted, negated, one letter, already a prefix or ends in no letter or digit
    (`C++` was searched `C++*`: C alone); a phrase being typed is closed,
    its last word a prefix too (`"rotor imb` searches "rotor imb*": an open quote was an
    error at every keystroke, and closed as typed it found nothing until the word was
    whole), even of one letter, which gnod leaves out (`"rotor i*` searches "rotor":
    closed as typed, the list went blank at each new word's first letter)."""
    if text.count('"') % 2:
        words = text.rpartition('"')[2].split()
        typing = bool(words) and not text[-1].isspace() and "*" not in words[-1]
        return text.rstrip() + ("*" if typing else "") + '"'
    if not text or text[-1].isspace():
        return text
    last = text.split()[-1]
    if '"' in last or "*" in last or last.startswith("-") or len(last) < 2 or not last[-1].isalnum():
        return text  # `C++`, `50%`: no word's first letters end there
    return text + "*"


@dataclass
class Request:
    """A search as the page's form and address carry it."""

    text: str = ""
    mode: str = "lexical"
    typing: bool = False
    collections: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    since: str = ""
    until: str = ""
    lang: str = ""
    path: str = ""  # a glob, as `--path` takes one
    types: tuple[str, ...] = ()
    sender: str = ""
    limit: int = LIMIT

    @classmethod
    def from_query(cls, q: QueryParams) -> Request:
        mode = q.get("mode", "lexical")
        n = q.get("n", "")
        return cls(
            text=q.get("q", ""),
            mode=mode if mode in MODES else "lexical",
            typing=bool(q.get("typing")),
            collections=tuple(c for c in q.getlist("c") if c),
            # Apart by commas or spaces: a tag holds neither (`meeting urgent` was one tag, matching nothing).
            tags=tuple(t for t in re.split(r"[,\s]+", q.get("tags", "")) if t),
            since=q.get("since", ""),
            until=q.get("until", ""),
            lang=q.get("lang", "").strip(),
            path=q.get("path", "").strip(),
            types=tuple(t.strip() for t in re.split(r"[,\s]+", q.get("type", "")) if t.strip()),
            sender=q.get("from", "").strip(),
            limit=min(MAX_LIMIT, max(1, int(n))) if n.isdigit() else LIMIT,
        )

    def more(self, hits: list[Hit], result: dict | None) -> str | None:
        """The address of this search with twice the results, when more may match."""
        if result is None or len(hits) < self.limit or self.limit >= MAX_LIMIT:
            return None
        if result.get("total_candidates", len(hits) + 1) <= len(hits):  # `search` knows: nothing more
            return None
        # What was typed, searched as it was (`spin_lock_irqsa*` while typing it): the same
        # results and more, the box still holding what the user typed.
        query = [("q", self.text), ("mode", self.mode), ("n", str(min(MAX_LIMIT, 2 * self.limit)))]
        query += [("typing", "1")] if self.typing and self.mode != "hybrid" else []
        query += [("c", c) for c in self.collections] + self.fields()
        return "/?" + urlencode(query)

    def filters(self) -> dict:
        """The params' filters (their names on the wire)."""
        found = {
            "tags": list(self.tags),
            "since": self.since,
            "until": self.until,
            "lang": self.lang,
            "path": self.path,
            "types": list(self.types),
            "from": self.sender,
        }
        return {k: v for k, v in found.items() if v}

    def fields(self) -> list[tuple[str, str]]:
        """The filters as the page's form names its fields (`type`, a list as one value)."""
        named = {"types": "type"}
        return [(named.get(k, k), ",".join(v) if isinstance(v, list) else v) for k, v in self.filters().items()]

    def sent(self) -> str:
        return as_typed(self.text) if self.typing and self.mode != "hybrid" else self.text.strip()

    def one_name(self) -> bool:
        """A one-word lexical search of a whole word, whose page offers where that name is
        defined if it found source code (_results.html: in notes the link led to "Nothing
        matched"); not for a word being typed, `mutex_lo`, which names nothing yet."""
        word = self.sent()
        return self.mode == "lexical" and len(word.split()) == 1 and word.strip().isidentifier()

    def filtered(self) -> bool:
        return bool(self.collections or self.filters())

    def described(self) -> str:
        """The filters in force, as the page's summary of them says (gno.js's describe):
        seen while they are folded away."""
        named = [("collection", ", ".join(self.collections))] if self.collections else []
        labels = {"tags": "tags", "since": "since", "until": "until", "lang": "language", "path": "path"}
        labels |= {"type": "type", "from": "from"}
        named += [(labels[field], value) for field, value in self.fields()]
        return " · ".join(f"{label} {value}" for label, value in named)


@dataclass
class Hit:
    ref: str  # collection/path, as `get` takes it
    line: int
    title: str
    collection: str
    path: str
    uri: str
    score: float | None  # None: listed by the filters alone, no query to score it by
    passages: list[Markup]
    symbol: str | None = None  # in source code: the definition its first passage is in
    lines: list[int] = field(default_factory=list)  # where each passage starts
    marks: tuple[str, ...] = ()  # the words matched in its first passage
    query: str = ""  # the search it was found by

    @property
    def href(self) -> str:
        return doc_href(self.ref, self.line, marks=self.marks, query=self.query)

    @property
    def code(self) -> bool:
        """Source code: its passages keep their indentation, in a fixed-width font."""
        return render.kind_of(self.path) == "code"


def _matched(passage: dict) -> tuple[str, ...]:
    """The distinct words a passage's matches cover, as they are written there."""
    text = passage.get("text") or ""
    return tuple(dict.fromkeys(text[a:b] for a, b in passage.get("matches") or () if 0 <= a < b <= len(text)))


def _search_hit(h: dict, query: str) -> Hit:
    found = passages(h)
    return Hit(
        ref=f"{h['collection']}/{h['path']}",
        line=found[0]["line"] if found else 1,
        title=h.get("title") or h["path"],
        collection=h["collection"],
        path=h["path"],
        uri=h["uri"],
        score=h["score"],
        passages=[_with_header(p, render.kind_of(h["path"]) == "markdown") for p in found],
        symbol=found[0].get("symbol") if found else None,
        lines=[p["line"] for p in found],
        marks=_matched(found[0]) if found else (),
        query=query,
    )


def _with_header(p: dict, markdown: bool) -> Markup:
    """A search passage, under its table's header row where it shows rows far below it;
    `markdown`: a document shown as Markdown (render.passage)."""
    shown = render.passage(p["text"], p.get("matches") or [], markdown)
    header = p.get("table_header")
    return render.passage(header, []) + Markup("\n") + shown if header else shown


def _query_hit(h: dict, query: str) -> Hit:
    preview = h.get("preview") or {}
    text = preview.get("text") or ""
    return Hit(
        ref=f"{h['collection']}/{h['path']}",
        line=preview.get("start_line") or 1,
        title=h.get("title") or h["path"],
        collection=h["collection"],
        path=h["path"],
        uri=h["uri"],
        score=h["score"],
        passages=[render.passage(text, preview.get("matches") or [], render.kind_of(h["path"]) == "markdown")]
        if text
        else [],
        symbol=preview.get("symbol"),
        marks=_matched(preview),
        query=query,
    )


def _listed(entry: dict) -> Hit:
    return Hit(
        ref=f"{entry['collection']}/{entry['path']}",
        line=1,
        title=entry.get("title") or entry["path"],
        collection=entry["collection"],
        path=entry["path"],
        uri=entry["uri"],
        score=None,
        passages=[],
    )


async def listed(link: DaemonLink, req: Request) -> tuple[list[Hit], dict]:
    """The documents that pass the filters, with no text to search (`ls` with them:
    "all my urgent notes"), by path; a result as a search's, its `total_candidates` the
    documents listed."""
    hits: list[Hit] = []
    t0 = time.perf_counter()
    for collection in req.collections or (None,):
        params = {"collection": collection, "limit": req.limit + 1 - len(hits), "filters": req.filters()}
        hits += [_listed(e) for e in (await link.call("ls", params))["entries"]]
        if len(hits) > req.limit:
            break
    took_ms = (time.perf_counter() - t0) * 1000
    return hits[: req.limit], {"notes": [], "total_candidates": len(hits), "took_ms": took_ms}


async def run(link: DaemonLink, req: Request) -> tuple[list[Hit], dict]:
    """(hits, gnod's result) for a request; with no text, what the filters list
    (`listed`); DaemonError as gnod answers."""
    if not req.text.strip():
        return await listed(link, req)
    common = {"query": req.sent(), "limit": req.limit, "collections": list(req.collections), "filters": req.filters()}
    if req.mode == "hybrid":
        result = await link.call("query", common)
        return [_query_hit(h, req.text.strip()) for h in result["hits"]], result
    if req.mode == "definitions":
        result = await link.call("search", {**common, "symbol": True, "per_doc": 2})
        return [_search_hit(h, req.text.strip()) for h in result["hits"]], result
    result = await link.call("search", {**common, "per_doc": 2})
    return [_search_hit(h, req.text.strip()) for h in result["hits"]], result
