"""The C2SP age test vectors (github.com/C2SP/CCTV, ``age/testdata`` at
1e3d2860d46e94e777e1b17c7a6f2436387e3ecc, committed under ``fixtures/vectors/age``) against
``bundlekit/crypto/age.py``: each vector's expected class (success, armor, header, no match, HMAC,
payload failure) is the class of the step that fails, and the plaintext released before a payload
failure hashes to the vector's ``payload``. Armored vectors also round-trip through ``armor``."""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

import pytest

from bundlekit.crypto import _bech32, age
from bundlekit.errors import HeaderDecryptionError, PayloadDecryptionError, WrongKeyError

VECTORS = Path(__file__).resolve().parents[2] / "fixtures" / "vectors" / "age"
NAMES = sorted(p.name for p in VECTORS.iterdir() if p.name != "SOURCE.md")
# Vectors for recipient types bundlekit does not read: only their armor is checked.
ARMOR_ONLY = {"armor_hybrid", "armor_scrypt"}
BIG = 1 << 26


def load(name: str) -> tuple[dict[str, str], list[str], bytes]:
    head, _, body = (VECTORS / name).read_bytes().partition(b"\n\n")
    meta: dict[str, str] = {}
    identities = []
    for line in head.decode("utf-8").splitlines():
        field, _, value = line.partition(": ")
        if field == "identity":
            identities.append(value)
        else:
            meta[field] = value
    if meta.get("compressed") == "zlib":
        body = zlib.decompress(body)
    return meta, identities, body


def decrypt(body: bytes, identities: list[str], released: list[bytes]) -> str:
    """Run each step in turn; the class of the first that fails (``success`` if none)."""
    keys = [age.X25519Identity(data) for hrp, data in map(_bech32.decode, identities) if hrp == "age-secret-key-"]
    try:
        header, offset = age.parse_header(body, max_stanzas=64, max_bytes=1 << 20)
    except HeaderDecryptionError:
        return "header failure"
    try:
        file_key, _ = age.unwrap_file_key(header, keys)
    except WrongKeyError:
        return "no match"
    except HeaderDecryptionError:
        return "header failure"
    try:
        age.check_mac(header, file_key)
    except HeaderDecryptionError:
        return "HMAC failure"
    try:
        released.extend(age.open_payload(file_key, body[offset:]))
    except HeaderDecryptionError:
        return "header failure"
    except PayloadDecryptionError:
        return "payload failure"
    return "success"


def test_the_committed_vectors_are_all_there() -> None:
    assert len(NAMES) == 101 and {"x25519", "x25519_low_order", "hmac_bad", "stream_two_chunks"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_each_vector_fails_exactly_where_it_says(name: str) -> None:
    meta, identities, body = load(name)
    expected = meta["expect"]
    if meta.get("armored") == "yes":
        try:
            body = age.dearmor(body, max_bytes=BIG)
        except HeaderDecryptionError:
            assert expected == "armor failure"
            return
        assert expected != "armor failure"
        if name in ARMOR_ONLY:
            return
    released: list[bytes] = []
    assert decrypt(body, identities, released) == expected
    if "payload" in meta:
        assert hashlib.sha256(b"".join(released)).hexdigest() == meta["payload"]


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("armor_")])
def test_an_armored_vector_that_decodes_armors_back_to_its_canonical_text(name: str) -> None:
    meta, _, body = load(name)
    if meta["expect"] == "armor failure":
        return
    data = age.dearmor(body, max_bytes=BIG)
    text = age.armor(data)
    assert age.dearmor(text, max_bytes=BIG) == data
    assert text.encode("ascii") == body.strip().replace(b"\r\n", b"\n") + b"\n" or not data
