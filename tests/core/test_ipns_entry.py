"""The IPNS record codec the names layer and the gateway share (bundlekit/ipld/ipns_entry.py).

Field numbers and wire types: the IPNS Record specification (github.com/ipfs/specs,
src/ipns/ipns-record.md, commit 0005ac87); the npm records are fixtures/vectors/ipns/
(written by npm ipns@10.1.6).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import dag_cbor
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import CodecError, SignatureError
from bundlekit.ipld.cbormap import decode_flat_map
from bundlekit.ipld.ipns_entry import decode_data, decode_entry, encode_entry, format_validity, parse_validity
from bundlekit.names.record import SIGNATURE_PREFIX, name_from_key, parse_name, verify_record

VECTORS = Path(__file__).resolve().parents[2] / "fixtures" / "vectors" / "ipns"


def test_an_npm_record_reencodes_to_its_own_bytes() -> None:
    record = bytes.fromhex(json.loads((VECTORS / "npm-v2-only.json").read_text())["record"])
    assert encode_entry(decode_entry(record)) == record


@pytest.mark.parametrize("wire", [1, 5])
def test_a_fixed_width_field_running_past_the_end_is_malformed(wire: int) -> None:
    entry = encode_entry({"data": dag_cbor.encode({})}) + bytes([15 << 3 | wire, 0, 0])
    with pytest.raises(CodecError, match="truncated field"):
        decode_entry(entry)


def test_an_unknown_fixed_width_field_is_skipped() -> None:
    entry = bytes([15 << 3 | 1]) + bytes(8) + encode_entry({"sequence": 3})
    assert decode_entry(entry) == {"sequence": 3}


def test_data_that_is_not_dag_cbor_is_a_codec_error() -> None:
    with pytest.raises(CodecError, match="not DAG-CBOR"):
        decode_data(b"\xff")


def test_a_validity_is_read_to_the_nanosecond_in_utc() -> None:
    assert parse_validity("1970-01-01T01:00:01.000000001+01:00") == 1_000_000_001


def test_a_validity_on_a_day_the_month_lacks_is_not_a_valid_time() -> None:
    with pytest.raises(CodecError, match="not a valid time"):
        parse_validity("2026-02-30T00:00:00Z")


def test_a_formatted_validity_reads_back() -> None:
    when = datetime(2030, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    assert parse_validity(format_validity(when)) == int(when.timestamp()) * 10**9 + 123_456_000


def test_names_refuse_a_validity_before_year_one_in_utc() -> None:
    """A well-formed RFC 3339 time that datetime cannot hold once moved to UTC is refused, not a crash."""
    signer = Ed25519Signer.from_seed(bytes([7]) * 32)
    data = dag_cbor.encode({"Value": b"/ipfs/bafkqaaa", "Validity": b"0001-01-01T00:00:00+01:00", "ValidityType": 0,
                            "Sequence": 1, "TTL": 0})
    record = encode_entry({"signatureV2": signer.sign(SIGNATURE_PREFIX + data), "data": data})
    with pytest.raises(SignatureError, match="is not a valid time"):
        verify_record(parse_name(name_from_key(signer.public)), record)


_VALUES = st.one_of(st.integers(0, 2**64 - 1), st.binary(max_size=300), st.text(max_size=40),
                    st.integers(-(2**63), -1), st.booleans(), st.none(), st.lists(st.integers(0, 5), max_size=3))


# Example counts halved for the suite's time (issue 36 item 8); neither these tests nor their issues set them.
@settings(max_examples=150, derandomize=True)  # 300 before
@given(st.dictionaries(st.text(max_size=12), _VALUES, max_size=7))
def test_a_data_map_reads_as_dag_cbor_reads_it(doc: dict[str, object]) -> None:
    """The map read without ``dag_cbor`` (``ipld.cbormap.decode_flat_map``) is the map ``dag_cbor`` reads, or left to it."""
    data = dag_cbor.encode(doc)  # type: ignore[arg-type]
    assert decode_data(data) == dag_cbor.decode(data) == doc


@settings(max_examples=200, derandomize=True)  # 400 before
@given(st.dictionaries(st.text(max_size=6), st.one_of(st.integers(0, 2**40), st.binary(max_size=30), st.text(max_size=8)),
                       max_size=5), st.integers(0, 400), st.integers(0, 255))
def test_data_altered_anywhere_reads_only_as_dag_cbor_reads_it(doc: dict[str, object], at: int, byte: int) -> None:
    """A byte changed (or bytes cut) anywhere: what the plain reader accepts, ``dag_cbor`` accepts with the same
    value; what it does not, it leaves to ``dag_cbor`` (never a different answer)."""
    data = bytearray(dag_cbor.encode(doc))  # type: ignore[arg-type]
    if at < len(data):
        data[at] = byte
    else:
        del data[at % (len(data) + 1):]
    plain = decode_flat_map(bytes(data))
    if plain is not None:
        assert plain == dag_cbor.decode(bytes(data))


@pytest.mark.parametrize("data", [
    bytes([0xA1, 0x61, 0x61, 0x18, 0x01]),  # 1 in the one-byte form: not the shortest
    bytes([0xA2, 0x61, 0x62, 0x01, 0x61, 0x61, 0x02]),  # keys out of order
    bytes([0xA2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02]),  # a key twice
    bytes([0xA1, 0x61, 0xFF, 0x01]),  # a key that is not UTF-8
    bytes([0xA1, 0x61, 0x61, 0x01, 0x00]),  # a second item after the map
    bytes([0xBF, 0x61, 0x61, 0x01, 0xFF]),  # an indefinite-length map
])
def test_data_that_is_not_canonical_dag_cbor_is_refused(data: bytes) -> None:
    with pytest.raises(CodecError, match="not DAG-CBOR"):
        decode_data(data)


def test_a_record_is_verified_without_importing_dag_cbor() -> None:
    """A follower's sync reads the record it resolves with the plain reader: ``dag_cbor`` and ``multiformats``
    (~70 ms) are never imported for it."""
    script = (
        "import sys\n"
        "from bundlekit.crypto.signing import Ed25519Signer\n"
        "from bundlekit.ipld.ipns_entry import encode_entry\n"
        "from bundlekit.names.record import SIGNATURE_PREFIX, name_from_key, parse_name, verify_record\n"
        f"data = bytes.fromhex({_RECORD_DATA.hex()!r})\n"
        "signer = Ed25519Signer.from_seed(bytes([7]) * 32)\n"
        "record = encode_entry({'signatureV2': signer.sign(SIGNATURE_PREFIX + data), 'data': data})\n"
        "verify_record(parse_name(name_from_key(signer.public)), record)\n"
        "print(sorted(m for m in ('dag_cbor', 'multiformats') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


_RECORD_DATA = dag_cbor.encode({"Value": b"/ipfs/bafkqaaa", "Validity": b"2999-01-01T00:00:00.000000000Z",
                                "ValidityType": 0, "Sequence": 3, "TTL": 300_000_000_000})
