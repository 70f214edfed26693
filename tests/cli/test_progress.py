"""Progress goes to stderr only on a terminal outside CI; stdout never sees it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bundlekit.cli import output

from .conftest import Run


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_on_for_a_terminal_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert output.progress_enabled(_Terminal())


def test_progress_is_off_when_ci_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert not output.progress_enabled(_Terminal())


def test_progress_is_off_when_stderr_is_not_a_terminal() -> None:
    assert not output.progress_enabled(io.StringIO())


def test_a_disabled_progress_hands_the_library_no_callback() -> None:
    assert output.Progress("x", enabled=False).callback is None


def test_build_draws_no_progress_when_stderr_is_not_a_terminal(run: Run, tree: Path, tmp_path: Path) -> None:
    result = run("build", tree, "-o", tmp_path / "b.car")
    assert result.exit_code == 0, result.stderr
    assert "\r" not in result.stderr and "building" not in result.stderr


@pytest.mark.parametrize("command", ["build", "load", "pin"])
def test_progress_is_drawn_on_stderr_when_enabled(
    command: str, run: Run, tree: Path, bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output, "progress_enabled", lambda stream=None: True)
    args = {
        "build": ["build", tree, "-o", tmp_path / "b.car"],
        "load": ["load", bundle],
        "pin": ["pin", tree, "--pinner", "memory"],
    }[command]
    result = run(*args)
    assert result.exit_code == 0, result.stderr
    label = {"build": "building", "load": "loading", "pin": "building"}[command]
    assert f"\r{label} [" in result.stderr
    assert "100%" in result.stderr
    assert "\r" not in result.stdout and label not in result.stdout


def test_progress_bar_shows_done_and_total_and_ends_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    with output.Progress("copying", unit="files", enabled=True) as bar:
        bar(3, 4)
        bar(4, 4)
    err = capsys.readouterr().err
    assert "\rcopying [" in err and "4/4 files" in err and err.endswith("\n")
