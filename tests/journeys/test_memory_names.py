"""Journey: an agent's titles are stored as given and read back exactly (issue 34, item 3).

An agent's ``remember`` call passes whatever title it made up (three.ws's own ``remember`` tool passes
``name`` through: ``src/runtime/tools.js`` of nirholas/three.ws at 2071392cf490202c2c8a9f21a5991197c6fbc130).
Each title below is written with ``memory write`` as a person types it, then read back by ``show``,
``list --json`` and ``Memory.read``. The file holds it plain when a line reader reads that line as the
same text (three.ws's ``parseFrontmatter`` in ``src/memory/index.js``, same commit: split at the first
``:``, both sides trimmed, no unquoting; ``frontmatter.split_lines`` is that reader), else as a YAML
double-quoted scalar (as Claude Code writes such a description), which the line reader shows with its
quotes and every YAML reader decodes to the title (specs/memory.md, "Canonical rendering").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from bundlekit.cli import cli
from bundlekit.memory import Memory
from bundlekit.memory.frontmatter import plain_problem, split_lines

ROOT = Path(__file__).resolve().parents[2]

TITLES = [
    "Goal: win",
    "Fix issue #12",
    "yes",
    "12",
    "null",
    "-leading dash",
    "- a list item?",
    "[draft] plan",
    "{braces}",
    "He said \"ship it\" and 'soon'",
    "\"Quoted\" title",
    "'single'",
    "Café — 実装メモ: 第1版 #1",
    "ends with:",
    "#hashtag",
    "a --- b",
    " padded ",
    "tab\there",
    "back\\slash",
    "Plain title",
]


def memory_cli(tree: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["memory", "-d", str(tree), *args])


def frontmatter_lines(tree: Path, key: str) -> dict[str, str]:
    text = (tree / f"{key}.md").read_text(encoding="utf-8")
    return split_lines(text.split("---\n")[1])


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("BUNDLEKIT_MEMORY_DIR", raising=False)
    root = tmp_path / "memory"
    assert memory_cli(root, "init").exit_code == 0
    return root


@pytest.mark.parametrize("title", TITLES)
def test_a_title_written_at_the_cli_reads_back_exactly_everywhere(tree: Path, title: str) -> None:
    written = memory_cli(tree, "write", "user_goal", "--name", title, "--description", title,
                         "--type", "user", "--body", "b", "--source", title, "--tag", title)
    assert written.exit_code == 0, written.output
    shown = json.loads(memory_cli(tree, "show", "user_goal", "--json").stdout)
    assert shown["meta"]["name"] == title and shown["meta"]["description"] == title
    assert shown["meta"]["source"] == title and shown["meta"]["tags"] == [title]
    [row] = json.loads(memory_cli(tree, "list", "--json").stdout)
    assert (row["name"], row["description"], row["tags"]) == (title, title, [title])
    record = Memory(tree).read("user_goal")
    assert record is not None and (record.name, record.description) == (title, title)


@pytest.mark.parametrize("title", TITLES)
def test_the_line_reader_sees_the_title_or_its_double_quoted_yaml(tree: Path, title: str) -> None:
    assert memory_cli(tree, "write", "user_goal", "--name", title, "--description", "d",
                      "--type", "user", "--body", "b").exit_code == 0
    seen = frontmatter_lines(tree, "user_goal")["name"]
    if plain_problem(title) is None:
        assert seen == title
    else:
        assert seen.startswith('"') and seen.endswith('"')
        assert yaml.safe_load(seen) == title  # what three.ws shows is the title in YAML double quotes


def test_a_plain_title_is_written_without_quotes(tree: Path) -> None:
    assert memory_cli(tree, "write", "user_goal", "--name", "Tone no.1 - 'direct' café", "--description",
                      "a:b, c#d, 50%", "--type", "user", "--body", "b").exit_code == 0
    text = (tree / "user_goal.md").read_text(encoding="utf-8")
    assert "\nname: Tone no.1 - 'direct' café\ndescription: a:b, c#d, 50%\n" in text


def test_a_title_holding_a_line_break_is_refused_naming_the_field(tree: Path) -> None:
    result = memory_cli(tree, "write", "user_goal", "--name", "two\nlines", "--description", "d",
                        "--type", "user", "--body", "b")
    assert result.exit_code == 1
    assert "frontmatter 'name' must be a single line" in result.stderr
    assert not (tree / "user_goal.md").exists()


def test_an_agents_title_round_trips_through_a_fresh_process(tree: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("BUNDLEKIT_MEMORY_DIR", None)
    title = "Goal: win — fix issue #12"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bundlekit", "memory", "-d", str(tree), *args],
                              capture_output=True, text=True, env=env, check=False, timeout=60)

    written = run("write", "project_goal", "--name", title, "--description", "yes", "--type", "project",
                  "--body", "b")
    assert written.returncode == 0 and "Traceback" not in written.stderr, written.stderr
    listed = run("list")
    assert listed.returncode == 0 and f"{title} — yes" in listed.stdout
    assert f'name: "{title}"\n' in run("show", "project_goal").stdout


# What an agent's title may hold that no terminal or index reader should act on (issue 34 item 3, attacked).
CONTROL_TITLES = ["evil\x1b]0;pwned\x07 title", "a\x00b", "\u202eevil\u202c", "\u2066iso\u2069", "x\x08y\x7f",
                  "c1\x9bcontrol"]


@pytest.mark.parametrize("title", CONTROL_TITLES)
def test_a_title_holding_control_characters_reads_back_exactly_and_memory_md_shows_them_escaped(
        tree: Path, title: str) -> None:
    written = memory_cli(tree, "write", "user_goal", "--name", title, "--description", title,
                         "--type", "user", "--body", "b")
    assert written.exit_code == 0, written.output
    shown = json.loads(memory_cli(tree, "show", "user_goal", "--json").stdout)
    assert (shown["meta"]["name"], shown["meta"]["description"]) == (title, title)
    index = (tree / "MEMORY.md").read_text(encoding="utf-8")
    assert [row for row in index.splitlines() if row.startswith("- [")] == [
        row for row in index.splitlines() if "user_goal.md" in row]  # one line for the memory
    assert not any(ch in index for ch in "\x00\x07\x08\x1b\x7f\x9b\u202e\u202c\u2066\u2069")
    assert "&#92;x" in index or "&#92;u" in index  # the escape is visible, as `memory list` shows it


NOT_UTF8_FIELDS = [("--name", "frontmatter 'name'"), ("--description", "frontmatter 'description'"),
                   ("--tag", "frontmatter 'tags'"), ("--source", "frontmatter 'source'"), ("--body", "the body")]


@pytest.mark.parametrize(("option", "field"), NOT_UTF8_FIELDS)
def test_an_argument_of_bytes_that_are_not_utf8_is_refused_naming_the_field_and_nothing_is_written(
        tree: Path, option: str, field: str) -> None:
    args = {"--name": b"n", "--description": b"d", "--body": b"b", option.encode(): b"bad \xff\xfe"}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LC_ALL": "C.UTF-8"}
    done = subprocess.run([sys.executable.encode(), b"-m", b"bundlekit", b"memory", b"-d", bytes(tree), b"write",
                           b"user_goal", b"--type", b"user", *(part for pair in args.items() for part in pair)],
                          capture_output=True, env=env, check=False, timeout=60)
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 1 and f"{field} holds a lone UTF-16 surrogate" in stderr, stderr
    assert "internal error" not in stderr and "Traceback" not in stderr
    assert not (tree / "user_goal.md").exists()
