"""Fork: a bundle (any URI ``load`` takes, verified) imported into a memory tree, all or nothing, the tree
remembering the bundle's root as its parent.

The front ends' one way in (``bundlekit fork``): the request names the bundle, the tree, the strategy, the
gateways a user gave, the key and the load's options; ``bundle.fork.fork_bundle`` does the work and its
``ForkResult`` is the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bundlekit.bundle.fork import ForkResult, fork_bundle
from bundlekit.bundle.load import LoadOptions
from bundlekit.bundle.sources import gateway_source

if TYPE_CHECKING:
    from bundlekit.crypto import KeySpec

__all__ = ["ForkRequest", "fork"]


@dataclass(frozen=True)
class ForkRequest:
    """One fork: the bundle at ``uri`` into the tree at ``tree`` (created if missing) with ``strategy``
    (``merge`` keeps local memories on a conflict, ``replace`` takes the bundle's), its blocks from
    ``gateways`` (none: the URI decides), decrypted with ``key``, loaded with ``load``."""

    uri: str
    tree: Path
    strategy: str = "merge"
    gateways: tuple[str, ...] = ()
    key: KeySpec | None = None
    load: LoadOptions = LoadOptions()


def fork(request: ForkRequest) -> ForkResult:
    """Fork as ``request`` says; raises what ``fork_bundle`` raises (the tree unchanged then)."""
    return fork_bundle(request.uri, request.tree, strategy=request.strategy, source=gateway_source(request.gateways),
                       key=request.key, options=request.load)
