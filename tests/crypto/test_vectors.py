"""Walk fixtures/vectors/encryption/: every vector is checked in both directions where it can be."""

from __future__ import annotations

import io
from typing import Any

import pytest

from bundlekit import crypto
from bundlekit.crypto import _stream
from bundlekit.crypto._keys import parse_signature_hex
from bundlekit.crypto.threews import _threews_encrypt, threews_decrypt, threews_key
from bundlekit.errors import HeaderDecryptionError, KeySourceError, PayloadDecryptionError, WrongKeyError

from .conftest import EXPECTED, FixedRandom, load_vectors, spec_of, vector_ciphertext, vector_plaintext

VECTORS = load_vectors()
FAILURES = {
    "header failure": HeaderDecryptionError,
    "payload failure": PayloadDecryptionError,
    "wrong key": WrongKeyError,
    "key source failure": KeySourceError,
}


def by_format(fmt: str) -> list[Any]:
    return [pytest.param(v, id=v["scenario"]) for v in VECTORS if v["format"] == fmt]


def test_the_vector_folder_covers_every_expected_result() -> None:
    assert {v["expected"] for v in VECTORS} == EXPECTED
    assert all(v["why"] for v in VECTORS)


@pytest.mark.parametrize("vector", by_format("bundlekit-enc/1"))
def test_bundlekit_enc_vector_decrypts_or_fails_as_expected(vector: dict[str, Any]) -> None:
    spec = spec_of(vector.get("open_with", vector["key_source"]))
    expected = vector["expected"]
    if expected in ("wrong key", "key source failure"):
        with pytest.raises(FAILURES[expected]):
            spec.open_bundle_key(vector["encryption"], vector["namespace"])
        return
    key = spec.open_bundle_key(vector["encryption"], vector["namespace"])
    if expected == "success":
        assert crypto.decrypt_bytes(vector_ciphertext(vector), key, vector["path"]) == vector_plaintext(vector)
    else:
        with pytest.raises(FAILURES[expected]):
            crypto.decrypt_bytes(vector_ciphertext(vector), key, vector["path"])


@pytest.mark.parametrize("vector", [p for p in by_format("bundlekit-enc/1") if p.values[0]["expected"] == "success"])
def test_bundlekit_enc_vector_encrypts_to_its_exact_bytes(vector: dict[str, Any]) -> None:
    bundle_rng = FixedRandom(bytes.fromhex(vector["bundle_random_hex"]))
    key, params = spec_of(vector["key_source"]).new_bundle_key(vector["namespace"], bundle_rng)
    assert params == vector["encryption"]
    file_rng = FixedRandom(bytes.fromhex(vector["file_random_hex"]))
    out = io.BytesIO()
    crypto._encrypt_stream(io.BytesIO(vector_plaintext(vector)), out, key, vector["path"], file_rng)
    assert out.getvalue() == vector_ciphertext(vector)
    assert bundle_rng.left == b"" and file_rng.left == b""


@pytest.mark.parametrize("vector", by_format("key-derivation"))
def test_key_derivation_vector_gives_the_expected_manifest(vector: dict[str, Any]) -> None:
    rng = FixedRandom(bytes.fromhex(vector["bundle_random_hex"]))
    if vector["expected"] == "key source failure":
        with pytest.raises(KeySourceError):
            spec_of(vector["key_source"]).new_bundle_key(vector["namespace"], rng)
        return
    spec = spec_of(vector["key_source"])
    _, params = spec.new_bundle_key(vector["namespace"], rng)
    assert params == vector["encryption"]
    spec.open_bundle_key(vector["encryption"], vector["namespace"])


@pytest.mark.parametrize("vector", by_format("three.ws"))
def test_threews_vector_decrypts_or_fails_as_expected(vector: dict[str, Any]) -> None:
    key = threews_key(bytes.fromhex(vector["signature_hex"].removeprefix("0x")))
    if vector["expected"] == "success":
        assert threews_decrypt(vector["ciphertext_b64"], key) == vector_plaintext(vector)
        again = _threews_encrypt(vector_plaintext(vector), key, FixedRandom(bytes.fromhex(vector["iv_hex"])))
        assert again == vector["ciphertext_b64"]
    else:
        with pytest.raises(FAILURES[vector["expected"]]):
            threews_decrypt(vector["ciphertext_b64"], key)


def test_multi_chunk_vectors_really_span_several_chunks() -> None:
    big = next(v for v in VECTORS if v["scenario"] == "success-three-chunks")
    body = len(vector_ciphertext(big)) - crypto.HEADER_SIZE
    assert -(-body // _stream.ENCRYPTED_CHUNK_SIZE) == 3


def test_signature_vectors_hold_a_real_eth_account_signature() -> None:
    # Through the library's importer, which puts back the recursion limit py_ecc raises to 100000: past
    # the default, a later test's deeply nested JSON in this process overflows the C stack (a crash).
    from bundlekit.crypto._keys import eth_account_api

    Account, encode_defunct = eth_account_api("the vector test")
    vector = next(v for v in VECTORS if v["scenario"] == "key-signature-v27")
    signer = next(v for v in VECTORS if v["scenario"] == "key-private-key-signer")["key_source"]
    sig = parse_signature_hex(vector["key_source"]["signature_hex"], where="the vector")
    address = Account.recover_message(encode_defunct(text=signer["message"]), signature=sig)
    assert address == Account.from_key(signer["private_key_hex"]).address
