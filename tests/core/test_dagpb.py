"""dag-pb and UnixFS Data: canonical bytes, round trips, strict decoding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bundlekit.errors import CodecError
from bundlekit.ipld.cid import DAG_PB, RAW, make_cid
from bundlekit.ipld.dagpb import DIRECTORY, FILE, HAMT_SHARD, PBLink, UnixFSData, decode_node, encode_node

cids = st.builds(make_cid, st.sampled_from([1]), st.sampled_from([RAW, DAG_PB]), st.binary(max_size=8)) | st.builds(
    make_cid, st.just(0), st.just(DAG_PB), st.binary(max_size=8)
)
links = st.builds(PBLink, cids, st.binary(max_size=40), st.integers(min_value=0, max_value=2**53))


@given(st.lists(links, max_size=20), st.none() | st.binary(max_size=200))
def test_encode_then_decode_round_trips(node_links: list[PBLink], data: bytes | None) -> None:
    assert decode_node(encode_node(node_links, data)) == (node_links, data)


@given(st.lists(links, max_size=5), st.binary(max_size=50))
def test_decode_then_encode_gives_the_same_bytes(node_links: list[PBLink], data: bytes) -> None:
    block = encode_node(node_links, data)
    assert encode_node(*decode_node(block)) == block


def test_empty_directory_is_kubos_empty_directory_block() -> None:
    # QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn is the sha2-256 of these bytes.
    assert encode_node([], UnixFSData(DIRECTORY).encode()) == bytes.fromhex("0a020801")


def test_link_always_carries_name_and_tsize() -> None:
    cid = make_cid(1, RAW, b"")
    assert encode_node([PBLink(cid, b"", 0)], None) == b"\x12" + bytes([2 + len(cid) + 4]) + b"\x0a" + bytes(
        [len(cid)]
    ) + cid + b"\x12\x00\x18\x00"


def test_links_come_before_data_on_the_wire() -> None:
    block = encode_node([PBLink(make_cid(1, RAW, b""), b"a", 1)], b"\x08\x01")
    assert block[0] == 0x12 and block.endswith(b"\x0a\x02\x08\x01")


def test_blocksizes_are_repeated_not_packed() -> None:
    encoded = UnixFSData(FILE, filesize=3, blocksizes=[1, 2]).encode()
    assert encoded == b"\x08\x02\x18\x03\x20\x01\x20\x02"


def test_hamt_data_fields_in_number_order() -> None:
    encoded = UnixFSData(HAMT_SHARD, data=b"\x01", hash_type=0x22, fanout=256).encode()
    assert encoded == b"\x08\x05\x12\x01\x01\x28\x22\x30\x80\x02"


@given(
    st.sampled_from([FILE, DIRECTORY, HAMT_SHARD]),
    st.none() | st.binary(min_size=1, max_size=30),
    st.none() | st.integers(min_value=0, max_value=2**40),
    st.lists(st.integers(min_value=0, max_value=2**30), max_size=5),
)
def test_unixfs_data_round_trips(typ: int, data: bytes | None, filesize: int | None, sizes: list[int]) -> None:
    msg = UnixFSData(typ, data=data, filesize=filesize, blocksizes=sizes)
    assert UnixFSData.decode(msg.encode()) == msg


def test_decode_rejects_data_before_links() -> None:
    good = encode_node([PBLink(make_cid(1, RAW, b""), b"", 0)], b"\x08\x01")
    data_first = good[good.index(b"\x0a\x02\x08\x01") :] + good[: good.index(b"\x0a\x02\x08\x01")]
    with pytest.raises(CodecError):
        decode_node(data_first)


def test_decode_rejects_unknown_fields() -> None:
    with pytest.raises(CodecError):
        decode_node(b"\x1a\x00")


def test_decode_rejects_lengths_past_the_end() -> None:
    with pytest.raises(CodecError):
        decode_node(b"\x0a\x05\x08")


def test_decode_rejects_link_without_hash() -> None:
    with pytest.raises(CodecError):
        decode_node(b"\x12\x02\x18\x00")


def test_unixfs_decode_rejects_missing_type() -> None:
    with pytest.raises(CodecError):
        UnixFSData.decode(b"\x18\x00")
