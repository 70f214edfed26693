"""Create an IPNS name from an Ed25519 key file, and publish records for it.

``create_name`` reads (or, when the file does not exist, generates and writes
with mode 0600) the Ed25519 key file and returns its name. ``publish`` makes a
V2 record pointing at ``/ipfs/<cid>`` with a sequence one above the last one
known for the name (the record kept in the local store and the valid records
the given routing endpoints and gateways serve), puts it to each routing endpoint
(``PUT /routing/v1/ipns/<name>``, ``names.routing``: a compare-and-swap at a
``bundlekit serve``), keeps it in the local store (where ``bundlekit serve``
serves it at ``/ipns/<name>`` and ``/routing/v1/ipns/<name>``), then hands it
to each extra ``router`` (``bundlekit name publish`` passes kubo's
``routing/put`` when ``$BUNDLEKIT_KUBO_URL`` is set).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from bundlekit.blockstore import BlockStore
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import BundlekitError, NameMovedError, UsageError
from bundlekit.names.record import (
    MAX_UINT64,
    cid_value,
    create_record,
    format_validity,
    name_from_key,
    parse_name,
    verify_signed,
)
from bundlekit.names.resolve import gateway_records
from bundlekit.names.routing import RoutingEndpoint, put_record, routing_records
from bundlekit.net.fetch import RemoteGateway
from bundlekit.net.http import HttpOptions

__all__ = [
    "DEFAULT_LIFETIME",
    "DEFAULT_TTL",
    "Published",
    "PublishTargets",
    "RecordTerms",
    "Router",
    "create_name",
    "parse_duration",
    "publish",
]

DEFAULT_LIFETIME: Final = timedelta(hours=720)
DEFAULT_TTL: Final = timedelta(minutes=5)
_DURATION = re.compile(r"(\d+)(ms|h|m|s)")
_UNITS: Final = {"h": 3600_000, "m": 60_000, "s": 1000, "ms": 1}

# A router takes the name (k51...) and the record bytes and publishes them elsewhere; raises on failure.
Router = Callable[[str, bytes], Any]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class RecordTerms:
    """A record's terms: valid for ``lifetime`` from ``now()``, cached by resolvers for ``ttl``."""

    lifetime: timedelta = DEFAULT_LIFETIME
    ttl: timedelta = DEFAULT_TTL
    now: Callable[[], datetime] = _utc_now


@dataclass(frozen=True)
class PublishTargets:
    """Where a record goes besides the local store, and where its name's last sequence is read too.

    ``routing``: Delegated Routing endpoints (read for the sequence, then ``PUT`` to, in order,
    before the store keeps the record); ``routers``: ``(label, router)`` pairs handed the record
    after the store; ``gateways``: read for the sequence only.
    """

    routing: Sequence[RoutingEndpoint] = ()
    routers: Sequence[tuple[str, Router]] = ()
    gateways: Sequence[RemoteGateway] = ()


def parse_duration(text: str) -> timedelta:
    """A Go-style duration (``720h``, ``5m``, ``1h30m``, ``90s``); ``UsageError`` otherwise."""
    value = text.strip()
    parts = _DURATION.findall(value)
    if not value or "".join(n + u for n, u in parts) != value:
        raise UsageError(f"duration {text[:40]!r} is not like 720h, 5m, 1h30m or 90s")
    try:
        return timedelta(milliseconds=sum(int(n) * _UNITS[u] for n, u in parts))
    except OverflowError:
        raise UsageError(f"duration {text[:40]!r} is too long; give at most a few years, e.g. 8760h") from None


def create_name(key_file: str | os.PathLike[str]) -> tuple[str, bool]:
    """The name of the Ed25519 key in ``key_file``, and whether the key was generated now.

    A missing file gets a new key (PEM PKCS#8, mode 0600); an existing one is
    read (``KeySourceError`` when it is not an Ed25519 key).
    """
    path = Path(key_file)
    if path.exists():
        return name_from_key(Ed25519Signer.from_file(path).public), False
    signer = Ed25519Signer.generate()
    signer.write(path)
    return name_from_key(signer.public), True


@dataclass
class Published:
    """The record made: its name, value, sequence and end of validity, its bytes, and where it went."""

    name: str
    value: str
    sequence: int
    validity: datetime
    record: bytes
    routers: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "sequence": self.sequence,
                "validity": format_validity(self.validity), "routers": list(self.routers)}


def _last_sequence(store: BlockStore, name: str) -> int | None:
    """The sequence of the record the store keeps for ``name`` (expired or not), or None."""
    kept = store.get_record(name)
    if kept is None:
        return None
    try:
        # An expired record still counts: its sequence was used.
        return verify_signed(parse_name(name), kept).sequence
    except BundlekitError as exc:
        raise BundlekitError(f"the record kept for {name} in {store.root} is damaged ({exc}); "
                             f"delete {store.root / 'ipns' / name} and publish again") from exc


def _last_sequence_of(name: str, kept: bytes) -> int:
    """The sequence of a record the store keeps (a damaged one counts as none: -1)."""
    try:
        return verify_signed(parse_name(name), kept).sequence
    except BundlekitError:
        return -1


def _remote_sequence(name: str, gateways: Sequence[RemoteGateway], routing: Sequence[RoutingEndpoint],
                     http: HttpOptions | None) -> int | None:
    """The highest sequence among the records ``routing`` and ``gateways`` serve for ``name`` that verify
    (expired or not).

    A fresh machine (a CI runner) keeps no record: without this, it would publish
    sequence 0 below the one already published, and resolvers keep the higher one.
    Records that do not verify against the name are ignored; unreachable gateways too.
    """
    notes: list[str] = []
    best: int | None = None
    options = http or HttpOptions()
    for _where, data in routing_records(name, routing, options, notes) + gateway_records(name, gateways, options, notes):
        try:
            sequence = verify_signed(parse_name(name), data).sequence
        except BundlekitError:
            continue
        best = sequence if best is None else max(best, sequence)
    return best


def publish(
    key_file: str | os.PathLike[str] | Ed25519Signer,
    cid: bytes,
    *,
    store: BlockStore | None = None,
    terms: RecordTerms | None = None,
    targets: PublishTargets | None = None,
    http: HttpOptions | None = None,
    follows: int | None = None,
) -> Published:
    """Sign and publish a record pointing ``key_file``'s name at ``/ipfs/<cid>``.

    ``terms`` (default ``RecordTerms()``: 720h, 5m, the clock) are the record's lifetime, TTL and
    clock; ``targets`` (default none) the routing endpoints, routers and gateways besides ``store``
    (default ``$BUNDLEKIT_HOME``'s).

    With ``follows`` (the sequence of the record the caller built on, ``-1`` when the name had
    none: ``sync``) the record's sequence is ``follows + 1``, and the publish is refused with
    ``NameMovedError`` when the store, the routing endpoints or the gateways know a later record,
    when a routing endpoint refuses it (its compare-and-swap, at the endpoint), or when the store
    keeps a later one by the time the record goes in (checked again under its record lock): two
    writers racing through one endpoint or one store never both win. The very record being published
    is no later one: a routing endpoint served over this same store (``bundlekit serve`` on the
    writer's own ``$BUNDLEKIT_HOME``) keeps it there before the store's own turn.

    The sequence is one above the last known: the highest of the record kept in
    ``store`` and the valid records the targets' routing endpoints and gateways serve (0 for the
    first). The record goes to each routing endpoint first, in order: ``NameMovedError`` when one
    keeps a record as new (another writer published meanwhile), and then the store does not
    keep it, so the store never holds a record that lost. Then into the store, then to each
    named router in order; a router's error propagates (the store keeps the record, so a
    retry continues the sequence). Raises ``KeySourceError`` for the key,
    ``UsageError`` for a non-positive lifetime or one past the year 9999, and
    for a TTL outside an unsigned 64-bit count of nanoseconds.
    """
    terms = terms if terms is not None else RecordTerms()
    targets = targets if targets is not None else PublishTargets()
    routing = targets.routing
    if terms.lifetime <= timedelta(0):
        raise UsageError("the record lifetime must be positive, e.g. 720h")
    ttl_ns = int(terms.ttl.total_seconds() * 1_000_000_000)
    if not 0 <= ttl_ns < 2**64:  # the record's TTL is an unsigned 64-bit count of nanoseconds
        raise UsageError("the record TTL must be between 0 and about 584 years, e.g. 5m")
    signer = key_file if isinstance(key_file, Ed25519Signer) else Ed25519Signer.from_file(key_file)
    name = name_from_key(signer.public)
    store = store if store is not None else BlockStore()
    remote = _remote_sequence(name, targets.gateways, routing, http)
    known = [seq for seq in (_last_sequence(store, name), remote) if seq is not None]
    sequence = max(known) + 1 if known else 0
    if follows is not None:
        if known and max(known) > follows:
            raise NameMovedError(f"{name} moved to sequence {max(known)} after {follows}: another writer published")
        sequence = follows + 1
    if sequence > MAX_UINT64:
        raise UsageError(f"{name} has used every sequence number (the last known is {MAX_UINT64}); "
                         "no newer record can be signed: publish under a new key (`bundlekit name create`)")
    try:
        validity = terms.now() + terms.lifetime
    except OverflowError:
        raise UsageError("the record lifetime reaches past the year 9999; give a shorter one, e.g. 8760h") from None
    value = cid_value(cid)
    record = create_record(signer, value, sequence=sequence, validity=validity,
                           ttl_ns=ttl_ns)
    for endpoint in routing:  # each endpoint's compare-and-swap first: a refused record is never kept here
        put_record(endpoint, name, record, http or HttpOptions())
    if follows is None:
        store.put_record(name, record)
    elif not store.put_record(name, record,
                              keep=lambda kept: kept != record and _last_sequence_of(name, kept) > follows):
        raise NameMovedError(f"{name} moved past sequence {follows} while publishing: another writer published")
    published = Published(name=name, value=value, sequence=sequence, validity=validity, record=record,
                          routers=["store", *(endpoint.label for endpoint in routing)])
    for label, router in targets.routers:
        router(name, record)
        published.routers.append(label)
    return published

