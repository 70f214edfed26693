"""An exception no layer translated (a defect) still leaves as one redacted ``error:`` line, exit 1.

Python's own hook would print the traceback past the one redaction, with the exception's message
and the source lines of its frames; ``BUNDLEKIT_TRACEBACK=1`` asks for it, redacted.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture
def broken_cid(monkeypatch: pytest.MonkeyPatch) -> None:
    """``bundlekit cid`` fails with a defect whose message holds a credential."""
    def fail(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError(f"unexpected state near {TOKEN}")

    monkeypatch.setattr(cli.get_command(None, "cid"), "callback", fail)  # type: ignore[arg-type,union-attr]


def test_a_defect_is_one_redacted_error_line_with_exit_1(broken_cid: None) -> None:
    result = CliRunner().invoke(cli, ["cid", __file__])
    assert result.exit_code == 1
    assert "error: internal error (RuntimeError: unexpected state near [withheld])" in result.stderr
    assert TOKEN not in result.output + result.stderr
    assert "Traceback" not in result.stderr


def test_the_traceback_on_request_is_redacted_too(broken_cid: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_TRACEBACK", "1")
    result = CliRunner().invoke(cli, ["cid", __file__])
    assert result.exit_code == 1
    assert "Traceback" in result.stderr
    assert TOKEN not in result.output + result.stderr
