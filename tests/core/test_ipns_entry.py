"""The IPNS record codec the names layer and the gateway share (bundlekit/ipld/ipns_entry.py).

Field numbers and wire types: the IPNS Record specification (github.com/ipfs/specs,
src/ipns/ipns-record.md, commit 0005ac87); the npm records are fixtures/vectors/ipns/
(written by npm ipns@10.1.6).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import dag_cbor
import pytest

from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import CodecError, SignatureError
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
