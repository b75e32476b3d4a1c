"""Query expansion without the model: the prompts we send and the parser for the replies.

The generator is asked for plain lines, one variant per line::

    lex: <keyword query for BM25>
    vec: <full-sentence rephrasing for vector search>
    hyde: <short passage a matching document might contain>

Lines survive small models better than JSON; a JSON object with the same keys is
accepted too. Replies from small models are messy (thinking blocks, code fences,
chatter, repeats, the query or the prompt's example echoed back), so parsing keeps
only what validates and never raises: a useless reply is an empty Expansion, and
the search simply runs without variants.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from msgspec import Struct

from gnod.search.constants import PIPELINE, Pipeline

# Part of the expansion cache key: bump whenever a prompt or the parser changes.
PROMPT_VERSION = "expand-v1"

PromptLanguage = Literal["en", "de", "multi"]

_PROMPT_EN = """\
You expand search queries for a personal document search engine.
Write search variants for the query below, one per line, using exactly these prefixes:
lex: a short keyword query with synonyms or related terms (2 or 3 lines)
vec: a full-sentence rephrasing of what the user is looking for (2 or 3 lines)
hyde: a short passage of 2 or 3 sentences that a document answering the query could contain (1 line)
Write nothing else: no numbering, no explanations, and do not repeat the query itself.

Example for the query "renew tls certificate":
lex: ssl certificate renewal
lex: certbot renew expiry
vec: how to renew an expiring HTTPS certificate on a web server
hyde: Run certbot renew to refresh certificates that expire soon, then reload the web server so it serves the new files.

Query: {query}
"""

_PROMPT_DE = """\
Du erweiterst Suchanfragen für eine persönliche Dokumentensuche.
Schreibe Suchvarianten für die folgende Anfrage, eine pro Zeile, mit genau diesen Präfixen:
lex: eine kurze Stichwortsuche mit Synonymen oder verwandten Begriffen (2 bis 3 Zeilen)
vec: eine Umformulierung in einem ganzen Satz, was gesucht wird (2 bis 3 Zeilen)
hyde: ein kurzer Absatz aus 2 bis 3 Sätzen, der in einem passenden Dokument stehen könnte (1 Zeile)
Schreibe nichts anderes: keine Nummerierung, keine Erklärungen, und wiederhole die Anfrage nicht.
Schreibe auf Deutsch.

Beispiel für die Anfrage "wohnung kündigen frist":
lex: kündigungsfrist mietvertrag
lex: mietwohnung kündigung mieter
vec: wie lange vorher muss ich als Mieter meine Wohnung kündigen
hyde: Mieter können den Mietvertrag mit einer Frist von drei Monaten schriftlich kündigen; die Kündigung muss dem Vermieter rechtzeitig zugehen.

Anfrage: {query}
"""

_PROMPT_MULTI = """\
You expand search queries for a personal document search engine.
Write search variants for the query below, one per line, using exactly these prefixes:
lex: a short keyword query with synonyms or related terms (2 or 3 lines)
vec: a full-sentence rephrasing of what the user is looking for (2 or 3 lines)
hyde: a short passage of 2 or 3 sentences that a document answering the query could contain (1 line)
Keep the prefixes in English, but write every variant in the language of the query.
Write nothing else: no numbering, no explanations, and do not repeat the query itself.

Query: {query}
"""

PROMPTS: dict[PromptLanguage, str] = {"en": _PROMPT_EN, "de": _PROMPT_DE, "multi": _PROMPT_MULTI}

_EN = frozenset({"en", "eng", "english"})
_DE = frozenset({"de", "deu", "ger", "german", "deutsch"})


def prompt_language(language: str | None) -> PromptLanguage:
    """Which prompt a query language gets: ISO code (any region), ISO 639-2 or Snowball name."""
    if not language:
        return "multi"
    key = language.strip().lower().replace("_", "-").split("-", 1)[0]
    return "en" if key in _EN else "de" if key in _DE else "multi"


def expansion_prompt(query: str, language: str | None) -> str:
    """The full prompt for `query`; its line breaks are flattened so it cannot add prefixed lines."""
    return PROMPTS[prompt_language(language)].replace("{query}", " ".join(query.split()))


class Expansion(Struct, frozen=True, kw_only=True):
    lexical: list[str] = []  # extra BM25 queries
    semantic: list[str] = []  # extra vector queries
    hyde: str | None = None  # hypothetical answer passage (vector)

    @property
    def empty(self) -> bool:
        return not (self.lexical or self.semantic or self.hyde)


_Field = Literal["lexical", "semantic", "hyde"]

_LABELS: dict[str, _Field] = {
    "lex": "lexical",
    "lexical": "lexical",
    "keyword": "lexical",
    "keywords": "lexical",
    "vec": "semantic",
    "vector": "semantic",
    "semantic": "semantic",
    "hyde": "hyde",
    "passage": "hyde",
}
# `lex: …`, optionally after bullets, numbering, quotes markers or markdown emphasis,
# and with a trailing word ("Lexical queries:", "HyDE passage:").
_LINE = re.compile(
    r"^[\s>*_#•·\-–—\d.)]*(lex|lexical|keywords?|vec|vector|semantic|hyde|passage)"
    r"(?:\s+(?:quer(?:y|ies)|variants?|passage))?[\s*_]*[:=：][\s*_]*(.*)$",
    re.IGNORECASE,
)
_JSON_KEYS: dict[str, _Field] = {
    **_LABELS,
    "lexicalqueries": "lexical",
    "lexical_queries": "lexical",
    "vectorqueries": "semantic",
    "vector_queries": "semantic",
    "semanticqueries": "semantic",
    "semantic_queries": "semantic",
}
_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)\s*>", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_WORDS = re.compile(r"\w+")
_QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "„": "“", "‘": "’", "«": "»", "»": "«"}


def _clean(raw: str) -> str:
    """One line of text without emphasis, a trailing comma or quotes wrapping the whole."""
    value = " ".join(raw.split()).strip(" *_").rstrip(",;").strip(" *_")
    while len(value) >= 2 and _QUOTES.get(value[0]) == value[-1]:
        value = value[1:-1].strip()
    return value


def _key(text: str) -> str:
    """Comparison key: case-folded words only, so echoes differing in punctuation match."""
    return " ".join(_WORDS.findall(text.casefold()))


def _strip_thinking(text: str) -> str:
    text = _THINK_BLOCK.sub("\n", text)
    closers = list(_THINK_CLOSE.finditer(text))
    if closers:  # the opener was in the prompt (chat templates): keep what follows
        text = text[closers[-1].end() :]
    opener = _THINK_OPEN.search(text)
    if opener:  # never closed: the reply was cut off while thinking
        text = text[: opener.start()]
    return text


def _labelled(text: str) -> list[tuple[_Field, str]]:
    """(field, value) pairs from `label: value` lines; a HyDE passage may wrap onto more lines."""
    out: list[tuple[_Field, str]] = []
    in_hyde = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_hyde = False
            continue
        m = _LINE.match(line)
        if m:
            field = _LABELS[m.group(1).lower()]
            out.append((field, m.group(2)))
            in_hyde = field == "hyde"
        elif in_hyde and line.strip():
            out[-1] = ("hyde", f"{out[-1][1]}\n{line}")
        else:
            in_hyde = False
    return out


def _from_json(text: str) -> list[tuple[_Field, str]]:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return []
    try:
        obj = json.loads(text[start : end + 1])
    except ValueError:
        return []
    if not isinstance(obj, dict):
        return []
    out: list[tuple[_Field, str]] = []
    for name, value in obj.items():
        field = _JSON_KEYS.get(str(name).lower())
        values = value if isinstance(value, list) else [value]
        if field is not None:
            out += [(field, v) for v in values if isinstance(v, str)]
    return out


# Lines of our own prompts (instructions and examples), so an echoed prompt is not a variant.
_PROMPT_KEYS = frozenset(
    _key(m.group(2)) for p in PROMPTS.values() for line in p.splitlines() if (m := _LINE.match(line))
)


def _collect(pairs: list[tuple[_Field, str]], query: str | None, pipeline: Pipeline) -> Expansion:
    lim = pipeline.expansion
    caps = {"lexical": (lim.max_lexical, lim.max_lexical_chars), "semantic": (lim.max_semantic, lim.max_semantic_chars)}
    banned = set(_PROMPT_KEYS)
    if query:
        banned.add(_key(query))
    kept: dict[_Field, dict[str, str]] = {"lexical": {}, "semantic": {}, "hyde": {}}
    for field, raw in pairs:
        value = _clean(raw)
        key = _key(value)
        if not key or key in banned or _key(raw.split("\n", 1)[0]) in banned or key in kept[field]:
            continue
        if field == "hyde":
            if kept["hyde"]:
                continue
            if len(value) > lim.max_hyde_chars:
                cut = value[: lim.max_hyde_chars + 1]
                value = cut[: cut.rfind(" ")] if " " in cut else cut[:-1]
        else:
            most, max_chars = caps[field]
            if len(value) > max_chars or len(kept[field]) >= most:
                continue
        kept[field][key] = value
    hyde = next(iter(kept["hyde"].values()), None)
    return Expansion(lexical=list(kept["lexical"].values()), semantic=list(kept["semantic"].values()), hyde=hyde)


def given(
    lexical: list[str], semantic: list[str], hyde: str | None, query: str, pipeline: Pipeline = PIPELINE
) -> tuple[Expansion, int]:
    """Variants a client wrote, held to a generator's rules (no duplicates, not the query
    itself, the same caps, so fusion weighs them alike); also how many were left out."""
    pairs: list[tuple[_Field, str]] = [("lexical", q) for q in lexical] + [("semantic", q) for q in semantic]
    if hyde:
        pairs.append(("hyde", hyde))
    exp = _collect(pairs, query, pipeline)
    return exp, len(pairs) - len(exp.lexical) - len(exp.semantic) - (exp.hyde is not None)


def parse_expansion(text: object, query: str | None = None, pipeline: Pipeline = PIPELINE) -> Expansion:
    """Validated variants from a generator reply; an empty Expansion if nothing is usable.

    Drops thinking blocks, fences, chatter, duplicates (case-insensitive), items equal
    to `query` or to a line of our prompts, over-long lex/vec items (HyDE is cut at a
    word instead), and everything past the caps. Never raises.
    """
    if not isinstance(text, str):
        return Expansion()
    try:
        body = _strip_thinking(text)
        pairs = _labelled(body) or _from_json(body)
        return _collect(pairs, query, pipeline)
    except Exception:  # a reply must never break a search
        return Expansion()
