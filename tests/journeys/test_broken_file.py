"""Journey: one hand-edited, malformed memory file never blocks the tree (issue 34, item 4).

A person edits ``user_broken.md`` by hand and gets its ``type`` wrong (or leaves a ``[`` open). Every
command still works on the rest: ``list`` shows the file as broken with the reason, ``show`` prints its
text as stored with the problem on stderr, ``recall``, ``context`` and ``build`` leave it out with a warning
naming it (``build --strict`` refuses, writing nothing), and ``forget`` removes it with its timeline entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.cli import cli
from tests.journeys.football_tree import football_tree, memory_cli
from bundlekit.errors import FrontmatterError
from bundlekit.memory import Memory

BAD_TYPE = (
    "---\nname: Broken by hand\ndescription: a typo in type\ntype: usr\n"
    "created: 2026-04-14T12:03:12Z\nupdated: 2026-04-14T12:03:12Z\n---\n\nSaturday football.\n"
)
TYPE_PROBLEM = "user_broken.md: frontmatter 'type' must be one of user, feedback, project, reference"
UNCLOSED = (
    "---\nname: Half a list\ndescription: d\ntype: user\ntags: [unclosed\n"
    "created: 2026-04-14T12:03:12Z\nupdated: 2026-04-14T12:03:12Z\n---\n\nb\n"
)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("BUNDLEKIT_MEMORY_DIR", raising=False)
    root = football_tree(tmp_path / "memory")
    (root / "user_broken.md").write_text(BAD_TYPE, encoding="utf-8")
    return root


def test_list_shows_the_file_as_broken_with_the_reason_and_the_rest_as_usual(tree: Path) -> None:
    result = memory_cli(tree, "list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["project_cup", "user_broken", "user_role"]
    assert lines[1] == f"user_broken\tbroken\t-\t-\t{TYPE_PROBLEM}"
    assert "Role: striker — football on Saturday" in lines[2]


def test_list_json_has_a_row_naming_the_broken_file_and_its_problem(tree: Path) -> None:
    result = memory_cli(tree, "list", "--json")
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [row["key"] for row in rows] == ["project_cup", "user_broken", "user_role"]
    assert rows[1] == {"key": "user_broken", "broken": TYPE_PROBLEM}


def test_show_prints_the_file_as_stored_and_the_problem_on_stderr(tree: Path) -> None:
    result = memory_cli(tree, "show", "user_broken")
    assert result.exit_code == 0
    assert result.stdout == BAD_TYPE
    assert TYPE_PROBLEM in result.stderr and "memory forget user_broken" in result.stderr
    shown = json.loads(memory_cli(tree, "show", "user_broken", "--json").stdout)
    assert shown == {"key": "user_broken", "broken": TYPE_PROBLEM, "text": BAD_TYPE}


def test_recall_and_context_skip_it_with_a_warning_naming_it(tree: Path) -> None:
    recalled = memory_cli(tree, "recall", "saturday", "--rank", "salience", "--json")
    assert recalled.exit_code == 0
    assert sorted(hit["key"] for hit in json.loads(recalled.stdout)) == ["project_cup", "user_role"]
    assert f"warning: {TYPE_PROBLEM}; left out" in recalled.stderr
    context = memory_cli(tree, "context")
    assert context.exit_code == 0 and "Broken by hand" not in context.stdout and "Cup final" in context.stdout
    assert "user_broken.md" in context.stderr
    assert "user_broken" not in (tree / "MEMORY.md").read_text(encoding="utf-8")


def test_build_leaves_it_out_with_a_warning_and_strict_refuses_writing_nothing(tree: Path, tmp_path: Path) -> None:
    car = tmp_path / "b.car"
    built = CliRunner().invoke(cli, ["build", str(tree), "-o", str(car)])
    assert built.exit_code == 0, built.output
    assert f"warning: {TYPE_PROBLEM}; left out" in built.stderr
    strict_car = tmp_path / "strict.car"
    refused = CliRunner().invoke(cli, ["build", str(tree), "-o", str(strict_car), "--strict"])
    assert refused.exit_code == 1
    assert refused.stderr.startswith(f"error: {TYPE_PROBLEM}; fix the file, or `bundlekit memory forget user_broken`")
    assert not strict_car.exists() and not list(tmp_path.glob(".*strict*"))


def test_the_library_build_leaves_it_out_of_the_bundle(tree: Path, tmp_path: Path) -> None:
    warnings: list[str] = []
    result = build_bundle(tree, tmp_path / "b.car", options=BuildOptions(warn=warnings.append))
    assert "memory/user_broken.md" not in result.paths and "memory/user_role.md" in result.paths
    assert len(warnings) == 1 and warnings[0].startswith(TYPE_PROBLEM)
    with pytest.raises(FrontmatterError, match="user_broken.md"):
        build_bundle(tree, tmp_path / "c.car", options=BuildOptions(strict=True))
    assert not (tmp_path / "c.car").exists()


def test_forget_removes_it_and_the_timeline_records_it(tree: Path) -> None:
    result = memory_cli(tree, "forget", "user_broken")
    assert result.exit_code == 0, result.output
    assert not (tree / "user_broken.md").exists()
    entries = [json.loads(line) for day in sorted((tree / "timeline").glob("*.jsonl"))
               for line in day.read_text(encoding="utf-8").splitlines()]
    assert [(e["type"], e["key"], e["name"]) for e in entries] == [("forgot", "user_broken", "Broken by hand")]
    listed = memory_cli(tree, "list")
    assert "\tbroken\t" not in listed.stdout and listed.stderr == ""


def test_a_yaml_error_names_the_line_that_is_wrong(tree: Path) -> None:
    (tree / "user_broken.md").write_text(UNCLOSED, encoding="utf-8")  # tags: [unclosed is line 5
    problem = "user_broken.md line 5: frontmatter is not valid YAML"
    assert problem in memory_cli(tree, "list").stdout
    shown = memory_cli(tree, "show", "user_broken")
    assert shown.exit_code == 0 and shown.stdout == UNCLOSED and problem in shown.stderr
    forgot = memory_cli(tree, "forget", "user_broken")
    assert forgot.exit_code == 0 and not (tree / "user_broken.md").exists()


def test_a_file_that_is_not_utf8_is_broken_too(tree: Path) -> None:
    (tree / "user_broken.md").write_bytes(BAD_TYPE.replace("type: usr", "type: user").encode() + b"\xff\xfe")
    listed = memory_cli(tree, "list")
    assert listed.exit_code == 0
    assert "user_broken\tbroken\t-\t-\tuser_broken.md is not UTF-8 text" in listed.stdout
    assert memory_cli(tree, "forget", "user_broken").exit_code == 0


def test_the_library_reports_it_and_read_still_raises(tree: Path) -> None:
    mem = Memory(tree)
    assert mem.broken() == {"user_broken": TYPE_PROBLEM}
    with pytest.raises(FrontmatterError, match="'type' must be one of"):
        mem.read("user_broken")
    assert mem.stored_text("user_broken") == BAD_TYPE
    assert [r.key for r in mem.list()] == ["project_cup", "user_role"]
    assert any(w.startswith(TYPE_PROBLEM) for w in mem.warnings)


def test_a_fixed_file_is_listed_as_usual_again(tree: Path) -> None:
    assert "\tbroken\t" in memory_cli(tree, "list").stdout
    (tree / "user_broken.md").write_text(BAD_TYPE.replace("type: usr", "type: user"), encoding="utf-8")
    listed = memory_cli(tree, "list")
    assert "\tbroken\t" not in listed.stdout and listed.stderr == ""
    assert "user_broken\tuser\tr1\t2026-04-14T12:03:12Z\tBroken by hand — a typo in type" in listed.stdout


def test_a_credential_in_a_broken_file_is_withheld_when_shown(tree: Path) -> None:
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    (tree / "user_broken.md").write_text(BAD_TYPE.replace("Saturday football.", f"key {key}"), encoding="utf-8")
    shown = memory_cli(tree, "show", "user_broken")
    assert shown.exit_code == 0 and key not in shown.stdout and key not in shown.stderr
    assert "withheld" in shown.stderr


def test_an_import_never_replaces_it_unseen(tree: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    Memory(other).write("user_broken", name="Incoming", description="d", type="user", body="b")
    blob = tmp_path / "blob.json"
    blob.write_text(json.dumps(Memory(other).export()), encoding="utf-8")
    result = memory_cli(tree, "import", str(blob))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {TYPE_PROBLEM}; the import would replace it")
    assert (tree / "user_broken.md").read_text(encoding="utf-8") == BAD_TYPE


def test_a_merge_never_replaces_or_deletes_it_unseen(tree: Path) -> None:
    mem = Memory(tree)
    for files in ({"user_broken.md": None}, {"USER_BROKEN.md": BAD_TYPE.replace("type: usr", "type: user")}):
        with pytest.raises(FrontmatterError, match="the merge would replace it"), mem.transaction() as tx:
            tx.apply(files, {})
    assert (tree / "user_broken.md").read_text(encoding="utf-8") == BAD_TYPE


def test_a_write_over_it_is_refused_saying_how_to_go_on(tree: Path) -> None:
    result = memory_cli(tree, "write", "user_broken", "--name", "n", "--description", "d", "--type", "user",
                        "--body", "b")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {TYPE_PROBLEM}; the write would replace it: fix the file, or")
    assert (tree / "user_broken.md").read_text(encoding="utf-8") == BAD_TYPE
    assert memory_cli(tree, "forget", "user_broken").exit_code == 0
    assert memory_cli(tree, "write", "user_broken", "--name", "n", "--description", "d", "--type", "user",
                      "--body", "b").exit_code == 0


@pytest.mark.parametrize("command", [["show", "user_fifo"], ["forget", "user_fifo"],
                                     ["write", "user_fifo", "--name", "n", "--description", "d", "--type", "user",
                                      "--body", "b"]])
def test_a_fifo_planted_under_a_memorys_name_is_refused_at_once_never_waited_on(
        tree: Path, command: list[str]) -> None:
    os.mkfifo(tree / "user_fifo.md")  # opening it to read would wait for a writer that never comes
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "bundlekit", "memory", "-d", str(tree), *command],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    assert done.returncode == 1, done.stderr
    assert "user_fifo.md is not a regular file" in done.stderr and "Traceback" not in done.stderr
    assert (tree / "user_fifo.md").exists() and memory_cli(tree, "list").exit_code == 0
