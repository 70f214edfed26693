"""The IPNS paths of the Delegated Routing V1 HTTP API, served by ``bundlekit serve`` from its block store.

``GET`` and ``PUT /routing/v1/ipns/{name}`` (IPIP-379), as the specification
(github.com/ipfs/specs ``src/routing/http-routing-v1.md``, commit 8721f873, "IPNS API",
"Error Codes"; ``src/ipips/ipip-0513.md``) and boxo's server (github.com/ipfs/boxo
``routing/http/server/server.go``, ``GetIPNS``/``PutIPNS``, commit 8df89a78) answer them:

* ``{name}`` is a CIDv1 with the ``libp2p-key`` codec in any multibase (``k51...`` base36,
  ``bafz...`` base32 as the npm client sends it); anything else is ``400``.
* ``GET``: ``Accept`` missing, holding ``*/*`` or ``application/vnd.ipfs.ipns-record``, else ``406``.
  The record the store keeps for the name, as stored, ``Content-Type:
  application/vnd.ipfs.ipns-record``, with boxo's headers: ``Etag`` (derived from the record's
  bytes), ``Cache-Control``/``Expires``/``Last-Modified`` (``gateway.record_cache.routing_cache_headers``),
  ``Content-Disposition`` (``<name>.ipns-record``) and ``Vary: Accept``. No record: ``200`` with
  ``text/plain`` (IPIP-0513: a server SHOULD NOT answer 404; any other content type means "no
  record" to a client), cached 15 s.
* ``PUT``: ``Content-Type`` must hold the record media type, else ``406``. The body (at most
  ``MAX_PUT_BODY`` bytes are read, ``gateway.framing.read_body``) must be a record of at most
  10 KiB that verifies for ``{name}`` now (``names.record.verify_record``: the IPNS record
  verification, the validity included, as boxo's ``ipns.ValidateWithName``), else ``400``.
  Then a compare-and-swap under the store's record lock (``BlockStore.put_record`` with ``keep``):
  the record is kept only when its sequence is above the one of the record kept for the name
  (expired or not: its sequence was used); the same bytes again are a ``200`` that changes
  nothing (as go-libp2p-kad-dht's ``PutValue``, which skips its comparison for an identical
  value); any other record with a sequence at or below the kept one is ``409 Conflict``, naming
  the kept sequence. This is stricter than a DHT, which also takes an equal sequence with a later
  validity (boxo ``ipns.compare``): two writers racing from sequence N both sign N+1, and only
  the first may win, so the second learns it lost and merges instead of silently replacing it
  (``specs/sync.md``, "Routing API use"). A name new to the store when it already keeps
  ``MAX_NAMES`` records is ``507``: a flood of freshly made keys cannot fill the disk.
* Other methods on the IPNS path: ``405`` with ``Allow``; the API's other paths (providers,
  peers, DHT): ``501``, as the specification says for what is not supported; an unknown path:
  ``400``.

Every refusal is a one-line ``text/plain`` reason through the gateway's error answer
(``gateway.respond.error_response``: the one redaction). Nothing here raises to the server.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Final
from urllib.parse import unquote, urlsplit

from bundlekit.blockstore import IPNS_RECORD_MEDIA_TYPE, BlockStore, RecordLimitError
from bundlekit.errors import BundlekitError, CodecError, SignatureError, UsageError
from bundlekit.gateway.record_cache import routing_cache_headers
from bundlekit.gateway.respond import Response, error_response
from bundlekit.gateway.server import BodyApp
from bundlekit.ipld.ipns_entry import MAX_RECORD_SIZE
from bundlekit.names.record import name_text, parse_name, verify_record, verify_signed

__all__ = ["MAX_NAMES", "MAX_PUT_BODY", "MOUNT", "RoutingAPI"]

logger = logging.getLogger("bundlekit.gateway")

MOUNT: Final = "/routing/v1/"
#: Bytes of a PUT body read (chunk framing counted); a record is at most 10 KiB, the rest is refused.
MAX_PUT_BODY: Final = 64 * 1024
#: Names the store keeps records for before a PUT for a new name is refused (507).
MAX_NAMES: Final = 10_000
_IPNS: Final = MOUNT + "ipns/"
_OTHER_PATHS: Final = ("providers", "peers", "dht")
_ALLOW: Final = ("Allow", "GET, HEAD, PUT, OPTIONS")
# boxo routing/http/server: maxAgeWithoutResults and maxStale, for an answer without a record.
_NO_RECORD_CACHE: Final = "public, max-age=15, stale-while-revalidate=172800, stale-if-error=172800"


class RoutingAPI:
    """Request -> ``Response`` for ``/routing/v1/`` over ``store``'s IPNS records; ``clock`` is Unix time in ns."""

    def __init__(self, store: BlockStore, *, clock: Callable[[], int] = time.time_ns,
                 max_names: int = MAX_NAMES) -> None:
        self.store = store
        self.clock = clock
        self.max_names = max_names

    def app(self) -> BodyApp:
        """The app to mount at ``MOUNT`` (``GatewayServer(apps={MOUNT: ...})``): it reads ``PUT`` bodies."""
        return BodyApp(self.respond, MAX_PUT_BODY)

    def respond(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> Response:
        """Answer one request (``headers`` keys lower-case); never raises."""
        try:
            return self._respond(method, target, headers, body)
        except Exception:  # a bug must not kill the server thread; the client gets a 500
            logger.exception("internal error while answering a routing request")
            return error_response(500, "internal routing API error; see the server's log")

    def _respond(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> Response:
        path = urlsplit(target).path
        if not path.startswith(_IPNS):
            section = path[len(MOUNT):].partition("/")[0]
            if path.startswith(MOUNT) and section in _OTHER_PATHS:
                return error_response(501, f"this endpoint serves IPNS records only (/routing/v1/ipns/{{name}}), "
                                           f"not /routing/v1/{section}")
            return error_response(400, "unknown routing path; IPNS records are at /routing/v1/ipns/{name}")
        segment = unquote(path[len(_IPNS):])
        if method not in ("GET", "HEAD", "PUT"):
            return error_response(405, f"method {method[:20]} is not allowed here: use GET, HEAD or PUT", [_ALLOW])
        if method == "PUT" and IPNS_RECORD_MEDIA_TYPE not in headers.get("content-type", "").lower():
            return error_response(406, f"Content-Type is missing or not supported; retry with {IPNS_RECORD_MEDIA_TYPE}")
        if method != "PUT" and not _accepts_record(headers.get("accept", "")):
            return error_response(406, f"the Accept header is not supported; retry with {IPNS_RECORD_MEDIA_TYPE}")
        try:  # one path segment, nothing around the name (boxo's cid.Decode takes no white space either)
            name = parse_name(segment) if segment and "/" not in segment and segment == segment.strip() else b""
        except UsageError:
            name = b""
        if not name:
            return error_response(400, f"{segment[:100]!r} is not an IPNS name (a CIDv1 with the libp2p-key codec)")
        if method == "PUT":
            return self._put(name, body)
        return self._get(name)

    def _get(self, name: bytes) -> Response:
        label = name_text(name)
        try:
            record = self.store.get_record(label)
        except UsageError as exc:  # a libp2p-key CID the store cannot name a file after
            return error_response(400, str(exc))
        if record is None:
            body = f"no IPNS record for {label} here\n".encode()
            return Response(200, [("Content-Type", "text/plain; charset=utf-8"), ("X-Content-Type-Options", "nosniff"),
                                  ("Cache-Control", _NO_RECORD_CACHE), ("Access-Control-Allow-Origin", "*")],
                            [body], len(body))
        try:
            cache = routing_cache_headers(record, self.clock())
        except CodecError as exc:
            logger.error("damaged IPNS record of %s: %s", label, exc)
            return error_response(500, f"this server's copy of the IPNS record of {label} is damaged: {exc}")
        headers = [
            *cache,
            ("Etag", f'"{hashlib.sha256(record).hexdigest()[:32]}"'),
            ("Content-Type", IPNS_RECORD_MEDIA_TYPE),
            ("Content-Disposition", f'attachment; filename="{label}.ipns-record"'),
            ("Vary", "Accept"),
            ("Access-Control-Allow-Origin", "*"),
        ]
        return Response(200, headers, [record], len(record))

    def _put(self, name: bytes, body: bytes | None) -> Response:
        label = name_text(name)
        if body is None or len(body) > MAX_RECORD_SIZE:
            return error_response(400, f"the provided record is over the {MAX_RECORD_SIZE}-byte limit of an "
                                       "IPNS record, or did not arrive whole")
        now = datetime.fromtimestamp(self.clock() / 1e9, UTC)
        try:
            record = verify_record(name, body, now=lambda: now)
        except SignatureError as exc:
            return error_response(400, f"the provided record is invalid: {exc}")
        try:
            kept: list[int] = []
            same: list[bool] = []

            def as_new(old: bytes) -> bool:
                if old == body:
                    same.append(True)
                    return True
                try:
                    sequence = verify_signed(name, old).sequence
                except BundlekitError:
                    return False  # a damaged copy is replaced by a verified record
                if sequence >= record.sequence:
                    kept.append(sequence)
                    return True
                return False

            written = self.store.put_record(label, body, keep=as_new, max_names=self.max_names)
        except RecordLimitError:
            return error_response(507, f"this server keeps records for {self.max_names} names, its limit; "
                                       "it takes new records for those names only")
        except UsageError as exc:
            return error_response(400, str(exc))
        except BundlekitError as exc:
            logger.error("cannot keep the IPNS record of %s: %s", label, exc)
            return error_response(500, f"this server cannot keep the record: {exc}")
        if not written and not same:
            return error_response(409, f"this server keeps a record of {label} with sequence {kept[0]}, at or above "
                                       f"the provided {record.sequence}; resolve the name and publish above it")
        if written:
            logger.info("kept the IPNS record of %s, sequence %d", label, record.sequence)
        return Response(200, [("Access-Control-Allow-Origin", "*")], [], 0)


def _accepts_record(accept: str) -> bool:
    """boxo's ``GetIPNS`` rule: no ``Accept``, or one holding ``*/*`` or the record media type."""
    value = accept.lower()
    return not value.strip() or "*/*" in value or IPNS_RECORD_MEDIA_TYPE in value
