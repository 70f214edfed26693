"""Attacks on the signature blob a connection holds since issue 37 (``StatCache._blob_of``, ``committed``,
``rows_held``): ``MEMORY.md``'s count of memories it cannot show comes from the held blob, so a blob planted at
the current generation that names other files than the rows (one too many, one too few) must not reach that
count, nor survive the next write spliced into the blob stored. Each test compares with the same tree whose index
was deleted: derived data never decides bytes that leave (``MEMORY.md`` is bundled)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from bundlekit.memory import Memory
from bundlekit.memory.index import MAX_INDEX_LINES

from .test_hostile_derived_index import OLD_NS, _drop_index, _index
from .test_signature_blob_attacks import _plant, _state

_COUNT = MAX_INDEX_LINES + 10  # more memories than MEMORY.md shows: it counts the others in its last line


def _large_tree(root: Path) -> Path:
    """A settled tree of more memories than ``MEMORY.md`` can show, indexed with every row settled."""
    root.mkdir(parents=True)
    for n in range(_COUNT):
        (root / f"m{n:03d}.md").write_text(
            f"---\nname: M{n}\ndescription: note {n}\ntype: project\ncreated: 2020-09-13T12:26:40Z\n"
            f"updated: 2020-09-13T12:26:40Z\nrevision: 1\n---\n\nbody {n}\n", encoding="utf-8")
        os.utime(root / f"m{n:03d}.md", ns=(OLD_NS, OLD_NS))
    Memory(root).list()
    return root


def _blob(tree: Path) -> bytes:
    value = _state(tree, "sigs")
    assert isinstance(value, bytes)
    return value


def _rows_names(tree: Path) -> bytes:
    with sqlite3.connect(_index(tree)) as conn:
        names = [row[0] for row in conn.execute("SELECT file FROM memory ORDER BY file")]
    conn.close()
    return "\0".join(names).encode("utf-8")


def _plant_other_names(tree: Path, kind: str) -> None:
    """A blob of the current generation naming one file more (no such file, no row), one fewer than the rows, or
    both (the count of rows kept)."""
    sigs = _blob(tree)
    length = int.from_bytes(sigs[:8], "little")
    names, numbers = sigs[8 : 8 + length].split(b"\0"), sigs[8 + length :]
    if kind in ("a name too many", "a name swapped"):
        names.append(b"zz-ghost.md")
        numbers += (1).to_bytes(8, "little") * 3
    if kind in ("a name too few", "a name swapped"):
        at = names.index(b"m100.md")
        names.pop(at)
        numbers = numbers[: 24 * at] + numbers[24 * at + 24 :]
    joined = b"\0".join(names)
    _plant(tree, len(joined).to_bytes(8, "little") + joined + numbers)


def _fresh_memory_md(tree: Path, tmp_path: Path) -> str:
    """The ``MEMORY.md`` the same files give with the index deleted."""
    fresh = tmp_path / "fresh"
    shutil.copytree(tree, fresh)
    _drop_index(fresh)
    Memory(fresh).list()
    return (fresh / "MEMORY.md").read_text(encoding="utf-8")


def _edit_description(tree: Path) -> None:
    path = tree / "m005.md"
    path.write_text(path.read_text(encoding="utf-8").replace("note 5", "note five"), encoding="utf-8")
    os.utime(path, ns=(OLD_NS + 7, OLD_NS + 7))


@pytest.mark.parametrize("kind", ["a name too many", "a name too few"])
def test_a_planted_blob_naming_other_files_than_the_rows_never_decides_memory_md_count(
        tmp_path: Path, kind: str) -> None:
    tree = _large_tree(tmp_path / "tree")
    _plant_other_names(tree, kind)
    _edit_description(tree)
    mem = Memory(tree)
    listed = [record.key for record in mem.list()]
    mem.close()
    assert len(listed) == _COUNT
    assert (tree / "MEMORY.md").read_text(encoding="utf-8") == _fresh_memory_md(tree, tmp_path)


@pytest.mark.parametrize("kind", ["a name too many", "a name too few", "a name swapped"])
def test_a_write_after_a_planted_blob_stores_the_blob_of_the_rows(tmp_path: Path, kind: str) -> None:
    tree = _large_tree(tmp_path / "tree")
    _plant_other_names(tree, kind)
    _edit_description(tree)
    Memory(tree).list()
    sigs = _blob(tree)
    assert sigs[8 : 8 + int.from_bytes(sigs[:8], "little")] == _rows_names(tree)


def test_a_blob_planted_while_a_process_holds_the_one_it_wrote_never_decides_its_next_memory_md(
        tmp_path: Path) -> None:
    """A long-running process (a follower, ``serve``) wrote and holds the blob; another connection then plants one
    with a name too many at the same generation and ``MEMORY.md`` is removed: the holder's next render counts what
    the files give, not the blob it held nor the planted one."""
    tree = _large_tree(tmp_path / "tree")
    holder = Memory(tree)
    holder.write("n01", name="N1", description="held", type="project", body="held")
    _plant_other_names(tree, "a name too many")
    (tree / "MEMORY.md").unlink()
    _edit_description(tree)
    listed = [record.key for record in holder.list()]
    holder.close()
    assert len(listed) == _COUNT + 1
    assert (tree / "MEMORY.md").read_text(encoding="utf-8") == _fresh_memory_md(tree, tmp_path)


@pytest.mark.parametrize("kind", ["a name too many", "a name too few", "a name swapped", "not a blob"])
def test_a_planted_blob_is_written_again_from_the_rows_with_no_file_changed(tmp_path: Path, kind: str) -> None:
    """specs/memory.md: a blob that is not the rows' one is compared against the rows and written again from them,
    though no file changed (else every command after it lists and compares every row again, for good)."""
    tree = _large_tree(tmp_path / "tree")
    if kind == "not a blob":
        _plant(tree, _blob(tree)[:-5])
    else:
        _plant_other_names(tree, kind)
    Memory(tree).list()
    sigs = _blob(tree)
    length = int.from_bytes(sigs[:8], "little")
    assert sigs[8 : 8 + length] == _rows_names(tree) and (len(sigs) - 8 - length) == 24 * _COUNT


def test_a_blob_written_again_after_a_plant_is_taken_at_its_word_by_the_next_command(tmp_path: Path) -> None:
    """The blob written again from the rows is the rows' one: the next command writes nothing (no loop of
    rewrites: the rows' names sorted as the blob sorts them)."""
    tree = _large_tree(tmp_path / "tree")
    _plant_other_names(tree, "a name swapped")
    Memory(tree).list()
    written, sigs = _state(tree, "written_ns"), _blob(tree)
    Memory(tree).list()
    assert (_state(tree, "written_ns"), _blob(tree)) == (written, sigs)
