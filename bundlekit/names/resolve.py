"""Resolve an IPNS name to a CID: records from the local store and gateways, verified, highest sequence.

Each gateway is asked ``GET {gateway}/ipns/{name}`` with
``Accept: application/vnd.ipfs.ipns-record`` (the trustless gateway
specification's IPNS part, github.com/ipfs/specs ``src/http-gateways/trustless-gateway.md``);
the local store is asked for the record it keeps. Every record is verified
(``names.record.verify_record``: signature, name binding, validity); of the
valid ones the highest sequence wins (a later validity breaks a tie). A
source that answers nothing is a note; a record that does not verify is a
note too, unless no valid record is left, when its error is raised.
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
    RECORD_MEDIA_TYPE,
    IpnsRecord,
    name_text,
    parse_name,
    verify_record,
)
from bundlekit.net.fetch import RemoteGateway, http_get
from bundlekit.net.http import Failure, HttpOptions, open_client

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
    found: list[tuple[str, bytes]] = []
    if not gateways:
        return found
    client, owned = open_client(http)
    try:
        for gw in gateways:
            got = http_get(client, f"{gw.base}/ipns/{name}", http=http, headers={"Accept": RECORD_MEDIA_TYPE},
                           max_bytes=MAX_RECORD_SIZE)
            if isinstance(got, Failure):
                notes.append(f"{gw.base}: no IPNS record for {name} ({got.reason})")
            else:
                found.append((gw.base, got))
    finally:
        if owned:
            client.close()
    return found


def resolve(
    name: str,
    *,
    gateways: Sequence[RemoteGateway] = (),
    store: BlockStore | None = None,
    http: HttpOptions | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Resolution:
    """The best valid record for ``name`` across ``store`` and ``gateways``.

    With neither, the local block store (``BlockStore()``) is asked.
    Raises ``UsageError`` for a malformed name,
    ``SignatureError`` when records were found but none verifies (the first
    failure is named), ``LoadError`` when no source has a record.
    """
    binary = parse_name(name)
    label = name_text(binary)
    if not gateways and store is None:
        store = BlockStore()
    notes: list[str] = []
    offered: list[tuple[str, bytes]] = []
    if store is not None:
        kept = store.get_record(label)
        if kept is not None:
            offered.append(("store", kept))
    offered += gateway_records(label, gateways, http or HttpOptions(), notes)
    valid: list[tuple[str, IpnsRecord]] = []
    failures: list[BundlekitError] = []
    for where, data in offered:
        try:
            valid.append((where, verify_record(binary, data, now=now)))
        except SignatureError as exc:
            failures.append(exc)
            notes.append(f"{where}: {exc}")
    if not valid:
        if failures:
            raise failures[0]
        asked = ([f"the local store {store.root} keeps none"] if store is not None else []) + notes
        raise LoadError(f"no source has an IPNS record for {label} ({'; '.join(asked)}); "
                        "check the name or publish it with `bundlekit name publish`")
    best = max((r for _, r in valid), key=lambda r: (r.sequence, r.validity))
    sources = [where for where, r in valid if r == best]
    for where, r in valid:
        if r.sequence < best.sequence:
            notes.append(f"{where}: served an older record (sequence {r.sequence} < {best.sequence}); ignored")
    return Resolution(record=best, sources=sources, notes=notes)


def resolve_uri(
    uri: str,
    *,
    gateways: Sequence[RemoteGateway],
    store: BlockStore | None,
    http: HttpOptions | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> tuple[str, Resolution]:
    """``ipns://<name>[/manifest.json]`` -> ``ipfs://<cid>/manifest.json`` and the resolution behind it."""
    rest = uri.strip()[len("ipns://"):]
    name, _, path = rest.partition("/")
    if path not in ("", "manifest.json"):
        raise UsageError(f"{uri[:200]!r}: an ipns:// bundle URI names the manifest only (ipns://NAME/manifest.json)")
    resolution = resolve(name, gateways=gateways, store=store, http=http, now=now)
    cid = resolution.cid
    resolution.notes.append(
        f"resolved ipns://{resolution.record.name} to {cid_to_str(cid)} (sequence {resolution.record.sequence}, "
        f"from {', '.join(resolution.sources)})"
    )
    return f"ipfs://{cid_to_str(cid)}/manifest.json", resolution
