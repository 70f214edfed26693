"""Issue 37: an IPNS record's data map and a one-root CAR header are written and read without ``dag_cbor``
(``ipld.cbormap``, ``car.format``), byte for byte as dag-cbor 0.3.3 writes and reads them; bytes of any other
shape, valid or not, still go to ``dag_cbor``, whose verdict stands."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import dag_cbor
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from multiformats import CID

from bundlekit.car.format import decode_header, encode_header
from bundlekit.errors import CodecError
from bundlekit.ipld.cbormap import decode_flat_map, encode_flat_map
from bundlekit.ipld.ipns_entry import decode_data

UINT64 = st.integers(min_value=0, max_value=2**64 - 1)
EDGES = st.sampled_from([0, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1])
VALUES = st.one_of(st.binary(max_size=300), UINT64, EDGES)
FLAT = st.dictionaries(st.text(max_size=30), VALUES, max_size=8)
#: Examples of the round trips and of the mutated encodings (400 and 600 before: issue 37 sets no count; halved for the
#: suite's time, issue 36 item 8, ~1.7 s of CPU).
EXAMPLES = 200
MUTATED_EXAMPLES = 300


@settings(max_examples=EXAMPLES, deadline=None)
@given(FLAT)
def test_a_flat_map_is_written_as_dag_cbor_writes_it(doc: dict[str, bytes | int]) -> None:
    assert encode_flat_map(doc) == dag_cbor.encode(doc)


@settings(max_examples=EXAMPLES, deadline=None)
@given(FLAT)
def test_a_flat_map_dag_cbor_wrote_is_read_to_the_same_dict(doc: dict[str, bytes | int]) -> None:
    assert decode_flat_map(dag_cbor.encode(doc)) == dag_cbor.decode(dag_cbor.encode(doc)) == doc


@settings(max_examples=MUTATED_EXAMPLES, deadline=None)
@given(FLAT, st.data())
def test_bytes_read_without_dag_cbor_are_bytes_dag_cbor_reads_the_same(doc: dict[str, bytes | int],
                                                                       data: st.DataObject) -> None:
    """Mutated encodings (a byte changed, cut, or added): whatever the fast reader accepts, dag_cbor accepts and
    reads to the same map; everything else is left to dag_cbor."""
    raw = bytearray(dag_cbor.encode(doc))
    action = data.draw(st.sampled_from(["flip", "cut", "append"]))
    if action == "flip" and raw:
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    elif action == "cut" and raw:
        del raw[data.draw(st.integers(0, len(raw) - 1)):]
    else:
        raw += data.draw(st.binary(min_size=1, max_size=3))
    fast = decode_flat_map(bytes(raw))
    if fast is not None:
        assert dag_cbor.decode(bytes(raw)) == fast


@pytest.mark.parametrize("raw", [
    bytes.fromhex("a2616201616101"),  # keys out of order ("b" before "a")
    bytes.fromhex("a2616101616102"),  # a duplicate key
    bytes.fromhex("a1616118 05".replace(" ", "")),  # 5 written in two bytes: not the shortest head
    bytes.fromhex("bf616101ff"),  # an indefinite-length map
    bytes.fromhex("a16161f5"),  # a value that is not bytes or an unsigned integer (true)
    bytes.fromhex("a1616101 00".replace(" ", "")),  # a byte after the map
    bytes.fromhex("a161ff01"),  # a key that is not UTF-8
    bytes.fromhex("a1"),  # cut short
])
def test_bytes_not_canonical_or_of_another_shape_are_left_to_dag_cbor(raw: bytes) -> None:
    assert decode_flat_map(raw) is None


def test_a_record_data_that_is_not_dag_cbor_is_still_refused() -> None:
    with pytest.raises(CodecError, match="not DAG-CBOR"):
        decode_data(bytes.fromhex("a2616201616101"))  # out of order: dag_cbor refuses it


def test_a_nested_record_data_is_still_read_by_dag_cbor() -> None:
    doc = {"Value": b"/ipfs/x", "Extra": {"nested": [1, 2]}}
    assert decode_data(dag_cbor.encode(doc)) == doc


def test_values_the_fast_writer_cannot_carry_are_left_to_dag_cbor() -> None:
    assert encode_flat_map({"a": True}) is None
    assert encode_flat_map({"a": -1}) is None
    assert encode_flat_map({"a": 2**64}) is None
    assert encode_flat_map({"a": "text"}) is None
    assert encode_flat_map({"\ud800": 1}) is None


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([0x55, 0x70]), st.binary(min_size=1, max_size=64))
def test_a_one_root_car_header_is_the_bytes_dag_cbor_writes(codec: int, content: bytes) -> None:
    root = bytes((1, codec, 0x12, 0x20)) + hashlib.sha256(content).digest()
    body = dag_cbor.encode({"roots": [CID.decode(root)], "version": 1})
    header = encode_header([root])
    assert header[1:] == body and header[0] == len(body)
    assert decode_header(body) == (1, [root])


def test_a_writer_sync_round_imports_neither_dag_cbor_nor_multiformats() -> None:
    """What a round needs of them (the record's data, the CAR header, the pins) is read and written without."""
    code = ("import sys\n"
            "from bundlekit.names.record import _decode_data\n"
            "from bundlekit.ipld.cbormap import encode_flat_map\n"
            "from bundlekit.car.format import encode_header\n"
            "from bundlekit.pinning.orchestrate import same_cid\n"
            "from bundlekit.ipld.cid import cid_to_str\n"
            "root = bytes((1, 0x70, 0x12, 0x20)) + bytes(32)\n"
            "data = encode_flat_map({'Value': b'/ipfs/x', 'Validity': b'2030-01-01T00:00:00.000000000Z',"
            " 'ValidityType': 0, 'Sequence': 1, 'TTL': 1})\n"
            "_decode_data(data); encode_header([root]); assert same_cid(cid_to_str(root), root)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dag_cbor', 'multiformats')))\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"
