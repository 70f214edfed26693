"""Hostile bundle DAGs are refused while they stream: bounded memory and time, a clear error (issue 12, item 1).

Each load runs in a child process with a 1 GiB address-space limit
(``RLIMIT_AS``) and a timeout: a loader that joins a reused subtree before
checking its size dies there instead of passing. The DAGs are built by
``hostile_dags``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from bundlekit.bundle.load import load_bundle
from bundlekit.bundle.manifest import canonical_json
from bundlekit.car.index import CarIndex
from bundlekit.crypto import RawKeyFile
from bundlekit.errors import DAGLimitExceeded, IntegrityError, ManifestError
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import cid_to_str

from . import hostile_dags

ADDRESS_SPACE = 1024 * 1024 * 1024
TIMEOUT = 60


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _load(*args: str) -> subprocess.CompletedProcess[str]:
    """``bundlekit load ARGS`` in a child bounded in memory and time."""
    return subprocess.run(
        [sys.executable, "-m", "bundlekit", "load", *args], capture_output=True, text=True,
        timeout=TIMEOUT, preexec_fn=_bounded, cwd=Path(__file__).parent,
        env={**os.environ, "BUNDLEKIT_GATEWAYS": ""}, check=False,
    )


def test_a_manifest_dag_reusing_a_subtree_is_refused_by_its_claimed_size(tmp_path: Path) -> None:
    car = hostile_dags.reused_manifest_car(tmp_path / "m.car")
    assert car.stat().st_size < 10 * 1024  # a few KB standing for terabytes
    result = _load(str(car))
    assert result.returncode == ManifestError.exit_code, result.stderr
    assert "manifest.json" in result.stderr and "over the 67108864-byte limit" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_manifest_dag_reusing_a_subtree_is_refused_from_a_gateway_too(tmp_path: Path) -> None:
    car = hostile_dags.reused_manifest_car(tmp_path / "m.car")
    with CarIndex(car) as index:
        root_cid = index.roots[0]
    with serve_in_thread(cars=[car]) as server:
        result = _load("--gateway", server.url, f"ipfs://{cid_to_str(root_cid)}")
    assert result.returncode == ManifestError.exit_code, result.stderr
    assert "over the 67108864-byte limit" in result.stderr


def test_a_manifest_of_one_empty_block_linked_a_billion_times_stops_at_its_visit_budget(tmp_path: Path) -> None:
    car = hostile_dags.empty_reused_manifest_car(tmp_path / "e.car")
    result = _load(str(car))
    assert result.returncode == DAGLimitExceeded.exit_code, result.stderr
    assert "block visits" in result.stderr and "Traceback" not in result.stderr


def test_a_memory_file_dag_claiming_more_than_its_declared_size_is_refused(tmp_path: Path) -> None:
    car = hostile_dags.reused_memory_file_car(tmp_path / "f.car", declared=64)
    result = _load(str(car), "-o", str(tmp_path / "out"))
    assert result.returncode == IntegrityError.exit_code, result.stderr
    assert "memory/big.md" in result.stderr and "the manifest says 64" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", [[], {}, 7])
def test_an_encryption_key_source_of_the_wrong_type_is_a_manifest_error(
    tmp_path: Path, value: object
) -> None:
    blocks: hostile_dags.Blocks = {}
    index = hostile_dags._put(blocks, hostile_dags.RAW, b"# index\n")
    manifest = canonical_json({
        "format": "bundlekit/1", "namespace": "hostile", "created": "2026-04-14T12:00:00Z",
        "profile": "unixfs-v1-2025",
        "encryption": {"scheme": "bundlekit-enc/1", "key_source": value, "kdf": {}, "salt": "", "key_id": "", "commitment": ""},
        "memory": {"index": "memory/MEMORY.md", "timeline": [],
                   "files": {"memory/MEMORY.md": {"cid": cid_to_str(index), "size": 8}}},
    })
    manifest_cid = hostile_dags._put(blocks, hostile_dags.RAW, manifest)
    car = hostile_dags.bundle_car(tmp_path / "k.car", blocks, manifest_cid, {"MEMORY.md": index})
    with pytest.raises(ManifestError, match="key_source"):
        load_bundle(str(car), key=RawKeyFile(bytes(32)))
