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

import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from importlib.metadata import PackageNotFoundError, version
from types import FrameType
from typing import Annotated, Any, TypeVar

from mcp import MCPError
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import INVALID_PARAMS
from pydantic import Field

from bundlekit._signals import STOP_SIGNALS, Interrupted, exit_code, is_ignored
from bundlekit.errors import BundlekitError, UsageError
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


def _tool_call(call: Callable[[], _T]) -> _T:
    try:
        return call()
    except BundlekitError as exc:
        raise ToolError(str(exc)) from None


def _resource_call(call: Callable[[], _T]) -> _T:
    try:
        return call()
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
    )
    async def memory_context(
        max_tokens: Annotated[int, Field(description="Budget in tokens (about 4 characters each).", ge=1)] = (
            DEFAULT_CONTEXT_TOKENS
        ),
    ) -> str:
        return _tool_call(lambda: tools.context(max_tokens))

    @server.tool(name="memory_show", description="One memory in full: its frontmatter fields and its body.")
    async def memory_show(key: Key) -> dict[str, Any]:
        return _tool_call(lambda: tools.show(key))

    @server.tool(
        name="memory_list",
        description="Every memory (key, name, description, type, revision, dates, tags), without bodies.",
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
    )
    async def memory_write(
        key: Key,
        name: Annotated[str, Field(description="A short title, one line.")],
        description: Annotated[str, Field(description="One line saying what this memory is; shown in the index.")],
        type: Annotated[str, Field(description="user, feedback, project or reference.")],
        body: Annotated[str, Field(description="The memory itself, in Markdown.")],
        tags: Annotated[list[str] | None, Field(description="Optional tags.")] = None,
        important: Annotated[bool | None, Field(description="True keeps it near the top of recall.")] = None,
        expected_revision: Annotated[
            int | None, Field(description="The revision you last read (0: the key must be new).", ge=0)
        ] = None,
    ) -> dict[str, Any]:
        return _tool_call(
            lambda: tools.write(key, name, description, type, body, tags, important, expected_revision)
        )

    @server.tool(
        name="memory_forget",
        description="Delete one memory. The timeline records that it was forgotten, never its body.",
    )
    async def memory_forget(key: Key) -> dict[str, Any]:
        return _tool_call(lambda: tools.forget(key))

    @server.tool(
        name="memory_note",
        description="Append an event to today's timeline (for example a session summary).",
    )
    async def memory_note(
        type: Annotated[str, Field(description="The event type, e.g. session or decision.")],
        data: Annotated[dict[str, Any] | None, Field(description="JSON fields of the event.")] = None,
    ) -> dict[str, Any]:
        return _tool_call(lambda: tools.note(type, data))


def _add_publish_tool(server: MCPServer, tools: MemoryTools) -> None:
    @server.tool(
        name="bundle_publish",
        description=(
            "Build the memory tree into a content-addressed bundle and pin it; returns the root CID and "
            "each pinner's result."
        ),
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
        return json.dumps(_resource_call(lambda: tools.timeline_day(date)), ensure_ascii=False)

    @server.resource(
        "memory://{key}", name="memory", description="One memory file (frontmatter and body).",
        mime_type="text/markdown",
    )
    def memory(key: str) -> str:
        return _resource_call(lambda: tools.raw(key))

    @server.prompt(name="memory_context", description="The memory context block, ready to read before a task.")
    def memory_context_prompt(max_tokens: str = str(DEFAULT_CONTEXT_TOKENS)) -> str:
        # The SDK turns any other exception of a prompt into "Internal server error": only an
        # MCPError reaches the client with its message, so bad arguments are INVALID_PARAMS.
        if not (max_tokens.isascii() and max_tokens.isdigit()):
            raise MCPError(INVALID_PARAMS, f"memory_context: max_tokens must be a positive integer, not {max_tokens!r}")
        try:
            return tools.context(int(max_tokens))
        except BundlekitError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None


def run_stdio(tools: MemoryTools, announce: Callable[[], None] | None = None) -> None:
    """Serve over stdin/stdout until the client closes the stream; a signal stops it at once.

    SIGTERM (how MCP clients stop a server) says "stopped" and exits 0; Ctrl-C
    and SIGHUP say "interrupted" and exit 130 and 129 (``_signals``). The SDK
    reads stdin in a worker thread that a cancelled event loop waits for, so
    unwinding would hang until stdin closes: the handler closes the served
    source, says what happened and ends the process. A read-only bundle is held
    in memory (``source``), so nothing of it is on disk to remove; every write to
    a tree is atomic (temp file and rename), so nothing is left half-written.
    A signal set to be ignored (``nohup``'s SIGHUP) stays ignored. ``announce``
    runs once the handlers are in place, so a signal sent as soon as the
    announcement is seen already takes this path.
    """

    def stop(signum: int, _frame: object) -> None:
        tools.served.close()
        sys.stderr.write("stopped\n" if signum == signal.SIGTERM else "interrupted\n")
        sys.stderr.flush()
        os._exit(0 if signum == signal.SIGTERM else exit_code(Interrupted(signum)))

    signals = [sig for sig in (signal.SIGINT, *STOP_SIGNALS) if not is_ignored(sig)]
    previous = {sig: signal.signal(sig, stop) for sig in signals}
    try:
        if announce is not None:
            announce()
        build_server(tools).run("stdio")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_http(tools: MemoryTools, host: str, port: int, announce: Callable[[], None] | None = None) -> None:
    """Serve the streamable HTTP transport at ``http://host:port/mcp`` until interrupted.

    On loopback the SDK's DNS-rebinding protection admits only loopback Host
    headers (``address.allowed_hosts``: the usual names and the bound address);
    on another interface (``--host``) the Host header is not checked.
    uvicorn returns (or re-raises) only when a signal stopped it. SIGTERM, which
    uvicorn shuts down on and then re-raises (reaching the CLI's handler,
    ``_signals``), is a server's normal end: this returns. Any other signal
    raises ``KeyboardInterrupt`` (Ctrl-C) or ``Interrupted`` (SIGHUP), so the
    CLI exits 128 + the signal like any interrupted command. uvicorn handles
    SIGINT and SIGTERM only; SIGHUP asks for the same graceful shutdown as
    SIGTERM (``_hangup_as_sigterm``) and is then reported as SIGHUP.
    ``announce`` runs inside that handling, so a signal sent as soon as the
    announcement is seen takes this path.
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
    hangups: list[int] = []
    try:
        with _hangup_as_sigterm(hangups):
            if announce is not None:
                announce()
            build_server(tools).run("streamable-http", host=host, port=port, transport_security=security)
    except SystemExit as exc:  # uvicorn's startup failure (the address was taken since the check)
        if exc.code not in (0, None):
            raise UsageError(f"cannot serve on {host}:{port}; choose another --http port or --host") from None
    except Interrupted as exc:
        if hangups:
            raise Interrupted(signal.SIGHUP) from None
        if exc.signum == signal.SIGTERM:
            return
        raise
    raise KeyboardInterrupt


@contextlib.contextmanager
def _hangup_as_sigterm(hangups: list[int]) -> Iterator[None]:
    """While in the block, SIGHUP (recorded in ``hangups``) runs whatever handles SIGTERM at that moment:
    uvicorn's graceful shutdown while it serves, the CLI's ``Interrupted`` before. Ignored stays ignored."""
    if is_ignored(signal.SIGHUP):
        yield
        return

    def hangup(signum: int, frame: FrameType | None) -> None:
        hangups.append(signum)
        handler = signal.getsignal(signal.SIGTERM)
        if not callable(handler):
            raise Interrupted(signum)
        handler(signal.SIGTERM, frame)

    previous = signal.signal(signal.SIGHUP, hangup)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, previous)


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
