"""IPNS resolution never goes back: the newest record of the store and every gateway, remembered, no path dropped.

The reproduction (issue 24, item 9): the local store held sequence 1, a gateway served a
valid sequence 0, and ``name resolve NAME --gateway G`` and ``load ipns://NAME/... --gateway G``
followed sequence 0 (the store was not asked once a gateway was given); a value
``/ipfs/CID/sub`` resolved to CID. The rules are boxo's (github.com/ipfs/boxo ``ipns/record.go``
``compare``, ``ipns/validation.go`` ``selectRecord``, commit d5aa650e) plus a memory of the
newest record seen (specs/provenance.md 4.5). The npm records are fixtures/vectors/ipns/ (npm
ipns@10.1.6, ``generate.py``); the rest are bundlekit's own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.load import load_bundle
from bundlekit.bundle.sources import Gateways
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import SignatureError
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory import Memory
from bundlekit.names import resolve
from bundlekit.names.record import create_record, name_from_key
from bundlekit.net.fetch import parse_gateway

from .conftest import child_env

VECTORS = Path(__file__).resolve().parents[2] / "fixtures" / "vectors" / "ipns"
SIGNER = Ed25519Signer.from_seed(bytes([7]) * 32)  # key "a" of the vectors
NAME = name_from_key(SIGNER.public)
CID_A = "bafkreidfdrlkeq4m4xnxuyx6iae76fdm4wgl5d4xzsb77ixhyqwumhz244"
CID_B = "bafkqaddwgevxmmraojswg33smq"
FUTURE = datetime(2100, 1, 1, tzinfo=UTC)
PAST = datetime(2020, 1, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> BlockStore:
    """The local store (``$BUNDLEKIT_HOME``) every resolution here asks, empty at first."""
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    for var in ("BUNDLEKIT_GATEWAYS", "BUNDLEKIT_KUBO_URL"):
        monkeypatch.delenv(var, raising=False)
    return BlockStore(tmp_path / "home", fsync=False)


def npm(scenario: str) -> bytes:
    """A record js-ipns made (fixtures/vectors/ipns/<scenario>.json)."""
    return bytes.fromhex(json.loads((VECTORS / f"{scenario}.json").read_text())["record"])


def ours(value: str, sequence: int, validity: datetime = FUTURE) -> bytes:
    return create_record(SIGNER, value, sequence=sequence, validity=validity, ttl_ns=1)


def gateway_store(tmp_path: Path, label: str, record: bytes) -> BlockStore:
    store = BlockStore(tmp_path / label, fsync=False)
    store.put_record(NAME, record)
    return store


def test_a_gateway_serving_an_older_record_than_the_store_is_not_followed(tmp_path: Path, home: BlockStore) -> None:
    home.put_record(NAME, ours(f"/ipfs/{CID_B}", 1))
    with serve_in_thread(store=gateway_store(tmp_path, "g", ours(f"/ipfs/{CID_A}", 0))) as gateway:
        found = resolve(NAME, gateways=[parse_gateway(gateway.url)])
    assert (cid_to_str(found.cid), found.record.sequence, found.sources) == (CID_B, 1, ["store"])
    assert any("older record (sequence 0 < 1)" in note for note in found.notes)


def test_cli_name_resolve_with_a_gateway_keeps_the_stores_newer_record(tmp_path: Path, home: BlockStore) -> None:
    home.put_record(NAME, ours(f"/ipfs/{CID_B}", 1))
    env = child_env()
    env["BUNDLEKIT_HOME"] = str(home.root)
    with serve_in_thread(store=gateway_store(tmp_path, "g", ours(f"/ipfs/{CID_A}", 0))) as gateway:
        done = subprocess.run([sys.executable, "-m", "bundlekit", "name", "resolve", NAME, "--gateway", gateway.url],
                              capture_output=True, text=True, env=env, check=False, timeout=60)
    assert (done.returncode, done.stdout) == (0, CID_B + "\n")


def test_load_ipns_with_a_gateway_loads_the_stores_newer_record(tmp_path: Path, home: BlockStore) -> None:
    roots = []
    gateway = BlockStore(tmp_path / "g", fsync=False)
    for label in ("old", "new"):
        tree = tmp_path / label
        Memory(tree, clock=lambda: FUTURE - timedelta(days=1)).write(
            "which", name=label, description="d", type="user", body=f"the {label} bundle")
        built = build_bundle(tree, tmp_path / f"{label}.car", options=BuildOptions(created=PAST))
        with open(built.car, "rb") as fh:
            gateway.import_car(fh)
        roots.append(built.root)
    gateway.put_record(NAME, ours(f"/ipfs/{cid_to_str(roots[0])}", 0))
    home.put_record(NAME, ours(f"/ipfs/{cid_to_str(roots[1])}", 1))
    with serve_in_thread(store=gateway) as served:
        result = load_bundle(f"ipns://{NAME}/manifest.json", source=Gateways([served.url]))
    assert result.root == roots[1]


def test_the_newest_record_a_gateway_served_is_remembered_in_the_store(tmp_path: Path, home: BlockStore) -> None:
    with serve_in_thread(store=gateway_store(tmp_path, "new", npm("npm-v1-v2"))) as newer:
        assert resolve(NAME, gateways=[parse_gateway(newer.url)]).record.sequence == 4
    assert home.get_record(NAME) == npm("npm-v1-v2")
    with serve_in_thread(store=gateway_store(tmp_path, "old", npm("npm-v2-only"))) as older:
        found = resolve(NAME, gateways=[parse_gateway(older.url)])
    assert (found.record.sequence, found.sources) == (4, ["store"])


def test_an_older_record_is_never_written_over_a_newer_one_kept(home: BlockStore) -> None:
    home.put_record(NAME, npm("bundlekit-other-cid"))  # sequence 8
    found = resolve(NAME, store=home)
    assert found.record.sequence == 8
    assert home.put_record(NAME, npm("npm-v2-only"), keep=lambda kept: True) is False
    assert home.get_record(NAME) == npm("bundlekit-other-cid")


def test_an_expired_newest_record_in_the_store_refuses_an_older_valid_one(tmp_path: Path, home: BlockStore) -> None:
    home.put_record(NAME, ours(f"/ipfs/{CID_B}", 9, PAST))
    with serve_in_thread(store=gateway_store(tmp_path, "g", npm("npm-v1-v2"))) as gateway, \
            pytest.raises(SignatureError, match=r"expired .*sequence 9.*older records \(sequence 4\) are refused"):
        resolve(NAME, gateways=[parse_gateway(gateway.url)])


def test_an_expired_newer_record_from_one_gateway_refuses_an_older_valid_one_from_another(tmp_path: Path) -> None:
    with serve_in_thread(store=gateway_store(tmp_path, "a", npm("npm-v2-only"))) as valid, \
            serve_in_thread(store=gateway_store(tmp_path, "b", npm("npm-expired"))) as expired, \
            pytest.raises(SignatureError, match=r"expired .*sequence 5"):
        resolve(NAME, gateways=[parse_gateway(valid.url), parse_gateway(expired.url)])


def test_equal_sequences_with_other_values_resolve_the_same_whatever_the_gateway_order(tmp_path: Path) -> None:
    first = gateway_store(tmp_path, "x", npm("npm-v2-only"))
    second = gateway_store(tmp_path, "y", npm("npm-same-sequence"))
    winners = set()
    with serve_in_thread(store=first) as x, serve_in_thread(store=second) as y:
        for order in ([x, y], [y, x]):
            store = BlockStore(tmp_path / f"home-{len(winners)}-{order[0].url[-5:]}", fsync=False)
            found = resolve(NAME, gateways=[parse_gateway(g.url) for g in order], store=store)
            winners.add(cid_to_str(found.cid))
            assert any("same sequence 3" in note for note in found.notes)
    # Same sequence and validity: boxo takes the greater record bytes, here npm-same-sequence's.
    assert winners == {CID_B} and npm("npm-same-sequence") > npm("npm-v2-only")


def test_a_later_validity_wins_at_an_equal_sequence(home: BlockStore) -> None:
    home.put_record(NAME, ours(f"/ipfs/{CID_B}", 3, FUTURE - timedelta(days=1)))
    with serve_in_thread(store=gateway_store(home.root.parent, "g", ours(f"/ipfs/{CID_A}", 3))) as gateway:
        found = resolve(NAME, gateways=[parse_gateway(gateway.url)])
    assert cid_to_str(found.cid) == CID_A and home.get_record(NAME) == ours(f"/ipfs/{CID_A}", 3)


def test_a_value_with_a_path_inside_the_dag_is_refused_not_cut_to_its_cid(home: BlockStore) -> None:
    home.put_record(NAME, npm("npm-path-value"))
    found = resolve(NAME, store=home)
    assert found.record.value == f"/ipfs/{CID_A}/sub"
    with pytest.raises(SignatureError, match="a path inside a DAG"):
        _ = found.cid


def test_load_of_a_name_whose_value_has_a_path_is_refused(home: BlockStore) -> None:
    home.put_record(NAME, npm("npm-path-value"))
    with pytest.raises(SignatureError, match="a path inside a DAG"):
        load_bundle(f"ipns://{NAME}/manifest.json", source=Gateways(["http://127.0.0.1:9"]))


@pytest.mark.parametrize("value", [f"/ipfs/{CID_A}\n", f"/ipfs/{CID_A}/sub\n", f"/ipfs/ {CID_A}", f"/ipfs/{CID_A}\x00"])
def test_a_value_with_white_space_or_control_characters_is_refused(home: BlockStore, value: str) -> None:
    home.put_record(NAME, ours(value, 1))
    with pytest.raises(SignatureError, match="points at"):
        _ = resolve(NAME, store=home).cid


def test_a_value_with_one_trailing_slash_is_the_root(home: BlockStore) -> None:
    home.put_record(NAME, ours(f"/ipfs/{CID_A}/", 1))
    assert cid_to_str(resolve(NAME, store=home).cid) == CID_A


def _signed_data(fields: dict[str, object]) -> bytes:
    """A record whose DAG-CBOR data is ``fields``, signed by the name's key (what only its owner can make)."""
    import dag_cbor

    from bundlekit.names.record import SIGNATURE_PREFIX, encode_entry

    data = dag_cbor.encode(fields)
    return encode_entry({"signatureV2": SIGNER.sign(SIGNATURE_PREFIX + data), "data": data})


@pytest.mark.parametrize("key", ["Sequence", "TTL"])
def test_a_negative_sequence_or_ttl_is_refused_as_not_uint64(home: BlockStore, key: str) -> None:
    fields: dict[str, object] = {"Value": f"/ipfs/{CID_A}".encode(), "Validity": b"2100-01-01T00:00:00.000000000Z",
                                 "ValidityType": 0, "Sequence": 1, "TTL": 1}
    fields[key] = -1
    home.put_record(NAME, _signed_data(fields))
    with pytest.raises(SignatureError, match=f"{key} -1 is not an unsigned 64-bit integer"):
        resolve(NAME, store=home)


def test_publishing_past_the_last_sequence_number_is_a_usage_error_not_a_traceback(tmp_path: Path,
                                                                                    home: BlockStore) -> None:
    last = create_record(SIGNER, f"/ipfs/{CID_A}", sequence=2**64 - 1, validity=FUTURE, ttl_ns=1)
    home.put_record(NAME, last)
    key = tmp_path / "k.pem"
    SIGNER.write(key)
    env = child_env()
    env["BUNDLEKIT_HOME"] = str(home.root)
    done = subprocess.run([sys.executable, "-m", "bundlekit", "name", "publish", "--key-file", str(key), CID_B],
                          capture_output=True, text=True, env=env, check=False, timeout=60)
    assert done.returncode == 2 and "has used every sequence number" in done.stderr
    assert "Traceback" not in done.stderr and home.get_record(NAME) == last


def test_resolutions_racing_to_remember_keep_the_newest(tmp_path: Path, home: BlockStore) -> None:
    import threading

    errors: list[BaseException] = []
    with serve_in_thread(store=gateway_store(tmp_path, "3", npm("npm-v2-only"))) as older, \
            serve_in_thread(store=gateway_store(tmp_path, "4", npm("npm-v1-v2"))) as newer:

        def one(url: str) -> None:
            try:
                resolve(NAME, gateways=[parse_gateway(url)], store=home)
            except BaseException as exc:  # a refusal (older than the store) is fine; anything else is not
                if not isinstance(exc, SignatureError):
                    errors.append(exc)

        threads = [threading.Thread(target=one, args=(url,)) for url in [older.url, newer.url] * 6]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == [] and home.get_record(NAME) == npm("npm-v1-v2")
