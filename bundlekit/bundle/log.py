"""``bundlekit log``: walk a bundle's ``parents`` back, each step loaded and verified.

``walk_lineage`` follows the first parent of each manifest (``specs/provenance.md``,
"Lineage") through the same gateways, up to a depth limit, and stops at the
first parent no source can supply, saying so in ``note``. Each step carries
its root, created time, verified publisher and the memory diff from its parent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from bundlekit.bundle.diff import diff_memories
from bundlekit.bundle.load import LoadOptions, LoadResult, load_bundle
from bundlekit.errors import LoadError, UsageError
from bundlekit.memory.files import read_tree_files

if TYPE_CHECKING:
    from bundlekit.bundle.sources import BlockSource
    from bundlekit.crypto._keys import KeySpec

__all__ = ["DEFAULT_DEPTH", "Lineage", "LogStep", "walk_lineage"]

DEFAULT_DEPTH: Final = 20


@dataclass
class LogStep:
    """One bundle of a lineage walk: where it sits (``depth``), what it holds and how it differs from its parent."""

    root: str
    depth: int
    created: str | None
    namespace: str | None
    publisher: str | None
    parents: list[str]
    diff: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root, "depth": self.depth, "created": self.created, "namespace": self.namespace,
                "publisher": self.publisher, "parents": list(self.parents), "diff": self.diff}


@dataclass
class Lineage:
    """The steps walked (newest first) and why the walk ended early, if it did (``note``)."""

    steps: list[LogStep] = field(default_factory=list)
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"steps": [s.to_dict() for s in self.steps], "note": self.note}


def _summary(child: LoadResult, parent: LoadResult) -> dict[str, int]:
    """The memory diff from ``parent`` to ``child`` as counts."""
    result = diff_memories(read_tree_files(parent.files).records, read_tree_files(child.files).records)
    return {"added": len(result.added), "removed": len(result.removed), "changed": len(result.changed),
            "unchanged": result.unchanged}


def walk_lineage(
    uri: str,
    *,
    source: BlockSource | None = None,
    key: KeySpec | None = None,
    depth: int = DEFAULT_DEPTH,
    options: LoadOptions | None = None,
    load: Callable[..., LoadResult] = load_bundle,
) -> Lineage:
    """Walk from the bundle at ``uri`` back through its first parents, each loaded and verified.

    The first step must load (its errors propagate); a parent that no source
    can supply ends the walk with ``note`` saying which and why. ``depth``
    bounds the number of steps (``UsageError`` below 1). Each step but the
    oldest carries the memory diff from its parent to it. Every step is loaded from ``source`` with
    ``options`` (``load_bundle``'s).
    """
    if depth < 1:
        raise UsageError("--depth must be at least 1")
    lineage = Lineage()
    current = load(uri, source=source, key=key, options=options)
    previous: LoadResult | None = None
    while True:
        if previous is not None:
            lineage.steps[-1].diff = _summary(previous, current)
        lineage.steps.append(LogStep(
            root=current.root_cid or uri, depth=len(lineage.steps), created=current.manifest.get("created"),
            namespace=current.manifest.get("namespace"), publisher=current.publisher, parents=list(current.parents),
        ))
        if not current.parents:
            return lineage
        if len(lineage.steps) >= depth:
            lineage.note = f"stopped at the depth limit ({depth}); pass a larger --depth to go further"
            return lineage
        parent = current.parents[0]
        previous = current
        try:
            current = load(f"ipfs://{parent}", source=source, key=key, options=options)
        except (LoadError, UsageError) as exc:
            lineage.note = f"parent {parent} is not reachable ({exc}); the walk stops here"
            return lineage
