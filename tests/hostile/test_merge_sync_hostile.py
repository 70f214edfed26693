"""Issue 28 attacked: hostile trees and bundles meeting `merge` and `sync`, and stops in the middle of a sync loop.

Each test names the payload. Nothing a merge refuses may reach the tree; a planted last-root file (a link
to a device, a FIFO, junk) costs the merge its base, never a hang or an error; a sync loop stopped by
SIGTERM or SIGHUP exits as Ctrl-C does and leaves no temporary CAR behind. Children are killed after
``TIMEOUT`` seconds at the latest: a stop that hangs fails the test, no time is asserted.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

import bundlekit.bundle.merge as bundle_merge
from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import build_bundle, file_cid
from bundlekit.bundle.manifest import MAX_PARENTS, canonical_json, make_manifest
from bundlekit.car.extract import unpack_car
from bundlekit.car.writer import CarFileWriter
from bundlekit.bundle.lineage import LAST_ROOT_NAME, LINEAGE_NAME, heads, read_last
from bundlekit.bundle.merge import MergeOptions, find_base, merge_bundle
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import (
    FrontmatterError,
    InvalidKeyError,
    LoadError,
    MemoryStoreError,
    SecretDetectedError,
    UsageError,
)
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory import Memory
from bundlekit.names.record import name_from_key
from bundlekit.syncer import sync
from bundlekit.unixfs.importer import import_tree
from bundlekit.unixfs.profiles import get_profile
from pinners.local import LocalPinner

from .conftest import TIMEOUT, child_env

WHEN = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
PASSWORD = "s3cr3t-passw0rd-of-alice"


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


def _raw_bundle(files: dict[str, bytes], tmp_path: Path) -> Path:
    """A plaintext bundle of ``files`` (paths inside the tree) exactly as given (no tree, no guard made them)."""
    profile = get_profile()
    stored = [(f"memory/{path}", data) for path, data in sorted({"MEMORY.md": b"# Memory\n", **files}.items())]
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
    return _raw_bundle({name: text.encode("utf-8")}, tmp_path)


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


@pytest.mark.parametrize("updated", ["9999-12-31T23:59:59-10:00", "0001-01-01T00:00:00+05:00"])
def test_a_bundle_dated_past_the_calendar_in_utc_is_refused_as_bad_frontmatter(tmp_path: Path, updated: str) -> None:
    tree = _tree(tmp_path / "a", project_a="A.")
    text = _memory_text("project_x", "edge of time").replace("updated: 2026-04-14T12:00:00Z", f"updated: {updated}")
    car = _raw_bundle_of(tmp_path, "project_x.md", text)
    before = _files(tree)
    with pytest.raises(FrontmatterError, match="'updated'"):
        merge_bundle(str(car), tree)
    assert _files(tree) == before


@pytest.mark.parametrize("line", [
    b'{"ts":"0001-01-01T00:00:00+05:00","type":"note"}\n',  # before year 1 in UTC
    b'{"ts":"2026-04-14T00:00:00Z","type":"note","text":"\\ud800"}\n',  # a lone surrogate: no output encodes it
    b'{"ts":"2026-04-14T00:00:00Z","type":"forgot","key":"\\udfff"}\n',
])
def test_a_bundle_timeline_line_no_output_could_show_is_refused_before_writing(tmp_path: Path, line: bytes) -> None:
    tree = _tree(tmp_path / "a", project_a="A.")
    car = _raw_bundle({"timeline/2026-04-14.jsonl": line}, tmp_path)
    days = sorted((tree / "timeline").iterdir())
    with pytest.raises(MemoryStoreError, match="line 1"):
        merge_bundle(str(car), tree)
    assert sorted((tree / "timeline").iterdir()) == days
    assert Memory(tree).context_block()  # the tree still reads


def test_a_conflict_sibling_from_a_manifest_url_records_no_credential(tmp_path: Path) -> None:
    theirs = _tree(tmp_path / "theirs", project_a="Theirs.")
    car = tmp_path / "theirs.car"
    build_bundle(theirs, car)
    unpack_car(car, tmp_path / "www")
    ours = _tree(tmp_path / "ours", project_a="Ours.")
    text = (ours / "project_a.md").read_text("utf-8")  # ours later: theirs loses and is kept as the sibling
    (ours / "project_a.md").write_text(text.replace("updated: 2026-04-14T12:00:00Z", "updated: 2026-05-01T00:00:00Z"))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "www"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://alice:{PASSWORD}@127.0.0.1:{server.server_address[1]}/manifest.json?token={PASSWORD}"
        result = merge_bundle(url, ours)
    finally:
        server.shutdown()
        server.server_close()
    sibling = result.report.conflicts[0].sibling
    assert sibling is not None
    written = (ours / f"{sibling}.md").read_text("utf-8")
    [entry] = [e.detail for e in result.report.entries if e.action == "sibling"]
    assert "from http://127.0.0.1:" in entry and PASSWORD not in entry and PASSWORD not in written


def _stored_bundle(store: BlockStore, parents: list[str], pad: int) -> str:
    """A bundle of an empty tree in ``store`` whose manifest names ``parents`` and carries ``pad`` bytes more."""
    profile = get_profile()
    index = b"# Memory\n"
    manifest = make_manifest(namespace="agent", created=WHEN, profile=profile.name,
                             files={"memory/MEMORY.md": (file_cid(index, profile), len(index))},
                             timeline=[], encryption=None)
    if parents:
        manifest["parents"] = parents
    manifest["x-pad"] = os.urandom(pad // 2).hex()  # random: no block is shared with another manifest
    result = import_tree([("manifest.json", canonical_json(manifest)), ("memory/MEMORY.md", index)], store, profile)
    return cid_to_str(result.root)


def test_the_ancestor_walk_stops_at_its_byte_bound_on_a_lineage_of_heavy_manifests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = BlockStore()
    base = _stored_bundle(store, [], 0)
    heavy = _stored_bundle(store, [_stored_bundle(store, [base], 1 << 20)], 1 << 20)
    tip = _stored_bundle(store, [heavy], 0)
    tree = _tree(tmp_path / "a", project_a="A.")
    (tree / LAST_ROOT_NAME).write_text(base + "\n", "ascii")
    assert merge_bundle(f"ipfs://{tip}", tree, options=MergeOptions(dry_run=True)).base == base  # within the bound: found
    monkeypatch.setattr(bundle_merge, "MAX_ANCESTRY_BYTES", 1 << 20)
    result = merge_bundle(f"ipfs://{tip}", tree, options=MergeOptions(dry_run=True))
    assert result.base is None and any("bytes of manifests" in note for note in result.notes)


def test_the_ancestor_walk_reads_no_manifest_once_its_time_is_spent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = BlockStore()
    base = _stored_bundle(store, [], 0)
    tip = _stored_bundle(store, [_stored_bundle(store, [base], 0)], 0)
    tree = _tree(tmp_path / "a", project_a="A.")
    (tree / LAST_ROOT_NAME).write_text(base + "\n", "ascii")
    monkeypatch.setattr(bundle_merge, "MAX_ANCESTRY_SECONDS", 0.0)
    result = merge_bundle(f"ipfs://{tip}", tree, options=MergeOptions(dry_run=True))
    assert result.base is None and any("seconds" in note for note in result.notes)
