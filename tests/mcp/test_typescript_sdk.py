"""The server as the TypeScript SDK's client sees it (npm ``@modelcontextprotocol/sdk``, checked with 1.32.2).

``ts_sdk_client.mjs`` lists the tools and prompts, calls the write tools and reads unknown
resources through the SDK's ``Client`` over stdio; that client parses each answer with the SDK's
schemas and checks every ``structuredContent`` against the tool's ``outputSchema``. The SDK is
the one ``tests/package-lock.json`` pins (``npm ci`` in ``tests/``, as ``.ci/run`` does), found
through ``tests/reference_tools``. Without node or the SDK the test is skipped with the reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.conftest import ROOT
from tests.reference_tools import find

HERE = Path(__file__).resolve().parent


def _seen(tree: Path) -> dict[str, Any]:
    found = find({"@modelcontextprotocol/sdk": "1.32.2"})
    if isinstance(found, str):
        pytest.skip(found)
    node, modules = found
    done = subprocess.run(
        [node, str(HERE / "ts_sdk_client.mjs"), str(modules), str(tree), sys.executable, str(ROOT)],
        capture_output=True, text=True, timeout=120, check=True,
    )
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def test_the_typescript_client_accepts_every_schema_result_and_error(tree: Path) -> None:
    seen = _seen(tree)
    assert seen["tools"]["memory_write"]["input"]["properties"]["type"]["enum"] == [
        "user", "feedback", "project", "reference",
    ]
    assert seen["tools"]["memory_forget"]["annotations"]["destructiveHint"] is True
    assert seen["tools"]["memory_show"]["annotations"]["readOnlyHint"] is True
    outcomes = [(call["name"], call["outcome"]) for call in seen["calls"]]
    assert outcomes == [
        ("memory_write", "ok"), ("memory_show", "ok"), ("memory_note", "ok"), ("memory_forget", "ok"),
        ("memory_write", "tool error"),  # the enum refuses "diary"
    ]
    assert seen["calls"][2]["fields"] == ["ts", "type", "summary", "n"]
    assert {uri: answer["code"] for uri, answer in seen["resources"].items()} == {
        "memory://ghost": -32602, "memory://timeline/yesterday": -32602,
    }
    (argument,) = seen["prompts"][0]["arguments"]
    assert argument["description"]
