"""``bundlekit mcp`` over stdio, driven by the official MCP SDK's client (``mcp.Client``).

Source checked: the ``mcp`` Python SDK 2.3.0 (PyPI ``mcp``; github modelcontextprotocol/python-sdk):
``mcp.Client`` with ``StdioServerParameters``, ``list_tools``/``call_tool``/``read_resource``/``get_prompt``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.conftest import make_tree, run_client, server_env, shared_client, SharedClient, skip_without_the_sdk, stdio_params

skip_without_the_sdk()

READ_TOOLS = {"memory_recall", "memory_context", "memory_show", "memory_list"}
WRITE_TOOLS = {"memory_write", "memory_forget", "memory_note"}


@pytest.fixture(scope="module")
def reader_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tree of the shared server: only tests that leave it as they found it use it."""
    return make_tree(tmp_path_factory.mktemp("stdio") / "coach")


@pytest.fixture(scope="module")
def reader(reader_tree: Path) -> Iterator[SharedClient]:
    """One stdio server over ``reader_tree`` for the tests that read or are refused (one start, not seven)."""
    yield from shared_client(stdio_params("--memory", str(reader_tree)))


def _structured(result: Any) -> Any:
    assert not result.is_error, result.content
    data = result.structured_content
    return data["result"] if isinstance(data, dict) and set(data) == {"result"} else data


def test_a_writable_tree_lists_read_and_write_tools_with_schemas(reader: SharedClient) -> None:
    async def session(client: Any) -> Any:
        return (await client.list_tools()).tools

    tools = reader.run(session)
    names = {tool.name for tool in tools}
    assert names == READ_TOOLS | WRITE_TOOLS  # no bundle_publish without --allow-publish
    write = next(tool for tool in tools if tool.name == "memory_write")
    assert set(write.input_schema["required"]) == {"key", "name", "description", "type", "body"}
    assert "expected_revision" in write.input_schema["properties"]
    assert all(tool.description for tool in tools)


def test_write_then_recall_show_and_forget_round_trip(tree: Path) -> None:
    async def session(client: Any) -> tuple[Any, ...]:
        written = await client.call_tool("memory_write", {
            "key": "reference_pitch", "name": "Pitch", "description": "where Saturday games are",
            "type": "reference", "body": "Riverside pitch 3, gate code on the fence.", "tags": ["place"],
        })
        recalled = await client.call_tool("memory_recall", {"query": "riverside", "limit": 3})
        shown = await client.call_tool("memory_show", {"key": "reference_pitch"})
        forgot = await client.call_tool("memory_forget", {"key": "reference_pitch"})
        listed = await client.call_tool("memory_list", {})
        return written, recalled, shown, forgot, listed

    written, recalled, shown, forgot, listed = run_client(stdio_params("--memory", str(tree)), session)
    assert _structured(written) == {"key": "reference_pitch", "revision": 1, "file": "reference_pitch.md"}
    hits = _structured(recalled)
    assert hits[0]["key"] == "reference_pitch"  # by meaning every memory is a hit: the nearest first
    assert hits[0]["body"] == "Riverside pitch 3, gate code on the fence."
    assert _structured(shown)["meta"]["tags"] == ["place"]
    assert _structured(forgot) == {"forgot": "reference_pitch"}
    assert "reference_pitch" not in {row["key"] for row in _structured(listed)}
    assert not (tree / "reference_pitch.md").exists()


def test_a_credential_is_refused_as_a_tool_error_and_nothing_is_written(
    reader: SharedClient, reader_tree: Path
) -> None:
    secret = "sk-ant-api03-" + "Q" * 93 + "AA"

    async def session(client: Any) -> Any:
        return await client.call_tool("memory_write", {
            "key": "leak", "name": "Leak", "description": "a key", "type": "reference", "body": secret,
        })

    result = reader.run(session)
    assert result.is_error
    text = result.content[0].text
    assert "Anthropic API key" in text and secret not in text
    assert not (reader_tree / "leak.md").exists()


def test_a_stale_expected_revision_is_refused(reader: SharedClient, reader_tree: Path) -> None:
    async def session(client: Any) -> Any:
        return await client.call_tool("memory_write", {
            "key": "user_role", "name": "Role", "description": "changed", "type": "user",
            "body": "new body", "expected_revision": 0,
        })

    result = reader.run(session)
    assert result.is_error
    assert "revision" in result.content[0].text
    assert "new body" not in (reader_tree / "user_role.md").read_text(encoding="utf-8")


def test_an_unknown_key_and_a_bad_type_are_tool_errors_not_crashes(reader: SharedClient, reader_tree: Path) -> None:
    async def session(client: Any) -> tuple[Any, Any, Any]:
        missing = await client.call_tool("memory_show", {"key": "nope"})
        bad = await client.call_tool("memory_write", {
            "key": "x", "name": "X", "description": "d", "type": "diary", "body": "b",
        })
        still_alive = await client.call_tool("memory_list", {})
        return missing, bad, still_alive

    missing, bad, alive = reader.run(session)
    assert missing.is_error and "no memory 'nope'" in missing.content[0].text
    assert bad.is_error and "type" in bad.content[0].text  # the schema's enum refuses it (test_schemas.py)
    assert not (reader_tree / "x.md").exists()
    assert len(_structured(alive)) == 3


def test_resources_serve_the_index_a_memory_and_a_timeline_day(reader: SharedClient, reader_tree: Path) -> None:
    async def session(client: Any) -> tuple[Any, ...]:
        index = await client.read_resource("memory://index")
        one = await client.read_resource("memory://user_role")
        day = await client.read_resource("memory://timeline/2026-04-14")
        templates = await client.list_resource_templates()
        return index, one, day, templates

    index, one, day, templates = reader.run(session)
    assert index.contents[0].text == (reader_tree / "MEMORY.md").read_text(encoding="utf-8")
    assert one.contents[0].text == (reader_tree / "user_role.md").read_text(encoding="utf-8")
    entries = json.loads(day.contents[0].text)
    assert [entry["type"] for entry in entries] == ["session"]
    assert {t.uri_template for t in templates.resource_templates} == {"memory://{key}", "memory://timeline/{date}"}


def test_the_memory_context_prompt_and_tool_return_the_context_block(reader: SharedClient) -> None:
    async def session(client: Any) -> tuple[Any, Any]:
        prompt = await client.get_prompt("memory_context", {"max_tokens": "4000"})
        tool = await client.call_tool("memory_context", {"max_tokens": 4000})
        return prompt, tool

    prompt, tool = reader.run(session)
    text = prompt.messages[0].content.text
    assert "Plays as a winger" in text
    assert tool.content[0].text == text


def test_a_note_lands_in_todays_timeline(tree: Path) -> None:
    async def session(client: Any) -> Any:
        return await client.call_tool("memory_note", {"type": "decision", "data": {"summary": "drills first"}})

    entry = _structured(run_client(stdio_params("--memory", str(tree)), session))
    assert entry["type"] == "decision" and entry["summary"] == "drills first"
    day = tree / "timeline" / f"{entry['ts'][:10]}.jsonl"
    assert "drills first" in day.read_text(encoding="utf-8")


def test_errors_carry_bundlekit_messages_and_the_server_survives(reader: SharedClient) -> None:
    from mcp import MCPError

    async def session(client: Any) -> tuple[Any, str, str, Any]:
        note = await client.call_tool("memory_note", {"type": "decision", "data": {"type": "other"}})
        prompt_errors = []
        for value in ("many", "0"):
            try:
                await client.get_prompt("memory_context", {"max_tokens": value})
            except MCPError as exc:
                prompt_errors.append(exc.message)
        alive = await client.call_tool("memory_list", {})
        return note, prompt_errors[0], prompt_errors[1], alive

    note, not_a_number, zero, alive = reader.run(session)
    assert note.is_error and "data may not set 'type'" in note.content[0].text
    assert "max_tokens must be a whole number from 0 to 100000000, not 'many'" in not_a_number
    assert "max_tokens must be at least 1" in zero
    assert len(_structured(alive)) == 3


def test_ctrl_c_stops_a_stdio_server_at_once_with_exit_130(tree: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bundlekit", "mcp", "--memory", str(tree)],
        env=server_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stderr is not None
        assert "over stdio" in proc.stderr.readline()  # serving, with stdin still open
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 130
        assert "interrupted" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
