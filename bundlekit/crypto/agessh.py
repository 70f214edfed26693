"""age's ``ssh-ed25519`` recipient type: an SSH Ed25519 key as an age recipient and identity.

Not in C2SP ``age.md``; specified by the reference implementation, FiloSottile/age
``agessh/agessh.go`` at 10561a774f9f6de47c8d23ddc58537b6a18b083d, and checked here
against Debian's ``age`` (``age -R key.pub``, ``age -d -i key``). A stanza::

    -> ssh-ed25519 <tag> <ephemeral share>
    <body>

    wire      = string("ssh-ed25519") || string(ed25519 public key)   (SSH wire form)
    tag       = base64(SHA-256(wire)[:4])
    recipient = the Ed25519 public key's Montgomery form, u = (1 + y) / (1 - y) mod p
    shared    = X25519(ephemeral secret, recipient)
    tweak     = HKDF-SHA-256(ikm = empty, salt = wire, info = LABEL)
    shared    = X25519(tweak, shared)
    wrap key  = HKDF-SHA-256(ikm = shared, salt = ephemeral share || recipient, info = LABEL)
    body      = ChaCha20-Poly1305(wrap key, 12 zero bytes, file key)
    LABEL     = "age-encryption.org/v1/ssh-ed25519"

The identity's X25519 scalar is ``SHA-512(seed)[:32]`` (X25519 clamps it), read from an
unencrypted OpenSSH private key (``openssh-key-v1``, OpenSSH ``PROTOCOL.key``): a
passphrase-protected key is refused (bundlekit asks for no passphrase), and so is every
other key type. The public key is decoded as an Edwards point and must be on the curve;
a low-order point is refused, as its shared secret is zero.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from typing import Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from bundlekit.crypto._keys import Rng, _hkdf
from bundlekit.crypto.age import (
    Secret,
    Stanza,
    b64_raw,
    b64_raw_decode,
    check_shape,
    header_failure,
    is_low_order,
    stanza_text,
    unwrap_body,
)
from bundlekit.errors import KeySourceError, UsageError

__all__ = ["STANZA_TYPE", "SshEd25519Identity", "SshEd25519Recipient", "parse_private_key", "parse_public_key"]

STANZA_TYPE: Final = "ssh-ed25519"
LABEL: Final = b"age-encryption.org/v1/ssh-ed25519"
_P: Final = 2**255 - 19
_D: Final = (-121665 * pow(121666, _P - 2, _P)) % _P
_PEM_BEGIN: Final = "-----BEGIN OPENSSH PRIVATE KEY-----"
_PEM_END: Final = "-----END OPENSSH PRIVATE KEY-----"
_MAGIC: Final = b"openssh-key-v1\x00"


def _string(value: bytes) -> bytes:
    return struct.pack(">I", len(value)) + value


def _wire(public: bytes) -> bytes:
    return _string(STANZA_TYPE.encode()) + _string(public)


def _tag(wire: bytes) -> str:
    return b64_raw(hashlib.sha256(wire).digest()[:4])


def _montgomery(public: bytes) -> bytes | None:
    """The Montgomery u of an Edwards25519 point, or None if the bytes are not a point or it is low-order."""
    y = int.from_bytes(public, "little") & ((1 << 255) - 1)
    y %= _P  # non-canonical encodings are reduced, as filippo.io/edwards25519's SetBytes accepts them
    y2 = y * y % _P
    x2 = (y2 - 1) * pow(_D * y2 + 1, _P - 2, _P) % _P
    if x2 and pow(x2, (_P - 1) // 2, _P) != 1:
        return None  # no square root: not on the curve
    if y == 1:
        return None
    u = ((1 + y) * pow(1 - y, _P - 2, _P) % _P).to_bytes(32, "little")
    return None if is_low_order(u) else u


class _Reader:
    """SSH wire-format fields from a byte string; ``ValueError`` past its end."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def uint32(self) -> int:
        value: int = struct.unpack(">I", self.take(4))[0]
        return value

    def string(self) -> bytes:
        return self.take(self.uint32())

    def rest(self) -> bytes:
        return self.take(len(self.data) - self.pos)


class SshEd25519Recipient:
    """An ``ssh-ed25519`` public key as an age recipient; ``text`` is its canonical line (no comment)."""

    def __init__(self, public: bytes) -> None:
        montgomery = _montgomery(public) if len(public) == 32 else None
        if montgomery is None:
            raise UsageError("not a usable Ed25519 public key (off the curve or low-order)")
        self._wire = _wire(public)
        self._montgomery = montgomery
        self.text = f"{STANZA_TYPE} {base64.b64encode(self._wire).decode('ascii')}"

    def wrap(self, file_key: bytes, rng: Rng) -> str:
        """One ``ssh-ed25519`` stanza (text ending in LF) wrapping ``file_key``."""
        ephemeral = X25519PrivateKey.from_private_bytes(rng(32))
        share = ephemeral.public_key().public_bytes_raw()
        shared = _tweaked(ephemeral.exchange(X25519PublicKey.from_public_bytes(self._montgomery)), self._wire)
        return stanza_text(f"{STANZA_TYPE} {_tag(self._wire)} {b64_raw(share)}",
                           _hkdf(shared, share + self._montgomery, LABEL, 32), file_key)


def _tweaked(shared: bytes, wire: bytes) -> bytes:
    tweak = X25519PrivateKey.from_private_bytes(_hkdf(b"", wire, LABEL, 32))
    try:
        return tweak.exchange(X25519PublicKey.from_public_bytes(shared))
    except ValueError:
        raise header_failure("an ssh-ed25519 shared secret is zero") from None


def parse_public_key(line: str) -> SshEd25519Recipient:
    """An ``ssh-ed25519 BASE64 [comment]`` line (authorized_keys form); ``UsageError`` saying why not."""
    parts = line.split()
    if len(parts) < 2 or parts[0] != STANZA_TYPE:
        raise UsageError("not an ssh-ed25519 public key line")
    try:
        wire = base64.b64decode(parts[1], validate=True)
        reader = _Reader(wire)
        kind, public = reader.string(), reader.string()
        if kind != STANZA_TYPE.encode() or reader.rest():
            raise ValueError("wrong type or trailing bytes")
    except (binascii.Error, ValueError):
        raise UsageError("the ssh-ed25519 key's base64 or wire form is malformed") from None
    return SshEd25519Recipient(public)


class SshEd25519Identity(Secret):
    """An SSH Ed25519 private key as an age identity. Never printed."""

    __slots__ = ("_scalar", "_wire", "montgomery", "recipient")

    def __init__(self, seed: bytes) -> None:
        public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes_raw()
        self.recipient = SshEd25519Recipient(public)
        self._wire = _wire(public)
        self._scalar = X25519PrivateKey.from_private_bytes(hashlib.sha512(seed).digest()[:32])
        self.montgomery: bytes = self._scalar.public_key().public_bytes_raw()

    def recipient_text(self) -> str:
        """The canonical ``ssh-ed25519 ...`` line of this identity's public key."""
        return self.recipient.text

    def unwrap(self, stanza: Stanza) -> bytes | None:
        """The file key if ``stanza`` is an ``ssh-ed25519`` stanza for this key, else None.

        A malformed ``ssh-ed25519`` stanza is a header failure (``HeaderDecryptionError``).
        """
        if stanza.args[0] != STANZA_TYPE:
            return None
        check_stanza(stanza)
        if stanza.args[1] != _tag(self._wire):
            return None
        share = b64_raw_decode(stanza.args[2].encode("ascii"), "an ssh-ed25519 share")
        return unwrap_body(self._scalar, share, stanza.body,
                           lambda shared: _hkdf(_tweaked(shared, self._wire), share + self.montgomery,
                                                LABEL, 32))


def check_stanza(stanza: Stanza) -> None:
    """An ``ssh-ed25519`` stanza's shape: a 4-byte tag, a 32-byte share, a 32-byte body."""
    check_shape(stanza, (4, 32))


def parse_private_key(text: str, *, where: str) -> SshEd25519Identity:
    """The identity in an unencrypted OpenSSH Ed25519 private key file; ``KeySourceError`` saying why not."""
    body = text.strip()
    if not (body.startswith(_PEM_BEGIN) and body.endswith(_PEM_END)):
        raise KeySourceError(f"{where} is not an OpenSSH private key (-----BEGIN OPENSSH PRIVATE KEY-----)")
    try:
        data = base64.b64decode("".join(body[len(_PEM_BEGIN):-len(_PEM_END)].split()), validate=True)
        reader = _Reader(data)
        if reader.take(len(_MAGIC)) != _MAGIC:
            raise ValueError("magic")
        cipher, kdf, _, count = reader.string(), reader.string(), reader.string(), reader.uint32()
        public_blob, private_block = reader.string(), reader.string()
    except (binascii.Error, ValueError):
        raise KeySourceError(f"{where} is a malformed OpenSSH private key") from None
    if cipher != b"none" or kdf != b"none":
        raise KeySourceError(f"{where} is protected by a passphrase, which bundlekit does not ask for; "
                             "use an age identity (`bundlekit key new`) or an unencrypted copy of the key")
    if count != 1 or reader.rest():
        raise KeySourceError(f"{where} holds {count} keys or trailing data; give a file with one key")
    return _private_block(private_block, public_blob, where)


def _private_block(block: bytes, public_blob: bytes, where: str) -> SshEd25519Identity:
    malformed = KeySourceError(f"{where} is a malformed OpenSSH private key")
    try:
        reader = _Reader(block)
        check1, check2 = reader.uint32(), reader.uint32()
        kind = reader.string()
        if kind != STANZA_TYPE.encode():
            raise KeySourceError(f"{where} is an SSH {kind.decode('ascii', 'replace')[:40]} key; "
                                 "only ssh-ed25519 keys are age identities here")
        public, private, _ = reader.string(), reader.string(), reader.string()
        padding = reader.rest()
    except ValueError:
        raise malformed from None
    if check1 != check2 or len(public) != 32 or len(private) != 64 or private[32:] != public:
        raise malformed
    if padding != bytes(range(1, len(padding) + 1)) or public_blob != _wire(public):
        raise malformed
    if Ed25519PrivateKey.from_private_bytes(private[:32]).public_key().public_bytes_raw() != public:
        raise malformed  # the seed does not give the stored public key
    return SshEd25519Identity(private[:32])
