"""QA regression: converting a store onto itself is refused before anything is read or written."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli

from .conftest import tree_files


@pytest.fixture
def tree(massgen_workspace: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "mem"
    result = CliRunner().invoke(
        cli, ["convert", "--from", "massgen", str(massgen_workspace), "-o", str(dest)]
    )
    assert result.exit_code == 0, result.output
    return dest


@pytest.mark.parametrize("fmt", ["claude-code", "massgen", "magicfrog"])
def test_export_onto_the_source_tree_is_refused(fmt: str, tree: Path) -> None:
    before = tree_files(tree)
    result = CliRunner().invoke(cli, ["convert", "--to", fmt, str(tree), "-o", str(tree)])
    assert result.exit_code == 2
    assert "is the source itself" in result.stderr
    assert tree_files(tree) == before


def test_import_onto_the_foreign_store_is_refused(claude_dir: Path) -> None:
    before = tree_files(claude_dir)
    result = CliRunner().invoke(
        cli, ["convert", "--from", "claude-code", str(claude_dir), "-o", str(claude_dir)]
    )
    assert result.exit_code == 2
    assert tree_files(claude_dir) == before
