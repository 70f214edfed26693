"""CARv1 writing and reading: layout, dedupe, atomic files, truncation, CARv2."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import dag_cbor
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from multiformats import CID

from bundlekit.car import format as car_format
from bundlekit.car.format import decode_header, encode_header
from bundlekit.car.index import CarIndex
from bundlekit.car.reader import iter_sections, read_car
from bundlekit.car.writer import CarFileWriter, CarWriter
from bundlekit.errors import BlockMismatch, CARError, MissingBlock, UnsupportedBlock, UsageError
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str, encode_varint, make_cid

from .conftest import Blocks

LEAF = b"hello world"
LEAF_CID = make_cid(1, RAW, LEAF)


def _car(blocks: list[tuple[bytes, bytes]], roots: list[bytes]) -> bytes:
    out = io.BytesIO()
    writer = CarWriter(out, roots)
    for cid, data in blocks:
        writer.put(cid, data)
    writer.close()
    return out.getvalue()


def test_header_is_length_prefixed_dag_cbor_of_roots_and_version() -> None:
    header = encode_header([LEAF_CID])
    body = dag_cbor.encode({"roots": [CID.decode(LEAF_CID)], "version": 1})
    assert header == encode_varint(len(body)) + body


def test_header_decodes_back_to_binary_roots() -> None:
    assert decode_header(encode_header([LEAF_CID])[1:]) == (1, [LEAF_CID])


@settings(max_examples=200)
@given(st.sampled_from([DAG_PB, RAW]), st.binary(min_size=32, max_size=32))
def test_one_root_header_reads_as_dag_cbor_decodes_it(codec: int, digest: bytes) -> None:
    # decode_header reads the usual one-root header without dag_cbor: the result must be dag_cbor's.
    root = bytes((1, codec, 0x12, 0x20)) + digest
    body = encode_header([root])[1:]
    decoded = dag_cbor.decode(body)
    assert isinstance(decoded, dict) and isinstance(decoded["roots"], list)
    assert decode_header(body) == (decoded["version"], [bytes(r) for r in decoded["roots"]]) == (1, [root])


def _header_outcome(body: bytes) -> object:
    try:
        return decode_header(body)
    except CARError as exc:
        return f"CARError: {exc}"


@settings(max_examples=300)
@given(st.sampled_from([DAG_PB, RAW, 0x71]), st.sampled_from([0x12, 0x13, 0x00]), st.data())
def test_a_mutated_one_root_header_reads_as_the_careful_decoder_reads_it(
    codec: int, hash_code: int, draw: st.DataObject
) -> None:
    # Any byte of a one-root header changed (framing, CID version, codec, multihash, digest, version):
    # decode_header must answer as it does with its dag_cbor-free shortcut switched off.
    body = bytearray(encode_header([bytes((1, codec, hash_code, 0x20)) + bytes(range(32))])[1:])
    at = draw.draw(st.integers(0, len(body) - 1))
    body[at] = draw.draw(st.integers(0, 255))
    fast = _header_outcome(bytes(body))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(car_format, "_ONE_ROOT_HEAD", b"\xff")  # no header starts so: the careful path only
        assert fast == _header_outcome(bytes(body))


def test_one_root_header_with_an_unusual_cid_still_goes_through_dag_cbor() -> None:
    # Same length and framing, but the "CID" bytes do not parse: the careful path refuses it.
    body = bytearray(encode_header([LEAF_CID])[1:])
    body[13] = 0x09  # CID version 9
    with pytest.raises(CARError):
        decode_header(bytes(body))


def test_cidv0_root_round_trips_in_header() -> None:
    root = make_cid(0, DAG_PB, b"\x0a\x02\x08\x01")
    assert decode_header(encode_header([root])[1:]) == (1, [root])


def test_section_is_varint_length_then_cid_then_data() -> None:
    data = _car([(LEAF_CID, LEAF)], [LEAF_CID])
    header = encode_header([LEAF_CID])
    assert data == header + encode_varint(len(LEAF_CID) + len(LEAF)) + LEAF_CID + LEAF


def test_write_then_read_round_trips_roots_and_blocks(sample_tree: tuple[Blocks, bytes, dict[str, bytes]]) -> None:
    blocks, root, _ = sample_tree
    roots, it = read_car(io.BytesIO(blocks.car([root])))
    assert roots == [root]
    assert list(it) == list(blocks.blocks.items())


def test_writer_drops_a_block_put_twice() -> None:
    data = _car([(LEAF_CID, LEAF), (LEAF_CID, LEAF)], [LEAF_CID])
    _, it = read_car(io.BytesIO(data))
    assert list(it) == [(LEAF_CID, LEAF)]


def test_writer_refuses_put_after_close() -> None:
    writer = CarWriter(io.BytesIO(), [LEAF_CID])
    writer.close()
    with pytest.raises(UsageError):
        writer.put(LEAF_CID, LEAF)


def test_reader_rejects_block_that_does_not_hash_to_its_cid() -> None:
    data = bytearray(_car([(LEAF_CID, LEAF)], [LEAF_CID]))
    data[-1] ^= 1
    _, it = read_car(io.BytesIO(bytes(data)))
    with pytest.raises(BlockMismatch, match=CID.decode(LEAF_CID).encode("base32")):
        list(it)


def test_reader_without_verify_yields_bad_block_as_stored() -> None:
    data = bytearray(_car([(LEAF_CID, LEAF)], [LEAF_CID]))
    data[-1] ^= 1
    _, it = read_car(io.BytesIO(bytes(data)), verify=False)
    assert list(it)[0][1] != LEAF


def test_reader_rejects_block_stored_under_wrong_cid() -> None:
    other = make_cid(1, RAW, b"something else")
    _, it = read_car(io.BytesIO(_car([(other, LEAF)], [other])))
    with pytest.raises(BlockMismatch):
        list(it)


def test_reader_rejects_unknown_codec() -> None:
    dag_cbor_cid = b"\x01\x71\x12\x20" + make_cid(1, RAW, LEAF)[4:]
    _, it = read_car(io.BytesIO(_car([(dag_cbor_cid, LEAF)], [dag_cbor_cid])))
    with pytest.raises(UnsupportedBlock, match="codec"):
        list(it)


def test_reader_rejects_unknown_hash_function() -> None:
    blake = b"\x01\x55\xa0\xe4\x02\x20" + bytes(32)
    _, it = read_car(io.BytesIO(_car([(blake, LEAF)], [blake])))
    with pytest.raises(UnsupportedBlock, match="hash"):
        list(it)


def test_reader_rejects_block_over_the_size_limit_before_reading_it() -> None:
    data = b"x" * 101
    cid = make_cid(1, RAW, data)
    _, it = read_car(io.BytesIO(_car([(cid, data)], [cid])), max_block_size=100)
    with pytest.raises(UnsupportedBlock, match="over the 100-byte limit"):
        list(it)


def test_reader_accepts_block_at_the_size_limit() -> None:
    data = b"x" * 100
    cid = make_cid(1, RAW, data)
    _, it = read_car(io.BytesIO(_car([(cid, data)], [cid])), max_block_size=100)
    assert list(it) == [(cid, data)]


def test_truncated_header_names_the_offset() -> None:
    data = _car([(LEAF_CID, LEAF)], [LEAF_CID])
    with pytest.raises(CARError, match="offset 1"):
        read_car(io.BytesIO(data[:20]))


def test_truncated_section_names_the_offset() -> None:
    data = _car([(LEAF_CID, LEAF)], [LEAF_CID])
    _, it = read_car(io.BytesIO(data[:-3]))
    with pytest.raises(CARError, match="truncated at offset"):
        list(it)


def test_empty_stream_is_not_a_car() -> None:
    with pytest.raises(CARError, match="no header"):
        read_car(io.BytesIO(b""))


def test_garbage_header_is_a_car_error() -> None:
    with pytest.raises(CARError):
        read_car(io.BytesIO(b"\x05hello"))


def test_header_with_wrong_version_is_rejected() -> None:
    body = dag_cbor.encode({"roots": [CID.decode(LEAF_CID)], "version": 3})
    with pytest.raises(CARError, match="version"):
        read_car(io.BytesIO(encode_varint(len(body)) + body))


def test_zero_length_section_is_rejected() -> None:
    data = _car([], [LEAF_CID]) + b"\x00"
    _, it = read_car(io.BytesIO(data))
    with pytest.raises(CARError, match="empty CAR section"):
        list(it)


def _carv2(v1: bytes, padding: int = 5) -> bytes:
    pragma = bytes.fromhex("0aa16776657273696f6e02")
    data_offset = len(pragma) + 40 + padding
    header = bytes(16) + struct.pack("<QQQ", data_offset, len(v1), 0)
    # Trailing bytes stand in for an index, which the reader must ignore.
    return pragma + header + b"\0" * padding + v1 + b"INDEX-IGNORED"


def test_carv2_payload_is_read_and_index_ignored() -> None:
    v1 = _car([(LEAF_CID, LEAF)], [LEAF_CID])
    roots, it = read_car(io.BytesIO(_carv2(v1)))
    assert roots == [LEAF_CID]
    assert list(it) == [(LEAF_CID, LEAF)]


def test_carv2_with_data_offset_inside_its_header_is_rejected() -> None:
    pragma = bytes.fromhex("0aa16776657273696f6e02")
    bad = pragma + bytes(16) + struct.pack("<QQQ", 10, 0, 0)
    with pytest.raises(CARError, match="data offset"):
        read_car(io.BytesIO(bad))


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(min_value=0))
def test_any_truncation_is_a_car_error_or_a_clean_prefix(cut: int) -> None:
    blocks = Blocks()
    root = blocks.file(bytes(range(200)), chunk=30)
    full = blocks.car([root])
    expected = list(blocks.blocks.items())
    cut %= len(full)
    try:
        _, it = read_car(io.BytesIO(full[:cut]))
        got = list(it)
    except CARError:
        return
    # Only a cut exactly between sections reads cleanly, and then yields a prefix.
    assert got == expected[: len(got)]
    assert len(got) < len(expected)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300))
def test_random_bytes_never_raise_anything_but_bundlekit_errors(data: bytes) -> None:
    from bundlekit.errors import BundlekitError

    try:
        _, it = read_car(io.BytesIO(data))
        list(it)
    except BundlekitError:
        pass


@settings(max_examples=200, deadline=None)
@given(pos=st.integers(min_value=0), value=st.integers(min_value=0, max_value=255))
def test_a_changed_byte_never_goes_unnoticed(pos: int, value: int) -> None:
    from bundlekit.errors import BundlekitError

    full = _car([(LEAF_CID, LEAF)], [LEAF_CID])
    pos %= len(full)
    if full[pos] == value:
        return
    mutated = full[:pos] + bytes([value]) + full[pos + 1 :]
    try:
        roots, it = read_car(io.BytesIO(mutated))
        got = list(it)
    except BundlekitError:
        return
    assert (roots, got) != ([LEAF_CID], [(LEAF_CID, LEAF)])


def test_file_writer_produces_the_same_bytes_as_the_stream_writer(
    tmp_path: Path, sample_tree: tuple[Blocks, bytes, dict[str, bytes]]
) -> None:
    blocks, root, _ = sample_tree
    dest = tmp_path / "out.car"
    with CarFileWriter(dest) as writer:
        for cid, data in blocks.blocks.items():
            writer.put(cid, data)
        writer.finish(root)
    assert dest.read_bytes() == blocks.car([root])


def test_file_writer_rewrites_header_when_root_cid_length_differs(tmp_path: Path) -> None:
    blocks = Blocks()
    leaf = blocks.raw(b"leaf")  # 36-byte CIDv1 reserves the header slot
    from bundlekit.ipld.dagpb import FILE, PBLink, UnixFSData

    root = blocks.node([PBLink(leaf, b"", 4)], UnixFSData(FILE, filesize=4, blocksizes=[4]), version=0)
    dest = tmp_path / "v0.car"
    with CarFileWriter(dest) as writer:
        writer.put(leaf, blocks.blocks[leaf])
        writer.put(root, blocks.blocks[root])
        writer.finish(root)
    assert dest.read_bytes() == blocks.car([root])
    assert [p.name for p in tmp_path.iterdir()] == ["v0.car"]


def test_file_writer_dedupes_blocks(tmp_path: Path) -> None:
    dest = tmp_path / "d.car"
    with CarFileWriter(dest) as writer:
        writer.put(LEAF_CID, LEAF)
        writer.put(LEAF_CID, LEAF)
        writer.finish(LEAF_CID)
    assert writer.blocks == 1
    assert dest.read_bytes() == _car([(LEAF_CID, LEAF)], [LEAF_CID])


def test_file_writer_abort_leaves_no_file(tmp_path: Path) -> None:
    writer = CarFileWriter(tmp_path / "a.car")
    writer.put(LEAF_CID, LEAF)
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def test_file_writer_exception_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        with CarFileWriter(tmp_path / "e.car") as writer:
            writer.put(LEAF_CID, LEAF)
            raise RuntimeError("importer failed")
    assert list(tmp_path.iterdir()) == []


def test_file_writer_left_without_finish_leaves_no_file(tmp_path: Path) -> None:
    with CarFileWriter(tmp_path / "n.car") as writer:
        writer.put(LEAF_CID, LEAF)
    assert list(tmp_path.iterdir()) == []


def test_file_writer_keeps_existing_dest_until_finish(tmp_path: Path) -> None:
    dest = tmp_path / "keep.car"
    dest.write_bytes(b"old")
    with CarFileWriter(dest) as writer:
        writer.put(LEAF_CID, LEAF)
        assert dest.read_bytes() == b"old"
    assert dest.read_bytes() == b"old"


def test_file_writer_refuses_a_root_it_never_wrote(tmp_path: Path) -> None:
    writer = CarFileWriter(tmp_path / "r.car")
    writer.put(LEAF_CID, LEAF)
    with pytest.raises(UsageError, match="never written"):
        writer.finish(make_cid(1, RAW, b"other"))
    assert list(tmp_path.iterdir()) == []


def test_index_reads_blocks_on_demand(tmp_path: Path, sample_tree: tuple[Blocks, bytes, dict[str, bytes]]) -> None:
    blocks, root, _ = sample_tree
    path = tmp_path / "i.car"
    path.write_bytes(blocks.car([root]))
    with CarIndex(path) as index:
        assert index.roots == [root]
        assert len(index) == len(blocks.blocks)
        for cid, data in blocks.blocks.items():
            assert index.get(cid) == data


def test_index_get_of_absent_block_is_missing_block(tmp_path: Path) -> None:
    path = tmp_path / "m.car"
    path.write_bytes(_car([(LEAF_CID, LEAF)], [LEAF_CID]))
    with CarIndex(path) as index, pytest.raises(MissingBlock, match="not in"):
        index.get(make_cid(1, RAW, b"absent"))


def test_index_without_verify_still_verifies_on_get(tmp_path: Path) -> None:
    data = bytearray(_car([(LEAF_CID, LEAF)], [LEAF_CID]))
    data[-1] ^= 1
    path = tmp_path / "v.car"
    path.write_bytes(bytes(data))
    with CarIndex(path, verify=False) as index, pytest.raises(BlockMismatch):
        index.get(LEAF_CID)


def test_header_for_one_cidv1_root_is_59_bytes_in_the_documented_layout() -> None:
    header = encode_header([LEAF_CID])
    assert len(header) == 59
    assert header[:11] == bytes.fromhex("3aa265") + b"roots" + bytes.fromhex("81d82a")
    assert header[11:14] == bytes.fromhex("582500") and header[14:50] == LEAF_CID
    assert header[50:] == b"\x67version\x01"


def test_header_with_extra_keys_is_rejected() -> None:
    body = dag_cbor.encode({"roots": [CID.decode(LEAF_CID)], "version": 1, "x": 1})
    with pytest.raises(CARError, match="unexpected keys"):
        read_car(io.BytesIO(encode_varint(len(body)) + body))


def test_header_length_over_the_limit_is_rejected_before_reading_it() -> None:
    with pytest.raises(CARError, match="out of range"):
        read_car(io.BytesIO(encode_varint(2 * 1024 * 1024) + b"\xa2"))


def test_header_with_empty_roots_is_read() -> None:
    roots, it = read_car(io.BytesIO(_car([(LEAF_CID, LEAF)], [])))
    assert roots == [] and list(it) == [(LEAF_CID, LEAF)]


def test_carv2_whose_payload_is_not_v1_is_rejected() -> None:
    inner = bytes.fromhex("0aa16776657273696f6e02")
    with pytest.raises(CARError, match="not a CARv1"):
        read_car(io.BytesIO(_carv2(inner)))


def test_truncated_carv2_payload_is_a_car_error() -> None:
    v1 = _car([(LEAF_CID, LEAF)], [LEAF_CID])
    v2 = _carv2(v1)
    cut = v2[: v2.index(LEAF) + 3]
    _, it = read_car(io.BytesIO(cut))
    with pytest.raises(CARError, match="truncated"):
        list(it)


def test_index_keeps_the_first_copy_of_a_repeated_block(tmp_path: Path) -> None:
    raw = io.BytesIO()
    raw.write(encode_header([LEAF_CID]))
    for _ in range(2):
        raw.write(encode_varint(len(LEAF_CID) + len(LEAF)) + LEAF_CID + LEAF)
    path = tmp_path / "dup.car"
    path.write_bytes(raw.getvalue())
    with CarIndex(path) as index:
        assert (index.sections, len(index)) == (2, 1)
        assert index.index[LEAF_CID][0] == len(encode_header([LEAF_CID])) + 1 + len(LEAF_CID)


def test_index_reads_correctly_from_many_threads(
    tmp_path: Path, sample_tree: tuple[Blocks, bytes, dict[str, bytes]]
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    blocks, root, _ = sample_tree
    path = tmp_path / "t.car"
    path.write_bytes(blocks.car([root]))
    wanted = list(blocks.blocks.items()) * 50
    with CarIndex(path) as index, ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda item: index.get(item[0]) == item[1], wanted))
    assert all(got)


def test_index_read_after_close_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "c.car"
    path.write_bytes(_car([(LEAF_CID, LEAF)], [LEAF_CID]))
    with CarIndex(path) as index:
        pass
    with pytest.raises(UsageError, match="closed"):
        index.get(LEAF_CID)


# Truncation errors name the whole block, whichever read path hit them.

BIG = bytes(range(256)) * 1200  # 307200 bytes: more than one internal read chunk


def _truncated_car() -> tuple[bytes, bytes]:
    """A one-block CAR of BIG cut after 1000 bytes, and that block's CID."""
    cid = make_cid(1, RAW, BIG)
    out = io.BytesIO()
    writer = CarWriter(out, [cid])
    writer.put(cid, BIG)
    writer.close()
    return cid, out.getvalue()[:1000]


def test_skipping_a_truncated_big_block_reports_its_full_size() -> None:
    cid, data = _truncated_car()
    _, sections = iter_sections(io.BytesIO(data), with_data=False)
    with pytest.raises(CARError, match=f"block {cid_to_str(cid)} needs {len(BIG)} bytes"):
        list(sections)


def test_skip_and_read_paths_report_the_same_truncation() -> None:
    _, data = _truncated_car()
    _, skipped = iter_sections(io.BytesIO(data), with_data=False)
    _, read = read_car(io.BytesIO(data))
    with pytest.raises(CARError) as by_skip:
        list(skipped)
    with pytest.raises(CARError) as by_read:
        list(read)
    assert str(by_skip.value) == str(by_read.value)


def test_a_text_file_is_reported_as_possibly_not_a_car() -> None:
    with pytest.raises(CARError, match="not a CAR"):
        read_car(io.BytesIO(b"garbage\n"))
