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
  ``MAX_PUT_BODY`` bytes are read, ``gateway.server.BodyApp``) must be a record of at most
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
  (``specs/sync.md``, "Routing API use"). A record whose value is not an ``/ipfs/`` or ``/ipns/``
  path is ``400``. A name new to the store needs the hub's token when it has one
  (``Authorization: Bearer``, ``$BUNDLEKIT_SERVE_TOKEN``; ``403`` otherwise); without a token,
  each client (by address; an IPv6 one by its /64, ``client_of``) may bring at most
  ``MAX_NAMES_PER_CLIENT`` new names (``403``). A name new to the store when it already keeps
  ``MAX_NAMES`` records, the expired ones removed first (a sweep at most once a minute), is ``507``:
  a flood of freshly made keys cannot fill the disk or lock the team out.
* Other methods on the IPNS path: ``405`` with ``Allow``; the API's other paths (providers,
  peers, DHT): ``501``, as the specification says for what is not supported; an unknown path:
  ``400``.

Every refusal is a one-line ``text/plain`` reason through the gateway's error answer
(``gateway.respond.error_response``: the one redaction). Nothing here raises to the server.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Final
from urllib.parse import unquote, urlsplit

from bundlekit.blockstore import IPNS_RECORD_MEDIA_TYPE, BlockStore, RecordLimitError
from bundlekit.errors import BundlekitError, CodecError, SignatureError, UsageError
from bundlekit.gateway.record_cache import record_eol_ns, routing_cache_headers
from bundlekit.gateway.respond import Response, error_response
from bundlekit.gateway.bodies import PEER_HEADER, BodyApp
from bundlekit.gateway.transport import client_of
from bundlekit.ipld.cid import cid_from_text
from bundlekit.ipld.ipns_entry import MAX_RECORD_SIZE
from bundlekit.names.record import name_text, parse_name, verify_record, verify_signed

__all__ = ["MAX_NAMES", "MAX_NAMES_PER_CLIENT", "MAX_PUT_BODY", "MOUNT", "SWEEP_INTERVAL_NS", "RoutingAPI", "client_of",
           "is_content_path"]

logger = logging.getLogger("bundlekit.hub")

MOUNT: Final = "/routing/v1/"
#: Bytes of a PUT body read (chunk framing counted); a record is at most 10 KiB, the rest is refused.
MAX_PUT_BODY: Final = 64 * 1024
#: Names the store keeps records for before a PUT for a new name is refused (507).
MAX_NAMES: Final = 10_000
#: New names one client (by address) may bring while the server runs, when it has no token.
MAX_NAMES_PER_CLIENT: Final = 100
#: Nanoseconds between two sweeps of the expired records at the cap.
SWEEP_INTERVAL_NS: Final = 60 * 10**9
_IPNS: Final = MOUNT + "ipns/"
_OTHER_PATHS: Final = ("providers", "peers", "dht")
_ALLOW: Final = ("Allow", "GET, HEAD, PUT, OPTIONS")
# boxo routing/http/server: maxAgeWithoutResults and maxStale, for an answer without a record.
_NO_RECORD_CACHE: Final = "public, max-age=15, stale-while-revalidate=172800, stale-if-error=172800"


class _NotAdmitted(Exception):
    """A record of a new name refused before it is written: ``status`` and the reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class RoutingAPI:
    """Request -> ``Response`` for ``/routing/v1/`` over ``store``'s IPNS records; ``clock`` is Unix time in ns.

    With ``token``, a record of a name the store keeps none for needs ``Authorization: Bearer <token>``;
    without one, each client address may bring ``max_per_client`` new names.
    """

    def __init__(self, store: BlockStore, *, clock: Callable[[], int] = time.time_ns,
                 max_names: int = MAX_NAMES, token: str | None = None,
                 max_per_client: int = MAX_NAMES_PER_CLIENT) -> None:
        self.store = store
        self.clock = clock
        self.max_names = max_names
        self._expected = f"Bearer {token}".encode() if token else None
        self.max_per_client = max_per_client
        self._brought: dict[str, int] = {}  # new names per client address (no token)
        self._brought_lock = threading.Lock()
        self._swept: int | None = None  # when the expired records were last swept (clock ns)

    def app(self) -> BodyApp:
        """The app to mount at ``MOUNT`` (``GatewayServer(apps={MOUNT: ...})``): it reads ``PUT`` bodies."""
        return BodyApp(self.respond, MAX_PUT_BODY)

    def respond(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> Response:
        """Answer one request (``headers`` keys lower-case); never raises."""
        return self.respond_to(lambda: self._respond(method, target, headers, body))

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
            return self._put(name, body, headers)
        return self._get(name)

    def put(self, name: str, body: bytes, headers: Mapping[str, str]) -> Response:
        """A ``PUT`` of ``body`` as the record of ``name`` (text) by a request with ``headers``, as over HTTP:
        the team hub's push API answers kubo's ``routing/put`` with it. Never raises."""
        try:
            parsed = parse_name(name) if name == name.strip() else b""
        except UsageError:
            parsed = b""
        if not parsed:
            return error_response(400, f"{name[:100]!r} is not an IPNS name (a CIDv1 with the libp2p-key codec)")
        return self.respond_to(lambda: self._put(parsed, body, headers))

    def respond_to(self, answer: Callable[[], Response]) -> Response:
        """``answer()``, or a 500 for a bug in it (logged): nothing raises to the server."""
        try:
            return answer()
        except Exception:
            logger.exception("internal error while answering a routing request")
            return error_response(500, "internal routing API error; see the server's log")

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

    def _put(self, name: bytes, body: bytes | None, headers: Mapping[str, str]) -> Response:
        label = name_text(name)
        if body is None or len(body) > MAX_RECORD_SIZE:
            return error_response(400, f"the provided record is over the {MAX_RECORD_SIZE}-byte limit of an "
                                       "IPNS record, or did not arrive whole")
        now = datetime.fromtimestamp(self.clock() / 1e9, UTC)
        try:
            record = verify_record(name, body, now=lambda: now)
        except SignatureError as exc:
            return error_response(400, f"the provided record is invalid: {exc}")
        if not is_content_path(record.value):
            return error_response(400, f"the provided record points at {record.value[:100]!r}, not an /ipfs/ or "
                                       "/ipns/ path")
        admission = _Admission(self, headers)
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

            written = self.store.put_record(label, body, keep=as_new, max_names=self.max_names,
                                            sweep=self._sweep, admit=admission.admit)
        except _NotAdmitted as exc:
            return error_response(exc.status, str(exc))
        except RecordLimitError:
            admission.undo()
            return error_response(507, f"this server keeps records for {self.max_names} names, its limit; "
                                       "it takes new records for those names only, and for new names as "
                                       "records expire", [("Retry-After", str(SWEEP_INTERVAL_NS // 10**9))])
        except UsageError as exc:
            admission.undo()
            return error_response(400, str(exc))
        except BundlekitError as exc:
            admission.undo()
            logger.error("cannot keep the IPNS record of %s: %s", label, exc)
            return error_response(500, f"this server cannot keep the record: {exc}")
        if not written and not same:
            return error_response(409, f"this server keeps a record of {label} with sequence {kept[0]}, at or above "
                                       f"the provided {record.sequence}; resolve the name and publish above it")
        if written:
            logger.info("kept the IPNS record of %s, sequence %d", label, record.sequence)
        return Response(200, [("Access-Control-Allow-Origin", "*")], [], 0)


    @property
    def has_token(self) -> bool:
        """Whether new names need the server's token (else the per-client bound holds)."""
        return self._expected is not None

    def authorized(self, headers: Mapping[str, str]) -> bool:
        """Whether the request holds ``Authorization: Bearer <token>`` (scheme in any case; constant time)."""
        if self._expected is None:
            return False
        scheme, _, value = headers.get("authorization", "").strip().partition(" ")
        return hmac.compare_digest(f"{scheme.capitalize()} {value.strip()}".encode(), self._expected)

    def _sweep(self) -> Callable[[bytes], bool] | None:
        """At the cap: the judge of expired records, at most once per ``SWEEP_INTERVAL_NS`` (a sweep reads
        every kept record, so a client knocking at the cap cannot make the server read them all each time)."""
        now = self.clock()
        with self._brought_lock:
            if self._swept is not None and 0 <= now - self._swept < SWEEP_INTERVAL_NS:
                return None
            self._swept = now
        return self._expired

    def _expired(self, kept: bytes) -> bool:
        """Whether a kept record may be removed to make room: expired, or no longer readable."""
        try:
            eol = record_eol_ns(kept)
        except BundlekitError:
            return True
        return eol is not None and eol <= self.clock()

    def bring(self, peer: str) -> None:
        """Count one new name for ``peer``; ``_NotAdmitted`` (403: final, retrying cannot help) past
        ``max_per_client``."""
        peer = client_of(peer)
        with self._brought_lock:
            count = self._brought.get(peer, 0)
            if count >= self.max_per_client:
                raise _NotAdmitted(403, f"this client has brought {count} new names to this server, its limit; "
                                        "it takes new records for those names only")
            self._brought[peer] = count + 1

    def unbring(self, peer: str) -> None:
        """Take back one new name counted for ``peer`` (its record was not kept after all)."""
        peer = client_of(peer)
        with self._brought_lock:
            self._brought[peer] = max(0, self._brought.get(peer, 0) - 1)


class _Admission:
    """The rule for one PUT's new name (called under the store's record lock): the token when the server has
    one, else the client's bound; ``undo`` takes a counted name back when the record was not kept."""

    def __init__(self, api: RoutingAPI, headers: Mapping[str, str]) -> None:
        self.api = api
        self.peer = headers.get(PEER_HEADER, "")
        self.authorized = api.authorized(headers)
        self.counted = False

    def admit(self) -> None:
        if self.api.has_token:
            if not self.authorized:
                raise _NotAdmitted(403, "a record of a name this server does not hold yet needs its token: "
                                        "'Authorization: Bearer <token>' ($BUNDLEKIT_ROUTING_TOKEN for "
                                        "`name publish` and `sync`; the server's $BUNDLEKIT_SERVE_TOKEN)")
            return
        self.api.bring(self.peer)
        self.counted = True

    def undo(self) -> None:
        if self.counted:
            self.api.unbring(self.peer)
            self.counted = False


def is_content_path(value: str) -> bool:
    """Whether a record's value is a content path: ``/ipfs/<CID>`` or ``/ipns/<name>``, then perhaps ``/``-separated
    segments, none of them empty (but a last ``/``), ``.`` or ``..``, no white space or control character anywhere
    (``/ipfs/``, ``/ipfs/junk``, ``/ipfs/<cid>\n/ipfs/<other>`` and ``/ipfs/../x`` are not)."""
    namespace, _, rest = value.removeprefix("/").partition("/")
    segments = rest.removesuffix("/").split("/")
    if namespace not in ("ipfs", "ipns") or not value.startswith("/") or not value.isprintable() or " " in value:
        return False
    if any(segment in ("", ".", "..") for segment in segments):
        return False
    if namespace == "ipns":
        return True
    try:
        cid_from_text(segments[0])
    except BundlekitError:
        return False
    return True


def _accepts_record(accept: str) -> bool:
    """boxo's ``GetIPNS`` rule: no ``Accept``, or one holding ``*/*`` or the record media type."""
    value = accept.lower()
    return not value.strip() or "*/*" in value or IPNS_RECORD_MEDIA_TYPE in value
