"""IPNS records against the npm ``ipns`` package (js-ipns 10.1.6), both ways.

The vectors in fixtures/vectors/ipns/ come from ``generate.py`` there: records
bundlekit made were validated by js-ipns (``npm_ipns``), and js-ipns made
records from the same seeds that bundlekit must verify the same way.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import SignatureError
from bundlekit.names.record import decode_entry, encode_entry, name_from_key, parse_name, verify_record

VECTORS = Path(__file__).resolve().parents[2] / "fixtures" / "vectors" / "ipns"
NOW = datetime(2026, 6, 1, tzinfo=UTC)
CASES = sorted(p for p in VECTORS.glob("*.json") if p.name != "keys.json")


def _load(path: Path) -> dict[str, object]:
    doc: dict[str, object] = json.loads(path.read_text())
    return doc


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_vector_verifies_as_expected(path: Path) -> None:
    doc = _load(path)
    name, record = parse_name(str(doc["name"])), bytes.fromhex(str(doc["record"]))
    if doc["expected"] == "valid":
        assert verify_record(name, record, now=lambda: NOW).value.startswith("/ipfs/")
    else:
        with pytest.raises(SignatureError):
            verify_record(name, record, now=lambda: NOW)


@pytest.mark.parametrize("path", [p for p in CASES if p.name.startswith("bundlekit-")],
                         ids=lambda p: p.stem)
def test_records_we_make_are_judged_the_same_by_js_ipns(path: Path) -> None:
    doc = _load(path)
    assert isinstance(doc["npm_ipns"], dict)
    assert doc["npm_ipns"]["valid"] is (doc["expected"] == "valid")


def test_our_v2_record_is_byte_identical_to_js_ipns_for_the_same_inputs() -> None:
    assert _load(VECTORS / "bundlekit-v2.json")["record"] == _load(VECTORS / "npm-v2-only.json")["record"]


def test_names_match_js_ipns_for_the_same_seeds() -> None:
    keys = json.loads((VECTORS / "keys.json").read_text())
    for entry in keys.values():
        assert name_from_key(Ed25519Signer.from_seed(bytes.fromhex(entry["seed"])).public) == entry["name"]


def test_protobuf_round_trips_a_v1_v2_record_from_js_ipns() -> None:
    record = bytes.fromhex(str(_load(VECTORS / "npm-v1-v2.json")["record"]))
    fields = decode_entry(record)
    assert set(fields) == {"value", "signatureV1", "validityType", "validity", "sequence", "ttl", "signatureV2",
                           "data"}
    assert encode_entry(fields) == record


def test_v1_value_differing_from_signed_data_is_refused() -> None:
    doc = _load(VECTORS / "npm-v1-v2.json")
    fields = decode_entry(bytes.fromhex(str(doc["record"])))
    fields["value"] = b"/ipfs/bafkqaaa"
    with pytest.raises(SignatureError, match="V1 field 'value'"):
        verify_record(parse_name(str(doc["name"])), encode_entry(fields), now=lambda: NOW)
