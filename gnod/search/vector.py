"""Vector search: nearest chunks → best chunk per document, filters honoured in full.

Filters are applied inside the KNN (an allowed-ids set), so `-n 10 -c notes`
returns ten documents whenever notes has ten with vectors.
"""

from __future__ import annotations

import apsw
import numpy as np

from gnod.protocol import VSearchHit, VSearchParams
from gnod.search import filters
from gnod.search.vector_index import VectorIndex
from gnod.store import documents as docstore
from gnod.store import vectors as vecstore

# Chunks fetched per wanted document; grows when documents hold many near chunks.
OVERFETCH = 3


def search(conn: apsw.Connection, index: VectorIndex, query: np.ndarray, params: VSearchParams) -> list[VSearchHit]:
    condition, args = filters.where(params.filters, params.collections)
    allowed = vecstore.allowed_chunks(conn, condition, args) if condition != "1" else None
    k = params.limit * OVERFETCH
    while True:
        ids, sims = index.search(query, k, allowed)
        sim_of = dict(zip(ids.tolist(), sims.tolist()))
        best: dict[int, tuple[float, vecstore.ChunkHit]] = {}
        for h in vecstore.chunk_hits(conn, ids.tolist(), condition, args):
            sim = sim_of[h.chunk_id]
            if h.doc_id not in best or sim > best[h.doc_id][0]:
                best[h.doc_id] = (sim, h)
        if len(best) >= params.limit or len(ids) < k:
            break
        k *= 4
    ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[: params.limit]
    docs = docstore.docs_by_ids(conn, [doc_id for doc_id, _ in ranked])
    hits = []
    for doc_id, (sim, h) in ranked:
        score = (1.0 + sim) / 2.0
        d = docs.get(doc_id)
        if d is None or score < params.min_score:
            continue
        hits.append(VSearchHit(
            docid=d.id, uri=f"gno://{d.collection}/{d.rel_path}", collection=d.collection, path=d.rel_path,
            abs_path=f"{d.root.rstrip('/')}/{d.rel_path}", title=d.title, score=round(score, 6),
            cosine=round(sim, 6), chunk=h.seq, start_line=h.start_line, end_line=h.end_line, text=h.text,
        ))
    return hits
