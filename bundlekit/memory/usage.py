"""Usage that ranks, for one tree: the memories a recall or context block returned, the reads of them that
followed, and what a ranking reads of that (``catalog.usage``; specs/memory.md, "Usage that ranks").

Writes go to the derived index as it is (``Indexer.peek``: no check of the files), each in its own
transaction; an index that cannot take them (read-only, busy, broken) loses the note, never the recall or
the read: derived data may rank, never decide what a command answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from bundlekit.errors import MemoryStoreError
from bundlekit.memory.access import TreeAccess
from bundlekit.memory.catalog import Catalog, CatalogUnavailable, CatalogUnusable

__all__ = ["Boosts", "boosts", "note_read", "note_returned"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class Boosts:
    """What a ranking reads of usage: each memory's decayed boost by key, and the row ids of the memories
    whose name is the query (they keep their place above every boosted one)."""

    by_key: dict[str, float] = field(default_factory=dict)
    named: frozenset[int] = frozenset()


def boosts(catalog: Catalog, needle: str, now_s: float) -> Boosts:
    """The :class:`Boosts` of ``needle`` (folded) at ``now_s``, inside a read of ``catalog``."""
    return Boosts(catalog.usage.boosts(now_s), frozenset(catalog.search.named(needle)))


def _note(tree: TreeAccess, op: Callable[[Catalog], _T]) -> _T | None:
    with tree.mutex:
        try:
            return op(tree.index.peek())
        except (CatalogUnusable, CatalogUnavailable, MemoryStoreError):
            return None


def note_returned(tree: TreeAccess, keys: Sequence[str]) -> None:
    """Note that a recall or context block returned ``keys`` now."""
    now_s = tree.now().timestamp()
    _note(tree, lambda catalog: catalog.usage.returned(keys, now_s))


def note_read(tree: TreeAccess, key: str) -> bool:
    """Note that the agent read ``key`` now; whether that raised its boost (a recall returned it within the
    window before)."""
    now_s = tree.now().timestamp()
    return bool(_note(tree, lambda catalog: catalog.usage.read(key, now_s)))
