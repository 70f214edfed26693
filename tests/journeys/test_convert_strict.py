"""Journey: a person exports their memory to each system, reads what is lost, then asks for --strict.

Typed as at the CLI (``bundlekit memory write``, ``bundlekit convert --to ... --json``,
``bundlekit convert --to ... --strict``), each line through the CLI in this test process. For every target: what the
export cannot carry is named in a ``warning:`` on stderr and in ``--json``'s ``losses`` (each memory
by key, the timeline as ``"memory": null``); ``--strict`` exits 1 naming the losses and writes
nothing (the output not created, or an existing one left byte for byte as it was). specs/interop.md
section 1.4; issue 34 items 3 and 6.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.journeys.typed import in_process, set_up

#: (format, output name, extra options): every target bundlekit exports to.
TARGETS = [
    ("massgen", "ws", []),
    ("claude-code", "cc", []),
    ("three.ws", "blob.json", []),
    ("magic-context", "mc.db", ["--project", "git:" + "b" * 40]),
    ("magicfrog", "frog", []),
    ("letta", "agent.af", []),
]


def bk(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``bundlekit ARGS`` with a home of its own (never the user's store or config), through the CLI in this
    process (``typed.in_process``): what is checked is what ``convert`` writes, refuses and prints, not a fresh
    process's start-up (~0.15 s of CPU each)."""
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config")}
    return in_process(args, cwd=tmp_path, env=env)


def files_of(path: Path) -> dict[str, bytes]:
    if path.is_file():
        return {path.name: path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture(scope="session")
def typed_memory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two memories written at the command line, two timeline notes, and one memory named 'Goal: win'.

    Set up once per test process with the six command lines a person types (through the CLI in this process:
    the set-up, not what any test checks); each test converts a copy of it (``memory``).
    """
    tmp_path = tmp_path_factory.mktemp("typed")
    tree = tmp_path / "memory"
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config")}
    lines = [f"bundlekit memory init -d {tree}"]
    lines += [f"bundlekit memory write {key} -d {tree} --name {name} --description '{key} notes' --type feedback "
              f"--body 'about {key}'" for key, name in (("tone", "tone"), ("plan", "Plan"))]
    lines += [f"bundlekit memory note played_clip name={clip} -d {tree}" for clip in ("kick", "pass")]
    lines.append(f"bundlekit memory write goal -d {tree} --name 'Goal: win' --description 'Fix issue #12' "
                 "--type project --body 'the goal'")
    for line in lines:
        set_up(line, cwd=tmp_path, env=env)
    return tree


@pytest.fixture
def memory(typed_memory: Path, tmp_path: Path) -> Path:
    """This test's own copy of the typed tree (a test may change it)."""
    tree = tmp_path / "memory"
    shutil.copytree(typed_memory, tree, symlinks=True)
    return tree


@pytest.mark.parametrize(("fmt", "out", "options"), TARGETS, ids=[t[0] for t in TARGETS])
def test_strict_exits_1_and_creates_nothing_when_anything_is_lost(
    fmt: str, out: str, options: list[str], memory: Path, tmp_path: Path
) -> None:
    # revision (every memory has one) or a name travels nowhere but Letta; for Letta, two memories
    # on one block label (Letta finds a block by label) is the loss.
    if fmt == "letta":
        for key in ("tone", "plan"):
            path = memory / f"{key}.md"
            path.write_text(path.read_text(encoding="utf-8").replace("type: feedback\n", "type: feedback\nx-letta-label: human\n"),
                            encoding="utf-8")
    done = bk(tmp_path, "convert", "--to", fmt, str(memory), "-o", str(tmp_path / out), "--strict", *options)
    assert done.returncode == 1, done.stderr
    assert "cannot be carried exactly" in done.stderr and "nothing was written" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / out).exists()


@pytest.mark.parametrize(("fmt", "out", "options"), [t for t in TARGETS if t[0] in ("massgen", "claude-code", "magicfrog")],
                         ids=["massgen", "claude-code", "magicfrog"])
def test_strict_leaves_an_existing_output_folder_as_it_was(
    fmt: str, out: str, options: list[str], memory: Path, tmp_path: Path
) -> None:
    dest = tmp_path / out
    (dest / "memory" / "long_term").mkdir(parents=True)
    (dest / "memory" / "long_term" / "tone.md").write_text("an older file\n", encoding="utf-8")
    (dest / "MEMORY.md").write_text("- [tone](tone.md) \u2014 old\n", encoding="utf-8")
    before = files_of(dest)
    done = bk(tmp_path, "convert", "--to", fmt, str(memory), "-o", str(dest), "--strict", *options)
    assert done.returncode == 1, done.stderr
    assert files_of(dest) == before


@pytest.mark.parametrize(("fmt", "out", "options"), TARGETS, ids=[t[0] for t in TARGETS])
def test_json_losses_name_every_memory_a_warning_names(
    fmt: str, out: str, options: list[str], memory: Path, tmp_path: Path
) -> None:
    done = bk(tmp_path, "convert", "--to", fmt, str(memory), "-o", str(tmp_path / out), "--json", *options)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    losses = summary["losses"]
    for warning in summary["warnings"]:
        assert f"warning: {warning}" in done.stderr
        if warning.startswith(("memory '", "left out memory '")):
            key = warning.split("'")[1]
            assert any(loss["memory"] == key and loss["change"] in warning for loss in losses), warning
    if fmt == "letta":
        assert losses == []  # Letta carries every field and the timeline
        return
    assert {loss["memory"] for loss in losses if loss["memory"] is not None} == {"goal", "plan", "tone"}
    timeline = [loss for loss in losses if loss["memory"] is None]
    if fmt == "three.ws":
        assert timeline == []  # the plain blob carries the timeline
    else:
        assert len(timeline) == 1 and timeline[0]["left_out"] is True
        assert timeline[0]["change"].startswith("left out ") and " timeline event" in timeline[0]["change"]


def test_massgen_names_each_memory_whose_name_it_replaces(memory: Path, tmp_path: Path) -> None:
    done = bk(tmp_path, "convert", "--to", "massgen", str(memory), "-o", str(tmp_path / "ws"), "--json")
    assert done.returncode == 0, done.stderr
    renamed = {loss["memory"] for loss in json.loads(done.stdout)["losses"] if loss["change"].startswith("name: ")}
    assert renamed == {"goal", "plan"}  # 'tone' is named as its key: nothing changes
    assert "warning: memory 'goal': name: MassGen's name is the memory's file name" in done.stderr


def test_strict_exports_to_letta_when_nothing_is_lost(memory: Path, tmp_path: Path) -> None:
    done = bk(tmp_path, "convert", "--to", "letta", str(memory), "-o", str(tmp_path / "agent.af"), "--strict", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["memories"] == 3 and summary["losses"] == [] and summary["timeline"] == 2
    assert (tmp_path / "agent.af").is_file()


@pytest.mark.parametrize("name", ["\ufeffPlan", "Plan\ufeff", "\u3000Plan"])
def test_three_ws_names_a_name_its_runtime_trims_as_javascript_does(name: str, memory: Path, tmp_path: Path) -> None:
    # three.ws's parseFrontmatter trims with String.prototype.trim (nirholas/three.ws 7c55ae7 src/memory/index.js),
    # which removes U+FEFF as well as spaces; Python's str.strip keeps it, so a BOM-led name passed as exact.
    # planted as a hand-edited file would be (`memory write` refuses a name led by such a character)
    meta = {"name": name, "description": "b notes", "type": "project", "created": "2026-01-01T00:00:00Z",
            "updated": "2026-01-01T00:00:00Z"}
    (memory / "bom.md").write_text(f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---\n\nb\n",
                                   encoding="utf-8")
    done = bk(tmp_path, "convert", "--to", "three.ws", str(memory), "-o", str(tmp_path / "blob.json"), "--json")
    assert done.returncode == 0, done.stderr
    changes = [loss["change"] for loss in json.loads(done.stdout)["losses"] if loss["memory"] == "bom"]
    assert any(change.startswith("name: three.ws's line reader") for change in changes), changes


def test_a_directory_where_an_export_file_goes_exits_1_and_writes_no_file(memory: Path, tmp_path: Path) -> None:
    # each file is written atomically, but the export as a whole was not: the files before the one in the
    # way were written, then exit 1; every path is now checked before the first file
    dest = tmp_path / "cc"
    (dest / "tone.md").mkdir(parents=True)
    done = bk(tmp_path, "convert", "--to", "claude-code", str(memory), "-o", str(dest))
    assert done.returncode == 1, done.stderr
    assert "a directory is in the way" in done.stderr and "Traceback" not in done.stderr
    assert [p.name for p in dest.iterdir()] == ["tone.md"] and not any((dest / "tone.md").iterdir())


@pytest.mark.parametrize(("fmt", "out"), [("three.ws", "blob.json"), ("letta", "agent.af")])
def test_a_one_file_export_to_a_link_to_a_directory_exits_1_and_keeps_the_link(
    fmt: str, out: str, memory: Path, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / out
    link.symlink_to(tmp_path / "elsewhere")  # as a real directory there is refused, so is a link to one
    done = bk(tmp_path, "convert", "--to", fmt, str(memory), "-o", str(link))
    assert done.returncode == 1, done.stderr
    assert "a directory is in the way" in done.stderr
    assert link.is_symlink() and list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.parametrize(("fmt", "inside"), [("three.ws", "MEMORY.md"), ("letta", "tone.md"), ("claude-code", "cc")])
def test_an_export_inside_the_tree_it_converts_exits_2_and_leaves_the_tree_as_it_was(
    fmt: str, inside: str, memory: Path, tmp_path: Path
) -> None:
    # `-o memory/MEMORY.md` replaced the tree's index with a three.ws blob (and `-o memory/tone.md` a memory)
    before = files_of(memory)
    done = bk(tmp_path, "convert", "--to", fmt, str(memory), "-o", str(memory / inside))
    assert done.returncode == 2, done.stderr
    assert "is inside the memory tree" in done.stderr and "Traceback" not in done.stderr
    assert files_of(memory) == before
