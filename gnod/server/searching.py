"""A `search` answered from a read connection and the lexical index: its hits with
snippets, as the wire gives them. The daemon's reader thread and the search process
(gnod.server.search_process) both answer with this, so both give the same result."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from functools import partial

import apsw
import msgspec

from gnod import wire
from gnod.ingest.lexical_text import indexed_body
from gnod.ingest.symbols import Symbol, display
from gnod.lines import expand, file_line, stored_line
from gnod.protocol import SearchHit, SearchParams, SearchResult, Snippet
from gnod.search import defining, filters, lexical, macros, spelling
from gnod.search.constants import (
    PIPELINE,
    SEARCH_MACRO_FILES,
    SNIPPET_FIRST_LOOK_BYTES,
    SNIPPET_MAX_CHARS,
    SNIPPET_NAME_LOOK,
    SNIPPET_PIECE_BYTES,
    SYMBOL_LINES,
    SYMBOL_MACRO_PREFIX_WORDS,
    SYMBOL_PASSAGES,
    TABLE_HEADER_FILE_MAX_BYTES,
    TABLE_HEADER_LOOK_BACK_LINES,
)
from gnod.search.grammar import QuerySyntaxError, framed
from gnod.search.snippet import Snippet as Passage
from gnod.search.snippet import TermBits, best_snippets, match_spans
from gnod.server.hits import failing_notes, identity
from gnod.store import documents as docstore
from gnod.store import symbols as symstore
from gnod.store.lexical_index import LexicalIndex
from gnod.text import tables
from gnod.text.analyzer import Analyzer, AnalyzerSet


def answer(
    index: LexicalIndex,
    conn: apsw.Connection,
    analyzers: AnalyzerSet,
    p: SearchParams,
    counts: Mapping[str | None, int],
    where: filters.Filter,
) -> SearchResult:
    """The result of `p` (without freshness, which the daemon adds); raises
    grammar.QuerySyntaxError for a malformed query."""
    t0 = time.perf_counter()
    object_like = partial(macros.object_like, index, conn, analyzers, macros.languages(counts))
    if p.symbol:
        return definitions(conn, p, where, t0, object_like)
    prefer = partial(object_like, files=SEARCH_MACRO_FILES)
    res = lexical.search(index, conn, analyzers, p.query, counts, p.limit, where, p.min_score, object_like=prefer)
    docs = docstore.docs_with_contents(conn, [r.doc_id for r in res.rows], read=p.snippets)
    rows = [r for r in res.rows if r.doc_id in docs]  # a document deleted between the two statements is left out
    passages: dict[int, list[Passage]] = {}
    bits: dict[str | None, TermBits] = {}  # the query's terms in each language of its documents
    for r in rows:
        doc, stored, body_line = docs[r.doc_id]
        if p.per_doc == 1 and r.doc_id in res.defined:
            continue  # its one passage is its definition (_definition_first), not looked for
        if stored is not None:
            if doc.language not in bits:
                bits[doc.language] = TermBits(
                    analyzers.get(doc.language),
                    res.stems,
                    res.groups,
                    res.phrases,
                    res.verbatim,
                    _quiet(res),
                )
            read = partial(_passages, doc.rel_path, stored, body_line, doc.title, bits[doc.language])
            passages[r.doc_id] = _naming(read, p.per_doc, res.name)
    # A document written since the lexical index took it (a long run commits to it every
    # few seconds) was matched by its text before: without a passage that matches now, it
    # is no hit (its new text is found once the index has it).
    pending = docstore.lexically_pending(conn, list(passages)) if res.stems else set()
    stale = {i for i in pending if not any(s.matches for s in passages[i])}
    rows = [r for r in rows if r.doc_id not in stale]
    shown = [docs[doc_id][0] for doc_id, found in passages.items() if found and doc_id not in stale]
    defined = symstore.of_documents(conn, [(doc.rel_path, doc.mirror_hash) for doc in shown])
    hits = []
    for r in rows:
        doc, stored, _body = docs[r.doc_id]
        symbols = defined.get(doc.mirror_hash, [])
        own, named = res.defined.get(r.doc_id), res.at_line.get(r.doc_id)
        ident = identity(doc)
        # A passage is named by its section where the text has headings (section_markup):
        # a PDF's page, a slide, a note's or a page's heading.
        sectioned = docstore.section_markup(doc.rel_path) is not None and r.doc_id in passages
        # A passage of a table's rows: the table's header row is said with it (the text read
        # whole for it, in a file of at most TABLE_HEADER_FILE_MAX_BYTES).
        tabled = doc.size <= TABLE_HEADER_FILE_MAX_BYTES and any(
            tables.is_row(s.text.partition("\n")[0]) for s in passages.get(r.doc_id, [])
        )
        wanted = (own, named) != (None, None) or sectioned or tabled
        text = docstore.unpack(stored) if stored is not None and wanted else None
        lines = text.split("\n") if tabled and text is not None else []
        found = [
            Snippet(
                line=file_line(doc.line_shifts, s.line),
                text=s.text,
                matches=s.matches,
                # Its first line holds the match.
                symbol=symstore.label(symbols, s.line, s.line)
                or (docstore.section_label(doc, text, s.line) if sectioned and text else None),
                offset=s.offset,
                table_header=_table_header(lines, s.line),
            )
            for s in passages.get(r.doc_id, [])
        ]
        if own is not None and text is not None:
            found = _definition_first(text.split("\n"), own, doc.line_shifts, found, p.per_doc)
        if named is not None and text is not None:
            at = _named_line(text, named, doc.line_shifts, analyzers.get(doc.language), res, symbols)
            if at is not None:
                found = [at, *(f for f in found if not f.line <= named <= f.line + f.text.count("\n"))][: p.per_doc]
        if p.context is not None and found and stored is not None:
            lines = expand(text if text is not None else docstore.unpack(stored), doc.line_shifts).split("\n")
            found = [_in_context(s, lines, p.context, analyzers.get(doc.language), res) for s in found]
        if res.name is not None:
            found = [_parts_in_name(s, res.name) for s in found]
        hits.append(
            SearchHit(
                **ident,
                score=r.score,
                bm25=r.bm25,
                language=doc.language,
                snippet=found[0] if found else None,
                snippets=found if p.per_doc > 1 else [],
            )
        )
    return SearchResult(
        query=p.query,
        hits=hits,
        total_candidates=res.total_candidates,
        terms=res.terms,
        dropped_stopwords=res.dropped_stopwords,
        languages=res.languages,
        took_ms=round((time.perf_counter() - t0) * 1000, 3),
        notes=res.notes + failing_notes(docstore.failing(conn, [h.docid for h in hits])),
        instead=res.instead,
    )


def _table_header(lines: list[str], line: int) -> str | None:
    """The header row of the table whose rows a passage starting at stored `line` shows,
    where the passage does not show it (text.tables); None outside a table."""
    found = tables.header_of(lines, line - 1, TABLE_HEADER_LOOK_BACK_LINES) if lines else None
    return found[1] if found is not None and found[0] < line - 1 else None


def _passages(rel_path: str, stored: str | bytes, body_line: int, title: str, bits: TermBits, n: int) -> list[Passage]:
    """best_snippets of a stored text's body; where no line of it matches, of the whole
    text: a note found by its frontmatter alone (a property, its title) shows that line.
    Passages holding only words of its title, shown beside them, give way to the lines
    holding the query's other words (`Anna marathon`: "Runs marathons", not "# Anna
    Schmidt"), where some do."""

    def read(start: int, terms: TermBits, matched: bool = True) -> list[Passage]:
        pieces = (indexed_body(rel_path, piece) for piece in docstore.pieces(stored, SNIPPET_PIECE_BYTES))
        return best_snippets(pieces, start, terms, n, partial(_head, rel_path, stored), matched)

    found = read(body_line, bits)
    if body_line > 1 and not any(s.matches for s in found):
        return read(1, bits)
    named = bits.held(title)
    if named and any(s.matches for s in found) and all(not bits.held(s.text) & ~named for s in found):
        rest = bits.without(named)
        other = read(body_line, rest, matched=False) if rest is not None else []  # it may hold none of them
        if any(s.matches for s in other):
            return [s._replace(matches=match_spans(s.text, bits.analyzer, bits.marked, bits.verbatim)) for s in other]
    return found


def _quiet(res: lexical.Result) -> frozenset[str]:
    """The function words the query left out, which mark nothing (TermBits' `quiet`)."""
    return frozenset(res.dropped_stopwords)


def _marked(res: lexical.Result) -> frozenset[str]:
    """The terms a passage marks: the query's, but the function words it left out."""
    return res.stems - _quiet(res)


def _head(rel_path: str, stored: str | bytes, least: int) -> str | None:
    """documents.head of a stored text, read as its words are indexed."""
    found = docstore.head(stored, SNIPPET_FIRST_LOOK_BYTES, least)
    return indexed_body(rel_path, found) if found is not None else None


_QUOTES = "\"'`"  # around a name pasted from prose or Markdown


def _in_context(s: Snippet, lines: list[str], n: int, analyzer: Analyzer, res: lexical.Result) -> Snippet:
    """`s` as the `n` lines of the file (`lines`) before its first line, that line and
    the `n` after it, its matches found again (grep's -C); a passage cut from a long line
    stays as it is."""
    if s.offset or not 0 < s.line <= len(lines):
        return s
    first = max(s.line - n, 1)
    text = "\n".join(lines[first - 1 : s.line + n])
    matches = match_spans(text, analyzer, _marked(res), res.verbatim)
    return msgspec.structs.replace(s, line=first, text=text, matches=matches, before=s.line - first)


def _parts_in_name(s: Snippet, name: str) -> Snippet:
    """`s` with the words of the query's one name of code (`rcu`, `lock` of
    `rcu_read_lock`) marked only inside it, where the passage holds it: the next line's
    `CONFIG_PREEMPT_RCU` was marked too, and --vimgrep listed it as a place of the name.
    Other words the query has stay marked."""
    spans = [m.span() for m in re.finditer(re.escape(name), s.text, re.IGNORECASE)] if s.matches else []
    if not spans:
        return s
    lowered = name.lower()
    kept = [
        m
        for m in s.matches
        if any(a <= m[0] and m[1] <= b for a, b in spans) or s.text[m[0] : m[1]].lower() not in lowered
    ]
    return s if len(kept) == len(s.matches) else msgspec.structs.replace(s, matches=kept)


def _naming(read: Callable[[int], list[Passage]], n: int, name: str | None) -> list[Passage]:
    """The `n` passages `read(n)` gives; for a search for one name of code
    (`spin_lock_irqsave`), those holding it, where some do: the others hold only its
    words (`spin_unlock_irqrestore(&key->lock…`), which `--per-doc 10` listed beside
    them. Where none does, up to SNIPPET_NAME_LOOK are read for one (`TotalCharges`: the
    best line was `df['total_charges']`, and `--per-doc 3` showed two others holding it)."""
    passages = read(n)
    if name is None:
        return passages
    lowered = name.lower()
    holding = [s for s in passages if lowered in s.text.lower()]
    if not holding and n < SNIPPET_NAME_LOOK:
        holding = [s for s in read(SNIPPET_NAME_LOOK) if lowered in s.text.lower()][:n]
    return holding or passages


def definitions(
    conn: apsw.Connection,
    p: SearchParams,
    where: filters.Filter,
    t0: float,
    object_like: defining.ObjectLike,
) -> SearchResult:
    """`search --symbol`: where the name in `p.query` is defined, a hit per document and a
    passage per definition (its first lines; SYMBOL_PASSAGES, or `per_doc` if more).
    `Parser.parse` names a method of a class, `settings.load` (or `settings::load`) a
    name at the top of a module (defining.within); `name*` every name starting so; a plain
    name that no C header defines otherwise, C's `#define NAME value` too (`object_like`:
    search.macros); `CONFIG_NAME`, Kconfig's `config NAME` too (search.defining, in its
    order). A name pasted as called, `kmalloc(` or `kmalloc()`, as declared, `struct
    file_operations` (its definitions of that kind first), or quoted, `"kmalloc"`, is
    the name."""
    query, kinds = defining.declared(p.query.strip().strip(_QUOTES).strip())
    query = framed(query.removesuffix("()").removesuffix("(")).replace("::", ".")  # Rust's and C++'s paths too
    if not query or any(c.isspace() for c in query) or query.strip("*.") != query.rstrip("*"):
        raise QuerySyntaxError(
            "--symbol takes one name: foo_probe, Parser.parse, settings.load, or a prefix such as kmalloc*"
        )
    prefix = query.endswith("*")
    container, _, name = query.rstrip("*").rpartition(".")
    found, names = defining.definitions(
        conn, name, where, object_like, prefix, container, wanted=p.limit, kinds=kinds, macro_beside_sources=True
    )
    notes = []
    if not found and container:  # a qualifier guessed wrong (`os.path.join`: posixpath.py's)
        found, names = defining.definitions(
            conn, name, where, object_like, prefix, wanted=p.limit, kinds=kinds, macro_beside_sources=True
        )
        if found:
            notes.append(f"nothing defines {wire.said(query)} as named: showing where {wire.said(name)} is defined")
    meant = None if found or prefix else _meant(conn, name)
    if meant is not None:
        found, names = defining.definitions(
            conn, meant, where, object_like, False, container, wanted=p.limit, kinds=kinds
        )
        if found:
            notes.append(f"nothing defines {wire.said(name)}: showing {meant!r}")
        else:
            meant = None
    made = None if found or prefix or container else _macro_made(conn, name, where, p.limit)
    if made is not None:
        found, names, macro = made
        notes.append(
            f"nothing defines {wire.said(name)}: showing {found[0].symbol.name!r}, "
            f"which {macro} defines under names it makes"
        )
    by_doc: dict[int, list[symstore.Defined]] = {}
    for f in found:
        by_doc.setdefault(f.doc_id, []).append(f)
    ids = list(by_doc)[: p.limit]
    docs = docstore.docs_with_contents(conn, ids, read=p.snippets)
    hits = []
    for doc_id in ids:
        if doc_id not in docs:
            continue
        doc, stored, _body = docs[doc_id]
        lines = docstore.unpack(stored).split("\n") if stored is not None else []
        shown = by_doc[doc_id][: max(p.per_doc, SYMBOL_PASSAGES)]
        if len(by_doc[doc_id]) > len(shown):  # a test file's thirty stand-ins of one method
            notes.append(
                f"{doc.collection}/{doc.rel_path} has {len(by_doc[doc_id]):,} definitions of it: "
                f"the first {len(shown)} are shown"
            )
        snippets = [_definition(lines, f.symbol, doc.line_shifts) for f in shown] if lines else []
        score = 1.0 if by_doc[doc_id][0].symbol.name in names else 0.5
        hits.append(
            SearchHit(
                **identity(doc),
                score=score,
                bm25=0.0,
                language=doc.language,
                snippet=snippets[0] if snippets else None,
                snippets=snippets if p.per_doc > 1 or len(snippets) > 1 else [],
            )
        )
    return SearchResult(
        query=p.query,
        hits=[h for h in hits if h.score >= p.min_score],
        total_candidates=len(by_doc),
        terms=[name],
        dropped_stopwords=[],
        languages=[],
        took_ms=round((time.perf_counter() - t0) * 1000, 3),
        notes=_undefined(conn, where, query) if not found else notes,
        instead=meant,
    )


def _undefined(conn: apsw.Connection, where: filters.Filter, query: str) -> list[str]:
    """What a search for a definition that found none says: that no document passes the
    filters, or that none defines the name, which is not to say none holds it (an agent
    took `No documents match 'DEFAULT_RETRY'` for the name being absent)."""
    if _none_pass(conn, where):
        return [filters.none_pass(where)]
    return [f"nothing defines {wire.said(query)}{UNDEFINED}"]


# How the note of a search for a definition that found none ends (_undefined): while
# source files are still being parsed, the note saying so stands instead (retrieval).
UNDEFINED = " in the source files read: a search without `symbol` finds it as text"


def _meant(conn: apsw.Connection, name: str) -> str | None:
    """The name one edit from `name` (a name typed wrong: `mutex_lokc`) that the most
    contents define, its digits as typed (`handler_399` is no `handler_398`), in capitals
    where it was typed so (`Consloe`: the class Console, before its console() methods);
    None where none is."""
    edits = spelling.name_edits(name.lower(), PIPELINE.lexical.spelling_max_chars)
    meant = spelling.most_defined(symstore.defined_names(conn, edits))
    return None if meant is None else spelling.respelled(name, [(name.lower(), meant)])


# A name's leading underscores, or its first word and the underscores after it (`__`,
# `x64_`, `sys_`).
_FIRST_WORD = re.compile(r"_+|[A-Za-z0-9]+_+")


def _macro_made(
    conn: apsw.Connection, name: str, where: filters.Filter, limit: int
) -> tuple[list[symstore.Defined], set[str], str] | None:
    """A name nothing defines that a C macro in capitals made from its argument, as
    kernels name system calls (`SYSCALL_DEFINE4(openat, …)` is linked as
    `__x64_sys_openat`, `__se_sys_openat`, `__do_sys_openat`, which stack traces and
    profilers print; `BPF_CALL_0(bpf_get_retval)` as `____bpf_get_retval`): the
    definitions such a macro makes of the name its first words leave (up to
    SYMBOL_MACRO_PREFIX_WORDS of them), the shortest last, with that name and the
    macro; None where none is."""
    rest = name
    for _ in range(SYMBOL_MACRO_PREFIX_WORDS):
        if not (m := _FIRST_WORD.match(rest)) or m.end() == len(rest):
            break
        rest = rest[m.end() :]
        found, names = defining.definitions(conn, rest, where, None, wanted=limit)
        found = [f for f in found if defining.in_c(f.rel_path)]
        if not found:
            continue
        call = re.compile(rf"\b([A-Z][A-Z0-9_]*)\(\s*{re.escape(rest)}\b")
        docs = docstore.docs_with_contents(conn, list({f.doc_id for f in found}))
        texts = {i: docstore.unpack(stored).split("\n") for i, (_, stored, _) in docs.items() if stored is not None}
        made = [
            (f, at)
            for f in found
            if f.symbol.start_line <= len(lines := texts.get(f.doc_id, []))
            and (at := call.search(lines[f.symbol.start_line - 1]))
        ]
        if made:
            return [f for f, _ in made], names, made[0][1][1]
    return None


def _none_pass(conn: apsw.Connection, where: filters.Filter) -> bool:
    """Whether filters are given and no document passes them."""
    return filters.active(where) and not docstore.any_passing(conn, *filters.where(filters.resolve(where)))


def _definition_first(
    lines: list[str], s: Symbol, line_shifts: str, found: list[Snippet], per_doc: int
) -> list[Snippet]:
    """A search for one name of code: the passage where a hit defines it comes first (a
    caller's line matched as well), then the others that do not overlap it."""
    first = _definition(lines, s, line_shifts)
    end = first.line + first.text.count("\n")
    rest = [f for f in found if f.line > end or f.line + f.text.count("\n") < first.line]
    return [first, *rest][:per_doc]


def _named_line(
    text: str, line: int, line_shifts: str, analyzer: Analyzer, res: lexical.Result, symbols: list[Symbol]
) -> Snippet | None:
    """The file's `line` (of the stored `text`), as a query naming it (`fs/ext4/inode.c:1234`)
    shows it first at that file: its words matched marked, the definition it is in named;
    None past the file's end."""
    lines = expand(text, line_shifts).split("\n")
    if not 1 <= line <= len(lines):
        return None
    shown = lines[line - 1][:SNIPPET_MAX_CHARS]
    at = stored_line(line_shifts, line)
    return Snippet(
        line=line,
        text=shown,
        matches=match_spans(shown, analyzer, _marked(res), res.verbatim),
        symbol=symstore.label(symbols, at, at),
    )


def _definition(lines: list[str], s: Symbol, line_shifts: str) -> Snippet:
    """A definition's first lines (to its opening line's end for a one-liner), the name
    marked, at the file's line."""
    last = min(s.end_line, s.start_line + SYMBOL_LINES - 1)
    text = "\n".join(lines[s.start_line - 1 : last])
    at = re.search(rf"(?<![\w$]){re.escape(s.name)}(?![\w$])", text)
    matches = [[at.start(), at.end()]] if at else []
    return Snippet(
        line=file_line(line_shifts, s.start_line),
        text=text,
        matches=matches,
        symbol=display(s.name, s.kind, s.container),
    )
