"""A schema value with no plain form is refused on write with what to change (issue 11, item 2).

Values are written unquoted so YAML readers and three.ws's line reader
(``parseFrontmatter`` in ``src/memory/index.js`` of nirholas/three.ws at
2071392cf490202c2c8a9f21a5991197c6fbc130) read the same text; the refusal must
say which field, why, and what to write instead, through the library and the CLI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bundlekit.errors import FrontmatterError
from bundlekit.memory import Memory

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("field", "value", "fix"),
    [
        ("description", "Goal: win", "write ' - ' instead of ': '"),
        ("description", "see #12 there", "leave out the space before '#'"),
        ("name", "a --- b", "write '--' or an em dash instead"),
        ("name", "yes", "add a word so it reads as text"),
        ("description", " padded", "remove the spaces at its ends"),
    ],
)
def test_refusal_names_the_field_and_what_to_write_instead(tmp_path: Path, field: str, value: str, fix: str) -> None:
    fields = {"name": "Goal", "description": "d", field: value}
    with pytest.raises(FrontmatterError, match=f"frontmatter '{field}'") as caught:
        Memory(tmp_path / "m").write("goal", type="project", body="b", **fields)
    assert fix in str(caught.value)


def test_a_tag_with_a_flow_indicator_is_refused_as_a_value_in_tags(tmp_path: Path) -> None:
    with pytest.raises(FrontmatterError, match="a value in frontmatter 'tags'.*no , \\[ \\] \\{ \\}"):
        Memory(tmp_path / "m").write("goal", name="G", description="d", type="project", body="b", tags=["a, b"])


def test_cli_write_of_a_colon_description_says_what_to_change_without_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "bundlekit", "memory", "-d", str(tmp_path / "m"), "write", "goal",
         "--name", "Goal", "--description", "Goal: win", "--type", "project", "--body", "b"],
        capture_output=True, text=True, env=env, check=False,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "error: goal.md: frontmatter 'description' holds ': '" in done.stderr
    assert "(e.g. 'Goal - win')" in done.stderr
    assert not (tmp_path / "m" / "goal.md").exists()
