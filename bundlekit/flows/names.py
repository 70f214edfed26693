"""Moving a name: the routers and routing endpoints a record goes to, and ``publish_name``, the one publish of a
root under an IPNS name that ``bundlekit name publish`` and ``bundlekit pin --name-key`` share.

The configuration (``$BUNDLEKIT_KUBO_URL``, ``$BUNDLEKIT_ROUTING``, ``$BUNDLEKIT_GATEWAYS``) is read here,
so a front end only parses what the user typed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bundlekit._lazy import lazy_module
from bundlekit.blockstore import BlockStore
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import PinnerNotConfigured
from bundlekit.names import Published, parse_duration, publish
from bundlekit.names.publish import PublishTargets, RecordTerms, Router
from bundlekit.names.routing import RoutingEndpoint, default_routing, parse_routing
from bundlekit.net.fetch import default_gateways, parse_gateway
from bundlekit.net.http import check_http_url

if TYPE_CHECKING:
    from pinners import kubo
else:  # imported when $BUNDLEKIT_KUBO_URL names a kubo (DEVELOPERS.md, "Lazy imports": a round with none)
    kubo = lazy_module("pinners.kubo")

__all__ = ["publish_name", "routers_from_env", "routing_endpoints"]


def routers_from_env(env: Mapping[str, str] | None = None) -> list[tuple[str, Router]]:
    """kubo's ``routing/put`` when ``$BUNDLEKIT_KUBO_URL`` is set, else nothing beyond the local store.

    The configuration is checked here, before anything is published: a credential with a line
    break or a URL that is not http(s) refuses the publish while the store still keeps the
    record before it (they were found only after the store had taken the new one).
    """
    source = os.environ if env is None else env
    if not source.get("BUNDLEKIT_KUBO_URL"):
        return []
    with kubo.KuboPinner.from_env(source) as checked:  # PinnerNotConfigured for a credential it cannot send
        url = checked.base_url
    if not url.lower().startswith(("http://", "https://")):
        raise PinnerNotConfigured("kubo: BUNDLEKIT_KUBO_URL is not a usable http(s) URL; "
                                  "it must start with http:// or https://")
    check_http_url(url, what="BUNDLEKIT_KUBO_URL")

    def put(name_text: str, record: bytes) -> None:
        with kubo.KuboPinner.from_env(source) as node:
            node.put_ipns_record(name_text, record)

    return [("kubo", put)]


def routing_endpoints(routing: Sequence[str | RoutingEndpoint] = ()) -> list[RoutingEndpoint]:
    """The ``--routing`` endpoints given, else those of ``$BUNDLEKIT_ROUTING`` (``UsageError`` for a bad URL)."""
    return [r if isinstance(r, RoutingEndpoint) else parse_routing(r) for r in routing] or default_routing()


def publish_name(key_file: Path | Ed25519Signer, cid: bytes, *, lifetime: str = "720h", ttl: str = "5m",
                 gateways: tuple[str, ...] = (), routers: list[tuple[str, Router]] | None = None,
                 routing: Sequence[str | RoutingEndpoint] = ()) -> Published:
    """Publish ``cid`` under ``key_file``'s name to the routing endpoints (``routing``, else
    ``$BUNDLEKIT_ROUTING``), the store and the configured routers (``routers``, checked earlier
    by the caller, else ``routers_from_env()``).

    The sequence continues the highest one known to the store, the routing endpoints and the
    gateways (``gateways``, else ``$BUNDLEKIT_GATEWAYS``), so a fresh machine does not restart at 0.
    """
    gws = [parse_gateway(g) for g in gateways] or default_gateways()
    endpoints = routing_endpoints(routing)
    terms = RecordTerms(lifetime=parse_duration(lifetime), ttl=parse_duration(ttl))
    store = BlockStore()
    targets = PublishTargets(routing=endpoints, routers=routers_from_env() if routers is None else routers,
                             gateways=gws)
    return publish(key_file, cid, store=store, terms=terms, targets=targets)
