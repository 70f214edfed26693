"""walk_dag limits and completeness; verify_car reports the first problem."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bundlekit.car.verify import verify_car
from bundlekit.errors import BlockMismatch, CARError, CodecError, DAGLimitExceeded, MissingBlock
from bundlekit.ipld.cid import DAG_PB, cid_to_str, make_cid
from bundlekit.ipld.dagpb import DIRECTORY, FILE, PBLink, UnixFSData, encode_node
from bundlekit.ipld.walk import walk_dag

from .conftest import Blocks

Tree = tuple[Blocks, bytes, dict[str, bytes]]


def test_walk_yields_every_reachable_block_once_parents_first(sample_tree: Tree) -> None:
    blocks, root, _ = sample_tree
    order = [cid for cid, _ in walk_dag(root, blocks.get)]
    assert order[0] == root
    assert sorted(order) == sorted(blocks.blocks)
    assert len(order) == len(set(order))


def test_walk_visits_a_shared_subtree_once(blocks: Blocks) -> None:
    leaf = blocks.file(b"same")
    # A "diamond" chain: each level links twice to the next; 40 levels would be 2**40 paths.
    node = leaf
    for _ in range(40):
        node = blocks.directory({"l": node, "r": node})
    assert len(list(walk_dag(node, blocks.get))) == 41


def test_walk_reports_missing_block_with_cid_and_path(sample_tree: Tree) -> None:
    blocks, root, files = sample_tree
    c_cid = blocks.file(files["sub/deeper/c.txt"])
    del blocks.blocks[c_cid]
    with pytest.raises(MissingBlock) as info:
        list(walk_dag(root, blocks.get))
    assert cid_to_str(c_cid) in str(info.value)
    assert "sub/deeper/c.txt" in str(info.value)


def test_walk_reports_missing_root(blocks: Blocks) -> None:
    with pytest.raises(MissingBlock, match=cid_to_str(make_cid(1, DAG_PB, b"x"))):
        list(walk_dag(make_cid(1, DAG_PB, b"x"), blocks.get))


def test_walk_rejects_flipped_byte(sample_tree: Tree) -> None:
    blocks, root, files = sample_tree
    cid = blocks.file(files["a.md"])
    blocks.blocks[cid] = b"#" + blocks.blocks[cid][1:] if blocks.blocks[cid][0] != ord("#") else b"!" + blocks.blocks[cid][1:]
    with pytest.raises(BlockMismatch, match=cid_to_str(cid)):
        list(walk_dag(root, blocks.get))


def test_walk_rejects_over_deep_chain(blocks: Blocks) -> None:
    node = blocks.file(b"bottom")
    for _ in range(20):
        node = blocks.directory({"d": node})
    with pytest.raises(DAGLimitExceeded, match="deeper than 10"):
        list(walk_dag(node, blocks.get, max_depth=10))


def test_walk_accepts_chain_exactly_at_the_depth_limit(blocks: Blocks) -> None:
    node = blocks.raw(b"bottom")
    for _ in range(10):
        node = blocks.directory({"d": node})
    assert len(list(walk_dag(node, blocks.get, max_depth=10))) == 11


def test_walk_of_very_deep_chain_does_not_recurse(blocks: Blocks) -> None:
    node = blocks.raw(b"bottom")
    for _ in range(3000):  # far past Python's recursion limit
        node = blocks.directory({"d": node})
    assert len(list(walk_dag(node, blocks.get, max_depth=5000))) == 3001


def test_walk_rejects_too_many_links(blocks: Blocks) -> None:
    root = blocks.directory({f"f{i}": blocks.file(str(i).encode()) for i in range(20)})
    with pytest.raises(DAGLimitExceeded, match="more than 10 links"):
        list(walk_dag(root, blocks.get, max_links=10))


def _cycle() -> tuple[dict[bytes, bytes], bytes]:
    """Two dag-pb blocks that link to each other, stored under made-up CIDs (hashes cannot cycle)."""
    a = make_cid(1, DAG_PB, b"a")
    b = make_cid(1, DAG_PB, b"b")
    store = {
        a: encode_node([PBLink(b, b"to-b", 1)], UnixFSData(DIRECTORY).encode()),
        b: encode_node([PBLink(a, b"to-a", 1)], UnixFSData(DIRECTORY).encode()),
    }
    return store, a


def test_walk_detects_a_link_cycle_from_an_unverified_getter() -> None:
    store, root = _cycle()
    with pytest.raises(DAGLimitExceeded, match="cycle"):
        list(walk_dag(root, store.__getitem__, verify=False))


def test_walk_rejects_a_link_cycle_when_verifying() -> None:
    store, root = _cycle()
    with pytest.raises(BlockMismatch):
        list(walk_dag(root, store.__getitem__))


def test_walk_rejects_malformed_dag_pb(blocks: Blocks) -> None:
    bad = b"\xff\xff"
    cid = make_cid(1, DAG_PB, bad)
    blocks.put(cid, bad)
    with pytest.raises(CodecError, match=cid_to_str(cid)):
        list(walk_dag(cid, blocks.get))


def test_verify_car_reports_counts_of_a_good_car(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, _ = sample_tree
    report = verify_car(write_car(blocks.car([root])))
    assert report.ok
    assert report.roots == [root]
    assert report.blocks == report.unique_blocks == report.reachable == len(blocks.blocks)
    assert report.bytes == sum(len(d) for d in blocks.blocks.values())


def test_verify_car_reports_flipped_byte(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, _ = sample_tree
    data = bytearray(blocks.car([root]))
    data[-1] ^= 0x40
    report = verify_car(write_car(bytes(data)))
    assert isinstance(report.problem, BlockMismatch)


def test_verify_car_reports_missing_block(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, files = sample_tree
    missing = blocks.file(files["sub/b.txt"], raw_leaves=False)
    report = verify_car(write_car(blocks.car([root], skip=frozenset({missing}))))
    assert isinstance(report.problem, MissingBlock)
    assert cid_to_str(missing) in str(report.problem)


def test_verify_car_reports_truncation(sample_tree: Tree, write_car: Callable[[bytes], Path]) -> None:
    blocks, root, _ = sample_tree
    report = verify_car(write_car(blocks.car([root])[:-7]))
    assert isinstance(report.problem, CARError)
    assert "truncated" in str(report.problem)


def test_verify_car_reports_block_under_wrong_cid(blocks: Blocks, write_car: Callable[[bytes], Path]) -> None:
    good = blocks.file(b"good")
    root = blocks.directory({"f": good})
    blocks.blocks[good] = b"evil"
    report = verify_car(write_car(blocks.car([root])))
    assert isinstance(report.problem, BlockMismatch)
    assert cid_to_str(good) in str(report.problem)


def test_verify_car_reports_over_deep_dag(blocks: Blocks, write_car: Callable[[bytes], Path]) -> None:
    node = blocks.file(b"x")
    for _ in range(12):
        node = blocks.directory({"d": node})
    report = verify_car(write_car(blocks.car([node])), max_depth=8)
    assert isinstance(report.problem, DAGLimitExceeded)


def test_verify_car_rejects_a_car_without_roots(blocks: Blocks, write_car: Callable[[bytes], Path]) -> None:
    blocks.file(b"orphan")
    report = verify_car(write_car(blocks.car([])))
    assert isinstance(report.problem, CARError)
    assert "no roots" in str(report.problem)


def test_verify_car_checks_blocks_outside_the_dag_too(blocks: Blocks, write_car: Callable[[bytes], Path]) -> None:
    root = blocks.directory({"f": blocks.file(b"fine")})
    stray = blocks.raw(b"stray")
    blocks.blocks[stray] = b"tampered"
    report = verify_car(write_car(blocks.car([root])))
    assert isinstance(report.problem, BlockMismatch)


def test_verify_car_names_a_missing_file(tmp_path: Path) -> None:
    report = verify_car(tmp_path / "nope.car")
    assert isinstance(report.problem, CARError)
    assert "nope.car" in str(report.problem)


def test_file_node_claiming_sizes_is_walked_by_links_only(blocks: Blocks) -> None:
    # walk_dag checks structure, not UnixFS sizes; UnixFSReader does that.
    leaf = blocks.raw(b"abc")
    root = blocks.node([PBLink(leaf, b"", 3)], UnixFSData(FILE, filesize=999, blocksizes=[999]))
    assert len(list(walk_dag(root, blocks.get))) == 2


def _outcome(fn: Callable[[], None]) -> str:
    try:
        fn()
    except Exception as exc:  # the class is the outcome being compared
        return type(exc).__name__
    return "ok"


def test_check_block_fast_path_agrees_with_verify_block() -> None:
    from bundlekit.ipld.block import check_block
    from bundlekit.ipld.cid import RAW, verify_block

    data = b"payload"
    cids = [
        make_cid(0, DAG_PB, data),
        make_cid(1, DAG_PB, data),
        make_cid(1, RAW, data),
        make_cid(1, RAW, b"other"),
        make_cid(0, DAG_PB, b"other"),
        b"\x01\x71\x12\x20" + bytes(32),  # dag-cbor
        b"\x01\x55\xa0\xe4\x02\x20" + bytes(32),  # blake2b-256
        b"\x01\x55\x12\x10" + bytes(16),  # short sha2-256 digest
    ]
    for cid in cids:
        for size in (None, 3, 100):
            assert _outcome(lambda: check_block(cid, data, size)) == _outcome(
                lambda: verify_block(cid, data, max_size=size)
            ), (cid.hex(), size)
