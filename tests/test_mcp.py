"""`gnoctl mcp` driven by the MCP SDK's own client over stdio, against a real gnod with
the real test models (MiniLM embed, tiny reranker, SmolLM2 generate)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import stat
import subprocess
import sys
import urllib.error
import urllib.request

import anyio
import jsonschema
import mcp_types as types
import msgspec
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from test_daemon_query import configure, models  # noqa: F401  (models is a fixture)
from test_daemon_vectors import write_topics

from conftest import _run_cli, children, cleanup_home, make_env, make_home, start_gnod, wait_until
from gnod import protocol as P

pytestmark = pytest.mark.timeout(300)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READ_TOOLS = {"search", "vsearch", "query", "ask", "similar", "get", "multi_get", "ls", "status"}
WRITE_TOOLS = {"collection_add", "collection_remove", "update", "embed"}


def bridge(env: dict, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "gnoctl.main", "mcp", *args], env=env, cwd=ROOT)


def run(coro_fn, *args):
    return asyncio.run(coro_fn(*args))


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory, models):  # noqa: F811
    home = make_home()
    env = make_env(home)
    configure(env, models)
    root = tmp_path_factory.mktemp("mcp")
    write_topics(root / "notes")
    d = start_gnod(env)
    try:
        d.result("collection.add", {"name": "notes", "path": str(root / "notes")})
        assert d.result("embed", {}, timeout=120)["pending"] == 0
        yield d
    finally:
        d.stop()
        cleanup_home(home)


def _daemon_limits(method: str) -> dict:
    with open(os.path.join(ROOT, "docs", "schemas", f"{method}.params.json")) as f:
        doc = json.load(f)
    return doc["$defs"][doc["$ref"].split("/")[-1]]["properties"]


def test_tools_list_schemas_are_valid_and_within_the_daemon_limits(hybrid):
    from gnoctl.mcp.tools import tools

    async def go():
        async with Client(bridge(hybrid.env)) as c:
            listed = (await c.list_tools()).tools
        async with Client(bridge(hybrid.env, "--enable-write")) as c:
            with_write = (await c.list_tools()).tools
        return listed, with_write

    listed, with_write = run(go)
    assert {t.name for t in listed} == READ_TOOLS
    assert {t.name for t in with_write} == READ_TOOLS | WRITE_TOOLS
    specs = tools(True)
    # An agent's host puts the tools in every prompt: their schemas of the results were
    # two thirds of 58,000 characters (14k tokens). structuredContent is the protocol's
    # result, docs/schemas/<method>.result.json.
    assert sum(len(t.model_dump_json(exclude_none=True)) for t in listed) < 25_000
    for t in with_write:
        jsonschema.Draft202012Validator.check_schema(t.input_schema)
        assert t.output_schema is None, t.name
        assert t.input_schema["additionalProperties"] is False and len(t.description) > 50, t.name
        # The Anthropic API refuses a tool whose schema has one of these at its top.
        assert not {"anyOf", "oneOf", "allOf"} & t.input_schema.keys(), t.name
        assert t.annotations.read_only_hint is (t.name in READ_TOOLS)
        daemon = _daemon_limits(specs[t.name].method)
        sent = specs[t.name].params({k: None for k in t.input_schema["properties"]})
        for key, prop in t.input_schema["properties"].items():
            target = "query" if key == "question" else key
            assert target in sent and target in daemon, (t.name, key)  # every argument reaches gnod
            for bound, tighter in (("maximum", min), ("maxLength", min), ("minimum", max), ("minLength", max)):
                if bound in daemon[target] and bound in prop:
                    assert tighter(prop[bound], daemon[target][bound]) == prop[bound], (t.name, key, bound)
            if "maxLength" in prop or "maximum" in prop or prop.get("type") == "array":
                assert "maxLength" in prop or "maximum" in prop or "maxItems" in prop, (t.name, key)


def test_agents_are_told_what_each_collection_holds(hybrid):
    hybrid.result("collection.describe", {"name": "notes", "description": "Pet care and cooking notes"})

    async def go():
        async with Client(bridge(hybrid.env), mode="legacy") as c:
            first = c.instructions, {t.name: t for t in (await c.list_tools()).tools}
            hybrid.result("collection.describe", {"name": "notes", "description": "Pets only"})
            return first, {t.name: t for t in (await c.list_tools()).tools}

    try:
        (told, listed), relisted = run(go)
    finally:
        hybrid.result("collection.describe", {"name": "notes", "description": ""})
    assert "- notes: Pet care and cooking notes" in told
    for name in ("search", "vsearch", "query", "ask"):
        assert (
            "notes (Pet care and cooking notes)"
            in listed[name].input_schema["properties"]["collections"]["description"]
        ), name
    # tools/list says what holds now.
    assert "notes (Pets only)" in relisted["search"].input_schema["properties"]["collections"]["description"]


def test_every_read_tool_answers_with_structured_content_and_text(hybrid):
    calls = {
        "search": ({"query": "spaghetti garlic"}, P.SearchResult),
        "vsearch": ({"query": "feline pets napping", "limit": 3}, P.VSearchResult),
        "query": ({"query": "how do I bake bread", "expand": False}, P.QueryResult),
        "ask": ({"question": "how do I bake bread", "answer": False, "sources": 2}, P.AskResult),
        "similar": ({"ref": "notes/pets/dogs.md", "limit": 3}, P.SimilarResult),
        "get": ({"ref": "notes/pets/dogs.md:3"}, P.Document),
        "multi_get": ({"pattern": "notes/space/*.md"}, P.MultiGetResult),
        "ls": ({"collection": "notes", "prefix": "pets/"}, P.LsResult),
        "status": ({}, P.StatusResult),
    }

    async def go():
        out = {}
        async with Client(bridge(hybrid.env), mode="legacy") as c:  # the handshake era agents use today
            for name, (args, _) in calls.items():
                out[name] = await c.call_tool(name, args)  # the SDK checks it against the outputSchema
            out["ls folders"] = await c.call_tool("ls", {"collection": "notes", "folders": True})
            out["ls a page"] = await c.call_tool("ls", {"collection": "notes", "limit": 1})
            # As search's filters, its days as the bridge reads them (the notes were written today).
            out["ls filtered"] = await c.call_tool(
                "ls", {"collection": "notes", "filters": {"path": "space/**", "since": "yesterday"}}
            )
            out["ls none passing"] = await c.call_tool("ls", {"filters": {"until": "yesterday"}})
            out["ask by query"] = await c.call_tool(
                "ask", {"query": "how do I bake bread", "answer": False, "sources": 2}
            )
            # The filters of `search` hold for every search tool (an agent asked `query` with them).
            for name, args in (
                ("query", {"query": "how do I bake bread", "expand": False}),
                ("vsearch", {"query": "feline pets napping"}),
                ("ask", {"question": "how do I bake bread", "answer": False}),
                ("similar", {"ref": "notes/pets/dogs.md"}),
            ):
                out[f"{name} filtered"] = await c.call_tool(name, {**args, "filters": {"path": "space/**"}})
            out["query with variants"] = await c.call_tool(
                "query",
                {"query": "sourdough loaf", "variants": {"lexical": ["bread dough"], "semantic": ["baking at home"]}},
            )
        return out

    results = run(go)
    for name, (_, tp) in calls.items():
        r = results[name]
        assert not r.is_error, (name, r.content)
        msgspec.convert(r.structured_content, tp, strict=True)  # the protocol's JSON, unchanged
        assert r.content[0].type == "text" and r.content[0].text
    # A hit is named by its file's own path, which an agent's tools read and edit too.
    notes = os.path.dirname(os.path.dirname(results["search"].structured_content["hits"][0]["abs_path"]))
    assert results["search"].content[0].text.startswith(f"{notes}/cooking/pasta.md:")
    assert f"{notes}/pets/cats.md:" in results["vsearch"].content[0].text.splitlines()[0]
    assert f"{notes}/cooking/bread.md" in results["query"].content[0].text.splitlines()[0]
    assert f"Sources:\n[1] {notes}/cooking/bread.md" in results["ask"].content[0].text
    # No answer asked for: the sources to read, each passage with its lines numbered.
    first = results["ask"].structured_content["considered"][0]
    passage = first["text"].rstrip("\n").split("\n")
    assert f"\n{first['start_line']:>6}\t{passage[0]}\n" in results["ask"].content[0].text
    assert results["similar"].content[0].text.startswith("Documents like gno://notes/pets/dogs.md (by meaning):")
    assert f"{notes}/pets/cats.md" in results["similar"].content[0].text.splitlines()[1]
    for name, key in (("query", "hits"), ("vsearch", "hits"), ("ask", "considered"), ("similar", "hits")):
        found = results[f"{name} filtered"].structured_content[key]
        assert found and {h["path"].split("/")[0] for h in found} == {"space"}, (name, found)
    assert results["ask by query"].structured_content["sources"] == results["ask"].structured_content["sources"]
    given = results["query with variants"].structured_content
    assert given["expansion"]["source"] == "client" and given["expansion"]["lexical"] == ["bread dough"]
    assert given["hits"][0]["path"] == "cooking/bread.md"
    assert results["get"].structured_content["from_line"] == 3 and "postman" in results["get"].content[0].text
    assert {d["path"] for d in results["multi_get"].structured_content["documents"]} == {
        "space/mars.md",
        "space/moon.md",
    }
    assert results["ls"].content[0].text.splitlines()[-1] == "(2 of 2 documents)"
    assert [e["path"] for e in results["ls filtered"].structured_content["entries"]] == [
        "space/mars.md",
        "space/moon.md",
    ]
    assert results["ls none passing"].content[0].text == "(0 of 0 documents)"
    paged = results["ls a page"].content[0].text.splitlines()[-1]
    assert (
        paged
        == f"(1 of {results['ls a page'].structured_content['total']} documents; `offset` pages through the others)"
    )
    assert results["ls folders"].content[0].text.splitlines() == [
        "gno://notes/cooking/  (2 documents)",
        "gno://notes/pets/  (2 documents)",
        "gno://notes/space/  (2 documents)",
        "(0 of 0 documents)",
    ]
    assert "notes: 6 documents" in results["status"].content[0].text


def test_an_agent_reads_within_a_budget_of_whole_lines_and_searches_with_filters(hybrid):
    """A whole generated header (24 MB) came back from `get` in 29 s and filled the agent's
    context; `multi_get` cut a document mid-line yet named its last line, and did not say
    how many documents it left; `search` had no path filter and one passage a document."""

    async def go():
        async with Client(bridge(hybrid.env), mode="legacy") as c:
            return {
                "get": await c.call_tool("get", {"ref": "notes/pets/dogs.md", "max_bytes": 12}),
                "get default": await c.call_tool("get", {"ref": "notes/pets/dogs.md"}),
                "get a line in part": await c.call_tool("get", {"ref": "notes/pets/dogs.md:3", "max_bytes": 5}),
                "multi": await c.call_tool("multi_get", {"pattern": "notes/**/*.md", "max_bytes": 40}),
                "listed": await c.call_tool("multi_get", {"pattern": "notes/**/*.md", "content": False}),
                "in space": await c.call_tool(
                    "search", {"query": "the", "filters": {"path": "space/**"}, "per_doc": 2, "limit": 1}
                ),
            }

    r = run(go)
    for name, result in r.items():
        assert not result.is_error, (name, result.content)
    got = r["get"].structured_content
    assert (got["content"], got["from_line"], got["to_line"], got["truncated"]) == ("# Dogs\n\n", 1, 2, True)
    assert "lines 1-2 of 3 (cut at max_bytes: read on with from_line=3)" in r["get"].content[0].text
    # Each line after its number in the file, as `cat -n` writes them: an agent cites line 3.
    whole = r["get default"]
    third = whole.structured_content["content"].split("\n")[2]
    assert whole.content[0].text.endswith(f"\n\n     1\t# Dogs\n     2\t\n     3\t{third}\n")
    cut = r["get a line in part"]
    assert cut.content[0].text.endswith(f"\n\n     3\t{cut.structured_content['content']}")
    # A line longer than max_bytes is given in part: reading on from the next line would skip its rest.
    part = r["get a line in part"]
    assert part.structured_content["to_line"] == 3 and len(part.structured_content["content"]) == 5
    assert "(line 3 is longer than max_bytes: shown in part; raise max_bytes to read it whole)" in part.content[0].text
    whole = r["get default"].structured_content
    assert whole["truncated"] is False and whole["to_line"] == whole["total_lines"] == 3
    multi = r["multi"].structured_content
    assert multi["truncated"] and multi["left_out"] == 6 - len(multi["documents"]) > 0
    *whole_lines, last = multi["documents"]
    assert all(d["content"].endswith("\n") and d["to_line"] == d["content"].count("\n") for d in whole_lines)
    assert last["to_line"] == max(1, last["content"].count("\n"))  # a first line past the budget: a part of it
    assert f"{multi['left_out']} more documents not read" in r["multi"].content[0].text
    assert len(r["listed"].structured_content["documents"]) == 6
    # A list, not six documents "lines 0-0 of 0" that read as empty.
    listed = r["listed"].content[0].text.splitlines()
    assert len(listed) == 7 and listed[0].startswith("/") and listed[-1] == "(6 documents)", listed
    found = r["in space"].structured_content
    assert [h["path"] for h in found["hits"]] == ["space/moon.md"] and found["total_candidates"] == 2
    assert "(1 shown; more documents match: raise limit, or narrow with filters)" in r["in space"].content[0].text


def test_a_read_s_text_keeps_within_max_bytes_with_its_lines_numbers(hybrid, tmp_path):
    """The numbers before each line came on top of max_bytes: a file of 1,900 lines gave
    78,893 characters for 65,536. The text an agent gets, numbers and header too, is at
    most max_bytes of whole lines, and says where to read on."""
    (tmp_path / "long").mkdir()
    (tmp_path / "long" / "log.md").write_text("# Log\n\n" + "".join(f"entry {i}\n" for i in range(3000)))
    hybrid.result("collection.add", {"name": "long", "path": str(tmp_path / "long")})

    async def go():
        async with Client(bridge(hybrid.env), mode="legacy") as c:
            one = await c.call_tool("get", {"ref": "long/log.md", "max_bytes": 4000})
            many = await c.call_tool("multi_get", {"pattern": "long/*.md", "max_bytes": 4000})
            return one, many

    try:
        one, many = run(go)
    finally:
        hybrid.result("collection.remove", {"name": "long"})
    for result in (one, many):
        text = result.content[0].text
        assert 3500 < len(text.encode()) <= 4000, len(text.encode())
    got = one.structured_content
    assert got["truncated"] and got["content"].endswith("\n")
    assert f"(cut at max_bytes: read on with from_line={got['to_line'] + 1})" in one.content[0].text
    assert one.content[0].text.endswith(f"{got['to_line']:>6}\tentry {got['to_line'] - 3}\n")


def test_bad_input_is_a_tool_error_with_the_daemons_message(hybrid):
    async def go():
        async with Client(bridge(hybrid.env)) as c:
            return [
                await c.call_tool(name, args)
                for name, args in (
                    ("search", {"query": '"unclosed'}),
                    ("query", {"query": "bread", "collections": ["nope"]}),
                    ("get", {"ref": "notes/missing.md"}),
                    ("search", {"query": "x", "limit": 5000}),
                    ("collection_add", {"name": "x", "path": "/tmp"}),
                    ("ask", {}),
                    ("ask", {"question": "bread?", "query": "cats?", "answer": False}),
                    ("search", {"query": "bread " * 7000}),
                    ("get", {"ref": "notes/" + "x" * 3000}),
                    # What strict-mode clients send for the arguments they leave out, and a float limit.
                    ("search", {"query": "bread", "collections": None, "filters": {"path": None}, "limit": 2.0}),
                    # Days as gnoctl takes them (the schema refused `yesterday`), and one that is none.
                    ("search", {"query": "bread", "filters": {"since": "10 years ago", "until": "today"}}),
                    ("search", {"query": "bread", "filters": {"since": "someday"}}),
                    ("status", {}),  # the session is still fine after all that
                )
            ]

    (
        bad_query,
        no_collection,
        no_doc,
        too_many,
        no_write,
        nothing_asked,
        two_asked,
        too_long,
        long_ref,
        nulls,
        days,
        no_day,
        ok,
    ) = run(go)
    assert not days.is_error and days.structured_content["hits"][0]["path"] == "cooking/bread.md"
    assert no_day.content[0].text.startswith(
        "INVALID_PARAMS: filters: 'someday' is not a day: YYYY-MM-DD (or 14.03.2025, 2025/03/14), a month"
    )
    # Nothing long is said back (the whole query was: 42,000 characters an agent pays for).
    assert too_long.content[0].text == "INVALID_PARAMS: query: at most 32,000 characters (42,000 given)"
    assert long_ref.content[0].text.startswith("NOT_FOUND: 'notes/xxx") and len(long_ref.content[0].text) < 200
    assert "… (3,006 characters): no such file in the folder of collection 'notes'" in long_ref.content[0].text
    assert not nulls.is_error and nulls.structured_content["hits"][0]["path"] == "cooking/bread.md"
    assert bad_query.is_error and bad_query.content[0].text.startswith("INVALID_QUERY: ")
    assert bad_query.structured_content["error"]["code"] == "INVALID_QUERY"
    assert no_collection.is_error and no_collection.content[0].text.startswith("NOT_FOUND: ")
    assert "collections: notes" in no_collection.content[0].text
    assert no_doc.is_error and "notes/missing.md" in no_doc.content[0].text
    assert (
        too_many.is_error
        and too_many.content[0].text == "INVALID_PARAMS: limit: 5000 is greater than the maximum of 100"
    )
    assert no_write.is_error and "unknown tool 'collection_add'" in no_write.content[0].text
    # It said "{} is not valid under any of the given schemas".
    assert nothing_asked.content[0].text == "INVALID_PARAMS: arguments: one of question, query is required"
    assert two_asked.content[0].text == "INVALID_PARAMS: arguments: question and query are the same argument: give one"
    assert not ok.is_error


def test_documents_are_resources(hybrid):
    async def go():
        async with Client(bridge(hybrid.env)) as c:
            templates = (await c.list_resource_templates()).resource_templates
            listed = (await c.list_resources()).resources
            doc = await c.read_resource("gno://notes/pets/cats.md")
            with pytest.raises(MCPError) as missing:
                await c.read_resource("gno://notes/pets/unicorns.md")
            return templates, listed, doc, missing.value

    templates, listed, doc, missing = run(go)
    assert [t.uri_template for t in templates] == ["gno://{collection}/{+path}"]
    assert {r.uri for r in listed} == {
        f"gno://notes/{rel}"
        for rel in (
            "cooking/pasta.md",
            "cooking/bread.md",
            "pets/cats.md",
            "pets/dogs.md",
            "space/mars.md",
            "space/moon.md",
        )
    }
    assert doc.contents[0].text == hybrid.result("get", {"ref": "notes/pets/cats.md"})["content"]
    assert "NOT_FOUND" in missing.message


def test_bridge_exits_when_stdin_closes_even_mid_call(hybrid):
    proc = subprocess.Popen(
        [sys.executable, "-m", "gnoctl.main", "mcp"],
        env=hybrid.env,
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )

    def send(msg: dict) -> None:
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", **msg}) + "\n").encode())
        proc.stdin.flush()

    try:
        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            }
        )
        assert json.loads(proc.stdout.readline())["result"]["serverInfo"]["name"] == "gno"
        send({"method": "notifications/initialized"})
        send(
            {
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "ask",
                    "_meta": {"progressToken": "p"},
                    "arguments": {
                        "question": "Explain everything about baking bread, step by step, in detail.",
                        "max_tokens": 1024,
                    },
                },
            }
        )
        first = json.loads(proc.stdout.readline())  # the answer is being written
        assert first["method"] == "notifications/progress" and first["params"]["progressToken"] == "p", first
        proc.stdin.close()
        assert proc.wait(10) == 0, proc.stderr.read().decode()
    finally:
        proc.kill()
        proc.wait()
    assert hybrid.result("status")["pid"] == hybrid.proc.pid  # gnod itself stays up


LONG_QUESTION = "Explain everything about baking bread, step by step, in detail. Write at least 5000 words."


def test_cancelling_ask_stops_the_generation(hybrid):
    said = re.compile(r"stopped generating after (\d+) tokens")

    def log_text() -> str:
        with open(hybrid.paths.log_file) as f:
            return f.read()

    before = len(said.findall(log_text()))

    async def go():
        tokens: list[str] = []
        async with Client(bridge(hybrid.env)) as c:
            three = anyio.Event()

            async def progress(done, total, message):
                tokens.append(message)
                if len(tokens) >= 3:
                    three.set()

            async with anyio.create_task_group() as tg:

                async def ask():
                    # A question the test model answers by repeating itself up to max_tokens: an answer
                    # that ends on its own before the cancel reaches gnod would prove nothing.
                    await c.call_tool(
                        "ask", {"question": LONG_QUESTION, "max_tokens": 1024}, progress_callback=progress
                    )

                tg.start_soon(ask)
                with anyio.fail_after(120):
                    await three.wait()
                tg.cancel_scope.cancel()
            # The bridge is still serving after the cancellation.
            assert not (await c.call_tool("status", {})).is_error
        return tokens

    tokens = run(go)
    assert len(tokens) >= 3 and all(isinstance(t, str) for t in tokens)
    assert wait_until(lambda: len(said.findall(log_text())) > before, 30), "gnod kept generating"
    assert int(said.findall(log_text())[-1]) < 512  # stopped soon after the cancel, not at 1024


def _bridge_pids() -> list[int]:
    pids = []
    for pid in children(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"gnoctl.main\0mcp" in f.read():
                    pids.append(pid)
        except OSError:
            pass
    return pids


def _holds_models_or_index(pid: int, db_file: str) -> list[str]:
    with open(f"/proc/{pid}/maps") as f:
        maps = f.read()
    found = [lib for lib in ("libllama", "llama_cpp", "sqlite_vec", "vec0") if lib in maps]
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(db_file):
                found.append("index")
        except OSError:
            pass
    return found


def test_two_bridges_and_gnoctl_share_one_gnod(hybrid):
    async def go():
        async with Client(bridge(hybrid.env)) as a, Client(bridge(hybrid.env)) as b:
            ra, rb = await asyncio.gather(
                a.call_tool("vsearch", {"query": "red planet volcano"}), b.call_tool("vsearch", {"query": "dog walks"})
            )
            cli = _run_cli("vsearch", "astronauts", "--json", env=hybrid.env)
            pids = _bridge_pids()
            holds = {pid: _holds_models_or_index(pid, hybrid.paths.db_file) for pid in pids}
            sa = (await a.call_tool("status", {})).structured_content
            sb = (await b.call_tool("status", {})).structured_content
            return ra, rb, cli, pids, holds, sa, sb

    ra, rb, cli, pids, holds, sa, sb = run(go)
    assert ra.structured_content["hits"][0]["path"] == "space/mars.md"
    assert rb.structured_content["hits"][0]["path"] == "pets/dogs.md"
    assert cli.returncode == 0 and json.loads(cli.stdout)["hits"][0]["path"] == "space/moon.md"
    assert len(pids) == 2 and holds == {pid: [] for pid in pids}  # no model, no index in the bridges
    assert sa["pid"] == sb["pid"] == hybrid.proc.pid
    embed = [m for m in sa["models"] if m["role"] == "embed"]
    assert len(embed) == 1 and embed[0]["state"] == "ready"


def test_write_tools_report_progress(hybrid, tmp_path):
    (tmp_path / "more").mkdir()
    for i in range(40):
        (tmp_path / "more" / f"m{i}.md").write_text(f"# Memo {i}\n\nquarterly budget line {i}\n")
    (tmp_path / "more" / "logo.svg").write_text("<svg/>")

    async def go():
        seen = []

        async def progress(done, total, message):
            seen.append((done, total, message))

        async with Client(bridge(hybrid.env, "--enable-write")) as c:
            # Named after its folder, as gnoctl collection add names it.
            added = await c.call_tool("collection_add", {"path": str(tmp_path / "more")}, progress_callback=progress)
            found = await c.call_tool("search", {"query": "quarterly budget", "collections": ["more"]})
            # The way past an overlap that the error names is the tool's own argument.
            again = {"name": "again", "path": str(tmp_path / "more")}
            overlap = await c.call_tool("collection_add", again)
            allowed = await c.call_tool("collection_add", {**again, "allow_overlap": True})
            await c.call_tool("collection_remove", {"name": "again"})
            removed = await c.call_tool("collection_remove", {"name": "more"})
        return seen, added, found, removed, overlap, allowed

    seen, added, found, removed, overlap, allowed = run(go)
    assert overlap.is_error and "allow_overlap" in overlap.content[0].text and not allowed.is_error
    assert not added.is_error and added.content[0].text.startswith("more: 40 added")
    assert added.content[0].text.endswith(
        "\n  not indexed: 1 file of other kinds (.svg 1); --also globs take them besides the default kinds "
        "(gnoctl collection set more --also '*.svg', with those it has)"
    )
    assert seen and seen[-1][0] == seen[-1][1] == 40 and any("more" in m for _, _, m in seen)
    assert len(found.structured_content["hits"]) == 10
    assert removed.content[0].text == "removed more (40 documents)"


def test_bridge_starts_gnod_and_reconnects_after_a_restart(env):
    async def go():
        async with Client(bridge(env)) as c:
            pids = [(await c.call_tool("status", {})).structured_content["pid"]]  # autostarted
            restarted = _run_cli("daemon", "restart", env=env)
            assert restarted.returncode == 0, restarted.stderr
            pids.append((await c.call_tool("status", {})).structured_content["pid"])  # its socket was stale
            stopped = _run_cli("daemon", "stop", env=env)
            assert stopped.returncode == 0, stopped.stderr
            again = await c.call_tool("status", {})  # no daemon: started again
            assert not again.is_error, again.content
            pids.append(again.structured_content["pid"])
        return pids

    pids = run(go)
    assert len(set(pids)) == 3


# --- streamable HTTP ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_bridge(hybrid, tmp_path):
    port = _free_port()
    token_file = tmp_path / "state" / "mcp-token"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gnoctl.main", "mcp", "--http", f"127.0.0.1:{port}", "--token-file", str(token_file)],
        env=hybrid.env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        def listening() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        assert wait_until(listening, 30), proc.stderr.read1().decode() if proc.poll() is not None else "no listener"
        yield f"http://127.0.0.1:{port}/mcp", token_file
    finally:
        proc.terminate()
        proc.wait(10)


def _post(url: str, headers: dict) -> int:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
    )
    req = urllib.request.Request(
        url,
        body.encode(),
        {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_http_needs_the_token_and_a_local_origin(http_bridge):
    url, token_file = http_bridge
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    token = token_file.read_text().strip()
    auth = {"Authorization": f"Bearer {token}"}
    assert _post(url, {}) == 401
    assert _post(url, {"Authorization": "Bearer not-the-token"}) == 401
    assert _post(url, {**auth, "Origin": "http://evil.example"}) == 403
    assert _post(url, {**auth, "Host": "evil.example:80"}) == 421
    assert _post(url, {**auth, "Origin": url.rsplit("/", 1)[0]}) == 200
    assert _post(url, {"Authorization": f"bearer {token}"}) == 200  # the scheme is case-insensitive
    # A second bridge on the same port says the port is taken, and never that it serves.
    other = {**os.environ, "GNO_HOME": str(token_file.parent.parent / "other-home")}
    r = _run_cli("mcp", "--http", url.split("//")[1].split("/")[0], env=other)
    assert r.returncode == 2 and "is taken" in r.stderr and "serving" not in r.stderr, r.stderr

    async def go():
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(headers=auth, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http)) as c:
                return await c.call_tool("search", {"query": "spaghetti"})

    found = run(go)
    assert not found.is_error and found.structured_content["hits"][0]["path"] == "cooking/pasta.md"


def test_http_refuses_a_public_bind_without_a_token(env):
    r = _run_cli("mcp", "--http", "0.0.0.0:8765", "--no-token", env=env)
    assert r.returncode == 2 and "refusing to serve 0.0.0.0 without a token" in r.stderr
    r = _run_cli("mcp", "--http", "host:port", env=env)
    assert r.returncode == 2 and "--http wants [HOST:]PORT" in r.stderr


def test_resource_listeners_hear_of_saved_files(hybrid, tmp_path):
    from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

    notes = hybrid.result("collection.list")["collections"][0]["path"]
    cats = os.path.join(notes, "pets", "cats.md")
    original = open(cats).read()

    async def go():
        events = []
        async with Client(bridge(hybrid.env)) as c:
            async with c.listen(
                resource_subscriptions=["gno://notes/pets/cats.md"], resources_list_changed=True
            ) as sub:
                heard = anyio.Event()

                async def save_until_heard():
                    # The bridge's follower subscribes to gnod as the first listener comes: keep saving.
                    for i in range(100):
                        if heard.is_set():
                            return
                        with open(cats, "w") as f:
                            f.write(original + f"\nEdit {i}: cats also knead blankets.\n")
                        await anyio.sleep(0.3)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(save_until_heard)
                    with anyio.fail_after(60):
                        async for event in sub:  # one loop: leaving it ends the subscription
                            events.append(event)
                            if isinstance(event, ResourceUpdated) and not heard.is_set():
                                heard.set()  # stop saving; add a document instead
                                await anyio.sleep(0.5)
                                with open(os.path.join(notes, "pets", "newts.md"), "w") as f:
                                    f.write("# Newts\n\nNewts are small amphibians.\n")
                            elif isinstance(event, ResourcesListChanged) and heard.is_set():
                                break
            read = await c.read_resource("gno://notes/pets/cats.md")
        return events, read

    try:
        events, read = run(go)
    finally:
        with open(cats, "w") as f:
            f.write(original)
        if os.path.exists(os.path.join(notes, "pets", "newts.md")):
            os.unlink(os.path.join(notes, "pets", "newts.md"))
    assert ResourceUpdated(uri="gno://notes/pets/cats.md") in events
    assert isinstance(events[-1], ResourcesListChanged)
    assert "knead blankets" in read.contents[0].text  # reading it again gives the saved text


@pytest.mark.filterwarnings("ignore:resources/.*subscribe is removed as of 2026-07-28")  # what agents speak today
def test_a_2025_11_25_client_subscribes_and_hears_of_saved_and_added_documents(hybrid):
    notes = hybrid.result("collection.list")["collections"][0]["path"]
    dogs = os.path.join(notes, "pets", "dogs.md")
    original = open(dogs).read()
    heard: list = []

    async def on_message(message) -> None:
        if isinstance(message, (types.ResourceUpdatedNotification, types.ResourceListChangedNotification)):
            heard.append(message)

    async def go():
        async with Client(bridge(hybrid.env), mode="legacy", message_handler=on_message) as c:
            version, caps = c.protocol_version, c.server_capabilities.resources
            await c.list_resources()
            await c.subscribe_resource("gno://notes/pets/dogs.md")
            with anyio.fail_after(60):
                for i in range(200):  # the bridge's follower joins gnod's watch as the first subscriber comes
                    if any(isinstance(m, types.ResourceUpdatedNotification) for m in heard):
                        break
                    with open(dogs, "w") as f:
                        f.write(original + f"\nEdit {i}: dogs also dig holes.\n")
                    await anyio.sleep(0.3)
                with open(os.path.join(notes, "pets", "hamsters.md"), "w") as f:
                    f.write("# Hamsters\n\nHamsters store food in their cheeks.\n")
                while not any(isinstance(m, types.ResourceListChangedNotification) for m in heard):
                    await anyio.sleep(0.1)
                # A rename is a removal and an addition, in one commit: the list changed once.
                before = len(heard)
                os.rename(os.path.join(notes, "pets", "hamsters.md"), os.path.join(notes, "pets", "gerbils.md"))
                while len(heard) == before:
                    await anyio.sleep(0.1)
                await anyio.sleep(1.0)  # anything more would have come by now
                renamed = heard[before:]
            await c.unsubscribe_resource("gno://notes/pets/dogs.md")
        return version, caps, renamed

    try:
        version, caps, renamed = run(go)
    finally:
        with open(dogs, "w") as f:
            f.write(original)
        for name in ("hamsters.md", "gerbils.md"):
            if os.path.exists(os.path.join(notes, "pets", name)):
                os.unlink(os.path.join(notes, "pets", name))
    assert version == "2025-11-25" and caps.subscribe and caps.list_changed
    updated = [m for m in heard if isinstance(m, types.ResourceUpdatedNotification)]
    assert updated and str(updated[0].params.uri) == "gno://notes/pets/dogs.md"
    assert [type(m) for m in renamed] == [types.ResourceListChangedNotification], renamed


def test_a_passage_keeps_its_lines_in_the_text():
    """An agent read code joined onto one line (`class WebSocketDisconnect(Exception):
    def __init__(…) -> None: self.code = code`): the text keeps each line, indented under
    its hit, without blank ones, within SNIPPET_CHARS."""
    from gnoctl.mcp.tools import SNIPPET_CHARS, _search_text

    code = "class Gone(Exception):\n\n    def __init__(self, code: int) -> None:   \n        self.code = code"
    hit = {
        "uri": "gno://c/ws.py",
        "path": "ws.py",
        "abs_path": "/src/ws.py",
        "title": "ws",
        "score": 1.0,
        "snippet": {"line": 20, "text": code},
    }
    assert _search_text({"query": "Gone", "hits": [hit], "total_candidates": 1}).split("\n") == [
        "/src/ws.py:20  ws  (1.00)",  # the file's own path, which an agent's tools read and edit
        "  class Gone(Exception):",
        "      def __init__(self, code: int) -> None:",
        "          self.code = code",
    ]
    # A converted document's text is gno's, not its file's: named by its uri.
    pdf = {**hit, "uri": "gno://c/paper.pdf", "path": "paper.pdf", "abs_path": "/src/paper.pdf"}
    assert _search_text({"query": "Gone", "hits": [pdf], "total_candidates": 1}).startswith("gno://c/paper.pdf:20")
    long = {**hit, "snippet": {"line": 1, "text": "\n".join(["y" * 100] * 5)}}
    text = _search_text({"query": "y", "hits": [long], "total_candidates": 1})
    assert text.endswith("…") and len(text.split("\n", 1)[1]) == 2 + SNIPPET_CHARS


def test_a_search_with_many_passages_gives_at_most_a_budget_of_text():
    """100 documents of 10 passages came to 204,000 characters of text, past what hosts
    take from one call; the structured content still holds them all."""
    from gnoctl.mcp.tools import TEXT_MAX_CHARS, _search_text

    snip = {"line": 7, "text": "x" * 300, "symbol": "f()"}
    hits = [
        {
            "uri": f"gno://c/d{i}.c",
            "path": f"d{i}.c",
            "abs_path": f"/src/d{i}.c",
            "title": f"d{i}",
            "score": 1.0,
            "snippet": snip,
            "snippets": [snip] * 10,
        }
        for i in range(100)
    ]
    text = _search_text({"query": "x", "hits": hits, "total_candidates": 100, "notes": ["a note"]})
    *lines, cut, note = text.split("\n")
    shown = sum(line.startswith("/src/d") and line.endswith("(1.00)") for line in lines)
    assert 0 < shown < 100 and len(text) < TEXT_MAX_CHARS + 11 * 320
    assert (
        cut
        == f"(text cut at 65,536 characters after {shown} of 100 documents: lower limit or per_doc to read them all here)"
    )
    assert note == "a note"
    small = _search_text({"query": "x", "hits": hits[:2], "total_candidates": 2})
    assert "cut" not in small and small.count("\n") == 2 * 2 * 10 - 1


def test_the_status_text_says_what_the_background_has_yet_to_read():
    """An agent reading `status` learns that a search may miss what is still being parsed
    or read by OCR (the text the MCP status tool returns beside its structured result)."""
    from gnoctl.mcp.tools import _status_text

    base = {"version": "1", "pid": 1, "documents": 3, "collections": [], "models": []}
    assert "ocr" not in _status_text({**base, "ocr": {"pending": 0}, "symbols": {"pending": 0}})
    text = _status_text({**base, "ocr": {"pending": 2}, "symbols": {"pending": 5}})
    assert "5 source files still to parse" in text and "2 pictures or scans still to read" in text


def test_a_client_is_told_the_tools_changed_when_gnod_starts_after_it_listed_them(tmp_path):
    """Listed while gnod was down, the tools named no collection ("`ls` or `status` lists
    them"); once gnod was started they still did, and nothing said they had changed."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\na note\n")
    home = make_home()
    env = make_env(home)
    os.makedirs(os.path.join(home, "config"), exist_ok=True)
    with open(os.path.join(home, "config", "config.toml"), "w") as f:
        f.write(f'[[collections]]\nname = "late"\npath = "{notes}"\n')
    heard: list = []

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.append(message)

    def described(tools) -> str:
        return {t.name: t for t in tools}["search"].input_schema["properties"]["collections"]["description"]

    async def go():
        async with Client(bridge({**env, "GNO_NO_AUTOSTART": "1"}), mode="legacy", message_handler=on_message) as c:
            before = described((await c.list_tools()).tools)
            started = await anyio.to_thread.run_sync(lambda: _run_cli("daemon", "start", env=env))
            assert started.returncode == 0, started.stderr
            with anyio.fail_after(20):
                while not heard:
                    await anyio.sleep(0.1)
            return before, described((await c.list_tools()).tools)

    try:
        before, after = run(go)
    finally:
        cleanup_home(home)
    assert "late" not in before and "late" in after


@pytest.mark.filterwarnings("ignore:resources/.*subscribe is removed as of 2026-07-28")
def test_a_client_is_told_the_tools_changed_when_a_collection_comes_or_goes(hybrid, tmp_path):
    """The search tools' `collections` argument names the collections: one added after
    the client listed the tools was named nowhere until it listed them again, unasked."""
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "a.md").write_text("# Extra\n\nan extra note\n")
    heard: list = []

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.append(message)

    async def go():
        async with Client(bridge(hybrid.env), mode="legacy", message_handler=on_message) as c:
            assert c.server_capabilities.tools.list_changed
            await c.list_tools()
            await anyio.sleep(0.5)  # the bridge's follower joins gnod's watch
            await anyio.to_thread.run_sync(
                lambda: hybrid.result("collection.add", {"name": "extra", "path": str(extra)})
            )
            with anyio.fail_after(20):
                while not heard:
                    await anyio.sleep(0.1)
            named = {t.name: t for t in (await c.list_tools()).tools}["search"]
            # Described: the tools say what it holds (they said nothing until listed again).
            await anyio.to_thread.run_sync(
                lambda: hybrid.result("collection.describe", {"name": "extra", "description": "field notes"})
            )
            with anyio.fail_after(20):
                while len(heard) < 2:
                    await anyio.sleep(0.1)
            told = {t.name: t for t in (await c.list_tools()).tools}["search"]
            assert "extra (field notes)" in told.input_schema["properties"]["collections"]["description"]
            await anyio.to_thread.run_sync(lambda: hybrid.result("collection.remove", {"name": "extra"}))
            with anyio.fail_after(20):
                while len(heard) < 3:
                    await anyio.sleep(0.1)
            return named.input_schema["properties"]["collections"]["description"]

    try:
        described = run(go)
    finally:
        if any(c["name"] == "extra" for c in hybrid.result("collection.list")["collections"]):
            hybrid.result("collection.remove", {"name": "extra"})
    assert "extra" in described and len(heard) == 3


def test_a_bridge_that_started_gnod_waits_for_its_scan_before_its_first_search(tmp_path):
    """An agent's session starts the bridge, which starts gnod: its first search found
    nothing of what changed while gnod was down (`'notes' is being indexed`), where
    gnoctl's first search waits for that scan."""
    home = make_home()
    env = make_env(home)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "index.md").write_text("# Index\n\nThe first note.\n")
    try:
        d = start_gnod(env)
        d.result("collection.add", {"name": "notes", "path": str(notes)})
        d.stop()
        for i in range(40):  # gnod is down: these are found by its scan at start
            (notes / f"later{i}.md").write_text(f"# Later {i}\n\nA zqxnarwhal note, {i}.\n")

        async def go():
            async with Client(bridge(env), mode="legacy") as c:
                return await c.call_tool("search", {"query": "zqxnarwhal", "limit": 50})

        res = run(go)
        assert not res.is_error, res.content
        assert len(res.structured_content["hits"]) == 40, res.structured_content.get("notes")
    finally:
        cleanup_home(home)
