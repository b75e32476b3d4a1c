"""`ask`: the answer and its sources in every format, and the answer streamed to a
terminal while it is generated."""

from __future__ import annotations

import os
import sys

from gnoctl import fastjson
from gnoctl.output.common import (
    char_columns,
    clean,
    csv_text,
    file_list,
    json_lines,
    md,
    md_code,
    one_line,
    painter,
    xml_attrs,
    xml_escape,
)
from gnoctl.output.hits import footer_lines, md_footer, query_human, query_xml, vimgrep_line, xml_footer


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
        reason = clean(result.get("abstain_reason") or "the sources do not answer the question")
        lines.append(paint("1;33", f"No answer: {reason}"))
    elif result["answer"] is not None:
        lines.append(clean(result["answer"]).strip())
    if result["answer"] is not None:
        lines.append("")
    if shown:
        heading = (
            "Sources:"
            if kind == "cited"
            else ("Sources considered:" if result["abstained"] else "Sources (no answer requested):")
        )
        lines.append(paint("1", heading))
        for s in shown:
            lines.append(f"  [{s['n']}] {one_line(clean(s['title']))} — {paint('36', _source_location(s))}")
    elif not result["abstained"] or not result["considered"]:
        lines.append(paint("2", "No sources."))
    retrieval = result.get("retrieval") or {}
    if retrieval.get("explain"):  # the retrieval's own footer says what degraded
        lines += ["", paint("1", "Retrieval:"), *query_human(retrieval, paint)]
    else:
        lines.extend(footer_lines(retrieval, paint))
    return lines


def _ask_csv(result: dict) -> str:
    kind, shown = _ask_shown(result)
    rows = [["n", "score", "collection", "path", "line", "end_line", "title", "abs_path", "kind"]]
    rows += [
        [
            s["n"],
            f"{s['score']:.4f}",
            s["collection"],
            s["path"],
            s["start_line"],
            s["end_line"],
            s["title"],
            s["abs_path"],
            kind,
        ]
        for s in shown
    ]
    return csv_text(rows)


def _ask_md(result: dict) -> str:
    kind, shown = _ask_shown(result)
    out = [f"# {md(result['query'])}", ""]
    if result["abstained"]:
        out += [f"> **No answer:** {md(result.get('abstain_reason') or '')}", ""]
    elif result["answer"] is not None:
        out += [clean(result["answer"]).strip(), ""]
    title = {"cited": "Sources", "considered": "Sources considered"}[kind]
    out += [f"## {title}", "", "| # | document | title | score |", "|---|---|---|---|"]
    out += [f"| {s['n']} | {md_code(_source_location(s))} | {md(s['title'])} | {s['score']:.3f} |" for s in shown]
    return "\n".join(out + md_footer(result["retrieval"]))


def _sources_xml(tag: str, sources: list[dict]) -> list[str]:
    out = [f"  <{tag}>"]
    for s in sources:
        out.append(
            "    <source "
            + xml_attrs(
                n=s["n"],
                docid=s["docid"],
                collection=s["collection"],
                path=s["path"],
                line=s["start_line"],
                end_line=s["end_line"],
                score=s["score"],
                uri=s["uri"],
            )
            + f">{xml_escape(s['title'])}</source>"
        )
    out.append(f"  </{tag}>")
    return out


def _ask_xml(result: dict) -> str:
    out = [f"<ask {xml_attrs(query=result['query'], abstained=result['abstained'], model=result.get('model'))}>"]
    if result["answer"] is not None:
        out.append(f"  <answer>{xml_escape(result['answer'])}</answer>")
    if result["abstained"]:
        out.append(f"  <abstain_reason>{xml_escape(result.get('abstain_reason') or '')}</abstain_reason>")
    out += _sources_xml("sources", result["sources"]) + _sources_xml("considered", result["considered"])
    out.extend(xml_footer(result["retrieval"]))
    out.extend(query_xml(result["retrieval"], "  "))
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
        return file_list([s["abs_path"] for s in result["sources" if cited else "considered"]], null)
    if fmt == "vimgrep":
        return "\n".join(vimgrep_line(s["abs_path"], s["start_line"], s["title"], "") for s in _ask_shown(result)[1])
    if fmt == "csv":
        return _ask_csv(result)
    if fmt == "md":
        return _ask_md(result)
    if fmt == "xml":
        return _ask_xml(result)
    return "\n".join(_ask_human(result, painter(color)))


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
        text = clean(params["text"]).replace("\t", "    ")
        for ch in text:
            if ch == "\n":
                self._rows, self._col = self._rows + 1, 0
                continue
            w = char_columns(ch)
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
