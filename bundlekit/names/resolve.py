"""Resolve an IPNS name to a CID: records from the local store, routing endpoints and gateways, verified,
highest sequence, no rollback.

Each routing endpoint is asked ``GET {endpoint}/routing/v1/ipns/{name}`` (the Delegated
Routing V1 HTTP API, ``names.routing``; a team's ``bundlekit serve``, kubo, a public
endpoint). Each gateway is asked ``GET {gateway}/ipns/{name}`` with
``Accept: application/vnd.ipfs.ipns-record`` (the trustless gateway
specification's IPNS part, github.com/ipfs/specs ``src/http-gateways/trustless-gateway.md``);
the local store is always asked too, for the record it keeps: the last one
published or resolved here. Every record's signature is verified
(``names.record.verify_signed``: signature, name binding); of those the newest
wins as boxo picks it (github.com/ipfs/boxo ``ipns/record.go`` ``compare`` and
``ipns/validation.go`` ``selectRecord``, commit d5aa650e: the higher sequence, then
the later validity, then the greater record bytes, so equal sequences never
depend on the order sources answered). The winner must still be valid now: when
the newest record seen has expired, older ones are refused, never followed
(``SignatureError``): the store's record, or a gateway's expired one, proves the
publisher went past them. The winner, when it is newer than the store's, is
kept in the store (``BlockStore.put_record`` with ``keep``: under a lock, never
over a newer one), so the highest sequence seen survives to the next
resolution, with or without the gateway that served it. A source that answers
nothing is a note; a record that does not verify is a note too, unless no
signed record is left, when its error is raised.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bundlekit.blockstore import BlockStore
from bundlekit.errors import BundlekitError, LoadError, SignatureError, UsageError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.names.record import (
    MAX_RECORD_SIZE,
    IpnsRecord,
    format_validity,
    name_text,
    parse_name,
    verify_signed,
)
from bundlekit.names.routing import RoutingEndpoint, default_routing, records_from, routing_records
from bundlekit.net.fetch import RemoteGateway
from bundlekit.net.http import HttpOptions, read_capped

__all__ = ["Resolution", "resolve", "resolve_uri"]


@dataclass
class Resolution:
    """The winning record, which sources offered a valid copy of it, and what went wrong elsewhere."""

    record: IpnsRecord
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def cid(self) -> bytes:
        return self.record.cid


def gateway_records(
    name: str, gateways: Sequence[RemoteGateway], http: HttpOptions, notes: list[str]
) -> list[tuple[str, bytes]]:
    """``(gateway base, record bytes)`` from each gateway that answers ``/ipns/<name>`` (unverified);
    each failure is appended to ``notes``."""
    return records_from(name, [(gw.base, f"{gw.base}/ipns/{name}") for gw in gateways], http, notes,
                        lambda response: read_capped(response, MAX_RECORD_SIZE))


class _Offer:
    """A record one source offered, its signature verified (its validity not yet judged). A plain class: a
    dataclass costs ~0.4 ms of every resolving command's start-up to define (issue 37)."""

    __slots__ = ("where", "data", "record")

    def __init__(self, where: str, data: bytes, record: IpnsRecord) -> None:
        self.where, self.data, self.record = where, data, record

    @property
    def order(self) -> tuple[int, datetime, bytes]:
        return (*self.record.rank, self.data)


def _signed(binary: bytes, offered: list[tuple[str, bytes]], notes: list[str]) -> tuple[list[_Offer], list[BundlekitError]]:
    """The offers whose signature verifies for ``binary``; the failures (also noted) of the others."""
    signed: list[_Offer] = []
    failures: list[BundlekitError] = []
    for where, data in offered:
        try:
            signed.append(_Offer(where, data, verify_signed(binary, data)))
        except SignatureError as exc:
            failures.append(exc)
            notes.append(f"{where}: {exc}")
    return signed, failures


def _remember(store: BlockStore, label: str, best: _Offer) -> None:
    """Keep ``best`` in ``store`` unless the record it keeps is as new (judged again under the store's lock)."""

    def as_new(kept: bytes) -> bool:
        try:
            return (*verify_signed(parse_name(label), kept).rank, kept) >= best.order
        except BundlekitError:
            return False  # a damaged record is replaced by a verified one

    store.put_record(label, best.data, keep=as_new)


def resolve(
    name: str,
    *,
    gateways: Sequence[RemoteGateway] = (),
    store: BlockStore | None = None,
    http: HttpOptions | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    routing: Sequence[RoutingEndpoint] = (),
) -> Resolution:
    """The newest valid record for ``name`` across ``store`` (``BlockStore()`` when None), the
    ``routing`` endpoints and ``gateways``.

    Raises ``UsageError`` for a malformed name, ``SignatureError`` when records
    were found but none verifies (the first failure is named) or when the newest
    one has expired (an older one is never taken instead), ``LoadError`` when no
    source has a record.
    """
    binary = parse_name(name)
    label = name_text(binary)
    store = store if store is not None else BlockStore()
    notes: list[str] = []
    offered: list[tuple[str, bytes]] = []
    kept = store.get_record(label)
    if kept is not None:
        offered.append(("store", kept))
    offered += routing_records(label, routing, http or HttpOptions(), notes)
    offered += gateway_records(label, gateways, http or HttpOptions(), notes)
    signed, failures = _signed(binary, offered, notes)
    if not signed:
        if failures:
            raise failures[0]
        asked = [f"the local store {store.root} keeps none", *notes]
        raise LoadError(f"no source has an IPNS record for {label} ({'; '.join(asked)}); "
                        "check the name or publish it with `bundlekit name publish`")
    best = max(signed, key=lambda offer: offer.order)
    if best.record.validity <= now():
        older = sorted({o.record.sequence for o in signed if o.record.sequence < best.record.sequence})
        raise SignatureError(
            f"the IPNS record for {label} expired at {format_validity(best.record.validity)} "
            f"(sequence {best.record.sequence}, from {best.where})"
            + (f"; older records (sequence {', '.join(map(str, older[-3:]))}) are refused, never followed back"
               if older else "")
            + "; the publisher must publish it again"
        )
    sources = [o.where for o in signed if o.data == best.data]
    for offer in signed:
        if offer.data == best.data:
            continue
        if offer.record.sequence < best.record.sequence:
            notes.append(f"{offer.where}: served an older record (sequence {offer.record.sequence} < "
                         f"{best.record.sequence}); ignored")
        else:
            notes.append(f"{offer.where}: served another record with the same sequence {offer.record.sequence}; "
                         "took the one valid longest (then the greater record bytes, as boxo)")
    if "store" not in sources:
        _remember(store, label, best)
    return Resolution(record=best.record, sources=sources, notes=notes)


def resolve_uri(
    uri: str,
    *,
    gateways: Sequence[RemoteGateway],
    store: BlockStore | None,
    http: HttpOptions | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    routing: Sequence[RoutingEndpoint] | None = None,
) -> tuple[str, Resolution]:
    """``ipns://<name>[/manifest.json]`` -> ``ipfs://<cid>/manifest.json`` and the resolution behind it.

    ``routing`` None asks the endpoints of ``$BUNDLEKIT_ROUTING`` (``load ipns://`` passes none).
    """
    rest = uri.strip()[len("ipns://"):]
    name, _, path = rest.partition("/")
    if path not in ("", "manifest.json"):
        raise UsageError(f"{uri[:200]!r}: an ipns:// bundle URI names the manifest only (ipns://NAME/manifest.json)")
    endpoints = default_routing() if routing is None else routing
    resolution = resolve(name, gateways=gateways, store=store, http=http, now=now, routing=endpoints)
    cid = resolution.cid
    resolution.notes.append(
        f"resolved ipns://{resolution.record.name} to {cid_to_str(cid)} (sequence {resolution.record.sequence}, "
        f"from {', '.join(resolution.sources)})"
    )
    return f"ipfs://{cid_to_str(cid)}/manifest.json", resolution
