"""The `similar` method: documents like a given one.

With vectors, the mean of the document's chunk vectors is the query (each result
scored by its best chunk, as in `vsearch`); without them, or when the document has
none yet, its most informative words are a BM25 query. Either way the document
itself and identical copies (same content) are left out, and the search filters hold.
"""

from __future__ import annotations

import json
import time
from functools import partial
from typing import Literal

import apsw
import numpy as np

from gnod.protocol import SimilarHit, SimilarParams, SimilarResult
from gnod.search import lexical, vector
from gnod.search.constants import SIMILAR_COPIES_MAX, SIMILAR_COPIES_SAID, SIMILAR_TEXT_CHARS
from gnod.search.similar import informative_terms
from gnod.server.checks import search_filter
from gnod.server.handlers import not_found, ref_document
from gnod.server.hits import doc_uri, identity
from gnod.server.rpc import Call, Daemon
from gnod.store import documents as docstore

# Extra results fetched so that leaving out the document and its copies still leaves `limit`.
_SPARE = 8


def _document(d: Daemon, ref: str, conn: apsw.Connection, _a: object) -> docstore.DocRow:
    doc = ref_document(conn, d, ref)
    if doc is None:
        raise not_found(d, conn, ref)
    return doc


async def similar(d: Daemon, p: SimilarParams, call: Call) -> SimilarResult:
    t0 = time.perf_counter()
    where = search_filter(d, p.collections, p.filters)
    doc = await d.read(partial(_document, d, p.ref))
    copies = await d.read(lambda conn, _a: docstore.copies_of(conn, doc, SIMILAR_COPIES_MAX))
    notes: list[str] = _copies_note(copies)
    served = d.vectors.index()
    hits: list[SimilarHit] | None = None
    terms: list[str] = []
    if served is not None:
        _model, index = served

        def by_vectors(conn, _a) -> list[SimilarHit] | None:
            ids = np.asarray([row[0] for row in docstore.chunks_of(conn, doc.mirror_hash)], dtype=np.int64)
            vecs = index.vectors(ids)
            if not len(vecs):
                return None
            found = vector.search(conn, index, vecs.mean(axis=0), p.limit + _SPARE, where)
            return _others(conn, doc, [(r.doc_id, r.score) for r in found], p.limit)

        hits = await d.read(by_vectors)
        if hits is None:
            notes.append("the document has no vectors yet: found by its most informative words")
    else:
        notes.append(f"no vectors ({d.vectors.missing_reason()}): found by the document's most informative words")
    method: Literal["vector", "terms"] = "vector" if hits is not None else "terms"
    if hits is None:
        lex = await d.lexical()

        def by_terms(conn, analyzers) -> tuple[list[str], list[SimilarHit]]:
            # What the index holds of it: title, tags and body, not the frontmatter's keys.
            markdown, body_line = docstore.content_of(conn, doc.mirror_hash) or ("", 1)
            meta, body = json.loads(doc.metadata), docstore.body_of(markdown, body_line)
            searcher = lex.searcher()
            text = f"{docstore.indexed_title(doc.title, meta)}\n{body[:SIMILAR_TEXT_CHARS]}"
            words = informative_terms(searcher, text, doc.language)
            if not words:
                return [], []
            found = lexical.search(
                lex, conn, analyzers, " ".join(words), d.language_counts(conn), p.limit + _SPARE, where
            )
            return words, _others(conn, doc, [(r.doc_id, r.score) for r in found.rows], p.limit)

        terms, found_by_terms = await d.read(by_terms)
        hits = found_by_terms
    return SimilarResult(
        ref=p.ref,
        docid=doc.id,
        uri=doc_uri(doc.collection, doc.rel_path),
        method=method,
        terms=terms,
        hits=hits,
        took_ms=round((time.perf_counter() - t0) * 1000, 3),
        notes=notes,
        copies=[doc_uri(*c) for c in copies],
    )


def _copies_note(copies: list[tuple[str, str]]) -> list[str]:
    """What `similar` says of the document's identical copies, which it leaves out of its
    hits: a drafts folder's copies are what a person asking it may want to know of."""
    if not copies:
        return []
    named = ", ".join(f"{c}/{path}" for c, path in copies[:SIMILAR_COPIES_SAID])
    more = ", …" if len(copies) > SIMILAR_COPIES_SAID else ""
    count = f"{len(copies)}{'+' if len(copies) >= SIMILAR_COPIES_MAX else ''}"
    return [f"{count} identical cop{'y' if len(copies) == 1 else 'ies'} (the same text) left out: {named}{more}"]


def _others(conn, doc: docstore.DocRow, found: list[tuple[int, float]], limit: int) -> list[SimilarHit]:
    """The found documents that are not `doc` nor a copy of it, at most `limit`."""
    docs = docstore.docs_by_ids(conn, [doc_id for doc_id, _ in found])
    out = []
    for doc_id, score in found:
        o = docs.get(doc_id)
        if o is None or o.mirror_hash == doc.mirror_hash:
            continue
        out.append(SimilarHit(**identity(o), language=o.language, score=round(score, 6)))
        if len(out) >= limit:
            break
    return out
