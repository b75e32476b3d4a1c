"""Vector search: nearest chunks → best chunk per document, filters honoured in full.

Filters are applied inside the KNN (an allowed-ids set), so `-n 10 -c notes`
returns ten documents whenever notes has ten with vectors.
"""

from __future__ import annotations

from typing import NamedTuple

import apsw
import numpy as np

from gnod.search import filters
from gnod.search.constants import VECTOR_OVERFETCH
from gnod.search.vector_index import VectorIndex
from gnod.store import vectors as vecstore


class Row(NamedTuple):
    doc_id: int
    score: float  # (1 + cosine) / 2
    cosine: float
    chunk: vecstore.ChunkHit  # the document's best chunk


def search(
    conn: apsw.Connection,
    index: VectorIndex,
    query: np.ndarray,
    limit: int,
    where: filters.Filter = filters.NO_FILTER,
    min_score: float = 0.0,
) -> list[Row]:
    """The documents whose chunks are nearest `query`, best first, each by its best chunk."""
    condition, args = filters.where(where)
    allowed = vecstore.allowed_chunks(conn, condition, args) if condition != "1" else None
    k = limit * VECTOR_OVERFETCH
    while True:
        ids, sims = index.search(query, k, allowed)
        sim_of = dict(zip(ids.tolist(), sims.tolist()))
        best: dict[int, tuple[float, vecstore.ChunkHit]] = {}
        for h in vecstore.chunk_hits(conn, ids.tolist(), condition, args):
            sim = sim_of[h.chunk_id]
            if h.doc_id not in best or sim > best[h.doc_id][0]:
                best[h.doc_id] = (sim, h)
        if len(best) >= limit or len(ids) < k:
            break
        k *= 4
    ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:limit]
    rows = [Row(doc_id, round((1.0 + sim) / 2.0, 6), round(sim, 6), h) for doc_id, (sim, h) in ranked]
    return [r for r in rows if r.score >= min_score]
