"""Safe, atomic unpacking: byte-identical trees, hostile names refused, nothing half-written."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from bundlekit.car.extract import unpack_car
from bundlekit.errors import (
    BlockMismatch,
    BundlekitError,
    CARError,
    DAGLimitExceeded,
    MissingBlock,
    UnsafePathError,
    UsageError,
)
from bundlekit.ipld.cid import RAW, make_cid
from bundlekit.ipld.dagpb import SYMLINK, UnixFSData
from bundlekit.ipld.walk import WalkLimits
from bundlekit.unixfs.unpack import UnpackOptions, unpack

from .conftest import Blocks

Tree = tuple[Blocks, bytes, dict[str, bytes]]


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root``: file -> bytes, directory -> None."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


def test_unpack_writes_byte_identical_tree(sample_tree: Tree, tmp_path: Path) -> None:
    blocks, root, files = sample_tree
    result = unpack(blocks.get, root, tmp_path / "out")
    got = _tree(tmp_path / "out")
    assert {p: d for p, d in got.items() if d is not None} == files
    assert {p for p, d in got.items() if d is None} == {"sub", "sub/deeper", "void"}
    assert (result.files, result.directories, result.bytes) == (5, 4, sum(map(len, files.values())))


def test_unpack_car_round_trips(sample_tree: Tree, write_car: Callable[[bytes], Path], tmp_path: Path) -> None:
    blocks, root, files = sample_tree
    unpack_car(write_car(blocks.car([root])), tmp_path / "out")
    assert {p: d for p, d in _tree(tmp_path / "out").items() if d is not None} == files


def test_unpack_of_a_file_root_writes_one_file(blocks: Blocks, tmp_path: Path) -> None:
    content = bytes(range(200))
    root = blocks.file(content, chunk=16)
    unpack(blocks.get, root, tmp_path / "f.bin")
    assert (tmp_path / "f.bin").read_bytes() == content
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]


def test_unpack_into_an_empty_directory_is_allowed(sample_tree: Tree, tmp_path: Path) -> None:
    blocks, root, files = sample_tree
    (tmp_path / "out").mkdir()
    unpack(blocks.get, root, tmp_path / "out")
    assert (tmp_path / "out" / "a.md").read_bytes() == files["a.md"]


def test_unpack_refuses_a_non_empty_directory(sample_tree: Tree, tmp_path: Path) -> None:
    blocks, root, _ = sample_tree
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep").write_text("mine")
    with pytest.raises(UsageError, match="--force"):
        unpack(blocks.get, root, tmp_path / "out")
    assert _tree(tmp_path / "out") == {"keep": b"mine"}


def test_unpack_with_force_replaces_a_non_empty_directory(sample_tree: Tree, tmp_path: Path) -> None:
    blocks, root, files = sample_tree
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old").write_text("old")
    unpack(blocks.get, root, tmp_path / "out", options=UnpackOptions(force=True))
    assert {p: d for p, d in _tree(tmp_path / "out").items() if d is not None} == files
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def _assert_nothing_written(tmp_path: Path) -> None:
    assert list(tmp_path.iterdir()) == []


def test_dot_dot_link_name_is_refused_and_nothing_written(blocks: Blocks, tmp_path: Path) -> None:
    evil = blocks.directory([(b"..", blocks.directory({"escaped.txt": blocks.raw(b"pwned")}))])
    root = blocks.directory({"a.txt": blocks.raw(b"fine"), "z": evil})
    out = tmp_path / "box"
    with pytest.raises(UnsafePathError, match=r"'\.\.' in directory 'z'"):
        unpack(blocks.get, root, out / "out")
    assert not (out / "escaped.txt").exists()
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("name", [b"", b".", b"a/../../x", b"..\\x", b"nul\x00l"])
def test_other_unsafe_names_are_refused(blocks: Blocks, tmp_path: Path, name: bytes) -> None:
    root = blocks.directory([(name, blocks.raw(b"x"))])
    with pytest.raises(UnsafePathError):
        unpack(blocks.get, root, tmp_path / "out")
    _assert_nothing_written(tmp_path)


def test_duplicate_names_are_refused(blocks: Blocks, tmp_path: Path) -> None:
    root = blocks.directory([(b"x", blocks.raw(b"1")), (b"x", blocks.raw(b"2"))])
    with pytest.raises(UnsafePathError, match="duplicate"):
        unpack(blocks.get, root, tmp_path / "out")
    _assert_nothing_written(tmp_path)


def test_symlinks_are_refused(blocks: Blocks, tmp_path: Path) -> None:
    root = blocks.directory({"ln": blocks.node([], UnixFSData(SYMLINK, data=b"/etc/passwd"))})
    with pytest.raises(UnsafePathError, match="symlink"):
        unpack(blocks.get, root, tmp_path / "out")
    _assert_nothing_written(tmp_path)


def test_flipped_byte_leaves_nothing_behind(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, files = sample_tree
    last = blocks.file(files["sub/deeper/c.txt"])
    blocks.blocks[last] = b"C"
    car = write_car(blocks.car([root]))
    with pytest.raises(BlockMismatch):
        unpack_car(car, car.parent / "out")
    assert [p.name for p in car.parent.iterdir()] == [car.name]


def test_missing_block_leaves_nothing_behind(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, files = sample_tree
    car = write_car(blocks.car([root], skip=frozenset({blocks.file(files["sub/b.txt"], raw_leaves=False)})))
    with pytest.raises(MissingBlock):
        unpack_car(car, car.parent / "out")
    assert [p.name for p in car.parent.iterdir()] == [car.name]


def test_truncated_car_is_refused(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, _ = sample_tree
    car = write_car(blocks.car([root])[:-5])
    with pytest.raises(CARError):
        unpack_car(car, car.parent / "out")
    assert [p.name for p in car.parent.iterdir()] == [car.name]


def test_block_under_wrong_cid_is_refused(blocks: Blocks, write_car: Callable[[bytes], Path]) -> None:
    leaf = blocks.raw(b"honest")
    root = blocks.directory({"f": leaf})
    blocks.blocks[leaf] = b"forged"
    car = write_car(blocks.car([root]))
    with pytest.raises(BlockMismatch):
        unpack_car(car, car.parent / "out")


def test_over_deep_dag_is_refused(blocks: Blocks, tmp_path: Path) -> None:
    node = blocks.raw(b"x")
    for _ in range(30):
        node = blocks.directory({"d": node})
    with pytest.raises(DAGLimitExceeded):
        unpack(blocks.get, node, tmp_path / "out", options=UnpackOptions(limits=WalkLimits(max_depth=10)))
    _assert_nothing_written(tmp_path)


def test_link_cycle_is_refused(tmp_path: Path) -> None:
    from bundlekit.ipld.cid import DAG_PB
    from bundlekit.ipld.dagpb import DIRECTORY, PBLink, encode_node

    a, b = make_cid(1, DAG_PB, b"a"), make_cid(1, DAG_PB, b"b")
    store = {
        a: encode_node([PBLink(b, b"b", 1)], UnixFSData(DIRECTORY).encode()),
        b: encode_node([PBLink(a, b"a", 1)], UnixFSData(DIRECTORY).encode()),
    }
    # Verifying: the forged CIDs are caught at once.
    with pytest.raises(BlockMismatch):
        unpack(store.__getitem__, a, tmp_path / "out")
    # Not verifying (a getter that lies): the depth limit still ends the cycle.
    deep = UnpackOptions(limits=WalkLimits(max_depth=50))
    with pytest.raises(DAGLimitExceeded):
        unpack(store.__getitem__, a, tmp_path / "out", verify=False, options=deep)
    _assert_nothing_written(tmp_path)


def test_max_bytes_stops_a_content_bomb(blocks: Blocks, tmp_path: Path) -> None:
    root = blocks.directory({f"f{i}": blocks.raw(b"x" * 100) for i in range(10)})
    with pytest.raises(DAGLimitExceeded, match="more than 500 bytes"):
        unpack(blocks.get, root, tmp_path / "out", options=UnpackOptions(limits=WalkLimits(max_bytes=500)))
    _assert_nothing_written(tmp_path)


def test_car_with_several_roots_needs_a_choice(blocks: Blocks, write_car: Callable[[bytes], Path]) -> None:
    one, two = blocks.directory({"a": blocks.raw(b"1")}), blocks.directory({"b": blocks.raw(b"2")})
    car = write_car(blocks.car([one, two]))
    with pytest.raises(UsageError, match="2 roots"):
        unpack_car(car, car.parent / "out")
    unpack_car(car, car.parent / "out", root=two)
    assert (car.parent / "out" / "b").read_bytes() == b"2"


def test_unpack_car_refuses_a_root_not_in_the_car(blocks: Blocks, write_car: Callable[[bytes], Path]) -> None:
    root = blocks.directory({"a": blocks.raw(b"1")})
    car = write_car(blocks.car([root]))
    with pytest.raises(UsageError, match="not a root"):
        unpack_car(car, car.parent / "out", root=make_cid(1, RAW, b"?"))


def test_force_replaces_an_existing_file_with_a_directory(sample_tree: Tree, tmp_path: Path) -> None:
    blocks, root, files = sample_tree
    (tmp_path / "out").write_text("a file")
    with pytest.raises(UsageError, match="already exists"):
        unpack(blocks.get, root, tmp_path / "out")
    unpack(blocks.get, root, tmp_path / "out", options=UnpackOptions(force=True))
    assert (tmp_path / "out" / "a.md").read_bytes() == files["a.md"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_file_root_replaces_an_empty_directory(blocks: Blocks, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    unpack(blocks.get, blocks.raw(b"content"), tmp_path / "out")
    assert (tmp_path / "out").read_bytes() == b"content"


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_unpacked_files_follow_the_umask(blocks: Blocks, tmp_path: Path, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        unpack(blocks.get, blocks.raw(b"content"), tmp_path / "f")
    finally:
        os.umask(old)
    assert (tmp_path / "f").stat().st_mode & 0o777 == mode


def test_an_unpacked_tree_replacing_an_empty_directory_keeps_its_mode(blocks: Blocks, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out").chmod(0o750)
    unpack(blocks.get, blocks.directory({"a.md": blocks.raw(b"a")}), tmp_path / "out")
    assert (tmp_path / "out" / "a.md").read_bytes() == b"a"
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o750


def test_files_and_directories_inside_a_tree_follow_the_umask(blocks: Blocks, tmp_path: Path) -> None:
    root = blocks.directory({"sub": blocks.directory({"a.md": blocks.raw(b"a")})})
    old = os.umask(0o002)
    try:
        unpack(blocks.get, root, tmp_path / "out")
    finally:
        os.umask(old)
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o775
    assert (tmp_path / "out" / "sub").stat().st_mode & 0o777 == 0o775
    assert (tmp_path / "out" / "sub" / "a.md").stat().st_mode & 0o777 == 0o664


def test_unpack_under_a_file_names_the_problem(tmp_path: Path) -> None:
    data = b"hello"
    cid = make_cid(1, RAW, data)
    blocks = {cid: data}
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    with pytest.raises(BundlekitError, match="a file is in the way where a directory is needed"):
        unpack(blocks.__getitem__, cid, blocker / "sub" / "out")
    assert sorted(os.listdir(tmp_path)) == ["afile"]


# --force never replaces the current directory, its parents, or home.

DATA = b"hello"
CID = make_cid(1, RAW, DATA)


def _get(cid: bytes) -> bytes:
    assert cid == CID
    return DATA


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current directory for the test, two levels below tmp_path, holding a file to keep."""
    work = tmp_path / "work" / "inner"
    work.mkdir(parents=True)
    (work / "keep.txt").write_text("precious")
    monkeypatch.chdir(work)
    return work


def test_force_refuses_the_current_directory(workdir: Path) -> None:
    with pytest.raises(UsageError, match="refusing to replace"):
        unpack(_get, CID, ".", options=UnpackOptions(force=True))
    assert (workdir / "keep.txt").read_text() == "precious"


def test_force_refuses_a_parent_of_the_current_directory(workdir: Path) -> None:
    with pytest.raises(UsageError, match="refusing to replace"):
        unpack(_get, CID, workdir.parent, options=UnpackOptions(force=True))
    assert (workdir / "keep.txt").exists()


def test_force_refuses_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "keep.txt").write_text("precious")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="refusing to replace"):
        unpack(_get, CID, home, options=UnpackOptions(force=True))
    assert (home / "keep.txt").exists()


def test_force_still_replaces_an_ordinary_occupied_output(workdir: Path) -> None:
    target = workdir / "out"
    target.mkdir()
    (target / "old.txt").write_text("old")
    unpack(_get, CID, target, options=UnpackOptions(force=True))
    assert target.read_bytes() == DATA
