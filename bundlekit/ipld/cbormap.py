"""DAG-CBOR of one flat map (text keys; byte-string and unsigned-integer values) without ``dag_cbor``.

An IPNS record's ``data`` is such a map (``Value``, ``Validity``, ``ValidityType``, ``Sequence``, ``TTL``:
the IPNS Record specification, github.com/ipfs/specs ``src/ipns/ipns-record.md``, commit 0005ac87). Importing
``dag_cbor`` (and ``multiformats`` with it) cost a writer's ``sync --name-key`` ~60 ms of CPU (issue 37: 7% of
the round at 10,000 memories) for two maps. The rules are DAG-CBOR's (github.com/ipld/ipld
``specs/codecs/dag-cbor/spec.md``): every head in its shortest form, definite lengths only, map keys text strings
sorted length-first then bytewise, no duplicate key, nothing after the map.

* :func:`encode_flat_map` writes exactly the bytes ``dag_cbor.encode`` writes for such a map (tested against
  dag-cbor 0.3.3 on random maps); None for any other value (the caller uses ``dag_cbor``).
* :func:`decode_flat_map` returns the map only for bytes that are canonical DAG-CBOR of such a map, which
  ``dag_cbor.decode`` reads to the same dict (tested against it); None for anything else, valid or not, so the
  caller hands those bytes to ``dag_cbor``, whose verdict (a value, an error) stays the one that counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["decode_flat_map", "encode_flat_map"]

_UINT: Final = 0
_BYTES: Final = 2
_TEXT: Final = 3
_MAP: Final = 5
_MAX_UINT: Final = (1 << 64) - 1


def _head(major: int, value: int) -> bytes:
    """The shortest head of ``major`` with argument ``value`` (0 to 2**64 - 1)."""
    if value < 24:
        return bytes((major << 5 | value,))
    for extra, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if value < 1 << (8 * width):
            return bytes((major << 5 | extra,)) + value.to_bytes(width, "big")
    raise ValueError("a CBOR argument is at most 2**64 - 1")


def encode_flat_map(doc: Mapping[str, object]) -> bytes | None:
    """``doc`` as DAG-CBOR, or None when a key is not text or a value is neither ``bytes`` nor an ``int`` from
    0 to 2**64 - 1 (``bool`` is not an integer here)."""
    items: list[tuple[bytes, bytes]] = []
    for key, value in doc.items():
        if not isinstance(key, str):
            return None
        if isinstance(value, bytes):
            encoded = _head(_BYTES, len(value)) + value
        elif isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_UINT:
            encoded = _head(_UINT, value)
        else:
            return None
        try:
            raw = key.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: not text CBOR can carry
            return None
        items.append((raw, encoded))
    items.sort(key=lambda item: (len(item[0]), item[0]))
    out = bytearray(_head(_MAP, len(items)))
    for raw, encoded in items:
        out += _head(_TEXT, len(raw)) + raw + encoded
    return bytes(out)


def _read_head(data: bytes, pos: int) -> tuple[int, int, int] | None:
    """``(major, argument, next position)`` of the head at ``pos`` when it is in its shortest form and
    definite; None otherwise (or past the end)."""
    if pos >= len(data):
        return None
    first = data[pos]
    major, extra = first >> 5, first & 0x1F
    if extra < 24:
        return major, extra, pos + 1
    if extra > 27:
        return None
    width = 1 << (extra - 24)
    if pos + 1 + width > len(data):
        return None
    value = int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
    if value < (24 if width == 1 else 1 << (4 * width)):  # a shorter head would hold it
        return None
    return major, value, pos + 1 + width


def _read_item(data: bytes, pos: int, major: int) -> tuple[bytes | int, int] | None:
    """The byte or text string (as bytes) or unsigned integer of ``major`` at ``pos``, and the next position."""
    head = _read_head(data, pos)
    if head is None or head[0] != major:
        return None
    _major, value, pos = head
    if major == _UINT:
        return value, pos
    if pos + value > len(data):
        return None
    return data[pos : pos + value], pos + value


def decode_flat_map(data: bytes) -> dict[str, bytes | int] | None:
    """The map ``data`` holds when it is canonical DAG-CBOR of a flat map (see the module); else None."""
    head = _read_head(data, 0)
    if head is None or head[0] != _MAP:
        return None
    _major, count, pos = head
    doc: dict[str, bytes | int] = {}
    last: bytes | None = None
    for _ in range(count):
        key = _read_item(data, pos, _TEXT)
        if key is None:
            return None
        raw, pos = key
        assert isinstance(raw, bytes)
        if last is not None and (len(raw), raw) <= (len(last), last):  # out of order, or a duplicate
            return None
        last = raw
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if pos >= len(data):
            return None
        value = _read_item(data, pos, data[pos] >> 5) if data[pos] >> 5 in (_UINT, _BYTES) else None
        if value is None:
            return None
        doc[name], pos = value
    return doc if pos == len(data) else None
