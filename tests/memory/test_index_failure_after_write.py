"""A full disk after a memory file is written: the change stands, with a warning, and the index catches up.

Found by ``bench/soak.py`` (issue 35 item 9): with ``RLIMIT_FSIZE`` below the size of
``.bundlekit/index.sqlite``, ``bundlekit memory write`` wrote the memory file, then failed to
update the index ("the memory index could not be used (disk I/O error)") and exited 1: a write
reported refused that was made. The index and ``MEMORY.md`` are derived from the files, so
their update failing is a warning; the next command brings them up to date.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.errors import MemoryStoreError
from bundlekit.memory import Memory
from bundlekit.memory.indexer import Indexer

from .conftest import fields

FULL = "the memory index could not be used (disk I/O error); retry, and check free disk space"


def _index_update_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*_args: object, **_kwargs: object) -> None:
        raise MemoryStoreError(FULL)

    monkeypatch.setattr(Indexer, "stored", full)


def test_a_write_whose_index_update_fails_on_a_full_disk_is_written_with_a_warning(
    mem: Memory, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.write("project_first", **fields(name="First"))
    _index_update_fails(monkeypatch)
    record = mem.write("project_second", **fields(name="Second", body="Kept."))
    assert (tree / "project_second.md").read_text("utf-8") == record.raw
    assert any(FULL in w and "the change is written" in w for w in mem.warnings)
    monkeypatch.undo()
    again = Memory(tree)
    assert [r.key for r in again.list()] == ["project_first", "project_second"]
    assert "Second" in (tree / "MEMORY.md").read_text("utf-8")


def test_memory_write_exits_0_naming_the_index_when_only_the_index_update_hit_a_full_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "memory"
    Memory(tree).init()

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst).name == "MEMORY.md":  # the memory file is in place; the index's rename finds no room
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_replace(src, dst)

    real_replace = os.replace
    monkeypatch.setattr(os, "replace", replace)
    done = CliRunner().invoke(cli, ["memory", "write", "project_a", "-d", str(tree), "--type", "project",
                                    "--name", "A", "--description", "about a", "--body", "Acknowledged."])
    monkeypatch.undo()
    assert done.exit_code == 0, done.stderr
    assert "warning:" in done.stderr and "No space left on device" in done.stderr
    assert "Acknowledged." in (tree / "project_a.md").read_text("utf-8")
    listed = CliRunner().invoke(cli, ["memory", "list", "-d", str(tree)])
    assert listed.exit_code == 0 and "project_a" in listed.stdout
    assert "project_a" in (tree / "MEMORY.md").read_text("utf-8")
