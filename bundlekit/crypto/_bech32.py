"""Bech32 (BIP 173) as age uses it: no length limit, one case per string.

age encodes its keys in Bech32 (C2SP ``age.md``, "Conventions"): recipients with the
human-readable part ``age`` (``age1...``, lowercase), identities with
``AGE-SECRET-KEY-`` (uppercase). BIP 173's 90-character limit does not apply; the
checksum is always computed over the lowercase string. ``decode`` refuses mixed
case, characters outside the charset, a bad checksum and non-zero padding bits, so
every key has exactly one spelling. Tests check both directions against Debian's
``age-keygen``.
"""

from __future__ import annotations

from typing import Final

from bundlekit.errors import UsageError

__all__ = ["decode", "encode"]

_CHARSET: Final = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_INDEX: Final = {ch: i for i, ch in enumerate(_CHARSET)}
_GENERATOR: Final = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
_MAX_TEXT: Final = 4096  # far above any key this module meets; bounds the work on hostile text


def _polymod(values: list[int]) -> int:
    chk = 1
    for value in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ value
        for i, gen in enumerate(_GENERATOR):
            if (top >> i) & 1:
                chk ^= gen
    return chk


def _hrp_expand(hrp: str) -> list[int]:
    return [ord(ch) >> 5 for ch in hrp] + [0] + [ord(ch) & 31 for ch in hrp]


def _convert(data: bytes | list[int], src: int, dst: int, *, pad: bool) -> list[int]:
    """Regroup bits from ``src``-bit to ``dst``-bit values; ``ValueError`` for bad padding."""
    acc = bits = 0
    out: list[int] = []
    mask = (1 << dst) - 1
    for value in data:
        acc = (acc << src) | value
        bits += src
        while bits >= dst:
            bits -= dst
            out.append((acc >> bits) & mask)
    if pad:
        if bits:
            out.append((acc << (dst - bits)) & mask)
    elif bits >= src or (acc << (dst - bits)) & mask:
        raise ValueError("non-zero padding")
    return out


def encode(hrp: str, data: bytes, *, upper: bool = False) -> str:
    """``hrp`` + ``1`` + the data and checksum in the Bech32 charset; uppercase with ``upper``."""
    low = hrp.lower()
    words = _convert(data, 8, 5, pad=True)
    polymod = _polymod(_hrp_expand(low) + words + [0] * 6) ^ 1
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    text = low + "1" + "".join(_CHARSET[w] for w in words + checksum)
    return text.upper() if upper else text


def decode(text: str) -> tuple[str, bytes]:
    """``(hrp, data)`` of a Bech32 string; the hrp is returned lowercase.

    Raises ``UsageError`` (the caller turns it into its own error and never
    quotes the text, which may be a secret key) for mixed case, a character
    outside the charset, a missing separator, a bad checksum or bad padding.
    """
    if len(text) > _MAX_TEXT or not text.isascii():
        raise UsageError("not Bech32: too long or not ASCII")
    if text.lower() != text and text.upper() != text:
        raise UsageError("not Bech32: mixed upper and lower case")
    low = text.lower()
    sep = low.rfind("1")
    if sep < 1 or len(low) - sep - 1 < 6:
        raise UsageError("not Bech32: no separator or too short")
    hrp, rest = low[:sep], low[sep + 1:]
    if any(not 33 <= ord(ch) <= 126 for ch in hrp) or any(ch not in _INDEX for ch in rest):
        raise UsageError("not Bech32: a character outside the charset")
    words = [_INDEX[ch] for ch in rest]
    if _polymod(_hrp_expand(hrp) + words) != 1:
        raise UsageError("not Bech32: the checksum does not match")
    try:
        return hrp, bytes(_convert(words[:-6], 5, 8, pad=False))
    except ValueError:
        raise UsageError("not Bech32: non-zero padding bits") from None
