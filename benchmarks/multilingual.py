"""Known-item retrieval per language in one mixed-language index, stemming on vs off.

    python benchmarks/multilingual.py [--per-language 200] [--seed 13]

For each language, up to N tldr pages (fixed seed) are copied into one cached folder
(`<lang>/<platform>/<command>.md`); a page's query is its one-line description in that
language (the first `> ` line that is not the "More information" link, without the
final period), and the page itself is the only relevant result.  Stemming on is the
normal pipeline through a real gnod; stemming off indexes the same folder in-process
with analyzers that never stem.  Pages gnod does not index (dotfiles such as `..md`)
are not sampled.  Prints mrr@10_<lang>= and mrr@10_<lang>_nostem= for each language,
then the means.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
from collections.abc import Callable

from common import CACHE, Daemon, emit, tldr_pages
from gnoctl.client import DaemonError
from gnod import wire
from gnod.config import CollectionConfig
from gnod.ingest.lexical_text import deriver
from gnod.ingest.pipeline import index_collection
from gnod.search import lexical
from gnod.search.grammar import QuerySyntaxError
from gnod.store.db import connect
from gnod.store.documents import docs_by_ids, language_counts
from gnod.store.lexical_index import LexicalIndex
from gnod.store.migrations import migrate
from gnod.text.analyzer import Analyzer, AnalyzerSet

# Output name → tldr folder.
LANGS: dict[str, str] = {
    "en": "pages", "de": "pages.de", "fr": "pages.fr", "es": "pages.es", "pt": "pages.pt_BR",
    "it": "pages.it", "ru": "pages.ru", "nl": "pages.nl", "sv": "pages.sv", "tr": "pages.tr",
    "zh": "pages.zh", "ja": "pages.ja", "ko": "pages.ko",
}  # fmt: skip
K = 10


class NoStemAnalyzers(AnalyzerSet):
    """Every language gets the identity analyzer: the same pipeline without stemming."""

    def get(self, language: str | None) -> Analyzer:
        return super().get(None)


def description(path: str) -> str | None:
    """The page's first description line as a plain-text query (None if it has none).

    The "More information" line is recognized by its link, whatever its language.
    Double quotes and leading dashes are dropped: the description is text to find, not
    a phrase or a negation in the query grammar.
    """
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("> ") and "<http" not in line:
                text = line[2:].strip().rstrip(".。").replace('"', " ")
                return " ".join(w.lstrip("-") for w in text.split()) or None
    return None


def build(per_language: int, seed: int) -> tuple[str, dict[str, dict[str, str]]]:
    """Copy the sampled pages into one cached folder; {lang: {rel_path: query}}."""
    folder = os.path.join(CACHE, f"multilingual-{per_language}-{seed}")
    queries: dict[str, dict[str, str]] = {}
    fresh = not os.path.exists(os.path.join(folder, ".complete"))
    if fresh:
        shutil.rmtree(folder, ignore_errors=True)
    for lang, tldr_folder in LANGS.items():
        src = tldr_pages(tldr_folder)
        pages = sorted(
            os.path.join(platform, name)
            for platform in os.listdir(src)
            for name in os.listdir(os.path.join(src, platform))
            if name.endswith(".md") and not name.startswith(".")  # gnod skips dotfiles (`..md`)
        )
        sample = random.Random(f"{seed}-{lang}").sample(pages, min(per_language, len(pages)))
        queries[lang] = {}
        for rel in sorted(sample):
            query = description(os.path.join(src, rel))
            if query is None:
                continue
            dest = os.path.join(lang, rel)
            queries[lang][dest] = query
            if fresh:
                os.makedirs(os.path.join(folder, os.path.dirname(dest)), exist_ok=True)
                shutil.copyfile(os.path.join(src, rel), os.path.join(folder, dest))
    if fresh:
        open(os.path.join(folder, ".complete"), "w").close()
    return folder, queries


def mrr(queries: dict[str, dict[str, str]], search: Callable[[str], list[str]]) -> dict[str, float]:
    """MRR@K per language; `search` returns [] for a query the grammar rejects."""
    out = {}
    for lang, items in queries.items():
        total = 0.0
        for relevant, query in items.items():
            ranked = search(query)[:K]
            total += 1 / (ranked.index(relevant) + 1) if relevant in ranked else 0.0
        out[lang] = total / len(items) if items else 0.0
    return out


def stemmed(folder: str, queries: dict[str, dict[str, str]]) -> dict[str, float]:
    with Daemon() as d:
        add = {"name": "ml", "path": folder, "index": True}
        r = d.call("collection.add", add)["collections"][0]
        emit(docs=r["added"], index_seconds=r["seconds"])
        client = d.client()
        try:

            def search(query: str) -> list[str]:
                try:
                    res = client.call("search", {"query": query, "limit": K, "snippets": False})
                except DaemonError as e:
                    if e.code != wire.INVALID_QUERY:
                        raise
                    return []
                return [h["path"] for h in res["hits"]]

            return mrr(queries, search)
        finally:
            client.close()


def unstemmed(folder: str, queries: dict[str, dict[str, str]]) -> dict[str, float]:
    tmp = tempfile.mkdtemp(prefix="gnob-nostem-", dir="/tmp")
    conn = connect(os.path.join(tmp, "index.sqlite"))
    try:
        migrate(conn)
        analyzers = NoStemAnalyzers()
        index = LexicalIndex(tmp, deriver(analyzers))
        index.open()
        index_collection(conn, analyzers, CollectionConfig(name="ml", path=folder), lex=index)
        index.reconcile(conn, False)
        langs = language_counts(conn)

        def search(query: str) -> list[str]:
            try:
                rows = lexical.search(index, conn, analyzers, query, langs, K).rows
            except QuerySyntaxError:
                return []
            docs = docs_by_ids(conn, [r.doc_id for r in rows])
            return [docs[r.doc_id].rel_path for r in rows]

        return mrr(queries, search)
    finally:
        conn.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-language", type=int, default=200, help="pages sampled per language")
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    folder, queries = build(args.per_language, args.seed)
    emit(languages=len(queries), queries=sum(map(len, queries.values())))
    on = stemmed(folder, queries)
    off = unstemmed(folder, queries)
    for lang in queries:
        emit(**{f"mrr@10_{lang}": on[lang], f"mrr@10_{lang}_nostem": off[lang]})
    emit(**{"mrr@10_mean": sum(on.values()) / len(on), "mrr@10_mean_nostem": sum(off.values()) / len(off)})


if __name__ == "__main__":
    main()
