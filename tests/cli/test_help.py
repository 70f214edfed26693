"""Help a new user can act on: examples in every command's help that parse, choices shown, -V, one-line errors."""

from __future__ import annotations

import shlex

import click
import pytest
from click.testing import CliRunner

from bundlekit.cli import COMMANDS, cli
from bundlekit.cli._examples import EXAMPLES


def _command(path: str) -> click.Command:
    command: click.Command = cli
    ctx = click.Context(cli)
    for name in path.split():
        assert isinstance(command, click.Group)
        found = command.get_command(ctx, name)
        assert found is not None, path
        command = found
    return command


def test_every_command_and_every_memory_subcommand_has_examples() -> None:
    memory = _command("memory")
    assert isinstance(memory, click.Group)
    assert set(COMMANDS) | {f"memory {name}" for name in memory.commands} <= set(EXAMPLES)


@pytest.mark.parametrize("path", sorted(EXAMPLES))
def test_the_help_shows_the_examples(path: str) -> None:
    result = CliRunner().invoke(cli, [*path.split(), "--help"])
    assert result.exit_code == 0 and "Examples:" in result.stdout
    assert all(line in result.stdout for line in EXAMPLES[path])


@pytest.mark.parametrize(("path", "example"), [(p, e) for p, lines in sorted(EXAMPLES.items()) for e in lines])
def test_an_example_names_only_options_its_command_has(path: str, example: str) -> None:
    args = shlex.split(example)
    assert args[0] == "bundlekit" and " ".join(args[1:]).startswith(path)
    # The parser rejects an unknown option before --help answers: exit 0 means every option exists.
    result = CliRunner().invoke(cli, [*args[1:], "--help"])
    assert result.exit_code == 0, result.stderr


def test_dash_capital_v_prints_the_version() -> None:
    result = CliRunner().invoke(cli, ["-V"], prog_name="bundlekit")
    assert result.exit_code == 0 and result.stdout.startswith("bundlekit, version ")


@pytest.mark.parametrize("command", ["build", "pin", "pack"])
def test_profile_shows_its_choices(command: str) -> None:
    assert "[ipfs-car|kubo-cidv1|unixfs-v0-2015|unixfs-v1-2025]" in CliRunner().invoke(cli, [command, "--help"]).stdout


def test_recall_limit_is_described() -> None:
    assert "At most this many hits" in CliRunner().invoke(cli, ["memory", "recall", "--help"]).stdout


def test_memory_help_cuts_no_description() -> None:
    listing = CliRunner().invoke(cli, ["memory", "--help"]).stdout
    assert "..." not in listing[listing.index("Commands:") :]


def test_build_help_names_every_json_key_it_prints() -> None:
    text = " ".join(CliRunner().invoke(cli, ["build", "--help"]).stdout.split())
    assert "{root, manifest_uri, files, bytes, manifest_cid, signer}" in text


def test_a_missing_choice_option_is_one_error_line(tmp_path: object) -> None:
    result = CliRunner().invoke(cli, ["memory", "-d", str(tmp_path), "write", "k", "--name", "n", "--description", "d"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "Missing option '--type'" in result.stderr and "user, feedback, project, reference" in result.stderr
