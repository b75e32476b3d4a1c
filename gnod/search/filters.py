"""Search filters (collections, tags, dates, path, language) as one SQL condition.

The condition is over `documents d` joined with `collections c`, and every retriever
puts it inside its own query (lexical: after the FTS pass; vectors: the KNN's allowed
ids), so a filtered search still returns `limit` results when that many documents pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import msgspec

from gnod.protocol import Filters
from gnod.text.language import normalize_language

# A document's date: an ISO frontmatter `date` (its day), else the file's mtime (UTC day).
DOC_DATE = (
    "(CASE WHEN json_extract(d.metadata, '$.date') GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' "
    "THEN substr(json_extract(d.metadata, '$.date'), 1, 10) "
    "ELSE date(d.mtime_ns / 1000000000, 'unixepoch') END)"
)


P = TypeVar("P")


class FilterError(ValueError):
    """A filter value the index cannot use; the message is meant for a person."""


def resolved(params: P) -> P:
    """Search params (any with `filters`) with their filters resolved."""
    return msgspec.structs.replace(params, filters=resolve(params.filters))  # type: ignore[attr-defined,type-var]


def resolve(f: Filters) -> Filters:
    """`f` with its language as the index stores it (a Snowball name); FilterError otherwise."""
    if f.since and f.until and f.since > f.until:
        raise FilterError(f"since {f.since} is after until {f.until}: no document can match")
    if f.lang is None:
        return f
    try:
        lang = normalize_language(f.lang)
    except ValueError as e:
        raise FilterError(f"lang: {e}") from None
    return msgspec.structs.replace(f, lang=lang)


def active(f: Filters, collections: Sequence[str]) -> bool:
    return bool(collections or f.tags or f.since or f.until or f.path or f.lang)


def where(f: Filters, collections: Sequence[str]) -> tuple[str, list]:
    """(SQL condition over `d` and `c`, its arguments); "1" when nothing is filtered."""
    parts: list[str] = []
    args: list = []
    if collections:
        parts.append(f"c.name IN ({','.join('?' * len(collections))})")
        args += list(collections)
    for tag in f.tags:
        parts.append("EXISTS (SELECT 1 FROM json_each(d.metadata, '$.tags') t "
                     "WHERE lower(trim(t.value, '# ')) = lower(trim(?, '# ')))")
        args.append(tag)
    if f.since:
        parts.append(f"{DOC_DATE} >= ?")
        args.append(f.since)
    if f.until:
        parts.append(f"{DOC_DATE} <= ?")
        args.append(f.until)
    if f.path:
        parts.append("d.rel_path GLOB ?")
        args.append(f.path)
    if f.lang:
        parts.append("d.language = ?")
        args.append(f.lang)
    return (" AND ".join(parts) or "1"), args
