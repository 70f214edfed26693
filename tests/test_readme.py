"""README promises that must stay true: the two set-up commands and the command list."""

from __future__ import annotations

import re
from pathlib import Path

from bundlekit.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_ci_runs_exactly_the_readme_test_command() -> None:
    test_command = "python -m pip install -e '.[test]' && python -m pytest"
    assert f"    {test_command}\n" in README
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_readme_first_command_pins_the_bundled_fixture() -> None:
    assert "    python -m pip install . && bundlekit pin fixtures/memory\n" in README
    assert (ROOT / "fixtures" / "memory" / "MEMORY.md").is_file()


def test_readme_names_every_command() -> None:
    table = README[README.index("## Commands") :]
    named = set(re.findall(r"`([a-z]+)`", table[: table.index("\n## ", 3)]))
    assert set(COMMANDS) <= named
