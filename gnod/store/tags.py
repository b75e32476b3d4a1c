"""A document's tags: where its metadata holds them, and how a filter compares them.

One definition for the lexical index (which holds each tag's key), SQLite's filter
(db.TAG_FUNCTION, for ls, vectors and definitions) and the ingest, so the two filters
pass the same documents.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from gnod.text.analyzer import fold

# The frontmatter keys whose values are a document's tags: `tags` (with a Markdown note's
# `#tags`, gnod.ingest.prepare), Obsidian's older `tag`, and `keywords` as pandoc and
# Hugo write them.
TAG_KEYS = ("tags", "tag", "keywords")


def listed(raw: object) -> list[str]:
    """A frontmatter value naming several things (tags, a note's aliases): a list, or a
    string of them separated by commas; each stripped, in order, once each."""
    values = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, list) else []
    return list(dict.fromkeys(v.strip() for v in values if isinstance(v, str) and v.strip()))


def as_tags(raw: object) -> list[str]:
    """A frontmatter value as tags (listed), `#` dropped."""
    return list(dict.fromkeys(t for t in (v.lstrip("#").strip() for v in listed(raw)) if t))


def tags_of(meta: dict[str, Any]) -> list[str]:
    """A document's tags (from its metadata: TAG_KEYS), in order, once each."""
    return list(dict.fromkeys(tag for key in TAG_KEYS for tag in as_tags(meta.get(key))))


def tag_key(tag: str) -> str:
    """A tag as the index holds it and filters compare it: no `#`, case-folded, accents
    off as a search's words (`--tag cafe` finds #café); a parent given as `projekt/` or
    `projekt/*` is `projekt` (tag_keys)."""
    return fold(tag.strip("# ").removesuffix("*").rstrip("/").casefold())


def tag_keys(tags: Iterable[str]) -> list[str]:
    """The keys a document is filtered by for its `tags`: each one's, and a nested tag's
    parents' (`projekt/übersetzung` is also `projekt`, as a notes app's tag search
    finds it by its parent), once each."""
    keys: dict[str, None] = {}
    for tag in tags:
        parts = tag_key(tag).split("/")
        keys.update(dict.fromkeys("/".join(parts[:n]) for n in range(1, len(parts) + 1)))
    return [k for k in keys if k]


def has_tag(metadata: object, key: str) -> int:
    """Whether a document's metadata (its JSON text) holds a tag with the key `key`
    (tag_keys): SQLite's own lower() lowers ASCII only, and its json_each reads `tags:
    a, b` as one tag."""
    if not isinstance(metadata, str) or not any(f'"{name}"' in metadata for name in TAG_KEYS):
        return 0
    try:
        meta = json.loads(metadata)
    except ValueError:
        return 0
    return int(isinstance(meta, dict) and key in tag_keys(tags_of(meta)))
