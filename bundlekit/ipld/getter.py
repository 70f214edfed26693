"""The one block-getter protocol: what a load reads its blocks through and what the gateway serves from.

Shaped as boxo's ``BlockGetter`` (github.com/ipfs/boxo, ``blockservice/blockservice.go`` at commit
61104bddadd5a655555b1159592bafdb56276120: ``GetBlock`` and ``GetBlocks``, shared by the blockservice
and its sessions): ``get`` is one verified block, ``get_many`` a batch that returns the blocks it
found and leaves the others out. Both sides build on it: a load's ``bundle.sources.BlockSession``
adds where the blocks come from, the gateway's ``gateway.sources.ServedBlocks`` adds ``has`` and
``roots`` (the ``HeldRoot`` values below). Fetching ahead of the reads (a streamed CAR, level by
level prefetch) is no verb of a getter: the loader attaches it to a session over gateways
(``bundle.ahead``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import NamedTuple, Protocol

from bundlekit.errors import MissingBlock

__all__ = ["BlockGetter", "HeldRoot"]


class BlockGetter(Protocol):
    """Verified blocks by CID, from any number of threads at once (boxo's ``BlockGetter``).

    A class that holds its blocks locally may subclass this protocol to take the default
    ``get_many`` (each block asked in turn); one that fetches overrides it.
    """

    def get(self, cid: bytes) -> bytes:
        """The verified bytes of ``cid``: ``MissingBlock`` when the getter cannot supply it,
        ``BlockMismatch`` when the bytes it found hash to another CID."""
        ...

    def get_many(self, cids: Sequence[bytes], concurrency: int) -> dict[bytes, bytes]:
        """The verified blocks of ``cids`` the getter can supply, ``concurrency`` asked at a time; the
        others are left out (``get`` raises for them). Held locally, each is asked in turn."""
        found: dict[bytes, bytes] = {}
        for cid in cids:
            with suppress(MissingBlock):
                found[cid] = self.get(cid)
        return found


class HeldRoot(NamedTuple):
    """A DAG root a block source holds: its CID, where (a CAR's path, ``store``, a label), its name if any."""

    cid: bytes
    where: str
    name: str | None = None
