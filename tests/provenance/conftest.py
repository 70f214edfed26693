"""Shared fixtures for provenance: memory trees, signing keys, an isolated store, bundles rebuilt with edits."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bundlekit.car.index import CarIndex
from bundlekit.car.writer import CarFileWriter
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.memory import Memory
from bundlekit.unixfs.importer import import_tree
from bundlekit.unixfs.profiles import get_profile
from bundlekit.unixfs.reader import UnixFSReader

CREATED = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
# A well-known test key (Hardhat account #0), never a real secret.
ETH_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
ETH_ADDRESS = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test has its own block store and no configured gateways or kubo."""
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    for var in ("BUNDLEKIT_GATEWAYS", "BUNDLEKIT_KUBO_URL", "SOURCE_DATE_EPOCH", "CI"):
        monkeypatch.delenv(var, raising=False)


def make_tree(root: Path, *, extra: Mapping[str, str] | None = None) -> Path:
    """A two-memory tree (fixed clock) plus ``extra`` key -> body memories."""
    mem = Memory(root, namespace="coach", clock=lambda: CREATED)
    mem.write("user_role", name="Role", description="plays 5-a-side", type="user", body="Winger.")
    mem.write("feedback_tone", name="Tone", description="warm but direct", type="feedback", body="Be direct.")
    for key, body in (extra or {}).items():
        mem.write(key, name=key, description=f"about {key}", type="project", body=body)
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "coach")


@pytest.fixture
def ed_key(tmp_path: Path) -> tuple[Path, Ed25519Signer]:
    """An Ed25519 key file (PEM) from a fixed seed, and its signer."""
    signer = Ed25519Signer.from_seed(bytes([7]) * 32)
    path = tmp_path / "ed25519.pem"
    signer.write(path)
    return path, signer


def bundle_files(car: Path) -> dict[str, bytes]:
    """Every file of a bundle CAR by path (``manifest.json``, ``signature.json``, ``memory/...``)."""
    with CarIndex(car) as index:
        reader = UnixFSReader(index.get)
        return {path: b"".join(reader.iter_file(cid)) for path, cid, kind, _size in reader.walk(index.roots[0])
                if kind != "directory"}


def rebundle(files: Mapping[str, bytes], out: Path) -> Path:
    """A bundle CAR holding exactly ``files`` (a tampered copy of a real bundle)."""
    with CarFileWriter(out) as writer:
        result = import_tree(sorted(files.items()), writer, get_profile())
        writer.finish(result.root)
    return out


