"""gnoctl's renderers for `query` and `ask` results, in all six formats.

The inputs are built from the protocol Structs (gnod.protocol) and encoded as the
daemon encodes them, so a renderer that reads a field the protocol does not have
fails here. Titles, paths and texts carry the characters each format must escape.
The daemon side of both methods has its own end-to-end tests; here a fake daemon on a
real socket checks what gnoctl sends and how it streams `token` notifications.
"""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import struct
import sys
import threading
import xml.etree.ElementTree as ET

import msgspec
import pytest
import typer.main

from gnoctl import cli, commands
from gnoctl.args import FORMATS
from gnoctl.main import main
from gnoctl.output.answer import AnswerStream, ask_text
from gnoctl.output.hits import query_text
from gnod import protocol as P
from gnod.search.constants import PIPELINE

ESC = "\x1b"
TITLE = 'Deploy | "billing" <&> *now*'
ODD_PATH = 'we`ird,|path".md'
ODD_TITLE = "Line one\nline two _x_ [l](u) \x1b[31mred"


def _explain(position: int, rerank: float | None, *, floors: list[str], cached: bool) -> P.HitExplain:
    c1 = P.ListContribution(
        list=0,
        source="bm25",
        kind="original",
        rank=position,
        score=0.93,
        weight=2.0,
        standard=2.5 / position,
        contribution=2.0 * 2.5 / position / 3.4,
    )
    c2 = P.ListContribution(
        list=2,
        source="vector",
        kind="hyde",
        rank=position + 1,
        score=0.61,
        weight=1.4,
        standard=1.5,
        contribution=1.4 * 1.5 / 3.4,
    )
    return P.HitExplain(
        fused_position=position,
        contributions=[c1, c2],
        fusion=c1.contribution + c2.contribution,
        fusion_norm=1.0 if position == 1 else 0.25,
        rerank=rerank,
        keyword_floor=0.15,
        synthetic=None if rerank is not None else 0.42,
        fusion_weight=0.75,
        rerank_weight=0.25,
        floors=floors,
        rerank_input=P.RerankInput(chunks=[0, 2], chars=1840, cached=cached),
    )


def make_query(*, explain: bool = True, hits: bool = True) -> dict:
    """A realistic QueryResult (as the daemon encodes it), with escaping hazards."""
    found = (
        [
            P.QueryHit(
                docid=1,
                uri="gno://docs/guides/deploy.md",
                collection="docs",
                path="guides/deploy.md",
                abs_path="/srv/docs/guides/deploy.md",
                title=TITLE,
                language="english",
                score=0.912,
                sources=["bm25", "vector"],
                preview=P.Preview(
                    text="# Deployment\n\nRun the release pipeline.\n\nWatch the dashboards.\nRoll back.\n",
                    start_line=1,
                    end_line=7,
                    complete=True,
                ),
                explain=_explain(1, 0.95, floors=[], cached=False) if explain else None,
            ),
            P.QueryHit(
                docid=2,
                uri=f"gno://notes/{ODD_PATH}",
                collection="notes",
                path=ODD_PATH,
                abs_path=f"/srv/notes/{ODD_PATH}",
                title=ODD_TITLE,
                language=None,
                score=0.4,
                sources=["vector"],
                preview=P.Preview(
                    text='a, "quoted", cell\nsecond\x07 line',
                    start_line=12,
                    end_line=13,
                    complete=False,
                    truncated=True,
                ),
                explain=_explain(2, None, floors=["keyword"], cached=True) if explain else None,
            ),
        ]
        if hits
        else []
    )
    query = 'deploy "billing" <prod> & more'
    lists = [
        P.ListInfo(source="bm25", kind="original", query=query, hits=12, weight=2.0, floor=0.08, deviation=0.31),
        P.ListInfo(source="vector", kind="original", query=query, hits=20, weight=2.0, floor=0.52, deviation=0.04),
        P.ListInfo(
            source="vector",
            kind="hyde",
            query="To deploy billing, run the release pipeline.",
            hits=20,
            weight=1.4,
            floor=0.55,
            deviation=0.03,
        ),
    ]
    result = P.QueryResult(
        query=query,
        mode="standard",
        hits=found,
        counts=P.QueryCounts(candidates=40, pool=32, reranked=20, returned=len(found)),
        distribution=P.Distribution(
            collections={"docs": 1, "notes": 1} if hits else {}, tags={"ops": 2, "release": 1} if hits else {}
        ),
        expansion=P.ExpansionInfo(
            lexical=["billing deploy", "release pipeline"],
            semantic=["ship the billing app"],
            hyde="To deploy billing, run the release pipeline.",
            model="hf:org/repo/gen.gguf",
            prompt="en",
            prompt_version="expand-v2",
            cached=True,
        ),
        degraded=["rerank: the rerank model is not downloaded (gnoctl models pull rerank)"],
        notes=["limit capped at 32 in standard mode"],
        took_ms=123.4,
        explain=P.QueryExplain(
            constants=PIPELINE.explain(),
            prompt_version="expand-v2",
            stages=[
                P.Stage(name="strong_signal", ms=0.4),
                P.Stage(name="expand", ms=0.0, skipped="cached"),
                P.Stage(name="rerank", ms=0.0, skipped="no rerank model"),
            ],
            lists=lists,
            strong_signal={"top": 0.71, "gap": 0.05, "strong": False},
            models={"embed": "hf:org/repo/embed.gguf", "generate": "hf:org/repo/gen.gguf"},
        )
        if explain
        else None,
    )
    return msgspec.to_builtins(result)


SOURCES = [
    P.Source(
        n=1,
        docid=1,
        uri="gno://docs/guides/deploy.md",
        title=TITLE,
        path="guides/deploy.md",
        abs_path="/srv/docs/guides/deploy.md",
        collection="docs",
        start_line=3,
        end_line=5,
        score=0.91,
    ),
    P.Source(
        n=2,
        docid=2,
        uri=f"gno://notes/{ODD_PATH}",
        title=ODD_TITLE,
        path=ODD_PATH,
        abs_path=f"/srv/notes/{ODD_PATH}",
        collection="notes",
        start_line=12,
        end_line=13,
        score=0.4,
    ),
    P.Source(
        n=3,
        docid=1,
        uri="gno://docs/guides/deploy.md",
        title=TITLE,
        path="guides/deploy.md",
        abs_path="/srv/docs/guides/deploy.md",
        collection="docs",
        start_line=6,
        end_line=7,
        score=0.3,
    ),
]
ANSWER = "Run the release pipeline [1], then watch the <dashboards> & roll back [2][3]."


def make_ask(*, explain: bool = False, **overrides) -> dict:
    considered = [msgspec.structs.replace(s, n=n) for n, s in zip((2, 1, 3), SOURCES)]
    fields = dict(
        query='How do I "deploy" <billing>?',
        answer=ANSWER,
        abstained=False,
        abstain_reason=None,
        sources=SOURCES,
        considered=considered,
        model="hf:org/repo/gen.gguf",
        retrieval=msgspec.convert(make_query(explain=explain), P.QueryResult),
        took_ms=2345.0,
    )
    fields.update(overrides)
    return msgspec.to_builtins(P.AskResult(**fields))


def abstained() -> dict:
    return make_ask(
        answer=None, abstained=True, abstain_reason="The sources do not say how to deploy billing.", sources=[]
    )


def no_answer() -> dict:
    return make_ask(answer=None, sources=[], model=None)


# --- every format, every shape ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "result", [make_query(), make_query(explain=False), make_query(hits=False)], ids=["explain", "plain", "empty"]
)
def test_query_renders_in_every_format(fmt, result):
    out = query_text(result, fmt, color=False)
    assert isinstance(out, str)
    if fmt != "csv":  # CSV is data: it keeps every character (test_query_csv_round_trips_awkward_text)
        assert ESC not in out  # no colour off a terminal, and no escape sequence from a document
    if result["hits"]:
        assert out


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "make",
    [make_ask, abstained, no_answer, lambda: make_ask(explain=True)],
    ids=["answer", "abstained", "no-answer", "explain"],
)
def test_ask_renders_in_every_format(fmt, make):
    out = ask_text(make(), fmt, color=False)
    assert isinstance(out, str) and (ESC not in out or fmt == "csv")


def test_json_is_the_result_itself():
    for result, render in ((make_query(), query_text), (make_ask(explain=True), ask_text)):
        assert json.loads(render(result, "json", False)) == result


# --- query --------------------------------------------------------------------------------------


def test_query_human():
    out = query_text(make_query(explain=False), "human", color=False)
    lines = out.splitlines()
    assert lines[0] == f" 1. 0.91  docs/guides/deploy.md:1  {TITLE}  [whole document]"
    assert lines[1:4] == ["      # Deployment", "      Run the release pipeline.", "      Watch the dashboards."]
    assert lines[4] == f" 2. 0.40  notes/{ODD_PATH}:12  Line one line two _x_ [l](u) [31mred"  # one line, no ESC
    assert lines[5:7] == ['      a, "quoted", cell', "      second line"]
    tail = lines[7:]
    assert tail == [
        "Reranked 20 of 32, returned 2 (40 candidates, 123 ms)",
        "by collection: docs 1, notes 1",
        "by tag: ops 2, release 1",
        "degraded: rerank: the rerank model is not downloaded (gnoctl models pull rerank)",
        "note: limit capped at 32 in standard mode",
    ]
    assert "explain" not in out and "fused #" not in out


def test_query_human_colours_only_on_a_terminal():
    out = query_text(make_query(explain=False), "human", color=True)
    assert f"{ESC}[33m0.91{ESC}[0m" in out
    assert f"{ESC}[31m" not in out  # the title's own escape sequence is gone


def test_query_human_says_when_nothing_was_reranked():
    result = make_query(explain=False)
    result["counts"] = {**result["counts"], "reranked": 0}
    out = query_text(result, "human", color=False).splitlines()
    assert "Returned 2 of 32, none reranked (40 candidates, 123 ms)" in out
    assert not any(line.startswith("Reranked") for line in out)


def test_query_human_without_hits():
    out = query_text(make_query(hits=False, explain=False), "human", color=False).splitlines()
    assert out[0] == "No results."
    assert out[1] == "Reranked 20 of 32, returned 0 (40 candidates, 123 ms)"
    assert out[-1].startswith("note: ")


def test_query_human_explain():
    out = query_text(make_query(), "human", color=False)
    first = out.split(" 2. ")[0]
    # Per hit: every list's vote (with the list's query), fusion, reranker, blend, floors, reranker input.
    assert "      found by bm25, vector" in first
    assert "      fused #1: 2.0882, normalized 1" in first
    assert '        bm25:original "deploy "billing" <prod> & more" #1/0.93, standard 2.5 ×2 → 1.4706' in first
    assert (
        '        vector:hyde "To deploy billing, run the release pipeline." #2/0.61, standard 1.5 ×1.4 → 0.6176'
        in first
    )
    assert "      rerank 0.95, keyword floor 0.15, synthetic -, blend 0.75 fusion + 0.25 rerank" in first
    assert "      rerank input: chunks 0, 2, 1840 chars" in first
    second = out.split(" 2. ")[1].split("Reranked")[0]
    assert "rerank -, keyword floor 0.15, synthetic 0.42" in second
    assert "floors applied: keyword" in second and "1840 chars, cached" in second
    # Per query, after the results and the counts.
    per_query = out.split("\nexplain\n")[1]
    assert out.index("Reranked 20 of 32") < out.index("\nexplain\n")
    for line in [
        "  expansion: hf:org/repo/gen.gguf, prompt en expand-v2, cached",
        "    lex: billing deploy | release pipeline",
        "    vec: ship the billing app",
        "    hyde: To deploy billing, run the release pipeline.",
        "  strong signal: top 0.71, gap 0.05, strong false",
        "    strong_signal  0.4 ms",
        "    expand         skipped: cached",
        "    rerank         skipped: no rerank model",
        '    [2] vector:hyde "To deploy billing, run the release pipeline." 20 hits ×1.4, floor 0.55, deviation 0.03',
        "  models: embed hf:org/repo/embed.gguf, generate hf:org/repo/gen.gguf",
        "  prompt version: expand-v2",
        "    score_floor 0.03",
    ]:
        assert line in per_query.splitlines(), line
    fusion = next(ln for ln in per_query.splitlines() if ln.startswith("    fusion "))
    assert json.loads(fusion.split(" ", 5)[-1])["weights"]["hyde"] == PIPELINE.fusion.weights.hyde  # compact JSON


def test_a_passage_s_tabs_are_spaces_to_its_own_tab_stops():
    """A passage is printed indented: its tabs, left as they were, stopped where the
    terminal's stops are, and the kernel's tab-aligned code came out askew. Each is
    the spaces to its line's next stop, and its matched words stay marked."""
    from gnoctl.output.hits import search_text

    text = "#define READ_ONCE(x)\t\\\n\tassert(x);\t\\"
    hit = {
        "collection": "k",
        "path": "rwonce.h",
        "abs_path": "/k/rwonce.h",
        "title": "rwonce",
        "score": 1.0,
        "snippet": {"line": 47, "text": text, "matches": [[8, 17]], "offset": 0, "before": 0},
    }
    shown = search_text({"query": "READ_ONCE", "hits": [hit]}, "human", color=False).splitlines()
    assert shown[1:3] == ["      #define READ_ONCE(x)    \\", "              assert(x);      \\"]
    bold = search_text({"query": "READ_ONCE", "hits": [hit]}, "human", color=True).splitlines()[1]
    assert "#define \033[1mREAD_ONCE\033[22m(x)    \\" in bold


def test_a_file_holding_several_hits_is_listed_once():
    """Two mails of one mailbox (or members of one zip) printed its path twice with
    --files, for xargs to open twice."""
    from gnoctl.output.hits import search_text

    box = "/srv/mail/inbox.mbox"
    result = {"query": "q", "hits": [{"abs_path": box}, {"abs_path": "/srv/a.md"}, {"abs_path": box}]}
    assert search_text(result, "files", color=False).splitlines() == [box, "/srv/a.md"]
    assert search_text(result, "files", color=False, null=True) == f"{box}\0/srv/a.md\0"


def test_a_query_hits_lines_are_those_of_its_match_where_its_passage_starts_before():
    """`query Okapi` showed a mail's title, From and first line (`…2.eml:10`), its match on
    line 22 cut off below them."""
    text = (
        "# Expenses\n\nFrom: Ann\n\nThe taxi receipt is attached.\n\n| item | cost |\n| Taxi Okapi | 30 |\n| Tea | 2 |"
    )
    at = text.index("Okapi")
    hit = {
        "collection": "mail", "path": "inbox.mbox!/2.eml", "title": "Expenses", "score": 1.0, "sources": ["bm25"],
        "preview": {"text": text, "start_line": 10, "end_line": 18, "complete": False, "matches": [[at, at + 5]]},
    }  # fmt: skip
    result = {**make_query(hits=False), "hits": [hit]}
    out = query_text(result, "human", False).splitlines()
    assert "mail/inbox.mbox!/2.eml:17" in out[0]
    assert out[1].strip() == "| Taxi Okapi | 30 |" and out[2].strip() == "| Tea | 2 |"
    near = {**hit, "preview": {**hit["preview"], "matches": [[2, 10]]}}  # in its first lines: as it was
    assert "2.eml:10" in query_text({**result, "hits": [near]}, "human", False).splitlines()[0]


def test_multi_get_heads_a_document_shown_in_part_with_its_lines(capsys):
    """A `:copy_process` reference showed `===== tree/kernel/fork.c — fork`, not which
    lines: those of the definition."""
    from gnoctl.output.common import View
    from gnoctl.output.documents import write_documents

    def doc(first: int, last: int) -> dict:
        return {"collection": "tree", "path": "kernel/fork.c", "title": "fork", "content": "x\n",
                "from_line": first, "to_line": last, "total_lines": 3421}  # fmt: skip

    res = {"documents": [doc(2096, 2664), doc(1, 3421)], "missing": [], "truncated": False}
    write_documents(res, "human", View(pager=False), 1 << 20)
    heads = [line for line in capsys.readouterr().out.splitlines() if line.startswith("=====")]
    assert heads == ["===== tree/kernel/fork.c:2096-2664 — fork", "===== tree/kernel/fork.c — fork"]


def test_query_files():
    assert query_text(make_query(), "files", False).splitlines() == [
        "/srv/docs/guides/deploy.md",
        f"/srv/notes/{ODD_PATH}",
    ]
    assert query_text(make_query(hits=False), "files", False) == ""


def test_query_csv_round_trips_awkward_text():
    result = make_query()
    rows = list(csv.reader(io.StringIO(query_text(result, "csv", False))))
    assert rows[0] == [
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
        "fusion",
        "fusion_norm",
        "rerank",
        "keyword_floor",
        "synthetic",
    ]
    assert len(rows) == 3 and all(len(r) == len(rows[0]) for r in rows)
    second = dict(zip(rows[0], rows[2]))
    assert second["path"] == ODD_PATH and second["title"] == ODD_TITLE  # commas, quotes, newlines intact
    assert second["preview"] == result["hits"][1]["preview"]["text"]
    assert second["abs_path"] == result["hits"][1]["abs_path"]
    assert (second["rank"], second["score"], second["line"], second["complete"]) == ("2", "0.4000", "12", "false")
    assert (second["rerank"], second["synthetic"]) == ("", "0.4200")
    plain = list(csv.reader(io.StringIO(query_text(make_query(explain=False), "csv", False))))
    assert "fusion" not in plain[0] and len(plain[0]) == 12


def _md_cells(row: str) -> list[str]:
    """Cells of a GFM table row: split on pipes that are not backslash-escaped."""
    cells, cur, i = [], "", 1
    while i < len(row) - 1:
        if row[i] == "\\":
            cur += row[i : i + 2]
            i += 2
            continue
        if row[i] == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += row[i]
        i += 1
    return cells + [cur.strip()]


def test_query_md_escapes_table_cells():
    out = query_text(make_query(explain=False), "md", False)
    lines = out.splitlines()
    assert lines[:2] == ["| # | score | document | title | found by |", "|---|---|---|---|---|"]
    first, second = _md_cells(lines[2]), _md_cells(lines[3])
    assert len(first) == len(second) == 5
    assert first[:3] == ["1", "0.912", "`docs/guides/deploy.md:1`"]
    assert first[3] == r'Deploy \| "billing" \<&\> \*now\* *(whole document)*'
    assert second[2] == '``we`ird,\\|path".md:12``'.replace("we", "notes/we")  # backtick inside: longer fence
    assert second[3] == r"Line one line two \_x\_ \[l\](u) \[31mred"
    assert second[4] == "vector"
    assert "Reranked 20 of 32, returned 2 (40 candidates, 123 ms)" in lines
    assert "By tag: ops 2, release 1" in lines
    assert "- degraded: rerank: the rerank model is not downloaded (gnoctl models pull rerank)" in lines
    assert "## Explain" not in out


def test_query_md_explain():
    out = query_text(make_query(), "md", False)
    assert "## Explain" in out
    assert "1. `docs/guides/deploy.md:1`" in out
    assert "    - floors applied: keyword" in out
    block = out.split("```text\n")[1].split("\n```")[0]
    assert "prompt version: expand-v2" in block and "stages:" in block


def test_query_xml_escapes_and_explains():
    result = make_query()
    root = ET.fromstring(query_text(result, "xml", False))
    assert root.tag == "results" and root.get("query") == result["query"] and root.get("mode") == "standard"
    hits = root.findall("result")
    assert int(root.get("count")) == len(hits) == 2
    assert hits[0].find("title").text == TITLE
    assert hits[1].get("path") == ODD_PATH and hits[1].get("sources") == "vector"
    assert hits[1].find("title").text == "Line one\nline two _x_ [l](u) [31mred"  # control characters dropped
    preview = hits[1].find("preview")
    assert preview.text == 'a, "quoted", cell\nsecond line'
    assert (preview.get("line"), preview.get("complete"), preview.get("truncated")) == ("12", "false", "true")
    ex = hits[1].find("explain")
    assert ex.get("rerank") is None and ex.get("synthetic") == "0.4200" and ex.get("fused_position") == "2"
    contributions = ex.findall("contribution")
    assert [(c.get("list"), c.get("source"), c.get("kind"), c.get("rank")) for c in contributions] == [
        ("0", "bm25", "original", "2"),
        ("2", "vector", "hyde", "3"),
    ]
    assert (contributions[1].get("score"), contributions[1].get("standard")) == ("0.6100", "1.5000")
    assert [f.text for f in ex.findall("floor")] == ["keyword"]
    assert ex.find("rerank_input").attrib == {"chunks": "0 2", "chars": "1840", "cached": "true"}
    assert root.find("counts").attrib == {
        "candidates": "40",
        "pool": "32",
        "reranked": "20",
        "returned": "2",
        "took_ms": "123.4000",
    }
    assert {t.get("name"): t.get("count") for t in root.find("distribution").findall("tag")} == {
        "ops": "2",
        "release": "1",
    }
    assert [d.text for d in root.findall("degraded")] == result["degraded"]
    assert [n.text for n in root.findall("note")] == result["notes"]
    assert [x.text for x in root.find("expansion").findall("lexical")] == ["billing deploy", "release pipeline"]
    qx = root.find("explain")
    assert [(s.get("name"), s.get("skipped")) for s in qx.findall("stage")] == [
        ("strong_signal", None),
        ("expand", "cached"),
        ("rerank", "no rerank model"),
    ]
    assert qx.findall("list")[0].text == result["query"]
    assert json.loads(qx.find("constants").text) == result["explain"]["constants"]
    assert json.loads(qx.find("strong_signal").text) == result["explain"]["strong_signal"]


# --- ask ----------------------------------------------------------------------------------------


def test_ask_human():
    lines = ask_text(make_ask(), "human", color=False).splitlines()
    assert lines[0] == ANSWER
    assert lines[1:6] == [
        "",
        "Sources:",
        f"  [1] {TITLE} — docs/guides/deploy.md:3",
        f"  [2] Line one line two _x_ [l](u) [31mred — notes/{ODD_PATH}:12",
        f"  [3] {TITLE} — docs/guides/deploy.md:6",
    ]
    assert lines[6].startswith("degraded: ") and lines[7].startswith("note: ")


def test_ask_human_abstains_clearly():
    lines = ask_text(abstained(), "human", color=False).splitlines()
    assert lines[0] == "No answer: The sources do not say how to deploy billing."
    assert lines[1] == "Sources considered:"
    assert lines[2] == f"  [2] {TITLE} — docs/guides/deploy.md:3"


def test_ask_human_no_answer_lists_considered_sources():
    lines = ask_text(no_answer(), "human", color=False).splitlines()
    assert lines[0] == "Sources (no answer requested):"
    assert [ln.split("]")[0] for ln in lines[1:4]] == ["  [2", "  [1", "  [3"]


def test_ask_human_explain_shows_the_retrieval():
    out = ask_text(make_ask(explain=True), "human", color=False)
    assert "\nRetrieval:\n 1. 0.91  docs/guides/deploy.md:1" in out
    assert "fused #1: " in out and "\nexplain\n" in out
    assert out.count("degraded: ") == 1


def test_ask_files_are_the_cited_documents():
    assert ask_text(make_ask(), "files", False).splitlines() == [
        "/srv/docs/guides/deploy.md",
        f"/srv/notes/{ODD_PATH}",
    ]  # each document once
    assert ask_text(abstained(), "files", False) == ""  # nothing is cited
    no = no_answer()
    no["considered"] = no["considered"][1:]
    assert ask_text(no, "files", False).splitlines() == [
        f"/srv/notes/{ODD_PATH}",
        "/srv/docs/guides/deploy.md",
    ]  # --no-answer: the selection


def test_ask_csv():
    rows = list(csv.reader(io.StringIO(ask_text(make_ask(), "csv", False))))
    assert rows[0] == ["n", "score", "collection", "path", "line", "end_line", "title", "abs_path", "kind"]
    assert [r[0] for r in rows[1:]] == ["1", "2", "3"]
    assert rows[2][3] == ODD_PATH and rows[2][6] == ODD_TITLE and rows[2][8] == "cited"
    rows = list(csv.reader(io.StringIO(ask_text(no_answer(), "csv", False))))
    assert {r[8] for r in rows[1:]} == {"considered"}


def test_ask_md():
    lines = ask_text(make_ask(), "md", False).splitlines()
    assert lines[0] == r'# How do I "deploy" \<billing\>?'
    assert lines[2] == ANSWER  # the answer is Markdown already
    assert lines[4] == "## Sources"
    rows = [_md_cells(ln) for ln in lines[6:] if ln.startswith("| ") and not ln.startswith("| #")]
    assert [r[0] for r in rows] == ["1", "2", "3"] and all(len(r) == 4 for r in rows)
    assert rows[0][2] == r'Deploy \| "billing" \<&\> \*now\*'
    abst = ask_text(abstained(), "md", False)
    assert "> **No answer:** The sources do not say how to deploy billing." in abst
    assert "## Sources considered" in abst


def test_ask_xml():
    result = make_ask()
    root = ET.fromstring(ask_text(result, "xml", False))
    assert root.tag == "ask" and root.get("query") == result["query"] and root.get("abstained") == "false"
    assert root.find("answer").text == ANSWER
    cited = root.find("sources").findall("source")
    assert [s.get("n") for s in cited] == ["1", "2", "3"]
    assert cited[1].get("path") == ODD_PATH and cited[1].text == "Line one\nline two _x_ [l](u) [31mred"
    assert cited[0].text == TITLE and cited[0].get("line") == "3"
    assert [s.get("n") for s in root.find("considered").findall("source")] == ["2", "1", "3"]
    root = ET.fromstring(ask_text(abstained(), "xml", False))
    assert root.get("abstained") == "true" and root.find("answer") is None
    assert root.find("abstain_reason").text == "The sources do not say how to deploy billing."
    assert root.find("sources").findall("source") == []


# --- the streamed answer ------------------------------------------------------------------------


class FakeTerm(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_answer_stream_is_erased_when_done(monkeypatch):
    term = FakeTerm()
    monkeypatch.setattr(sys, "stderr", term)
    stream = AnswerStream(True)
    stream._cols, stream._lines = 10, 24
    stream("progress", {"done": 1})  # not a token: ignored
    for text in ("Run the [", "2] pipe", "line\nnow\x1b[2J", "日本語です"):
        stream("token", {"id": 1, "text": text})
    shown = term.getvalue()
    assert "Run the [2] pipeline\nnow[2J" in shown and "\x1b[2J" not in shown  # control characters dropped
    # "Run the [2" (10) | "] pipeline" (10) | "now[2J日本" | "語です" (6 cells): the cursor is 3 rows down.
    stream.clear()
    assert term.getvalue()[len(shown) :] == "\x1b[0m\r\x1b[3A\x1b[J"
    stream.clear()  # once only
    assert term.getvalue().endswith("\x1b[J")


def test_answer_stream_too_tall_to_erase_is_kept(monkeypatch):
    term = FakeTerm()
    monkeypatch.setattr(sys, "stderr", term)
    stream = AnswerStream(True)
    stream._cols, stream._lines = 80, 5
    stream("token", {"id": 1, "text": "a\nb\nc\nd\ne\n"})
    stream.clear()
    assert term.getvalue().endswith("e\n\x1b[0m\n\n")


def test_answer_stream_disabled_writes_nothing(monkeypatch):
    term = FakeTerm()
    monkeypatch.setattr(sys, "stderr", term)
    stream = AnswerStream(False)
    stream("token", {"id": 1, "text": "hello"})
    stream.clear()
    assert term.getvalue() == ""


# --- gnoctl query / ask against a fake daemon ---------------------------------------------------

HEADER = struct.Struct(">I")


class FakeDaemon:
    """Answers every request on a real Unix socket with a canned result, after `tokens`."""

    def __init__(self, path: str, result: dict, tokens: list[str] = ()) -> None:
        self.result, self.tokens, self.requests = result, list(tokens), []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _recv(self, conn, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            part = conn.recv(n - len(buf))
            if not part:
                raise EOFError
            buf += part
        return buf

    def _send(self, conn, msg: dict) -> None:
        body = json.dumps(msg).encode()
        conn.sendall(HEADER.pack(len(body)) + body)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                try:
                    while True:
                        (size,) = HEADER.unpack(self._recv(conn, HEADER.size))
                        req = json.loads(self._recv(conn, size))
                        self.requests.append(req)
                        for text in self.tokens if req["params"].get("stream") else ():
                            self._send(
                                conn, {"jsonrpc": "2.0", "method": "token", "params": {"id": req["id"], "text": text}}
                            )
                        self._send(conn, {"jsonrpc": "2.0", "id": req["id"], "result": self.result})
                except (EOFError, OSError):
                    continue

    def close(self) -> None:
        try:
            self.server.shutdown(socket.SHUT_RDWR)  # wakes the accept() of the serving thread
        except OSError:
            pass
        self.server.close()
        self.thread.join(5)


@pytest.fixture
def fake(monkeypatch, tmp_path_factory):
    home = str(tmp_path_factory.mktemp("h", numbered=True))
    if len(home) > 80:  # Unix socket paths are short
        import tempfile

        home = tempfile.mkdtemp(prefix="gno-", dir="/tmp")
    monkeypatch.setenv("GNO_HOME", home)
    monkeypatch.setenv("GNO_NO_AUTOSTART", "1")
    from gnod.paths import Paths

    paths = Paths.from_env()
    os.makedirs(os.path.dirname(paths.socket_path), mode=0o700, exist_ok=True)  # as gnod makes it: gnoctl checks
    daemons = []

    def start(result: dict, tokens: list[str] = ()) -> FakeDaemon:
        d = FakeDaemon(paths.socket_path, result, tokens)
        daemons.append(d)
        return d

    yield start
    for d in daemons:
        d.close()


def test_query_command_sends_every_option(fake, capsys):
    d = fake(make_query())
    argv = ["query", "deploy", "-staging", "-n", "7", "--mode", "deep", "--min-score", "0.25", "-c", "docs"]
    code = main([*argv, "--no-expand", "--no-rerank", "--explain", "--json", "--wait", "2"])
    assert code == 0
    assert json.loads(capsys.readouterr().out) == make_query()
    req = d.requests[0]
    assert req["method"] == "query"
    assert req["params"] == {
        "query": "deploy -staging",
        "limit": 7,
        "mode": "deep",
        "min_score": 0.25,
        "collections": ["docs"],
        "expand": False,
        "rerank": False,
        "explain": True,
        "wait_s": 2.0,
    }
    msgspec.convert(req["params"], P.QueryParams)  # the daemon accepts it


def test_ask_command_streams_tokens_then_prints_the_final_answer(fake, capsys, monkeypatch):
    d = fake(make_ask(), tokens=["Run the release pipeline ", "[2] …"])
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code = commands.ask({"query": "how do I deploy?", "sources": 3, "max_tokens": 128}, "human")
    assert code == 0
    out, err = capsys.readouterr()
    assert "Run the release pipeline [2] …" in err and err.endswith("\x1b[J")  # streamed, then erased
    assert out.startswith(ANSWER + "\n\nSources:\n  [1] ")
    params = d.requests[0]["params"]
    assert params["stream"] is True and params["sources"] == 3 and params["max_tokens"] == 128
    msgspec.convert(params, P.AskParams)


def test_ask_command_does_not_stream_json_or_no_answer(fake, capsys, monkeypatch):
    d = fake(no_answer(), tokens=["never"])
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert commands.ask({"query": "q", "collections": ["docs"], "answer": False}, "json") == 0
    assert commands.ask({"query": "q", "collections": ["docs"], "answer": False}, "files") == 0
    out, err = capsys.readouterr()
    assert err == "" and "never" not in out
    assert [r["params"]["stream"] for r in d.requests] == [False, False]
    assert [r["params"]["answer"] for r in d.requests] == [False, False]


def test_empty_query_is_bad_input_without_a_daemon(capsys):
    assert commands.retrieve("query", {"query": "  "}, "json") == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "INVALID_QUERY"
    assert commands.ask({"query": ""}, "csv") == 2
    assert "empty question" in capsys.readouterr().err


# --- the typer commands -------------------------------------------------------------------------


def _command(name: str):
    return typer.main.get_command(cli.app).commands[name]


def _options(name: str) -> set[str]:
    return {o for p in _command(name).params if p.param_type_name == "option" for o in [*p.opts, *p.secondary_opts]}


def test_query_and_ask_options():
    fmt = {"--format", "--human", "--json", "--jsonl", "--files", "-0", "--null", "--csv", "--md", "--xml", "--color"}
    filters = {"--tag", "--since", "--until", "--path", "-t", "--type", "--lang", "--from"}
    assert (
        _options("query")
        == {
            "-n",
            "--limit",
            "--mode",
            "--min-score",
            "-c",
            "--collection",
            "--no-expand",
            "--no-rerank",
            "--explain",
            "--wait",
            "--no-autostart",
            "--vimgrep",
            "--no-pager",
            "--lex",
            "--vec",
            "--hyde",
            "-l",  # --files, as rg -l
        }
        | fmt
        | filters
    )
    assert (
        _options("ask")
        == {
            "-n",
            "--sources",
            "--mode",
            "-c",
            "--collection",
            "--no-expand",
            "--no-rerank",
            "--no-answer",
            "--max-tokens",
            "--explain",
            "--no-autostart",
            "--no-pager",
        }
        | fmt
        | filters
    )


@pytest.mark.parametrize(
    ("args", "options", "words"),
    [
        (["deploy", "-staging", "-n5", "-c", "docs"], ["-n5", "-c", "docs"], ["deploy", "-staging"]),
        (["-n", "3", "--mode", "deep", "a", "b"], ["-n", "3", "--mode", "deep"], ["a", "b"]),
        (["a", "--mode=deep", "--explain", "-xy", "-"], ["--mode=deep", "--explain"], ["a", "-xy", "-"]),
        (["a", "-x", "-l5", "-h"], ["-x", "-l5", "-h"], ["a"]),  # option-shaped: options (typer judges)
        (["a", "--", "-n", "--json"], [], ["a", "-n", "--json"]),
    ],
)
def test_split_words_keeps_negated_terms(args, options, words):
    assert cli.split_words(_command("query"), args) == (options, words)


def test_typer_parses_query_after_split():
    options, words = cli.split_words(_command("query"), ["deploy", "-staging", "-n5", "--mode", "deep", "--csv"])
    p = _command("query").make_context("query", [*options, "--", *words]).params
    assert (p["query"], p["limit"], p["mode"].value, p["csv"]) == (["deploy", "-staging"], 5, "deep", True)


@pytest.mark.parametrize("command", ["query", "ask"])
def test_help_explains_exit_codes(command, capsys):
    assert cli.run([command, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Exit: 0 ok" in out and "2 bad input" in out.replace("2 an error: ", "2 ") and "3 daemon not running" in out
    if command == "query":
        assert "1 no match" in out
        assert "INVALID_QUERY" in out and "deep" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["query", "x", "--mode", "wide"],
        ["ask", "x", "-n", "11"],
        ["query", "x", "--json", "--md"],
        ["ask", "x", "--max-tokens", "8"],
        ["query"],
    ],
)
def test_usage_errors_exit_2(argv, capsys):
    assert cli.run(argv) == 2


def test_vimgrep_line_points_at_the_first_query_word():
    from gnoctl.output.hits import vimgrep_line

    # A passage that starts with a blank line: the line number moves with the text shown.
    assert (
        vimgrep_line("/n/a b:c.md", 4, "\n  the Kéttle\r is hot\nmore", "kéttle -hot")
        == "/n/a b:c.md:5:7:  the Kéttle is hot"
    )
    # Columns count bytes, as vim does; a negated word is not pointed at.
    assert vimgrep_line("/a", 1, "é hot kettle", "-hot kettle") == "/a:1:8:é hot kettle"
    # A window cut out of a long line, 1,000 bytes in: its text follows the "…".
    assert vimgrep_line("/a", 3, "…a kettle…", "kettle", [[3, 9]], 1000) == "/a:3:1003:…a kettle…"
    # A line of the file that starts with "…" is no window.
    assert vimgrep_line("/a", 3, "…kettle", "kettle") == "/a:3:4:…kettle"
    # A definition whose name follows its type's line: the name's line and column.
    text = "static int __init\ndecay (char *str)\n{"
    assert vimgrep_line("/a", 482, text, "decay", [[18, 23]]) == "/a:483:1:decay (char *str)"
    assert vimgrep_line("/a", 9, "void\n  start_kernel(void)", "x", [[7, 19]]) == "/a:10:3:  start_kernel(void)"


def test_vimgrep_lists_a_files_passages_in_its_order():
    """A quickfix list is walked line after line: `--per-doc 3` gave a file's passages
    best first (383, 295, 417). The files keep their rank."""
    from gnoctl.output.hits import search_text

    def hit(path: str, lines: list[int]) -> dict:
        snippets = [{"line": n, "text": f"kettle at {n}", "matches": [[0, 6]]} for n in lines]
        return {"abs_path": path, "title": path, "snippet": snippets[0], "snippets": snippets}

    result = {"query": "kettle", "hits": [hit("/b.c", [383, 295, 417]), hit("/a.c", [9, 2])]}
    out = search_text(result, "vimgrep", color=False)
    assert [line.split(":")[:2] for line in out.splitlines()] == [
        ["/b.c", "295"],
        ["/b.c", "383"],
        ["/b.c", "417"],
        ["/a.c", "2"],
        ["/a.c", "9"],
    ]


def test_vimgrep_lists_each_matching_line_of_a_passage_once():
    """A passage of three lines matching on its first and third gave one place to jump
    to, the first: the third's match was left out of the quickfix list. A line matching
    twice is still one place (`rg --column`'s, as telescope lists them)."""
    from gnoctl.output.hits import search_text

    text = "the kettle boils\nno match here\n  and the Kettle hums, kettle"
    snippet = {"line": 7, "text": text, "matches": [[4, 10], [41, 47], [55, 61]]}
    result = {"query": "kettle", "hits": [{"abs_path": "/a b.md", "title": "a", "snippet": snippet}]}
    assert search_text(result, "vimgrep", color=False).splitlines() == [
        "/a b.md:7:5:the kettle boils",
        "/a b.md:9:11:  and the Kettle hums, kettle",
    ]


def test_ls_does_not_align_every_title_after_one_very_long_path(capsys):
    """One 200-character file name pushed every title to column 210."""
    from gnoctl.output.common import View
    from gnoctl.output.documents import write_listing

    def entry(path: str, title: str) -> dict:
        return {"collection": "docs", "path": path, "title": title, "abs_path": "/d/" + path}

    long = "notes/" + "x" * 200 + ".md"
    entries = [entry("notes/a.md", "A"), entry("notes/garden.md", "Garden"), entry(long, "Long"), entry("b.md", "B")]
    write_listing({"entries": entries, "total": 4}, "human", View(pager=False))
    lines = capsys.readouterr().out.splitlines()
    assert [line.index(t) for line, t in zip(lines, ["A", "Garden", "Long", "B"])] == [
        len("docs/notes/garden.md  "),
        len("docs/notes/garden.md  "),
        len("docs/" + long + "  "),
        len("docs/notes/garden.md  "),
    ]


def test_ls_aligns_titles_after_names_whose_characters_are_two_columns_wide(capsys):
    """`京都旅行.md` takes 11 columns, not 7: its title started 4 columns after those of
    the ASCII and Cyrillic names beside it."""
    from gnoctl.output.common import View, columns
    from gnoctl.output.documents import write_listing

    def entry(path: str, title: str) -> dict:
        return {"collection": "n", "path": path, "title": title, "abs_path": "/n/" + path}

    entries = [entry("ja/京都旅行.md", "京都"), entry("ja/読書.txt", "読書"), entry("ru/дача.md", "Дача")]
    write_listing({"entries": entries, "total": 3}, "human", View(pager=False))
    lines = capsys.readouterr().out.splitlines()
    assert [columns(line[: line.rindex("  ") + 2]) for line in lines] == [len("n/ja/") + 11 + 2] * 3


def test_an_index_runs_line_counts_files_apart_from_documents():
    """One note, a mailbox of two messages and a binary file said `3 files, 3 added, …
    1 failed`: the files found, and what became of more documents than that."""
    from gnoctl.output.collections import index_lines

    stats = {"collection": "cnt", "scanned": 3, "added": 3, "updated": 0, "unchanged": 0, "removed": 0}
    [line] = index_lines({"collections": [{**stats, "errors": 1, "seconds": 0.5, "other_kinds": {}}]})
    assert line == "cnt: 3 files; documents 3 added, 0 updated, 0 unchanged, 0 removed; 1 failed (0.50s)"


def test_one_picture_waiting_for_ocr_is_said_in_the_singular():
    """`status` said "1 pictures or scans waiting"."""
    from gnoctl.output.status import _ocr_line

    assert _ocr_line({"pending": 1, "reading": [], "read": 0}).startswith("1 picture or scan waiting ")
    assert _ocr_line({"pending": 2, "reading": [], "read": 0}).startswith("2 pictures or scans waiting ")


def test_an_index_runs_other_kinds_name_eight_and_count_the_rest():
    """A sysadmin's folder left out ten kinds: four were named and `…` hid the rest,
    `.log` among them."""
    from gnoctl.output.collections import run_lines

    kinds = {ext: 1 for ext in ("", ".gz", ".1", ".local", ".cnf", ".log", ".8", ".5", ".svg", ".pem")}
    stats = {"collection": "ops", "other_kinds": kinds, "output_folders": {}}
    (_, left_out) = run_lines({"collections": [stats]}, lambda s: s["collection"])
    assert left_out.startswith(
        "  not indexed: 10 files of other kinds (no extension 1, .gz 1, .1 1, .local 1, .cnf 1, .log 1, .8 1, .5 1,"
        " 2 more kinds); --also globs take them"
    ), left_out


def test_an_index_run_says_which_globs_are_anchored_at_a_folder_not_there():
    from gnoctl.output.collections import run_lines

    stats = {"collection": "ops", "other_kinds": {}, "unanchored": ["sites-available/*", "!/old/*"]}
    assert run_lines({"collections": [stats]}, lambda s: s["collection"])[1:] == [
        "  'sites-available/*' matches no file: a glob with a / inside is anchored at the collection's top, as in "
        ".gitignore, and no sites-available/ is there; '**/sites-available/*' matches at any depth",
        "  '!/old/*' matches no file: a glob with a / inside is anchored at the collection's top, as in "
        ".gitignore, and no old/ is there; '!**/old/*' matches at any depth",
    ]
