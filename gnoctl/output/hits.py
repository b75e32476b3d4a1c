"""Hits of `search`, `vsearch`, `similar` and `query` in every format: human text,
JSON, JSON Lines, file lists, CSV, Markdown, XML and vimgrep lines; and `--explain`."""

from __future__ import annotations

from gnoctl import fastjson
from gnoctl.output.common import (
    clean,
    csv_text,
    file_list,
    json_lines,
    marked,
    md,
    md_code,
    md_inline,
    num,
    one_line,
    painter,
    xml_attrs,
    xml_escape,
)

TYPE_CHECKING = False  # typing itself imports re: too slow for the hot path (mypy reads it as True)
if TYPE_CHECKING:
    from gnoctl.output.links import Link


def _query_words(query: str) -> list[str]:
    """The positive words of a query, lower-cased (what a vimgrep column points at)."""
    words = []
    for w in query.replace('"', " ").split():
        if not w.startswith("-"):
            w = w.strip(".,;:!?()[]{}'").lower()
            if w:
                words.append(w)
    return words


def vimgrep_line(abs_path: str, line: int, text: str, query: str, matches: list | None = None, offset: int = 0) -> str:
    """`abs_path:line:col:text`, 1-based, the text one line: what quickfix (`:cexpr`),
    fzf and telescope parse. The line is the first match's (`matches`: a definition's
    name with --symbol, on the line after its type in `static int __init\ndecay(…)`),
    else the first with something on it; the column is the match's, else the first
    query word's (bytes, as in vim). `offset`: the passage is a window cut from a long
    line, `offset` bytes after its start ("…" first: Snippet.offset)."""
    lines = text.split("\n")
    at = matches[0][0] if matches else -1
    # The line holding the first match, else the first with something on it (a passage may start with a blank line).
    hit = text.count("\n", 0, at) if 0 <= at <= len(text) else -1
    if hit >= 0 and lines[hit].strip():
        skip, at = hit, at - (text.rfind("\n", 0, at) + 1)
    else:
        skip, at = next((i for i, ln in enumerate(lines) if ln.strip()), 0), -1
    first = clean(lines[skip])
    line += skip
    cut = 1 if skip == 0 and offset > 0 else 0  # a window's text follows its "…"
    if 0 <= at < len(first):
        found = [at]
    else:
        lower = first.lower()
        found = [i for i in (lower.find(w) for w in _query_words(query)) if i >= 0]
    col = (offset if cut else 0) + len(first[cut : min(found)].encode()) + 1 if found else 1
    return f"{abs_path}:{max(1, line)}:{col}:{first}"  # clean left no \r or other control characters


def vimgrep_lines(abs_path: str, line: int, text: str, query: str, matches: list | None, offset: int = 0) -> list[str]:
    """A passage's vimgrep lines: one per line of it holding a match, at its first match
    (as `rg --column` lists them, and telescope asks: a line matching three words is one
    place to jump to, not three); a passage without matches is its vimgrep_line."""
    starts = sorted({text.rfind("\n", 0, a) + 1 for a, _ in matches or () if 0 <= a < len(text)})
    if len(starts) < 2:
        return [vimgrep_line(abs_path, line, text, query, matches, offset)]
    out = []
    for start in starts:
        end = text.find("\n", start)
        own = [[a - start, b - start] for a, b in matches or () if start <= a < (len(text) if end < 0 else end)]
        lead = text.count("\n", 0, start)
        out.append(
            vimgrep_line(
                abs_path, line + lead, text[start : None if end < 0 else end], query, own, offset if not lead else 0
            )
        )
    return out


def _snippet_lines(snip: dict, paint, n: int = 3, width: int = 200, skip_blank: bool = False) -> list[str]:
    """The first `n` lines of a snippet or preview (cut at `width`, tabs as spaces to the
    line's own tab stops, other control characters dropped), its matched words in bold
    when `paint` colours."""
    out: list[str] = []
    offset = 0
    bold = bool(paint("1", ""))
    for line in snip["text"].split("\n"):
        end = offset + len(line)
        if len(out) < n and (line.strip() or not skip_blank):
            shown = line[:width]
            spans = (
                [
                    [a - offset, min(b, offset + len(shown)) - offset]
                    for a, b in snip.get("matches", [])
                    if offset <= a < offset + len(shown)
                ]
                if bold
                else []
            )
            out.append(marked(*_untabbed(shown, spans), "\033[1m", "\033[22m", clean))
        offset = end + 1
    return out


TAB_WIDTH = 8


def _untabbed(line: str, spans: list[list[int]]) -> tuple[str, list[list[int]]]:
    """`line` with each tab as the spaces to its next stop, every TAB_WIDTH columns from
    the line's own start, as an editor shows it (a passage is printed indented, which
    moved a terminal's stops: the kernel's tab-aligned code came out askew), `spans`
    moved with it."""
    if "\t" not in line:
        return line, spans
    out: list[str] = []
    column: list[int] = []  # where each character starts
    col = 0
    for ch in line:
        column.append(col)
        width = TAB_WIDTH - col % TAB_WIDTH if ch == "\t" else 1
        out.append(" " * width if ch == "\t" else ch)
        col += width
    column.append(col)
    return "".join(out), [[column[a], column[b]] for a, b in spans]


def passages(hit: dict) -> list[dict]:
    """A hit's passages, best first: `snippets` with --per-doc N > 1, else its snippet."""
    return hit.get("snippets") or ([hit["snippet"]] if hit.get("snippet") else [])


def _location(hit: dict) -> str:
    snip = hit.get("snippet")
    loc = f"{hit['collection']}/{hit['path']}"
    return f"{loc}:{_found_line(snip)}{_in_symbol(snip)}" if snip else loc


def _found_line(snip: dict) -> int:
    """The line a passage was found by: its first, or after the lines of context before it."""
    line: int = snip["line"] + snip.get("before", 0)
    return line


def _in_symbol(passage: dict) -> str:
    """`: foo_probe()` after a location in source code: the definition the passage is in."""
    symbol = passage.get("symbol")
    return f": {one_line(clean(symbol))}" if symbol else ""


def footer_lines(result: dict, paint) -> list[str]:
    """What was missing and what was skipped, said once after the results."""
    return [paint("2", f"degraded: {clean(d)}") for d in result.get("degraded", [])] + [
        paint("2", f"note: {clean(n)}") for n in result.get("notes", [])
    ]


def md_footer(result: dict) -> list[str]:
    """The footer as Markdown bullets, after a blank line (nothing when there is nothing to say)."""
    items = [f"- degraded: {md(d)}" for d in result.get("degraded", [])] + [
        f"- note: {md(n)}" for n in result.get("notes", [])
    ]
    return ["", *items] if items else []


def xml_footer(result: dict) -> list[str]:
    return [f"  <degraded>{xml_escape(d)}</degraded>" for d in result.get("degraded", [])] + [
        f"  <note>{xml_escape(n)}</note>" for n in result.get("notes", [])
    ]


def _linked(link: Link | None, hit: dict, line: int, text: str) -> str:
    """The location as a terminal hyperlink to the hit's file and line, where links go."""
    return link(hit["abs_path"], line, text) if link else text


def search_text(result: dict, fmt: str, color: bool, null: bool = False, link: Link | None = None) -> str:
    hits = result["hits"]
    if fmt == "json":
        return fastjson.dumps(result, indent=2)
    if fmt == "jsonl":
        return json_lines(hits)
    if fmt == "files":
        return file_list([h["abs_path"] for h in hits], null)
    if fmt == "vimgrep":  # a line per matching line: each is a place to jump to, a file's in its order (quickfix's)
        return "\n".join(
            jump
            for h in hits
            for snip in sorted(passages(h), key=lambda s: s["line"]) or [{}]
            for jump in vimgrep_lines(
                h["abs_path"],
                snip.get("line", 1),
                snip.get("text") or h["title"],
                result["query"],
                snip.get("matches"),
                snip.get("offset", 0),
            )
        )
    if fmt == "csv":
        return _search_csv(hits)
    if fmt == "md":
        return _search_md(result)
    if fmt == "xml":
        return _search_xml(result)
    return _search_human(result, painter(color), link)


def _search_csv(hits: list[dict]) -> str:
    """A row per passage, the document's rank and score repeated; `symbol`: in source
    code, the definition the passage is in, as the other formats name it."""
    rows: list[list] = [["rank", "score", "collection", "path", "line", "title", "snippet", "symbol", "abs_path"]]
    for i, h in enumerate(hits, 1):
        for snip in passages(h) or [{}]:
            rows.append(
                [
                    i,
                    f"{h['score']:.4f}",
                    h["collection"],
                    h["path"],
                    snip.get("line", ""),
                    h["title"],
                    snip.get("text", ""),
                    snip.get("symbol") or "",
                    h["abs_path"],
                ]
            )
    return csv_text(rows)


def _search_md(result: dict) -> str:
    table = ["| # | score | document | title | match |", "|---|---|---|---|---|"]
    for i, h in enumerate(result["hits"], 1):
        title = h["title"].replace("|", "\\|")
        match = " ⋯ ".join(
            marked(snip["text"], snip.get("matches", []), "**", "**", md_inline).strip() for snip in passages(h)
        )
        table.append(f"| {i} | {h['score']:.3f} | `{_location(h)}` | {title} | {match} |")
    return "\n".join(table + md_footer(result))  # vsearch notes: what the vectors cannot see yet


def _search_xml(result: dict) -> str:
    hits = result["hits"]
    out = [f'<results query="{xml_escape(result["query"])}" count="{len(hits)}">']
    for i, h in enumerate(hits, 1):
        out.append(
            f'  <result rank="{i}" score="{h["score"]:.4f}" collection="{xml_escape(h["collection"])}" '
            f'path="{xml_escape(h["path"])}" docid="{h["docid"]}">'
        )
        out.append(f"    <title>{xml_escape(h['title'])}</title>")
        out.extend(f'    <snippet line="{snip["line"]}">{xml_escape(snip["text"])}</snippet>' for snip in passages(h))
        out.append("  </result>")
    out.extend(xml_footer(result))
    out.append("</results>")
    return "\n".join(out)


def _search_human(result: dict, paint, link: Link | None) -> str:
    hits = result["hits"]
    footer = footer_lines(result, paint)
    if not hits:
        return "\n".join(
            [
                "No results."
                + (
                    f" (ignored common words: {', '.join(result['dropped_stopwords'])})"
                    if result.get("dropped_stopwords")
                    else ""
                ),
                *footer,
            ]
        )
    lines = []
    for i, h in enumerate(hits, 1):
        rank, score = f"{i:>2}.", f"{h['score']:.2f}"
        line = _found_line(h["snippet"]) if h.get("snippet") else 1
        lines.append(
            f"{paint('2', rank)} {paint('33', score)}  {_linked(link, h, line, paint('36', _location(h)))}  "
            f"{paint('1', h['title'])}"
        )
        for k, snip in enumerate(passages(h)):
            if k:
                lines.append(paint("2", f"      ⋯ line {_found_line(snip)}{_in_symbol(snip)}"))
            if snip.get("table_header"):  # the columns of the table rows it shows
                lines.append(paint("2", f"      {one_line(clean(snip['table_header']))}"))
            # A search's passage whole (a few lines, or what -C asked for); a vsearch chunk's first lines.
            shown = snip["text"].count("\n") + 1 if "before" in snip else 3
            lines.extend(f"      {ln}" for ln in _snippet_lines(snip, paint, n=shown))
    return "\n".join(lines + footer)


def vsearch_text(result: dict, fmt: str, color: bool, null: bool = False, link: Link | None = None) -> str:
    """A `vsearch` result: JSON as it came, else as search hits (the best chunk as the snippet)."""
    return search_text(result if fmt in ("json", "jsonl") else _as_search_hits(result), fmt, color, null, link)


def _as_search_hits(result: dict) -> dict:
    hits = []
    for h in result["hits"]:
        text = "\n".join(ln for ln in h["text"].splitlines() if ln.strip())
        hits.append({**h, "snippet": {"line": h["start_line"], "text": text, "symbol": h.get("symbol")}})
    return {**result, "hits": hits, "dropped_stopwords": []}


def similar_text(result: dict, fmt: str, color: bool, link: Link | None = None) -> str:
    """A `similar` result: JSON as it came, else as search hits (the query line names the document)."""
    if fmt == "json":
        return fastjson.dumps(result, indent=2)
    return search_text({**result, "query": result["uri"], "dropped_stopwords": []}, fmt, color, link=link)


def _query_location(hit: dict, preview: dict) -> str:
    return f"{hit['collection']}/{hit['path']}:{preview['start_line']}{_in_symbol(preview)}"


def _counts_line(result: dict) -> str:
    c = result["counts"]
    extra = f"{c['candidates']} candidates, " if c["candidates"] != c["pool"] else ""
    if not c["reranked"]:  # no reranker, --no-rerank, or smart skip on a tiny pool
        return f"Returned {c['returned']} of {c['pool']}, none reranked ({extra}{result['took_ms']:.0f} ms)"
    return f"Reranked {c['reranked']} of {c['pool']}, returned {c['returned']} ({extra}{result['took_ms']:.0f} ms)"


def _tally(counts: dict) -> str:
    return ", ".join(f"{one_line(clean(k))} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _at_first_match(preview: dict, n: int = 3) -> dict:
    """`preview` from the line of its first match on, where the first `n` lines that are
    shown hold none (a mail's passage: its title, `From`, a line, then the table row that
    matched): the lines shown and the line named are those of the match."""
    matches = preview.get("matches") or []
    if not matches:
        return preview
    text = preview["text"]
    first = min(a for a, _ in matches)
    skipped = text.count("\n", 0, first)
    shown = [i for i, line in enumerate(text.split("\n")) if line.strip()][:n]
    if skipped <= (shown[-1] if shown else 0):
        return preview
    cut = text.rfind("\n", 0, first) + 1
    return {
        **preview,
        "text": text[cut:],
        "start_line": preview["start_line"] + skipped,
        "matches": [[a - cut, b - cut] for a, b in matches if a >= cut],
    }


def query_human(result: dict, paint, link: Link | None = None) -> list[str]:
    hits = result["hits"]
    lines = [] if hits else ["No results."]
    for i, h in enumerate(hits, 1):
        rank, score = f"{i:>2}.", f"{h['score']:.2f}"
        mark = paint("2", "  [whole document]") if h["preview"]["complete"] else ""
        preview = _at_first_match(h["preview"])
        where = _linked(link, h, preview["start_line"], paint("36", _query_location(h, preview)))
        lines.append(
            f"{paint('2', rank)} {paint('33', score)}  {where}  {paint('1', one_line(clean(h['title'])))}{mark}"
        )
        lines.extend(f"      {ln}" for ln in _snippet_lines(preview, paint, skip_blank=True))
        if h.get("explain"):
            lines.append(paint("2", f"      found by {', '.join(h['sources']) or '-'}"))
            lines.extend(paint("2", f"      {ln}") for ln in hit_lines(result, h["explain"]))
    lines.append(paint("2", _counts_line(result)))
    dist = result["distribution"]
    if dist["collections"]:
        lines.append(paint("2", f"by collection: {_tally(dist['collections'])}"))
    if dist["tags"]:
        lines.append(paint("2", f"by tag: {_tally(dist['tags'])}"))
    lines.extend(footer_lines(result, paint))
    if result.get("explain") or any(h.get("explain") for h in hits):
        lines.append(paint("1", "explain"))
        lines.extend(paint("2", f"  {ln}") for ln in query_lines(result))
    return lines


_EXPLAIN_COLUMNS = ("fusion", "fusion_norm", "rerank", "keyword_floor", "synthetic")


def _query_csv(result: dict) -> str:
    hits = result["hits"]
    explain = any(h.get("explain") for h in hits)
    head = [
        "rank",
        "score",
        "collection",
        "path",
        "line",
        "end_line",
        "title",
        "sources",
        "complete",
        "preview",
        "symbol",
        "abs_path",
    ]
    rows = [head + list(_EXPLAIN_COLUMNS if explain else ())]
    for i, h in enumerate(hits, 1):
        p = h["preview"]
        row = [
            i,
            f"{h['score']:.4f}",
            h["collection"],
            h["path"],
            p["start_line"],
            p["end_line"],
            h["title"],
            " ".join(h["sources"]),
            "true" if p["complete"] else "false",
            p["text"],
            p.get("symbol") or "",
            h["abs_path"],
        ]
        if explain:
            ex = h.get("explain") or {}
            row += ["" if ex.get(k) is None else f"{ex[k]:.4f}" for k in _EXPLAIN_COLUMNS]
        rows.append(row)
    return csv_text(rows)


def _query_md(result: dict) -> str:
    hits = result["hits"]
    rows = ["| # | score | document | title | found by |", "|---|---|---|---|---|"]
    for i, h in enumerate(hits, 1):
        title = md(h["title"]) + (" *(whole document)*" if h["preview"]["complete"] else "")
        where = md_code(_query_location(h, h["preview"]))
        rows.append(f"| {i} | {h['score']:.3f} | {where} | {title} | {', '.join(h['sources'])} |")
    rows += ["", md(_counts_line(result))]
    dist = result["distribution"]
    for name, counts in (("collection", dist["collections"]), ("tag", dist["tags"])):
        if counts:
            rows.append(f"By {name}: {md(_tally(counts))}")
    rows += md_footer(result)
    if any(h.get("explain") for h in hits) or result.get("explain"):
        rows += ["", "## Explain", ""]
        for i, h in enumerate(hits, 1):
            if h.get("explain"):
                rows.append(f"{i}. {md_code(_query_location(h, h['preview']))}")
                rows.extend(f"    - {md(ln.strip())}" for ln in hit_lines(result, h["explain"]))
        rows += ["", "```text", *(ln.replace("```", "` ` `") for ln in query_lines(result)), "```"]
    return "\n".join(rows)


def _query_xml(result: dict) -> str:
    hits = result["hits"]
    out = [f"<results {xml_attrs(query=result['query'], mode=result['mode'], count=len(hits))}>"]
    for i, h in enumerate(hits, 1):
        out.append(
            "  <result "
            + xml_attrs(
                rank=i,
                score=h["score"],
                collection=h["collection"],
                path=h["path"],
                docid=h["docid"],
                sources=" ".join(h["sources"]),
            )
            + ">"
        )
        out.append(f"    <title>{xml_escape(h['title'])}</title>")
        p = h["preview"]
        out.append(
            "    <preview "
            + xml_attrs(
                line=p["start_line"],
                end_line=p["end_line"],
                complete=p["complete"],
                truncated=p.get("truncated", False),
            )
            + f">{xml_escape(p['text'])}</preview>"
        )
        if h.get("explain"):
            out.extend(hit_xml(h["explain"], "    "))
        out.append("  </result>")
    c = result["counts"]
    out.append(
        "  <counts "
        + xml_attrs(
            candidates=c["candidates"],
            pool=c["pool"],
            reranked=c["reranked"],
            returned=c["returned"],
            took_ms=float(result["took_ms"]),
        )
        + "/>"
    )
    dist = result["distribution"]
    out.append("  <distribution>")
    out.extend(f"    <collection {xml_attrs(name=k, count=v)}/>" for k, v in dist["collections"].items())
    out.extend(f"    <tag {xml_attrs(name=k, count=v)}/>" for k, v in dist["tags"].items())
    out.append("  </distribution>")
    out.extend(xml_footer(result))
    out.extend(query_xml(result, "  "))
    out.append("</results>")
    return "\n".join(out)


def query_text(result: dict, fmt: str, color: bool, null: bool = False, link: Link | None = None) -> str:
    """A `query` result in one of gnoctl.args.FORMATS (hits are whole documents with a preview)."""
    if fmt == "json":
        return fastjson.dumps(result, indent=2)
    if fmt == "jsonl":
        return json_lines(result["hits"])
    if fmt == "files":
        return file_list([h["abs_path"] for h in result["hits"]], null)
    if fmt == "vimgrep":
        return "\n".join(
            vimgrep_line(h["abs_path"], h["preview"]["start_line"], h["preview"]["text"], result["query"])
            for h in result["hits"]
        )
    if fmt == "csv":
        return _query_csv(result)
    if fmt == "md":
        return _query_md(result)
    if fmt == "xml":
        return _query_xml(result)
    return "\n".join(query_human(result, painter(color), link))


# --- --explain: how each score was made, what each stage did ---------------------------------


def _list_label(result: dict, index: int) -> str:
    lists = (result.get("explain") or {}).get("lists") or []
    if 0 <= index < len(lists):
        label = one_line(clean(lists[index]["query"]))
        return f' "{label[:60]}…"' if len(label) > 60 else f' "{label}"'
    return ""


def hit_lines(result: dict, ex: dict) -> list[str]:
    """One hit's score, stage by stage: the lists that voted, fusion, reranker, blend, floors."""
    lines = [f"fused #{ex['fused_position']}: {num(ex['fusion'])}, normalized {num(ex['fusion_norm'])}"]
    for c in ex["contributions"]:
        lines.append(
            f"  {c['source']}:{c['kind']}{_list_label(result, c['list'])} "
            f"#{c['rank']}/{num(c['score'])}, standard {num(c['standard'])} ×{num(c['weight'])} "
            f"→ {num(c['contribution'])}"
        )
    blend = (
        f", blend {num(ex['fusion_weight'])} fusion + {num(ex['rerank_weight'])} rerank"
        if ex["fusion_weight"] or ex["rerank_weight"]
        else ""
    )
    lines.append(
        f"rerank {num(ex['rerank'])}, keyword floor {num(ex['keyword_floor'])}, synthetic {num(ex['synthetic'])}{blend}"
    )
    if ex["floors"]:
        lines.append(f"floors applied: {', '.join(ex['floors'])}")
    ri = ex.get("rerank_input")
    if ri:
        chunks = ", ".join(str(n) for n in ri["chunks"]) or "none"
        lines.append(f"rerank input: chunks {chunks}, {ri['chars']} chars" + (", cached" if ri["cached"] else ""))
    return lines


def _compact(value) -> str:
    return fastjson.dumps(value) if isinstance(value, (dict, list)) else num(value)


def query_lines(result: dict) -> list[str]:
    """The per-query part of --explain: expansion, strong signal, stages, lists, models, constants."""
    lines = []
    exp = result.get("expansion")
    if exp:
        if exp.get("source") == "client":
            lines.append("expansion: given by the client")
        else:
            lines.append(
                f"expansion: {exp['model']}, prompt {exp['prompt']} {exp['prompt_version']}"
                + (", cached" if exp["cached"] else "")
            )
        for name, items in (("lex", exp["lexical"]), ("vec", exp["semantic"])):
            if items:
                lines.append(f"  {name}: " + " | ".join(one_line(clean(x)) for x in items))
        if exp.get("hyde"):
            hyde = one_line(clean(exp["hyde"]))
            lines.append(f"  hyde: {hyde[:160]}…" if len(hyde) > 160 else f"  hyde: {hyde}")
    ex = result.get("explain")
    if not ex:
        return lines
    if ex["strong_signal"]:
        lines.append("strong signal: " + ", ".join(f"{k} {_compact(v)}" for k, v in ex["strong_signal"].items()))
    lines.append("stages:")
    for st in ex["stages"]:
        took = f"skipped: {st['skipped']}" if st.get("skipped") else f"{st['ms']:.1f} ms"
        lines.append(f"  {st['name']:<14} {took}")
    if ex["lists"]:
        lines.append("lists:")
        for i, li in enumerate(ex["lists"]):
            lines.append(
                f"  [{i}] {li['source']}:{li['kind']}{_list_label(result, i)} {li['hits']} hits "
                f"×{num(li['weight'])}, floor {num(li['floor'])}, deviation {num(li['deviation'])}"
            )
    if ex["models"]:
        lines.append("models: " + ", ".join(f"{role} {uri}" for role, uri in ex["models"].items()))
    lines.append(f"prompt version: {ex['prompt_version']}")
    lines.append("constants:")
    lines.extend(f"  {key} {_compact(val)}" for key, val in ex["constants"].items())
    return lines


def hit_xml(ex: dict, indent: str) -> list[str]:
    out = [
        f"{indent}<explain "
        + xml_attrs(
            fused_position=ex["fused_position"],
            fusion=ex["fusion"],
            fusion_norm=ex["fusion_norm"],
            rerank=ex["rerank"],
            keyword_floor=ex["keyword_floor"],
            synthetic=ex["synthetic"],
            fusion_weight=ex["fusion_weight"],
            rerank_weight=ex["rerank_weight"],
        )
        + ">"
    ]
    for c in ex["contributions"]:
        out.append(
            f"{indent}  <contribution "
            + xml_attrs(
                list_=c["list"],
                source=c["source"],
                kind=c["kind"],
                rank=c["rank"],
                score=c["score"],
                weight=c["weight"],
                standard=c["standard"],
                contribution=c["contribution"],
            )
            + "/>"
        )
    out.extend(f"{indent}  <floor>{xml_escape(f)}</floor>" for f in ex["floors"])
    ri = ex.get("rerank_input")
    if ri:
        out.append(
            f"{indent}  <rerank_input "
            + xml_attrs(chunks=" ".join(str(n) for n in ri["chunks"]), chars=ri["chars"], cached=ri["cached"])
            + "/>"
        )
    out.append(f"{indent}</explain>")
    return out


def query_xml(result: dict, indent: str) -> list[str]:
    out = []
    exp = result.get("expansion")
    if exp:
        out.append(
            f"{indent}<expansion "
            + xml_attrs(
                source=exp.get("source", "generator"),
                model=exp["model"],
                prompt=exp["prompt"],
                prompt_version=exp["prompt_version"],
                cached=exp["cached"],
            )
            + ">"
        )
        out.extend(f"{indent}  <lexical>{xml_escape(x)}</lexical>" for x in exp["lexical"])
        out.extend(f"{indent}  <semantic>{xml_escape(x)}</semantic>" for x in exp["semantic"])
        if exp.get("hyde") is not None:
            out.append(f"{indent}  <hyde>{xml_escape(exp['hyde'])}</hyde>")
        out.append(f"{indent}</expansion>")
    ex = result.get("explain")
    if ex:
        out.append(f"{indent}<explain {xml_attrs(prompt_version=ex['prompt_version'])}>")
        for st in ex["stages"]:
            out.append(f"{indent}  <stage " + xml_attrs(name=st["name"], ms=st["ms"], skipped=st.get("skipped")) + "/>")
        for i, li in enumerate(ex["lists"]):
            out.append(
                f"{indent}  <list "
                + xml_attrs(index=i, source=li["source"], kind=li["kind"], hits=li["hits"], weight=li["weight"])
                + f">{xml_escape(li['query'])}</list>"
            )
        for role, uri in ex["models"].items():
            out.append(f"{indent}  <model {xml_attrs(role=role, uri=uri)}/>")
        out.append(f"{indent}  <strong_signal>{xml_escape(fastjson.dumps(ex['strong_signal']))}</strong_signal>")
        out.append(f"{indent}  <constants>{xml_escape(fastjson.dumps(ex['constants']))}</constants>")
        out.append(f"{indent}</explain>")
    return out
