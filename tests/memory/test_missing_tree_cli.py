"""A mistyped ``-d`` never creates a tree (issue 34, item 5): every ``memory`` command but ``init`` given a
folder that is no tree exits 2 with the ``memory init`` hint and creates nothing, writes as reads do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bundlekit.cli import cli
from bundlekit.memory import Memory

HINT = "(no MEMORY.md, no memory files): run `bundlekit memory init`"
WRITE = ["write", "user_goal", "--name", "Goal: win", "--description", "d", "--type", "user", "--body", "b"]
COMMANDS = {
    "write": WRITE,
    "note": ["note", "x", "a=b"],
    "forget": ["forget", "user_goal"],
    "show": ["show", "user_goal"],
    "list": ["list"],
    "recall": ["recall", "goal"],
    "context": ["context"],
    "export": ["export"],
}


@pytest.fixture(autouse=True)
def no_env_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BUNDLEKIT_MEMORY_DIR", raising=False)


def memory_cli(*args: str) -> Result:
    return CliRunner().invoke(cli, ["memory", *args])


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_mistyped_dir_is_a_usage_error_and_nothing_is_created(tmp_path: Path, command: str) -> None:
    typo = tmp_path / "nosuchdir"
    result = memory_cli("-d", str(typo), *COMMANDS[command])
    assert result.exit_code == 2, result.output
    assert f"no memory tree at {typo} {HINT}" in result.stderr
    assert "Traceback" not in result.output
    assert not typo.exists()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_empty_folder_is_no_tree_for_any_command_and_stays_empty(tmp_path: Path, command: str) -> None:
    result = memory_cli(*COMMANDS[command], "-d", str(tmp_path))  # -d after the subcommand too
    assert result.exit_code == 2, result.output
    assert HINT in result.stderr
    assert listing(tmp_path) == []


def test_import_into_a_mistyped_dir_is_refused_before_reading_the_blob_into_it(tmp_path: Path) -> None:
    source = tmp_path / "memory"
    assert memory_cli("-d", str(source), "init").exit_code == 0
    assert memory_cli("-d", str(source), *WRITE).exit_code == 0
    blob = tmp_path / "blob.json"
    blob.write_text(memory_cli("-d", str(source), "export").stdout, encoding="utf-8")
    typo = tmp_path / "memroy"
    result = memory_cli("-d", str(typo), "import", str(blob))
    assert result.exit_code == 2 and HINT in result.stderr
    assert not typo.exists()


def test_the_default_tree_missing_is_refused_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = memory_cli(*WRITE)
    assert result.exit_code == 2 and "no memory tree at memory " in result.stderr
    assert listing(tmp_path) == []


def test_init_then_write_note_and_list_work(tmp_path: Path) -> None:
    tree = tmp_path / "memory"
    assert memory_cli("-d", str(tree), "init").exit_code == 0
    assert memory_cli("-d", str(tree), *WRITE).exit_code == 0
    assert memory_cli("-d", str(tree), "note", "x", "a=b").exit_code == 0
    rows = json.loads(memory_cli("-d", str(tree), "list", "--json").stdout)
    assert [row["name"] for row in rows] == ["Goal: win"]


def test_a_tree_written_by_hand_without_init_is_a_tree(tmp_path: Path) -> None:
    Memory(tmp_path).write("user_goal", name="G", description="d", type="user", body="b")  # the library creates
    (tmp_path / "MEMORY.md").unlink()
    assert memory_cli("-d", str(tmp_path), *WRITE).exit_code == 0


def test_the_library_still_writes_into_a_new_folder(tmp_path: Path) -> None:
    """Loads and merges fill a new folder through the library: only the CLI asks for ``init``."""
    tree = tmp_path / "new"
    Memory(tree).write("user_goal", name="Goal: win", description="d", type="user", body="b")
    assert (tree / "user_goal.md").is_file()


def test_write_help_says_a_body_is_required_and_a_tree_must_exist() -> None:
    text = "".join(memory_cli("write", "--help").stdout.split())  # free of where the lines wrap
    assert "--bodyTEXTTheMarkdownbody(required:thisor--body-file)." in text
    assert "Thetreemustexist(`memoryinit`makesone)" in text
