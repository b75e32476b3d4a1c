"""A document's most informative words: the query `similar` sends when there are no vectors.

Each distinct word of the document is weighted by tf·idf — (1 + ln tf) · ln(N / df),
df from the exact-form index — so words frequent in the document and rare in the
index come first. Words no other document holds cannot find anything and are left
out, as are stopwords, numbers and one- or two-letter tokens.
"""

from __future__ import annotations

import math
from collections import Counter

import tantivy

from gnod.search.constants import SIMILAR_MAX_TERMS
from gnod.search.lexical import doc_frequency
from gnod.text.analyzer import exact_text
from gnod.text.stopwords import is_stopword


def informative_terms(
    searcher: tantivy.Searcher, text: str, language: str | None, n: int = SIMILAR_MAX_TERMS
) -> list[str]:
    """Up to `n` words of `text`, the most informative first."""
    total = searcher.num_docs
    df = doc_frequency(searcher)
    langs = [language] if language else ["english"]
    counts = Counter(
        t for t in exact_text(text).split() if len(t) > 2 and not t.isdigit() and not is_stopword(t, langs)
    )
    weighted = []
    for term, tf in counts.items():
        d = df(term)
        if d >= 2:
            weighted.append(((1 + math.log(tf)) * math.log(total / d), term))
    weighted.sort(key=lambda wt: (-wt[0], wt[1]))
    return [term for _, term in weighted[:n]]
