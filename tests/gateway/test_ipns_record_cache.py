"""How long a cache may keep an IPNS record the gateway serves (specs/gateway.md, section 3, step 1).

The expected headers are boxo's, the reference gateway: github.com/ipfs/boxo,
gateway/handler_ipns_record.go (``serveIpnsRecord``, ``ipnsRecordMaxAge``) and its test
gateway/handler_ipns_record_test.go, commit 8df89a787fac5f3e2dd37b045c4018197bfb805c:
``Cache-Control: public, max-age=<TTL cut to the time left before the record's EOL, at least 0,
truncated to seconds>``; a record without a TTL gets ``Last-Modified: <now>`` and no
``Cache-Control``; a record that is not an ``IpnsEntry`` with DAG-CBOR data is a 500.
The npm records are fixtures/vectors/ipns/ (written by npm ipns@10.1.6).
"""

from __future__ import annotations

import calendar
import json
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

import dag_cbor
import httpx
import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.gateway.respond import GatewayResponder
from bundlekit.gateway.server import serve_in_thread
from bundlekit.names.record import create_record, encode_entry, name_from_key

VECTORS = Path(__file__).resolve().parents[2] / "fixtures" / "vectors" / "ipns"
ACCEPT = {"accept": "application/vnd.ipfs.ipns-record"}
SIGNER = Ed25519Signer.from_seed(bytes([7]) * 32)
NAME = name_from_key(SIGNER.public)
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
NOW_NS = calendar.timegm(NOW.timetuple()) * 1_000_000_000


def _npm(scenario: str) -> tuple[str, bytes]:
    vector = json.loads((VECTORS / f"{scenario}.json").read_text())
    return vector["name"], bytes.fromhex(vector["record"])


def _unsigned(data: dict[str, object]) -> bytes:
    """An ``IpnsEntry`` around ``data`` with a dummy signature: the gateway does not verify records."""
    return encode_entry({"signatureV2": bytes(64), "data": dag_cbor.encode(data)})  # type: ignore[arg-type]


def _store_with(tmp_path: Path, name: str, record: bytes) -> BlockStore:
    store = BlockStore(tmp_path / "store", fsync=False)
    store.put_record(name, record)
    return store


def _at_now(store: BlockStore, name: str) -> httpx.Response:
    """The record response of a gateway whose clock reads ``NOW``."""
    response = GatewayResponder(store, clock=lambda: NOW_NS).respond("GET", f"/ipns/{name}", ACCEPT)
    return httpx.Response(response.status, headers=response.headers, content=b"".join(response.body))


def test_a_record_with_a_ttl_is_cached_for_its_ttl_on_loopback(tmp_path: Path) -> None:
    name, record = _npm("npm-v2-only")  # TTL 300 s, valid until 2100
    with serve_in_thread(store=_store_with(tmp_path, name, record)) as server:
        got = httpx.get(f"{server.url}/ipns/{name}?format=ipns-record")
    assert got.status_code == 200 and got.content == record
    assert got.headers["cache-control"] == "public, max-age=300"
    assert "last-modified" not in got.headers


def test_an_expired_record_is_cached_for_zero_seconds_on_loopback(tmp_path: Path) -> None:
    name, record = _npm("npm-expired")  # TTL 300 s, valid until 2020
    with serve_in_thread(store=_store_with(tmp_path, name, record)) as server:
        got = httpx.get(f"{server.url}/ipns/{name}", headers=ACCEPT)
    assert got.status_code == 200
    assert got.headers["cache-control"] == "public, max-age=0"


def test_a_record_without_a_ttl_has_last_modified_and_no_cache_control_on_loopback(tmp_path: Path) -> None:
    record = _unsigned({"Value": b"/ipfs/bafkqaaa", "Validity": b"2100-01-01T00:00:00Z", "ValidityType": 0,
                        "Sequence": 1})
    with serve_in_thread(store=_store_with(tmp_path, NAME, record)) as server:
        got = httpx.get(f"{server.url}/ipns/{NAME}", headers=ACCEPT)
    assert got.status_code == 200 and got.content == record
    assert "cache-control" not in got.headers
    assert parsedate_to_datetime(got.headers["last-modified"]).tzinfo is not None


def test_last_modified_is_the_time_of_the_response(tmp_path: Path) -> None:
    record = _unsigned({"Value": b"/ipfs/bafkqaaa", "Sequence": 1})
    got = _at_now(_store_with(tmp_path, NAME, record), NAME)
    assert got.headers["last-modified"] == "Fri, 02 Jan 2026 03:04:05 GMT"


def test_a_ttl_past_the_records_eol_is_cut_to_the_whole_seconds_left(tmp_path: Path) -> None:
    validity = "2026-01-02T03:04:35.900000000Z"  # 30.9 s after NOW
    record = _unsigned({"Value": b"/ipfs/bafkqaaa", "Validity": validity.encode(), "ValidityType": 0,
                        "Sequence": 1, "TTL": 3600 * 10**9})
    assert _at_now(_store_with(tmp_path, NAME, record), NAME).headers["cache-control"] == "public, max-age=30"


def test_an_eol_with_a_zone_offset_is_read_in_utc(tmp_path: Path) -> None:
    validity = "2026-01-02T04:06:05+01:01"  # 03:05:05 UTC, 60 s after NOW
    record = _unsigned({"Value": b"/ipfs/bafkqaaa", "Validity": validity.encode(), "ValidityType": 0,
                        "Sequence": 1, "TTL": 3600 * 10**9})
    assert _at_now(_store_with(tmp_path, NAME, record), NAME).headers["cache-control"] == "public, max-age=60"


def test_a_ttl_under_the_time_left_is_truncated_to_whole_seconds(tmp_path: Path) -> None:
    record = create_record(SIGNER, "/ipfs/bafkqaaa", sequence=1, validity=datetime(2100, 1, 1, tzinfo=UTC),
                           ttl_ns=90 * 10**9 + 999_999_999)
    assert _at_now(_store_with(tmp_path, NAME, record), NAME).headers["cache-control"] == "public, max-age=90"


def test_a_negative_ttl_is_cached_for_zero_seconds(tmp_path: Path) -> None:
    record = _unsigned({"Value": b"/ipfs/bafkqaaa", "Validity": b"2100-01-01T00:00:00Z", "ValidityType": 0,
                        "Sequence": 1, "TTL": -60 * 10**9})
    assert _at_now(_store_with(tmp_path, NAME, record), NAME).headers["cache-control"] == "public, max-age=0"


def test_an_unreadable_eol_leaves_the_ttl_uncut(tmp_path: Path) -> None:
    record = _unsigned({"Value": b"/ipfs/bafkqaaa", "Validity": b"next tuesday", "ValidityType": 0,
                        "Sequence": 1, "TTL": 120 * 10**9})
    assert _at_now(_store_with(tmp_path, NAME, record), NAME).headers["cache-control"] == "public, max-age=120"


@pytest.mark.parametrize("record", [
    b"\xff\xff",  # not a protobuf
    encode_entry({"value": b"/ipfs/bafkqaaa", "signatureV1": bytes(64)}),  # V1-only: no DAG-CBOR data
    encode_entry({"signatureV2": bytes(64), "data": dag_cbor.encode([1, 2])}),  # data not a map
    encode_entry({"signatureV2": bytes(64), "data": b"\xff"}),  # data not DAG-CBOR
], ids=["not-protobuf", "v1-only", "data-not-a-map", "data-not-cbor"])
def test_a_record_without_readable_dag_cbor_data_is_a_500(tmp_path: Path, record: bytes) -> None:
    got = _at_now(_store_with(tmp_path, NAME, record), NAME)
    assert got.status_code == 500 and "IPNS record" in got.text
