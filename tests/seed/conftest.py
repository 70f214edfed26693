"""Fixtures of the seeding tests: the built-in seeders registered, a memory tree, the CLI in this process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bundlekit.cli import cli
from tests.seeding import register_builtin_seeders

Run = Callable[..., Result]


@pytest.fixture(autouse=True)
def seeders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    register_builtin_seeders(tmp_path, monkeypatch)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("BUNDLEKIT_MEMORY_DIR", raising=False)
    root = tmp_path / "agent"
    assert CliRunner().invoke(cli, ["memory", "-d", str(root), "init"]).exit_code == 0
    return root


@pytest.fixture
def run(tree: Path) -> Run:
    """``bundlekit memory -d TREE ARGS...`` in this process (stdin is no terminal)."""

    def invoke(*args: str, input: str | None = None) -> Result:  # noqa: A002
        return CliRunner().invoke(cli, ["memory", "-d", str(tree), *args], input=input)

    return invoke
