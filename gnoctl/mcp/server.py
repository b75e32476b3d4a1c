"""`gnoctl mcp`: the MCP server (official SDK, low-level API) as a thin bridge to gnod.

It never loads a model or opens the index: every tool and resource is one gnod call,
so any number of agents share the daemon's warm models and fresh index; resource
listeners hear of saved files through gnod's `watch` (gnoctl.mcp.live). A daemon
error is a tool error carrying gnod's message (and its fix), never a transport failure.
"""

from __future__ import annotations

import jsonschema
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INTERNAL_ERROR

from gnoctl.client import DaemonError
from gnoctl.mcp.daemon import DaemonLink
from gnoctl.mcp.live import Live
from gnoctl.mcp.tools import ToolSpec, tools, with_days
from gnod import wire

URI_TEMPLATE = "gno://{collection}/{+path}"
RESOURCE_NOT_FOUND = -32002  # MCP's code for resources/read of an unknown URI
RESOURCES_PAGE = 500
# Calls a read with max_bytes may take for its text to fit it (the first is nearly always
# enough), from this budget on.
FIT_TRIES = 3
FIT_FROM_BYTES = 1024

INSTRUCTIONS = (
    "gno searches the user's own documents (notes, docs, code) through the local gnod daemon, which "
    "keeps the index fresh as files are saved. Exact names, identifiers and phrases: `search`. Questions "
    "in natural language: `query` (or `ask` for a cited answer). Read what you found with `get` "
    "(a hit's path:line: a file's absolute path, which your own tools can read and edit too, or a "
    "converted document's gno:// uri) or `multi_get`. Documents are also resources: gno://collection/path."
)


def instructions(collections: list[dict]) -> str:
    """What the server tells an agent at the start, with the collections it can ask and what
    each holds (`collection describe`), so it knows where to search."""
    if not collections:
        return INSTRUCTIONS
    return (
        INSTRUCTIONS
        + "\nCollections (the `collections` argument of the search tools):\n"
        + "\n".join(
            f"- {c['name']}: {c['description']}" if c.get("description") else f"- {c['name']}" for c in collections
        )
    )


def _schema(spec: ToolSpec, collections: list[dict]) -> dict:
    """The tool's input schema, its `collections` argument naming today's collections."""
    schema = spec.input_schema()
    if collections and "collections" in schema["properties"]:
        named = "; ".join(
            f"{c['name']} ({c['description']})" if c.get("description") else c["name"] for c in collections
        )
        prop = {
            **schema["properties"]["collections"],
            "description": f"Only these collections (default: all): {named}.",
        }
        schema["properties"] = {**schema["properties"], "collections": prop}
    return schema


def _tool(spec: ToolSpec, collections: list[dict]) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=_schema(spec, collections),
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=not spec.write,
            destructive_hint=spec.destructive,
            idempotent_hint=not spec.write,
            open_world_hint=False,
        ),
    )


def _error_result(e: DaemonError) -> types.CallToolResult:
    fix = e.details.get("fix")
    text = f"{e.name}: {e.message}" + (f"\nfix: {fix}" if fix else "")
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        is_error=True,
        structured_content={"error": {"code": e.name, "message": e.message, "details": e.details}},
    )


class _Server(Server):
    """Declares that the resource list and the tools change (the SDK declares it only when
    told, and the HTTP transport never tells it): earlier-protocol clients then listen for
    it. The tools change with the collections, which their `collections` argument names."""

    def create_initialization_options(self, notification_options=None, *args, **kwargs):
        return super().create_initialization_options(
            notification_options or NotificationOptions(resources_changed=True, tools_changed=True), *args, **kwargs
        )


class Bridge:
    """Tool, resource and progress handling over one DaemonLink."""

    def __init__(self, link: DaemonLink, enable_write: bool) -> None:
        self.link = link
        self.live = Live(link)
        self.specs = tools(enable_write)
        self._validators = {n: jsonschema.Draft202012Validator(s.input_schema()) for n, s in self.specs.items()}

    async def collections(self) -> list[dict]:
        """The collections and their descriptions; none when gnod cannot be reached (the tools
        then say so when called)."""
        try:
            return (await self.link.call("collection.list", {}))["collections"]
        except DaemonError:
            return []

    def server(self, version: str, collections: list[dict]) -> Server:
        return _Server(
            "gno",
            version=version,
            title="gno: search your own documents",
            instructions=instructions(collections),
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_templates,
            on_read_resource=self.read_resource,
            on_subscriptions_listen=self.live.listen,
            on_subscribe_resource=self.live.subscribe,
            on_unsubscribe_resource=self.live.unsubscribe,
        )

    async def list_tools(self, ctx, params) -> types.ListToolsResult:
        collections = await self.collections()
        self.live.told_tools(ctx, collections)
        return types.ListToolsResult(tools=[_tool(s, collections) for s in self.specs.values()])

    async def call_tool(self, ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = self.specs.get(params.name)
        if spec is None:
            return _error_result(
                DaemonError(wire.METHOD_NOT_FOUND, f"unknown tool {params.name!r}", {"tools": sorted(self.specs)})
            )
        args = _given(params.arguments or {}, spec.properties)
        problem = next(iter(self._validators[spec.name].iter_errors(args)), None)
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path) or "arguments"
            return _error_result(DaemonError(wire.INVALID_PARAMS, f"{where}: {_wrong(problem)}"))
        synonyms = [name for name in spec.one_of if name in args]
        if spec.one_of and not synonyms:
            return _error_result(
                DaemonError(wire.INVALID_PARAMS, f"arguments: one of {', '.join(spec.one_of)} is required")
            )
        if len({args[name] for name in synonyms}) > 1:
            said = " and ".join(synonyms)
            return _error_result(DaemonError(wire.INVALID_PARAMS, f"arguments: {said} are the same argument: give one"))
        for key, prop in spec.properties.items():
            if key not in args and "default" in prop:
                args[key] = prop["default"]
        try:
            args = with_days(args)
        except ValueError as e:
            return _error_result(DaemonError(wire.INVALID_PARAMS, f"filters: {e}"))
        try:
            sent = spec.params(args)
            result = await self.link.call(spec.method, sent, self._progress(ctx, spec))
            text = spec.render(result)
            # The text of `get` and `multi_get` within max_bytes, their lines' numbers too (a
            # file of 1,900 lines came back as 78,893 characters for max_bytes 65,536): asked
            # again for less, by the share the text is over. A smaller budget is a few lines'
            # read, which the header and numbers alone may pass.
            fits = "max_bytes" in spec.properties and args["max_bytes"] >= FIT_FROM_BYTES
            for _ in range(FIT_TRIES if fits else 0):
                size = len(text.encode())
                fewer = sent["max_bytes"] * args["max_bytes"] // size
                if size <= args["max_bytes"] or fewer < 1:
                    break
                sent = {**sent, "max_bytes": fewer}
                result = await self.link.call(spec.method, sent, self._progress(ctx, spec))
                text = spec.render(result)
        except DaemonError as e:
            return _error_result(e)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=result)

    @staticmethod
    def _progress(ctx, spec: ToolSpec):
        """Daemon notifications → MCP progress (a no-op unless the caller asked for progress)."""
        if not spec.streams:
            return None
        tokens = 0

        async def forward(method: str, p: dict) -> None:
            nonlocal tokens
            if method == "token":
                tokens += 1
                await ctx.session.report_progress(tokens, None, p.get("text", ""))
            elif method == "progress":
                what = " ".join(x for x in (p.get("phase"), p.get("collection"), p.get("path")) if x)
                await ctx.session.report_progress(p.get("done", 0), p.get("total") or None, what)

        return forward

    async def list_templates(self, ctx, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name="document",
                    title="An indexed document",
                    uri_template=URI_TEMPLATE,
                    mime_type="text/markdown",
                    description="A document of a collection, as indexed Markdown (the uri of every search hit).",
                )
            ]
        )

    async def list_resources(self, ctx, params) -> types.ListResourcesResult:
        self.live.note(ctx)
        offset = int(params.cursor) if params is not None and params.cursor and params.cursor.isdigit() else 0
        try:
            page = await self.link.call("ls", {"limit": RESOURCES_PAGE, "offset": offset})
        except DaemonError as e:
            raise _mcp_error(e) from None
        resources = [
            types.Resource(name=e["path"], title=e["title"], uri=e["uri"], mime_type="text/markdown", size=e["size"])
            for e in page["entries"]
        ]
        more = offset + len(resources) < page["total"] and resources
        cursor = str(offset + len(resources)) if more else None
        return types.ListResourcesResult(resources=resources, next_cursor=cursor)

    async def read_resource(self, ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            doc = await self.link.call("get", {"ref": uri})
        except DaemonError as e:
            raise _mcp_error(e) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=doc["content"])]
        )


def _given(arguments: dict, properties: dict) -> dict:
    """The arguments an agent gave: a null is one not given (strict-mode clients send
    null for every optional field they leave out, in `filters` too), and a whole number
    written as a float (`limit: 2.0`, which JSON Schema calls an integer) is that integer."""
    out = {}
    for key, value in arguments.items():
        if value is None:
            continue
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if v is not None}
        elif isinstance(value, float) and value.is_integer() and properties.get(key, {}).get("type") == "integer":
            value = int(value)
        out[key] = value
    return out


# The schema's length bounds, as _wrong says them.
_LENGTHS = {
    "maxLength": ("at most", "characters"),
    "minLength": ("at least", "characters"),
    "maxItems": ("at most", "items"),
    "minItems": ("at least", "items"),
}


def _wrong(problem: jsonschema.ValidationError) -> str:
    """What is wrong with an argument, without saying a long value back: jsonschema's
    message quotes it whole (a 40,000-character query gave a 40,037-character error)."""
    given, bound = problem.instance, problem.validator_value
    said = _LENGTHS.get(problem.validator)
    if said is not None and isinstance(given, str | list):
        return f"{said[0]} {bound:,} {said[1]} ({len(given):,} given)"
    if len(problem.message) <= 4 * wire.SAID_MAX:
        return problem.message
    return f"{problem.validator} {bound!r} is not met by the value given ({type(given).__name__})"


def _mcp_error(e: DaemonError) -> MCPError:
    """Resources have no error result: a daemon error becomes the request's error, with its details."""
    code = RESOURCE_NOT_FOUND if e.code == wire.NOT_FOUND else INTERNAL_ERROR
    return MCPError(code, f"{e.name}: {e.message}", {"name": e.name, "details": e.details})
