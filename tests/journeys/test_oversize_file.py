"""Journey: a memory file far over the size bound dropped into a tree never blocks the rest.

Another agent, a sync peer or a mistaken copy leaves ``project_huge.md`` of 300 MB in a person's memory tree
(before the bound, ``memory list`` read it whole: 7 s and 1.25 GB). Every command still works on the rest:
``list`` shows it as broken naming its size and the bound (4 MiB, ``bundlekit.memory.filesize``), ``show``
refuses to print it (exit 1, naming the size), ``recall``, ``context``, ``export``, ``convert --to`` and
``build`` leave it out with a warning naming it (``build --strict`` refuses, writing nothing), a write,
import or merge never replaces it unseen, ``forget`` removes it, and once it is cut back under the bound
it is an ordinary memory again. A memory over the bound is never written, merged or loaded into a tree either.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.cli import cli
from tests.journeys.football_tree import football_tree, memory_cli
from bundlekit.errors import FrontmatterError, MemoryFileTooLarge
from bundlekit.mcp_server.source import ServedMemory
from bundlekit.mcp_server.tools import MemoryTools
from bundlekit.memory import Memory
from bundlekit.memory import backend, filesize
from bundlekit.memory.filesize import MAX_MEMORY_BYTES

HUGE = 300_000_000  # a sparse file: nothing of it is on disk, nothing of it is read
PROBLEM = ("project_huge.md holds 286 MiB (300000000 bytes), over the 4 MiB a memory file may hold, so it is not "
           "read; move it out of the memory tree or split it into smaller memories")
SMALL = (
    "---\nname: Huge no more\ndescription: cut back\ntype: project\n"
    "created: 2026-04-14T12:03:12Z\nupdated: 2026-04-14T12:03:12Z\n---\n\nSaturday football.\n"
)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("BUNDLEKIT_MEMORY_DIR", raising=False)
    root = football_tree(tmp_path / "memory")
    with (root / "project_huge.md").open("wb") as huge:
        huge.truncate(HUGE)
    return root


def test_list_shows_it_as_broken_naming_its_size_and_the_bound(tree: Path) -> None:
    result = memory_cli(tree, "list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["project_cup", "project_huge", "user_role"]
    assert lines[1] == f"project_huge\tbroken\t-\t-\t{PROBLEM}"
    rows = json.loads(memory_cli(tree, "list", "--json").stdout)
    assert rows[1] == {"key": "project_huge", "broken": PROBLEM}


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_show_refuses_to_print_it_naming_the_size(tree: Path, json_flag: list[str]) -> None:
    result = memory_cli(tree, "show", "project_huge", *json_flag)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == f"error: {PROBLEM}; not shown (`bundlekit memory forget project_huge` removes it)\n"


def test_recall_and_context_leave_it_out_naming_it_and_not_offering_show(tree: Path) -> None:
    recalled = memory_cli(tree, "recall", "saturday", "--rank", "salience", "--json")
    assert recalled.exit_code == 0
    assert sorted(hit["key"] for hit in json.loads(recalled.stdout)) == ["project_cup", "user_role"]
    assert f"warning: {PROBLEM}; left out (`bundlekit memory forget project_huge` removes it)" in recalled.stderr
    context = memory_cli(tree, "context")
    assert context.exit_code == 0 and "Cup final" in context.stdout and "project_huge.md" in context.stderr
    assert "project_huge" not in (tree / "MEMORY.md").read_text(encoding="utf-8")


def test_build_leaves_it_out_and_strict_refuses_writing_nothing(tree: Path, tmp_path: Path) -> None:
    car = tmp_path / "b.car"
    built = CliRunner().invoke(cli, ["build", str(tree), "-o", str(car)])
    assert built.exit_code == 0, built.output
    assert f"warning: {PROBLEM}; left out" in built.stderr
    strict_car = tmp_path / "strict.car"
    refused = CliRunner().invoke(cli, ["build", str(tree), "-o", str(strict_car), "--strict"])
    assert refused.exit_code == 1
    assert refused.stderr.startswith(f"error: {PROBLEM}; fix the file, or `bundlekit memory forget project_huge`")
    assert not strict_car.exists() and not list(tmp_path.glob(".*strict*"))
    warnings: list[str] = []
    result = build_bundle(tree, tmp_path / "c.car", options=BuildOptions(warn=warnings.append))
    assert "memory/project_huge.md" not in result.paths and "memory/project_cup.md" in result.paths


def test_export_and_convert_leave_it_out_naming_it(tree: Path, tmp_path: Path) -> None:
    exported = memory_cli(tree, "export")
    assert exported.exit_code == 0, exported.output
    assert "project_huge" not in exported.stdout and "project_huge.md holds 286 MiB" in exported.stderr
    out = tmp_path / "claude"
    converted = CliRunner().invoke(cli, ["convert", "--to", "claude-code", "-d", str(tree), "-o", str(out)])
    assert converted.exit_code == 0, converted.output
    assert f"warning: left out memory 'project_huge': {PROBLEM}" in converted.stderr
    assert not any("huge" in path.name for path in out.rglob("*"))
    strict_out = tmp_path / "strict"
    refused = CliRunner().invoke(cli, ["convert", "--to", "letta", "-d", str(tree), "-o", str(strict_out), "--strict"])
    assert refused.exit_code == 1 and "project_huge" in refused.stderr and not strict_out.exists()


def test_a_write_import_or_merge_never_replaces_it_unseen(tree: Path, tmp_path: Path) -> None:
    written = memory_cli(tree, "write", "project_huge", "--name", "n", "--description", "d", "--type", "project",
                         "--body", "b")
    assert written.exit_code == 1 and "the write would replace it" in written.stderr
    other = tmp_path / "other"
    Memory(other).write("project_huge", name="Incoming", description="d", type="project", body="b")
    blob = tmp_path / "blob.json"
    blob.write_text(json.dumps(Memory(other).export()), encoding="utf-8")
    imported = memory_cli(tree, "import", str(blob))
    assert imported.exit_code == 1 and imported.stderr.startswith(f"error: {PROBLEM}; the import would replace it")
    mem = Memory(tree)
    with pytest.raises(FrontmatterError, match="the merge would replace it"), mem.transaction() as tx:
        tx.apply({"project_huge.md": None}, {})
    assert (tree / "project_huge.md").stat().st_size == HUGE


def test_forget_removes_it_and_the_timeline_names_the_version(tree: Path) -> None:
    result = memory_cli(tree, "forget", "project_huge")
    assert result.exit_code == 0, result.output
    assert not (tree / "project_huge.md").exists()
    entries = [json.loads(line) for day in sorted((tree / "timeline").glob("*.jsonl"))
               for line in day.read_text(encoding="utf-8").splitlines()]
    assert [(e["type"], e["key"], e["name"]) for e in entries] == [("forgot", "project_huge", "project_huge")]
    digest = hashlib.sha256()
    for _piece in range(HUGE // 1_000_000):
        digest.update(bytes(1_000_000))
    assert entries[0]["sha256"] == digest.hexdigest()  # the version removed: its whole bytes, hashed in pieces
    listed = memory_cli(tree, "list")
    assert "\tbroken\t" not in listed.stdout and listed.stderr == ""


def test_cut_back_under_the_bound_it_is_listed_as_usual_again(tree: Path) -> None:
    assert f"project_huge\tbroken\t-\t-\t{PROBLEM}" in memory_cli(tree, "list").stdout
    with (tree / "project_huge.md").open("r+b") as huge:  # the same inode, cut back in place
        huge.truncate(0)
        huge.write(SMALL.encode())
    listed = memory_cli(tree, "list")
    assert "\tbroken\t" not in listed.stdout and listed.stderr == ""
    assert "project_huge\tproject\tr1\t2026-04-14T12:03:12Z\tHuge no more — cut back" in listed.stdout
    recalled = memory_cli(tree, "recall", "huge", "--rank", "salience", "--json")
    assert "project_huge" in [hit["key"] for hit in json.loads(recalled.stdout)]


def test_a_memory_over_the_bound_is_never_written(tree: Path, tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    body.write_text("x" * (MAX_MEMORY_BYTES + 1), encoding="utf-8")
    result = memory_cli(tree, "write", "user_big", "--name", "n", "--description", "d", "--type", "user",
                        "--body-file", str(body))
    assert result.exit_code == 1 and "4 MiB a memory file may hold" in result.stderr
    assert not (tree / "user_big.md").exists()
    with body.open("ab") as grown:  # a body file of gigabytes is never read whole either
        grown.truncate(8 * 1024**3)
    result = memory_cli(tree, "write", "user_big", "--name", "n", "--description", "d", "--type", "user",
                        "--body-file", str(body))
    assert result.exit_code == 1 and not (tree / "user_big.md").exists()
    assert result.stderr == (f"error: --body-file {body} holds more than the 4 MiB a memory file may hold; "
                             "split it into smaller memories\n")


def test_a_merged_or_loaded_memory_over_the_bound_is_refused_before_anything_is_written(tree: Path) -> None:
    text = SMALL.replace("Saturday football.", "y" * MAX_MEMORY_BYTES)
    mem = Memory(tree)
    before = sorted(path.name for path in tree.iterdir())
    with pytest.raises(MemoryFileTooLarge, match="merged project_new.md would hold 4.0 MiB"), mem.transaction() as tx:
        tx.apply({"project_new.md": text}, {})
    assert sorted(path.name for path in tree.iterdir()) == before


def test_the_mcp_tools_list_the_rest_and_refuse_to_show_it(tree: Path) -> None:
    tools = MemoryTools(ServedMemory(Memory(tree), read_only=False, origin=str(tree)))
    assert [row["key"] for row in tools.list()] == ["project_cup", "user_role"]
    assert any(warning.startswith(PROBLEM) for warning in tools.served.memory.warnings)
    assert sorted(hit["key"] for hit in tools.recall("saturday", rank="salience")) == ["project_cup", "user_role"]
    with pytest.raises(MemoryFileTooLarge, match="project_huge.md holds 286 MiB"):
        tools.show("project_huge")
    assert "project_huge" not in tools.index()


@pytest.fixture
def big_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bundle holding ``project_big.md`` of 5 MiB, built where the bound was larger (an older or another
    writer's bundle), with ``user_small.md`` beside it."""
    with monkeypatch.context() as bigger:
        bigger.setattr(filesize, "MAX_MEMORY_BYTES", 64 * 1024**2)
        bigger.setattr(backend, "MAX_MEMORY_BYTES", 64 * 1024**2)
        source = Memory(tmp_path / "elsewhere")
        source.write("user_small", name="s", description="d", type="user", body="hi")
        source.write("project_big", name="Big", description="d", type="project", body="x" * (5 * 1024**2))
        build_bundle(tmp_path / "elsewhere", tmp_path / "big.car")
    return tmp_path / "big.car"


def test_a_bundle_carrying_a_file_over_the_bound_loads_verbatim_and_never_merges_in(
        big_bundle: Path, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    loaded = CliRunner().invoke(cli, ["load", str(big_bundle), "-o", str(tmp_path / "loaded")])
    assert loaded.exit_code == 0, loaded.output
    assert (tmp_path / "loaded" / "project_big.md").stat().st_size > MAX_MEMORY_BYTES  # the verified copy, whole
    listed = memory_cli(tmp_path / "loaded", "list").stdout.splitlines()
    assert listed[0].startswith("project_big\tbroken\t-\t-\tproject_big.md holds 5.0 MiB") and "user_small" in listed[1]
    before = _files(tree)
    for command in (["merge", "-d", str(tree)], ["fork", "-d", str(tree)]):
        refused = CliRunner().invoke(cli, [*command, str(big_bundle)])
        assert refused.exit_code == 1, refused.output
        assert "project_big.md would hold 5.0 MiB (5243001 bytes), over the 4 MiB a memory file may hold" in refused.stderr
        assert _files(tree) == before


def _files(tree: Path) -> dict[str, bytes | int]:
    """The tree's files (not its derived index's folder): each one's bytes, the huge one's size."""
    return {str(path.relative_to(tree)): path.stat().st_size if path.name == "project_huge.md" else path.read_bytes()
            for path in sorted(tree.rglob("*")) if path.is_file() and not path.relative_to(tree).parts[0].startswith(".")}


def test_a_timeline_day_over_the_bound_is_left_out_of_context_export_and_build_and_strict_refuses(
    tree: Path, tmp_path: Path
) -> None:
    # Before the bound, a 300 MB day took context 53 s and 3.9 GB, build 137 s and 4.5 GB (parsed whole).
    (tree / "project_huge.md").unlink()
    assert memory_cli(tree, "note", "kickoff", "at=ten").exit_code == 0
    with (tree / "timeline" / "2026-01-01.jsonl").open("wb") as day:
        day.truncate(HUGE)
    named = "timeline/2026-01-01.jsonl holds 286 MiB (300000000 bytes), over the 4 MiB"
    for args in (["context"], ["export"]):
        shown = memory_cli(tree, *args)
        assert shown.exit_code == 0 and shown.stderr.count(named) == 1, shown.output
    exported = json.loads(memory_cli(tree, "export").stdout)
    assert [e["type"] for e in exported["timeline"]] == ["kickoff"]
    built = CliRunner().invoke(cli, ["build", str(tree), "-o", str(tmp_path / "b.car")])
    assert built.exit_code == 0 and built.stderr.count(named) == 1, built.output
    strict_car = tmp_path / "strict.car"
    refused = CliRunner().invoke(cli, ["build", str(tree), "-o", str(strict_car), "--strict"])
    assert refused.exit_code == 1 and named in refused.stderr and not strict_car.exists()
