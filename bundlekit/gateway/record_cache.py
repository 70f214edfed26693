"""How long an HTTP cache may keep an IPNS record the gateway serves: its ``Cache-Control`` or ``Last-Modified``.

Follows the reference gateway, boxo (github.com/ipfs/boxo, ``gateway/handler_ipns_record.go``,
``serveIpnsRecord`` and ``ipnsRecordMaxAge``, commit 8df89a78):

* ``max-age`` is the record's ``TTL`` (DAG-CBOR ``data``, nanoseconds), cut to the time left until
  its ``Validity`` (EOL) so no cache keeps a record past its expiry, floored at 0 (an expired record,
  a negative TTL), then truncated to whole seconds (never rounded up past the EOL).
* A record without an integer ``TTL`` gets no ``Cache-Control`` but ``Last-Modified``: the time of
  the response.
* A record that is not an ``IpnsEntry`` protobuf of at most 10 KiB whose ``data`` (field 9) is a
  DAG-CBOR map cannot be served (boxo answers 500): ``CodecError``.

The gateway layer sits below ``bundlekit.names``, so the two fields are read here with what this
layer has: the protobuf varints of ``bundlekit.ipld`` and ``dag_cbor``. Nothing is verified (the
client verifies records, specs/gateway.md).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from email.utils import formatdate
from typing import Final

from bundlekit.errors import CodecError
from bundlekit.ipld.cid import decode_varint

__all__ = ["record_cache_headers", "record_max_age"]

_MAX_RECORD_SIZE: Final = 10 * 1024  # the IPNS Record specification's limit, as boxo's ipns.MaxRecordSize
_DATA_FIELD: Final = 9
_EOL: Final = 0
_NS: Final = 1_000_000_000
# RFC 3339 as Go's time.RFC3339Nano parses it (boxo's util.ParseRFC3339).
_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:Z|([+-])(\d{2}):(\d{2}))")


def record_cache_headers(record: bytes, now_ns: int) -> list[tuple[str, str]]:
    """``Cache-Control: public, max-age=<s>`` for a record with a TTL, else ``Last-Modified: <now>``."""
    max_age = record_max_age(record, now_ns)
    if max_age is None:
        return [("Last-Modified", formatdate(now_ns // _NS, usegmt=True))]
    return [("Cache-Control", f"public, max-age={max_age}")]


def record_max_age(record: bytes, now_ns: int) -> int | None:
    """Seconds a cache may keep ``record`` at ``now_ns`` (Unix time in ns); None when it has no TTL."""
    doc = _record_data(record)
    ttl = doc.get("TTL")
    if type(ttl) is not int:
        return None
    max_age = ttl
    eol = _eol_ns(doc)
    if eol is not None:
        max_age = min(max_age, eol - now_ns)
    return max(0, max_age) // _NS


def _record_data(record: bytes) -> Mapping[str, object]:
    """The DAG-CBOR map in the ``IpnsEntry``'s ``data`` field; ``CodecError`` when there is none."""
    if len(record) > _MAX_RECORD_SIZE:
        raise CodecError(f"the IPNS record is {len(record)} bytes, over the {_MAX_RECORD_SIZE}-byte limit")
    data = b""
    pos = 0
    try:
        while pos < len(record):
            key, pos = decode_varint(record, pos)
            wire = key & 7
            if wire == 0:
                _, pos = decode_varint(record, pos)
            elif wire == 2:
                length, pos = decode_varint(record, pos)
                if pos + length > len(record):
                    raise CodecError("a field runs past the end")
                if key >> 3 == _DATA_FIELD:
                    data = record[pos : pos + length]
                pos += length
            elif wire in (1, 5):
                pos += 8 if wire == 1 else 4
            else:
                raise CodecError(f"wire type {wire}")
        if pos > len(record):
            raise CodecError("the last field runs past the end")
    except ValueError as exc:  # a truncated or over-long varint, or a field past the end
        raise CodecError(f"the IPNS record is not an IpnsEntry protobuf ({exc})") from None
    if not data:
        raise CodecError("the IPNS record has no DAG-CBOR data (a V1-only record)")
    import dag_cbor  # lazy: only IPNS record responses need it

    try:
        doc = dag_cbor.decode(data)
    except Exception:  # noqa: BLE001  (dag_cbor raises several unrelated classes for bad input)
        doc = None
    if not isinstance(doc, dict):
        raise CodecError("the IPNS record's data is not a DAG-CBOR map")
    return doc


def _eol_ns(doc: Mapping[str, object]) -> int | None:
    """The record's EOL ``Validity`` in Unix ns; None when it has none boxo can read (then TTL is not cut)."""
    validity = doc.get("Validity")
    if type(doc.get("ValidityType")) is not int or doc["ValidityType"] != _EOL or not isinstance(validity, bytes):
        return None
    m = _RFC3339.fullmatch(validity.decode("ascii", "replace"))
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, sign, off_h, off_m = m.groups()
    parts = (int(year), int(month), int(day), int(hour), int(minute), int(second))
    if not (parts[0] >= 1 and 1 <= parts[1] <= 12 and 1 <= parts[2] <= calendar.monthrange(*parts[:2])[1]
            and parts[3] < 24 and parts[4] < 60 and parts[5] < 60 and (sign is None or (int(off_h) < 24 and int(off_m) < 60))):
        return None
    offset = 0 if sign is None else (1 if sign == "+" else -1) * (int(off_h) * 3600 + int(off_m) * 60)
    seconds = calendar.timegm((*parts, 0, 0, 0)) - offset
    return seconds * _NS + int((fraction or "0")[:9].ljust(9, "0"))
