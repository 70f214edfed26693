"""CIDs in the hot path as raw bytes; ``multiformats`` at the edges.

Inside bundlekit a CID is its binary form (``bytes``): CIDv0 is the 34-byte
sha2-256 multihash, CIDv1 is ``0x01 || varint(codec) || multihash``. Building
those few bytes by hand is ~100x faster than ``multiformats.CID`` per object,
which matters when a bundle holds tens of thousands of blocks. Parsing what a
user types (any multibase) and anything unusual goes through ``multiformats``;
the tests check that both paths agree.

Only what UnixFS needs is accepted for verification: codecs dag-pb and raw,
hash function sha2-256. Anything else raises ``UnsupportedBlock``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from typing import NamedTuple

from bundlekit.errors import BlockMismatch, CIDError, UnsupportedBlock

__all__ = [
    "DAG_PB",
    "MAX_BLOCK_SIZE",
    "RAW",
    "SHA2_256",
    "CIDInfo",
    "as_cidv1",
    "cid_from_digest",
    "cid_from_text",
    "cid_to_str",
    "decode_varint",
    "encode_varint",
    "make_cid",
    "parse_cid",
    "parse_cid_bytes",
    "read_cid",
    "verify_block",
]

DAG_PB = 0x70
RAW = 0x55
SHA2_256 = 0x12
SHA2_256_LEN = 32

SUPPORTED_CODECS = frozenset({DAG_PB, RAW})
# The trustless gateway spec's block limit: what a verifier accepts from an untrusted source.
MAX_BLOCK_SIZE = 2 * 1024 * 1024

_V0_PREFIX = bytes([SHA2_256, SHA2_256_LEN])
_V1_PREFIX = {
    DAG_PB: bytes([0x01, DAG_PB, SHA2_256, SHA2_256_LEN]),
    RAW: bytes([0x01, RAW, SHA2_256, SHA2_256_LEN]),
}
# The CIDv1 shapes UnixFS produces, recognised whole: no varint decoding per block.
_V1_PREFIX_CODEC = {prefix: codec for codec, prefix in _V1_PREFIX.items()}


class CIDInfo(NamedTuple):
    """The parts of a binary CID."""

    version: int
    codec: int
    hash_code: int
    digest: bytes


def encode_varint(value: int) -> bytes:
    """Unsigned LEB128, as multiformats' varint (tested against it)."""
    if value < 0:
        raise ValueError("varint must be non-negative")
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_varint(buf: bytes | memoryview, pos: int = 0) -> tuple[int, int]:
    """Decode an unsigned varint at ``pos``; return ``(value, next_pos)``.

    Raises ``ValueError`` on truncation or on varints longer than 9 bytes
    (the multiformats limit), which also rejects non-minimal padding abuse.
    """
    end = len(buf)
    if pos < end and buf[pos] < 0x80:  # one-byte varints are nearly all of them
        return buf[pos], pos + 1
    value = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if byte == 0 and pos - start > 1:
                raise ValueError("non-minimal varint")
            return value, pos
        shift += 7
        if pos - start >= 9:
            raise ValueError("varint too long")


def cid_from_digest(version: int, codec: int, digest: bytes) -> bytes:
    """Binary CID for a sha2-256 ``digest``."""
    if version == 0:
        if codec != DAG_PB:
            raise CIDError("CIDv0 can only address dag-pb blocks")
        return _V0_PREFIX + digest
    if version == 1:
        prefix = _V1_PREFIX.get(codec)
        if prefix is None:
            prefix = b"\x01" + encode_varint(codec) + _V0_PREFIX
        return prefix + digest
    raise CIDError(f"unsupported CID version {version}")


def make_cid(version: int, codec: int, data: bytes) -> bytes:
    """Binary CID of ``data`` hashed with sha2-256."""
    return cid_from_digest(version, codec, hashlib.sha256(data).digest())


def _v1_header(buf: bytes | memoryview, pos: int) -> tuple[int, int, int, int]:
    """``(codec, hash_code, digest_length, digest_pos)`` of the CIDv1 at ``pos``; ``CIDError`` if malformed."""
    try:
        version, p = decode_varint(buf, pos)
        if version != 1:
            raise CIDError(f"unsupported CID version {version}")
        codec, p = decode_varint(buf, p)
        hash_code, p = decode_varint(buf, p)
        length, p = decode_varint(buf, p)
    except ValueError as exc:  # CIDError is a ValueError too: both read "malformed CID: ..."
        raise CIDError(f"malformed CID: {exc}") from exc
    return codec, hash_code, length, p


def read_cid(buf: bytes | memoryview, pos: int = 0) -> tuple[bytes, int]:
    """Read one binary CID starting at ``pos``; return ``(cid_bytes, next_pos)``.

    Used by the CAR reader, where CIDs are not length-prefixed.
    """
    if len(buf) - pos >= 2 and buf[pos] == SHA2_256 and buf[pos + 1] == SHA2_256_LEN:
        end = pos + 2 + SHA2_256_LEN
        if end > len(buf):
            raise CIDError("malformed CID: truncated CIDv0")
        return bytes(buf[pos:end]), end
    if (
        len(buf) - pos >= 36
        and buf[pos] == 1
        and buf[pos + 1] < 0x80
        and buf[pos + 2] == SHA2_256
        and buf[pos + 3] == SHA2_256_LEN
    ):  # CIDv1, one-byte codec, sha2-256: the shape of every block we write
        return bytes(buf[pos : pos + 36]), pos + 36
    _codec, _hash_code, length, p = _v1_header(buf, pos)
    end = p + length
    if end > len(buf):
        raise CIDError("truncated CID digest")
    return bytes(buf[pos:end]), end


def parse_cid_bytes(cid: bytes) -> CIDInfo:
    """Split a binary CID into its parts; raise ``CIDError`` if malformed."""
    if len(cid) == 34 and cid[0] == SHA2_256 and cid[1] == SHA2_256_LEN:
        return CIDInfo(0, DAG_PB, SHA2_256, cid[2:])
    if len(cid) == 36:
        codec = _V1_PREFIX_CODEC.get(cid[:4])
        if codec is not None:
            return CIDInfo(1, codec, SHA2_256, cid[4:])
    codec, hash_code, length, p = _v1_header(cid, 0)
    digest = cid[p:]
    if len(digest) != length:
        raise CIDError("CID digest length does not match its multihash header")
    return CIDInfo(1, codec, hash_code, bytes(digest))


def as_cidv1(cid: bytes) -> bytes:
    """The CIDv1 form of a binary CID: a CIDv0 becomes its dag-pb CIDv1 twin; raises ``CIDError``.

    Both forms name the same block, so stores key blocks by this form and
    comparisons of CIDs from different sources go through it.
    """
    if len(cid) == 34 and cid[:2] == _V0_PREFIX:
        return bytes((0x01, DAG_PB)) + cid
    parse_cid_bytes(cid)
    return cid


def cid_to_str(cid: bytes) -> str:
    """Canonical string form: base58btc for CIDv0, base32 (``b`` prefix) for CIDv1."""
    if len(cid) == 34 and cid[0] == SHA2_256 and cid[1] == SHA2_256_LEN:
        return _b58encode(cid)
    return "b" + base64.b32encode(cid).decode("ascii").lower().rstrip("=")


#: The longest CID text parsed. A sha2-256 CID is 59 characters in base32 and an identity CID inlining
#: kubo's 128 bytes at most about 220; multibase decoding takes time quadratic in the length (a 100,000
#: character string 1.3 s, a 5 MB key planted in pins.json hours), so a longer text is refused unread.
MAX_CID_TEXT = 4096


def parse_cid(text: str) -> bytes:
    """Parse a CID in any multibase (or bare base58btc CIDv0) into binary form (``CIDError`` for anything
    else, and unread for a text over ``MAX_CID_TEXT`` characters)."""
    from multiformats import CID  # edge only: user input

    text = text.strip()
    if len(text) > MAX_CID_TEXT:
        raise CIDError(f"not a valid CID: {text[:80]!r}... ({len(text)} characters; a CID has at most "
                       f"{MAX_CID_TEXT})")
    try:
        return bytes(CID.decode(text))
    except Exception as exc:  # multiformats raises a variety of ValueError/KeyError subclasses
        raise CIDError(
            f"not a valid CID: {text[:80]!r}; give a CID string such as bafy... (CIDv1) or Qm... (CIDv0)"
        ) from exc


def verify_block(cid: bytes, data: bytes, *, max_size: int | None = MAX_BLOCK_SIZE) -> None:
    """Check that ``data`` hashes to ``cid``.

    Raises ``UnsupportedBlock`` for an unknown codec, hash function or an
    oversized block, ``BlockMismatch`` when the digest differs.
    """
    if (max_size is None or len(data) <= max_size) and (
        (len(cid) == 36 and cid[:4] in _V1_PREFIX_CODEC) or (len(cid) == 34 and cid[:2] == _V0_PREFIX)
    ):
        # The sha2-256 CIDs UnixFS produces (nearly every block): the digest is the tail.
        if hashlib.sha256(data).digest() != cid[-SHA2_256_LEN:]:
            raise BlockMismatch(f"block {cid_to_str(cid)} does not match its content")
        return
    info = parse_cid_bytes(cid)
    if info.codec not in SUPPORTED_CODECS:
        raise UnsupportedBlock(f"block {cid_to_str(cid)} uses unsupported codec 0x{info.codec:x}")
    if info.hash_code != SHA2_256 or len(info.digest) != SHA2_256_LEN:
        raise UnsupportedBlock(f"block {cid_to_str(cid)} uses unsupported hash function 0x{info.hash_code:x}")
    if max_size is not None and len(data) > max_size:
        raise UnsupportedBlock(
            f"block {cid_to_str(cid)} is {len(data)} bytes, over the {max_size}-byte limit"
        )
    if hashlib.sha256(data).digest() != info.digest:
        raise BlockMismatch(f"block {cid_to_str(cid)} does not match its content")


_B58_ALPHABET = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _b58encode(data: bytes) -> str:
    n = int.from_bytes(data, "big")
    out = bytearray()
    while n:
        n, rem = divmod(n, 58)
        out.append(_B58_ALPHABET[rem])
    pad = len(data) - len(data.lstrip(b"\0"))
    return (b"1" * pad + bytes(reversed(out))).decode("ascii")


# The canonical base32 text of a CIDv1 parsed without multiformats (see cid_from_text): RFC 4648
# lower-case letters become Python's base-32 digits; every other byte becomes "!", which int() refuses.
_B32_ALPHABET = b"abcdefghijklmnopqrstuvwxyz234567"
_B32_TO_INT = bytes(
    b"0123456789abcdefghijklmnopqrstuv"[_B32_ALPHABET.index(i)] if i in _B32_ALPHABET else ord("!") for i in range(256)
)


@functools.lru_cache(maxsize=1 << 16)
def cid_from_text(text: str) -> bytes:
    """Parse a CID string; the canonical base32 CIDv1 form takes a fast path.

    ``multiformats`` costs milliseconds per CID and ``base64.b32decode`` is a
    Python loop; both dominate a manifest of thousands of files. The fast path
    maps the RFC 4648 alphabet onto Python's base-32 digits (one
    ``bytes.translate``) and lets ``int`` do the work. It accepts only
    canonical text (lower case, no padding, the spare low bits zero); anything else goes through ``parse_cid``. Results
    are cached (a loader parses each manifest CID when validating and again
    when checking the file). Raises ``CIDError``.
    """
    if 1 < len(text) <= MAX_CID_TEXT and text[0] == "b" and text.isascii():  # longer: parse_cid refuses it
        body = text.encode("ascii")[1:].translate(_B32_TO_INT)
        nbits = len(body) * 5
        spare = nbits % 8
        try:
            value = int(body, 32)
        except ValueError:  # a byte outside the alphabet
            return parse_cid(text)
        if spare < 5 and not value & ((1 << spare) - 1):
            cid = (value >> spare).to_bytes(nbits // 8, "big")
            if len(cid) == 36 and cid[:4] in _V1_PREFIX_CODEC:  # the usual case is already valid
                return cid
            # Only a CIDv1 has a multibase form: base32 bytes of a CIDv0 are left to parse_cid to refuse.
            if cid[:1] == b"\x01":
                parse_cid_bytes(cid)
                return cid
    return parse_cid(text)
