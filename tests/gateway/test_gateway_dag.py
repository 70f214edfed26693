"""Path resolution, scopes and the directory cache, without HTTP."""

from __future__ import annotations

import pytest

from bundlekit.errors import PathNotFound, UnsafePathError
from bundlekit.gateway.dag import DirCache, resolve_path, scope_blocks
from bundlekit.gateway.respond import _parse_cid_text
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str, make_cid


class CountingGetter:
    def __init__(self, blocks: dict[bytes, bytes]) -> None:
        self.blocks = blocks
        self.calls = 0

    def __call__(self, cid: bytes) -> bytes:
        self.calls += 1
        return self.blocks[cid]


def test_resolve_path_lists_the_resolved_cids_and_path_blocks(sample_dag) -> None:  # type: ignore[no-untyped-def]
    resolved = resolve_path(sample_dag.blocks.__getitem__, sample_dag.root, ["memory", "a.md"])
    memory = sample_dag.entries["memory"][0]
    assert resolved.cids == [sample_dag.root, memory, sample_dag.entries["memory/a.md"][0]]
    assert [cid for cid, _ in resolved.path_blocks] == [sample_dag.root, memory]


def test_resolve_path_of_a_missing_name_raises_path_not_found(sample_dag) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PathNotFound):
        resolve_path(sample_dag.blocks.__getitem__, sample_dag.root, ["memory", "zzz.md"])


def test_resolve_path_through_a_file_raises_path_not_found(sample_dag) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PathNotFound):
        resolve_path(sample_dag.blocks.__getitem__, sample_dag.root, ["manifest.json", "x"])


@pytest.mark.parametrize("segment", ["..", ".", "", "a/b"])
def test_resolve_path_refuses_non_plain_segments(sample_dag, segment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UnsafePathError):
        resolve_path(sample_dag.blocks.__getitem__, sample_dag.root, [segment])


def test_dir_cache_reads_each_directory_once(sample_dag) -> None:  # type: ignore[no-untyped-def]
    getter = CountingGetter(sample_dag.blocks)
    cache = DirCache()
    resolve_path(getter, sample_dag.root, ["memory", "a.md"], cache)
    first = getter.calls
    resolve_path(getter, sample_dag.root, ["memory", "MEMORY.md"], cache)
    assert getter.calls == first + 1  # only the root block, always read to prove it exists


def test_dir_cache_stays_within_its_byte_budget(sample_dag) -> None:  # type: ignore[no-untyped-def]
    cache = DirCache(max_bytes=len(sample_dag.blocks[sample_dag.root]) + 400)
    cache.listing(sample_dag.blocks.__getitem__, sample_dag.root)
    cache.listing(sample_dag.blocks.__getitem__, sample_dag.entries["memory"][0])
    assert cache._bytes <= cache.max_bytes


def test_scope_block_of_a_raw_leaf_is_that_block() -> None:
    cid = make_cid(1, RAW, b"leaf")
    assert list(scope_blocks({cid: b"leaf"}.__getitem__, cid, "entity")) == [(cid, b"leaf")]


def test_fast_cid_parsing_agrees_with_multiformats() -> None:
    from bundlekit.ipld.cid import parse_cid

    for cid in (
        make_cid(1, RAW, b"x"),
        make_cid(1, DAG_PB, b"y"),
        make_cid(0, DAG_PB, b"z"),
        bytes([1, 0x55, 0, 0]),
    ):
        text = cid_to_str(cid)
        assert _parse_cid_text(text) == parse_cid(text) == cid
