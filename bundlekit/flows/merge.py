"""Merge: a bundle (any URI ``load`` takes, verified) merged into a memory tree over their common ancestor.

The front ends' one way in (``bundlekit merge``): the request names the source, the tree, the gateways a user
gave, the key, the load's and the merge's options; ``bundle.merge.merge_bundle`` does the work (the one place
merge and sync call the loader and the builder) and its ``MergeResult`` is the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bundlekit.bundle.loadoptions import LoadOptions
from bundlekit.bundle.merge import MergeOptions, MergeResult, merge_bundle
from bundlekit.bundle.sources import gateway_source

if TYPE_CHECKING:
    from bundlekit.crypto import KeySpec

__all__ = ["MergeRequest", "merge"]


@dataclass(frozen=True)
class MergeRequest:
    """One merge: the bundle at ``source`` into the tree at ``tree``, its blocks from ``gateways`` (none: the
    URI decides), decrypted with ``key``, loaded with ``load`` (its ``publishers`` required), merged with
    ``options`` (``on_conflict``, ``dry_run``, ``max_manifests``, ``allow_deletes``)."""

    source: str
    tree: Path
    gateways: tuple[str, ...] = ()
    key: KeySpec | None = None
    load: LoadOptions = LoadOptions()
    options: MergeOptions = MergeOptions()


def merge(request: MergeRequest) -> MergeResult:
    """Merge as ``request`` says; raises what ``merge_bundle`` raises (nothing written then)."""
    return merge_bundle(request.source, request.tree, blocks=gateway_source(request.gateways), key=request.key,
                        load=request.load, options=request.options)
