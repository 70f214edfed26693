"""A ``memory_write`` the secret guard refuses says what an MCP client can do (issue 34, item 9): the tool has
no ``allow_secrets`` argument, so the message never tells the client to pass one, and it names the field and
line of what the client sent, not a file that was never written."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.errors import SecretDetectedError
from bundlekit.mcp_server import MemoryTools, ServedMemory
from bundlekit.memory import Memory

AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


def test_a_refused_write_names_the_field_and_offers_no_argument_the_tool_lacks(tmp_path: Path) -> None:
    tools = MemoryTools(ServedMemory(Memory(tmp_path), read_only=False, origin="x"))
    with pytest.raises(SecretDetectedError) as caught:
        tools.write("user_keys", "Keys", "d", "user", f"intro\nthe key is {AWS_KEY}\n")
    message = str(caught.value)
    assert message.startswith("user_keys.md (not written) body line 2 looks like an AWS access key id")
    assert "allow_secrets" not in message and "--allow-secrets" not in message
    assert "remove it and call memory_write again" in message
    assert AWS_KEY not in message
    assert not (tmp_path / "user_keys.md").exists()
