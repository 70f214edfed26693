"""``bundlekit key message``: the exact bytes to sign."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["key", "message", *args])
    return result.exit_code, result.output


def test_key_message_prints_the_exact_message_then_a_final_newline() -> None:
    assert invoke("--namespace", "work") == (0, "bundlekit memory key v1\nnamespace: work\n")


def test_key_message_hex_prints_the_utf8_bytes() -> None:
    code, out = invoke("--namespace", "w", "--hex")
    assert code == 0 and bytes.fromhex(out.strip()[2:]) == b"bundlekit memory key v1\nnamespace: w"


def test_key_message_for_three_ws_prints_that_runtime_s_message() -> None:
    assert invoke("--compat", "three.ws", "--agent-id", "agent-42") == (0, "agent-3d:memory:v1:agent-42\n")


def test_key_message_needs_a_namespace() -> None:
    code, out = invoke()
    assert code == 2 and "--namespace" in out


def test_key_message_refuses_a_namespace_with_a_newline() -> None:
    code, out = invoke("--namespace", "a\nb")
    assert code == 2 and "control character" in out


# A refusal says exactly which option is missing or misplaced, on stderr.


def invoke_stderr(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["key", "message", *args])
    return result.exit_code, result.stderr


def test_key_message_compat_without_agent_id_asks_for_agent_id_only() -> None:
    code, err = invoke_stderr("--compat", "three.ws")
    assert code == 2
    assert "needs --agent-id" in err
    assert "--namespace" not in err


def test_key_message_compat_with_namespace_says_to_drop_it() -> None:
    code, err = invoke_stderr("--compat", "three.ws", "--agent-id", "a1", "--namespace", "ns")
    assert code == 2
    assert "drop --namespace" in err


def test_key_message_agent_id_without_compat_points_to_compat() -> None:
    code, err = invoke_stderr("--namespace", "ns", "--agent-id", "a1")
    assert code == 2
    assert "--compat three.ws" in err


@pytest.mark.parametrize("args", [(), ("--hex",)])
def test_key_message_without_namespace_is_a_one_line_usage_error(args: tuple[str, ...]) -> None:
    code, err = invoke_stderr(*args)
    assert code == 2
    assert err.startswith("error: give --namespace NS")
    assert err.count("\n") == 1
