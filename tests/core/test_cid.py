"""bundlekit.ipld.cid's hand-built CIDs agree with multiformats, the oracle."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from multiformats import CID, multihash, varint

from bundlekit.errors import BlockMismatch, CIDError, UnsupportedBlock
from bundlekit.ipld.cid import (
    DAG_PB,
    RAW,
    cid_from_digest,
    cid_to_str,
    decode_varint,
    encode_varint,
    make_cid,
    parse_cid,
    parse_cid_bytes,
    read_cid,
    verify_block,
)

_CODEC_NAMES = {DAG_PB: "dag-pb", RAW: "raw"}


def _oracle(version: int, codec: int, data: bytes) -> CID:
    mh = multihash.wrap(hashlib.sha256(data).digest(), "sha2-256")
    return CID("base58btc" if version == 0 else "base32", version, _CODEC_NAMES[codec], mh)


@given(st.binary(max_size=256), st.sampled_from([(1, RAW), (1, DAG_PB), (0, DAG_PB)]))
def test_make_cid_bytes_equal_multiformats(data: bytes, shape: tuple[int, int]) -> None:
    version, codec = shape
    assert make_cid(version, codec, data) == bytes(_oracle(version, codec, data))


@given(st.binary(max_size=256), st.sampled_from([(1, RAW), (1, DAG_PB), (0, DAG_PB)]))
def test_cid_to_str_equals_multiformats(data: bytes, shape: tuple[int, int]) -> None:
    version, codec = shape
    assert cid_to_str(make_cid(version, codec, data)) == str(_oracle(version, codec, data))


@given(st.binary(max_size=64), st.sampled_from([(1, RAW), (1, DAG_PB), (0, DAG_PB)]))
def test_parse_cid_round_trips_the_string_form(data: bytes, shape: tuple[int, int]) -> None:
    cid = make_cid(shape[0], shape[1], data)
    assert parse_cid(cid_to_str(cid)) == cid


@given(st.binary(max_size=64))
def test_parse_cid_accepts_other_multibases(data: bytes) -> None:
    oracle = _oracle(1, RAW, data)
    assert parse_cid(oracle.encode("base36")) == bytes(oracle)


@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_varint_matches_multiformats(value: int) -> None:
    encoded = encode_varint(value)
    assert encoded == varint.encode(value)
    assert decode_varint(encoded) == (value, len(encoded))


def test_decode_varint_rejects_truncation() -> None:
    with pytest.raises(ValueError):
        decode_varint(b"\x80")


def test_decode_varint_rejects_non_minimal_padding() -> None:
    with pytest.raises(ValueError):
        decode_varint(b"\x81\x00")


@given(st.binary(max_size=64), st.sampled_from([(1, RAW), (0, DAG_PB)]), st.binary(max_size=8))
def test_read_cid_reads_one_cid_and_stops(data: bytes, shape: tuple[int, int], tail: bytes) -> None:
    cid = make_cid(shape[0], shape[1], data)
    assert read_cid(cid + tail) == (cid, len(cid))


def test_read_cid_rejects_truncated_digest() -> None:
    with pytest.raises(CIDError):
        read_cid(make_cid(1, RAW, b"x")[:-1])


def test_parse_cid_bytes_splits_the_parts() -> None:
    digest = hashlib.sha256(b"abc").digest()
    info = parse_cid_bytes(cid_from_digest(1, RAW, digest))
    assert (info.version, info.codec, info.hash_code, info.digest) == (1, RAW, 0x12, digest)


def test_cidv0_refuses_raw_codec() -> None:
    with pytest.raises(CIDError):
        cid_from_digest(0, RAW, hashlib.sha256(b"").digest())


def test_parse_cid_rejects_garbage() -> None:
    with pytest.raises(CIDError):
        parse_cid("not-a-cid")


def test_verify_block_accepts_matching_data() -> None:
    verify_block(make_cid(1, RAW, b"data"), b"data")


def test_verify_block_rejects_a_flipped_byte() -> None:
    with pytest.raises(BlockMismatch):
        verify_block(make_cid(1, RAW, b"data"), b"dat4")


def test_verify_block_rejects_unknown_codec() -> None:
    cbor = bytes(CID("base32", 1, "dag-cbor", multihash.wrap(hashlib.sha256(b"").digest(), "sha2-256")))
    with pytest.raises(UnsupportedBlock):
        verify_block(cbor, b"")


def test_verify_block_rejects_unknown_hash_function() -> None:
    other = bytes(CID("base32", 1, "raw", multihash.digest(b"x", "sha2-512")))
    with pytest.raises(UnsupportedBlock):
        verify_block(other, b"x")


def test_verify_block_rejects_oversized_blocks() -> None:
    data = b"\0" * 17
    with pytest.raises(UnsupportedBlock):
        verify_block(make_cid(1, RAW, data), data, max_size=16)


def test_parse_cid_error_says_what_to_give() -> None:
    with pytest.raises(CIDError, match=r"not a valid CID: 'garbage'; give a CID string such as bafy"):
        parse_cid("garbage")
