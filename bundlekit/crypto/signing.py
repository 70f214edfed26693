"""Signing identities: Ed25519 key files (``did:key``, libp2p keys) and Ethereum keys (EIP-191).

A :class:`Signer` signs bytes and names itself with an *identity* string:

* ``Ed25519Signer``: an Ed25519 private key read from a PEM (PKCS#8) key file,
  the form ``openssl genpkey -algorithm ed25519`` writes. Its identity is the
  ``did:key`` of its public key (w3c-ccg did-method-key: ``did:key:z`` + base58btc
  of the multicodec ``ed25519-pub`` (0xed, varint ``ed 01``) + the 32 key bytes).
  Its libp2p public key (``libp2p_public_key``) is what an IPNS name hashes.
* ``EthSigner``: an Ethereum private key (eth-account, the ``wallet`` extra).
  It signs EIP-191 ``personal_sign`` messages (version byte ``0x45``:
  ``"\\x19Ethereum Signed Message:\\n" + len + message``); its identity is the
  EIP-55 checksummed address.

:func:`verify_signature` checks a signature against an identity of either kind.
Nothing here ever puts key material in a message or a ``repr``.
"""

from __future__ import annotations

import binascii
import os
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Final

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from bundlekit._fs import atomic_write_bytes
from bundlekit._lazy import lazy_module
from bundlekit.crypto._keys import PrivateKeySigner, eth_account_api, normalize_signature
from bundlekit.errors import KeySourceError, SignatureError, UsageError
from bundlekit.ipld.bases import BASE58BTC, decode, encode

if TYPE_CHECKING:
    from cryptography.hazmat.primitives import serialization
else:  # imported when a key is written or a key file is not in the usual form (DEVELOPERS.md, "Lazy imports")
    serialization = lazy_module("cryptography.hazmat.primitives.serialization")

__all__ = [
    "DID_KEY_PREFIX",
    "ED25519_PUB_MULTICODEC",
    "Ed25519Signer",
    "EthSigner",
    "Signer",
    "did_key",
    "did_key_public",
    "is_identity",
    "libp2p_ed25519_public_key",
    "verify_signature",
]

DID_KEY_PREFIX: Final = "did:key:z"
ED25519_PUB_MULTICODEC: Final = b"\xed\x01"  # varint of 0xed
# libp2p crypto.proto PublicKey {Type=1: KeyType Ed25519 = 1, Data=2: 32 bytes}, deterministic encoding.
_LIBP2P_ED25519_PREFIX: Final = b"\x08\x01\x12\x20"
_ETH_ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
_MAX_KEY_FILE = 4096
# RFC 8410 section 7: an Ed25519 private key as PKCS#8 (OneAsymmetricKey version 0, no attributes, no public key)
# is these 16 DER bytes and the 32-byte seed, in PEM the three lines below; `openssl genpkey -algorithm ed25519`
# and cryptography's PKCS8 PEM (what `Ed25519Signer.write` makes) are exactly that.
_PKCS8_ED25519: Final = bytes.fromhex("302e020100300506032b657004220420")
_PEM_HEAD, _PEM_TAIL = b"-----BEGIN PRIVATE KEY-----\n", b"\n-----END PRIVATE KEY-----\n"


def did_key(public: bytes) -> str:
    """The ``did:key`` of a 32-byte Ed25519 public key."""
    return DID_KEY_PREFIX + encode(ED25519_PUB_MULTICODEC + public, BASE58BTC)


def did_key_public(did: str) -> bytes:
    """The Ed25519 public key a ``did:key`` names; ``SignatureError`` for any other kind of did:key."""
    try:
        raw = decode(did[len(DID_KEY_PREFIX):], BASE58BTC) if did.startswith(DID_KEY_PREFIX) else b""
    except ValueError:
        raw = b""
    if len(raw) != 34 or raw[:2] != ED25519_PUB_MULTICODEC:
        raise SignatureError(f"{did[:80]!r} is not an Ed25519 did:key (did:key:z6Mk...)")
    return raw[2:]


def is_identity(text: str) -> bool:
    """True for an identity this module can verify: an Ethereum address or an Ed25519 ``did:key``."""
    if _ETH_ADDRESS.match(text):
        return True
    try:
        did_key_public(text)
    except SignatureError:
        return False
    return True


def libp2p_ed25519_public_key(public: bytes) -> bytes:
    """The libp2p ``PublicKey`` protobuf of an Ed25519 key (what an IPNS name's identity multihash holds)."""
    return _LIBP2P_ED25519_PREFIX + public


def _usual_seed(data: bytes) -> bytes | None:
    """The seed of a key file in the one form ``write`` and OpenSSL make (RFC 8410's PEM, byte for byte), read
    without cryptography's serialization package (~5 ms of CPU to import, with the SSH key formats: every writer's
    sync round reads its name key); ``None`` for any other text, which that package's parser then reads."""
    if len(data) != len(_PEM_HEAD) + 64 + len(_PEM_TAIL) or not data.startswith(_PEM_HEAD) or not data.endswith(_PEM_TAIL):
        return None
    try:
        der = binascii.a2b_base64(data[len(_PEM_HEAD):-len(_PEM_TAIL)], strict_mode=True)
    except binascii.Error:
        return None
    return der[len(_PKCS8_ED25519):] if len(der) == 48 and der.startswith(_PKCS8_ED25519) else None


class Signer(ABC):
    """Something that signs bytes and names itself by ``identity`` under ``scheme``."""

    scheme: str

    @property
    @abstractmethod
    def identity(self) -> str:
        """The signer's public identity (a ``did:key`` or an Ethereum address)."""

    @abstractmethod
    def sign(self, message: bytes) -> bytes:
        """The signature of ``message`` under this scheme."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identity})"


class Ed25519Signer(Signer):
    """An Ed25519 private key (RFC 8032); identity ``did:key:z6Mk...``."""

    scheme = "ed25519"

    def __init__(self, private: Ed25519PrivateKey) -> None:
        self._private = private
        self.public: bytes = private.public_key().public_bytes_raw()

    @classmethod
    def generate(cls) -> Ed25519Signer:
        """A new random key."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> Ed25519Signer:
        """The key of a 32-byte seed (test vectors)."""
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Ed25519Signer:
        """Read a PEM (PKCS#8) Ed25519 private key file. Raises ``KeySourceError`` (the content is never quoted)."""
        where = Path(path)
        try:
            with open(where, "rb") as fh:
                data = fh.read(_MAX_KEY_FILE + 1)
        except OSError as exc:
            raise KeySourceError(f"cannot read the key file {where}: {exc.strerror}; check the path") from exc
        hint = (f"the key file {where.name} is not an Ed25519 private key in PEM; "
                "create one with `bundlekit name create --key-file FILE` or `openssl genpkey -algorithm ed25519`")
        if len(data) > _MAX_KEY_FILE:
            raise KeySourceError(hint)
        seed = _usual_seed(data)
        if seed is not None:
            return cls.from_seed(seed)
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm):  # the last: a key of an algorithm OpenSSL does not know
            raise KeySourceError(hint) from None
        if not isinstance(key, Ed25519PrivateKey):
            raise KeySourceError(hint)
        return cls(key)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the key as PEM (PKCS#8) to a new file, mode 0600. ``UsageError`` if the file exists."""
        if Path(path).exists():
            raise UsageError(f"{str(path)!r} already exists; give a new file name (keys are never overwritten)")
        pem = self._private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption())
        atomic_write_bytes(path, pem, error=KeySourceError, mode=0o600, hint="choose a writable location")

    @property
    def identity(self) -> str:
        return did_key(self.public)

    def sign(self, message: bytes) -> bytes:
        return self._private.sign(message)


class EthSigner(Signer):
    """An Ethereum private key signing EIP-191 ``personal_sign`` messages; identity the EIP-55 address."""

    scheme = "eip191"

    def __init__(self, private_key: str) -> None:
        self._signer = PrivateKeySigner(private_key)
        account, _ = eth_account_api("an Ethereum signature")
        try:
            self._address: str = account.from_key(private_key).address
        except Exception:  # noqa: BLE001  (eth-account raises many types for a bad key)
            raise KeySourceError("the private key is not a valid 32-byte secp256k1 key (hex, 0x optional)") from None

    @property
    def identity(self) -> str:
        return self._address

    def sign(self, message: bytes) -> bytes:
        return self._signer.sign(message.decode("utf-8"))


def _recover_address(message: bytes, signature: bytes) -> str | None:
    account, encode_defunct = eth_account_api("an Ethereum signature")
    try:
        sig = normalize_signature(signature)
        address: str = account.recover_message(encode_defunct(primitive=message), signature=sig)
    except Exception:  # noqa: BLE001  (a malformed signature: it simply does not verify)
        return None
    return address


def verify_signature(identity: str, message: bytes, signature: bytes) -> bool:
    """True when ``signature`` is ``identity``'s signature of ``message``.

    ``identity`` is an Ethereum address (EIP-191 recovery, compared without
    regard to case) or an Ed25519 ``did:key``. Raises ``SignatureError`` for an
    identity of neither kind, ``KeySourceError`` when an Ethereum signature must
    be checked without eth-account installed.
    """
    if _ETH_ADDRESS.match(identity):
        recovered = _recover_address(message, signature)
        return recovered is not None and recovered.lower() == identity.lower()
    public = did_key_public(identity)
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True
