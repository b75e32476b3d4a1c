"""The user-facing lexical query grammar: query text → clauses → the forms the index matches.

The grammar is deliberately narrow; everything it does not name is plain text:

* ``deploy production``    plain terms (OR-ed, ranked by BM25 — never AND-ed, so a
                           natural-language question is not emptied by one absent word)
* ``"exact phrase"``       a quoted phrase or word: as typed (no other form of its
                           words: grammar.verbatim), tokens adjacent and in order
* ``"rotor imb*"``         a phrase whose last word is a prefix (``"rotor imb"*`` too):
                           ``rotor imbalance``…, the words that start so in the
                           documents holding the words before it
* ``-term``, ``-"a b"``    negation (a ``-`` before a letter or a quote: before a digit, a
                           symbol or a word in capitals alone it is text, as in
                           ``return -1``, ``->next`` and ``return -ENODEV``, and before
                           one letter, with digits or not, a command's flag:
                           ``systemctl show -p MemoryMax``, ``make -j4``; ``-usb``
                           leaves USB out); in a query of negations alone, nothing is
                           left out of anything and each is text (``-Wall``, a flag)
* ``real-time``, ``gpt-4`` hyphenated compound: the phrase of its parts OR their
                           concatenation (``"real time"`` OR ``"realtime"``)
* ``snake_case``, ``os.path.join`` and any other word that punctuation splits into
                           several tokens: the adjacent phrase of the parts; a dotted
                           word whose last part is a name of code itself also stands
                           for that name (``kernel.panic_on_oops``: ``panic_on_oops``)
* ``東京タワー``, ``Python3を使う`` a word with CJK: the adjacent phrase of its tokens
                           (CJK runs are character bigrams, see :func:`tokenize`;
                           a query matching nothing so is searched again with them
                           apart: lexical._cjk_apart)
* ``dock*``                a prefix: any word of the index starting with ``dock``
                           (its last token must have at least ``prefix_min_chars``
                           characters; otherwise ``*`` is text)
* ``__schedule+0x2e/0x8b0`` a place a program's output gives: a stack frame's function
  ``mm/slub.c:4312:5``     (its offset off, and a compiler's clone suffix: ``.isra.0``,
                           ``.constprop.0``, ``.cold``) or a file (its line and column off)
* ``mmc_add_ho*``          an identifier being typed: the phrase of its tokens, the last
                           one a prefix (``mmc add host``, ``mmc add hostname``…, the
                           words that start so in the documents holding ``mmc add``);
                           with a last token too short to be one (``mmc_add_h*``) or
                           none (``mmc_add_*``), the phrase of the tokens before it

A clause is a run of non-whitespace characters, or a double-quoted phrase that starts
where a clause may start (optionally after ``-``). A double quote anywhere else, a
``*`` anywhere but at the end of a prefix, and every other punctuation (``: ( ) ^ +``,
``NEAR``, ``AND``/``OR``/``NOT``, emoji, control characters) is ordinary text: it
goes through :func:`tokenize` exactly like document text and never reaches the index
as syntax: the index receives term and phrase queries built from tokens
(gnod.search.lexical), never a query string.

Malformed input raises :class:`QuerySyntaxError` with a message meant for a person.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gnod.search.constants import NUMBER_GROUPED_FROM_DIGITS, PIPELINE
from gnod.text.analyzer import SEPARATOR_TOKEN, TOKEN_RE, AnalyzerSet, identifier_parts, tokenize

MAX_QUERY_CHARS = 32_000


class QuerySyntaxError(ValueError):
    """A query the grammar rejects; ``message`` is meant to be shown to the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class Clause:
    tokens: tuple[str, ...]  # lowercase tokens (analyzer.tokenize) of the clause
    phrase: bool  # True for quoted phrases, compounds and identifiers (tokens adjacent)
    compound: bool  # True for hyphenated compounds (also try the concatenation)
    negated: bool
    raw: str  # the clause as the user typed it (but for a place's `cut`)
    prefix: bool = False  # `dock*`, `mmc_add_ho*`: the last token is a prefix
    expansions: tuple[str, ...] = ()  # the words of the index that last token stands for (expand_prefixes)
    cut: str = ""  # what `raw` lost off its end as typed: a frame's offset, a file's line (_place)

    @property
    def key(self) -> tuple[tuple[str, ...], bool, bool, bool, bool]:
        """Identity for de-duplication: ``Deploy`` and ``deploy`` are the same clause."""
        return (self.tokens, self.phrase, self.compound, self.negated, self.prefix)


@dataclass(frozen=True, slots=True)
class CompiledQuery:
    # Per kept positive clause, its distinct forms: a form of one token is a term, of
    # several a phrase. Clauses are OR-ed, and so are the forms of one clause.
    positives: tuple[tuple[tuple[str, ...], ...], ...]
    negatives: tuple[tuple[str, ...], ...]  # every form of every negated clause: none may match
    positive_stems: frozenset[str]  # every stem of every positive clause (snippets/highlighting)
    terms: tuple[str, ...]  # the positive clauses' raw text, for display/--explain
    dropped_stopwords: tuple[str, ...]
    # The forms of quoted clauses (no other clause's): matched as typed (lexical.match_query).
    verbatim: frozenset[tuple[str, ...]] = frozenset()


# --------------------------------------------------------------------------- parsing

# A word that is a name in code: snake_case or camelCase (a capital after a small letter
# or digit), or a name with an underscore at an end (`__schedule`, `__init`: no word of prose).
NAMED_IN_CODE = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]|[a-z0-9][A-Z]|^_|_$")

# A stack frame as a kernel oops, perf or a sanitizer prints it: the function (after an
# oops' code segment, `RIP: 0010:`), a clone's suffix GCC gave it, its offset and size.
_FRAME = re.compile(
    r"(?:[0-9a-f]{4}:)?([A-Za-z_$][\w$]*)((?:\.(?:isra|constprop|part|cold|lto_priv)(?:\.\d+)?)*"
    r"\+0x[0-9a-f]+(?:/0x[0-9a-f]+)?)",
    re.IGNORECASE,
)
# A file's line (and column) as a compiler, a traceback or a WARNING gives it: a path that
# has a folder or an extension (_FILE_WORD), then `:line`, `:line:column`, maybe the
# message's colon, or the punctuation a sentence puts after it (`kernel BUG at
# mm/slub.c:4312!`).
_FILE_WORD = r"(?:[\w.+-]*/)*[\w+-][\w.+-]*(?:/|\.[A-Za-z]\w*)"
_LINE = re.compile(rf"({_FILE_WORD})(:\d+(?::\d+)?[:!,.;)\]]*)")


def framed(text: str) -> str:
    """The function a pasted stack frame names (`__schedule.isra.0+0x10/0x120 [ext4]` →
    `__schedule`); `text` itself when it is no frame."""
    m = _FRAME.fullmatch(_MODULE.sub("", text))
    return m[1] if m else text


# The module a kernel's frame is in, after it (`ext4_fill_super+0x1a2b/0x1d80 [ext4]`).
_MODULE = re.compile(r"\s+\[\w+\]$")


def _place(word: str) -> tuple[str, str]:
    """`word` without what places it in a program (the name or path, what was cut):
    no text holds `+0x2e3/0x8b0` or `:5413`, while the function or the file is what a
    pasted trace asks for."""
    for pattern in (_FRAME, _LINE):
        if m := pattern.fullmatch(word):
            return m[1], word[m.end(1) :]
    return word, ""


# An English possessive's `'s` (or `’s`) after a word of letters: `Hartmann's comments`
# asks for Hartmann's comments, which most documents write `Hartmann`, not the run
# `hartmann s` that the word's tokens would make a phrase of (a document's `Hartmann's`
# still holds `hartmann`). A contraction's (`it's`, `what's`) leaves a function word.
_POSSESSIVE = re.compile(r"(?<=[^\W\d_]{2})['’][sS]$")
# An elided article or pronoun before a word (French `l'`, `d'`, `qu'`, Italian `dell'`,
# Catalan `l'`): `d'épistémologie` asks for épistémologie, which a document writes with
# another article as often (`l'épistémologie`), where the word's tokens would make a
# phrase with this one. As Lucene's ElisionFilter, a closed list of them.
_ELISION = re.compile(
    r"(?<![^\s\"(])(?:c|d|j|l|m|n|s|t|qu|jusqu|lorsqu|puisqu|quoiqu|presqu|quelqu"
    r"|un|all|dall|dell|nell|sull|coll|pell|gl|agl|dagl|degl|negl|sugl|quell|quest|nessun)['’](?=[^\W\d_])",
    re.I,
)


def _word_clause(word: str, negated: bool, raw: str, prefix_min: int) -> Clause | None:
    """A bare (unquoted) word: a term, a prefix, a hyphenated compound, or an identifier
    phrase (its last token a prefix when the word ends with `*`)."""
    typed = word[:-1]
    if word.endswith("*") and "*" not in typed:
        start = tuple(tokenize(typed))
        if start and not TOKEN_RE.fullmatch(typed[-1]):  # `mmc_*`: no token being typed
            return _word_clause(typed, negated, raw, prefix_min)
        if start and len(start[-1]) >= prefix_min:
            return Clause(start, phrase=len(start) > 1, compound=False, negated=negated, raw=raw, prefix=True)
        if len(start) > 1:  # `mmc_add_h*`: too short a prefix (any word) after whole ones
            return _word_clause(_without_last_token(typed), negated, raw, prefix_min)
    tokens = tuple(tokenize(_POSSESSIVE.sub("", _ELISION.sub("", word))))
    if not tokens:
        return None
    if len(tokens) == 1:
        return Clause(tokens, phrase=False, compound=False, negated=negated, raw=raw)
    # `str.lower()` can change lengths (e.g. "İ"), so judge the separators on the
    # lowered text the token offsets refer to.
    lowered = word.lower()
    matches = list(TOKEN_RE.finditer(lowered))
    separators = [lowered[a.end() : b.start()] for a, b in zip(matches, matches[1:])]
    compound = bool(separators) and all(sep == "-" for sep in separators)
    return Clause(tokens, phrase=True, compound=compound, negated=negated, raw=raw)


def _without_last_token(word: str) -> str:
    """`word` through its last run of letters and digits but one (`mmc_add_h` → `mmc_add`)."""
    runs = list(TOKEN_RE.finditer(word))
    return word[: runs[-2].end()] if len(runs) > 1 else ""


def _excerpt(query: str, pos: int, width: int = 20) -> str:
    start = max(0, pos - width)
    text = query[start : pos + width]
    shown = "".join(ch if ch.isprintable() else " " for ch in text)
    return f"{'…' if start else ''}{shown}{'…' if pos + width < len(query) else ''}"


def _quoted_clause(query: str, start: int, i: int, negated: bool, prefix_min: int) -> tuple[Clause | None, int]:
    """The quoted phrase whose quote is at `i` (its clause from `start`, a `-` before it
    with `negated`), and where the query goes on after it. A `*` at its end, in the
    quotes or after them, makes its last word a prefix; one too short to be one is left
    out (`"rotate API k*"`: rotate API, as a page's box sends a phrase being typed)."""
    close = query.find('"', i + 1)
    if close < 0:
        raise QuerySyntaxError(
            f"unbalanced double quote: the quote at character {i + 1} is never "
            f"closed (near {_excerpt(query, i)!r}); close the phrase with another "
            '" or remove the quote'
        )
    inner = query[i + 1 : close]
    tokens = tuple(tokenize(_ELISION.sub("", inner)))
    i = close + 1
    starred = query.startswith("*", i) and (i + 1 == len(query) or query[i + 1].isspace())
    i += starred
    starred = starred or (len(inner) > 1 and inner[-1] == "*" and bool(TOKEN_RE.fullmatch(inner[-2])))
    prefix = starred and bool(tokens) and len(tokens[-1]) >= prefix_min
    if starred and not prefix and len(tokens) > 1:
        tokens = tokens[:-1]
    if not tokens:
        return None, i
    raw = query[start:i]
    return Clause(
        tokens, phrase=len(tokens) > 1 or not prefix, compound=False, negated=negated, raw=raw, prefix=prefix
    ), i


def parse(
    query: str,
    prefix_min: int = PIPELINE.lexical.prefix_min_chars,
    negation_words_max: int = PIPELINE.lexical.negation_words_max,
) -> list[Clause]:
    """Split a query into clauses (see the module docstring for the grammar).

    Clauses with no searchable token (``!!!``, ``""``, a lone ``-``) are dropped and
    identical clauses are kept once. Raises :class:`QuerySyntaxError` for an empty,
    over-long, unbalanced or wordless query. A query may hold any number
    of clauses: :func:`keep_informative` caps them where document frequencies are known.
    """
    if not isinstance(query, str):
        raise QuerySyntaxError("the query must be text")
    if len(query) > MAX_QUERY_CHARS:
        raise QuerySyntaxError(f"query is too long ({len(query):,} characters; the limit is {MAX_QUERY_CHARS:,})")
    if not query.strip():
        raise QuerySyntaxError("empty query: type at least one word to search for")

    clauses: dict[tuple[Any, ...], Clause] = {}
    n = len(query)
    i = 0
    while i < n:
        if query[i].isspace():
            i += 1
            continue
        start = i
        negated = False
        if _negation(query, i):
            negated = True
            i += 1
        if query[i] == '"':
            clause, i = _quoted_clause(query, start, i, negated, prefix_min)
        else:
            end = i
            while end < n and not query[end].isspace():
                end += 1
            word, cut = _place(query[i:end])
            clause = _word_clause(word, negated, query[start:i] + word, prefix_min)
            if clause is not None and cut:
                clause = replace(clause, cut=cut)
            i = end
        if clause is not None:
            clauses.setdefault(clause.key, clause)

    result = list(clauses.values())
    if not result:
        raise QuerySyntaxError("no searchable words in the query: it contains only punctuation or symbols")
    words = sum(not c.negated for c in result)
    # Nothing to leave out of (a flag's words, `-Wall`), or a passage pasted ("from the -rt tree").
    if not words or words > negation_words_max:
        result = [replace(c, negated=False) for c in result]
    return result


def _negation(query: str, at: int) -> bool:
    """Whether the clause at `at` starts with a `-` that negates it."""
    return query.startswith("-", at) and at + 1 < len(query) and (query[at + 1] == '"' or _negatable(query, at + 1))


def _negatable(query: str, at: int) -> bool:
    """Whether the word at `at`, after a `-`, is negated: one that starts with a letter,
    but not one in capitals alone (`return -ENODEV`, `-DDEBUG`: code's error codes and
    flags), nor one Latin letter, with digits or not (`-p MemoryMax`, `-j4`: a pasted command's
    flag; nobody leaves out the documents holding a letter). Matching ignores case, so
    `-usb` still leaves USB out."""
    if not query[at].isalpha() or _FLAG_RE.match(query, at):
        return False
    word = query[at:].split(None, 1)[0]
    return not (len(word) > 1 and word.isupper())


# One Latin letter, and digits or not: a command's flag (a CJK character is a word: `-库`).
_FLAG_RE = re.compile(r"[A-Za-z]\d*(?![\w-])")


def _quoted_star(raw: str) -> bool:
    """Whether a clause is a quoted phrase with a `*` at its end, in the quotes or after."""
    typed = raw.lstrip("-")
    return typed.startswith('"') and (typed.endswith('"*') or typed.endswith('*"'))


# Other engines' operators: here each is a word (and a stopword, dropped beside others).
_OPERATORS = ("AND", "OR", "NOT")
# Other engines' fields (Obsidian's `tag:` and `file:`, GitHub's `path:` and `extension:`,
# Google's `filetype:`): here `name:value` is words; the filter that does it, by name.
_FIELDS = {
    "tag": "--tag {}",
    "file": "--path '*{}*'",
    "path": "--path '{}*'",
    "ext": "-t {}",
    "extension": "-t {}",
    "filetype": "-t {}",
    "from": "--from {}",
    "after": "--since {}",
    "before": "--until {}",
}
_FIELD_RE = re.compile(r"-?([A-Za-z]+):(?!//)#?([^\s:]+)")


def text_not_syntax(clauses: Sequence[Clause], prefix_min: int = PIPELINE.lexical.prefix_min_chars) -> list[str]:
    """What a query may have meant as syntax that is text here, said once each (a note
    beside the results): other engines' AND/OR/NOT and fields (`tag:#legal`, with the
    filter that does it), and a `*` that ends no prefix
    (`k*alloc`, `*alloc`, a prefix shorter than `prefix_min` letters), and a query of
    negations alone, searched as text."""
    out = []
    unnegated = [c.raw for c in clauses if not c.negated and _negation(c.raw, 0)]
    if unnegated and len(unnegated) == len(clauses):
        out.append(
            f"{', '.join(unnegated)}: searched as text, since the query holds nothing else "
            "(-word leaves a word out of what the other words find)"
        )
    elif unnegated:
        out.append(
            f"{', '.join(unnegated)}: searched as text, a word of the passage (-word leaves documents "
            f"out in a query of at most {PIPELINE.lexical.negation_words_max} other words)"
        )
    operators = [c.raw for c in clauses if c.raw.lstrip("-") in _OPERATORS]
    if operators:
        out.append(
            f"{', '.join(dict.fromkeys(operators))}: a word here, not an operator "
            "(every word is optional and ranked; -word leaves one out)"
        )
    for c in clauses:
        field = _FIELD_RE.fullmatch(c.raw)
        if field and (form := _FIELDS.get(field[1].lower())):
            out.append(f"{c.raw}: words here, not a field; the filter is {form.format(field[2])}")
    begun = [c for c in clauses if _quoted_star(c.raw) and not c.prefix]
    if begun:
        raw, words = begun[0].raw, begun[0].tokens
        out.append(
            f'{raw}: `*` ends a prefix of {prefix_min} letters or more; searched "{" ".join(words)}" alone'
            if len(tokenize(raw.lstrip("-").strip('"*'))) > len(words)
            else f'{raw}: `*` only ends a prefix of {prefix_min} letters or more ("rotor imb*"); here it is text'
        )
    stars = [c for c in clauses if "*" in c.raw and not c.prefix and not c.raw.lstrip("-").startswith('"')]
    if stars:
        raw, typed, tokens = stars[0].raw, stars[0].raw.lstrip("-")[:-1], stars[0].tokens
        runs = list(TOKEN_RE.finditer(typed))
        whole = raw.endswith("*") and "*" not in typed and bool(tokens) and len(runs) >= len(tokens)
        searched = typed[: runs[len(tokens) - 1].end()] if whole else ""  # `mmc_add_h*`: mmc_add
        if whole and not typed[-1].isalnum():  # `spin_lock_*`: no letters after the `_`
            out.append(
                f"{raw}: `*` ends a word's first letters, not a `{typed[-1]}`; searched {searched}, "
                "which finds the names going on from it too"
            )
        elif whole and len(runs) > 1:
            out.append(f"{raw}: `*` ends a prefix of {prefix_min} letters or more; searched {searched} alone")
        else:
            out.append(
                f"{raw}: `*` only ends a prefix of {prefix_min} letters or more (dock*); "
                "elsewhere it is text, and the words around it were searched"
            )
    return out


def keep_informative(
    clauses: Sequence[Clause],
    is_stopword: Callable[[str], bool],
    max_terms: int,
    doc_frequency: Callable[[str], int],
) -> tuple[list[Clause], list[str]]:
    """At most `max_terms` positive and `max_terms` negative clauses, and what was left out
    (as words: no punctuation of the pasted text).

    A pasted paragraph holds more words than a ranking needs: stopwords go first, then
    the clauses found in the most documents (a clause is as rare as its rarest token);
    clauses found in no document match nothing and go before any that match. Kept
    clauses stay in query order.
    """
    positives = [c for c in clauses if not c.negated]
    negatives = [c for c in clauses if c.negated]
    if len(positives) <= max_terms and len(negatives) <= max_terms:
        return list(clauses), []
    words = [c for c in positives if not droppable(c, is_stopword)] or positives
    if len(words) > max_terms:

        def rarity(c: Clause) -> int:
            if c.prefix:  # the word being typed
                return 0
            df = min(doc_frequency(t) for t in c.tokens)
            return df if df else 1 << 62

        keep = set(sorted(range(len(words)), key=lambda i: (rarity(words[i]), i))[:max_terms])
        words = [c for i, c in enumerate(words) if i in keep]
    kept = set(map(id, words + negatives[:max_terms]))
    out = [c for c in clauses if id(c) in kept]
    return out, [("-" if c.negated else "") + " ".join(c.tokens) for c in clauses if id(c) not in kept]


def droppable(c: Clause, is_stopword: Callable[[str], bool]) -> bool:
    """Whether the clause is a stopword alone, left out of a query with other words."""
    return not c.phrase and not c.prefix and len(c.tokens) == 1 and is_stopword(c.tokens[0])


def expand_prefixes(clauses: Sequence[Clause], complete: Callable[[Clause], list[str]]) -> list[Clause]:
    """The clauses with each prefix's words filled in: `complete(clause)` gives the words
    of the index its last token stands for, most frequent first."""
    return [replace(c, expansions=tuple(complete(c))) if c.prefix else c for c in clauses]


# --------------------------------------------------------------------------- compiling


def _clause_forms(clause: Clause, analyzers: AnalyzerSet, languages: Sequence[str | None]) -> list[tuple[str, ...]]:
    """Distinct stemmed token sequences the clause may match, first seen first."""
    if clause.prefix:  # each word it stands for, as if typed (none before expand_prefixes)
        before = clause.tokens[:-1]
        return list(
            dict.fromkeys(
                form for word in clause.expansions for form in analyzers.stem_sequences((*before, word), languages)
            )
        )
    forms = dict.fromkeys(analyzers.stem_sequences(clause.tokens, languages))
    if clause.compound:
        # Re-tokenized rather than joined: the concatenation of CJK parts is bigrams again.
        joined = tokenize(clause.raw.replace("-", ""))
        forms.update(dict.fromkeys(analyzers.stem_sequences(joined, languages)))
    forms.update(dict.fromkeys(_path_forms(clause, analyzers, languages)))
    forms.update(dict.fromkeys(_leaf_forms(clause, analyzers, languages)))
    forms.update(dict.fromkeys(_camel_forms(clause, analyzers, languages)))
    forms.update(dict.fromkeys(_number_forms(clause, analyzers, languages)))
    return list(forms)


_NUMBER_RE = re.compile(r"\d+(?:[.,']\d+)*")


def _number_forms(clause: Clause, analyzers: AnalyzerSet, languages: Sequence[str | None]) -> list[tuple[str, ...]]:
    """A positive number's other ways of being written: its thousands grouped or not, its
    decimals after a point or a comma (`1.234,56` is `1234.56` and `1,234.56`; `14880` is
    `14.880`), as invoices and sheets of another locale, or another program, write it (an
    amount was found only as typed). A separator before three digits may group thousands
    or mark decimals: both are meant. A whole number typed of four digits is not grouped:
    it is a year or a code more often than an amount (1979, 8080)."""
    if clause.negated or clause.prefix or clause.raw.startswith('"') or not _NUMBER_RE.fullmatch(clause.raw):
        return []
    forms: list[tuple[str, ...]] = []
    for whole, decimals in _number_values(clause.raw):
        tail = (decimals,) if decimals else ()
        forms.append((whole, *tail))
        if decimals or len(whole) > NUMBER_GROUPED_FROM_DIGITS or not clause.raw.isdigit():
            forms.append((*[whole[max(0, i - 3) : i] for i in range(len(whole), 0, -3)][::-1], *tail))
    return [f for form in dict.fromkeys(forms) for f in analyzers.stem_sequences(form, languages)]


def _number_values(raw: str) -> list[tuple[str, str]]:
    """The values a number as written may be: (its whole part's digits, its decimals)."""
    parts = re.split(r"([.,'])", raw)
    digits, seps = parts[::2], parts[1::2]
    if not seps:
        return [(raw, "")]
    last = seps[-1]
    thousands = all(len(d) == 3 for d in digits[1:])
    if len(set(seps)) > 1:  # 1.234,56: the last mark is the decimal one
        return [("".join(digits[:-1]), digits[-1])] if all(len(d) == 3 for d in digits[1:-1]) else []
    if len(seps) > 1:  # 1.234.567: thousands
        return [("".join(digits), "")] if thousands else []
    values = [("".join(digits[:-1]), digits[-1])] if last != "'" else []
    return values + ([("".join(digits), "")] if thousands else [])


def _camel_forms(clause: Clause, analyzers: AnalyzerSet, languages: Sequence[str | None]) -> list[tuple[str, ...]]:
    """A positive camelCase word's parts as a phrase (`RedirectHandler`: redirect
    handler), as the stems of a language of such names hold each name's parts
    (ingest.lexical_text): typed whole, a part of a longer name (`HTTPRedirectHandler`)
    matched nothing. Quoted, it is matched as typed."""
    if clause.negated or clause.prefix or clause.raw.startswith('"') or len(clause.tokens) != 1:
        return []
    groups = identifier_parts(clause.raw)
    if len(groups) != 1 or "".join(groups[0]) != clause.tokens[0]:
        return []
    return analyzers.stem_sequences(groups[0], languages)


def _leaf_forms(clause: Clause, analyzers: AnalyzerSet, languages: Sequence[str | None]) -> list[tuple[str, ...]]:
    """A positive dotted word's last part, where it is a name of code itself: a sysctl
    (`kernel.panic_on_oops`), a module's parameter, a method (`self.assertEqual`) is
    documented and defined by that name alone, which the dotted phrase never meets
    there (`os.path.join` stands for no `join`: a word of prose)."""
    if clause.negated or not clause.phrase or clause.prefix or clause.raw.startswith('"'):
        return []
    leaf = clause.raw.rpartition(".")[2]
    words = tokenize(leaf)
    if leaf == clause.raw or not words or not NAMED_IN_CODE.search(leaf):
        return []  # no part, no word in it (`self._`), or a word of prose
    return analyzers.stem_sequences(words, languages)


def _path_forms(clause: Clause, analyzers: AnalyzerSet, languages: Sequence[str | None]) -> list[tuple[str, ...]]:
    """A phrase typed with `/` between its words (`x86/entry`, `linux/module.h`) may name
    a path's folders: its words with the separator between the folders, as an indexed
    path holds them (analyzer.path_text); the words alone still match the text."""
    if not clause.phrase or "/" not in clause.raw:
        return []
    parts = [part for part in map(tokenize, clause.raw.split("/")) if part]
    if len(parts) < 2:
        return []
    forms: dict[tuple[str, ...], None] = {}
    for lang in languages:
        analyzer = analyzers.get(lang)
        stemmed = [analyzer.stems(part) for part in parts]
        forms[tuple(stemmed[0] + [t for part in stemmed[1:] for t in (SEPARATOR_TOKEN, *part)])] = None
    return list(forms)


def compile_query(
    clauses: Sequence[Clause],
    analyzers: AnalyzerSet,
    languages: Sequence[str | None],
    is_stopword: Callable[[str], bool],
) -> CompiledQuery:
    """Turn parsed clauses into the forms the index matches.

    Positive clauses are OR-ed; each clause is the OR of its distinct stemmed forms
    under every language in ``languages`` (an empty list means no stemming).
    Single-word stopwords are dropped while another positive clause remains. A
    document holding any form of any negated clause is excluded.
    """
    langs: list[str | None] = list(dict.fromkeys(languages)) or [None]

    unique: dict[tuple[Any, ...], Clause] = {}
    for c in clauses:
        if c.tokens:
            unique.setdefault(c.key, c)
    positives = [c for c in unique.values() if not c.negated]
    negatives = [c for c in unique.values() if c.negated]
    if not positives:
        if negatives:
            raise QuerySyntaxError("negation needs at least one positive term")
        raise QuerySyntaxError("no searchable words in the query")

    kept = [c for c in positives if not droppable(c, is_stopword)]
    dropped: tuple[str, ...] = ()
    if kept:
        dropped = tuple(dict.fromkeys(c.tokens[0] for c in positives if droppable(c, is_stopword)))
    else:
        kept = positives

    stems: set[str] = set()
    pos_forms: dict[tuple[tuple[str, ...], ...], None] = {}
    quoted: set[tuple[str, ...]] = set()
    unquoted: set[tuple[str, ...]] = set()
    for c in kept:
        forms = tuple(_clause_forms(c, analyzers, langs))
        for form in forms:
            stems.update(form)
        pos_forms.setdefault(forms, None)
        (quoted if verbatim(c) else unquoted).update(forms)
    stems.discard(SEPARATOR_TOKEN)
    neg_forms: dict[tuple[str, ...], None] = {}
    for c in negatives:
        for form in _clause_forms(c, analyzers, langs):
            neg_forms.setdefault(form, None)

    return CompiledQuery(
        positives=tuple(pos_forms),
        negatives=tuple(neg_forms),
        positive_stems=frozenset(stems),
        terms=tuple(c.raw for c in kept),
        dropped_stopwords=dropped,
        verbatim=frozenset(quoted - unquoted),
    )


def verbatim(c: Clause) -> bool:
    """Whether a clause is to be matched as typed, its words neither stemmed nor
    inflected: a quoted phrase or word (`"add_tasks"` is not add_task, `"WebSocketDisconnect"`
    not WebSocketDisconnected), as search engines read quotes; not one begun (`"a b*"`)
    nor a path's folders (`"x86/entry"`), which are matched as ever."""
    return c.raw.startswith('"') and not c.prefix and "/" not in c.raw
