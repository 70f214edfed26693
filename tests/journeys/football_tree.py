"""The small tree the broken-file journeys start from, typed through the CLI as a user would: ``memory init``,
then two memories (``user_role``, ``project_cup``). Each journey then plants its own bad file beside them."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from bundlekit.cli import cli

__all__ = ["football_tree", "memory_cli"]


def memory_cli(tree: Path, *args: str) -> Result:
    """``bundlekit memory -d TREE ARGS...``, in process."""
    return CliRunner().invoke(cli, ["memory", "-d", str(tree), *args])


def football_tree(root: Path) -> Path:
    """``root`` made a tree holding two good memories; returned."""
    assert memory_cli(root, "init").exit_code == 0
    for key, name in (("user_role", "Role: striker"), ("project_cup", "Cup final")):
        written = memory_cli(root, "write", key, "--name", name, "--description", "football on Saturday",
                             "--type", key.split("_")[0], "--body", "Saturday football.")
        assert written.exit_code == 0, written.output
    return root
