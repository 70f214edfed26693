"""Without --created, a bundle's time comes from its content, so unchanged trees rebuild identically."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.load import load_memory
from bundlekit.cli import cli
from bundlekit.errors import DeviceMemoryError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory import Memory

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "memory"


def _manifest(result: object) -> dict[str, object]:
    manifest = result.manifest  # type: ignore[attr-defined]
    assert isinstance(manifest, dict)
    return manifest


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    dest = tmp_path / "memory"
    shutil.copytree(FIXTURE, dest)
    return dest


def test_two_builds_without_created_give_the_same_root(tree: Path, tmp_path: Path) -> None:
    first = build_bundle(tree, tmp_path / "a.car")
    second = build_bundle(tree, tmp_path / "b.car")
    assert cid_to_str(first.root) == cid_to_str(second.root)
    assert (tmp_path / "a.car").read_bytes() == (tmp_path / "b.car").read_bytes()


def test_default_created_is_the_newest_content_time(tree: Path, tmp_path: Path) -> None:
    mem = Memory(tree)
    newest = max(r.updated for r in mem.list())
    for entry in mem.timeline():
        newest = max(newest, datetime.fromisoformat(entry["ts"].replace("Z", "+00:00")))
    result = build_bundle(tree, tmp_path / "a.car")
    assert _manifest(result)["created"] == newest.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_new_write_moves_the_default_created(tree: Path, tmp_path: Path) -> None:
    before = build_bundle(tree, tmp_path / "a.car")
    later = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    Memory(tree, clock=lambda: later).write("late_note", name="Late", description="d", type="project", body="b")
    after = build_bundle(tree, tmp_path / "b.car")
    assert _manifest(after)["created"] == "2030-01-02T03:04:05Z"
    assert after.root != before.root


def test_empty_tree_defaults_to_the_epoch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    mem = Memory(tmp_path / "empty")
    mem.init()
    result = build_bundle(tmp_path / "empty", tmp_path / "e.car", options=BuildOptions(namespace="empty"))
    assert json.loads(json.dumps(_manifest(result)))["created"] == "1970-01-01T00:00:00Z"


def test_device_memories_are_refused_and_no_car_is_written(tree: Path, tmp_path: Path) -> None:
    Memory(tree).write(
        "laptop_paths", name="Paths", description="local paths", type="reference", body="~/src",
        extra={"x-magicfrog-dimension": "device", "x-magicfrog-machine": "laptop-1"},
    )
    with pytest.raises(DeviceMemoryError, match="device memor"):
        build_bundle(tree, tmp_path / "d.car")
    assert not (tmp_path / "d.car").exists()


def test_load_memory_takes_the_bundle_namespace(tree: Path, tmp_path: Path) -> None:
    build_bundle(tree, tmp_path / "ns.car", options=BuildOptions(namespace="coach"))
    assert load_memory(str(tmp_path / "ns.car")).namespace == "coach"
    assert load_memory(str(tmp_path / "ns.car"), namespace="other").namespace == "other"


def test_a_source_date_epoch_out_of_range_is_a_one_line_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(FIXTURE, tmp_path / "mem")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "99999999999999999")
    run = CliRunner().invoke(cli, ["build", str(tmp_path / "mem"), "-o", str(tmp_path / "b.car")])
    assert run.exit_code == 2 and "out of range" in run.output
    assert not (tmp_path / "b.car").exists()
