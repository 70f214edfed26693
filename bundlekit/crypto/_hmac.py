"""HMAC-SHA-256 (RFC 2104) on two ``hashlib.sha256`` calls: the per-file MACs at a low fixed cost.

Every ``bundlekit-enc/1`` file costs four HMACs (HKDF extract, two expand blocks,
the header MAC), each under a key of its own, so nothing can be keyed once and
reused across files. On this interpreter ``hmac.digest`` spends most of its
1.2 to 1.4 us per call setting OpenSSL up, not hashing; the construction
written out (``H((K0 ^ opad) || H((K0 ^ ipad) || m))``, ``K0`` the key padded
with zeros to the 64-byte block) is two one-shot hashes and costs about 0.7 us.
When one key serves several messages (HKDF-Expand), :func:`hmac_pads` is
computed once and :func:`hmac_with` applied to each message.

The output is the same bytes as ``hmac.digest(key, msg, "sha256")``;
``tests/crypto/test_fast_paths.py`` proves it over random keys and messages of every
length class. Keys and digests are secrets: nothing here prints, logs or
raises with them.
"""

from __future__ import annotations

from hashlib import sha256
from typing import Final

__all__ = ["BLOCK_SIZE", "hmac_pads", "hmac_sha256", "hmac_with"]

BLOCK_SIZE: Final = 64  # SHA-256's block, in bytes
_IPAD: Final = bytes(b ^ 0x36 for b in range(256))  # translate tables: byte -> byte ^ ipad / opad
_OPAD: Final = bytes(b ^ 0x5C for b in range(256))

Pads = tuple[bytes, bytes]


def hmac_pads(key: bytes) -> Pads:
    """The key's two padded blocks ``(K0 ^ ipad, K0 ^ opad)``; a key longer than a block is hashed first."""
    if len(key) > BLOCK_SIZE:
        key = sha256(key).digest()
    block = key.ljust(BLOCK_SIZE, b"\x00")
    return block.translate(_IPAD), block.translate(_OPAD)


def hmac_with(pads: Pads, msg: bytes) -> bytes:
    """HMAC-SHA-256 of ``msg`` under the key whose :func:`hmac_pads` are ``pads``."""
    inner, outer = pads
    return sha256(outer + sha256(inner + msg).digest()).digest()


def hmac_sha256(key: bytes, msg: bytes) -> bytes:
    """HMAC-SHA-256 of ``msg`` under ``key``: the bytes of ``hmac.digest(key, msg, "sha256")``.

    :func:`hmac_with` over :func:`hmac_pads`, written out: it runs twice per file.
    """
    if len(key) > BLOCK_SIZE:
        key = sha256(key).digest()
    block = key.ljust(BLOCK_SIZE, b"\x00")
    return sha256(block.translate(_OPAD) + sha256(block.translate(_IPAD) + msg).digest()).digest()
