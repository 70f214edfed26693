"""The trusted refresh (specs/memory.md, "Freshness"): past TRUST_MIN_ROWS files a command may take the last full
check's word while the tree directory and the index are as it left them, for TRUST_NS_PER_ROW a file (at least
TRUST_MIN_NS).

What each change made outside bundlekit is seen by, and when: a file added, removed or replaced (an editor's
write-and-rename) moves the directory and is seen by the next command; an edit in place keeps it and is seen at
once by what reads the file (show, a write or forget of it, the hits recall and context show, list --json,
bundles, merges, exports), by the rest once the window is up. The trees here are small: the thresholds are
lowered to them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bundlekit.cli import cli
from bundlekit.errors import InvalidKeyError, MemoryStoreError
from bundlekit.memory import Memory, indexer, screen
from bundlekit.memory.backend import DirectoryBackend

from .conftest import Clock, count_listings, fields

COUNT = 12


@pytest.fixture
def trusting(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tree of COUNT memories is big enough to be trusted, for a window no test outlives."""
    monkeypatch.setattr(indexer, "TRUST_MIN_ROWS", COUNT - 2)
    monkeypatch.setattr(indexer, "TRUST_NS_PER_ROW", 10**12)


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many files each listing of a tree (a readdir and an lstat per file) looked at, in order."""
    return count_listings(monkeypatch)


def _grown(tree: Path, clock: Clock) -> Memory:
    mem = Memory(tree, clock=clock)
    for number in range(COUNT):
        mem.write(f"m{number:02d}", **fields(name=f"Memory {number}", body=f"body {number} drill"))
    mem.close()
    Memory(tree, clock=clock).recall("drill")  # a full check, recorded
    return Memory(tree, clock=clock)


def _edit_in_place(path: Path, old: str, new: str) -> None:
    with path.open("r+", encoding="utf-8") as handle:  # the same inode: the directory does not move
        text = handle.read().replace(old, new)
        handle.seek(0)
        handle.write(text)
        handle.truncate()


@pytest.mark.usefixtures("trusting")
def test_a_write_at_n_memories_lists_no_file_once_a_full_check_is_recorded(
    tree: Path, clock: Clock, listings: list[int]
) -> None:
    mem = _grown(tree, clock)
    listings.clear()
    mem.write("new", **fields())
    Memory(tree, clock=clock).write("newer", **fields())
    Memory(tree, clock=clock).forget("new")
    Memory(tree, clock=clock).note("tick", text="a line")
    Memory(tree, clock=clock).init()
    assert listings == []
    assert [line.split("\t")[0] for line in Memory(tree, clock=clock).list_lines()][-1] == "newer"
    assert listings == []


@pytest.mark.usefixtures("trusting")
def test_a_file_another_program_adds_or_removes_is_seen_by_the_next_command(
    tree: Path, clock: Clock, listings: list[int]
) -> None:
    _grown(tree, clock)
    (tree / "added.md").write_bytes((tree / "m03.md").read_bytes().replace(b"body 3 drill", b"body volley"))
    assert [h.key for h in Memory(tree, clock=clock).recall("volley")] == ["added"]
    (tree / "m05.md").unlink()
    assert "m05" not in [line.split("\t")[0] for line in Memory(tree, clock=clock).list_lines()]
    assert listings  # each looked: the directory had moved


@pytest.mark.usefixtures("trusting")
def test_an_editor_save_by_rename_is_seen_by_the_next_command(tree: Path, clock: Clock) -> None:
    _grown(tree, clock)
    path = tree / "m04.md"
    temp = tree / "m04.md.swp-new"
    temp.write_text(path.read_text(encoding="utf-8").replace("Memory 4", "Renamed four"), encoding="utf-8")
    os.replace(temp, path)  # a new inode under the same name: the directory moves
    assert "Renamed four" in Memory(tree, clock=clock).list_text()


@pytest.mark.usefixtures("trusting")
def test_an_edit_in_place_is_seen_at_once_by_what_reads_the_file(tree: Path, clock: Clock) -> None:
    _grown(tree, clock)
    _edit_in_place(tree / "m06.md", "Memory 6", "Edited six")
    mem = Memory(tree, clock=clock)
    assert mem.read("m06") is not None and mem.read("m06").name == "Edited six"  # type: ignore[union-attr]
    assert "Memory 6" in mem.list_text()  # the lines trust the index until the window is up
    assert "Edited six" in [r.name for r in Memory(tree, clock=clock).list()]  # a whole-tree read lists the tree
    with Memory(tree, clock=clock).transaction() as tx:  # a bundle's or a merge's read
        assert any(r.name == "Edited six" for r in tx.records())


@pytest.mark.usefixtures("trusting")
def test_an_edit_in_place_is_seen_by_every_command_once_the_window_is_up(
    tree: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _grown(tree, clock)
    _edit_in_place(tree / "m07.md", "body 7 drill", "body 7 rondo")
    assert Memory(tree, clock=clock).recall("rondo") == []
    monkeypatch.setattr(indexer, "TRUST_NS_PER_ROW", 0)
    monkeypatch.setattr(indexer, "TRUST_MIN_NS", 0)
    assert [h.key for h in Memory(tree, clock=clock).recall("rondo")] == ["m07"]


def test_below_the_threshold_every_command_checks_every_file(tree: Path, clock: Clock) -> None:
    _grown(tree, clock)  # COUNT files: below TRUST_MIN_ROWS
    _edit_in_place(tree / "m08.md", "Memory 8", "Edited eight")
    assert "Edited eight" in Memory(tree, clock=clock).list_text()


@pytest.mark.usefixtures("trusting")
def test_a_writers_temp_in_the_root_keeps_every_command_listing_until_it_is_gone(
    tree: Path, clock: Clock, listings: list[int]
) -> None:
    _grown(tree, clock)
    temp = tree / f".m09.md.{os.getpid()}.0123abcd.tmp"  # a write in progress, or a killed writer's
    temp.write_text("half", encoding="utf-8")
    listings.clear()
    Memory(tree, clock=clock).recall("drill")
    Memory(tree, clock=clock).recall("drill")
    assert len(listings) == 2
    temp.unlink()
    Memory(tree, clock=clock).recall("drill")
    listings.clear()
    Memory(tree, clock=clock).recall("drill")
    assert listings == []


def _behind_the_directory(tree: Path, change: Callable[[], None]) -> None:
    """``change`` the tree, then put the directory's mtime back as ``touch -d``, ``rsync -a``, ``tar x`` and
    ``cp -a`` into the tree do after adding their files (its ctime moves: only the clock sets that)."""
    before = os.stat(tree)
    change()
    os.utime(tree, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(tree).st_mtime_ns == before.st_mtime_ns


@pytest.mark.usefixtures("trusting")
def test_a_file_added_behind_a_put_back_directory_mtime_is_seen_by_a_writes_case_check(
    tree: Path, clock: Clock
) -> None:
    _grown(tree, clock)
    _behind_the_directory(tree, lambda: (tree / "Foo.md").write_bytes((tree / "m01.md").read_bytes()))
    with pytest.raises(InvalidKeyError, match="differs only in case from the existing 'Foo'"):
        Memory(tree, clock=clock).write("foo", **fields())
    assert not (tree / "foo.md").exists()
    assert len(Memory(tree, clock=clock).list()) == COUNT + 1  # the tree still reads: no case clash was made


@pytest.mark.usefixtures("trusting")
def test_a_file_removed_behind_a_put_back_directory_mtime_is_gone_from_the_next_commands_lines(
    tree: Path, clock: Clock
) -> None:
    _grown(tree, clock)
    _behind_the_directory(tree, (tree / "m05.md").unlink)
    assert "m05" not in [line.split("\t")[0] for line in Memory(tree, clock=clock).list_lines()]


@pytest.mark.usefixtures("trusting")
def test_a_memory_swapped_for_a_link_behind_a_put_back_directory_mtime_is_refused_not_read(
    tree: Path, clock: Clock
) -> None:
    _grown(tree, clock)
    outside = tree.parent / "outside.md"
    outside.write_bytes((tree / "m02.md").read_bytes().replace(b"body 2 drill", b"body outside drill"))

    def swap() -> None:
        (tree / "m02.md").unlink()
        (tree / "m02.md").symlink_to(outside)

    _behind_the_directory(tree, swap)
    with pytest.raises(MemoryStoreError, match="m02.md"):
        Memory(tree, clock=clock).context_block(query="drill")


@pytest.mark.usefixtures("trusting")
def test_an_edit_in_place_of_a_memory_md_line_leaves_no_former_text_in_the_index_or_context_block(
    tree: Path, clock: Clock
) -> None:
    _grown(tree, clock)
    _edit_in_place(tree / "m04.md", "Memory 4", "Edited four")
    text = Memory(tree, clock=clock).index_text()  # the MCP memory_index tool's text
    assert "Edited four" in text and "Memory 4" not in text
    assert "Edited four" in (tree / "MEMORY.md").read_text(encoding="utf-8")  # caught up, as a full check would
    Memory(tree, clock=clock).recall("drill")  # a full check, recorded
    _edit_in_place(tree / "m04.md", "Edited four", "Again four")
    block = Memory(tree, clock=clock).context_block(max_tokens=400)  # MEMORY.md, and no room for m04's piece
    assert "Again four" in block and "Edited four" not in block


@pytest.mark.usefixtures("trusting")
def test_a_journey_at_the_cli_sees_a_put_back_add_and_an_edit_in_place(
    tree: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a person types it: a peer's ``rsync -a`` drops ``Foo.md`` in (the directory's mtime put back), the
    agent writes ``foo`` and is refused, not left with a case clash; a hand edit in place of a name is in the
    next context block."""
    monkeypatch.delenv("BUNDLEKIT_MEMORY_DIR", raising=False)
    _grown(tree, clock)

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli, ["memory", "-d", str(tree), *args])

    _behind_the_directory(tree, lambda: (tree / "Foo.md").write_bytes((tree / "m01.md").read_bytes()))
    refused = run("write", "foo", "--name", "F", "--description", "d", "--type", "user", "--body", "b")
    assert refused.exit_code == 1 and "differs only in case from the existing 'Foo'" in refused.stderr
    assert not (tree / "foo.md").exists()
    assert run("list", "--json").exit_code == 0
    assert run("recall", "drill").exit_code == 0  # a full check, recorded
    _edit_in_place(tree / "m03.md", "Memory 3", "Hand edited three")
    shown = run("context", "--max-tokens", "400")
    assert shown.exit_code == 0 and "Hand edited three" in shown.stdout and "Memory 3" not in shown.stdout


@pytest.mark.usefixtures("trusting")
def test_a_file_another_program_adds_while_a_write_runs_is_not_hidden_by_the_writes_record(
    tree: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write records the directory as its own writes left it: a ``Foo.md`` a sync tool drops in between the
    write's check and its file is seen by the next command (its case check), not vouched for."""
    mem = _grown(tree, clock)
    guard = screen.guard_record

    def meanwhile(*args: Any, **kwargs: Any) -> None:
        guard(*args, **kwargs)
        if not (tree / "Foo.md").exists():
            (tree / "Foo.md").write_bytes((tree / "m01.md").read_bytes())

    monkeypatch.setattr(screen, "guard_record", meanwhile)
    mem.write("other", **fields())
    monkeypatch.setattr(screen, "guard_record", guard)
    with pytest.raises(InvalidKeyError, match="differs only in case from the existing 'Foo'"):
        Memory(tree, clock=clock).write("foo", **fields())
