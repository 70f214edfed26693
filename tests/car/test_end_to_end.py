"""Importer -> CAR -> verify -> unpack / ls, for every profile; and CARs written by ipfs-car."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from bundlekit.car.extract import unpack_car
from bundlekit.car.index import CarIndex
from bundlekit.car.reader import read_car
from bundlekit.car.verify import verify_car
from bundlekit.car.writer import CarFileWriter
from bundlekit.ipld.cid import cid_to_str, parse_cid
from bundlekit.ipld.dagpb import HAMT_SHARD, UnixFSData, decode_node
from bundlekit.unixfs.importer import ImportResult, import_path
from bundlekit.unixfs.profiles import PROFILES, Profile, get_profile
from bundlekit.unixfs.reader import UnixFSReader
from tests import reference_tools

DATA = Path(__file__).parent / "data"
IPFS_CAR = reference_tools.ipfs_car()


def _make_tree(root: Path, wide: int = 0) -> dict[str, bytes]:
    files = {
        "README.md": b"# top\n",
        "a/b/c/deep.txt": b"deep " * 50,
        "a/big.bin": bytes(i % 251 for i in range(40_000)),  # many chunks at chunk_size=1024
        "a/empty.txt": b"",
        "names/Zeta.md": b"Z",
        "names/alpha.md": b"a",
        "names/\u00e9t\u00e9.md": "\u00e9t\u00e9".encode(),
        "names/\u65e5\u672c.txt": "\u65e5\u672c".encode(),
    }
    files.update({f"wide/f{i:04d}.txt": str(i).encode() for i in range(wide)})
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "void").mkdir()
    return files


def _pack(src: Path, dest: Path, profile: Profile) -> ImportResult:
    with CarFileWriter(dest) as writer:
        result = import_path(src, writer, profile)
        writer.finish(result.root)
    return result


def _small(name: str) -> Profile:
    # Small chunks and few links give multi-level files; a low HAMT threshold shards `wide/`.
    base = get_profile(name, chunk_size=1024, max_links=4)
    threshold = 8 if base.hamt == "count" else 400
    return dataclasses.replace(base, hamt_threshold=threshold)


@pytest.fixture(scope="module")
def src(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    root = tmp_path_factory.mktemp("src") / "tree"
    return root, _make_tree(root, wide=30)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_pack_verify_unpack_gives_byte_identical_tree(
    src: tuple[Path, dict[str, bytes]], tmp_path: Path, name: str
) -> None:
    tree, files = src
    car = tmp_path / "t.car"
    result = _pack(tree, car, _small(name))
    report = verify_car(car)
    assert report.ok, report.problem
    assert report.roots == [result.root]
    unpack_car(car, tmp_path / "out")
    out = tmp_path / "out"
    got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert got == files
    assert (out / "void").is_dir() == get_profile(name).keep_empty_dirs


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_listing_matches_importer_entries(src: tuple[Path, dict[str, bytes]], tmp_path: Path, name: str) -> None:
    tree, _ = src
    result = _pack(tree, tmp_path / "t.car", _small(name))
    with CarIndex(tmp_path / "t.car") as index:
        listed = sorted(UnixFSReader(index.get).listing(result.root))
    expected = sorted((e.path, e.cid, e.kind, e.size) for e in result.entries)
    assert listed == expected


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_car_holds_each_block_once(src: tuple[Path, dict[str, bytes]], tmp_path: Path, name: str) -> None:
    tree, _ = src
    result = _pack(tree, tmp_path / "t.car", _small(name))
    with open(tmp_path / "t.car", "rb") as f:
        _, blocks = read_car(f)
        cids = [cid for cid, _ in blocks]
    assert len(cids) == len(set(cids)) == result.blocks


def test_importer_hamt_shards_are_read(src: tuple[Path, dict[str, bytes]], tmp_path: Path) -> None:
    tree, files = src
    result = _pack(tree, tmp_path / "t.car", _small("ipfs-car"))
    with CarIndex(tmp_path / "t.car") as index:
        reader = UnixFSReader(index.get)
        wide = reader.resolve(result.root, "wide")
        names = [n for n, _ in reader.list_dir(wide)]
        data = b"".join(reader.iter_file(reader.resolve(result.root, "wide/f0017.txt")))
        _links, payload = decode_node(index.get(wide))
    assert payload is not None and UnixFSData.decode(payload).type == HAMT_SHARD
    assert names == sorted(p.split("/")[1] for p in files if p.startswith("wide/"))
    assert data == b"17"


# -- CARs written by the reference tool ----------------------------------------

REF_ROOT = "bafybeigem63logsdbgih4east3u5baje4mnklceh7enh7jhxyxsdtlfwrm"
REF_FILES = {
    "a.md": b"# hello\n",
    "dup1.txt": b"same",
    "empty.txt": b"",
    "sub/dup2.txt": b"same",
    "sub/\u00dcn\u00ef.txt": "\u00fcn\u00ef".encode(),
}


def test_ipfs_car_output_verifies_with_repeated_block_counted() -> None:
    report = verify_car(DATA / "ipfs-car-3.1.0-small.car")
    assert report.ok, report.problem
    assert [cid_to_str(r) for r in report.roots] == [REF_ROOT]
    assert (report.blocks, report.unique_blocks, report.reachable) == (7, 6, 6)


def test_ipfs_car_output_unpacks_to_its_tree(tmp_path: Path) -> None:
    unpack_car(DATA / "ipfs-car-3.1.0-small.car", tmp_path / "out")
    out = tmp_path / "out"
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == REF_FILES


def test_ipfs_car_tree_packs_to_the_same_root_and_blocks(tmp_path: Path) -> None:
    for rel, data in REF_FILES.items():
        (tmp_path / "tree" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / rel).write_bytes(data)
    (tmp_path / "tree" / "empty").mkdir()
    result = _pack(tmp_path / "tree", tmp_path / "ours.car", get_profile("ipfs-car"))
    assert result.root == parse_cid(REF_ROOT)
    with open(tmp_path / "ours.car", "rb") as ours, open(DATA / "ipfs-car-3.1.0-small.car", "rb") as ref:
        assert set(dict(read_car(ours)[1])) == set(dict(read_car(ref)[1]))


@pytest.mark.skipif(isinstance(IPFS_CAR, str), reason=f"reference ipfs-car unavailable: {IPFS_CAR}")
def test_ipfs_car_unpacks_our_car_and_lists_the_same_cids(
    src: tuple[Path, dict[str, bytes]], tmp_path: Path
) -> None:
    tree, files = src
    car = tmp_path / "t.car"
    result = _pack(tree, car, get_profile("unixfs-v1-2025", chunk_size=1024, max_links=4))
    subprocess.run([*IPFS_CAR, "unpack", str(car), "--output", str(tmp_path / "out")], check=True,
                   capture_output=True, timeout=120)
    out = tmp_path / "out"
    got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert got == files
    roots = subprocess.run([*IPFS_CAR, "roots", str(car)], check=True, capture_output=True, text=True,
                           timeout=120).stdout.split()
    assert roots == [cid_to_str(result.root)]
