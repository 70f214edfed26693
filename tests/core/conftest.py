"""Shared fixtures for the content-addressing core: vector trees and seeded inputs."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

VECTORS = Path(__file__).resolve().parents[2] / "fixtures" / "vectors" / "unixfs"
PROFILE_NAMES = ("unixfs-v1-2025", "unixfs-v0-2015", "kubo-cidv1", "ipfs-car")


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_tree", VECTORS / "gen_tree.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_tree = _load_generator()


def load_vectors() -> list[dict[str, Any]]:
    """Every per-scenario vector file (not the kubo fixture list)."""
    return [
        json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(VECTORS.glob("*.json"))
        if p.name != "kubo-ipip499.json"
    ]


def load_kubo_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((VECTORS / "kubo-ipip499.json").read_text(encoding="utf-8"))["cases"]
    return cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Walk the vector folders: one test per scenario, profile and kubo fixture."""
    if "vector" in metafunc.fixturenames:
        small = [v for v in load_vectors() if v["scenario"] != gen_tree.BIG_SCENARIO]
        metafunc.parametrize("vector", small, ids=[v["scenario"] for v in small])
    if "profile_name" in metafunc.fixturenames:
        metafunc.parametrize("profile_name", PROFILE_NAMES)
    if "kubo_case" in metafunc.fixturenames:
        metafunc.parametrize(
            "kubo_case",
            [
                pytest.param(case, id=case["name"], marks=[pytest.mark.slow] if case.get("large") else [])
                for case in load_kubo_cases()
            ],
        )


@pytest.fixture(scope="session")
def all_vectors() -> list[dict[str, Any]]:
    return load_vectors()


@pytest.fixture(scope="session")
def big_vector() -> dict[str, Any]:
    return next(v for v in load_vectors() if v["scenario"] == gen_tree.BIG_SCENARIO)


@pytest.fixture(scope="session")
def vector_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The deterministic scenario trees the vectors were generated from (without the big file)."""
    out = tmp_path_factory.mktemp("vectors")
    gen_tree.build(out)
    return out


@pytest.fixture(scope="session")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 45.6 MB two-level file, regenerated rather than committed."""
    out = tmp_path_factory.mktemp("big")
    path: Path = gen_tree.write_big(out)
    return path


class ChaChaStream(io.RawIOBase):
    """kubo's deterministic test bytes: the ChaCha20 keystream keyed by sha256(seed), streamed."""

    def __init__(self, size: int, seed: str) -> None:
        key = hashlib.sha256(seed.encode()).digest()
        self._enc = Cipher(algorithms.ChaCha20(key, b"\0" * 16), mode=None).encryptor()
        self._left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self._left)
        if n:
            buffer[:n] = self._enc.update(bytes(n))
            self._left -= n
        return n


def chacha_names(count: int, name_len: int, last_len: int, seed: str) -> list[str]:
    """kubo's deterministic file names (see kubo-ipip499.json)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz01234567890-_"
    stream = ChaChaStream(1 << 20, seed).read(1 << 20) if count else b""
    names = []
    offset = 0
    for i in range(count):
        n = last_len if i == count - 1 else name_len
        names.append("".join(alphabet[b % len(alphabet)] for b in stream[offset : offset + n]))
        offset += n
    return names


@pytest.fixture()
def seeded() -> type[ChaChaStream]:
    return ChaChaStream


@pytest.fixture()
def kubo_names() -> Any:
    return chacha_names
