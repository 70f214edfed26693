"""`bundlekit mcp --memory DIR --sync-name-key KEY`: the server syncs the tree with the name in the background."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from click.testing import CliRunner

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import build_bundle
from bundlekit.cli import cli
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import LoadError, UsageError
from bundlekit.memory import Memory
from bundlekit.names.record import name_from_key
from bundlekit.names.resolve import resolve
from bundlekit.syncer import BackgroundSync, SyncReport

from tests.mcp.conftest import skip_without_the_sdk

skip_without_the_sdk()

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0  # a bound on a hang, not a timing assertion


def test_background_sync_runs_rounds_until_it_is_stopped() -> None:
    rounds: list[SyncReport] = []
    with BackgroundSync(lambda: SyncReport("k51", "writer"), 0.01, on_report=rounds.append,
                        on_error=lambda exc: None) as background:
        deadline = time.monotonic() + TIMEOUT
        while len(rounds) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert background.stop.is_set() and len(rounds) >= 3


def test_mcp_with_a_sync_name_key_publishes_the_tree_while_it_serves(tmp_path: Path) -> None:
    signer = Ed25519Signer.from_seed(bytes([5]) * 32)
    key_file = tmp_path / "name.pem"
    signer.write(key_file)
    tree = tmp_path / "memory"
    Memory(tree).write("project_a", name="A", description="about a", type="project", body="A.")
    env = dict(os.environ, BUNDLEKIT_HOME=str(tmp_path / "home"), TMPDIR=str(tmp_path), CI="true",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen(
        [sys.executable, "-m", "bundlekit", "mcp", "--memory", str(tree), "--sync-name-key", str(key_file),
         "--sync-interval", "0.5"],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    name = name_from_key(signer.public)
    try:
        deadline = time.monotonic() + TIMEOUT
        published = None
        while published is None and time.monotonic() < deadline and child.poll() is None:
            try:
                published = resolve(name, store=BlockStore(tmp_path / "home"))
            except LoadError:
                time.sleep(0.1)
        _out, err = child.communicate(input="", timeout=TIMEOUT)  # the client goes away: the server ends
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert published is not None, err
    assert child.returncode == 0, err
    assert f"sync {name}: published" in err



def test_mcp_sync_without_a_tree_on_disk_is_a_usage_error(tmp_path: Path) -> None:
    tree = tmp_path / "memory"
    Memory(tree).write("project_a", name="A", description="about a", type="project", body="A.")
    car = tmp_path / "a.car"
    build_bundle(tree, car)
    Ed25519Signer.from_seed(bytes([5]) * 32).write(tmp_path / "name.pem")
    result = CliRunner().invoke(cli, ["mcp", "--from", str(car), "--sync-name-key", str(tmp_path / "name.pem")])
    assert result.exit_code == 2 and "--name-key needs a tree on disk" in result.stderr


def test_background_sync_ended_by_a_usage_error_reports_it_and_stops() -> None:
    errors: list[str] = []

    def run() -> SyncReport:
        raise UsageError("the key file is gone")

    with BackgroundSync(run, 0.01, on_report=lambda r: None, on_error=lambda e: errors.append(str(e))) as background:
        background._thread.join(TIMEOUT)
    assert errors == ["the key file is gone; background sync stopped"]
