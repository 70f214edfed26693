"""A mistyped command is a usage error (exit 2) that names the closest real command."""

from __future__ import annotations

from .conftest import Run


def test_a_mistyped_command_suggests_the_closest_one(run: Run) -> None:
    result = run("buld")
    assert result.exit_code == 2
    assert "no such command 'buld'; did you mean 'build'?" in result.stderr
    assert result.stdout == ""


def test_a_mistyped_subcommand_suggests_the_closest_one(run: Run) -> None:
    result = run("memory", "lsit")
    assert result.exit_code == 2
    assert "no such command 'lsit'; did you mean 'list'?" in result.stderr


def test_a_command_like_nothing_lists_the_commands(run: Run) -> None:
    result = run("xyzzy")
    assert result.exit_code == 2
    assert "no such command 'xyzzy'; the commands are build, cid," in result.stderr
