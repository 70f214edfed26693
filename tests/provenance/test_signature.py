"""Signed manifests: signature.json, --publisher, signatures that do not cover the manifest (specs/provenance.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.load import LoadOptions, load_bundle
from bundlekit.bundle.signature import ExternalSignature, manifest_message, sign_manifest
from bundlekit.crypto.signing import Ed25519Signer, EthSigner, did_key, did_key_public
from bundlekit.errors import SignatureError
from bundlekit.ipld.bases import BASE58BTC, decode
from bundlekit.ipld.cid import cid_from_text, cid_to_str
from bundlekit.names.record import name_from_key

from .conftest import CREATED, ETH_ADDRESS, ETH_KEY, bundle_files, make_tree, rebundle


def _signed(tree: Path, out: Path, signer: Ed25519Signer | EthSigner | ExternalSignature) -> Path:
    build_bundle(tree, out, sign=signer, options=BuildOptions(created=CREATED))
    return out


def test_signature_file_names_signer_manifest_cid_and_message(tree: Path, tmp_path: Path,
                                                               ed_key: tuple[Path, Ed25519Signer]) -> None:
    result = build_bundle(tree, tmp_path / "b.car", sign=ed_key[1], options=BuildOptions(created=CREATED))
    doc = json.loads(bundle_files(result.car)["signature.json"])
    assert doc["format"] == "bundlekit-signature/1" and doc["scheme"] == "ed25519"
    assert doc["signer"] == ed_key[1].identity and doc["signer"].startswith("did:key:z6Mk")
    assert doc["manifest"] == cid_to_str(result.manifest_cid)
    assert doc["message"] == f"bundlekit manifest signature v1\nmanifest: {doc['manifest']}"


def test_unsigned_build_keeps_its_root_cid(tree: Path, tmp_path: Path) -> None:
    a = build_bundle(tree, tmp_path / "a.car", options=BuildOptions(created=CREATED))
    assert "signature.json" not in bundle_files(a.car) and a.signer is None


def test_load_reports_a_valid_ed25519_signature(tree: Path, tmp_path: Path,
                                                ed_key: tuple[Path, Ed25519Signer]) -> None:
    car = _signed(tree, tmp_path / "b.car", ed_key[1])
    assert load_bundle(str(car)).publisher == ed_key[1].identity


def test_load_with_matching_publisher_succeeds(tree: Path, tmp_path: Path,
                                               ed_key: tuple[Path, Ed25519Signer]) -> None:
    car = _signed(tree, tmp_path / "b.car", ed_key[1])
    result = load_bundle(str(car), options=LoadOptions(publishers=[ed_key[1].identity]))
    assert result.publisher == ed_key[1].identity


def test_eip191_signature_verifies_with_checksummed_or_lowercase_address(tree: Path, tmp_path: Path) -> None:
    car = _signed(tree, tmp_path / "b.car", EthSigner(ETH_KEY))
    lowercase = LoadOptions(publishers=[ETH_ADDRESS.lower()])
    assert load_bundle(str(car), options=lowercase).publisher == ETH_ADDRESS


def test_unsigned_bundle_is_refused_when_a_publisher_is_required(tree: Path, tmp_path: Path) -> None:
    build_bundle(tree, tmp_path / "b.car", options=BuildOptions(created=CREATED))
    out = tmp_path / "out"
    with pytest.raises(SignatureError, match="not signed"):
        load_bundle(str(tmp_path / "b.car"), out_dir=out, options=LoadOptions(publishers=[ETH_ADDRESS]))
    assert not out.exists()


def test_bundle_signed_by_another_identity_is_refused(tree: Path, tmp_path: Path,
                                                      ed_key: tuple[Path, Ed25519Signer]) -> None:
    car = _signed(tree, tmp_path / "b.car", Ed25519Signer.from_seed(bytes([9]) * 32))
    out = tmp_path / "out"
    with pytest.raises(SignatureError, match="signed by did:key") as info:
        load_bundle(str(car), out_dir=out, options=LoadOptions(publishers=[ed_key[1].identity]))
    assert info.value.exit_code == 3 and not out.exists()


def test_tampered_signature_is_an_error_even_without_publisher(tree: Path, tmp_path: Path,
                                                               ed_key: tuple[Path, Ed25519Signer]) -> None:
    files = bundle_files(_signed(tree, tmp_path / "b.car", ed_key[1]))
    doc = json.loads(files["signature.json"])
    sig = bytearray.fromhex(doc["signature"][2:])
    sig[0] ^= 1
    doc["signature"] = "0x" + sig.hex()
    files["signature.json"] = json.dumps(doc).encode()
    with pytest.raises(SignatureError, match="tampered or made by another key"):
        load_bundle(str(rebundle(files, tmp_path / "t.car")))


def test_signature_from_another_key_under_the_claimed_signer_is_refused(tree: Path, tmp_path: Path,
                                                                        ed_key: tuple[Path, Ed25519Signer]) -> None:
    files = bundle_files(_signed(tree, tmp_path / "b.car", Ed25519Signer.from_seed(bytes([9]) * 32)))
    doc = json.loads(files["signature.json"])
    doc["signer"] = ed_key[1].identity  # claims our key; the signature is the other key's
    files["signature.json"] = json.dumps(doc).encode()
    with pytest.raises(SignatureError, match="not did:key"):
        load_bundle(str(rebundle(files, tmp_path / "t.car")),
                    options=LoadOptions(publishers=[ed_key[1].identity]))


def test_signature_moved_onto_another_manifest_is_refused(tmp_path: Path, ed_key: tuple[Path, Ed25519Signer]) -> None:
    a = _signed(make_tree(tmp_path / "a"), tmp_path / "a.car", ed_key[1])
    b = build_bundle(make_tree(tmp_path / "b", extra={"project_x": "other"}), tmp_path / "b.car",
                     options=BuildOptions(created=CREATED))
    files = bundle_files(b.car)
    files["signature.json"] = bundle_files(a)["signature.json"]
    with pytest.raises(SignatureError, match="moved from another bundle"):
        load_bundle(str(rebundle(files, tmp_path / "moved.car")),
                    options=LoadOptions(publishers=[ed_key[1].identity]))


def test_external_eip191_signature_of_the_printed_message_is_accepted(tree: Path, tmp_path: Path) -> None:
    probe = build_bundle(tree, tmp_path / "probe.car", options=BuildOptions(created=CREATED))
    # What a hardware wallet does with the text `bundlekit key message --manifest CID` prints.
    signature = EthSigner(ETH_KEY).sign(manifest_message(probe.manifest_cid).encode())
    car = _signed(tree, tmp_path / "b.car", ExternalSignature(ETH_ADDRESS, signature))
    assert load_bundle(str(car), options=LoadOptions(publishers=[ETH_ADDRESS])).publisher == ETH_ADDRESS


def test_external_signature_of_another_manifest_fails_the_build(tree: Path, tmp_path: Path) -> None:
    signature = EthSigner(ETH_KEY).sign(manifest_message("bafkqaaa").encode())
    with pytest.raises(SignatureError, match="does not verify"):
        build_bundle(tree, tmp_path / "b.car", sign=ExternalSignature(ETH_ADDRESS, signature),
                     options=BuildOptions(created=CREATED))
    assert not (tmp_path / "b.car").exists()


def test_did_key_matches_a_published_ed25519_example() -> None:
    # openwallet-foundation/acapy aries_cloudagent/did/tests/test_dids.py (did-method-key form).
    public = decode("8HH5gYEeNc3z7PYXmd54d4x6qAfCNrqQqEB3nS7Zfu7K", BASE58BTC)
    assert did_key(public) == "did:key:z6MkmjY8GnV5i9YTDtPETC2uUAW6ejw3nk5mXF5yci5ab7th"
    assert did_key_public("did:key:z6MkmjY8GnV5i9YTDtPETC2uUAW6ejw3nk5mXF5yci5ab7th") == public


def test_eth_signer_identity_is_the_eip55_address_of_its_key() -> None:
    assert EthSigner(ETH_KEY).identity == ETH_ADDRESS  # Hardhat's documented account #0


def test_spec_vectors_are_what_the_code_writes() -> None:
    spec = (Path(__file__).resolve().parents[2] / "specs" / "provenance.md").read_text()
    cid = cid_from_text("bafkqaaa")
    for signer in (Ed25519Signer.from_seed(bytes([7]) * 32), EthSigner(ETH_KEY)):
        assert "    " + sign_manifest(cid, signer).decode().rstrip("\n") + "\n" in spec
    assert name_from_key(Ed25519Signer.from_seed(bytes([7]) * 32).public) in spec
