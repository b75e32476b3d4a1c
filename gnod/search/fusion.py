"""The model-free core of hybrid search: fusion, blending, floors, skips and dedup.

Everything here is a pure function of ranked ids and scores, so each stage can be
tested with hand-computed numbers and reported by `--explain` as it happened.
Constants come from `gnod.search.constants.PIPELINE`; every function takes a
`pipeline` argument only so tests and experiments can vary them.

Order of use in a hybrid query::

    strong_signal → (expansion) → fuse → dedup_by_content_hash
      → should_skip_rerank ? smart_skip_scores : (rerank, keyword_floor) → blend
      → apply_score_floor
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal, NamedTuple, TypeVar

from msgspec import Struct

from gnod.search.constants import PIPELINE, Mode, Pipeline
from gnod.search.grammar import QuerySyntaxError
from gnod.text.analyzer import tokenize
from gnod.text.stopwords import is_stopword

DocId = int | str
ListKind = Literal["original", "variant", "hyde"]
Source = Literal["bm25", "vector"]
T = TypeVar("T")

# Float slack for "≥ threshold" tests, so 0.98 − 0.84 counts as a gap of 0.14.
_EPS = 1e-9


# --- stage 0: strong signal ----------------------------------------------------------


def strong_signal(bm25_normalized_scores: Sequence[float], pipeline: Pipeline = PIPELINE) -> bool:
    """True when BM25's #1 is confident (≥ 0.84) and clear of #2 (gap ≥ 0.14).

    Scores are absolute BM25 confidences in [0, 1] (|bm25| / (1 + |bm25|)); order does not matter.
    A lone hit is compared against 0.0. Only the top `probe` scores are looked at.
    """
    s = pipeline.strong_signal
    top = sorted(bm25_normalized_scores, reverse=True)[: s.probe]
    if not top:
        return False
    second = top[1] if len(top) > 1 else 0.0
    return top[0] >= s.min_top - _EPS and top[0] - second >= s.min_gap - _EPS


# --- stage 3: score fusion -----------------------------------------------------------


class RankedList(Struct, frozen=True, kw_only=True):
    """One retrieval run: the ids it returned, best first, their scores, and what produced them."""

    kind: ListKind
    source: Source
    doc_ids: list[DocId]
    scores: list[float]  # retrieval scores, parallel to doc_ids, higher is better
    # Fewer hits than asked for: the list holds every document its retriever found, so
    # one it did not return is no match at all, not one just past its last hit.
    exhaustive: bool = False
    weight: float | None = None  # None: the kind's weight from the pipeline
    # Of that weight, for a list that saw only part of the documents (vectors still being
    # embedded: the share embedded).
    share: float = 1.0
    label: str = ""  # the query text behind the list (explain only)

    def effective_weight(self, pipeline: Pipeline = PIPELINE) -> float:
        weight: float = self.weight if self.weight is not None else getattr(pipeline.fusion.weights, self.kind)
        return weight * self.share


class Scale(NamedTuple):
    """How one list's scores are standardized: (score − floor) / deviation."""

    floor: float  # what a document the list did not return counts as
    deviation: float  # the population standard deviation of its scores (1 when they are all equal)


def scale(lst: RankedList) -> Scale:
    """The list's floor and deviation.

    The floor is the lowest score, or one deviation below it when the list is exhaustive
    (its last hit matched, the documents it left out did not). A list whose scores are
    all equal rates each hit one unit above its floor.
    """
    if not lst.scores:
        return Scale(0.0, 1.0)
    mean = math.fsum(lst.scores) / len(lst.scores)
    deviation = math.sqrt(math.fsum((s - mean) ** 2 for s in lst.scores) / len(lst.scores))
    if deviation <= _EPS:
        return Scale(min(lst.scores) - 1.0, 1.0)
    return Scale(min(lst.scores) - (deviation if lst.exhaustive else 0.0), deviation)


class Contribution(Struct, frozen=True, kw_only=True):
    list_index: int  # position of the list in the fuse() input
    kind: ListKind
    source: Source
    label: str
    rank: int  # 1-based rank in that list
    score: float  # that list's retrieval score
    weight: float
    standard: float  # (score − the list's floor) / its deviation
    contribution: float  # weight × standard / the lists' total weight


class Fused(Struct, frozen=True, kw_only=True):
    doc_id: DocId
    score: float  # Σ contributions: the fusion score that orders candidates
    best_rank: int  # best rank in any list
    contributions: list[Contribution]


def fuse(lists: Sequence[RankedList], pipeline: Pipeline = PIPELINE) -> list[Fused]:
    """Weighted mean of standardized scores over all lists, best first, every contribution kept.

    Each list's scores are standardized over the list itself, so a retriever whose
    scores are spread out (one clear match) weighs more than one whose hits are all
    alike, whatever its score units (BM25, cosine). A document a list did not return
    stands at its floor (standard 0; see `scale`). A document listed twice in one list
    counts once (its better rank). Sums use `math.fsum`, so equal contributions give
    equal scores whatever the list order; ties go to the better best rank, then to the
    document seen first.
    """
    total_weight = math.fsum(lst.effective_weight(pipeline) for lst in lists if lst.doc_ids)
    found: dict[DocId, list[Contribution]] = {}
    for i, lst in enumerate(lists):
        weight = lst.effective_weight(pipeline)
        floor, deviation = scale(lst)
        seen: set[DocId] = set()
        for rank, (doc_id, score) in enumerate(zip(lst.doc_ids, lst.scores), 1):
            if doc_id in seen:
                continue
            seen.add(doc_id)
            standard = (score - floor) / deviation
            found.setdefault(doc_id, []).append(
                Contribution(
                    list_index=i,
                    kind=lst.kind,
                    source=lst.source,
                    label=lst.label,
                    rank=rank,
                    score=score,
                    weight=weight,
                    standard=standard,
                    contribution=weight * standard / total_weight,
                )
            )
    fused = [
        Fused(
            doc_id=doc_id,
            score=math.fsum(c.contribution for c in contribs),
            best_rank=min(c.rank for c in contribs),
            contributions=contribs,
        )
        for doc_id, contribs in found.items()
    ]
    order = {doc_id: n for n, doc_id in enumerate(found)}
    fused.sort(key=lambda f: (-f.score, f.best_rank, order[f.doc_id]))
    return fused


def fusion_ceiling(lists: Sequence[RankedList], pipeline: Pipeline = PIPELINE) -> float:
    """The best fused score these lists allow: a document first in every non-empty list."""
    used = [lst for lst in lists if lst.doc_ids]
    total_weight = math.fsum(lst.effective_weight(pipeline) for lst in used)
    if not total_weight:
        return 0.0
    best = []
    for lst in used:
        floor, deviation = scale(lst)
        best.append(lst.effective_weight(pipeline) * (max(lst.scores) - floor) / deviation)
    return math.fsum(best) / total_weight


# --- stage 4: blending ----------------------------------------------------------------


class Blended(Struct, frozen=True, kw_only=True):
    fused: Fused
    position: int  # 1-based fused position: picks the blend weights
    fusion_norm: float  # min-max normalized fusion score in [0, 1]
    rerank: float | None  # clamped rerank score; None: not reranked
    fusion_weight: float
    rerank_weight: float
    score: float  # final, in [0, 1]

    @property
    def doc_id(self) -> DocId:
        return self.fused.doc_id


def _unit(x: float | None) -> float | None:
    """Clamp to [0, 1]; NaN and infinities (a broken reranker) count as missing."""
    if x is None or not math.isfinite(x):
        return None
    return min(1.0, max(0.0, x))


def blend(
    fused: Sequence[Fused],
    rerank_scores: Mapping[DocId, float] | None,
    pipeline: Pipeline = PIPELINE,
) -> list[Blended]:
    """Position-aware blend of normalized fusion and rerank scores, best first.

    `fused` is in fused order (positions 1, 2, …). Fusion scores are min-max
    normalized over `fused` (all equal → 1.0); rerank scores are clamped to [0, 1]
    and should already carry the keyword floor. A candidate the reranker did not
    score gets 0 for the rerank share, so it cannot overtake reranked peers for free.
    `rerank_scores=None` means no reranker at all: the score is the fusion score alone.
    Both shares lie in [0, 1] and the weights sum to 1, so the result does too.
    """
    if not fused:
        return []
    lo = min(f.score for f in fused)
    span = max(f.score for f in fused) - lo
    out = []
    for pos, f in enumerate(fused, 1):
        norm = (f.score - lo) / span if span > _EPS else 1.0
        if rerank_scores is None:
            w_f, w_r, r = 1.0, 0.0, None
        else:
            tier = pipeline.blend_tier(pos)
            w_f, w_r, r = tier.fusion, tier.rerank, _unit(rerank_scores.get(f.doc_id))
        score = min(1.0, max(0.0, w_f * norm + w_r * (r or 0.0)))
        out.append(
            Blended(
                fused=f, position=pos, fusion_norm=norm, rerank=r, fusion_weight=w_f, rerank_weight=w_r, score=score
            )
        )
    out.sort(key=lambda b: (-b.score, b.position))
    return out


# --- keyword floor --------------------------------------------------------------------

# Scripts written without spaces: a term in them matches as a substring.
_NO_SPACES = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff]")
# A word character for boundary purposes: \w plus combining marks (decomposed accents).
_WORD = r"[\w\u0300-\u036f]"


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def _term_pattern(term: str) -> re.Pattern[str]:
    before = rf"(?<!{_WORD})" if re.match(r"\w", term[0]) and not _NO_SPACES.match(term[0]) else ""
    after = rf"(?!{_WORD})" if re.match(r"\w", term[-1]) and not _NO_SPACES.match(term[-1]) else ""
    return re.compile(before + re.escape(term) + after)


def keyword_floor(query_terms: Iterable[str], text: str, pipeline: Pipeline = PIPELINE) -> float:
    """Score floor for literal term matches: 0.30 × (distinct terms found / distinct terms).

    Matching is case-insensitive (Unicode case folding), on whole words ("how" does
    not match "show"); terms in CJK scripts match as substrings. Callers raise the
    rerank score to max(score, floor): a floor, never a boost.
    """
    terms = list(dict.fromkeys(t for t in (_fold(q).strip() for q in query_terms) if t))
    if not terms:
        return 0.0
    folded = _fold(text)
    hits = sum(1 for t in terms if _term_pattern(t).search(folded))
    return pipeline.keyword_floor.max_floor * hits / len(terms)


# --- smart skip -----------------------------------------------------------------------


class Synthetic(Struct, frozen=True, kw_only=True):
    fused: Fused
    position: int
    x: float  # fused score / ceiling, times similarity when vector-sourced
    similarity: float | None  # the vector similarity that modulated x
    score: float  # in [low, cap]

    @property
    def doc_id(self) -> DocId:
        return self.fused.doc_id


def rerank_quota(done: int, seconds: float, waiting: int, pipeline: Pipeline = PIPELINE) -> int:
    """How many of `waiting` candidates to rerank after `done` took `seconds`: as many as
    that speed fits into the rest of the query's rerank budget."""
    if seconds <= 0:
        return waiting
    left = pipeline.limits.rerank_budget_s - seconds
    return max(0, min(waiting, int(left * done / seconds)))


def should_skip_rerank(mode: Mode, n_candidates: int, pipeline: Pipeline = PIPELINE) -> bool:
    """Tiny candidate sets in a skip-capable mode are returned without the reranker."""
    return mode.smart_skip and n_candidates < pipeline.smart_skip.min_candidates


def smart_skip_scores(
    fused: Sequence[Fused],
    lists: Sequence[RankedList],
    similarity: Mapping[DocId, float] | None = None,
    pipeline: Pipeline = PIPELINE,
) -> list[Synthetic]:
    """Synthetic scores for when the reranker is skipped, capped to say "unverified".

    x = fused score / `fusion_ceiling(lists)`; for a document that a vector list found
    and whose similarity (1 − distance/2, in [0, 1]) is given, x is multiplied by it;
    BM25-only documents keep plain x. score = min(cap, low + (cap − low) · σ(s · (x − c))).
    """
    p = pipeline.smart_skip
    ceiling = fusion_ceiling(lists, pipeline)
    similarity = similarity or {}
    out = []
    for pos, f in enumerate(fused, 1):
        x = min(1.0, f.score / ceiling) if ceiling > 0 else 0.0
        sim = None
        if any(c.source == "vector" for c in f.contributions):
            sim = _unit(similarity.get(f.doc_id))
            if sim is not None:
                x *= sim
        sigmoid = 1.0 / (1.0 + math.exp(-p.steepness * (x - p.center)))
        score = min(p.cap, p.low + (p.cap - p.low) * sigmoid)
        out.append(Synthetic(fused=f, position=pos, x=x, similarity=sim, score=score))
    out.sort(key=lambda s: (-s.score, s.position))
    return out


# --- floors, dedup, previews ----------------------------------------------------------


def _score(item: object) -> float:
    score: float = item.score  # type: ignore[attr-defined]
    return score


def apply_score_floor(
    items: Iterable[T],
    floor: float | None = None,
    key: Callable[[T], float] = _score,
    pipeline: Pipeline = PIPELINE,
) -> list[T]:
    """Drop items scoring below the floor (default 0.03): near-zero confidence is noise."""
    limit = pipeline.score_floor if floor is None else floor
    return [it for it in items if key(it) >= limit - _EPS]


def dedup_by_content_hash(candidates: Iterable[T], content_hash: Callable[[T], str | None], pool: int) -> list[T]:
    """First (best-ranked) candidate per content hash, then at most `pool` of them.

    Identical content shared by several collections would otherwise fill result
    slots with copies. A candidate without a hash is always kept.
    """
    seen: set[str] = set()
    out: list[T] = []
    for c in candidates:
        if len(out) >= pool:
            break
        h = content_hash(c)
        if h is not None:
            if h in seen:
                continue
            seen.add(h)
        out.append(c)
    return out


def auto_expand_preview(
    mode: Mode,
    position: int,
    rerank: float | None,
    content_chars: int,
    pipeline: Pipeline = PIPELINE,
) -> bool:
    """Inline the full text of a confident, short hit among the mode's top N."""
    p = pipeline.previews
    return (
        position <= mode.preview_expand_top
        and rerank is not None
        and rerank > p.min_rerank
        and content_chars < p.max_chars
    )


# --- deep mode ------------------------------------------------------------------------


class DeepQueryError(QuerySyntaxError):
    """A deep search whose query is too broad; the message is stable and user-facing."""

    def __init__(self, needed: int, found: int) -> None:
        super().__init__(
            f"deep search needs at least {needed} keywords, the query has {found}: "
            "add more specific terms or use standard search"
        )
        self.needed = needed
        self.found = found


def query_keywords(query: str, languages: Iterable[str | None] = ("english",)) -> list[str]:
    """Distinct non-stopword tokens of the query, in order (CJK runs as bigrams)."""
    langs = list(languages)
    return list(dict.fromkeys(t for t in tokenize(query) if not is_stopword(t, langs)))


def deep_mode_check(
    query: str, languages: Iterable[str | None] = ("english",), pipeline: Pipeline = PIPELINE
) -> list[str]:
    """The query's keywords; raises DeepQueryError when deep mode's minimum is not met."""
    words = query_keywords(query, languages)
    needed = pipeline.deep.min_keywords
    if len(words) < needed:
        raise DeepQueryError(needed, len(words))
    return words
