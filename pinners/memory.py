"""The ``memory`` pinner: real CIDs, nothing persisted.

Plays the part httpx's ``MockTransport`` plays for httpx: dry runs
(``bundlekit pin --pinner memory``) and fast tests. Every block of the CAR is
verified against its CID, the root's block must be present, and pinning the
same root twice keeps one pin. Everything lives in this object's dicts and is
gone when it is garbage collected.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import BinaryIO

from bundlekit.car.reader import read_car
from bundlekit.errors import PinRejected
from bundlekit.ipld.cid import cid_to_str
from bundlekit.pinning.protocol import MISSING, PINNED, BasePinner, PinResult

__all__ = ["MemoryPinner"]


class MemoryPinner(BasePinner):
    """Blocks in a dict, pins in a dict; ``url`` is ``memory://<cid>``."""

    name = "memory"
    description = "in-process dry run: verifies the CAR, keeps blocks in memory, persists nothing"

    def __init__(self) -> None:
        self.blocks: dict[bytes, bytes] = {}
        self.pins: dict[bytes, str | None] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> MemoryPinner:
        """Needs no settings."""
        return cls()

    @classmethod
    def is_configured(cls, env: Mapping[str, str]) -> bool:
        return True

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        """Verify and keep every block; pin ``root``.

        Raises CARError/VerificationError for a bad CAR, PinRejected when
        ``root`` is not a root of the CAR or its block is absent.
        """
        roots, blocks = read_car(car, verify=True)
        if root not in roots:
            raise PinRejected(
                f"memory: the CAR's roots ({', '.join(cid_to_str(r) for r in roots) or 'none'}) "
                f"do not include {cid_to_str(root)}; pass the CAR built for that root"
            )
        received = dict(blocks)
        if root not in received and root not in self.blocks:
            raise PinRejected(f"memory: the CAR lacks the root block {cid_to_str(root)}; rebuild the CAR")
        with self._lock:
            self.blocks.update(received)
            self.pins[root] = name
        return PinResult(self.name, cid_to_str(root), PINNED, url=f"memory://{cid_to_str(root)}")

    def status(self, cid: bytes) -> PinResult:
        with self._lock:
            pinned = cid in self.pins
        return PinResult(self.name, cid_to_str(cid), PINNED if pinned else MISSING)

    def unpin(self, cid: bytes) -> None:
        with self._lock:
            self.pins.pop(cid, None)
