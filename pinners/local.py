"""The ``local`` pinner (the default): the embedded block store.

Imports the CAR into ``bundlekit.blockstore.BlockStore`` (every block verified,
the DAG checked complete) and pins the root under the given name, so
``bundlekit serve`` can serve it. The store lives at ``$BUNDLEKIT_HOME``, else
the XDG data directory. A root that is already pinned with all its blocks is
not imported again: pinning twice leaves one pin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import BinaryIO

from bundlekit.blockstore import BlockStore, default_store_root
from bundlekit.errors import PinRejected, UsageError
from bundlekit.ipld.cid import as_cidv1, cid_to_str
from bundlekit.pinning.protocol import MISSING, PINNED, BasePinner, PinEntry, PinResult

__all__ = ["LocalPinner"]


class LocalPinner(BasePinner):
    """Pins into the local block store; ``url`` is ``ipfs://<cid>``."""

    name = "local"
    description = "the local block store ($BUNDLEKIT_HOME), served by `bundlekit serve`"
    optional_env = ("BUNDLEKIT_HOME",)
    # A Ctrl-C'd run must leave no pin here (pin_all removes one this run made).
    rollback_on_interrupt = True

    def __init__(self, store: BlockStore) -> None:
        self.store = store
        self._pinned_walk: dict[bytes, int] | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LocalPinner:
        """Open the store at ``BUNDLEKIT_HOME`` (or the XDG default)."""
        return cls(BlockStore(default_store_root(dict(env))))

    @classmethod
    def is_configured(cls, env: Mapping[str, str]) -> bool:
        return True

    def holds(self, cid: bytes) -> bool:
        """Whether the store has block ``cid`` (``pinning.orchestrate.held_by_all``: a CAR for this pinner may
        leave it out; ``pin`` reads such blocks from the store, where they were verified when written). A block
        of the DAG pinned last (``BlockStore.pinned_walk``, read once) is held without a look at its file; should
        that pin go before this one is made, the pin's walk finds the block missing and refuses."""
        walked = self._walked()
        return cid in walked or as_cidv1(cid) in walked or self.store.has(cid)

    def holds_many(self, cids: Iterable[bytes]) -> set[bytes]:
        """Those of ``cids`` the store has (:meth:`holds` of each): the ones of the DAG pinned last found in one pass
        of set arithmetic, only the others looked for one at a time."""
        asked = set(cids)
        rest = asked.difference(self._walked())
        return asked.difference(cid for cid in rest if not self.holds(cid))

    def _walked(self) -> dict[bytes, int]:
        """The blocks of the DAG pinned last (``BlockStore.pinned_walk``), read at the first question after
        :meth:`forget_held`."""
        if self._pinned_walk is None:
            self._pinned_walk = self.store.pinned_walk()
        return self._pinned_walk

    def forget_held(self) -> None:
        """Read the last pin's walk again at the next :meth:`holds` (``orchestrate.HeldByAll``, each round): the pin
        it was read of may have been retired and its blocks collected since (a pinner kept across rounds)."""
        self._pinned_walk = None

    def _pinned(self, root: bytes) -> bool:
        return as_cidv1(root) in self.store.pins()

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        """Import the CAR (unless ``root`` is already pinned) and pin ``root``.

        Raises CARError/VerificationError for a bad or incomplete CAR and
        PinRejected when ``root`` is not one of the CAR's roots.
        """
        url = f"ipfs://{cid_to_str(root)}"
        if self._pinned(root) and self.store.has(root):
            if name is not None:
                self.store.pin(root, name)  # refresh the label; same pin, no duplicate
            return PinResult(self.name, cid_to_str(root), PINNED, url=url)
        before = set(self.store.pins())
        # Pin inside the import (one DAG walk, and no window for a concurrent gc);
        # pins this call added for a CAR of the wrong root are undone below.
        roots = self.store.import_car(car, pin=True, name=name)
        if as_cidv1(root) not in {as_cidv1(r) for r in roots}:
            for other in roots:
                if as_cidv1(other) not in before:
                    self.unpin(other)
            raise PinRejected(
                f"local: the CAR's roots ({', '.join(cid_to_str(r) for r in roots) or 'none'}) "
                f"do not include {cid_to_str(root)}; pass the CAR built for that root"
            )
        return PinResult(self.name, cid_to_str(root), PINNED, url=url)

    def status(self, cid: bytes) -> PinResult:
        pinned = self._pinned(cid)
        return PinResult(self.name, cid_to_str(cid), PINNED if pinned else MISSING,
                         url=f"ipfs://{cid_to_str(cid)}" if pinned else None)

    def list(self, name_prefix: str = "") -> list[PinEntry]:
        """Pins whose name starts with ``name_prefix``, with the date each was first pinned."""
        return [
            PinEntry(cid_to_str(cid), meta.get("name"), meta.get("created"))
            for cid, meta in self.store.pins().items()
            if (meta.get("name") or "").startswith(name_prefix)
        ]

    def unpin(self, cid: bytes) -> None:
        """Remove the pin if present; the blocks go at the next ``gc``."""
        if not self._pinned(cid):
            return
        try:
            self.store.unpin(cid)
        except UsageError:
            pass  # unpinned concurrently: the outcome we wanted
