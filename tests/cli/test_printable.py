"""Human output escapes terminal control characters from memory files; ``--json`` carries the real text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.cli.output import printable, printable_field
from bundlekit.memory import Memory

from .conftest import Run

# A hand-written memory file: YAML double-quoted escapes put ESC, BEL and RLO in the name and description
# (a CR there is refused as a line break); the body holds raw ESC sequences and a lone CR.
_PLANTED = """---
name: "Evil \\e[2J\\e]0;pwned\\a name"
description: "safe \\u202Etxt.exe"
type: reference
created: 2026-01-01T00:00:00Z
updated: 2026-01-01T00:00:00Z
---
Body with \x1b[31mred\x1b[0m text, safe\rOVERWRITTEN.
"""
_RAW_CONTROLS = ("\x1b", "\x07", "\u202e")


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    Memory(tree).init()
    (tree / "evil.md").write_text(_PLANTED, encoding="utf-8")
    return tree


def _clean(text: str) -> None:
    assert not any(c in text for c in _RAW_CONTROLS), repr(text)
    assert "\r" not in text.replace("\r\n", ""), repr(text)


def test_printable_escapes_controls_and_keeps_tabs_newlines_and_crlf() -> None:
    assert printable("a\x1b[31mb\rc\r\nd\te\u202ef\x85g\x7f\x00") == "a\\x1b[31mb\\x0dc\r\nd\te\\u202ef\\x85g\\x7f\\x00"


def test_printable_leaves_ordinary_text_alone() -> None:
    text = "Name — déjà vu, 東京, emoji 🎉\tcolumn\nnext line"
    assert printable(text) == text


@pytest.mark.parametrize(
    "args",
    [["list"], ["recall", "evil"], ["recall", "body"], ["context"], ["show", "evil"]],
    ids=["list", "recall-name", "recall-body", "context", "show"],
)
def test_human_output_shows_control_characters_escaped(run: Run, planted: Path, args: list[str]) -> None:
    result = run("memory", "-d", planted, *args)
    assert result.exit_code == 0, result.stderr
    _clean(result.stdout)
    assert "\\x1b" in result.stdout


def test_list_json_keeps_the_real_text(run: Run, planted: Path) -> None:
    result = run("memory", "-d", planted, "list", "--json")
    (row,) = json.loads(result.stdout)
    assert row["name"] == "Evil \x1b[2J\x1b]0;pwned\x07 name"
    assert row["description"] == "safe \u202etxt.exe"


def test_diff_shows_a_changed_frontmatter_key_escaped(run: Run, planted: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    Memory(other).init()
    (other / "evil.md").write_text(_PLANTED.replace("type: reference", 'type: reference\n"x-\\e]0;pwned\\a": 1'),
                                   encoding="utf-8")
    result = run("diff", planted, other)
    assert result.exit_code == 0, result.stderr
    _clean(result.stdout)
    assert "x-\\x1b]0;pwned\\x07" in result.stdout


def test_printable_field_escapes_tab_and_newline_too() -> None:
    assert printable_field("a\tb\nc\r\nd\x1be\u202e") == "a\\x09b\\x0ac\\x0d\\x0ad\\x1be\\u202e"


def test_ls_shows_a_foreign_file_name_as_one_escaped_field(run: Run, tmp_path: Path) -> None:
    """A CAR from elsewhere may name a file with ESC sequences, a tab or a newline (UnixFS allows them):
    ``ls`` prints one row per entry with the name escaped; ``--json`` keeps the real name."""
    src = tmp_path / "src"
    src.mkdir()
    name = "x\x1b[2J\tforged\t0\nrow"
    (src / name).write_bytes(b"hi")
    car = tmp_path / "a.car"
    assert run("pack", src, "-o", car).exit_code == 0
    shown = run("ls", car)
    assert shown.exit_code == 0, shown.output
    rows = shown.stdout.splitlines()
    assert "x\\x1b[2J\\x09forged\\x090\\x0arow" in [row.split("\t")[0] for row in rows]
    assert all(row.count("\t") == 2 for row in rows)
    listed = run("ls", car, "--json")
    assert name in [entry["path"] for entry in json.loads(listed.stdout)]


class _Stream:
    """A text stream that says whether it is a terminal, recording what is written."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty
        self.written = ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        self.written += text
        return len(text)

    def flush(self) -> None:
        pass


_ESCAPES = st.sampled_from(["\x1b", "\x1b[31m", "\x1b]0;title\x07", "\x1b]8;;http://x\x1b\\", "\x9b31m", "\x9b2J",
                            "\x1b[200~", "\x1b[201~", "\x9d0;t\x9c", "\x07", "\r", "\u202e", "[", "m", "\n", "a"])


# Example counts halved for the suite's time (issue 36 item 8); neither these tests nor their issues set them.
@settings(max_examples=150, deadline=None)  # 300 before
@given(st.lists(_ESCAPES | st.text(max_size=4), max_size=12).map("".join), st.booleans(), st.booleans())
def test_data_prints_the_bytes_click_printed_before_to_a_terminal_and_to_a_pipe(
    text: str, tty: bool, newline: bool
) -> None:
    # data() passes color=True when the text holds no ESC (click's stripping, only of ESC sequences, then has
    # nothing to do): what reaches a terminal or a pipe must be exactly what click.echo printed without it.
    import click

    from bundlekit.cli import output
    from bundlekit.cli.output import redact

    shown, before = _Stream(tty), _Stream(tty)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(click.utils, "_default_text_stdout", lambda: shown)
        output.data(text, newline=newline)
    click.echo(redact(text), file=before, nl=newline)  # type: ignore[arg-type]
    assert shown.written == before.written
