"""QA regressions: `bundlekit key message` says exactly which option is missing or misplaced."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["key", "message", *args])
    return result.exit_code, result.stderr


def test_compat_without_agent_id_asks_for_agent_id_only() -> None:
    code, err = _run("--compat", "three.ws")
    assert code == 2
    assert "needs --agent-id" in err
    assert "--namespace" not in err


def test_compat_with_namespace_says_to_drop_it() -> None:
    code, err = _run("--compat", "three.ws", "--agent-id", "a1", "--namespace", "ns")
    assert code == 2
    assert "drop --namespace" in err


def test_agent_id_without_compat_points_to_compat() -> None:
    code, err = _run("--namespace", "ns", "--agent-id", "a1")
    assert code == 2
    assert "--compat three.ws" in err


@pytest.mark.parametrize("args", [(), ("--hex",)])
def test_missing_namespace_is_a_one_line_usage_error(args: tuple[str, ...]) -> None:
    code, err = _run(*args)
    assert code == 2
    assert err.startswith("error: give --namespace NS")
    assert err.count("\n") == 1
