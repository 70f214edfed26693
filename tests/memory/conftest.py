"""Shared fixtures for the memory tests: a settable clock and fresh trees."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bundlekit.memory import Memory
from bundlekit.memory.backend import DirectoryBackend
from bundlekit.memory.catalog.listing import Listing

START = datetime(2026, 4, 14, 12, 3, 12, 345000, tzinfo=UTC)


class Clock:
    """A clock tests move by hand."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return tmp_path / "memory"


@pytest.fixture
def mem(tree: Path, clock: Clock) -> Memory:
    return Memory(tree, namespace="test-agent", clock=clock)


def fields(**overrides: Any) -> dict[str, Any]:
    """Valid write() arguments, with overrides."""
    base: dict[str, Any] = {
        "name": "Tone",
        "description": "user wants direct critique",
        "type": "feedback",
        "body": "Lead with the issue, then the fix.",
    }
    base.update(overrides)
    return base


def count_listings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many files each listing of a tree (a readdir and an lstat per file) looks at, in order, from now on."""
    seen: list[int] = []
    scan = DirectoryBackend.scan

    def counted(self: DirectoryBackend, **kw: bool) -> object:
        found = scan(self, **kw)
        seen.append(len(found))
        return found

    monkeypatch.setattr(DirectoryBackend, "scan", counted)
    return seen


def count_joins(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry each time SQLite joins the listing (``Listing.listed``), from now on."""
    joined: list[int] = []
    listed = Listing.listed

    def counted(self: Listing) -> tuple[bytes, int, bytes | None, list[str]]:
        joined.append(1)
        return listed(self)

    monkeypatch.setattr(Listing, "listed", counted)
    return joined
