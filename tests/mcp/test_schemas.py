"""What the MCP server declares (issue 25, item 9) and how it answers an unknown resource (issue 24, item 8).

The server is built in-process (``build_server``) and read through the official SDK's own
client (``mcp.Client`` accepts an ``MCPServer``: github modelcontextprotocol/python-sdk 2.3.0,
``src/mcp/client/client.py``), so what is checked is what a client receives: the tool list's
input and output schemas and ``annotations`` (MCP ``ToolAnnotations``), the prompt's arguments,
and the JSON-RPC error of a ``resources/read``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bundlekit.mcp_server import MemoryTools, ServedMemory
from bundlekit.memory import Memory
from bundlekit.memory.record import MEMORY_TYPES
from tests.mcp.conftest import run_client, skip_without_the_sdk

skip_without_the_sdk()

# JSON-RPC "invalid params": the code of "resource not found" since SEP-2164 (Final), which retired
# the earlier -32002 (modelcontextprotocol.io/seps/2164-resource-not-found-error; the python SDK's
# ResourceNotFoundError, mcp 2.3.0 src/mcp/server/mcpserver/exceptions.py; mcp_types/jsonrpc.py
# lists -32002 as reserved, never reused).
RESOURCE_NOT_FOUND = -32602


def _server(tree: Path) -> Any:
    from bundlekit.mcp_server.server import build_server

    return build_server(MemoryTools(ServedMemory(Memory(tree), read_only=False, origin=str(tree))))


def _tools(tree: Path) -> dict[str, Any]:
    async def session(client: Any) -> Any:
        return (await client.list_tools()).tools

    return {tool.name: tool for tool in run_client(_server(tree), session)}


def _call(tree: Path, name: str, arguments: dict[str, Any]) -> Any:
    async def session(client: Any) -> Any:
        return await client.call_tool(name, arguments)

    return run_client(_server(tree), session)


def _read_error(tree: Path, uri: str) -> Any:
    from mcp import MCPError

    async def session(client: Any) -> Any:
        try:
            await client.read_resource(uri)
        except MCPError as exc:
            return exc
        raise AssertionError(f"{uri} was read")

    return run_client(_server(tree), session)


def test_memory_write_type_is_the_enum_of_the_four_memory_types(tree: Path) -> None:
    schema = _tools(tree)["memory_write"].input_schema["properties"]["type"]
    assert schema["type"] == "string"
    assert tuple(schema["enum"]) == MEMORY_TYPES
    assert schema["description"]


def test_a_type_outside_the_enum_is_refused_and_nothing_is_written(tree: Path) -> None:
    result = _call(tree, "memory_write", {"key": "k", "name": "N", "description": "d", "type": "todo", "body": "b"})
    assert result.is_error
    assert not (tree / "k.md").exists()


def test_read_tools_are_annotated_read_only_over_a_closed_world(tree: Path) -> None:
    tools = _tools(tree)
    for name in ("memory_recall", "memory_context", "memory_show", "memory_list"):
        annotations = tools[name].annotations
        assert annotations.read_only_hint is True, name
        assert annotations.open_world_hint is False, name


def test_forget_is_destructive_and_idempotent(tree: Path) -> None:
    annotations = _tools(tree)["memory_forget"].annotations
    assert annotations.read_only_hint is False
    assert annotations.destructive_hint is True
    assert annotations.idempotent_hint is True


def test_write_may_replace_a_memory_and_note_only_appends(tree: Path) -> None:
    tools = _tools(tree)
    write, note = tools["memory_write"].annotations, tools["memory_note"].annotations
    assert (write.destructive_hint, write.idempotent_hint) == (True, False)  # a rewrite bumps the revision
    assert (note.destructive_hint, note.idempotent_hint) == (False, False)


@pytest.mark.parametrize(
    ("tool", "fields"),
    [
        ("memory_show", {"key", "meta", "body"}),
        ("memory_write", {"key", "revision", "file"}),
        ("memory_forget", {"forgot"}),
        ("memory_note", {"ts", "type"}),
    ],
)
def test_an_object_result_has_an_output_schema_naming_its_fields(tree: Path, tool: str, fields: set[str]) -> None:
    schema = _tools(tree)[tool].output_schema
    assert schema["type"] == "object"
    assert set(schema["properties"]) == fields
    assert set(schema["required"]) == fields
    assert all(prop.get("description") for prop in schema["properties"].values())


def test_a_note_result_carries_the_data_fields_beside_ts_and_type(tree: Path) -> None:
    result = _call(tree, "memory_note", {"type": "decision", "data": {"summary": "drills first", "count": 3}})
    assert not result.is_error, result.content
    assert result.structured_content["summary"] == "drills first"
    assert result.structured_content["count"] == 3
    assert result.structured_content["type"] == "decision"


def test_a_show_result_matches_its_schema(tree: Path) -> None:
    result = _call(tree, "memory_show", {"key": "feedback_tone"})
    assert not result.is_error, result.content
    assert set(result.structured_content) == {"key", "meta", "body"}
    assert result.structured_content["meta"]["tags"] == ["style"]


def test_the_prompt_argument_max_tokens_has_a_description(tree: Path) -> None:
    async def session(client: Any) -> Any:
        return (await client.list_prompts()).prompts

    prompt = next(p for p in run_client(_server(tree), session) if p.name == "memory_context")
    (argument,) = prompt.arguments
    assert argument.name == "max_tokens"
    assert "positive integer" in argument.description
    assert argument.required is False


def test_a_memory_resource_of_an_unknown_key_is_resource_not_found(tree: Path) -> None:
    error = _read_error(tree, "memory://ghost")
    assert error.code == RESOURCE_NOT_FOUND
    assert "no memory 'ghost'" in error.message
    assert error.data == {"uri": "memory://ghost"}


def test_a_memory_resource_of_an_invalid_key_is_resource_not_found(tree: Path) -> None:
    assert _read_error(tree, "memory://bad%20key").code == RESOURCE_NOT_FOUND


def test_a_timeline_resource_of_a_malformed_date_is_resource_not_found(tree: Path) -> None:
    error = _read_error(tree, "memory://timeline/yesterday")
    assert error.code == RESOURCE_NOT_FOUND
    assert "YYYY-MM-DD" in error.message


def test_a_uri_matching_no_resource_or_template_is_resource_not_found(tree: Path) -> None:
    assert _read_error(tree, "file:///etc/passwd").code == RESOURCE_NOT_FOUND
