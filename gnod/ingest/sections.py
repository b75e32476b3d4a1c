"""The stemmed body of a document (its lexical text), stemmed per block when the document mixes languages.

Most documents are in one language: their body is stemmed with that language's
stemmer, after a cheap check (`may_mix_languages`: one set intersection over the
tokens) that they do not seem to hold another.  When the check fires, the body is cut
into blocks at blank lines (never inside fenced code) and each block is judged against
the language of the text before it (`detect_block_language`).  Blocks without a clear
language of their own follow their neighbours: a heading, and any such blocks after
it, take the language of the first block after them that has one (a heading opens its
section); the others keep the language of the block before them (code follows the
prose that introduces it).  Tokens never span a blank line, so stemming block by block
keeps every token of the body, in order.

The document's language is then the one most of its text is in.  A collection's
language hint is authoritative: with one, nothing of this runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from gnod.text.analyzer import AnalyzerSet, tokenize
from gnod.text.fences import fenced_spans, in_spans
from gnod.text.language import detect_block_language, may_mix_languages

_BLANK_RE = re.compile(r"\n\n+")  # canonical text: blank lines are empty
_MIN_BLOCK_CHARS = 40  # shorter blocks cannot have enough words for a verdict


class StemmedBody(NamedTuple):
    language: str | None  # the document's language: the one most of its text is in
    text: str  # space-separated stems, for the lexical index
    words: str  # space-separated exact forms (its tokens unstemmed), for the lexical index
    others: tuple[str, ...]  # other languages some of its blocks were stemmed in


def stem_body(
    body: str,
    language: str | None,
    analyzers: AnalyzerSet,
    per_block: bool = True,
    deadline: Callable[[str], None] | None = None,
) -> StemmedBody:
    """Stem `body`, detected (as a whole) to be in `language`; with `per_block` (no
    collection hint), blocks in other languages get their own stemmers. `deadline(stage)`
    is called between blocks and raises when the document has taken too long."""
    if not per_block:
        return StemmedBody(language, *analyzers.get(language).stems_and_words(body), ())
    tokens = tokenize(body)
    words = " ".join(tokens)
    sections = None
    if may_mix_languages(body, tokens, language):
        sections = language_sections(body, language, deadline)
    if sections is None:
        return StemmedBody(language, " ".join(analyzers.get(language).stems(tokens)), words, ())
    sizes: dict[str | None, int] = {language: 0}
    for start, end, lang in sections:
        sizes[lang] = sizes.get(lang, 0) + end - start
    main = max(sizes, key=lambda lang: (sizes[lang], lang == language))
    text = " ".join(stems for stems in (analyzers.get(lang).index_text(body[s:e]) for s, e, lang in sections) if stems)
    others = tuple(sorted({lang for _, _, lang in sections if lang and lang != main}))
    return StemmedBody(main, text, words, others)


def language_sections(
    body: str, main: str | None, deadline: Callable[[str], None] | None = None
) -> list[tuple[int, int, str | None]] | None:
    """[(start, end, language)] runs of blocks covering `body`, or None when every
    block is in one language (then `main`, the whole body's, stays in charge)."""
    fences = fenced_spans(body)
    blocks: list[tuple[int, int]] = []
    start = 0
    for m in _BLANK_RE.finditer(body):
        if fences and in_spans(fences, m.start()):
            continue
        blocks.append((start, m.end()))
        start = m.end()
    if start < len(body):
        blocks.append((start, len(body)))
    if len(blocks) < 2:
        return None

    langs: list[str | None] = []
    pending: list[int] = []  # blocks waiting for the next verdict (a heading and its tail)
    last = main
    for s, e in blocks:
        if deadline is not None:
            deadline("block language detection")
        verdict = detect_block_language(body[s:e], last) if e - s >= _MIN_BLOCK_CHARS else None
        if verdict is None:
            if pending or body.startswith("#", s):
                pending.append(len(langs))
                langs.append(None)
                continue
            verdict = last
        for i in pending:
            langs[i] = verdict
        pending.clear()
        langs.append(verdict)
        last = verdict
    for i in pending:
        langs[i] = last
    if len(set(langs)) < 2:
        return None

    sections: list[tuple[int, int, str | None]] = []
    for (s, e), lang in zip(blocks, langs):
        if sections and sections[-1][2] == lang:
            sections[-1] = (sections[-1][0], e, lang)
        else:
            sections.append((s, e, lang))
    return sections
