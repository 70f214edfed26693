"""A memory tree that cannot be used is a MemoryStoreError naming it, never a raw OSError."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Self

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.errors import MemoryStoreError
from bundlekit.memory import Memory
from bundlekit.memory import backend as backend_module
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
        (("write", "k", "--name", "n", "--description", "d", "--type", "user", "--body", "b"), 2),  # a write too
        (("note", "decision", "what=x"), 2),
        (("context",), 2),
    ],
)
def test_memory_cli_under_a_file_is_a_one_line_error(blocker: Path, args: tuple[str, ...], code: int) -> None:
    result = CliRunner().invoke(cli, ["memory", "-d", str(blocker / "sub"), *args])
    assert result.exit_code == code
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_memory_export_under_a_file_is_a_one_line_error(tmp_path: Path, blocker: Path) -> None:
    Memory(tmp_path / "mem").init()  # the tree exists; the output path is what fails
    result = CliRunner().invoke(
        cli, ["memory", "-d", str(tmp_path / "mem"), "export", "-o", str(blocker / "x.json")]
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("error: cannot write")


def _denied(name: str) -> PermissionError:
    return PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)


class _Entry:
    """A listed entry that cannot be inspected, as in a folder that can be read but not searched."""

    def __init__(self, name: str) -> None:
        self.name = name

    def stat(self, *, follow_symlinks: bool) -> os.stat_result:
        raise _denied(self.name)


class _Unsearchable(list[_Entry]):
    """``os.scandir`` of such a folder: its entries, and a context manager as scandir's iterator is."""

    def __init__(self, root: Path) -> None:
        super().__init__(_Entry(name) for name in sorted(os.listdir(root)) if name == "k.md")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _c_scan_denied(dir_fd: int) -> None:
    raise _denied("k.md")  # what _statscan raises for an entry whose lstat fails: the error, named by the entry


@pytest.mark.parametrize("listing", ["python", "c"])
def test_a_memory_file_that_cannot_be_inspected_is_a_store_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listing: str
) -> None:
    # Once raised as a bare PermissionError (a traceback from the CLI) by both listings: found by review.
    root = tmp_path / "mem"
    Memory(root).write("k", name="n", description="d", type="user", body="b")
    if listing == "python":
        monkeypatch.setattr(backend_module, "_statscan", None)
        monkeypatch.setattr(backend_module.os, "scandir", _Unsearchable)
    else:
        monkeypatch.setattr(backend_module, "_statscan", SimpleNamespace(scan=_c_scan_denied))
        monkeypatch.setattr(backend_module, "_c_listing", lambda: True)
    with pytest.raises(MemoryStoreError, match=f"^cannot inspect {re.escape(str(root / 'k.md'))}: Permission denied; "):
        Memory(root).list()
    result = CliRunner().invoke(cli, ["memory", "-d", str(root), "list"])
    assert result.exit_code == 1 and result.stderr.startswith(f"error: cannot inspect {root / 'k.md'}: ")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception


@pytest.mark.skipif(os.geteuid() == 0, reason="permissions do not bind root")
def test_a_tree_that_can_be_read_but_not_searched_is_a_one_line_error(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    Memory(root).write("k", name="n", description="d", type="user", body="b")
    root.chmod(0o600)
    try:
        result = CliRunner().invoke(cli, ["memory", "-d", str(root), "list"])
    finally:
        root.chmod(0o700)
    assert result.exit_code == 1 and result.stderr.startswith("error: cannot ")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
