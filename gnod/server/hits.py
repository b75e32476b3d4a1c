"""A document's identity as every result names it: docid, gno:// uri, collection, path,
absolute path, title, whether its text is converted. Built here once, so all methods
name a document alike."""

from __future__ import annotations

from typing import Any

from gnod.config import DOCUMENT_EXTENSIONS, MEMBER_SEP, extension
from gnod.ingest.containers import file_of
from gnod.store.documents import DocRow

URI_PREFIX = "gno://"
_CONVERTED = frozenset(DOCUMENT_EXTENSIONS)  # the kinds of files converted to Markdown


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
        "converted": MEMBER_SEP in doc.rel_path or extension(doc.rel_path) in _CONVERTED,
    }
