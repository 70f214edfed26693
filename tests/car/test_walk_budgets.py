"""Budgets that count every visit of a reused block (issue 12, item 1; specs/car.md "Limits").

The DAGs here are honest blocks that link one block many times: each is a
handful of blocks claiming far more visits, entries or bytes.
"""

from __future__ import annotations

import re
import shutil
from collections import namedtuple
from pathlib import Path

import pytest

from bundlekit.car.verify import verify_car
from bundlekit.errors import BundlekitError, CodecError, DAGLimitExceeded, UnsafePathError
from bundlekit.ipld.dagpb import DIRECTORY, FILE, HAMT_SHARD, PBLink, UnixFSData
from bundlekit.ipld.walk import (
    CANCEL_POLL,
    MAX_BYTES,
    MAX_LINKS,
    WalkBudget,
    WalkCancelled,
    WalkLimits,
    expand_dag,
    walk_dag,
)
from bundlekit.unixfs.reader import UnixFSReader
from bundlekit.unixfs.unpack import UnpackOptions, unpack

from .conftest import Blocks


def _doubling_file(blocks: Blocks, levels: int, leaf: bytes = b"x" * 8) -> bytes:
    """A file whose every node links the one below twice: ``len(leaf) * 2**levels`` bytes."""
    node, size = blocks.raw(leaf), len(leaf)
    for _ in range(levels):
        node = blocks.node([PBLink(node, b"", size)] * 2, UnixFSData(FILE, filesize=2 * size, blocksizes=[size] * 2))
        size *= 2
    return node


def _doubling_dir(blocks: Blocks, levels: int) -> bytes:
    """A directory whose every level holds ``a`` and ``b``, both the level below: ``2**levels`` files."""
    node = blocks.raw(b"leaf")
    for _ in range(levels):
        node = blocks.node([PBLink(node, b"a", 4), PBLink(node, b"b", 4)], UnixFSData(DIRECTORY))
    return node


def test_expand_dag_counts_every_visit_from_the_distinct_blocks(blocks: Blocks) -> None:
    root = _doubling_dir(blocks, 40)
    expansion = expand_dag(root, walk_dag(root, blocks.get))
    assert (expansion.blocks, expansion.visits, expansion.reuses) == (41, 2**41 - 1, True)


def test_expand_dag_of_a_tree_without_reuse(blocks: Blocks) -> None:
    root = blocks.directory({"a": blocks.raw(b"1"), "b": blocks.raw(b"2")})
    expansion = expand_dag(root, walk_dag(root, blocks.get))
    assert (expansion.blocks, expansion.visits, expansion.reuses) == (3, 3, False)


def test_walk_dag_charges_its_budget_one_visit_per_block(blocks: Blocks) -> None:
    root = _doubling_dir(blocks, 5)
    budget = WalkBudget()
    assert len(list(walk_dag(root, blocks.get, budget=budget))) == 6
    assert budget.visits == 6


def test_reading_a_file_counts_each_visit_of_a_reused_block(blocks: Blocks) -> None:
    root = _doubling_file(blocks, 12)
    reader = UnixFSReader(blocks.get, budget=WalkBudget(WalkLimits(max_visits=1000)))
    with pytest.raises(DAGLimitExceeded, match="more than 1000 block visits"):
        for _chunk in reader.iter_file(root):
            pass


def test_a_declared_size_over_max_bytes_is_refused_before_the_first_byte(blocks: Blocks) -> None:
    root = _doubling_file(blocks, 40)
    chunks = UnixFSReader(blocks.get).iter_file(root)
    with pytest.raises(DAGLimitExceeded, match=f"more than {MAX_BYTES} bytes of content"):
        next(chunks)


def test_a_cancelled_budget_stops_the_walk(blocks: Blocks) -> None:
    root = _doubling_file(blocks, 12)
    reader = UnixFSReader(blocks.get, budget=WalkBudget(cancelled=lambda: True))
    with pytest.raises(WalkCancelled):
        for _chunk in reader.iter_file(root):
            pass
    assert reader.budget.visits == CANCEL_POLL


def test_claim_measures_a_reused_directory_without_expanding_it(blocks: Blocks) -> None:
    claim = UnixFSReader(blocks.get).claim(_doubling_dir(blocks, 30))
    assert (claim.entries, claim.bytes, claim.blocks) == (2**31 - 1, 4 * 2**30, 31)


def test_walk_refuses_a_reused_directory_by_its_claim(blocks: Blocks) -> None:
    reader = UnixFSReader(blocks.get)
    walked = reader.walk(_doubling_dir(blocks, 30))
    with pytest.raises(DAGLimitExceeded, match="it reuses directories and claims 2147483647"):
        for _entry in walked:
            pass
    assert reader.budget.entries < 100  # refused at the first repeated directory


def test_walk_lists_a_small_reused_directory(blocks: Blocks) -> None:
    paths = [p for p, _c, _k, _s in UnixFSReader(blocks.get).walk(_doubling_dir(blocks, 2))]
    assert paths == ["", "a", "a/a", "a/b", "b", "b/a", "b/b"]


def test_a_hamt_linking_one_shard_twice_is_refused(blocks: Blocks) -> None:
    leaf = blocks.raw(b"x")
    shard = UnixFSData(HAMT_SHARD, data=b"\x03", hash_type=0x22, fanout=256)
    sub = blocks.node([PBLink(leaf, b"00a", 1), PBLink(leaf, b"01b", 1)], shard)
    root = blocks.node([PBLink(sub, b"00", 0), PBLink(sub, b"01", 0)], shard)
    with pytest.raises(CodecError, match="more than once"):
        UnixFSReader(blocks.get).list_dir(root)


def test_unpack_refuses_a_claim_past_max_entries_before_writing(blocks: Blocks, tmp_path: Path) -> None:
    with pytest.raises(DAGLimitExceeded, match="claims 2047 entries, more than 1000"):
        limits = WalkLimits(max_entries=1000)
        unpack(blocks.get, _doubling_dir(blocks, 10), tmp_path / "out", options=UnpackOptions(limits=limits))
    assert list(tmp_path.iterdir()) == []


def test_unpack_caps_content_at_64_gib_by_default(blocks: Blocks, tmp_path: Path) -> None:
    with pytest.raises(DAGLimitExceeded, match="more than 68719476736 bytes"):
        unpack(blocks.get, _doubling_file(blocks, 40), tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_unpack_refuses_a_declared_size_beyond_the_free_space(
    blocks: Blocks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: usage(10**6, 10**6 - 100, 100))
    root = blocks.directory({"a": blocks.raw(b"x" * 60), "b": blocks.raw(b"y" * 60)})
    with pytest.raises(BundlekitError, match="declares 120 bytes of content but only 100 bytes are free"):
        unpack(blocks.get, root, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_verify_strict_reports_reuse_and_refuses_a_claim_past_the_limits(
    blocks: Blocks, write_car: object
) -> None:
    root = _doubling_dir(blocks, 10)
    car = write_car(blocks.car([root]))  # type: ignore[operator]
    report = verify_car(car, strict=True)
    assert report.ok
    [found] = report.expansions
    assert (found.blocks, found.visits, found.entries, found.bytes, found.reuses) == (11, 2047, 2047, 4096, True)
    refused = verify_car(car, strict=True, limits=WalkLimits(max_entries=1000))
    assert isinstance(refused.problem, DAGLimitExceeded)
    assert "reuses blocks" in str(refused.problem)


def test_plain_verify_does_not_measure(blocks: Blocks, write_car: object) -> None:
    car = write_car(blocks.car([_doubling_dir(blocks, 10)]))  # type: ignore[operator]
    assert verify_car(car).expansions == []


def test_the_spec_lists_every_budget_default_as_the_code_has_it() -> None:
    spec = (Path(__file__).parents[2] / "specs" / "car.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", spec, flags=re.MULTILINE))
    limits = WalkLimits()
    assert rows["max_visits"].strip() == f"{limits.max_visits:,}"
    assert rows["max_entries"].strip() == f"{limits.max_entries:,}"
    assert limits.max_bytes is not None
    assert rows["max_bytes"].strip() == f"{limits.max_bytes // 1024**3} GiB"
    assert rows["max_depth"].strip() == str(limits.max_depth)
    assert rows["max_links"].strip() == f"{MAX_LINKS:,}"
    assert f"`CANCEL_POLL = {CANCEL_POLL}`" in spec


def test_verify_strict_reports_a_hostile_name_as_the_problem(blocks: Blocks, write_car: object) -> None:
    root = blocks.node([PBLink(blocks.raw(b"x"), b"../evil", 1)], UnixFSData(DIRECTORY))
    car = write_car(blocks.car([root]))  # type: ignore[operator]
    report = verify_car(car, strict=True)
    assert isinstance(report.problem, UnsafePathError)
    assert "../evil" in str(report.problem)
