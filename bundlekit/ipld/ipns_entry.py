"""The unsigned structure of an IPNS record: the ``IpnsEntry`` protobuf, its DAG-CBOR ``data``, its validity.

Follows the IPNS Record specification (github.com/ipfs/specs, ``src/ipns/ipns-record.md``,
commit 0005ac87). Nothing here signs or verifies: ``bundlekit.names.record`` verifies records,
the gateway (``bundlekit.gateway.record_cache``) only reads their ``TTL`` and ``Validity``. Both
read the bytes through this one codec, which raises ``CodecError`` for bytes that are not what
it reads; each caller says what that means at its boundary (a refused record, a 500).

* ``encode_entry``/``decode_entry``: the nine ``IpnsEntry`` fields (``FIELDS``), varint and
  length-delimited wire types; unknown fields are skipped, a known field in the wrong wire type
  or any field running past the end is malformed.
* ``decode_data``: the DAG-CBOR ``data`` map (field 9), as decoded (the usual shape by ``ipld.cbormap``,
  anything else by ``dag_cbor``); which keys it must hold is the caller's rule.
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
from bundlekit.ipld.cbormap import decode_flat_map
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
    """The DAG-CBOR map of a record's ``data`` field; ``CodecError`` when it is not DAG-CBOR or not a map.
    The usual map (text keys, byte strings and unsigned integers, canonical) is read without ``dag_cbor``
    (``ipld.cbormap``); any other bytes go to ``dag_cbor``, whose verdict stands."""
    flat = decode_flat_map(data)
    if flat is not None:
        return dict(flat)
    import dag_cbor  # lazy: 25 ms to import (60 with multiformats), only for data not of the usual shape

    try:
        doc = dag_cbor.decode(data)
    except Exception as exc:  # noqa: BLE001  (dag_cbor raises several unrelated classes for bad input)
        raise CodecError(f"the IPNS record's data is not DAG-CBOR ({type(exc).__name__})") from None
    if not isinstance(doc, dict):
        raise CodecError("the IPNS record's data is not a DAG-CBOR map")
    return doc


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
