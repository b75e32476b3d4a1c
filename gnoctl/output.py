"""Render results as human text, JSON, JSON Lines, file lists, CSV, Markdown, XML or
vimgrep lines (stdlib only), and print them: colour, pager, NUL-separated lists."""

from __future__ import annotations

import os
import sys

from gnoctl import fastjson


class View:
    """How a person's terminal gets the output: `--color`, `--no-pager`, `-0`."""

    def __init__(self, color: str = "auto", pager: bool = True, null: bool = False) -> None:
        self.color_when = color
        self.pager = pager
        self.null = null

    def color(self) -> bool:
        """`--color auto` (the default) paints only a terminal, and never with NO_COLOR
        set (no-color.org) or TERM=dumb."""
        if self.color_when != "auto":
            return self.color_when == "always"
        if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
            return False
        return sys.stdout.isatty()

    def emit(self, text: str, fmt: str) -> None:
        """Print a rendered result; long human text on a terminal goes through $PAGER.
        A reader that stops early is not an error: the command's exit status stands."""
        try:
            if fmt == "files" and self.null:
                sys.stdout.write(text)
            elif fmt == "human" and self.pager and _page(text):
                return
            elif text:
                print(text)
            sys.stdout.flush()
        except BrokenPipeError:
            quiet_stdout()


def _page(text: str) -> bool:
    """Show `text` in $GNO_PAGER or $PAGER (default `less -FRX`) when it is taller than
    the terminal; False when it was not paged (short, not a terminal, pager `cat`)."""
    if not sys.stdout.isatty():
        return False
    try:
        rows = os.get_terminal_size(sys.stdout.fileno()).lines
    except OSError:
        return False
    if rows <= 0 or text.count("\n") + 1 < rows:
        return False
    import shlex
    import subprocess

    cmd = os.environ.get("GNO_PAGER") or os.environ.get("PAGER") or "less -FRX"
    if cmd.strip() in ("", "cat"):
        return False
    sys.stdout.flush()
    try:
        proc = subprocess.Popen(shlex.split(cmd), stdin=subprocess.PIPE,
                                env={**os.environ, "LESS": os.environ.get("LESS", "FRX")})
    except (OSError, ValueError):
        return False
    try:
        proc.communicate((text + "\n").encode())
    except (BrokenPipeError, KeyboardInterrupt):  # the pager was quit early
        proc.wait()
    return True


def quiet_stdout() -> None:
    """The reader of our stdout is gone (`| head`, `| grep -q`): send the rest nowhere,
    so neither a later write nor the interpreter's final flush complains."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def file_list(paths, null: bool = False) -> str:
    """Absolute paths, one per line, or each ended by NUL with `-0` (for `xargs -0`)."""
    if null:
        return "".join(p + "\0" for p in paths)
    return "\n".join(paths)


def json_lines(items) -> str:
    """One compact JSON object per line (JSON Lines), for streaming tools."""
    return "\n".join(fastjson.dumps(x) for x in items)


def _query_words(query: str) -> list[str]:
    """The positive words of a query, lower-cased (what a vimgrep column points at)."""
    words = []
    for w in query.replace('"', " ").split():
        if not w.startswith("-"):
            w = w.strip(".,;:!?()[]{}'").lower()
            if w:
                words.append(w)
    return words


def vimgrep_line(abs_path: str, line: int, text: str, query: str) -> str:
    """`abs_path:line:col:text`, 1-based, the text one line: what quickfix (`:cexpr`),
    fzf and telescope parse. The column is the first query word's (bytes, as in vim)."""
    # The first line with something on it (a passage may start with a blank line).
    skip, first = next(((i, ln) for i, ln in enumerate(_clean(text).split("\n")) if ln.strip()), (0, ""))
    line += skip
    col = 1
    if not first.startswith("…"):  # a cut-out window of a long line: its offsets are not the file's
        lower = first.lower()
        found = [i for i in (lower.find(w) for w in _query_words(query)) if i >= 0]
        if found:
            col = len(first[: min(found)].encode()) + 1
    return f"{abs_path}:{max(1, line)}:{col}:{first}"  # _clean left no \r or other control characters


def _color(enabled: bool):
    def paint(code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if enabled else text

    return paint


def marked(text: str, spans: list, before: str, after: str, escape=lambda s: s) -> str:
    """`text` with each matched [start, end) span wrapped in `before`…`after` (the rest
    passed through `escape`): terminal bold, Markdown `**`."""
    out, pos = [], 0
    for start, end in spans:
        if start < pos or end > len(text):
            continue
        out += [escape(text[pos:start]), before, escape(text[start:end]), after]
        pos = end
    out.append(escape(text[pos:]))
    return "".join(out)


def _snippet_lines(snip: dict, paint, n: int = 3, width: int = 200, skip_blank: bool = False) -> list[str]:
    """The first `n` lines of a snippet or preview (cut at `width`, control characters
    dropped), its matched words in bold when `paint` colours."""
    out: list[str] = []
    offset = 0
    bold = bool(paint("1", ""))
    for line in snip["text"].split("\n"):
        end = offset + len(line)
        if len(out) < n and (line.strip() or not skip_blank):
            shown = line[:width]
            spans = [[a - offset, min(b, offset + len(shown)) - offset] for a, b in snip.get("matches", [])
                     if offset <= a < offset + len(shown)] if bold else []
            out.append(marked(shown, spans, "\033[1m", "\033[22m", _clean))
        offset = end + 1
    return out


def _md_inline(s: str) -> str:
    """A piece of an inline Markdown text: whitespace runs as one space, punctuation escaped."""
    flat = " ".join(s.split())
    flat = (" " if s[:1].isspace() else "") + flat + (" " if s[-1:].isspace() and flat else "")
    return _clean(flat).translate(_MD_ESCAPES)


def _xml_escape(s: str) -> str:
    s = "".join(ch for ch in s if ch in "\t\n\r" or ord(ch) >= 0x20)
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _location(hit: dict) -> str:
    snip = hit.get("snippet")
    loc = f"{hit['collection']}/{hit['path']}"
    return f"{loc}:{snip['line']}" if snip else loc


def search_text(result: dict, fmt: str, color: bool, null: bool = False) -> str:
    hits = result["hits"]
    if fmt == "json":
        return fastjson.dumps(result, indent=2)
    if fmt == "jsonl":
        return json_lines(hits)
    if fmt == "files":
        return file_list([h["abs_path"] for h in hits], null)
    if fmt == "vimgrep":
        return "\n".join(vimgrep_line(h["abs_path"], (h.get("snippet") or {}).get("line", 1),
                                      (h.get("snippet") or {}).get("text") or h["title"], result["query"])
                         for h in hits)
    if fmt == "csv":
        rows: list[list] = [["rank", "score", "collection", "path", "line", "title", "snippet", "abs_path"]]
        for i, h in enumerate(hits, 1):
            snip = h.get("snippet") or {}
            rows.append([i, f"{h['score']:.4f}", h["collection"], h["path"], snip.get("line", ""),
                         h["title"], snip.get("text", ""), h["abs_path"]])
        return _csv(rows)
    if fmt == "md":
        table = ["| # | score | document | title | match |", "|---|---|---|---|---|"]
        for i, h in enumerate(hits, 1):
            title = h["title"].replace("|", "\\|")
            snip = h.get("snippet")
            match = marked(snip["text"], snip.get("matches", []), "**", "**", _md_inline).strip() if snip else ""
            table.append(f"| {i} | {h['score']:.3f} | `{_location(h)}` | {title} | {match} |")
        return "\n".join(table + _md_footer(result))  # vsearch notes: what the vectors cannot see yet
    if fmt == "xml":
        out = [f'<results query="{_xml_escape(result["query"])}" count="{len(hits)}">']
        for i, h in enumerate(hits, 1):
            snip = h.get("snippet")
            out.append(
                f'  <result rank="{i}" score="{h["score"]:.4f}" collection="{_xml_escape(h["collection"])}" '
                f'path="{_xml_escape(h["path"])}" docid="{h["docid"]}">'
            )
            out.append(f"    <title>{_xml_escape(h['title'])}</title>")
            if snip:
                out.append(f'    <snippet line="{snip["line"]}">{_xml_escape(snip["text"])}</snippet>')
            out.append("  </result>")
        out.extend(_xml_footer(result))
        out.append("</results>")
        return "\n".join(out)
    paint = _color(color)
    footer = _footer_lines(result, paint)
    if not hits:
        return "\n".join(["No results." + (f" (ignored common words: {', '.join(result['dropped_stopwords'])})"
                                           if result.get("dropped_stopwords") else ""), *footer])
    lines = []
    for i, h in enumerate(hits, 1):
        rank, score = f"{i:>2}.", f"{h['score']:.2f}"
        lines.append(f"{paint('2', rank)} {paint('33', score)}  {paint('36', _location(h))}  "
                     f"{paint('1', h['title'])}")
        snips = h.get("snippets") or ([h["snippet"]] if h.get("snippet") else [])
        for k, snip in enumerate(snips):
            if k:
                lines.append(paint("2", f"      ⋯ line {snip['line']}"))
            lines.extend(f"      {ln}" for ln in _snippet_lines(snip, paint))
    return "\n".join(lines + footer)


# --- query and ask ------------------------------------------------------------------------

# Markdown punctuation that would turn a title into markup (or break a table cell).
_MD_ESCAPES = str.maketrans({ch: "\\" + ch for ch in "\\`*_[]<>|#"})
_CONTROL = {i: None for i in range(0x20) if chr(i) not in "\t\n"} | {0x7F: None}


def _clean(s: str) -> str:
    """Text from documents and models, safe for a terminal (no escape sequences)."""
    return s.translate(_CONTROL)


def _one_line(s: str) -> str:
    return " ".join(s.split())


def _md(s: str) -> str:
    """Inline Markdown text (e.g. a table cell): one line, punctuation escaped."""
    return _one_line(_clean(s)).translate(_MD_ESCAPES)


def _md_code(s: str) -> str:
    """An inline code span that survives backticks and pipes inside (GFM tables)."""
    s = _one_line(_clean(s)).replace("|", "\\|")
    fence = "`"
    while fence in s:
        fence += "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _num(x, digits: int = 4) -> str:
    """A score for people: fixed decimals without trailing zeros; "-" for none."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "true" if x else "false"
    if not isinstance(x, float):
        return str(x)
    return f"{x:.{digits}f}".rstrip("0").rstrip(".") if x == x else "nan"


def _attrs(**kw) -> str:
    """XML attributes from keyword arguments, skipping None; floats to 4 decimals."""
    out = []
    for key, val in kw.items():
        if val is None:
            continue
        if isinstance(val, bool):
            val = "true" if val else "false"
        elif isinstance(val, float):
            val = f"{val:.4f}"
        out.append(f'{key.rstrip("_")}="{_xml_escape(str(val))}"')
    return " ".join(out)


def _query_location(hit: dict) -> str:
    return f"{hit['collection']}/{hit['path']}:{hit['preview']['start_line']}"


def _counts_line(result: dict) -> str:
    c = result["counts"]
    extra = f"{c['candidates']} candidates, " if c["candidates"] != c["pool"] else ""
    return (f"Reranked {c['reranked']} of {c['pool']}, returned {c['returned']} "
            f"({extra}{result['took_ms']:.0f} ms)")


def _tally(counts: dict) -> str:
    return ", ".join(f"{_one_line(_clean(k))} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _list_label(result: dict, index: int) -> str:
    lists = (result.get("explain") or {}).get("lists") or []
    if 0 <= index < len(lists):
        label = _one_line(_clean(lists[index]["query"]))
        return f' "{label[:60]}…"' if len(label) > 60 else f' "{label}"'
    return ""


def _hit_explain_lines(result: dict, ex: dict) -> list[str]:
    """One hit's score, stage by stage: the lists that voted, fusion, reranker, blend, floors."""
    lines = [f"fused #{ex['fused_position']}: rrf {_num(ex['rrf'])} + bonus {_num(ex['bonus'])} = "
             f"{_num(ex['fusion'])}, normalized {_num(ex['fusion_norm'])}"]
    for c in ex["contributions"]:
        lines.append(f"  {c['source']}:{c['kind']}{_list_label(result, c['list'])} "
                     f"#{c['rank']}/{_num(c['score'])} ×{_num(c['weight'])} → {_num(c['rrf'])}")
    blend = (f", blend {_num(ex['fusion_weight'])} fusion + {_num(ex['rerank_weight'])} rerank"
             if ex["fusion_weight"] or ex["rerank_weight"] else "")
    lines.append(f"rerank {_num(ex['rerank'])}, keyword floor {_num(ex['keyword_floor'])}, "
                 f"synthetic {_num(ex['synthetic'])}{blend}")
    if ex["floors"]:
        lines.append(f"floors applied: {', '.join(ex['floors'])}")
    ri = ex.get("rerank_input")
    if ri:
        chunks = ", ".join(str(n) for n in ri["chunks"]) or "none"
        lines.append(f"rerank input: chunks {chunks}, {ri['chars']} chars" + (", cached" if ri["cached"] else ""))
    return lines


def _compact(value) -> str:
    return fastjson.dumps(value) if isinstance(value, (dict, list)) else _num(value)


def _query_explain_lines(result: dict) -> list[str]:
    """The per-query part of --explain: expansion, strong signal, stages, lists, models, constants."""
    lines = []
    exp = result.get("expansion")
    if exp:
        lines.append(f"expansion: {exp['model']}, prompt {exp['prompt']} {exp['prompt_version']}"
                     + (", cached" if exp["cached"] else ""))
        for name, items in (("lex", exp["lexical"]), ("vec", exp["semantic"])):
            if items:
                lines.append(f"  {name}: " + " | ".join(_one_line(_clean(x)) for x in items))
        if exp.get("hyde"):
            hyde = _one_line(_clean(exp["hyde"]))
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
            lines.append(f"  [{i}] {li['source']}:{li['kind']}{_list_label(result, i)} {li['hits']} hits "
                         f"×{_num(li['weight'])}")
    if ex["models"]:
        lines.append("models: " + ", ".join(f"{role} {uri}" for role, uri in ex["models"].items()))
    lines.append(f"prompt version: {ex['prompt_version']}")
    lines.append("constants:")
    lines.extend(f"  {key} {_compact(val)}" for key, val in ex["constants"].items())
    return lines


def _footer_lines(result: dict, paint) -> list[str]:
    """What was missing and what was skipped, said once after the results."""
    return ([paint("2", f"degraded: {_clean(d)}") for d in result.get("degraded", [])]
            + [paint("2", f"note: {_clean(n)}") for n in result.get("notes", [])])


def _md_footer(result: dict) -> list[str]:
    """The footer as Markdown bullets, after a blank line (nothing when there is nothing to say)."""
    items = ([f"- degraded: {_md(d)}" for d in result.get("degraded", [])]
             + [f"- note: {_md(n)}" for n in result.get("notes", [])])
    return ["", *items] if items else []


def _xml_footer(result: dict) -> list[str]:
    return ([f"  <degraded>{_xml_escape(d)}</degraded>" for d in result.get("degraded", [])]
            + [f"  <note>{_xml_escape(n)}</note>" for n in result.get("notes", [])])


def _query_human(result: dict, paint) -> list[str]:
    hits = result["hits"]
    lines = [] if hits else ["No results."]
    for i, h in enumerate(hits, 1):
        rank, score = f"{i:>2}.", f"{h['score']:.2f}"
        mark = paint("2", "  [whole document]") if h["preview"]["complete"] else ""
        lines.append(f"{paint('2', rank)} {paint('33', score)}  {paint('36', _query_location(h))}  "
                     f"{paint('1', _one_line(_clean(h['title'])))}{mark}")
        lines.extend(f"      {ln}" for ln in _snippet_lines(h["preview"], paint, skip_blank=True))
        if h.get("explain"):
            lines.append(paint("2", f"      found by {', '.join(h['sources']) or '-'}"))
            lines.extend(paint("2", f"      {ln}") for ln in _hit_explain_lines(result, h["explain"]))
    lines.append(paint("2", _counts_line(result)))
    dist = result["distribution"]
    if dist["collections"]:
        lines.append(paint("2", f"by collection: {_tally(dist['collections'])}"))
    if dist["tags"]:
        lines.append(paint("2", f"by tag: {_tally(dist['tags'])}"))
    lines.extend(_footer_lines(result, paint))
    if result.get("explain") or any(h.get("explain") for h in hits):
        lines.append(paint("1", "explain"))
        lines.extend(paint("2", f"  {ln}") for ln in _query_explain_lines(result))
    return lines


def _csv(rows: list[list]) -> str:
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().rstrip("\n")


_EXPLAIN_COLUMNS = ("rrf", "bonus", "fusion_norm", "rerank", "keyword_floor", "synthetic")


def _query_csv(result: dict) -> str:
    hits = result["hits"]
    explain = any(h.get("explain") for h in hits)
    head = ["rank", "score", "collection", "path", "line", "end_line", "title", "sources", "complete", "preview",
            "abs_path"]
    rows = [head + list(_EXPLAIN_COLUMNS if explain else ())]
    for i, h in enumerate(hits, 1):
        p = h["preview"]
        row = [i, f"{h['score']:.4f}", h["collection"], h["path"], p["start_line"], p["end_line"], h["title"],
               " ".join(h["sources"]), "true" if p["complete"] else "false", p["text"], h["abs_path"]]
        if explain:
            ex = h.get("explain") or {}
            row += ["" if ex.get(k) is None else f"{ex[k]:.4f}" for k in _EXPLAIN_COLUMNS]
        rows.append(row)
    return _csv(rows)


def _query_md(result: dict) -> str:
    hits = result["hits"]
    rows = ["| # | score | document | title | found by |", "|---|---|---|---|---|"]
    for i, h in enumerate(hits, 1):
        title = _md(h["title"]) + (" *(whole document)*" if h["preview"]["complete"] else "")
        rows.append(f"| {i} | {h['score']:.3f} | {_md_code(_query_location(h))} | {title} | "
                    f"{', '.join(h['sources'])} |")
    rows += ["", _md(_counts_line(result))]
    dist = result["distribution"]
    for name, counts in (("collection", dist["collections"]), ("tag", dist["tags"])):
        if counts:
            rows.append(f"By {name}: {_md(_tally(counts))}")
    rows += _md_footer(result)
    if any(h.get("explain") for h in hits) or result.get("explain"):
        rows += ["", "## Explain", ""]
        for i, h in enumerate(hits, 1):
            if h.get("explain"):
                rows.append(f"{i}. {_md_code(_query_location(h))}")
                rows.extend(f"    - {_md(ln.strip())}" for ln in _hit_explain_lines(result, h["explain"]))
        rows += ["", "```text", *(ln.replace("```", "` ` `") for ln in _query_explain_lines(result)), "```"]
    return "\n".join(rows)


def _hit_explain_xml(ex: dict, indent: str) -> list[str]:
    out = [f"{indent}<explain " + _attrs(fused_position=ex["fused_position"], rrf=ex["rrf"], bonus=ex["bonus"],
                                         fusion=ex["fusion"], fusion_norm=ex["fusion_norm"], rerank=ex["rerank"],
                                         keyword_floor=ex["keyword_floor"], synthetic=ex["synthetic"],
                                         fusion_weight=ex["fusion_weight"], rerank_weight=ex["rerank_weight"]) + ">"]
    for c in ex["contributions"]:
        out.append(f"{indent}  <contribution " + _attrs(list_=c["list"], source=c["source"], kind=c["kind"],
                                                        rank=c["rank"], score=c["score"], weight=c["weight"],
                                                        rrf=c["rrf"]) + "/>")
    out.extend(f"{indent}  <floor>{_xml_escape(f)}</floor>" for f in ex["floors"])
    ri = ex.get("rerank_input")
    if ri:
        out.append(f"{indent}  <rerank_input " + _attrs(chunks=" ".join(str(n) for n in ri["chunks"]),
                                                         chars=ri["chars"], cached=ri["cached"]) + "/>")
    out.append(f"{indent}</explain>")
    return out


def _query_explain_xml(result: dict, indent: str) -> list[str]:
    out = []
    exp = result.get("expansion")
    if exp:
        out.append(f"{indent}<expansion " + _attrs(model=exp["model"], prompt=exp["prompt"],
                                                   prompt_version=exp["prompt_version"], cached=exp["cached"]) + ">")
        out.extend(f"{indent}  <lexical>{_xml_escape(x)}</lexical>" for x in exp["lexical"])
        out.extend(f"{indent}  <semantic>{_xml_escape(x)}</semantic>" for x in exp["semantic"])
        if exp.get("hyde") is not None:
            out.append(f"{indent}  <hyde>{_xml_escape(exp['hyde'])}</hyde>")
        out.append(f"{indent}</expansion>")
    ex = result.get("explain")
    if ex:
        out.append(f"{indent}<explain {_attrs(prompt_version=ex['prompt_version'])}>")
        for st in ex["stages"]:
            out.append(f"{indent}  <stage " + _attrs(name=st["name"], ms=st["ms"], skipped=st.get("skipped")) + "/>")
        for i, li in enumerate(ex["lists"]):
            out.append(f"{indent}  <list " + _attrs(index=i, source=li["source"], kind=li["kind"], hits=li["hits"],
                                                    weight=li["weight"]) + f">{_xml_escape(li['query'])}</list>")
        for role, uri in ex["models"].items():
            out.append(f"{indent}  <model {_attrs(role=role, uri=uri)}/>")
        out.append(f"{indent}  <strong_signal>{_xml_escape(fastjson.dumps(ex['strong_signal']))}</strong_signal>")
        out.append(f"{indent}  <constants>{_xml_escape(fastjson.dumps(ex['constants']))}</constants>")
        out.append(f"{indent}</explain>")
    return out


def _query_xml(result: dict) -> str:
    hits = result["hits"]
    out = [f"<results {_attrs(query=result['query'], mode=result['mode'], count=len(hits))}>"]
    for i, h in enumerate(hits, 1):
        out.append("  <result " + _attrs(rank=i, score=h["score"], collection=h["collection"], path=h["path"],
                                         docid=h["docid"], sources=" ".join(h["sources"])) + ">")
        out.append(f"    <title>{_xml_escape(h['title'])}</title>")
        p = h["preview"]
        out.append("    <preview " + _attrs(line=p["start_line"], end_line=p["end_line"], complete=p["complete"],
                                            truncated=p.get("truncated", False))
                   + f">{_xml_escape(p['text'])}</preview>")
        if h.get("explain"):
            out.extend(_hit_explain_xml(h["explain"], "    "))
        out.append("  </result>")
    c = result["counts"]
    out.append("  <counts " + _attrs(candidates=c["candidates"], pool=c["pool"], reranked=c["reranked"],
                                     returned=c["returned"], took_ms=float(result["took_ms"])) + "/>")
    dist = result["distribution"]
    out.append("  <distribution>")
    out.extend(f"    <collection {_attrs(name=k, count=v)}/>" for k, v in dist["collections"].items())
    out.extend(f"    <tag {_attrs(name=k, count=v)}/>" for k, v in dist["tags"].items())
    out.append("  </distribution>")
    out.extend(_xml_footer(result))
    out.extend(_query_explain_xml(result, "  "))
    out.append("</results>")
    return "\n".join(out)


def query_text(result: dict, fmt: str, color: bool, null: bool = False) -> str:
    """A `query` result in one of gnoctl.args.FORMATS (hits are whole documents with a preview)."""
    if fmt == "json":
        return fastjson.dumps(result, indent=2)
    if fmt == "jsonl":
        return json_lines(result["hits"])
    if fmt == "files":
        return file_list([h["abs_path"] for h in result["hits"]], null)
    if fmt == "vimgrep":
        return "\n".join(vimgrep_line(h["abs_path"], h["preview"]["start_line"], h["preview"]["text"],
                                      result["query"]) for h in result["hits"])
    if fmt == "csv":
        return _query_csv(result)
    if fmt == "md":
        return _query_md(result)
    if fmt == "xml":
        return _query_xml(result)
    return "\n".join(_query_human(result, _color(color)))


def _ask_shown(result: dict) -> tuple[str, list[dict]]:
    """The sources worth listing: the cited ones, or what was considered when there is no answer."""
    if result["answer"] is None:
        return "considered", result["considered"]
    return "cited", result["sources"]


def _source_location(s: dict) -> str:
    return f"{s['collection']}/{s['path']}:{s['start_line']}"


def _ask_human(result: dict, paint) -> list[str]:
    kind, shown = _ask_shown(result)
    lines = []
    if result["abstained"]:
        reason = _clean(result.get("abstain_reason") or "the sources do not answer the question")
        lines.append(paint("1;33", f"No answer: {reason}"))
    elif result["answer"] is not None:
        lines.append(_clean(result["answer"]).strip())
    if result["answer"] is not None:
        lines.append("")
    if shown:
        heading = "Sources:" if kind == "cited" else ("Sources considered:" if result["abstained"]
                                                      else "Sources (no answer requested):")
        lines.append(paint("1", heading))
        for s in shown:
            lines.append(f"  [{s['n']}] {_one_line(_clean(s['title']))} — {paint('36', _source_location(s))}")
    elif not result["abstained"] or not result["considered"]:
        lines.append(paint("2", "No sources."))
    retrieval = result.get("retrieval") or {}
    if retrieval.get("explain"):  # the retrieval's own footer says what degraded
        lines += ["", paint("1", "Retrieval:"), *_query_human(retrieval, paint)]
    else:
        lines.extend(_footer_lines(retrieval, paint))
    return lines


def _ask_csv(result: dict) -> str:
    kind, shown = _ask_shown(result)
    rows = [["n", "score", "collection", "path", "line", "end_line", "title", "abs_path", "kind"]]
    rows += [[s["n"], f"{s['score']:.4f}", s["collection"], s["path"], s["start_line"], s["end_line"], s["title"],
              s["abs_path"], kind] for s in shown]
    return _csv(rows)


def _ask_md(result: dict) -> str:
    kind, shown = _ask_shown(result)
    out = [f"# {_md(result['query'])}", ""]
    if result["abstained"]:
        out += [f"> **No answer:** {_md(result.get('abstain_reason') or '')}", ""]
    elif result["answer"] is not None:
        out += [_clean(result["answer"]).strip(), ""]
    title = {"cited": "Sources", "considered": "Sources considered"}[kind]
    out += [f"## {title}", "", "| # | document | title | score |", "|---|---|---|---|"]
    out += [f"| {s['n']} | {_md_code(_source_location(s))} | {_md(s['title'])} | {s['score']:.3f} |" for s in shown]
    return "\n".join(out + _md_footer(result["retrieval"]))


def _sources_xml(tag: str, sources: list[dict]) -> list[str]:
    out = [f"  <{tag}>"]
    for s in sources:
        out.append("    <source " + _attrs(n=s["n"], docid=s["docid"], collection=s["collection"], path=s["path"],
                                           line=s["start_line"], end_line=s["end_line"], score=s["score"],
                                           uri=s["uri"]) + f">{_xml_escape(s['title'])}</source>")
    out.append(f"  </{tag}>")
    return out


def _ask_xml(result: dict) -> str:
    out = [f"<ask {_attrs(query=result['query'], abstained=result['abstained'], model=result.get('model'))}>"]
    if result["answer"] is not None:
        out.append(f"  <answer>{_xml_escape(result['answer'])}</answer>")
    if result["abstained"]:
        out.append(f"  <abstain_reason>{_xml_escape(result.get('abstain_reason') or '')}</abstain_reason>")
    out += _sources_xml("sources", result["sources"]) + _sources_xml("considered", result["considered"])
    out.extend(_xml_footer(result["retrieval"]))
    out.extend(_query_explain_xml(result["retrieval"], "  "))
    out.append("</ask>")
    return "\n".join(out)


def ask_text(result: dict, fmt: str, color: bool, null: bool = False) -> str:
    """An `ask` result in one of gnoctl.args.FORMATS; the line and table formats list the sources."""
    if fmt == "json":
        return fastjson.dumps(result, indent=2)
    if fmt == "jsonl":
        return json_lines(_ask_shown(result)[1])
    if fmt == "files":  # what the answer cites (nothing when it abstains), or the selection with --no-answer
        cited = result["answer"] is not None or result["abstained"]
        return file_list(dict.fromkeys(s["abs_path"] for s in result["sources" if cited else "considered"]), null)
    if fmt == "vimgrep":
        return "\n".join(vimgrep_line(s["abs_path"], s["start_line"], s["title"], "")
                         for s in _ask_shown(result)[1])
    if fmt == "csv":
        return _ask_csv(result)
    if fmt == "md":
        return _ask_md(result)
    if fmt == "xml":
        return _ask_xml(result)
    return "\n".join(_ask_human(result, _color(color)))


def print_error(err, fmt: str) -> None:
    """`--json` keeps the error shape {"error": {code, message, details}} on stdout."""
    if fmt == "json":
        print(fastjson.dumps({"error": {"code": err.name, "message": err.message, "details": err.details}},
                             indent=2))
    else:
        print(f"gnoctl: {err.message}", file=sys.stderr)


class ProgressLine:
    """A single self-rewriting status line on a terminal's stderr; silent elsewhere."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._shown = False

    def __call__(self, method: str, params: dict | None) -> None:
        if not self.enabled or method != "progress" or not params:
            return
        total, done = params.get("total", 0), params.get("done", 0)
        pct = f"{100 * done // total:3d}%" if total else "   "
        phase = params.get("phase", "")
        path = params.get("path", "")[-50:]
        where = f"{params['collection']}: " if params.get("collection") else ""
        sys.stderr.write(f"\r\033[K{where}{phase} {pct} {done}/{total} {path}")
        sys.stderr.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self._shown = False


def _cell_width(ch: str) -> int:
    import unicodedata

    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


class AnswerStream:
    """`ask`'s answer as it is generated, on a terminal's stderr; silent elsewhere.

    The streamed text is the generator's raw output: its citations are renumbered
    only in the final result. So the preview is erased once the answer is complete
    and the final text is printed in its place (when it has scrolled off the screen
    it cannot be erased; it stays, followed by the final text).
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._rows = 0  # terminal rows below the first one that the preview reaches
        self._col = 0
        self._shown = False
        try:
            self._cols, self._lines = os.get_terminal_size(sys.stderr.fileno()) if enabled else (80, 24)
        except (OSError, ValueError):
            self._cols, self._lines = 80, 24
        if self._cols <= 0 or self._lines <= 0:  # a pseudo-terminal nobody sized
            self._cols, self._lines = 80, 24

    def __call__(self, method: str, params: dict | None) -> None:
        if not self.enabled or method != "token" or not params or not params.get("text"):
            return
        text = _clean(params["text"]).replace("\t", "    ")
        for ch in text:
            if ch == "\n":
                self._rows, self._col = self._rows + 1, 0
                continue
            w = _cell_width(ch)
            if self._col + w > self._cols:  # wraps before this character
                self._rows, self._col = self._rows + 1, 0
            self._col += w
        if not self._shown:
            sys.stderr.write("\033[2m")
        sys.stderr.write(text)
        sys.stderr.flush()
        self._shown = True

    def clear(self) -> None:
        if not self._shown:
            return
        if self._rows < self._lines - 1:
            up = f"\033[{self._rows}A" if self._rows else ""
            sys.stderr.write(f"\033[0m\r{up}\033[J")
        else:
            sys.stderr.write("\033[0m\n\n")
        sys.stderr.flush()
        self._shown = False
        self._rows = self._col = 0
