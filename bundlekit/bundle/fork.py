"""Fork: load a bundle, verified, and import it into a new or existing memory tree.

Steps: ``load_bundle`` (verified, decrypted with a key); the memory files, exactly
as the bundle holds them (no field is stamped into them: an untouched memory stays
the bundle's version, so a merge back sees it unchanged), and the timeline go to
``Memory.import_`` as one export blob, which validates everything before it
writes anything (all or nothing). ``merge`` keeps local files on conflict;
``replace`` takes the bundle's. The tree then remembers the bundle's root as
one of its parents (``bundle.lineage``: the provenance, in one hidden file), so
its next build names it, and the bundle's blocks are kept in the local block
store (the blocks the load read from a CAR, never others it pads itself with; a gateway's blocks kept as
they arrive; unpinned, a cache ``store gc`` may drop), so a merge back on this machine finds the fork's base.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.lineage import record_parent
from bundlekit.bundle.load import LoadOptions, load_bundle
from bundlekit.bundle.merge import car_source, keep_car_blocks
from bundlekit.bundle.sources import Gateways
from bundlekit.errors import SecretDetectedError, UsageError
from bundlekit.memory import Memory
from bundlekit.memory.files import read_tree_files, utf8_text
from bundlekit.memory.naming import INDEX_NAME
from bundlekit.memory.transfer import STRATEGIES, ImportReport

if TYPE_CHECKING:
    from bundlekit.bundle.load import LoadResult
    from bundlekit.bundle.sources import BlockSource
    from bundlekit.crypto._keys import KeySpec

__all__ = ["STRATEGIES", "ForkResult", "export_blob", "fork_bundle", "keeping_source"]


@dataclass
class ForkResult:
    """The load that was imported, the destination, and what ``Memory.import_`` reported."""

    loaded: LoadResult
    dest: Path
    strategy: str
    memories: int
    report: ImportReport

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        out = self.loaded.summary()
        out.update({"dest": str(self.dest), "strategy": self.strategy, "memories": self.memories,
                    "source": self.loaded.source})
        to_dict = getattr(self.report, "to_dict", None)
        if callable(to_dict):
            out["import"] = to_dict()
        return out


def export_blob(loaded: LoadResult) -> dict[str, Any]:
    """The loaded bundle as a ``Memory.import_`` blob, each memory file exactly as the bundle holds it.

    Raises ``FrontmatterError`` / ``MemoryStoreError`` for a memory file or
    timeline line the memory store would not accept (the bytes verified, so
    the bundle itself was built that way).
    """

    source = loaded.source
    tree = read_tree_files(loaded.files, source=source)
    return tree.export_blob(
        namespace=loaded.manifest.get("namespace"),
        index=utf8_text(loaded.files.get(INDEX_NAME, b""), f"{source}: {INDEX_NAME}"),
    )


def fork_bundle(
    uri: str,
    dest: str | os.PathLike[str],
    *,
    strategy: str = "merge",
    source: BlockSource | None = None,
    key: KeySpec | None = None,
    allow_secrets: bool = False,
    options: LoadOptions | None = None,
) -> ForkResult:
    """Load ``uri`` (from ``source``, with ``options``: ``load_bundle``'s) and import it into the memory tree
    at ``dest`` (created if missing).

    Raises ``UsageError`` for an unknown strategy, whatever ``load_bundle``
    raises (nothing is written then), and ``Memory.import_``'s errors
    (``FrontmatterError``, ``SecretDetectedError`` with advice for a forker...; the tree is unchanged,
    and a destination this call created is removed again).
    """
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")

    car = car_source(uri)
    loaded = load_bundle(uri, source=car or keeping_source(uri, source), key=key, options=options)
    blob = export_blob(loaded)
    target = Path(dest)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{str(target)!r} exists and is not a directory; give a memory tree directory")
    created = not target.exists()
    try:
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"cannot create the memory tree {str(target)!r}: {exc.strerror or exc} "
                "(is a file in the way of its parent directory?); choose another destination"
            ) from exc
        try:
            report = Memory(target).import_(blob, strategy, allow_secrets=allow_secrets)
        except SecretDetectedError as exc:
            raise SecretDetectedError(_secret_refusal(exc.finding, loaded.source), finding=exc.finding) from exc
        if loaded.root is not None:
            record_parent(target, loaded.root)
            keep_car_blocks(car)
    except BaseException:
        if created:
            shutil.rmtree(target, ignore_errors=True)
        raise
    return ForkResult(loaded=loaded, dest=target, strategy=strategy, memories=len(blob["files"]), report=report)


def keeping_source(uri: str, source: BlockSource | None) -> BlockSource | None:
    """The source an ``ipfs://`` fork loads through: the gateways given (or ``$BUNDLEKIT_GATEWAYS``) with the
    local store asked first and every block a gateway sends kept in it; any other source as given."""
    if not uri.startswith("ipfs://") or not (source is None or isinstance(source, Gateways)):
        return source
    if source is not None and source.store is not None:
        return source
    try:
        store = BlockStore()
    except UsageError:  # no store here: the fork goes on without keeping anything (a cache)
        return source
    return Gateways(source.urls if source is not None else (), store=store, keep=True)


def _secret_refusal(finding: str, source: str) -> str:
    """The guard's finding, with advice a forker can follow: the file is in someone else's bundle, and
    ``bundlekit fork`` has no ``--allow-secrets`` (a published credential should not spread by forks)."""
    return (
        f"{finding}; {source} carries what looks like a credential, so nothing was forked: ask its publisher "
        "to remove it and publish again, or `bundlekit load` the bundle into a directory and remove it there"
    )
