"""Leading-zero-preserving big-number bases: base58btc (``did:key``) and base36 (IPNS names).

The multibase encodings whose alphabet is not a power of two: the bytes are one
big-endian integer written in the alphabet, and each leading zero byte becomes
the alphabet's first character (as multiformats' ``base-x`` does).
"""

from __future__ import annotations

from typing import Final

__all__ = ["BASE36", "BASE58BTC", "decode", "encode"]

BASE58BTC: Final = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BASE36: Final = "0123456789abcdefghijklmnopqrstuvwxyz"


def encode(data: bytes, alphabet: str) -> str:
    """``data`` in ``alphabet`` (no multibase prefix)."""
    number = int.from_bytes(data, "big")
    digits: list[str] = []
    while number:
        number, digit = divmod(number, len(alphabet))
        digits.append(alphabet[digit])
    return alphabet[0] * (len(data) - len(data.lstrip(b"\0"))) + "".join(reversed(digits))


def decode(text: str, alphabet: str) -> bytes:
    """Inverse of :func:`encode`; ``ValueError`` for a character outside ``alphabet``."""
    number = 0
    for char in text:
        number = number * len(alphabet) + alphabet.index(char)
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\0" * (len(text) - len(text.lstrip(alphabet[0]))) + body
