"""The MCP server: :class:`MemoryTools` exposed through the official ``mcp`` SDK (``bundlekit[mcp]``).

Tools (each with a JSON schema and a description written for a model),
resources (``memory://index``, ``memory://{key}``, ``memory://timeline/{date}``)
and the ``memory_context`` prompt; specs/mcp.md is the contract. A read-only
server does not list the write tools; ``bundle_publish`` is listed only when
publishing was allowed. Every :class:`~bundlekit.errors.BundlekitError` becomes
a tool (or resource) error carrying bundlekit's message, never a crash.

This module imports the SDK at the top: only ``bundlekit mcp`` loads it (through
``importlib``), so the base install and ``bundlekit --help`` never pay for it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Literal, TypedDict, TypeVar, cast

from mcp import MCPError
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import INVALID_PARAMS, ToolAnnotations
from pydantic import ConfigDict, Field, with_config

from bundlekit.errors import BundlekitError, InvalidKeyError, MemoryNotFoundError, UsageError
from bundlekit.mcp_server import http_server
from bundlekit.mcp_server.address import allowed_hosts, is_loopback
from bundlekit.mcp_server.tools import DEFAULT_CONTEXT_TOKENS, MAX_RECALL_LIMIT, MemoryTools

__all__ = ["READ_TOOLS", "SERVER_NAME", "WRITE_TOOLS", "build_server", "run_http", "run_stdio"]

SERVER_NAME = "bundlekit-memory"
READ_TOOLS = ("memory_recall", "memory_context", "memory_show", "memory_list")
WRITE_TOOLS = ("memory_write", "memory_forget", "memory_note")

_T = TypeVar("_T")

_INSTRUCTIONS = (
    "Long-term memory for this agent, one Markdown file per memory (types: user, feedback, project, "
    "reference) plus a daily timeline. Start a task with memory_context or memory_recall; save what "
    "should outlive this conversation with memory_write; never store credentials (they are refused)."
)

Key = Annotated[str, Field(description="The memory's key: letters, digits, '_', '.', '-' (its file is KEY.md).")]
#: The four memory types, as a JSON-schema enum: the memory tree's ``MEMORY_TYPES`` (a test holds them equal).
MemoryType = Literal["user", "feedback", "project", "reference"]

# What each tool may do, for a client deciding what to confirm (MCP ToolAnnotations): every memory tool
# works on this server's own tree (a closed world); reads change nothing; a write may replace a memory;
# forget deletes one, and a second forget of the same key changes nothing more; a note only appends.
_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)
_FORGET = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
_NOTE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
_PUBLISH = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)


# The structured results, so each tool's output schema names its fields (tools.py builds them).
class ShowResult(TypedDict):
    """``memory_show``."""

    key: Annotated[str, Field(description="The memory's key.")]
    meta: Annotated[
        dict[str, Any],
        Field(description="Its frontmatter: name, description, type, revision, created, updated, and any "
                          "other fields (tags, source, decay, important, x-...); a value that looks like a "
                          "credential is [withheld]."),
    ]
    body: Annotated[str, Field(description="Its body, in Markdown.")]


class WriteResult(TypedDict):
    """``memory_write``."""

    key: Annotated[str, Field(description="The memory's key.")]
    revision: Annotated[int, Field(description="Its revision after this write (1 for a new memory).")]
    file: Annotated[str, Field(description="Its file in the tree, KEY.md.")]


class ForgetResult(TypedDict):
    """``memory_forget``."""

    forgot: Annotated[str, Field(description="The key of the memory deleted.")]


@with_config(ConfigDict(extra="allow"))
class NoteResult(TypedDict):
    """``memory_note``: the timeline entry as written, ``ts`` and ``type`` then the fields of ``data``."""

    ts: Annotated[str, Field(description="When it was written, UTC, ISO 8601.")]
    type: Annotated[str, Field(description="The event type.")]


def _tool_call(call: Callable[[], _T]) -> _T:
    try:
        return call()
    except BundlekitError as exc:
        raise ToolError(str(exc)) from None


def _resource_call(
    call: Callable[[], _T], not_found: tuple[type[BundlekitError], ...] = (MemoryNotFoundError, InvalidKeyError)
) -> _T:
    """``call()``; an error in ``not_found`` (the URI names no resource) is the protocol's "resource not
    found", JSON-RPC -32602 since SEP-2164 (``ResourceNotFoundError``); any other is a resource error."""
    try:
        return call()
    except not_found as exc:
        raise ResourceNotFoundError(str(exc)) from None
    except BundlekitError as exc:
        raise ResourceError(str(exc)) from None


def _version() -> str:
    try:
        return version("bundlekit")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0"


def build_server(tools: MemoryTools) -> MCPServer:
    """An ``MCPServer`` whose tools, resources and prompt answer from ``tools``."""
    server: MCPServer = MCPServer(
        SERVER_NAME, instructions=_INSTRUCTIONS, version=_version(), log_level="WARNING"
    )
    _add_read_tools(server, tools)
    if not tools.read_only:
        _add_write_tools(server, tools)
    if tools.can_publish:
        _add_publish_tool(server, tools)
    _add_resources(server, tools)
    return server


def _add_read_tools(server: MCPServer, tools: MemoryTools) -> None:
    @server.tool(
        name="memory_recall",
        description=(
            "Search long-term memory. Returns the memories whose name, description or body contain the "
            "query (case-insensitive substring), best first (salience x recency), with their bodies."
        ),
        annotations=_READ,
    )
    async def memory_recall(
        query: Annotated[str, Field(description="A word or phrase to look for.")],
        limit: Annotated[int, Field(description="How many memories at most.", ge=1, le=MAX_RECALL_LIMIT)] = 5,
    ) -> list[dict[str, Any]]:
        return _tool_call(lambda: tools.recall(query, limit))

    @server.tool(
        name="memory_context",
        description=(
            "The memory context block to read before working: the index of all memories, the most "
            "relevant ones in full and the recent timeline, within a token budget."
        ),
        annotations=_READ,
    )
    async def memory_context(
        max_tokens: Annotated[int, Field(description="Budget in tokens (about 4 characters each).", ge=1)] = (
            DEFAULT_CONTEXT_TOKENS
        ),
    ) -> str:
        return _tool_call(lambda: tools.context(max_tokens))

    @server.tool(
        name="memory_show", description="One memory in full: its frontmatter fields and its body.", annotations=_READ
    )
    async def memory_show(key: Key) -> ShowResult:
        return cast(ShowResult, _tool_call(lambda: tools.show(key)))

    @server.tool(
        name="memory_list",
        description="Every memory (key, name, description, type, revision, dates, tags), without bodies.",
        annotations=_READ,
    )
    async def memory_list() -> list[dict[str, Any]]:
        return _tool_call(tools.list)


def _add_write_tools(server: MCPServer, tools: MemoryTools) -> None:
    @server.tool(
        name="memory_write",
        description=(
            "Create or update one memory. type is user (who the user is), feedback (how to work with "
            "them), project (ongoing work) or reference (where things are). Pass expected_revision from "
            "memory_show (0 for a new key) so a concurrent change is not overwritten. Credentials and "
            "secrets are refused."
        ),
        annotations=_WRITE,
    )
    async def memory_write(
        key: Key,
        name: Annotated[str, Field(description="A short title, one line.")],
        description: Annotated[str, Field(description="One line saying what this memory is; shown in the index.")],
        type: Annotated[
            MemoryType,
            Field(description="user (who the user is), feedback (how to work with them), project (ongoing work) "
                              "or reference (where things are)."),
        ],
        body: Annotated[str, Field(description="The memory itself, in Markdown.")],
        tags: Annotated[list[str] | None, Field(description="Optional tags.")] = None,
        important: Annotated[bool | None, Field(description="True keeps it near the top of recall.")] = None,
        expected_revision: Annotated[
            int | None, Field(description="The revision you last read (0: the key must be new).", ge=0)
        ] = None,
    ) -> WriteResult:
        return cast(WriteResult, _tool_call(
            lambda: tools.write(key, name, description, type, body, tags, important, expected_revision)
        ))

    @server.tool(
        name="memory_forget",
        description="Delete one memory. The timeline records that it was forgotten, never its body.",
        annotations=_FORGET,
    )
    async def memory_forget(key: Key) -> ForgetResult:
        return cast(ForgetResult, _tool_call(lambda: tools.forget(key)))

    @server.tool(
        name="memory_note",
        description="Append an event to today's timeline (for example a session summary).",
        annotations=_NOTE,
    )
    async def memory_note(
        type: Annotated[str, Field(description="The event type, e.g. session or decision.")],
        data: Annotated[dict[str, Any] | None, Field(description="JSON fields of the event.")] = None,
    ) -> NoteResult:
        return cast(NoteResult, _tool_call(lambda: tools.note(type, data)))


def _add_publish_tool(server: MCPServer, tools: MemoryTools) -> None:
    @server.tool(
        name="bundle_publish",
        description=(
            "Build the memory tree into a content-addressed bundle and pin it; returns the root CID and "
            "each pinner's result."
        ),
        annotations=_PUBLISH,
    )
    async def bundle_publish(
        pinners: Annotated[list[str] | None, Field(description="Pinner names (default: the server's).")] = None,
        require: Annotated[str, Field(description="all: every pinner must hold it; any: one is enough.")] = "all",
    ) -> dict[str, Any]:
        return _tool_call(lambda: tools.publish(pinners, require))


def _add_resources(server: MCPServer, tools: MemoryTools) -> None:
    @server.resource(
        "memory://index", name="index", description="MEMORY.md: one line per memory.", mime_type="text/markdown"
    )
    def index() -> str:
        return _resource_call(tools.index)

    @server.resource(
        "memory://timeline/{date}",
        name="timeline",
        description="The timeline entries of one UTC day (YYYY-MM-DD), as a JSON array.",
        mime_type="application/json",
    )
    def timeline(date: str) -> str:
        # A date that is not YYYY-MM-DD (tools' UsageError) names no resource either.
        entries = _resource_call(lambda: tools.timeline_day(date), not_found=(UsageError,))
        return json.dumps(entries, ensure_ascii=False)

    @server.resource(
        "memory://{key}", name="memory", description="One memory file (frontmatter and body).",
        mime_type="text/markdown",
    )
    def memory(key: str) -> str:
        return _resource_call(lambda: tools.raw(key))

    @server.prompt(name="memory_context", description="The memory context block, ready to read before a task.")
    def memory_context_prompt(
        max_tokens: Annotated[
            str,
            Field(description=f"Budget in tokens (about 4 characters each): a positive integer, in decimal "
                              f"digits; default {DEFAULT_CONTEXT_TOKENS}."),
        ] = str(DEFAULT_CONTEXT_TOKENS),
    ) -> str:
        # The SDK turns any other exception of a prompt into "Internal server error": only an
        # MCPError reaches the client with its message, so bad arguments are INVALID_PARAMS.
        if not (max_tokens.isascii() and max_tokens.isdigit()):
            raise MCPError(INVALID_PARAMS, f"memory_context: max_tokens must be a positive integer, not {max_tokens!r}")
        try:
            return tools.context(int(max_tokens))
        except BundlekitError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None


def run_stdio(tools: MemoryTools) -> None:
    """Serve over stdin/stdout until the client closes the stream; Ctrl-C stops it at once with exit 130.

    The SDK reads stdin in a worker thread that a cancelled event loop waits for, so
    an interrupt would otherwise hang until stdin closes. The handler removes a
    read-only load's temporary tree, says "interrupted" and ends the process; every
    write is atomic (temp file and rename), so nothing is left half-written.
    """

    def interrupted(_signum: int, _frame: object) -> None:
        tools.served.close()
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
        os._exit(130)

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        build_server(tools).run("stdio")
    finally:
        signal.signal(signal.SIGINT, previous)


def run_http(tools: MemoryTools, host: str, port: int) -> None:
    """Serve the streamable HTTP transport at ``http://host:port/mcp`` until interrupted.

    On loopback the SDK's DNS-rebinding protection admits only loopback Host
    headers (``address.allowed_hosts``: the usual names and the bound address);
    on another interface (``--host``) the Host header is not checked.
    The app is the SDK's (``streamable_http_app``), served by ``http_server``
    within its bounds (connections, head and body deadlines), not by the SDK's
    ``run``, which starts uvicorn with none.
    uvicorn returns (or re-raises) only when a signal stopped it: either way this
    raises ``KeyboardInterrupt``, so the CLI exits 130 like any interrupted command.
    An address that cannot be bound is a ``UsageError`` (exit 2, as for ``serve``),
    not uvicorn's own log line and exit status 3 (which is bundlekit's verification code).
    """
    _check_bindable(host, port)
    security = None
    if is_loopback(host):
        allowed = allowed_hosts(host, port)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=allowed,
            allowed_origins=[f"http://{h}" for h in allowed],
        )
    try:
        app = build_server(tools).streamable_http_app(transport_security=security, host=host)
        http_server.serve(app, host, port)
    except SystemExit as exc:  # uvicorn's startup failure (the address was taken since the check)
        if exc.code not in (0, None):
            raise UsageError(f"cannot serve on {host}:{port}; choose another --http port or --host") from None
    raise KeyboardInterrupt


def _check_bindable(host: str, port: int) -> None:
    """``UsageError`` when ``host:port`` cannot be listened on (in use, not an address of this machine)."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
        family, kind, proto, _name, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            probe.bind(address)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --http port or --host"
        ) from None
