"""Shared fixtures for the pinner tests: small real CARs, a fake env, a recording sleep."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from bundlekit.car.writer import CarWriter
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str, make_cid
from bundlekit.ipld.dagpb import PBLink, encode_node
from bundlekit.pinning.http import UPLOAD_OPTIONS

SECRET = "sk-test-SECRET-9f8e7d6c5b4a"
#: a token that must never appear in an error message, escaped or not
CANARY = "CANARYtoken0123"


@dataclass
class Car:
    """A CAR on disk: path, root (binary), root text, size."""

    path: Path
    root: bytes
    size: int

    @property
    def root_text(self) -> str:
        return cid_to_str(self.root)

    def open(self) -> io.BufferedReader:
        return open(self.path, "rb")


def build_car(path: Path, payloads: list[bytes], *, roots: list[bytes] | None = None) -> Car:
    """A dag-pb root linking to raw leaves holding ``payloads``; written as a CARv1 at ``path``."""
    leaves = [(make_cid(1, RAW, p), p) for p in payloads]
    node = encode_node([PBLink(cid, f"f{i}".encode(), len(p)) for i, (cid, p) in enumerate(leaves)], b"\x08\x01")
    root = make_cid(1, DAG_PB, node)
    with open(path, "wb") as fh:
        writer = CarWriter(fh, roots if roots is not None else [root])
        writer.put(root, node)
        for cid, data in leaves:
            writer.put(cid, data)
        writer.close()
    return Car(path, root, path.stat().st_size)


@pytest.fixture
def car(tmp_path: Path) -> Car:
    return build_car(tmp_path / "bundle.car", [b"hello memory", b"second leaf"])


@pytest.fixture
def other_car(tmp_path: Path) -> Car:
    return build_car(tmp_path / "other.car", [b"different content"])


class Sleeps:
    """An injectable sleep that records each wait instead of sleeping."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def http_kwargs(sleeps: Sleeps) -> dict[str, object]:
    """Keyword arguments for HttpClient-based pinners: the upload options with no real sleep, no jitter."""
    return {"options": replace(UPLOAD_OPTIONS, sleep=sleeps, jitter=lambda: 0.0)}


@pytest.fixture
def store_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("BUNDLEKIT_HOME", str(home))
    yield home
