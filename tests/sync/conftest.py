"""Shared fixtures for merge and sync: an isolated block store, memory records and tree states built in memory."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bundlekit.memory.merge import TreeState
from bundlekit.memory.record import MemoryRecord, rendered_record


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
