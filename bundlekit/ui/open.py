"""``bundlekit open URI``: one bundle, fetched and verified, as a block source for the interface.

A local CAR is served as it is (``CarFileSource`` verifies every block when
it indexes the file). An ``ipfs://`` URI or a gateway URL is fetched through
the same trustless retrieval ``bundlekit load`` uses (a CAR request first,
then block by block; every block hashed against its CID), walked from the
root with the usual DAG limits, and written to a CAR in ``workdir`` that is
then served. A plain ``https://.../manifest.json`` is not content-addressed,
so there are no blocks to serve: it is refused with a usage error.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bundlekit.blockstore import BlockStore
from bundlekit.car.writer import CarFileWriter
from bundlekit.errors import LoadError, MissingBlock, UsageError
from bundlekit.gateway.sources import CarFileSource
from bundlekit.ipld.cid import cid_to_str
from bundlekit.ipld.walk import walk_dag
from bundlekit.net.fetch import GatewayFetcher, gateway_order, parse_gateway, parse_uri
from bundlekit.net.http import HttpOptions

__all__ = ["open_bundle"]


def open_bundle(
    uri: str,
    workdir: str | Path,
    *,
    gateways: Sequence[str] = (),
    http: HttpOptions | None = None,
) -> tuple[CarFileSource, bytes]:
    """The verified blocks of the bundle at ``uri`` as a ``CarFileSource``, and its root CID.

    Raises ``UsageError`` (bad URI, plain HTTPS manifest, no gateway), and what
    retrieval raises: ``LoadError`` when no source has a block,
    ``BlockMismatch`` when bytes do not match their CID, ``DAGLimitExceeded``.
    """
    target = parse_uri(uri)
    if target.kind == "https":
        raise UsageError(
            f"{uri[:200]!r} is a plain manifest URL, not content-addressed: `bundlekit open` shows bundles by "
            "CID; give ipfs://CID, a gateway URL (https://host/ipfs/CID) or a CAR file"
        )
    if target.kind == "car":
        assert target.car is not None
        source = CarFileSource(target.car)
        if len(source.roots) != 1:
            source.close()
            raise UsageError(f"{target.car} has {len(source.roots)} roots; a bundle CAR has exactly one")
        return source, source.roots[0]
    assert target.root is not None
    # The same sources in the same order as `bundlekit load`.
    gws, use_store = gateway_order(target, [parse_gateway(g) for g in gateways])
    store = BlockStore() if use_store else None
    out = Path(workdir) / "bundle.car"
    try:
        with GatewayFetcher(gws, store=store, http=http) as fetcher:
            fetcher.prefetch_car(target.root)
            with CarFileWriter(out) as writer:
                for cid, data in walk_dag(target.root, fetcher.get):
                    writer.put(cid, data)
                writer.finish(target.root)
    except MissingBlock as exc:  # no source could supply a block: unavailable (exit 1, as load), not altered
        detail = exc.__cause__ if exc.__cause__ is not None else exc  # the fetcher's reason, when the walk wraps it
        raise LoadError(
            f"cannot fetch {cid_to_str(target.root)}: {detail}; check the CID or try another --gateway"
        ) from exc
    return CarFileSource(out), target.root
