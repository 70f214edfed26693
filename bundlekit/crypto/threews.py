"""The three.ws runtime's encrypted memory file form, read and written for import and export.

That runtime stores each memory file as base64 text of ``iv(12) || AES-256-GCM
ciphertext || tag(16)``, with no associated data, under the key::

    key = HKDF-SHA256(ikm = SHA-256(signature), salt = 32 zero bytes, info = "agent-3d-memory-aes-gcm")

where ``signature`` is the 65-byte EIP-191 personal_sign signature of
``"agent-3d:memory:v1:" + agentId``, its bytes hashed as given (the runtime's
``deriveEncryptionKey`` in ``src/memory/crypto.js`` of ``nirholas/three.ws``;
bundlekit-enc/1 normalises v and s, this form does not). It is weaker than ``bundlekit-enc/1`` on
purpose of compatibility only: nothing binds a file to its name (a file moved
or swapped within one agent's memory still decrypts), there is no key
commitment (a wrong key shows up as a failed file), and the whole file is one
GCM message (held in memory). Use it to bring memories in and out, not as the
format of record. specs/encryption.md, "three.ws compatibility", has the details.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from typing import TYPE_CHECKING, Final

from cryptography.exceptions import InvalidTag

from bundlekit._lazy import lazy_module
from bundlekit.crypto._keys import KeySpec, PrivateKeySigner, Rng, SignatureKey, _hkdf, normalize_signature
from bundlekit.errors import HeaderDecryptionError, KeySourceError, PayloadDecryptionError, UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers import aead as ciphers
else:  # imported when a three.ws key is made (DEVELOPERS.md, "Lazy imports": a build without one never does)
    ciphers = lazy_module("cryptography.hazmat.primitives.ciphers.aead")

__all__ = [
    "IV_SIZE",
    "THREEWS_INFO",
    "THREEWS_MESSAGE_PREFIX",
    "THREEWS_SCHEME",
    "ThreewsKey",
    "threews_decrypt",
    "threews_encrypt",
    "threews_key",
    "threews_key_from_spec",
    "threews_message",
]

THREEWS_MESSAGE_PREFIX: Final = "agent-3d:memory:v1:"
#: ``manifest["encryption"]["scheme"]`` of a bundle built with ``--compat three.ws``.
THREEWS_SCHEME: Final = "three.ws"
THREEWS_INFO: Final = b"agent-3d-memory-aes-gcm"
IV_SIZE: Final = 12
_TAG_SIZE: Final = 16


def threews_message(agent_id: str) -> str:
    """The exact text the three.ws runtime has a wallet sign for ``agent_id``.

    Raises ``UsageError`` for an empty agent id.
    """
    if not agent_id:
        raise UsageError("a three.ws key needs the agent id the memory belongs to; pass --agent-id")
    return THREEWS_MESSAGE_PREFIX + agent_id


class ThreewsKey:
    """A three.ws AES-256-GCM key. Never printed, never stored."""

    __slots__ = ("_aead",)

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise UsageError("internal: a three.ws key is 32 bytes")
        self._aead = ciphers.AESGCM(key)

    def __repr__(self) -> str:
        return "ThreewsKey(<secret>)"


def threews_key(signature: bytes) -> ThreewsKey:
    """Derive the three.ws key from a 65-byte signature of :func:`threews_message`.

    The bytes are hashed as given, as the runtime's ``deriveEncryptionKey``
    does (``crypto.js``: the wallet's hex decoded, no v or s normalisation), so
    a signature in another encoding (v = 0/1, high s) gives another key, as it
    would in the runtime. The signature is still checked to be a well-formed
    secp256k1 signature. Raises ``KeySourceError`` for a malformed one.
    """
    sig = bytes(signature)
    normalize_signature(sig)  # the checks only: length, v, r and s ranges
    ikm = hashlib.sha256(sig).digest()
    return ThreewsKey(_hkdf(ikm, bytes(32), THREEWS_INFO, 32))


def threews_key_from_spec(spec: KeySpec, agent_id: str) -> ThreewsKey:
    """The three.ws key for ``agent_id`` from a CLI key option.

    A :class:`PrivateKeySigner` signs :func:`threews_message` itself; a
    :class:`SignatureKey` must already hold a signature of that message. Other
    sources raise ``KeySourceError``: the runtime only keys from wallets.
    """
    message = threews_message(agent_id)
    if isinstance(spec, PrivateKeySigner):
        # eth-account signs with v = 27/28 and a low s, as browser wallets do: the runtime's bytes.
        return threews_key(spec.sign(message))
    if isinstance(spec, SignatureKey):
        return threews_key(spec._signature_as_given())
    raise KeySourceError(
        "three.ws memory is keyed by a wallet signature; give --signature-env, --signature-file "
        "or --private-key-env (sign: " + message + ")"
    )


def threews_encrypt(plaintext: bytes, key: ThreewsKey) -> str:
    """Encrypt one file into the three.ws text form (standard base64 with padding, no newline)."""
    return _threews_encrypt(plaintext, key, os.urandom)


def _threews_encrypt(plaintext: bytes, key: ThreewsKey, rng: Rng) -> str:
    """The seam behind :func:`threews_encrypt`: ``rng`` supplies the 12-byte IV."""
    iv = rng(IV_SIZE)
    if len(iv) != IV_SIZE:
        raise UsageError("internal: the random source returned the wrong number of bytes")
    return base64.b64encode(iv + key._aead.encrypt(iv, plaintext, None)).decode("ascii")


def threews_decrypt(text: str | bytes, key: ThreewsKey, *, name: str = "the file") -> bytes:
    """Decrypt one three.ws file (its base64 text; surrounding whitespace ignored).

    Raises ``HeaderDecryptionError`` if the text is not base64 or too short to
    hold an IV and a tag, ``PayloadDecryptionError`` if it does not
    authenticate (a wrong key or tampering: this form cannot tell them apart).
    """
    raw_text = text.encode("ascii", "replace") if isinstance(text, str) else bytes(text)
    try:
        raw = base64.b64decode(raw_text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise HeaderDecryptionError(
            f"cannot decrypt {name}: it is not three.ws encrypted text (not base64)"
        ) from None
    if len(raw) < IV_SIZE + _TAG_SIZE:
        raise HeaderDecryptionError(f"cannot decrypt {name}: it is too short to be a three.ws encrypted file")
    try:
        return key._aead.decrypt(raw[:IV_SIZE], raw[IV_SIZE:], None)
    except InvalidTag:
        raise PayloadDecryptionError(
            f"cannot decrypt {name}: the key is wrong or the file was tampered with "
            "(three.ws files cannot tell which); check the wallet and agent id"
        ) from None
