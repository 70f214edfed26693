"""The encryption recipe: ``bundlekit-enc/1`` files, hard to misuse.

There are no nonce, mode or chunk-size arguments: a caller gives a
:class:`~bundlekit.crypto.BundleKey` (from a :class:`~bundlekit.crypto.KeySpec`) and
the file's path in the bundle, and gets back a ciphertext bound to both. The
format, in short (specs/encryption.md has it byte by byte)::

    header  = "BKENC" || 0x01 || uint32be(65536) || salt(16) || nonce_prefix(7) || mac(32)
    payload = AES-256-GCM chunks in the STREAM construction (bundlekit.crypto._stream)

The per-file keys come from HKDF over the bundle key, the salt, the key id and
the path; the header MAC proves the header belongs to this key, bundle and path;
each chunk's associated data is ``header || key_id || path``.

Decryption fails by layer and says little: ``HeaderDecryptionError`` (not a
bundlekit-enc/1 file, or a header that does not authenticate: tampered, another
key, moved from another path or bundle) and ``PayloadDecryptionError`` (a chunk
that does not authenticate: tampered, truncated, reordered). Both are
``DecryptionError``. The bundle-level wrong key is caught earlier, by the key
commitment (``WrongKeyError`` from ``KeySpec.open_bundle_key``).

Modules: this one (the recipe), over the private ``_stream`` (the STREAM construction over
AES-256-GCM), ``_keys`` (key sources: wallet signature, passphrase, key file), ``_hmac``
(HMAC-SHA-256 for the per-file MACs) and ``_pool`` (OS random records drawn in batches); beside
it ``signing`` (Ed25519 key files and ``did:key``, Ethereum signers), ``threews`` (three.ws's
encrypted memory file form), ``recipients`` (the recipients key source: age recipients and
identities) over ``age`` (age v1 files: X25519 stanzas, header MAC, payload, armor), ``agessh``
(age's ssh-ed25519 stanzas and OpenSSH Ed25519 keys) and ``_bech32`` (age's key encoding).

Limitations: streaming decryption writes each chunk once it authenticates, so a
stream cut or tampered later leaves earlier plaintext in ``dst``; write to a
temporary file and discard it on error. File sizes leak, to within nothing
(ciphertext = plaintext + 65 + 16 per chunk). Nothing hides which paths a bundle has.
"""

from __future__ import annotations

import hmac
import os
from typing import BinaryIO, Final

from bundlekit.crypto import _stream
from bundlekit.crypto._hmac import hmac_sha256
from bundlekit.crypto._keys import (
    BundleKey,
    KeySpec,
    PassphraseKey,
    PrivateKeySigner,
    RawKeyFile,
    Rng,
    SignatureKey,
    _file_keys,
    signature_message,
)
from bundlekit.crypto._pool import RandomPool
from bundlekit.errors import HeaderDecryptionError, UsageError
from bundlekit.unixfs.chunker import read_full

__all__ = [
    "CHUNK_SIZE",
    "HEADER_SIZE",
    "MAGIC",
    "VERSION",
    "BundleKey",
    "KeySpec",
    "PassphraseKey",
    "PrivateKeySigner",
    "RawKeyFile",
    "SignatureKey",
    "decrypt_bytes",
    "decrypt_stream",
    "encrypt_bytes",
    "encrypt_stream",
    "encrypted_size",
    "signature_message",
]

MAGIC: Final = b"BKENC"
VERSION: Final = 1
CHUNK_SIZE: Final = _stream.CHUNK_SIZE
SALT_SIZE: Final = 16
MAC_SIZE: Final = 32
_HEADER_BODY_SIZE: Final = len(MAGIC) + 1 + 4 + SALT_SIZE + _stream.NONCE_PREFIX_SIZE
HEADER_SIZE: Final = _HEADER_BODY_SIZE + MAC_SIZE  # 65
_HEADER_START: Final = MAGIC + bytes([VERSION]) + CHUNK_SIZE.to_bytes(4, "big")

# The OS source, as the public functions pass it: drawn through a pool (one system
# call per 1,024 files; see _pool). An injected rng is called as it is, salt then prefix.
_OS_RANDOM: Final[Rng] = os.urandom
_HEADER_RANDOM: Final = RandomPool(SALT_SIZE + _stream.NONCE_PREFIX_SIZE)


def _path_bytes(path: str) -> bytes:
    """The path as bound into keys and associated data: UTF-8, non-empty, no NUL."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise UsageError("an encrypted file needs a non-empty path without NUL characters")
    try:
        return path.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("an encrypted file's path must be valid Unicode (no lone surrogates)") from None


def _seal_header(key: BundleKey, path_b: bytes, rng: Rng) -> tuple[bytes, bytes, bytes]:
    """Draw salt then nonce prefix from ``rng``; return (header, payload key, nonce prefix).

    ``os.urandom`` itself is drawn through the pool (the same fresh OS bytes,
    fewer system calls); any other ``rng`` is called twice, for 16 then 7 bytes.
    """
    if rng is _OS_RANDOM:
        drawn = _HEADER_RANDOM.take()
        salt, prefix = drawn[:SALT_SIZE], drawn[SALT_SIZE:]
    else:
        salt = rng(SALT_SIZE)
        prefix = rng(_stream.NONCE_PREFIX_SIZE)
        if len(salt) != SALT_SIZE or len(prefix) != _stream.NONCE_PREFIX_SIZE:
            raise UsageError("internal: the random source returned the wrong number of bytes")
    header_key, payload_key = _file_keys(key, salt, path_b)
    body = _HEADER_START + salt + prefix
    return body + hmac_sha256(header_key, body), payload_key, prefix


def _open_header(header: bytes, key: BundleKey, path_b: bytes, what: str) -> tuple[bytes, bytes]:
    """Check a header (steps 2 to 5 of the spec); return (payload key, nonce prefix)."""
    if (
        len(header) != HEADER_SIZE
        or header[: len(MAGIC)] != MAGIC
        or header[len(MAGIC)] != VERSION
        or int.from_bytes(header[len(MAGIC) + 1 : len(MAGIC) + 5], "big") != CHUNK_SIZE
    ):
        raise HeaderDecryptionError(
            f"cannot decrypt {what}: header failure (not a bundlekit-enc/1 file, or its header is "
            "truncated or damaged); fetch the bundle again from a trusted source"
        )
    body, mac = header[:_HEADER_BODY_SIZE], header[_HEADER_BODY_SIZE:]
    salt = body[len(MAGIC) + 5 : len(MAGIC) + 5 + SALT_SIZE]
    prefix = body[len(MAGIC) + 5 + SALT_SIZE :]
    header_key, payload_key = _file_keys(key, salt, path_b)
    if not hmac.compare_digest(hmac_sha256(header_key, body), mac):
        raise HeaderDecryptionError(
            f"cannot decrypt {what}: header failure (the file does not belong to this key, bundle and "
            "path, or it was tampered with); check the key, or fetch the bundle again"
        )
    return payload_key, prefix


def encrypt_stream(src: BinaryIO, dst: BinaryIO, key: BundleKey, path: str) -> None:
    """Encrypt ``src`` into ``dst`` as a ``bundlekit-enc/1`` file bound to ``key`` and ``path``.

    ``path`` is the file's path in the bundle (the same string must be given to
    decrypt). Memory stays bounded whatever the size. Raises ``UsageError`` for
    an empty path or one with NUL characters.
    """
    _encrypt_stream(src, dst, key, path, _OS_RANDOM)


def _encrypt_stream(src: BinaryIO, dst: BinaryIO, key: BundleKey, path: str, rng: Rng) -> None:
    """The seam behind :func:`encrypt_stream`: ``rng`` supplies salt then nonce prefix."""
    path_b = _path_bytes(path)
    header, payload_key, prefix = _seal_header(key, path_b, rng)
    dst.write(header)
    _stream.seal_stream(payload_key, prefix, header + key.key_id + path_b, src, dst)


def decrypt_stream(src: BinaryIO, dst: BinaryIO, key: BundleKey, path: str) -> None:
    """Decrypt a ``bundlekit-enc/1`` file from ``src`` into ``dst``.

    ``path`` must be the path the file was encrypted for. Raises
    ``HeaderDecryptionError`` if the header is malformed or does not
    authenticate (another key, bundle or path, or tampering) -- nothing is
    written then -- and ``PayloadDecryptionError`` if a chunk fails (see the
    module's limitations). Both are ``DecryptionError``.
    """
    path_b = _path_bytes(path)
    what = repr(path)
    header = read_full(src.read, HEADER_SIZE)  # short reads topped up; fewer bytes only at EOF
    payload_key, prefix = _open_header(header, key, path_b, what)
    _stream.open_stream(payload_key, prefix, header + key.key_id + path_b, src, dst, what)


def encrypt_bytes(data: bytes, key: BundleKey, path: str) -> bytes:
    """Encrypt ``data`` in memory; same format and errors as :func:`encrypt_stream`."""
    return _encrypt_bytes(data, key, path, _OS_RANDOM)


def _encrypt_bytes(data: bytes, key: BundleKey, path: str, rng: Rng) -> bytes:
    """The seam behind :func:`encrypt_bytes`: ``rng`` supplies salt then nonce prefix."""
    path_b = _path_bytes(path)
    header, payload_key, prefix = _seal_header(key, path_b, rng)
    return _stream.seal_bytes(payload_key, prefix, header + key.key_id + path_b, header, data)


def decrypt_bytes(data: bytes, key: BundleKey, path: str) -> bytes:
    """Decrypt ``data`` in memory; same errors as :func:`decrypt_stream`, no partial output."""
    path_b = _path_bytes(path)
    what = repr(path)
    header = bytes(data[:HEADER_SIZE])
    payload_key, prefix = _open_header(header, key, path_b, what)
    pieces = _stream.slice_pieces(memoryview(data)[HEADER_SIZE:], _stream.ENCRYPTED_CHUNK_SIZE)
    return b"".join(_stream.open_pieces(payload_key, prefix, header + key.key_id + path_b, pieces, what))


def encrypted_size(plaintext_size: int) -> int:
    """The exact ciphertext size of a ``plaintext_size``-byte file (header + chunks + tags)."""
    if plaintext_size < 0:
        raise UsageError("a plaintext size cannot be negative")
    return HEADER_SIZE + _stream.sealed_size(plaintext_size)
