"""A document's identity as every result names it: docid, gno:// uri, collection, path,
absolute path, title, whether its text is converted, its own date and sender. Built here
once, so all methods name a document alike."""

from __future__ import annotations

import json
from typing import Any

from gnod.config import converted
from gnod.ingest.containers import file_of
from gnod.store.documents import DocRow, date_of, sender_of

URI_PREFIX = "gno://"


def doc_uri(collection: str, rel_path: str) -> str:
    return f"{URI_PREFIX}{collection}/{rel_path}"


def identity(doc: DocRow) -> dict[str, Any]:
    """Keyword arguments for a result Struct: `SearchHit(**identity(doc), score=…)`."""
    return {
        "docid": doc.id,
        "uri": doc_uri(doc.collection, doc.rel_path),
        "collection": doc.collection,
        "path": doc.rel_path,
        "abs_path": f"{doc.root.rstrip('/')}/{file_of(doc.rel_path)}",  # a member's: its container's
        "title": doc.title,
        "converted": converted(doc.rel_path),
        **_dated(doc.metadata),
    }


def _dated(metadata: str) -> dict[str, Any]:
    """A document's own date and sender (DocumentIdentity), from its stored frontmatter."""
    if metadata in ("", "{}"):
        return {}
    meta = json.loads(metadata)
    return {"date": date_of(meta), "sender": sender_of(meta)}


def config_notes(config_error: str | None) -> list[str]:
    """What a result says while the config file holds an edit gnod could not load: its
    old settings are in use (a misspelt `exlude` left a folder indexed, and searches
    said nothing of it; only `status` did)."""
    if config_error is None:
        return []
    return [f"the config file has an error, and gnod keeps the settings it had until it is fixed: {config_error}"]


def failing_notes(failing: list[tuple[str, str, str]], shown: str = "its hit") -> list[str]:
    """What a result says of its hits (`shown`: what it gives of one) whose file failed to
    be read since it was indexed (documents.failing): they show the text read last, which
    the file may no longer hold."""
    if not failing:
        return []
    if len(failing) == 1:
        collection, rel_path, code = failing[0]
        return [
            f"{collection}/{rel_path}: its file could not be read since it was indexed ({code}): "
            f"{shown} shows the text read last (gnoctl status --errors)"
        ]
    codes = ", ".join(sorted({code for _, _, code in failing}))
    return [
        f"{len(failing)} hits' files could not be read since they were indexed ({codes}): "
        "they show the text read last (gnoctl status --errors)"
    ]
