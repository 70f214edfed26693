"""The STREAM construction over AES-256-GCM: the private, hazardous layer.

Nothing here chooses keys, nonces or sizes; :mod:`bundlekit.crypto` (the recipe)
does that and is the only caller. This module only cuts a stream into
``CHUNK_SIZE`` chunks and seals or opens them, one at a time, so memory stays
bounded (two chunks at most, for the one-chunk lookahead).

Each chunk ``i`` is sealed under the nonce ``prefix(7) || uint32be(i) || flag(1)``,
where ``flag`` is ``0x01`` for the final chunk and ``0x00`` otherwise (the STREAM
construction of Hoang, Reyhanitabar, Rogaway and Vizár, laid out like age's
payload). Reordering changes the counter, truncation at a chunk boundary leaves a
chunk sealed with flag 0 in last position, and appended data leaves the real last
chunk (flag 1) in a non-final position: every one of them fails authentication.

The final chunk is the only one that may be short, and it may be empty only when
the whole plaintext is empty (then the payload is one empty final chunk, 16
bytes of tag). See specs/encryption.md, section 3.

Sealing is written for speed (issue 16): one cipher object per stream.
:func:`seal_stream` seals each chunk with ``encrypt_into`` into one reused
chunk buffer; :func:`seal_bytes` (a whole file in memory) seals a one-chunk
file with one call and one concatenation, a longer one in place into the
buffer it returns. Sealing stays on the calling thread: ``AESGCM`` holds the
GIL for the whole call (pyca/cryptography 48.0.0, ``src/rust/src/backend/aead.rs``
has no ``allow_threads``; two threads sealing 64 MB each took as long as one
after the other), so a worker thread would gain nothing.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO, Final

from cryptography.exceptions import InvalidTag

from bundlekit._lazy import lazy_module
from bundlekit.errors import PayloadDecryptionError, UsageError
from bundlekit.unixfs.chunker import iter_chunks, read_full

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers import aead as ciphers
else:  # imported at the first seal or open (DEVELOPERS.md, "Lazy imports": a plaintext tree's sync round has none)
    ciphers = lazy_module("cryptography.hazmat.primitives.ciphers.aead")

__all__ = [
    "CHUNK_SIZE",
    "MAX_CHUNKS",
    "NONCE_PREFIX_SIZE",
    "TAG_SIZE",
    "open_pieces",
    "open_stream",
    "seal_bytes",
    "seal_pieces",
    "seal_stream",
    "sealed_size",
    "slice_pieces",
]

CHUNK_SIZE: Final = 64 * 1024
TAG_SIZE: Final = 16
NONCE_PREFIX_SIZE: Final = 7
ENCRYPTED_CHUNK_SIZE: Final = CHUNK_SIZE + TAG_SIZE
# The counter is 32 bits wide; 2**32 chunks of 64 KiB is 256 TiB per file.
MAX_CHUNKS: Final = 2**32

_LAST: Final = b"\x01"
_NOT_LAST: Final = b"\x00"
_ONLY_CHUNK: Final = (0).to_bytes(4, "big") + _LAST  # the nonce tail of a one-chunk stream: counter 0, last


def _nonce(prefix: bytes, counter: int, last: bool) -> bytes:
    return prefix + counter.to_bytes(4, "big") + (_LAST if last else _NOT_LAST)


Piece = bytes | memoryview


def slice_pieces(data: bytes | memoryview, size: int) -> Iterator[memoryview]:
    """The pieces :func:`~bundlekit.unixfs.chunker.iter_chunks` cuts from a stream, as zero-copy views of ``data``."""
    view = memoryview(data)
    yield view[:size]
    for start in range(size, len(view), size):
        yield view[start : start + size]


def _with_last(pieces: Iterator[Piece]) -> Iterator[tuple[Piece, bool]]:
    """Pair each piece with whether it is the last one (one piece of lookahead)."""
    current = next(pieces)
    for following in pieces:
        yield current, False
        current = following
    yield current, True


def seal_pieces(key: bytes, prefix: bytes, aad: bytes, pieces: Iterator[Piece]) -> Iterator[bytes]:
    """Seal plaintext pieces (``CHUNK_SIZE`` each, the last 0 to ``CHUNK_SIZE``) into chunks.

    ``key`` is a 32-byte AES-256-GCM key used for this one stream only; ``prefix``
    is the 7-byte nonce prefix; ``aad`` is the associated data of every chunk.
    Raises ``UsageError`` past ``MAX_CHUNKS`` chunks.
    """
    aead = _aead(key, prefix)
    for counter, (piece, last) in enumerate(_with_last(pieces)):
        if counter >= MAX_CHUNKS:
            raise _too_large()
        yield aead.encrypt(_nonce(prefix, counter, last), piece, aad)


def sealed_size(plaintext_size: int) -> int:
    """The payload size of a ``plaintext_size``-byte plaintext: the bytes plus one tag per chunk."""
    return plaintext_size + max(1, -(-plaintext_size // CHUNK_SIZE)) * TAG_SIZE


def _aead(key: bytes, prefix: bytes) -> ciphers.AESGCM:
    if len(key) != 32 or len(prefix) != NONCE_PREFIX_SIZE:
        raise UsageError("internal: the STREAM layer needs a 32-byte key and a 7-byte nonce prefix")
    return ciphers.AESGCM(key)


def _too_large() -> UsageError:
    return UsageError("cannot encrypt: the input is larger than 256 TiB, the per-file limit")


def seal_bytes(key: bytes, prefix: bytes, aad: bytes, head: bytes, data: bytes | memoryview) -> bytes:
    """``head`` then the sealed chunks of ``data`` (those of :func:`seal_pieces`), as one ``bytes``.

    A file of one chunk (most memory files) is one ``AESGCM.encrypt`` call and
    one concatenation. A longer one is sealed in place, chunk by chunk, into the
    buffer of a ``BytesIO`` sized once (``getbuffer()`` is a writable view of
    it), which ``getvalue()`` then returns without copying it in CPython: one
    zero-fill and the AES pass, where sealing into a ``bytearray`` adds the copy
    out to ``bytes`` and a ``bytes`` per chunk adds a join copy. Raises
    ``UsageError`` past ``MAX_CHUNKS`` chunks.
    """
    size = len(data)
    aead = _aead(key, prefix)
    if size <= CHUNK_SIZE:
        return head + aead.encrypt(prefix + _ONLY_CHUNK, data, aad)
    chunks = -(-size // CHUNK_SIZE)
    if chunks > MAX_CHUNKS:
        raise _too_large()
    out = io.BytesIO()
    out.seek(len(head) + sealed_size(size) - 1)
    out.write(b"\x00")  # the buffer at its final size, zero-filled
    out.seek(0)
    out.write(head)
    encrypt_into = aead.encrypt_into
    view = memoryview(data)
    last = chunks - 1
    at = len(head)
    with out.getbuffer() as sealed:
        for counter in range(chunks):
            piece = view[counter * CHUNK_SIZE : (counter + 1) * CHUNK_SIZE]
            end = at + len(piece) + TAG_SIZE
            encrypt_into(_nonce(prefix, counter, counter == last), piece, aad, sealed[at:end])
            at = end
    return out.getvalue()


def seal_stream(key: bytes, prefix: bytes, aad: bytes, src: BinaryIO, dst: BinaryIO) -> None:
    """Seal ``src`` chunk by chunk into ``dst`` (the chunks of :func:`seal_pieces`); memory stays bounded.

    Each chunk is sealed into one reused buffer and written from it; the one-chunk
    lookahead decides the final flag. Raises ``UsageError`` past ``MAX_CHUNKS`` chunks.
    """
    encrypt_into = _aead(key, prefix).encrypt_into
    buffer = memoryview(bytearray(ENCRYPTED_CHUNK_SIZE))
    piece = read_full(src.read, CHUNK_SIZE)
    counter = 0
    while True:
        following = read_full(src.read, CHUNK_SIZE) if len(piece) == CHUNK_SIZE else b""
        if counter >= MAX_CHUNKS:
            raise _too_large()
        sealed = buffer[: len(piece) + TAG_SIZE]
        encrypt_into(_nonce(prefix, counter, not following), piece, aad, sealed)
        dst.write(sealed)
        if not following:
            return
        piece = following
        counter += 1


def open_pieces(key: bytes, prefix: bytes, aad: bytes, pieces: Iterator[Piece], what: str) -> Iterator[bytes]:
    """Open sealed pieces (``CHUNK_SIZE + TAG_SIZE`` each, the last shorter) one by one.

    Each chunk is authenticated before its plaintext is yielded, but earlier
    chunks are already out when a later one fails: callers write to a temporary
    place and discard it on error. ``what`` names the file in errors.

    Raises ``PayloadDecryptionError`` when a chunk does not authenticate, the
    payload is missing, truncated, reordered or extended, or a non-first final
    chunk is empty.
    """
    aead = ciphers.AESGCM(key)
    for counter, (sealed, last) in enumerate(_with_last(pieces)):
        if len(sealed) < TAG_SIZE or counter >= MAX_CHUNKS:
            raise _payload_failure(what)
        if last and counter > 0 and len(sealed) == TAG_SIZE:
            # Only an empty plaintext ends in an empty chunk; elsewhere it means
            # the stream was cut or spliced.
            raise _payload_failure(what)
        try:
            yield aead.decrypt(_nonce(prefix, counter, last), sealed, aad)
        except InvalidTag:
            raise _payload_failure(what) from None


def open_stream(key: bytes, prefix: bytes, aad: bytes, src: BinaryIO, dst: BinaryIO, what: str) -> None:
    """Open a sealed stream from ``src`` into ``dst`` (see :func:`open_pieces`)."""
    dst.writelines(open_pieces(key, prefix, aad, iter_chunks(src, ENCRYPTED_CHUNK_SIZE), what))


def _payload_failure(what: str) -> PayloadDecryptionError:
    # One message for every payload failure: which chunk or byte failed is no
    # business of the reader's, and telling would help an attacker probe.
    return PayloadDecryptionError(
        f"cannot decrypt {what}: payload failure (the encrypted content is tampered, truncated or "
        "reordered); fetch the bundle again from a trusted source"
    )
