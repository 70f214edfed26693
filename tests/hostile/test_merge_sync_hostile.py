"""Issue 28 attacked: hostile trees and bundles meeting `merge` and `sync`, and stops in the middle of a sync loop.

Each test names the payload. Nothing a merge refuses may reach the tree; a planted last-root file (a link
to a device, a FIFO, junk) costs the merge its base, never a hang or an error; a sync loop stopped by
SIGTERM or SIGHUP exits as Ctrl-C does and leaves no temporary CAR behind. Children are killed after
``TIMEOUT`` seconds at the latest: a stop that hangs fails the test, no time is asserted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import file_cid
from bundlekit.bundle.manifest import MAX_PARENTS, canonical_json, make_manifest
from bundlekit.car.writer import CarFileWriter
from bundlekit.bundle.lineage import LAST_ROOT_NAME, LINEAGE_NAME, heads, read_last
from bundlekit.bundle.merge import find_base, merge_bundle
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import InvalidKeyError, LoadError, SecretDetectedError, UsageError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory import Memory
from bundlekit.names.record import name_from_key
from bundlekit.syncer import sync
from bundlekit.unixfs.importer import import_tree
from bundlekit.unixfs.profiles import get_profile
from pinners.local import LocalPinner

from .conftest import TIMEOUT, child_env

WHEN = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BUNDLEKIT_GATEWAYS", raising=False)


def _tree(path: Path, **memories: str) -> Path:
    mem = Memory(path, namespace="agent", clock=lambda: WHEN)
    mem.init()
    for key, body in memories.items():
        mem.write(key, name=key, description=f"about {key}", type="project", body=body)
    return path


def _files(tree: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(tree.glob("*.md"))}


def _raw_bundle(src: Path, tmp_path: Path) -> Path:
    """A plaintext bundle of the files in ``src`` exactly as they are (no tree, no guard made them)."""
    profile = get_profile()
    stored = [(f"memory/{p.name}", p.read_bytes()) for p in sorted(src.iterdir())]
    manifest = make_manifest(namespace="agent", created=WHEN, profile=profile.name,
                             files={path: (file_cid(data, profile), len(data)) for path, data in stored},
                             timeline=[], encryption=None)
    out = tmp_path / "hostile.car"
    with CarFileWriter(out) as writer:
        result = import_tree([("manifest.json", canonical_json(manifest)), *stored], writer, profile)
        writer.finish(result.root)
    return out


def _memory_text(key: str, body: str) -> str:
    return (f"---\nname: {key}\ndescription: about {key}\ntype: project\ncreated: 2026-04-14T12:00:00Z\n"
            f"updated: 2026-04-14T12:00:00Z\n---\n\n{body}\n")


def test_a_bundle_carrying_a_credential_is_refused_and_the_tree_is_untouched(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a", project_a="A.")
    car = _raw_bundle_of(tmp_path, "project_x.md", _memory_text("project_x", "key " + "AKIA" + "IOSFODNN7EXAMPLE"))
    before = _files(tree)
    with pytest.raises(SecretDetectedError):
        merge_bundle(str(car), tree)
    assert _files(tree) == before


def test_a_bundle_key_equal_to_ours_but_for_case_is_refused_and_the_tree_is_untouched(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a", project_a="A.")
    car = _raw_bundle_of(tmp_path, "Project_A.md", _memory_text("Project_A", "case twin"))
    before = _files(tree)
    with pytest.raises(InvalidKeyError):
        merge_bundle(str(car), tree)
    assert _files(tree) == before


def _raw_bundle_of(tmp_path: Path, name: str, text: str) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / name).write_text(text, "utf-8")
    (src / "MEMORY.md").write_text("# Memory\n", "utf-8")
    return _raw_bundle(src, tmp_path)


@pytest.mark.parametrize("plant", ["link-to-device", "fifo", "junk", "directory"])
def test_a_planted_last_root_costs_the_base_and_never_hangs(tmp_path: Path, plant: str) -> None:
    tree = _tree(tmp_path / "a", project_a="A.")
    target = tree / LAST_ROOT_NAME
    target.unlink(missing_ok=True)
    if plant == "link-to-device":
        target.symlink_to("/dev/zero")
    elif plant == "fifo":
        os.mkfifo(target)
    elif plant == "junk":
        target.write_bytes(b"\xff" * 10_000)
    else:
        target.mkdir()
    assert read_last(tree) is None and heads(tree) == []


def test_the_ancestor_walk_stops_at_its_bound_on_an_endless_lineage() -> None:
    calls: list[str] = []

    def parents_of(root: str) -> list[str]:  # a lineage that never ends and never meets
        calls.append(root)
        return [root + "p"]

    search = find_base(["ours"], "theirs", parents_of=parents_of, max_manifests=50)
    assert search.base is None and len(calls) == 50 and any("after 50 manifests" in n for n in search.notes)


def test_an_unreachable_name_record_fails_a_follower_without_writing(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a", project_a="A.")
    before = _files(tree)
    with pytest.raises(LoadError):
        sync(tree, name=name_from_key(Ed25519Signer.from_seed(bytes([1]) * 32).public))
    assert _files(tree) == before


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_a_sync_loop_stopped_by_a_signal_exits_as_ctrl_c_does_and_leaves_no_temporary_car(
        tmp_path: Path, stop: signal.Signals) -> None:
    signer = Ed25519Signer.from_seed(bytes([3]) * 32)
    key_file = tmp_path / "name.pem"
    signer.write(key_file)
    tree = _tree(tmp_path / "a", project_a="A.")
    sync(tree, name_key=signer, pinners=[LocalPinner(BlockStore())])
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = child_env()
    env.update(TMPDIR=str(temp), BUNDLEKIT_HOME=str(tmp_path / "home"), CI="true")
    child = subprocess.Popen(
        [sys.executable, "-m", "bundlekit", "sync", str(tree), "--name-key", str(key_file), "--interval", "30"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        first = child.stdout.readline()  # the first round is done: the loop sleeps now
        assert first.strip().startswith("bafy")
        child.send_signal(stop)
        _out, err = child.communicate(timeout=TIMEOUT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 128 + stop and "interrupted" in err
    assert list(temp.iterdir()) == []


def test_a_tree_whose_lineage_is_full_refuses_a_merge_before_writing(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a", project_a="A.")
    fillers = [cid_to_str(file_cid(str(i).encode(), get_profile())) for i in range(MAX_PARENTS)]
    (tree / LINEAGE_NAME).write_text(json.dumps({"parents": fillers}), "utf-8")
    car = _raw_bundle_of(tmp_path, "project_x.md", _memory_text("project_x", "new"))
    before = _files(tree)
    with pytest.raises(UsageError, match="parents"):
        merge_bundle(str(car), tree)
    assert _files(tree) == before
