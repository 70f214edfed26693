"""Shared helpers for the encryption tests: the fixed random source and the vector folder."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from bundlekit.crypto._keys import (
    KeySpec,
    PassphraseKey,
    PrivateKeySigner,
    RawKeyFile,
    SignatureKey,
    parse_signature_hex,
)

VECTOR_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "vectors" / "encryption"
EXPECTED = {"success", "header failure", "payload failure", "wrong key", "key source failure"}


class FixedRandom:
    """An rng seam that hands out the given bytes in order; ``left`` shows what was not used."""

    def __init__(self, data: bytes) -> None:
        self.left = data

    def __call__(self, n: int) -> bytes:
        assert n <= len(self.left), "fixed random source exhausted"
        out, self.left = self.left[:n], self.left[n:]
        return out


def load_vectors() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(VECTOR_DIR.glob("*.json"))]


def vector_plaintext(vector: dict[str, Any]) -> bytes:
    field = vector["plaintext"]
    if "hex" in field:
        return bytes.fromhex(field["hex"])
    assert field["pattern"] == "byte i is i % 251"
    return bytes(i % 251 for i in range(field["length"]))


def vector_ciphertext(vector: dict[str, Any]) -> bytes:
    return base64.b64decode(vector["ciphertext_b64"])


def spec_of(source: dict[str, Any]) -> KeySpec:
    kind = source["kind"]
    if kind == "key-file":
        return RawKeyFile(bytes.fromhex(source["key_hex"]))
    if kind == "passphrase":
        return PassphraseKey(source["passphrase"], scrypt_n=source["scrypt_n"])
    if kind == "signature":
        return SignatureKey(parse_signature_hex(source["signature_hex"], where="the vector"))
    if kind == "private-key":
        return PrivateKeySigner(source["private_key_hex"])
    raise AssertionError(f"unknown key source kind {kind}")


@pytest.fixture
def raw_spec() -> RawKeyFile:
    return RawKeyFile(bytes(range(32)))
