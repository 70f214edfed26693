"""load_memory hands the URI and its values to load_bundle and returns the loaded files as a Memory."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import bundlekit.bundle.load
from bundlekit.bundle.load import load_memory
from bundlekit.bundle.sources import Gateways
from bundlekit.memory import Memory

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "memory"


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    recorded: list[dict[str, Any]] = []
    files = dict(Memory(FIXTURE).bundle_files())

    def fake_load_bundle(uri: str, **kwargs: Any) -> SimpleNamespace:
        recorded.append({"uri": uri, **kwargs})
        return SimpleNamespace(files=files)

    monkeypatch.setattr(bundlekit.bundle.load, "load_bundle", fake_load_bundle)
    return recorded


def test_load_without_out_dir_returns_an_in_memory_tree(calls: list[dict[str, Any]]) -> None:
    source = Gateways(("https://gw.example",))
    memory = load_memory("ipfs://bafy/manifest.json", source=source, namespace="coach")
    assert memory.mode == "none" and memory.namespace == "coach"
    assert calls == [{"uri": "ipfs://bafy/manifest.json", "source": source, "key": None, "out_dir": None,
                      "options": None}]
    assert memory.bundle_files() == Memory(FIXTURE).bundle_files()


def test_load_into_a_directory_returns_a_memory_on_it(calls: list[dict[str, Any]], tmp_path: Path) -> None:
    memory = load_memory("ipfs://bafy/manifest.json", out_dir=tmp_path / "dest")
    assert memory.root == tmp_path / "dest" and calls[0]["out_dir"] == tmp_path / "dest"
