"""IPNS records over the Delegated Routing V1 HTTP API (IPIP-379), the client side: ``GET`` and ``PUT``.

Follows the Delegated Routing V1 HTTP API specification (github.com/ipfs/specs
``src/routing/http-routing-v1.md``, commit 8721f873, "IPNS API") and its reference
implementations, boxo's client and server (github.com/ipfs/boxo ``routing/http/client/client.go``,
``routing/http/server/server.go``, commit 8df89a78) and the npm client
``@helia/delegated-routing-v1-http-api-client`` 9.0.2 (``dist/src/client.js``, ``getIPNS`` and
``putIPNS``):

* a routing endpoint is a base URL (``--routing URL``, ``$BUNDLEKIT_ROUTING``: comma- or
  space-separated); the record of a name is at ``{base}/routing/v1/ipns/{name}``, the name
  written as a CIDv1 (bundlekit writes base36, ``k51...``);
* ``GET`` with ``Accept: application/vnd.ipfs.ipns-record``: a ``200`` whose ``Content-Type`` is
  that media type carries the record; any other content type, and a ``404``, mean "no record"
  (IPIP-0513: a server answers 200 with ``text/plain`` for none);
* ``PUT`` with ``Content-Type: application/vnd.ipfs.ipns-record`` and the record as the body;
  ``200`` is "published". With ``$BUNDLEKIT_ROUTING_TOKEN`` set, the PUT carries
  ``Authorization: Bearer <token>``: a team hub (``bundlekit serve`` with ``$BUNDLEKIT_SERVE_TOKEN``)
  takes a record of a name it does not hold yet only with it.

Nothing an endpoint sends is trusted: each answer is bounded (``MAX_RECORD_SIZE`` bytes, and
``ROUTING_DEADLINE`` seconds for the whole response at most), and the records are verified
for the name by the caller (``names.resolve``) before any is used. Every request goes through
the one retry loop of ``bundlekit.net.http``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from bundlekit._redact import MIN_PROCESS_SECRET_LEN, register_secret
from bundlekit._terminal import printable_field
from bundlekit.blockstore import IPNS_RECORD_MEDIA_TYPE
from bundlekit.errors import NameMovedError, PinAuthError, PinRejected, PinUnavailable, UsageError
from bundlekit.ipld.ipns_entry import MAX_RECORD_SIZE
from bundlekit.net.http import (
    Failure,
    HttpOptions,
    HttpRequest,
    check_http_url,
    open_client,
    read_capped,
    send,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ROUTING_DEADLINE",
    "ROUTING_ENV",
    "ROUTING_TOKEN_ENV",
    "SERVE_TOKEN_ENV",
    "RoutingEndpoint",
    "default_routing",
    "parse_routing",
    "put_record",
    "records_from",
    "routing_records",
    "token_from_env",
]

ROUTING_ENV: Final = "BUNDLEKIT_ROUTING"
#: The bearer token a client sends with its routing PUTs (a team hub's token).
ROUTING_TOKEN_ENV: Final = "BUNDLEKIT_ROUTING_TOKEN"
#: The token ``bundlekit serve`` requires of pushes and of records of new names.
SERVE_TOKEN_ENV: Final = "BUNDLEKIT_SERVE_TOKEN"
#: Seconds one routing answer may take, body included, whatever the caller's options allow.
ROUTING_DEADLINE: Final = 30.0
#: The path of a name's record under an endpoint's base URL.
IPNS_PATH: Final = "/routing/v1/ipns/"


@dataclass(frozen=True)
class RoutingEndpoint:
    """A Delegated Routing V1 HTTP API endpoint: its base URL (no trailing ``/``, no ``/routing/v1``)."""

    base: str

    def url(self, name: str) -> str:
        """The URL of ``name``'s record here."""
        return f"{self.base}{IPNS_PATH}{name}"

    @property
    def label(self) -> str:
        """How reports name it: ``{base}/routing/v1``."""
        return f"{self.base}/routing/v1"


def parse_routing(text: str) -> RoutingEndpoint:
    """A ``--routing`` value: ``http(s)://host[:port][/prefix]``, with or without ``/routing/v1``; ``UsageError`` otherwise."""
    value = text.strip().rstrip("/")
    if not value.lower().startswith(("http://", "https://")):
        raise UsageError(f"routing endpoint {value[:200]!r} must be an http:// or https:// URL")
    check_http_url(value, what="routing endpoint")
    value = value.removesuffix("/routing/v1").rstrip("/")
    if "?" in value or "#" in value:
        raise UsageError(f"routing endpoint {value[:200]!r} must be a base URL, without a query or fragment")
    return RoutingEndpoint(value)


def default_routing(env: Mapping[str, str] | None = None) -> list[RoutingEndpoint]:
    """The endpoints of ``$BUNDLEKIT_ROUTING`` (comma- or space-separated URLs), in order."""
    source = os.environ if env is None else env
    return [parse_routing(item) for item in re.split(r"[,\s]+", source.get(ROUTING_ENV, "")) if item]


def token_from_env(variable: str, env: Mapping[str, str] | None = None) -> str | None:
    """The bearer token in ``$variable`` (None when unset or blank), registered with the output redaction
    (``_redact.register_secret``) so it never shows; ``UsageError`` naming the variable (never the value)
    for one shorter than 16 characters or holding white space or a control character."""
    value = (os.environ if env is None else env).get(variable, "").strip()
    if not value:
        return None
    if len(value) < MIN_PROCESS_SECRET_LEN or not value.isascii() or not value.isprintable() or " " in value:
        raise UsageError(f"${variable} must be one word of at least {MIN_PROCESS_SECRET_LEN} printable ASCII "
                         "characters (for example `openssl rand -hex 16`)")
    register_secret(value)
    return value


def _bounded(http: HttpOptions) -> HttpOptions:
    """``http`` with each response cut at ``ROUTING_DEADLINE`` seconds (or the caller's shorter deadline)."""
    deadline = ROUTING_DEADLINE if http.deadline is None else min(http.deadline, ROUTING_DEADLINE)
    return replace(http, deadline=deadline)


def _record_body(response: httpx.Response) -> bytes | Failure:
    """A ``200`` answer's record, or "no record" when its content type is not the record's (IPIP-0513)."""
    kind = response.headers.get("Content-Type", "")
    if IPNS_RECORD_MEDIA_TYPE not in kind.lower():
        return Failure(f"no record (HTTP {response.status_code}, {printable_field(kind[:60]) or 'no Content-Type'})",
                       retryable=False, status=response.status_code)
    return read_capped(response, MAX_RECORD_SIZE)


def records_from(
    name: str,
    sources: Sequence[tuple[str, str]],
    http: HttpOptions,
    notes: list[str],
    read: Callable[[httpx.Response], bytes | Failure],
) -> list[tuple[str, bytes]]:
    """``(label, record bytes)`` from each ``(label, url)`` of ``sources`` that answers with a record
    (``read`` judges a success: bounded, the right content type); unverified. Each failure (a
    final status, "no record", an unreachable source) is appended to ``notes``. The gateways'
    ``/ipns/{name}`` (``names.resolve.gateway_records``) and the routing endpoints are asked alike."""
    found: list[tuple[str, bytes]] = []
    if not sources:
        return found
    client, owned = open_client(http)
    try:
        for label, url in sources:
            got = send(client, HttpRequest("GET", url, headers={"Accept": IPNS_RECORD_MEDIA_TYPE}), http, read=read)
            if isinstance(got, Failure):
                notes.append(f"{label}: no IPNS record for {name} ({got.reason})")
            else:
                found.append((label, got))
    finally:
        if owned:
            client.close()
    return found


def routing_records(
    name: str, endpoints: Sequence[RoutingEndpoint], http: HttpOptions, notes: list[str]
) -> list[tuple[str, bytes]]:
    """``(endpoint label, record bytes)`` from each endpoint that has a record for ``name`` (unverified);
    each "no record" (a 404 too) and each failure is appended to ``notes``."""
    return records_from(name, [(e.label, e.url(name)) for e in endpoints], _bounded(http), notes, _record_body)


def _refusal_text(failure: Failure) -> str:
    """The first line of a refusal's body, made safe to show, or the failure's reason."""
    if failure.response is not None:
        line = failure.response.content[:300].decode("utf-8", "replace").strip().splitlines()
        if line:
            return f"HTTP {failure.status}: {printable_field(line[0][:200])}"
    return failure.reason


def put_record(endpoint: RoutingEndpoint, name: str, record: bytes, http: HttpOptions) -> None:
    """``PUT`` ``record`` as ``name``'s at ``endpoint``; returns when it answers ``200``.

    A PUT of the same record is idempotent, so retryable failures are retried. Raises
    ``NameMovedError`` for a ``409`` (the endpoint keeps a record as new or newer: another writer
    published first), ``PinAuthError`` for 401/403, ``PinRejected`` for any other refusal (the
    endpoint's reason quoted), ``PinUnavailable`` when it cannot be reached or kept failing.
    """
    options = _bounded(http)
    headers = {"Content-Type": IPNS_RECORD_MEDIA_TYPE}
    token = token_from_env(ROUTING_TOKEN_ENV)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    client, owned = open_client(options)
    try:
        request = HttpRequest("PUT", endpoint.url(name), headers=headers,
                              body=lambda: {"content": record}, ok=lambda response: response.status_code == 200)
        got = send(client, request, options, read=lambda _response: b"")
    finally:
        if owned:
            client.close()
    if not isinstance(got, Failure):
        return
    where = f"{endpoint.label} refused the record of {name}"
    if got.status == 409:
        raise NameMovedError(f"{where}, keeping one as new ({_refusal_text(got)}): another writer published "
                           "first; resolve the name, then publish above it")
    if got.status in (401, 403):
        hint = "" if token is not None else f"; a team hub takes new names with its token: set ${ROUTING_TOKEN_ENV}"
        raise PinAuthError(f"{where}: {_refusal_text(got)}{hint}")
    if got.status is not None and not got.retryable:
        raise PinRejected(f"{where}: {_refusal_text(got)}")
    raise PinUnavailable(f"{endpoint.label} could not take the record of {name}: {got.reason}")
