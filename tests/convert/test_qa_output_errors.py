"""QA regressions: unreadable inputs and unwritable outputs are one-line ConvertErrors, nothing left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit._fs import is_temp_name
from bundlekit.cli import cli
from bundlekit.convert._common import atomic_write
from bundlekit.errors import ConvertError

from .conftest import PROJECT

FORMATS_TO_DIRS = ["massgen", "claude-code", "magicfrog"]


def run(*args: str) -> tuple[int, str, object]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stderr, result.exception


@pytest.fixture
def tree(massgen_workspace: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "mem"
    code, err, _ = run("convert", "--from", "massgen", str(massgen_workspace), "-o", str(dest))
    assert code == 0, err
    return dest


@pytest.fixture
def blocker(tmp_path: Path) -> Path:
    path = tmp_path / "afile"
    path.write_text("x")
    return path


def _one_line_error(code: int, err: str, exc: object) -> None:
    assert code == 1
    assert exc is None or isinstance(exc, SystemExit), exc
    assert err.startswith("error: ") and err.count("\n") == 1


@pytest.mark.parametrize("fmt", FORMATS_TO_DIRS)
def test_export_into_a_file_is_a_one_line_error(fmt: str, tree: Path, blocker: Path) -> None:
    code, err, exc = run("convert", "--to", fmt, str(tree), "-o", str(blocker))
    _one_line_error(code, err, exc)
    assert "a file is in the way" in err


def test_threews_export_over_a_directory_is_a_one_line_error(tree: Path, tmp_path: Path) -> None:
    target = tmp_path / "adir"
    target.mkdir()
    code, err, exc = run("convert", "--to", "three.ws", str(tree), "-o", str(target))
    _one_line_error(code, err, exc)
    assert os.listdir(target) == []
    assert not [n for n in os.listdir(tmp_path) if is_temp_name(n)]


def test_magic_context_export_under_a_file_is_a_one_line_error(tree: Path, blocker: Path) -> None:
    code, err, exc = run(
        "convert", "--to", "magic-context", str(tree), "-o", str(blocker / "db"), "--project", PROJECT
    )
    _one_line_error(code, err, exc)


def test_import_under_a_file_is_a_one_line_error(massgen_workspace: Path, blocker: Path) -> None:
    code, err, exc = run("convert", "--from", "massgen", str(massgen_workspace), "-o", str(blocker / "sub"))
    _one_line_error(code, err, exc)


def test_threews_import_of_a_directory_is_a_one_line_error(tmp_path: Path) -> None:
    code, err, exc = run("convert", "--from", "three.ws", str(tmp_path), "-o", str(tmp_path / "m"))
    _one_line_error(code, err, exc)
    assert "JSON file" in err


def test_atomic_write_failure_removes_its_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "adir"
    target.mkdir()
    with pytest.raises(ConvertError, match="cannot write"):
        atomic_write(target, "data")
    assert sorted(os.listdir(tmp_path)) == ["adir"]


def test_a_refused_import_leaves_no_output_directory(tmp_path: Path) -> None:
    # Review of issue 12: a credential refused by the secret guard left an empty DEST behind.
    src = tmp_path / "claude"
    src.mkdir()
    escaped = "".join(f"\\x{ord(c):02x}" for c in "ghp_" + "a1B2" * 9)
    (src / "a.md").write_text(f'---\nname: n\ndescription: "{escaped}"\ntype: user\n---\nbody\n', encoding="utf-8")
    code, err, _ = run("convert", "--from", "claude-code", str(src), "-o", str(tmp_path / "out"))
    assert code == 1, err
    assert "looks like a GitHub token" in err
    assert not (tmp_path / "out").exists()
