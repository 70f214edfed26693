"""Directory encoding: flat sorting, the sharding thresholds, and the HAMT layout."""

from __future__ import annotations

import dataclasses

import mmh3
from hypothesis import given
from hypothesis import strategies as st

from bundlekit.ipld.cid import RAW, make_cid
from bundlekit.ipld.dagpb import HAMT_SHARD, UnixFSData, decode_node
from bundlekit.unixfs.hamt import Child, _hash, encode_flat, encode_hamt, link_serialized_size, needs_shard
from bundlekit.unixfs.importer import ListSink
from bundlekit.unixfs.profiles import get_profile

CID = make_cid(1, RAW, b"x")


def _child(name: str, tsize: int = 1, counted: bool = True) -> Child:
    return Child(name.encode(), CID, tsize, counted)


def test_hash_is_murmur3_h1_big_endian() -> None:
    # Go's murmur3.New64().Sum and @multiformats/murmur3 murmur364 for "a".
    assert _hash(b"a").hex() == "85555565f6597889"
    assert _hash(b"a") == mmh3.hash64(b"a", signed=False)[0].to_bytes(8, "big")


def test_link_serialized_size_matches_kubo_examples() -> None:
    # Cases from kubo's TestProtobufHelpers.
    assert link_serialized_size(255, 34, 0) == 299
    assert link_serialized_size(255, 36, 0) == 301
    assert link_serialized_size(10, 36, 0) == 54
    assert link_serialized_size(255, 36, 34359738367) == 305


def test_flat_links_are_sorted_by_utf8_bytes() -> None:
    sink = ListSink()
    node = encode_flat([_child(n) for n in ["b", "B", "ä", "a", "Z"]], get_profile(), sink)
    links, _ = decode_node(dict(sink.blocks)[node.cid])
    assert [link.name.decode() for link in links] == ["B", "Z", "a", "b", "ä"]


def test_size_threshold_is_strictly_greater_than() -> None:
    profile = get_profile(cid_version=1)
    per_link = link_serialized_size(1, len(CID), 1)
    # 4 bytes of Data field + n links: the largest n that stays at or under the threshold.
    n = (profile.hamt_threshold - 4) // per_link
    children = [Child(b"n", CID, 1)] * n
    assert not needs_shard(children, profile)
    children += [Child(b"n", CID, 1)]
    assert needs_shard(children, profile)


def test_non_empty_subdirectories_do_not_count_toward_size() -> None:
    profile = get_profile("kubo-cidv1")
    big = [Child(b"d" * 300, CID, 1, counted=False)] * 1000
    assert not needs_shard(big, profile)
    assert needs_shard([c._replace(counted=True) for c in big], profile)


def test_count_threshold_counts_every_entry() -> None:
    profile = get_profile("ipfs-car")
    assert not needs_shard([_child("a", counted=False)] * 1000, profile)
    assert needs_shard([_child("a", counted=False)] * 1001, profile)


def test_hamt_root_has_fanout_hash_type_and_minimal_bitfield() -> None:
    sink = ListSink()
    node = encode_hamt([_child("a")], get_profile(), sink)
    links, data = decode_node(dict(sink.blocks)[node.cid])
    assert data is not None
    slot = _hash(b"a")[0]
    expected_bits = (1 << slot).to_bytes((slot // 8) + 1, "big")
    assert UnixFSData.decode(data) == UnixFSData(HAMT_SHARD, data=expected_bits, hash_type=0x22, fanout=256)
    assert [link.name for link in links] == [b"%02Xa" % slot]


def test_colliding_slots_make_a_sub_shard_named_by_hex_alone() -> None:
    names = [f"f{i}".encode() for i in range(600)]
    sink = ListSink()
    node = encode_hamt([Child(n, CID, 1) for n in names], get_profile(), sink)
    links, _ = decode_node(dict(sink.blocks)[node.cid])
    sub = [link for link in links if len(link.name) == 2]
    assert sub, "600 names in 256 slots must collide"
    inner, _ = decode_node(dict(sink.blocks)[sub[0].cid])
    first_bytes = {_hash(link.name[2:])[0] for link in inner}
    assert first_bytes == {int(sub[0].name, 16)}
    assert node.tsize == len(dict(sink.blocks)[node.cid]) + sum(link.tsize for link in links)


@given(
    st.lists(
        st.tuples(st.integers(min_value=1, max_value=300), st.integers(min_value=0, max_value=2**40), st.booleans()),
        max_size=60,
    ),
    st.integers(min_value=0, max_value=20000),
)
def test_size_rule_equals_the_exact_block_size_rule(
    specs: list[tuple[int, int, bool]], threshold: int
) -> None:
    profile = dataclasses.replace(get_profile(), hamt_threshold=threshold)
    children = [Child(b"n" * n, CID, t, counted) for n, t, counted in specs]
    exact = 4 + sum(link_serialized_size(len(c.name), len(c.cid), c.tsize) for c in children if c.counted)
    assert needs_shard(children, profile) == (bool(children) and exact > threshold)


@given(st.lists(st.tuples(st.binary(max_size=300), st.integers(min_value=0, max_value=2**50)), max_size=20))
def test_size_measure_is_the_flat_block_length(entries: list[tuple[bytes, int]]) -> None:
    children = [Child(name, CID, tsize) for name, tsize in entries]
    sink = ListSink()
    node = encode_flat(children, get_profile(), sink)
    block = dict(sink.blocks)[node.cid]
    assert len(block) == 4 + sum(link_serialized_size(len(c.name), len(c.cid), c.tsize) for c in children)
