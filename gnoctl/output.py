"""Render results as human text, JSON, file lists, CSV, Markdown or XML (stdlib only)."""

from __future__ import annotations

import sys

from gnoctl import fastjson

FORMATS = ("human", "json", "files", "csv", "md", "xml")


def _color(enabled: bool):
    def paint(code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if enabled else text

    return paint


def _xml_escape(s: str) -> str:
    s = "".join(ch for ch in s if ch in "\t\n\r" or ord(ch) >= 0x20)
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _location(hit: dict) -> str:
    snip = hit.get("snippet")
    loc = f"{hit['collection']}/{hit['path']}"
    return f"{loc}:{snip['line']}" if snip else loc


def search_text(result: dict, fmt: str, tty: bool) -> str:
    hits = result["hits"]
    if fmt == "json":
        return fastjson.dumps(result, indent=2)
    if fmt == "files":
        return "\n".join(h["abs_path"] for h in hits)
    if fmt == "csv":
        import csv
        import io

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["rank", "score", "collection", "path", "line", "title", "snippet"])
        for i, h in enumerate(hits, 1):
            snip = h.get("snippet") or {}
            w.writerow([i, f"{h['score']:.4f}", h["collection"], h["path"], snip.get("line", ""),
                        h["title"], snip.get("text", "")])
        return buf.getvalue().rstrip("\n")
    if fmt == "md":
        rows = ["| # | score | document | title |", "|---|---|---|---|"]
        for i, h in enumerate(hits, 1):
            title = h["title"].replace("|", "\\|")
            rows.append(f"| {i} | {h['score']:.3f} | `{_location(h)}` | {title} |")
        return "\n".join(rows)
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
        out.append("</results>")
        return "\n".join(out)
    paint = _color(tty)
    if not hits:
        return "No results." + (f" (ignored common words: {', '.join(result['dropped_stopwords'])})"
                                if result.get("dropped_stopwords") else "")
    lines = []
    for i, h in enumerate(hits, 1):
        rank, score = f"{i:>2}.", f"{h['score']:.2f}"
        lines.append(f"{paint('2', rank)} {paint('33', score)}  {paint('36', _location(h))}  "
                     f"{paint('1', h['title'])}")
        snip = h.get("snippet")
        if snip:
            for ln in snip["text"].splitlines()[:3]:
                lines.append(f"      {ln[:200]}")
    return "\n".join(lines)


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
