"""Shared fixtures for merge and sync: an isolated block store, memory records and tree states built in memory,
and the local pinner with a hook (another writer publishing meanwhile)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.memory.merge import TreeState
from bundlekit.memory.record import MemoryRecord, rendered_record
from bundlekit.pinning.protocol import PinResult
from pinners.local import LocalPinner


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test has its own block store and no configured gateways, kubo or pinners."""
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    for var in ("BUNDLEKIT_GATEWAYS", "BUNDLEKIT_KUBO_URL", "SOURCE_DATE_EPOCH", "CI", "BUNDLEKIT_MEMORY_DIR"):
        monkeypatch.delenv(var, raising=False)


def record(key: str, body: str = "body", *, updated: str = "2026-04-14T12:00:00Z", revision: int = 1,
           **meta: Any) -> MemoryRecord:
    """A memory as a file holds it (``meta`` adds or replaces frontmatter fields)."""
    fields: dict[str, Any] = {"name": key, "description": f"about {key}", "type": "project",
                              "created": "2026-04-14T12:00:00Z", "updated": updated, "revision": revision}
    fields.update(meta)
    return rendered_record(key, fields, body, where=f"{key}.md")


def state(label: str, *records: MemoryRecord, days: Mapping[str, bytes] | None = None) -> TreeState:
    return TreeState(label, {r.key: r for r in records}, dict(days or {}))


def line(ts: str, kind: str = "note", **data: Any) -> bytes:
    import json

    return (json.dumps({"ts": ts, "type": kind, **data}, separators=(",", ":")) + "\n").encode()


class HookedPinner:
    """The local pinner (into ``store``, else the default store), calling ``before`` once before its first pin
    (another writer publishing meanwhile)."""

    name = "local"
    rollback_on_interrupt = True

    def __init__(self, before: Callable[[], object] | None = None, store: Path | None = None) -> None:
        self.inner = LocalPinner(BlockStore(store))
        self.before = before

    def pin(self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None) -> PinResult:
        if self.before is not None:
            hook, self.before = self.before, None
            hook()
        return self.inner.pin(car, root, name=name, size=size)

    def status(self, cid: bytes) -> PinResult:
        return self.inner.status(cid)

    def unpin(self, cid: bytes) -> None:
        self.inner.unpin(cid)

    def close(self) -> None:
        self.inner.close()


class CountingStore(BlockStore):
    """A store as a gateway serves it, noting every block it hands out."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.served: list[bytes] = []

    def get(self, cid: bytes) -> bytes:
        data = super().get(cid)
        self.served.append(cid)
        return data
