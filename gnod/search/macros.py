"""C's object-like macros (`#define GFP_KERNEL (...)`) for `search --symbol`, found
through the lexical index instead of the stored definitions: those leave them out, as a
generated register map defines thousands. The files holding the words `define NAME`
as a phrase are few; their lines are read for the definition itself."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import apsw
from tantivy import Occur, Query

from gnod.config import SOURCE_LANGUAGE
from gnod.ingest.symbols import DEFINE, GRAMMARS, Symbol
from gnod.search import filters, lexical
from gnod.search.constants import SYMBOL_MACRO_FILES
from gnod.search.defining import C_GRAMMARS
from gnod.store import documents as docstore
from gnod.store.lexical_index import ID, PATH_PARTS, SCHEMA, LexicalIndex
from gnod.store.symbols import Defined
from gnod.text.analyzer import AnalyzerSet, tokenize

_NAME = re.compile(r"[A-Za-z_]\w*", re.ASCII)  # a C name: matched in the text's UTF-8 bytes
_DIRECTIVE = re.compile(rb"[ \t]*#[ \t]*")  # what stands before `define` on its line
_C_EXTENSIONS = sorted(ext for ext, grammar in GRAMMARS.items() if grammar in C_GRAMMARS)


def languages(counts: Mapping[str | None, int]) -> list[str | None]:
    """What `define NAME` is stemmed in: the language program source is indexed in, and
    the index's main one, which a collection's source may have taken instead
    (ingest.pipeline.settle_languages); each is a phrase the engine reads."""
    main = max(counts, key=lambda lang: counts[lang], default=SOURCE_LANGUAGE)
    return list(dict.fromkeys([SOURCE_LANGUAGE, main]))


def object_like(
    index: LexicalIndex,
    conn: apsw.Connection,
    analyzers: AnalyzerSet,
    languages: Sequence[str | None],
    name: str,
    where: filters.Filter,
    files: int = SYMBOL_MACRO_FILES,
) -> list[Defined]:
    """Where C or C++ files passing `where` define `name` (any case) as an object-like
    macro: the files whose words hold `define NAME` (stemmed in `languages`, the index's),
    at most `files` of them, each line `#define NAME` not followed by `(`
    (a macro that takes arguments is a stored definition already)."""
    if _NAME.fullmatch(name) is None:
        return []
    searcher = index.searcher()
    form = ("define", *tokenize(name))
    phrase = lexical.exact_phrase(form, lambda f: analyzers.stem_sequences(f, languages))
    c_file = Query.boolean_query([(Occur.Should, Query.term_query(SCHEMA, PATH_PARTS, e)) for e in _C_EXTENSIONS])
    parts = [*phrase, (Occur.Must, c_file)]
    condition = lexical.filter_query(conn, where, searcher)
    if condition is not None:
        parts.append((Occur.Must, condition))
    hits = searcher.search(Query.boolean_query(parts), files, count=False).hits
    ids = [int(i) for i in searcher.fast_field_values(ID, [addr for _, addr in hits]) if i is not None]
    return [
        Defined(doc_id, doc.rel_path, symbol)
        for doc_id, (doc, stored, _) in docstore.docs_with_contents(conn, ids).items()
        for symbol in defines(docstore.unpack_utf8(stored) if stored is not None else b"", name)
    ]


def defines(text: bytes, name: str) -> list[Symbol]:
    """Each line `#define NAME` of a C file's stored text (UTF-8) not followed by `(`,
    `name` in any case, as the definition it is."""
    # `define` first, a literal the regex engine finds fast; then what stands before it.
    defined = re.compile(rb"define[ \t]+((?i:" + re.escape(name.encode()) + rb"))(?![\w(])")
    found = []
    for m in defined.finditer(text):
        line_start = text.rfind(b"\n", 0, m.start()) + 1
        if _DIRECTIVE.fullmatch(text, line_start, m.start()) is None:
            continue
        start = text.count(b"\n", 0, line_start) + 1
        found.append(Symbol(m[1].decode(), DEFINE, start, _last_line(text, m.end(), start), None))
    return found


def _last_line(text: bytes, at: int, line: int) -> int:
    """The line where the macro whose line `line` holds `at` ends: its lines continue while
    they end with a backslash."""
    end = text.find(b"\n", at)
    while end > 0 and text[end - 1 : end] == b"\\":
        line += 1
        end = text.find(b"\n", end + 1)
    return line
