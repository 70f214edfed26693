"""An independent reader written from specs/encryption.md alone, run over every vector.

It uses only the standard library's HMAC, SHA-256 and scrypt and a bare AES-GCM, none of
bundlekit's code, so if the spec and the implementation drift apart these tests fail.
"""

from __future__ import annotations

import hashlib
import hmac
import unicodedata
from typing import Any

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .conftest import load_vectors, vector_ciphertext, vector_plaintext

N_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


class Header(Exception):
    pass


class Payload(Exception):
    pass


class Wrong(Exception):
    pass


def hkdf(ikm: bytes, salt: bytes | None, info: bytes, length: int) -> bytes:
    prk = hmac.new(salt or bytes(32), ikm, hashlib.sha256).digest()
    out, block, i = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([i]), hashlib.sha256).digest()
        out += block
        i += 1
    return out[:length]


def signature_ikm(hex_text: str) -> bytes:
    sig = bytes.fromhex(hex_text.strip().removeprefix("0x"))
    assert len(sig) == 65
    r, s, v = sig[:32], int.from_bytes(sig[32:64], "big"), sig[64]
    v = v + 27 if v in (0, 1) else v
    if s > N_ORDER // 2:
        s, v = N_ORDER - s, 55 - v
    return r + s.to_bytes(32, "big") + bytes([v])


def bundle_key(source: dict[str, Any], params: dict[str, Any], namespace: str) -> tuple[bytes, bytes]:
    salt = bytes.fromhex(params["salt"])
    kind = source["kind"]
    if kind == "key-file":
        ikm = bytes.fromhex(source["key_hex"])
    elif kind == "signature":
        ikm = signature_ikm(source["signature_hex"])
    else:
        kdf = params["kdf"]
        ikm = hashlib.scrypt(unicodedata.normalize("NFC", source["passphrase"]).encode(), salt=salt,
                             n=kdf["n"], r=kdf["r"], p=kdf["p"], maxmem=2**27, dklen=32)
    name = params["key_source"].encode()
    key = hkdf(ikm, salt, b"bundlekit-enc/1 bundle key\x00" + name + b"\x00" + namespace.encode(), 32)
    if not hmac.compare_digest(hkdf(key, None, b"bundlekit-enc/1 key commitment", 32),
                               bytes.fromhex(params["commitment"])):
        raise Wrong
    return key, hkdf(key, None, b"bundlekit-enc/1 key id", 16)


def decrypt(data: bytes, key: bytes, key_id: bytes, path: str) -> bytes:
    p = path.encode()
    header = data[:65]
    if len(header) < 65 or header[:5] != b"BKENC" or header[5] != 1 or header[6:10] != (65536).to_bytes(4, "big"):
        raise Header
    salt, prefix = header[10:26], header[26:33]
    okm = hkdf(key, salt, b"bundlekit-enc/1 file\x00" + key_id + p, 64)
    if not hmac.compare_digest(hmac.new(okm[:32], header[:33], hashlib.sha256).digest(), header[33:]):
        raise Header
    aead, ad = AESGCM(okm[32:]), header + key_id + p
    body = data[65:]
    pieces = [body[i : i + 65552] for i in range(0, len(body), 65552)] or [b""]
    out = b""
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        if len(piece) < 16 or (last and i > 0 and len(piece) == 16):
            raise Payload
        try:
            out += aead.decrypt(prefix + i.to_bytes(4, "big") + (b"\x01" if last else b"\x00"), piece, ad)
        except InvalidTag:
            raise Payload from None
    return out


RESULT = {"header failure": Header, "payload failure": Payload, "wrong key": Wrong}
VECTORS = [
    pytest.param(v, id=v["scenario"])
    for v in load_vectors()
    if v["format"] == "bundlekit-enc/1" and v["expected"] != "key source failure"
]


@pytest.mark.parametrize("vector", VECTORS)
def test_an_independent_reader_of_the_spec_agrees_with_the_vector(vector: dict[str, Any]) -> None:
    source = vector.get("open_with", vector["key_source"])
    try:
        key, key_id = bundle_key(source, vector["encryption"], vector["namespace"])
        assert key_id.hex() == vector["encryption"]["key_id"]
        plain = decrypt(vector_ciphertext(vector), key, key_id, vector["path"])
    except (Header, Payload, Wrong) as exc:
        assert RESULT[vector["expected"]] is type(exc)
        return
    assert vector["expected"] == "success"
    assert plain == vector_plaintext(vector)


def test_an_independent_three_ws_reader_agrees_with_the_vector() -> None:
    vector = next(v for v in load_vectors() if v["scenario"] == "threews-success")
    import base64

    ikm = hashlib.sha256(signature_ikm(vector["signature_hex"])).digest()
    key = hkdf(ikm, bytes(32), b"agent-3d-memory-aes-gcm", 32)
    raw = base64.b64decode(vector["ciphertext_b64"])
    assert AESGCM(key).decrypt(raw[:12], raw[12:], None) == vector_plaintext(vector)
