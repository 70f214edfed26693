"""Fixtures for the CLI output contract: a memory tree, its bundle, a plain CAR, a block store.

Every test runs with ``$BUNDLEKIT_HOME`` in its own temporary directory, no
``CI`` and no pinner secrets, so the local store and the pinners start empty.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import build_bundle
from bundlekit.car.writer import CarFileWriter
from bundlekit.cli import cli
from bundlekit.ipld.cid import cid_to_str
from bundlekit.unixfs.importer import import_path
from bundlekit.unixfs.profiles import get_profile

FIXTURE_TREE = Path(__file__).resolve().parents[2] / "fixtures" / "memory"

Run = Callable[..., Result]


@pytest.fixture(autouse=True)
def _clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    for var in ("CI", "BUNDLEKIT_MEMORY_DIR", "BUNDLEKIT_GATEWAYS", "SOURCE_DATE_EPOCH", "PINATA_JWT"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def run() -> Run:
    """Invoke the real command table; stdout and stderr stay separate (``result.stdout``/``.stderr``)."""

    def invoke(*args: str | Path, env: dict[str, str] | None = None) -> Result:
        return CliRunner().invoke(cli, [str(a) for a in args], env=env)

    return invoke


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the bundled sample memory tree."""
    dest = tmp_path / "memory"
    shutil.copytree(FIXTURE_TREE, dest)
    return dest


@pytest.fixture
def bundle(tree: Path, tmp_path: Path) -> Path:
    """The sample tree's bundle CAR."""
    out = tmp_path / "bundle.car"
    build_bundle(tree, out)
    return out


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A small directory of plain files to pack."""
    root = tmp_path / "files"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "sub" / "b.txt").write_text("beta\n")
    return root


@pytest.fixture
def plain_car(files: Path, tmp_path: Path) -> Path:
    """``files`` packed into a CAR."""
    out = tmp_path / "plain.car"
    with CarFileWriter(out) as writer:
        result = import_path(files, writer, get_profile(None))
        writer.finish(result.root)
    return out


@pytest.fixture
def truncated(tmp_path: Path) -> Callable[[Path], Path]:
    """A copy of a CAR with its last bytes cut off."""

    def cut(car: Path) -> Path:
        out = tmp_path / f"truncated-{car.name}"
        out.write_bytes(car.read_bytes()[:-9])
        return out

    return cut


@pytest.fixture
def store(plain_car: Path, tmp_path: Path) -> tuple[Path, str]:
    """A block store holding ``plain_car``, pinned; returns (directory, root text)."""
    directory = tmp_path / "store"
    with open(plain_car, "rb") as fh:
        (root,) = BlockStore(directory).import_car(fh, pin=True, name="plain")
    return directory, cid_to_str(root)
