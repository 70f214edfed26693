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

The Delegated Routing V1 HTTP API answers a record with boxo's routing server rule instead
(github.com/ipfs/boxo ``routing/http/server/server.go``, ``GetIPNS`` and ``setIPNSCacheControl``,
commit 8df89a78; the spec, github.com/ipfs/specs ``src/routing/http-routing-v1.md``, commit
8721f873, "Response Headers"): ``routing_cache_headers``.

* The remaining validity is the whole seconds (truncated) until an EOL ``Validity``; a record
  with none that reads has 0 left. With nothing left (expired): ``Cache-Control: no-store``.
* Otherwise ``public, max-age=<m>, stale-while-revalidate=<s>, stale-if-error=<s>``: ``m`` is the
  record's ``TTL`` in whole seconds (5 minutes, boxo's ``DefaultRecordTTL``, without one) floored
  at 0 and cut to the remaining validity, ``s`` the validity left after it (``m + s`` never passes
  the EOL); ``Expires`` is the EOL as an HTTP date, ``Last-Modified`` the time of the response.

The record is read with the IPNS record codec the names layer verifies with,
``bundlekit.ipld.ipns_entry`` (the gateway sits below ``bundlekit.names``); its ``CodecError``
is the caller's 500. Nothing is verified (the client verifies records, specs/gateway.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from email.utils import formatdate
from typing import Any, Final

from bundlekit.errors import CodecError
from bundlekit.ipld.ipns_entry import EOL, MAX_RECORD_SIZE, decode_data, decode_entry, parse_validity

__all__ = ["record_cache_headers", "record_eol_ns", "record_max_age", "routing_cache_headers"]

_NS: Final = 1_000_000_000
#: boxo ``ipns.DefaultRecordTTL``: the max-age of a record that carries no TTL.
DEFAULT_RECORD_TTL_S: Final = 300


def record_cache_headers(record: bytes, now_ns: int) -> list[tuple[str, str]]:
    """``Cache-Control: public, max-age=<s>`` for a record with a TTL, else ``Last-Modified: <now>``."""
    max_age = record_max_age(record, now_ns)
    if max_age is None:
        return [("Last-Modified", formatdate(now_ns // _NS, usegmt=True))]
    return [("Cache-Control", f"public, max-age={max_age}")]


def routing_cache_headers(record: bytes, now_ns: int) -> list[tuple[str, str]]:
    """The caching headers of a routing API record answer at ``now_ns``, as boxo's routing server sets them."""
    doc = _record_data(record)
    eol = _eol_ns(doc)
    remaining = 0 if eol is None else _whole_seconds(eol - now_ns)
    headers: list[tuple[str, str]] = []
    if eol is not None:
        headers.append(("Expires", formatdate(eol // _NS, usegmt=True)))
    ttl = doc.get("TTL")
    ttl_s = ttl // _NS if type(ttl) is int else DEFAULT_RECORD_TTL_S
    if remaining <= 0:
        headers.append(("Cache-Control", "no-store"))
    else:
        max_age = min(max(0, ttl_s), remaining)
        stale = remaining - max_age
        headers.append(("Cache-Control",
                        f"public, max-age={max_age}, stale-while-revalidate={stale}, stale-if-error={stale}"))
    headers.append(("Last-Modified", formatdate(now_ns // _NS, usegmt=True)))
    return headers


def _whole_seconds(ns: int) -> int:
    """Nanoseconds as whole seconds truncated toward zero (Go's ``int(d.Seconds())``)."""
    return ns // _NS if ns >= 0 else -((-ns) // _NS)


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


def record_eol_ns(record: bytes) -> int | None:
    """The record's EOL ``Validity`` in Unix ns (None without one that reads); ``CodecError`` for no record data."""
    return _eol_ns(_record_data(record))


def _record_data(record: bytes) -> Mapping[str, Any]:
    """The DAG-CBOR map in the ``IpnsEntry``'s ``data`` field; ``CodecError`` when there is none."""
    if len(record) > MAX_RECORD_SIZE:
        raise CodecError(f"the IPNS record is {len(record)} bytes, over the {MAX_RECORD_SIZE}-byte limit")
    data = decode_entry(record).get("data")
    if not isinstance(data, bytes) or not data:
        raise CodecError("the IPNS record has no DAG-CBOR data (a V1-only record)")
    return decode_data(data)


def _eol_ns(doc: Mapping[str, Any]) -> int | None:
    """The record's EOL ``Validity`` in Unix ns; None when it has none that reads (then the TTL is not cut)."""
    validity = doc.get("Validity")
    if type(doc.get("ValidityType")) is not int or doc["ValidityType"] != EOL or not isinstance(validity, bytes):
        return None
    try:
        return parse_validity(validity.decode("ascii", "replace"))
    except CodecError:
        return None
