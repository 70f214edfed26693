"""A memory file of gigabytes in a tree, still or growing while it is read, in a memory-capped child.

Every command that walks the tree runs under the hostile harness's cap (``MEMORY_LIMIT``, 512 MiB of address
space): a file of 8 GiB (sparse: ``truncate``, nothing on disk) read whole would die of it. Each carries on
with the rest, naming the file (``bundlekit.memory.filesize``); and a file that grows from a small memory to
8 GiB and back, over and over while ``memory list`` and ``build`` read it (the size taken before the read is
then not the size read), is read no further than the bound: listed as itself or as broken, never a crash.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli

from .conftest import RunCli

GIB8 = 8 * 1024**3
MEMORY = (
    "---\nname: {name}\ndescription: d\ntype: project\n"
    "created: 2026-04-14T12:03:12Z\nupdated: 2026-04-14T12:03:12Z\n---\n\nSaturday football.\n"
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    root.mkdir()
    for number in range(12):  # more than eight: the C reader reads them
        (root / f"project_{number:02}.md").write_text(MEMORY.format(name=f"Plan {number}"), encoding="utf-8")
    assert CliRunner().invoke(cli, ["memory", "-d", str(root), "list"]).exit_code == 0  # the index, built
    return root


@pytest.mark.parametrize("command", [["memory", "list"], ["memory", "list", "--json"],
                                     ["memory", "recall", "saturday"], ["memory", "context"],
                                     ["memory", "export"]])
def test_a_sparse_8_gib_memory_file_is_named_and_the_rest_carried(
        tree: Path, run_cli: RunCli, command: list[str]) -> None:
    with (tree / "project_huge.md").open("wb") as huge:
        huge.truncate(GIB8)
    done = run_cli(command[0], "-d", str(tree), *command[1:])
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    named = "project_huge.md holds 8192 MiB (8589934592 bytes), over the 4 MiB a memory file may hold"
    assert named in done.stdout + done.stderr
    assert "project_07" in done.stdout or "Plan 7" in done.stdout


def test_build_of_a_tree_with_it_leaves_it_out_and_strict_writes_nothing(
        tree: Path, run_cli: RunCli, tmp_path: Path) -> None:
    with (tree / "project_huge.md").open("wb") as huge:
        huge.truncate(GIB8)
    built = run_cli("build", str(tree), "-o", str(tmp_path / "b.car"))
    assert built.returncode == 0, built.stderr
    assert "project_huge.md holds 8192 MiB" in built.stderr
    refused = run_cli("build", str(tree), "-o", str(tmp_path / "s.car"), "--strict")
    assert refused.returncode == 1 and "project_huge.md holds 8192 MiB" in refused.stderr
    assert not (tmp_path / "s.car").exists()


def test_show_refuses_it_and_forget_removes_it_in_bounded_memory(tree: Path, run_cli: RunCli) -> None:
    with (tree / "project_huge.md").open("wb") as huge:
        huge.truncate(64 * 1024**2)  # forget hashes every byte, in pieces of a MiB: 64 MiB keeps that quick
    shown = run_cli("memory", "-d", str(tree), "show", "project_huge")
    assert shown.returncode == 1 and shown.stdout == "" and "not shown" in shown.stderr
    forgot = run_cli("memory", "-d", str(tree), "forget", "project_huge")
    assert forgot.returncode == 0, forgot.stderr
    assert not (tree / "project_huge.md").exists()


@pytest.fixture
def growing(tree: Path) -> Iterator[Path]:
    """``project_grow.md``, a small memory that a thread grows to 8 GiB (sparse) and cuts back, over and over
    (the same inode, in place), until the test ends."""
    path = tree / "project_grow.md"
    small = MEMORY.format(name="Grows").encode()
    path.write_bytes(small)
    stop = threading.Event()

    def grow() -> None:
        with path.open("r+b") as file:
            while not stop.is_set():
                file.truncate(GIB8)
                file.truncate(len(small))

    thread = threading.Thread(target=grow, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        stop.set()
        thread.join(timeout=10)


@pytest.mark.parametrize("command", [["memory", "list", "--json"], ["build"]])
def test_a_file_growing_while_it_is_read_is_read_no_further_than_the_bound(
        tree: Path, growing: Path, run_cli: RunCli, tmp_path: Path, command: list[str]) -> None:
    seen: set[str] = set()
    for round_ in range(6):
        if command[0] == "build":
            done = run_cli("build", str(tree), "-o", str(tmp_path / f"b{round_}.car"))
        else:
            done = run_cli(command[0], "-d", str(tree), *command[1:])
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
        if command[0] == "build":
            seen.add("broken" if "project_grow.md holds" in done.stderr else "read")
        else:
            rows = {row["key"]: row for row in json.loads(done.stdout)}
            assert {f"project_{n:02}" for n in range(12)} <= set(rows)
            grow = rows.get("project_grow")  # gone for an instant never: it is cut back in place
            assert grow is not None
            seen.add("broken" if "broken" in grow else "read")
            if "broken" in grow:
                assert "project_grow.md holds" in grow["broken"] and "4 MiB a memory file may hold" in grow["broken"]
            else:
                assert grow["name"] == "Grows"
    assert seen <= {"broken", "read"}  # each round took it as read (small then) or as over the bound, never a crash


def test_a_sparse_8_gib_memory_index_is_written_again_never_read_whole(tree: Path, run_cli: RunCli) -> None:
    index = tree / "MEMORY.md"
    with index.open("r+b") as planted:  # MEMORY.md is derived: one of gigabytes is not ours, so it is rewritten
        planted.truncate(GIB8)
    done = run_cli("memory", "-d", str(tree), "context")
    assert done.returncode == 0, done.stderr
    assert "Plan 7" in done.stdout and "Traceback" not in done.stderr
    assert index.stat().st_size < 64 * 1024 and "Plan 7" in index.read_text(encoding="utf-8")
