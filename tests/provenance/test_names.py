"""IPNS names: publish to the store, serve at /ipns/, resolve across gateways, load ipns:// (specs/provenance.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import respx

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.load import load_bundle
from bundlekit.bundle.sources import Gateways
from bundlekit.flows.names import routers_from_env
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import LoadError, SignatureError, UsageError
from bundlekit.gateway.server import serve_in_thread
from bundlekit.names import PublishTargets, RecordTerms, create_name, parse_duration, publish, resolve
from bundlekit.names.record import create_record, name_from_key
from bundlekit.net.fetch import parse_gateway

from .conftest import CREATED, make_tree

CID_A = bytes.fromhex("01551220") + bytes(32)
FUTURE = datetime(2100, 1, 1, tzinfo=UTC)


def _store(tmp_path: Path, label: str) -> BlockStore:
    return BlockStore(tmp_path / label, fsync=False)


def test_create_writes_a_new_key_and_prints_its_k51_name(tmp_path: Path) -> None:
    name, generated = create_name(tmp_path / "k.pem")
    assert generated and name.startswith("k51") and (tmp_path / "k.pem").stat().st_mode & 0o777 == 0o600
    assert create_name(tmp_path / "k.pem") == (name, False)


def test_publish_sequence_is_one_above_the_last_kept(tmp_path: Path, ed_key: tuple[Path, Ed25519Signer]) -> None:
    store = _store(tmp_path, "s")
    first = publish(ed_key[0], CID_A, store=store)
    second = publish(ed_key[0], CID_A, store=store)
    assert (first.sequence, second.sequence) == (0, 1) and first.name == name_from_key(ed_key[1].public)
    assert store.get_record(first.name) == second.record


def test_publish_continues_the_highest_sequence_a_gateway_serves(tmp_path: Path,
                                                                 ed_key: tuple[Path, Ed25519Signer]) -> None:
    # A fresh machine (a CI runner) keeps no record; the published one is sequence 7 elsewhere.
    elsewhere = _store(tmp_path, "elsewhere")
    name = name_from_key(ed_key[1].public)
    elsewhere.put_record(name, create_record(ed_key[1], "/ipfs/bafkqaaa", sequence=7,
                                             validity=datetime(2000, 1, 1, tzinfo=UTC), ttl_ns=1))  # expired: still used
    other = Ed25519Signer.from_seed(bytes([9]) * 32)
    forged = _store(tmp_path, "forged")
    forged.put_record(name, create_record(other, "/ipfs/bafkqaaa", sequence=99, validity=FUTURE, ttl_ns=1))
    with serve_in_thread(store=elsewhere) as good, serve_in_thread(store=forged) as bad:
        out = publish(ed_key[0], CID_A, store=_store(tmp_path, "fresh"),
                      targets=PublishTargets(gateways=[parse_gateway(bad.url), parse_gateway(good.url),
                                                      parse_gateway("http://127.0.0.1:9")]))
    assert out.sequence == 8  # the forged record's 99 does not verify against the name: ignored


def test_publish_hands_the_record_to_routers_after_the_store(tmp_path: Path,
                                                             ed_key: tuple[Path, Ed25519Signer]) -> None:
    seen: list[tuple[str, bytes]] = []
    out = publish(ed_key[0], CID_A, store=_store(tmp_path, "s"),
                  targets=PublishTargets(routers=[("test", lambda n, r: seen.append((n, r)))]))
    assert seen == [(out.name, out.record)] and out.routers == ["store", "test"]


def test_kubo_router_puts_the_record_with_routing_put(tmp_path: Path, ed_key: tuple[Path, Ed25519Signer],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_KUBO_URL", "http://kubo.test:5001")
    with respx.mock:
        route = respx.post("http://kubo.test:5001/api/v0/routing/put").mock(return_value=httpx.Response(200, text=""))
        out = publish(ed_key[0], CID_A, store=_store(tmp_path, "s"),
                      targets=PublishTargets(routers=routers_from_env()))
    request = route.calls.last.request
    assert request.url.params["arg"] == f"/ipns/{out.name}" and out.record in request.content
    assert out.routers == ["store", "kubo"]


def test_gateway_serves_the_kept_record_as_ipns_record(tmp_path: Path, ed_key: tuple[Path, Ed25519Signer]) -> None:
    store = _store(tmp_path, "s")
    out = publish(ed_key[0], CID_A, store=store)
    with serve_in_thread(store=store) as server:
        got = httpx.get(f"{server.url}/ipns/{out.name}", headers={"Accept": "application/vnd.ipfs.ipns-record"})
        missing = httpx.get(f"{server.url}/ipns/{name_from_key(bytes(32))}?format=ipns-record")
    assert got.status_code == 200 and got.content == out.record
    assert got.headers["content-type"] == "application/vnd.ipfs.ipns-record"
    assert missing.status_code == 404


def test_gateway_still_refuses_ipns_paths_asked_as_content(tmp_path: Path,
                                                           ed_key: tuple[Path, Ed25519Signer]) -> None:
    store = _store(tmp_path, "s")
    out = publish(ed_key[0], CID_A, store=store)
    with serve_in_thread(store=store) as server:
        got = httpx.get(f"{server.url}/ipns/{out.name}")
    assert got.status_code == 501 and "ipns-record" in got.text


def test_resolve_takes_the_highest_sequence_and_notes_a_lower_one_from_a_second_gateway(
    tmp_path: Path, ed_key: tuple[Path, Ed25519Signer]
) -> None:
    newer, older = _store(tmp_path, "new"), _store(tmp_path, "old")
    name = name_from_key(ed_key[1].public)
    older.put_record(name, create_record(ed_key[1], "/ipfs/bafkqaaa", sequence=4, validity=FUTURE, ttl_ns=1))
    newer.put_record(name, create_record(ed_key[1], "/ipfs/bafkqaaa", sequence=5, validity=FUTURE, ttl_ns=1))
    with serve_in_thread(store=older) as first, serve_in_thread(store=newer) as second:
        found = resolve(name, gateways=[parse_gateway(first.url), parse_gateway(second.url)])
    assert found.record.sequence == 5 and found.sources == [second.url.rstrip("/")]
    assert any("older record (sequence 4 < 5)" in note for note in found.notes)


def test_expired_record_is_refused(tmp_path: Path, ed_key: tuple[Path, Ed25519Signer]) -> None:
    store = _store(tmp_path, "s")
    publish(ed_key[0], CID_A, store=store,
            terms=RecordTerms(lifetime=timedelta(hours=1), now=lambda: datetime(2020, 1, 1, tzinfo=UTC)))
    with pytest.raises(SignatureError, match="expired"):
        resolve(name_from_key(ed_key[1].public), store=store)


def test_record_signed_by_another_key_is_refused(tmp_path: Path, ed_key: tuple[Path, Ed25519Signer]) -> None:
    store = _store(tmp_path, "s")
    name = name_from_key(ed_key[1].public)
    other = Ed25519Signer.from_seed(bytes([9]) * 32)
    store.put_record(name, create_record(other, "/ipfs/bafkqaaa", sequence=9, validity=FUTURE, ttl_ns=1))
    with pytest.raises(SignatureError, match="not signed by the name's key"):
        resolve(name, store=store)


def test_tampered_record_loses_to_a_valid_one(tmp_path: Path, ed_key: tuple[Path, Ed25519Signer]) -> None:
    good, bad = _store(tmp_path, "good"), _store(tmp_path, "bad")
    name = name_from_key(ed_key[1].public)
    good.put_record(name, create_record(ed_key[1], "/ipfs/bafkqaaa", sequence=1, validity=FUTURE, ttl_ns=1))
    tampered = bytearray(create_record(ed_key[1], "/ipfs/bafkqaaa", sequence=9, validity=FUTURE, ttl_ns=1))
    tampered[2] ^= 1
    bad.put_record(name, bytes(tampered))
    with serve_in_thread(store=bad) as first, serve_in_thread(store=good) as second:
        found = resolve(name, gateways=[parse_gateway(first.url), parse_gateway(second.url)])
    assert found.record.sequence == 1 and any("not signed" in note for note in found.notes)


def test_load_ipns_uri_loads_the_cid_the_record_names(tmp_path: Path, ed_key: tuple[Path, Ed25519Signer]) -> None:
    store = _store(tmp_path, "s")
    a = build_bundle(make_tree(tmp_path / "a"), tmp_path / "a.car", options=BuildOptions(created=CREATED))
    b = build_bundle(make_tree(tmp_path / "b", extra={"project_b": "only in b"}), tmp_path / "b.car",
                     options=BuildOptions(created=CREATED))
    for car in (a.car, b.car):
        with open(car, "rb") as fh:
            store.import_car(fh)
    published = publish(ed_key[0], b.root, store=store)  # the record names B, not A
    with serve_in_thread(store=store) as server:
        result = load_bundle(f"ipns://{published.name}/manifest.json", source=Gateways([server.url]))
    assert result.root == b.root and "project_b.md" in result.files
    assert any(note.startswith(f"resolved ipns://{published.name} to {b.root_cid}") for note in result.notes)


def test_parse_duration_reads_go_durations() -> None:
    assert parse_duration("720h") == timedelta(hours=720) and parse_duration("1h30m") == timedelta(minutes=90)
    with pytest.raises(UsageError):
        parse_duration("3 days")


def test_a_duration_too_long_for_a_timedelta_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="too long"):
        parse_duration("99999999999999h")


def test_a_lifetime_past_the_year_9999_is_a_usage_error(tmp_path: Path, ed_key: tuple[Path, Ed25519Signer]) -> None:
    key_file, _ = ed_key
    store = BlockStore(tmp_path / "store")
    with pytest.raises(UsageError, match="9999"):
        publish(key_file, bytes.fromhex("01701220" + "00" * 32),
                terms=RecordTerms(lifetime=timedelta(days=999_999_999)), store=store)
    assert store.get_record(name_from_key(ed_key[1].public)) is None


def test_a_ttl_beyond_64_bits_of_nanoseconds_is_a_usage_error(tmp_path: Path, ed_key: tuple[Path, Ed25519Signer]) -> None:
    with pytest.raises(UsageError, match="TTL"):
        publish(ed_key[0], bytes.fromhex("01701220" + "00" * 32),
                terms=RecordTerms(ttl=timedelta(hours=99_999_999)),
                store=BlockStore(tmp_path / "store"))


def test_no_record_anywhere_says_the_local_store_was_asked(tmp_path: Path, ed_key: tuple[Path, Ed25519Signer]) -> None:
    with pytest.raises(LoadError, match="the local store .* keeps none"):
        resolve(name_from_key(ed_key[1].public), store=_store(tmp_path, "empty"))
