"""Attacks on the index's packed signature blob since issue 37 (``StatCache.moved_in_place``, ``_differing``,
``racy_rows`` and its C twin, ``Database.set_bytes``): a blob planted, truncated or of odd length, names in
another order or encoding, a file replaced by a link or a folder, renames keeping the count. Each test edits the
tree (and the index as an attacker with write access to the tree would), then compares what leaves with the same
tree whose index was deleted: derived data never decides bytes, a hand edit is never missed."""

from __future__ import annotations

import os
import shutil
import sqlite3
from array import array
from pathlib import Path

import pytest

from bundlekit.errors import MemoryStoreError
from bundlekit.memory import Memory
from bundlekit.memory.catalog import stat as catalog_stat

from .test_hostile_derived_index import OLD_NS, _drop_index, _index, _outputs, _plant_in_place, _settled_tree


def _state(tree: Path, name: str) -> object:
    with sqlite3.connect(_index(tree)) as conn:
        row = conn.execute("SELECT value FROM state WHERE name = ?", (name,)).fetchone()
    conn.close()
    return row[0] if row else None


def _plant(tree: Path, blob: object) -> None:
    """``blob`` as the signature blob, of the current generation (the index vouches for it)."""
    with sqlite3.connect(_index(tree)) as conn:
        conn.execute("UPDATE state SET value = ? WHERE name = 'sigs'", (blob,))
        conn.execute("UPDATE state SET value = (SELECT value FROM state WHERE name = 'gen') WHERE name = 'sigs_gen'")
    conn.close()


def _edit(tree: Path) -> None:
    """rondo.md edited by hand: a new word, a new size, an old mtime (never racy)."""
    path = tree / "rondo.md"
    path.write_text(path.read_text(encoding="utf-8").replace("rondo then sprint", "rondo then hurdles"), "utf-8")
    os.utime(path, ns=(OLD_NS + 7, OLD_NS + 7))


def _as_without_index(tree: Path, tmp_path: Path) -> None:
    tampered = _outputs(tree, tmp_path / "a.car")
    mem = Memory(tree)
    hits = [h.key for h in mem.recall("hurdles")]
    mem.close()
    fresh = tmp_path / "fresh"
    shutil.copytree(tree, fresh)
    _drop_index(fresh)
    assert tampered[:-1] == _outputs(fresh, tmp_path / "b.car")[:-1]
    assert hits == ["rondo"]


def _blobs(tree: Path) -> dict[str, object]:
    sigs = _state(tree, "sigs")
    assert isinstance(sigs, bytes)
    head, rest = sigs[:8], sigs[8:]
    length = int.from_bytes(head, "little")
    names, numbers = rest[:length], rest[length:]
    swapped = b"\0".join(reversed(names.split(b"\0")))  # the same names in another order
    latin = names.replace(b"rondo", b"r\xf6ndo"[:5])  # bytes that are no UTF-8 in the names' part
    return {
        "truncated": sigs[:-5],
        "odd length": sigs + b"\x01",
        "empty": b"",
        "header only": head,
        "length past the end": (len(rest) + 1).to_bytes(8, "little") + rest,
        "length of two to the 64 minus one": b"\xff" * 8 + rest,
        "names reordered": head + swapped + numbers,
        "names not UTF-8": len(latin).to_bytes(8, "little") + latin + numbers,
        "name with a NUL": (length + 1).to_bytes(8, "little") + names.replace(b"drills", b"dri\0lls") + numbers,
        "text": sigs.decode("latin-1"),
        "integer": 5,
        "real": 1.5,
        "null": None,
        "the numbers zeroed": head + names + bytes(len(numbers)),
        "one row fewer": head + names + numbers[:-24],
    }




@pytest.mark.parametrize(
    "kind",
    ["truncated", "odd length", "empty", "header only", "length past the end", "length of two to the 64 minus one",
     "names reordered", "names not UTF-8", "name with a NUL", "text", "integer", "real", "null", "the numbers zeroed",
     "one row fewer"],
)
def test_a_planted_signature_blob_never_hides_a_hand_edit(tmp_path: Path, kind: str) -> None:
    tree = _settled_tree(tmp_path / "tree")
    _plant(tree, _blobs(tree)[kind])
    _edit(tree)
    _as_without_index(tree, tmp_path)


def test_two_files_swapped_by_rename_keeping_the_count_are_both_indexed_again(tmp_path: Path) -> None:
    tree = _settled_tree(tmp_path / "tree")
    drills, rondo = tree / "drills.md", tree / "rondo.md"
    text = rondo.read_text(encoding="utf-8").replace("rondo then sprint", "rondo then hurdles")
    rondo.write_text(text, encoding="utf-8")
    os.utime(rondo, ns=(OLD_NS, OLD_NS))
    os.rename(drills, tree / "tmp")
    os.rename(rondo, drills)  # drills.md now holds rondo's frontmatter and words (its key is still its name)
    os.rename(tree / "tmp", rondo)
    _as_without_index_keys(tree, tmp_path)


def test_a_file_renamed_to_a_new_name_while_another_is_added_keeping_the_count(tmp_path: Path) -> None:
    tree = _settled_tree(tmp_path / "tree")
    os.rename(tree / "drills.md", tree / "zdrills.md")  # the same inode, size and mtime under another name
    _as_without_index_keys(tree, tmp_path)


def _as_without_index_keys(tree: Path, tmp_path: Path) -> None:
    tampered = _outputs(tree, tmp_path / "a.car")
    fresh = tmp_path / "fresh"
    shutil.copytree(tree, fresh)
    _drop_index(fresh)
    assert tampered[:-1] == _outputs(fresh, tmp_path / "b.car")[:-1]


def test_a_memory_file_replaced_by_a_folder_is_no_longer_listed(tmp_path: Path) -> None:
    tree = _settled_tree(tmp_path / "tree")
    (tree / "striker.md").unlink()
    (tree / "striker.md").mkdir()
    mem = Memory(tree)
    assert [line.split("\t")[0] for line in mem.list_lines()] == ["drills", "rondo"]
    assert [h.key for h in mem.recall("volley")] == []
    mem.close()


def test_a_memory_file_replaced_by_a_link_is_refused_not_followed(tmp_path: Path) -> None:
    tree = _settled_tree(tmp_path / "tree")
    outside = tmp_path / "outside.md"
    outside.write_text((tree / "striker.md").read_text(encoding="utf-8").replace("volley", "SECRET"), "utf-8")
    (tree / "striker.md").unlink()
    (tree / "striker.md").symlink_to(outside)
    mem = Memory(tree)
    with pytest.raises(MemoryStoreError, match="link"):
        mem.list_lines()
    mem.close()


@pytest.mark.parametrize("value", ["1600000000000000000", 1.6e18, b"\x00" * 8])
def test_a_row_signature_of_the_wrong_type_planted_without_a_new_generation_is_indexed_again(
    tmp_path: Path, value: object
) -> None:
    tree = _settled_tree(tmp_path / "tree")
    with sqlite3.connect(_index(tree)) as conn:
        conn.execute("UPDATE memory SET mtime_ns = ? WHERE key = 'rondo'", (value,))
    conn.close()
    _edit(tree)
    _as_without_index(tree, tmp_path)


@pytest.mark.parametrize("kind", ["name with a NUL", "one row fewer"])
def test_a_blob_whose_names_count_other_rows_than_its_numbers_is_not_read_even_with_racy_rows(
    tmp_path: Path, kind: str
) -> None:
    # Found by this attack: such a blob of the current generation with a racy row (written_ns before the files'
    # mtimes) ended every command in "ValueError: zip() argument 2 is shorter than argument 1"; it is not
    # taken for the signature blob now (the rows are compared, and the blob written again).
    tree = _settled_tree(tmp_path / "tree")
    _plant(tree, _blobs(tree)[kind])
    with sqlite3.connect(_index(tree)) as conn:
        conn.execute("UPDATE state SET value = 0 WHERE name = 'written_ns'")
    conn.close()
    _edit(tree)
    _as_without_index(tree, tmp_path)
    assert catalog_stat._split(_state(tree, "sigs")) is not None  # written again whole


def test_a_blob_is_read_only_when_its_names_count_its_rows() -> None:
    assert catalog_stat._split(catalog_stat.pack([], [])) == (b"", b"")
    assert catalog_stat._split(catalog_stat.pack(["a.md"], [1, 2, 3])) == (b"a.md", array("q", [1, 2, 3]).tobytes())
    assert catalog_stat._split(catalog_stat.pack(["a.md", "b.md"], [1, 2, 3])) is None
    assert catalog_stat._split(catalog_stat.pack(["a.md"], [1, 2, 3, 4, 5, 6])) is None
    assert catalog_stat._split(catalog_stat.pack([], [1, 2, 3])) is None


@pytest.mark.parametrize("mtime", [-(2**63) + 1, -1, 0, 2**62, 2**63 - 1])
def test_files_of_extreme_mtimes_edited_by_hand_are_indexed_again(tmp_path: Path, mtime: int) -> None:
    # mtimes at the ends of 64 bits (the file system clamps what it cannot hold): the racy rows' C pass and the
    # blob's comparison see each edit, as with no index.
    tree = _settled_tree(tmp_path / "tree")
    os.utime(tree / "striker.md", ns=(mtime, mtime))
    Memory(tree).close()
    Memory(tree).list()
    _edit(tree)
    os.utime(tree / "rondo.md", ns=(mtime, mtime))
    _as_without_index(tree, tmp_path)


def test_an_edit_keeping_the_signature_beside_an_edit_found_in_the_blob_is_shown_and_built(tmp_path: Path) -> None:
    # The blob's comparison names only rondo.md (its size moved); drills.md, edited keeping inode, size and
    # mtime, is not among them: what is shown, recalled and built is still its bytes now.
    tree = _settled_tree(tmp_path / "tree")
    _plant_in_place(tree / "drills.md", "kick drills on saturday", "lob passes on saturday!")
    _edit(tree)
    mem = Memory(tree)
    shown = mem.read("drills")
    assert shown is not None and shown.body == "lob passes on saturday!"
    files = dict(mem.bundle_files())
    mem.close()
    assert files["drills.md"] == (tree / "drills.md").read_bytes()
    _as_without_index(tree, tmp_path)
