"""Library log records (the MCP SDK's, uvicorn's) printed as the CLI's one-line warnings and errors."""

from __future__ import annotations

import logging

import pytest

from bundlekit.cli._loglines import MAX_LINE_CHARS, MAX_LINES, WINDOW, LogLines


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _record(
    message: str, level: int = logging.WARNING, exc: BaseException | None = None
) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("mcp.server", level, __file__, 1, message, None, exc_info)


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:  # noqa: BLE001 - a real traceback attached
        return caught


def test_a_warning_record_is_one_warning_line(capsys: pytest.CaptureFixture[str]) -> None:
    LogLines().handle(_record("Invalid Host header: evil.example"))
    assert capsys.readouterr().err == "warning: Invalid Host header: evil.example\n"


def test_an_error_record_with_an_exception_is_one_error_line_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    LogLines().handle(_record("Error handling POST request", logging.ERROR, _raised(ConnectionError("gone"))))
    err = capsys.readouterr().err
    assert err == "error: Error handling POST request (ConnectionError: gone)\n"
    assert "Traceback" not in err


def test_control_characters_and_line_breaks_from_a_peer_stay_escaped_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    LogLines().handle(_record("Invalid Host header: a\x1b[2J\x9b31m\u202eb\nwarning: forged"))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\x9b" not in err and "\u202e" not in err


def test_a_huge_message_is_cut(capsys: pytest.CaptureFixture[str]) -> None:
    LogLines().handle(_record("x" * (MAX_LINE_CHARS * 10)))
    assert len(capsys.readouterr().err) < MAX_LINE_CHARS + 20


def test_lines_past_the_limit_of_a_window_are_left_out_and_counted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = Clock()
    handler = LogLines(clock=clock)
    for n in range(MAX_LINES + 7):
        handler.handle(_record(f"Invalid HTTP request received. {n}"))
    assert len(capsys.readouterr().err.splitlines()) == MAX_LINES
    clock.now += WINDOW
    handler.handle(_record("next window"))
    assert capsys.readouterr().err.splitlines() == [
        f"warning: 7 more log lines left out (at most {MAX_LINES} every {WINDOW:g} s)",
        "warning: next window",
    ]
