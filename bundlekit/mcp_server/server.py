"""The MCP server: :class:`MemoryTools` exposed through the official ``mcp`` SDK (``bundlekit[mcp]``).

Tools (each with a JSON schema and a description written for a model),
resources (``memory://index``, ``memory://{key}``, ``memory://timeline/{date}``)
and the ``memory_context`` prompt; specs/mcp.md is the contract. A read-only
server does not list the write tools; ``bundle_publish`` is listed only when
publishing was allowed. Every :class:`~bundlekit.errors.BundlekitError` becomes
a tool (or resource) error carrying bundlekit's message, never a crash.

Everything the server answers passes ``bundlekit._redact.redact``, the one
redaction every output of bundlekit passes (:class:`_RedactingServer`): tool
results and tool errors (the SDK's own too, such as pydantic's echo of an
argument it refused, or an unknown tool's name), resources, resource errors,
prompts and prompt errors. A credential a client sends in any argument is never
sent back.

This module imports the SDK at the top: only ``bundlekit mcp`` loads it (through
``importlib``), so the base install and ``bundlekit --help`` never pay for it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterable, Iterator
from importlib.metadata import PackageNotFoundError, version
from types import FrameType
from typing import Annotated, Any, Literal, TypedDict, TypeVar, cast

from mcp import MCPError
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import INVALID_PARAMS, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError, with_config

from bundlekit._bounds import CONTEXT_TOKENS
from bundlekit._redact import each_string, redact
from bundlekit._signals import STOP_SIGNALS, Interrupted, exit_code, is_ignored
from bundlekit.errors import BundlekitError, InvalidKeyError, MemoryNotFoundError, UsageError
from bundlekit.mcp_server import http_server
from bundlekit.mcp_server.address import allowed_hosts, is_loopback
from bundlekit.net.http import redact_handlers
from bundlekit.mcp_server.tools import DEFAULT_CONTEXT_TOKENS, MAX_RECALL_LIMIT, MemoryTools

__all__ = ["READ_TOOLS", "SERVER_NAME", "WRITE_TOOLS", "build_server", "run_http", "run_stdio"]

SERVER_NAME = "bundlekit-memory"
READ_TOOLS = ("memory_recall", "memory_context", "memory_show", "memory_list")
WRITE_TOOLS = ("memory_write", "memory_forget", "memory_note")

_T = TypeVar("_T")
_M = TypeVar("_M", bound=BaseModel)

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


def _redacted(value: Any) -> Any:
    """``value`` (JSON-ready data) with every string, mapping keys included, passed through ``redact``."""
    return each_string(value, redact)


def _redacted_model(model: _M) -> _M:
    """A result model (``CallToolResult``, ``GetPromptResult``) as it may leave: its JSON redacted as one text
    (a listing of 10,000 memories is one scan, not 80,000), read back only when something was replaced; a
    replacement holds no character JSON escapes, and should the text not read back, each string is redacted
    on its own instead."""
    text = model.model_dump_json(by_alias=True, exclude_unset=True)
    clean = redact(text)
    if clean == text:
        return model
    try:
        return type(model).model_validate_json(clean)
    except ValidationError:
        return type(model).model_validate(_redacted(model.model_dump(by_alias=True, exclude_unset=True)))


def _redacted_error(exc: MCPError) -> MCPError:
    return MCPError(exc.code, redact(exc.message), _redacted(exc.data))


def _invalid_arguments(tool: str, error: ValidationError) -> str:
    """The arguments ``error`` refused, by field and reason, never with the value: pydantic's own text quotes
    each refused value (cut to its first and last characters, so no rule can recognise what it shows)."""
    problems = "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or 'arguments'}: {item['msg']}" for item in error.errors()
    )
    return f"Error executing tool {tool}: invalid arguments: {problems}"


class _RedactingServer(MCPServer):
    """``MCPServer`` whose every answer and error passes ``redact`` (the module docstring): the three
    entry points every tool call, resource read and prompt goes through, overridden once."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:  # the SDK reads the message and whether its cause is a ValidationError
            cause = exc.__cause__
            message = _invalid_arguments(name, cause) if isinstance(cause, ValidationError) else str(exc)
            raise type(exc)(redact(message)) from cause
        except MCPError as exc:
            raise _redacted_error(exc) from None
        return _redacted_model(result) if isinstance(result, BaseModel) else result

    async def read_resource(self, uri: Any, context: Context[Any, Any] | None = None) -> Any:
        try:
            contents = await super().read_resource(uri, context)
        except ResourceError as exc:
            raise type(exc)(redact(str(exc))) from exc.__cause__
        except MCPError as exc:
            raise _redacted_error(exc) from None
        if not isinstance(contents, Iterable):
            return contents
        return [
            dataclasses.replace(item, content=redact(item.content))
            if isinstance(item, ReadResourceContents) and isinstance(item.content, str)
            else item
            for item in contents
        ]

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> Any:
        try:
            result = await super().get_prompt(name, arguments, context)
        except MCPError as exc:
            raise _redacted_error(exc) from None
        except ValueError as exc:
            # The SDK's form of an unknown prompt name and of arguments the prompt refuses (missing, unexpected,
            # invalid). The spec's answer to both is -32602 (specification, server/prompts, "Error Handling");
            # as a ValueError it left as error code 0 with a traceback on the server's stderr.
            raise MCPError(INVALID_PARAMS, redact(str(exc))) from None
        return _redacted_model(result) if isinstance(result, BaseModel) else result


def _version() -> str:
    try:
        return version("bundlekit")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0"


def build_server(tools: MemoryTools) -> MCPServer:
    """An ``MCPServer`` whose tools, resources and prompt answer from ``tools``."""
    server: MCPServer = _RedactingServer(
        SERVER_NAME, instructions=_INSTRUCTIONS, version=_version(), log_level="WARNING"
    )
    redact_handlers(logging.getLogger().handlers)  # the SDK's own log lines (its stderr handler is on the root)
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
            "Search long-term memory. Returns the memories that best match the query, best first, with their "
            "bodies: by meaning and words (ranking 'hybrid') when an embedding model is installed, else those "
            "whose name, description or body contain the query (case-insensitive substring, 'salience'). Ask "
            "in your own words; each hit names the ranking used. With teammates' shared memories mounted, each "
            "hit names its source ('own', or the teammate who published it: read-only, never written)."
        ),
        annotations=_READ,
    )
    async def memory_recall(
        query: Annotated[str, Field(description="A question, word or phrase to look for.")],
        limit: Annotated[int, Field(description="How many memories at most.", ge=1, le=MAX_RECALL_LIMIT)] = 5,
        rank: Annotated[
            str | None,
            Field(description="salience (substring hits), relevance (BM25 of the words), semantic or hybrid "
                              "(by meaning); "
                              "default hybrid when available, else salience."),
        ] = None,
        min_similarity: Annotated[
            float | None,
            Field(description="By meaning only: leave out memories whose cosine similarity to the query is "
                              "below this (-1 to 1); default none, the nearest `limit` memories.", ge=-1, le=1),
        ] = None,
        usage_boost: Annotated[
            bool, Field(description="Let memories read after an earlier recall rank a little higher, and note "
                                    "these hits as returned (false: neither).")
        ] = True,
    ) -> list[dict[str, Any]]:
        return _tool_call(lambda: tools.recall(query, limit, rank, min_similarity, usage_boost))

    @server.tool(
        name="memory_context",
        description=(
            "The memory context block to read before working: the index of all memories, the most "
            "relevant ones in full and the recent timeline, within a token budget."
        ),
        annotations=_READ,
    )
    async def memory_context(
        max_tokens: Annotated[int, Field(description="Budget in tokens (about 4 characters each).", ge=1,
                                         le=CONTEXT_TOKENS.high)] = DEFAULT_CONTEXT_TOKENS,
    ) -> str:
        return _tool_call(lambda: tools.context(max_tokens))

    @server.tool(
        name="memory_show", description="One memory in full: its frontmatter fields and its body.", annotations=_READ
    )
    async def memory_show(
        key: Key,
        usage_boost: Annotated[
            bool, Field(description="Count this read toward the memory's rank when a recent recall returned it.")
        ] = True,
    ) -> ShowResult:
        return cast(ShowResult, _tool_call(lambda: tools.show(key, usage_boost)))

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
        try:
            budget = CONTEXT_TOKENS.parse(max_tokens, "memory_context: max_tokens")  # before int(): 5,000 digits
        except ValueError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        try:
            return tools.context(budget)
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


def run_http(tools: MemoryTools, host: str, port: int, announce: Callable[[], None] | None = None,
             deadlines: http_server.Deadlines | None = None) -> None:
    """Serve the streamable HTTP transport at ``http://host:port/mcp`` until interrupted.

    On loopback the SDK's DNS-rebinding protection admits only loopback Host
    headers (``address.allowed_hosts``: the usual names and the bound address);
    on another interface (``--host``) the Host header is not checked.
    The app is the SDK's (``streamable_http_app``), served by ``http_server``
    within its bounds (connections, head and body deadlines), not by the SDK's
    ``run``, which starts uvicorn with none.
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
    ``deadlines`` default to the environment's (``http_server.Deadlines.from_env``), read before anything is bound.
    """
    if deadlines is None:
        deadlines = http_server.Deadlines.from_env(os.environ)
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
            app = build_server(tools).streamable_http_app(transport_security=security, host=host)
            http_server.serve(app, host, port, deadlines)
    except SystemExit as exc:  # uvicorn's startup failure (the address was taken since the check)
        if exc.code not in (0, None):
            raise UsageError(f"cannot serve on {host}:{port}; choose another --http port or --host") from None
    except (Interrupted, Exception) as exc:
        # A stop signal: SIGHUP (recorded in ``hangups``) asked for SIGTERM's shutdown and is reported as itself.
        # One that lands while the SDK or uvicorn starts raises in their code, which may wrap it in an exception of
        # its own (seen once in CI: SIGHUP just after the announcement ended with "internal error ... Interrupted:
        # SIGTERM"), so the Interrupted is looked for among the error's causes too; any other error is raised.
        if hangups:
            raise Interrupted(signal.SIGHUP) from None
        found = _interruption_in(exc)
        if found is None:
            raise
        if found.signum == signal.SIGTERM:
            return
        raise Interrupted(found.signum) from None
    raise KeyboardInterrupt


def _interruption_in(exc: BaseException) -> Interrupted | None:
    """The :class:`Interrupted` ``exc`` wraps (its causes, contexts and, for a group, its members), or None."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        here = todo.pop()
        if id(here) in seen:
            continue
        seen.add(id(here))
        if isinstance(here, Interrupted):
            return here
        if isinstance(here, BaseExceptionGroup):
            todo.extend(here.exceptions)
        todo.extend(e for e in (here.__cause__, here.__context__) if e is not None)
    return None


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
