"""A document's tags: where its metadata holds them, and how a filter compares them.

One definition for the lexical index (which holds each tag's key), SQLite's filter
(db.TAG_FUNCTION, for ls, vectors and definitions) and the ingest, so the two filters
pass the same documents.
"""

from __future__ import annotations

import json
from typing import Any

# The frontmatter keys whose values are a document's tags: `tags` (with a Markdown note's
# `#tags`, gnod.ingest.prepare), and `keywords` as pandoc and Hugo write them.
TAG_KEYS = ("tags", "keywords")


def as_tags(raw: object) -> list[str]:
    """A frontmatter value as tags: a list, or a string of them separated by commas; `#`
    dropped, in order, once each."""
    if isinstance(raw, str):
        raw = raw.split(",")
    if not isinstance(raw, list):
        return []
    tags = (t.strip().lstrip("#").strip() for t in raw if isinstance(t, str))
    return list(dict.fromkeys(t for t in tags if t))


def tags_of(meta: dict[str, Any]) -> list[str]:
    """A document's tags (from its metadata: TAG_KEYS), in order, once each."""
    return list(dict.fromkeys(tag for key in TAG_KEYS for tag in as_tags(meta.get(key))))


def tag_key(tag: str) -> str:
    """A tag as the index holds it and filters compare it: no `#`, case-folded."""
    return tag.strip("# ").casefold()


def has_tag(metadata: object, key: str) -> int:
    """Whether a document's metadata (its JSON text) holds a tag whose tag_key is `key`:
    SQLite's own lower() lowers ASCII only and json_each reads `tags: a, b` as one tag."""
    if not isinstance(metadata, str) or not any(f'"{name}"' in metadata for name in TAG_KEYS):
        return 0
    try:
        meta = json.loads(metadata)
    except ValueError:
        return 0
    return int(isinstance(meta, dict) and any(tag_key(tag) == key for tag in tags_of(meta)))
