"""The unsigned structure of an IPNS record: the ``IpnsEntry`` protobuf, its DAG-CBOR ``data``, its validity.

Follows the IPNS Record specification (github.com/ipfs/specs, ``src/ipns/ipns-record.md``,
commit 0005ac87). Nothing here signs or verifies: ``bundlekit.names.record`` verifies records,
the gateway (``bundlekit.gateway.record_cache``) only reads their ``TTL`` and ``Validity``. Both
read the bytes through this one codec, which raises ``CodecError`` for bytes that are not what
it reads; each caller says what that means at its boundary (a refused record, a 500).

* ``encode_entry``/``decode_entry``: the nine ``IpnsEntry`` fields (``FIELDS``), varint and
  length-delimited wire types; unknown fields are skipped, a known field in the wrong wire type
  or any field running past the end is malformed.
* ``decode_data``: the DAG-CBOR ``data`` map (field 9), as decoded; which keys it must hold is
  the caller's rule. A map of text keys whose values are unsigned integers, byte or text strings, in
  the canonical form DAG-CBOR requires (every record bundlekit and the npm ``ipns`` package write) is
  read here (``_plain_map``); anything else goes to ``dag_cbor``, which decodes or refuses it: a
  follower's sync then never imports ``dag_cbor`` and ``multiformats`` (~70 ms of a 0.5 s round).
* ``parse_validity``/``format_validity``: the RFC 3339 ``Validity`` (EOL), read to the nanosecond,
  written in UTC with nine fractional digits as the npm ``ipns`` package writes it.

The protobuf codec is tested against records the npm ``ipns`` package wrote
(``fixtures/vectors/ipns/``).
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime
from typing import Any, Final

from bundlekit.errors import CodecError
from bundlekit.ipld.cid import decode_varint, encode_varint

__all__ = [
    "EOL",
    "FIELDS",
    "MAX_RECORD_SIZE",
    "decode_data",
    "decode_entry",
    "encode_entry",
    "format_validity",
    "parse_validity",
]

MAX_RECORD_SIZE: Final = 10 * 1024  # the specification's limit on a whole record
EOL: Final = 0  # the one ValidityType: Validity is the record's end of life
_NS: Final = 1_000_000_000
_VALIDITY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$")

# IpnsEntry field numbers and whether each is a varint (else length-delimited bytes).
FIELDS: Final = {1: ("value", False), 2: ("signatureV1", False), 3: ("validityType", True),
                 4: ("validity", False), 5: ("sequence", True), 6: ("ttl", True), 7: ("pubKey", False),
                 8: ("signatureV2", False), 9: ("data", False)}


def encode_entry(fields: dict[str, bytes | int]) -> bytes:
    """Serialise ``IpnsEntry`` fields (by name) in field-number order."""
    out = bytearray()
    for number, (name, varint) in FIELDS.items():
        value = fields.get(name)
        if value is None:
            continue
        if varint:
            assert isinstance(value, int)
            out += encode_varint(number << 3) + encode_varint(value)
        else:
            assert isinstance(value, bytes)
            out += encode_varint(number << 3 | 2) + encode_varint(len(value)) + value
    return bytes(out)


def decode_entry(data: bytes) -> dict[str, bytes | int]:
    """Parse an ``IpnsEntry`` into its known fields (by name); ``CodecError`` for malformed bytes."""
    fields: dict[str, bytes | int] = {}
    pos = 0
    try:
        while pos < len(data):
            key, pos = decode_varint(data, pos)
            number, wire = key >> 3, key & 7
            value: bytes | int
            if wire == 0:
                value, pos = decode_varint(data, pos)
            elif wire in (1, 2, 5):
                if wire == 2:
                    size, pos = decode_varint(data, pos)
                else:
                    size = 8 if wire == 1 else 4
                if pos + size > len(data):
                    raise ValueError("truncated field")
                value, pos = data[pos:pos + size], pos + size
            else:
                raise ValueError(f"wire type {wire}")
            known = FIELDS.get(number)
            if known is not None:
                if known[1] != isinstance(value, int):
                    raise ValueError(f"field {number} has the wrong wire type")
                fields[known[0]] = value
    except ValueError as exc:
        raise CodecError(f"the IPNS record is not a valid IpnsEntry protobuf ({exc})") from exc
    return fields


def decode_data(data: bytes) -> dict[str, Any]:
    """The DAG-CBOR map of a record's ``data`` field; ``CodecError`` when it is not DAG-CBOR or not a map."""
    plain = _plain_map(data)
    if plain is not None:
        return plain
    import dag_cbor  # lazy: 70 ms to import with multiformats, and only an unusual record's data needs it

    try:
        doc = dag_cbor.decode(data)
    except Exception as exc:  # noqa: BLE001  (dag_cbor raises several unrelated classes for bad input)
        raise CodecError(f"the IPNS record's data is not DAG-CBOR ({type(exc).__name__})") from None
    if not isinstance(doc, dict):
        raise CodecError("the IPNS record's data is not a DAG-CBOR map")
    return doc


def _head(data: bytes, pos: int) -> tuple[int, int, int] | None:
    """The major type, argument and next position of the CBOR item at ``pos``, when its argument is encoded in
    the shortest form (DAG-CBOR's rule); None for anything else (indefinite, reserved, non-minimal, cut short)."""
    if pos >= len(data):
        return None
    first = data[pos]
    major, info = first >> 5, first & 0x1F
    if info < 24:
        return major, info, pos + 1
    if info > 27:
        return None
    width = 1 << (info - 24)
    end = pos + 1 + width
    if end > len(data):
        return None
    value = int.from_bytes(data[pos + 1:end], "big")
    if value < (24 if width == 1 else 1 << (4 * width)):  # fits a shorter form: not canonical
        return None
    return major, value, end


def _plain_map(data: bytes) -> dict[str, Any] | None:
    """``data`` as ``dag_cbor.decode`` gives it when it is one canonical DAG-CBOR map of text keys (sorted by
    length, then bytes; no repeats) to unsigned integers, byte strings or UTF-8 text strings, and nothing after
    it; None for any other bytes (``dag_cbor`` then decodes or refuses them). Tested against ``dag_cbor``."""
    head = _head(data, 0)
    if head is None or head[0] != 5:
        return None
    count, pos = head[1], head[2]
    doc: dict[str, Any] = {}
    previous = b""
    for _ in range(count):
        key = _head(data, pos)
        if key is None or key[0] != 3 or key[2] + key[1] > len(data):
            return None
        raw, pos = data[key[2]:key[2] + key[1]], key[2] + key[1]
        if doc and (len(raw), raw) <= (len(previous), previous):
            return None
        value = _head(data, pos)
        if value is None or value[0] not in (0, 2, 3):
            return None
        item: int | bytes | str = value[1]
        pos = value[2]
        if value[0] != 0:
            if pos + value[1] > len(data):
                return None
            item, pos = data[pos:pos + value[1]], pos + value[1]
        try:
            doc[raw.decode("utf-8")] = item.decode("utf-8") if value[0] == 3 and isinstance(item, bytes) else item
        except UnicodeDecodeError:
            return None
        previous = raw
    return doc if pos == len(data) else None


def parse_validity(text: str) -> int:
    """An RFC 3339 ``Validity`` as Unix time in nanoseconds; ``CodecError`` when it is not one."""
    m = _VALIDITY.match(text)
    if m is None:
        raise CodecError(f"the IPNS record's validity {text[:60]!r} is not an RFC 3339 time")
    year, month, day, hour, minute, second, fraction, zone = m.groups()
    parts = (int(year), int(month), int(day), int(hour), int(minute), int(second))
    if not (parts[0] >= 1 and 1 <= parts[1] <= 12 and 1 <= parts[2] <= calendar.monthrange(*parts[:2])[1]
            and parts[3] < 24 and parts[4] < 60 and parts[5] < 60):
        raise CodecError(f"the IPNS record's validity {text[:60]!r} is not a valid time")
    offset = 0
    if zone not in ("Z", "z"):
        offset = (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    seconds = calendar.timegm((*parts, 0, 0, 0)) - offset
    return seconds * _NS + int((fraction or "0").ljust(9, "0"))


def format_validity(when: datetime) -> str:
    """RFC 3339 in UTC with nine fractional digits, as the npm ``ipns`` package writes it."""
    w = when.astimezone(UTC)
    return (f"{w.year:04d}-{w.month:02d}-{w.day:02d}T{w.hour:02d}:{w.minute:02d}:{w.second:02d}."
            f"{w.microsecond * 1000:09d}Z")
