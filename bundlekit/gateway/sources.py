"""Block sources for the gateway: CAR files (through ``car.CarIndex``), blocks in memory, and a chain of sources.

:class:`ServedBlocks` is the smallest thing the gateway can serve from: a block
getter (``ipld.getter.BlockGetter``, the protocol a load's session is too:
``get(cid)``, verified bytes or ``MissingBlock``, and ``get_many``), with
``has(cid)`` and ``roots()``, the DAG roots it holds (``HeldRoot``s, listed by
``serve`` and the interface). ``BlockStore`` is one (its pins);
``CarFileSource`` serves a CAR file without loading it; ``MemorySource``
serves blocks held in memory (a bundle ``bundlekit open`` fetched: nothing of
it touches the disk); ``ChainSource`` asks several in order. Sources must be
safe to call from many threads at once. (Where a *load* gets its blocks is
another thing, ``bundle.sources.BlockSource``: a value opened per load.)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from bundlekit.car.index import CarIndex
from bundlekit.errors import CIDError, MissingBlock
from bundlekit.ipld.cid import DAG_PB, SHA2_256, SHA2_256_LEN, as_cidv1, cid_to_str
from bundlekit.ipld.getter import BlockGetter, HeldRoot

__all__ = ["CarFileSource", "ChainSource", "MemorySource", "ServedBlocks"]

# A dag-pb sha2-256 CIDv1 starts with these bytes; without its first two it is the CIDv0.
_DAG_PB_SHA2_256_V1 = bytes((0x01, DAG_PB, SHA2_256, SHA2_256_LEN))


@runtime_checkable
class ServedBlocks(BlockGetter, Protocol):
    """What the gateway reads blocks from (``get`` raises ``MissingBlock`` when absent); thread-safe."""

    def has(self, cid: bytes) -> bool:
        """True if ``get(cid)`` can be expected to succeed."""
        ...

    def roots(self) -> list[HeldRoot]:
        """The DAG roots this source holds, in its order (raises what reading them raises: a pin file)."""
        ...


def _stored_form(cid: bytes, contains: Callable[[bytes], bool]) -> bytes | None:
    """The form of ``cid`` (itself, or its CIDv0 / dag-pb CIDv1 twin) a source holds, or None."""
    if contains(cid):
        return cid
    try:
        v1 = as_cidv1(cid)
    except CIDError:
        return None
    forms = (v1, v1[2:]) if v1[:4] == _DAG_PB_SHA2_256_V1 else (v1,)
    return next((form for form in forms if contains(form)), None)


class CarFileSource(BlockGetter):
    """Serve the blocks of one CAR file: a thin adapter over ``car.CarIndex``.

    ``CarIndex`` does the work: opening indexes the file once (verifying every
    block) and keeps only ``cid -> (offset, length)``, so memory grows with the
    number of blocks, not their size; blocks are read on demand with ``pread``
    (many request threads at once, no lock) and each ``get`` re-verifies the
    block, so a file changed after indexing is reported, not served. The
    adapter adds what a block source needs: a CID asked for in either form
    (CIDv0 or its dag-pb CIDv1) finds the block stored under the other, and
    ``has`` never raises. Its roots are the CAR header's, held where the file
    is. Raises ``CARError`` for a malformed, truncated or unreadable CAR.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._index = CarIndex(path, verify=True)
        self.path: Path = self._index.path
        self._roots = [HeldRoot(root, str(self.path)) for root in self._index.roots]
        self.blocks = len(self._index)

    def roots(self) -> list[HeldRoot]:
        return list(self._roots)

    def _stored(self, cid: bytes) -> bytes | None:
        """The CID ``cid``'s block is stored under in the CAR (either form), or None."""
        return _stored_form(cid, self._index.__contains__)

    def has(self, cid: bytes) -> bool:
        return self._stored(cid) is not None

    def get(self, cid: bytes) -> bytes:
        """The verified block; ``MissingBlock`` if the CAR lacks it, ``BlockMismatch`` if the file changed."""
        stored = self._stored(cid)
        if stored is None:
            raise MissingBlock(f"block {cid_to_str(cid)} is not in {self.path.name}")
        return self._index.get(stored)

    def close(self) -> None:
        self._index.close()


class MemorySource(BlockGetter):
    """Blocks held in memory, each verified against its CID before it was given, served with their roots.

    Looks a CID up in either form, as ``CarFileSource`` does. ``label`` names
    where the blocks came from in the roots listing (``roots``, ``served_roots``).
    Read-only once built, so safe for many threads.
    """

    def __init__(self, blocks: Mapping[bytes, bytes], roots: Sequence[bytes], label: str) -> None:
        self._blocks = dict(blocks)
        self._roots = [HeldRoot(root, label) for root in roots]
        self.label = label

    def roots(self) -> list[HeldRoot]:
        return list(self._roots)

    def has(self, cid: bytes) -> bool:
        return _stored_form(cid, self._blocks.__contains__) is not None

    def get(self, cid: bytes) -> bytes:
        stored = _stored_form(cid, self._blocks.__contains__)
        if stored is None:
            raise MissingBlock(f"block {cid_to_str(cid)} is not in the bundle held in memory")
        return self._blocks[stored]


class ChainSource(BlockGetter):
    """Ask each source in order; the first that has the block answers. Its roots are theirs, in that order."""

    def __init__(self, sources: Iterable[ServedBlocks]) -> None:
        self.sources: Sequence[ServedBlocks] = tuple(sources)

    def roots(self) -> list[HeldRoot]:
        return [root for source in self.sources for root in source.roots()]

    def has(self, cid: bytes) -> bool:
        return any(source.has(cid) for source in self.sources)

    def get(self, cid: bytes) -> bytes:
        # One lookup per source: a has() before each get() doubles the disk calls in the hot path.
        for source in self.sources:
            try:
                return source.get(cid)
            except MissingBlock:
                continue
        raise MissingBlock(f"block {cid_to_str(cid)} is in none of the gateway's sources")
