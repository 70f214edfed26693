"""Where a pinner that fetches content (the Pinning Service API) gets it from: origins.

A Pinning Service API does not take uploads: the service fetches the DAG over
bitswap from libp2p peers. ``link_origins`` gives every such pinner (one with
``fetches_content``) its origins before anything is built or uploaded:

1. the multiaddrs the user named (``--psa-origin``), when any;
2. else its own (``BUNDLEKIT_PSA_ORIGINS``), when any;
3. else, when a pinner that runs a node is in the run (it has ``origins()``,
   e.g. kubo), that node's addresses, read when the fetching pinner starts
   (it runs after the others, so the node already holds the blocks);
4. else, when another pinner puts the content on the IPFS network (anything
   but ``local`` and ``memory``), no origins: the service finds it there;
5. else the run is refused at once (``UsageError``) saying why and what to add.

Origins given with no fetching pinner in the run are a ``UsageError`` too, and
so is an origin that is not a multiaddr ending ``/p2p/<peer ID>`` (``check_origins``):
the service dials that peer, so an address without one cannot be used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bundlekit.errors import UsageError
from bundlekit.pinning.protocol import Pinner
from bundlekit.pinning.registry import create_pinner

__all__ = ["OFF_NETWORK", "check_origins", "fetches_content", "link_origins", "open_pinners"]

# Pinners that keep the content to themselves: no IPFS peer can fetch it from them.
OFF_NETWORK = frozenset({"local", "memory"})


def check_origins(origins: Sequence[str], where: str) -> list[str]:
    """``origins`` as given, each a multiaddr ending ``/p2p/<peer ID>``; UsageError naming ``where`` otherwise."""
    for origin in origins:
        parts = origin.split("/")
        if (not origin.startswith("/") or len(parts) < 5 or parts[-2] not in ("p2p", "ipfs") or not parts[-1]
                or any(c.isspace() for c in origin)):
            raise UsageError(f"{where}: {origin[:120]!r} is not a libp2p multiaddr ending /p2p/<peer ID>, "
                             "e.g. /ip4/203.0.113.5/tcp/4001/p2p/12D3KooW... (`ipfs id` lists a node's)")
    return list(origins)


def fetches_content(pinner: Any) -> bool:
    """True for a pinner whose service fetches the DAG itself (it runs after the others)."""
    return bool(getattr(pinner, "fetches_content", False))


def link_origins(pinners: Sequence[Any], origins: Sequence[str] = ()) -> None:
    """Give every fetching pinner its origins (the rules in the module docstring); UsageError when none can be found."""
    if origins and not any(fetches_content(p) for p in pinners):
        raise UsageError("--psa-origin applies to --pinner psa only (a service that fetches the content)")
    origins = check_origins(origins, "--psa-origin")
    nodes = [p for p in pinners if callable(getattr(p, "origins", None))]
    on_network = [p for p in pinners if not fetches_content(p) and getattr(p, "name", "") not in OFF_NETWORK]
    for pinner in pinners:
        if not fetches_content(pinner):
            continue
        if origins:
            pinner.origins = list(origins)
        elif getattr(pinner, "origins", None):
            continue
        elif nodes:
            pinner.origin_source = nodes[0].origins
        elif not on_network:
            name = getattr(pinner, "name", "psa")
            raise UsageError(
                f"pinner {name!r} asks a Pinning Service API to fetch the content over bitswap, but no libp2p "
                "node holding the blocks was given, so the pin would stay queued until its deadline; add "
                "--psa-origin MULTIADDR (a node's address ending /p2p/<peer ID>) or --pinner kubo (its node "
                "becomes the origin); an HTTP gateway such as `bundlekit serve` cannot be an origin"
            )


def open_pinners(names: Sequence[str], origins: Sequence[str] = ()) -> list[Pinner]:
    """The pinners named (each once, in order), built from the environment and linked to their origins.

    Every pinner is built before any upload, so a missing secret or a psa pinner with no
    origin fails the run at once; on any error the pinners already built are closed.
    Raises what :func:`create_pinner` and :func:`link_origins` raise.
    """
    built: list[Pinner] = []
    try:
        for name in dict.fromkeys(names):
            built.append(create_pinner(name))
        link_origins(built, origins)
    except BaseException:
        for pinner in built:
            pinner.close()
        raise
    return built
