"""The STREAM construction over AES-256-GCM: the private, hazardous layer.

Nothing here chooses keys, nonces or sizes; :mod:`bundlekit.crypto` (the recipe)
does that and is the only caller. This module only cuts a stream into
``CHUNK_SIZE`` chunks and seals or opens them, one at a time, so memory stays
bounded (two ciphertext chunks at most, for the one-chunk lookahead).

Each chunk ``i`` is sealed under the nonce ``prefix(7) || uint32be(i) || flag(1)``,
where ``flag`` is ``0x01`` for the final chunk and ``0x00`` otherwise (the STREAM
construction of Hoang, Reyhanitabar, Rogaway and Vizár, laid out like age's
payload). Reordering changes the counter, truncation at a chunk boundary leaves a
chunk sealed with flag 0 in last position, and appended data leaves the real last
chunk (flag 1) in a non-final position: every one of them fails authentication.

The final chunk is the only one that may be short, and it may be empty only when
the whole plaintext is empty (then the payload is one empty final chunk, 16
bytes of tag). See specs/encryption.md, "Payload".
"""

from __future__ import annotations

from typing import BinaryIO, Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .errors import PayloadDecryptionError, UsageError

__all__ = ["CHUNK_SIZE", "TAG_SIZE", "NONCE_PREFIX_SIZE", "MAX_CHUNKS", "seal_stream", "open_stream"]

CHUNK_SIZE: Final = 64 * 1024
TAG_SIZE: Final = 16
NONCE_PREFIX_SIZE: Final = 7
ENCRYPTED_CHUNK_SIZE: Final = CHUNK_SIZE + TAG_SIZE
# The counter is 32 bits wide; 2**32 chunks of 64 KiB is 256 TiB per file.
MAX_CHUNKS: Final = 2**32

_LAST: Final = b"\x01"
_NOT_LAST: Final = b"\x00"


def _nonce(prefix: bytes, counter: int, last: bool) -> bytes:
    return prefix + counter.to_bytes(4, "big") + (_LAST if last else _NOT_LAST)


def _read_full(src: BinaryIO, size: int) -> bytes:
    """Read exactly ``size`` bytes, or fewer only at end of stream.

    ``read`` on raw files, pipes and sockets may return short counts before EOF;
    chunk boundaries must not depend on that.
    """
    data = src.read(size)
    if len(data) == size or not data:
        return data
    parts = [data]
    have = len(data)
    while have < size:
        more = src.read(size - have)
        if not more:
            break
        parts.append(more)
        have += len(more)
    return b"".join(parts)


def seal_stream(key: bytes, prefix: bytes, aad: bytes, src: BinaryIO, dst: BinaryIO) -> int:
    """Seal ``src`` chunk by chunk into ``dst``; return the number of plaintext bytes.

    ``key`` is a 32-byte AES-256-GCM key used for this one stream only; ``prefix``
    is the 7-byte nonce prefix; ``aad`` is the associated data of every chunk.
    Raises ``UsageError`` if the plaintext would need more than ``MAX_CHUNKS`` chunks.
    """
    if len(key) != 32 or len(prefix) != NONCE_PREFIX_SIZE:
        raise UsageError("internal: the STREAM layer needs a 32-byte key and a 7-byte nonce prefix")
    aead = AESGCM(key)
    counter = 0
    total = 0
    chunk = _read_full(src, CHUNK_SIZE)
    while True:
        # A full chunk may still be the last one; only the next read can tell.
        following = _read_full(src, CHUNK_SIZE) if len(chunk) == CHUNK_SIZE else b""
        last = not following
        if counter >= MAX_CHUNKS:
            raise UsageError("cannot encrypt: the input is larger than 256 TiB, the per-file limit")
        dst.write(aead.encrypt(_nonce(prefix, counter, last), chunk, aad))
        total += len(chunk)
        if last:
            return total
        chunk = following
        counter += 1


def open_stream(key: bytes, prefix: bytes, aad: bytes, src: BinaryIO, dst: BinaryIO, what: str) -> int:
    """Open a sealed stream from ``src`` into ``dst``; return the number of plaintext bytes.

    Each chunk is authenticated before its plaintext is written, but earlier
    chunks are already in ``dst`` when a later one fails: callers write to a
    temporary place and discard it on error. ``what`` names the file in errors.

    Raises ``PayloadDecryptionError`` when a chunk does not authenticate, the
    payload is truncated, reordered or extended, or a non-first final chunk is empty.
    """
    aead = AESGCM(key)
    counter = 0
    total = 0
    sealed = _read_full(src, ENCRYPTED_CHUNK_SIZE)
    while True:
        following = _read_full(src, ENCRYPTED_CHUNK_SIZE) if len(sealed) == ENCRYPTED_CHUNK_SIZE else b""
        last = not following
        if len(sealed) < TAG_SIZE or counter >= MAX_CHUNKS:
            raise _payload_failure(what)
        if last and counter > 0 and len(sealed) == TAG_SIZE:
            # Only an empty plaintext ends in an empty chunk; elsewhere it means
            # the stream was cut or spliced.
            raise _payload_failure(what)
        try:
            plain = aead.decrypt(_nonce(prefix, counter, last), sealed, aad)
        except InvalidTag:
            raise _payload_failure(what) from None
        dst.write(plain)
        total += len(plain)
        if last:
            return total
        sealed = following
        counter += 1


def _payload_failure(what: str) -> PayloadDecryptionError:
    # One message for every payload failure: which chunk or byte failed is no
    # business of the reader's, and telling would help an attacker probe.
    return PayloadDecryptionError(
        f"cannot decrypt {what}: payload failure (the encrypted content is tampered, truncated or "
        "reordered); fetch the bundle again from a trusted source"
    )
