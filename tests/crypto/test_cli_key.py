"""``bundlekit key message``: the exact bytes to sign."""

from __future__ import annotations

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
