"""QA regressions: a memory tree that cannot be used is a MemoryStoreError naming it, never a raw OSError."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.errors import MemoryStoreError
from bundlekit.memory import Memory
from bundlekit.memory.backend import atomic_write_bytes


@pytest.fixture
def blocker(tmp_path: Path) -> Path:
    path = tmp_path / "afile"
    path.write_text("x")
    return path


def test_writing_into_a_tree_under_a_file_names_the_tree(blocker: Path) -> None:
    with pytest.raises(MemoryStoreError, match="cannot lock the memory tree .*a file is in the way"):
        Memory(blocker / "sub").write("k", name="n", description="d", type="user", body="b")


def test_listing_a_tree_under_a_file_names_the_tree(blocker: Path) -> None:
    with pytest.raises(MemoryStoreError, match="cannot list the memory tree"):
        Memory(blocker / "sub").list()


def test_a_file_named_timeline_is_reported_when_noting(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    root.mkdir()
    (root / "timeline").write_text("not a directory")
    with pytest.raises(MemoryStoreError, match="timeline"):
        Memory(root).note("decision", what="x")


def test_atomic_write_under_a_file_leaves_nothing(blocker: Path) -> None:
    with pytest.raises(MemoryStoreError, match="cannot write"):
        atomic_write_bytes(blocker / "x.json", b"{}")


def test_atomic_write_over_a_directory_removes_its_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "adir"
    target.mkdir()
    with pytest.raises(MemoryStoreError, match="cannot write"):
        atomic_write_bytes(target, b"{}")
    assert sorted(os.listdir(tmp_path)) == ["adir"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("init",), 1),
        (("list",), 2),  # a read of a tree that is not there: a usage error
        (("write", "k", "--name", "n", "--description", "d", "--type", "user", "--body", "b"), 1),
        (("note", "decision", "what=x"), 1),
        (("context",), 2),
    ],
)
def test_memory_cli_under_a_file_is_a_one_line_error(blocker: Path, args: tuple[str, ...], code: int) -> None:
    result = CliRunner().invoke(cli, ["memory", "-d", str(blocker / "sub"), *args])
    assert result.exit_code == code
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_memory_export_under_a_file_is_a_one_line_error(tmp_path: Path, blocker: Path) -> None:
    (tmp_path / "mem").mkdir()  # the tree exists; the output path is what fails
    result = CliRunner().invoke(
        cli, ["memory", "-d", str(tmp_path / "mem"), "export", "-o", str(blocker / "x.json")]
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("error: cannot write")
