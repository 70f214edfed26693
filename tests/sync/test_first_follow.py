"""A first follow into an empty tree is a load, not a merge (issue 37, ``bundle/firstload.py``): the bundle
streamed and verified as ``bundlekit load`` streams it, each memory parsed once to validate it, the files moved
into the tree, the root recorded; every check a merge makes of what it writes still made before anything moves."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import bundlekit.bundle.load
from bundlekit.blockstore import BlockStore
from bundlekit.bundle.lineage import heads
from bundlekit.bundle.manifest import canonical_json, make_manifest
from bundlekit.car.writer import CarFileWriter
from bundlekit.errors import MemoryStoreError, SecretDetectedError
from bundlekit.ipld.cid import cid_from_text
from bundlekit.memory import Memory
from bundlekit.names.publish import publish
from bundlekit.syncer import sync
from bundlekit.unixfs.importer import import_tree
from bundlekit.unixfs.profiles import get_profile

from .conftest import HookedPinner
from .test_tree_difference import NAME, SIGNER, _edit, _text, _tree, _writer, parses  # noqa: F401 - a fixture


def _files(tree: Path) -> dict[str, bytes]:
    """The tree's memory and day files by path (``MEMORY.md`` and hidden files aside)."""
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*"))
            if p.is_file() and p.name != "MEMORY.md"
            and not any(part.startswith(".") for part in p.relative_to(tree).parts)}


def _staged(tree: Path) -> list[str]:
    return [p.name for p in (tree / ".bundlekit").iterdir() if p.name.startswith(".incoming.")]


def test_a_first_follow_into_an_empty_tree_loads_the_bundle_byte_for_byte_and_records_its_root(
        tmp_path: Path, parses: list[str]) -> None:
    writer = _tree(tmp_path / "w", 30)
    root = _writer(writer)
    follower = tmp_path / "f"
    Memory(follower).init()
    parses.clear()
    report = sync(follower, name=NAME)
    assert report.loaded is not None and report.merge is None
    assert (report.loaded.root, report.loaded.memories, report.loaded.days) == (root, 30, 1)
    assert _files(follower) == _files(writer) and heads(follower) == [root]
    assert sorted(parses) == [f"note_{i:06d}" for i in range(30)]  # each memory parsed once, to validate it
    assert not _staged(follower)
    assert {r.key for r in Memory(follower).list()} == {f"note_{i:06d}" for i in range(30)}  # the index follows


def test_the_next_follow_after_a_first_load_merges_by_difference_and_leaves_converged_unjudged(
        tmp_path: Path) -> None:
    writer = _tree(tmp_path / "w", 30)
    _writer(writer)
    follower = tmp_path / "f"
    Memory(follower).init()
    sync(follower, name=NAME)
    _edit(writer, [4, 7])
    root = _writer(writer)
    report = sync(follower, name=NAME)
    assert report.loaded is None and report.merge is not None
    assert report.merge.report.counts() == {"updated": 2} and report.merge.converged is None
    assert _files(follower) == _files(writer) and heads(follower) == [root]


def test_a_tree_holding_a_memory_is_merged_not_loaded(tmp_path: Path) -> None:
    writer = _tree(tmp_path / "w", 3)
    _writer(writer)
    follower = tmp_path / "f"
    Memory(follower).init()
    (follower / "mine.md").write_text(_text("mine", "A memory of mine."), "utf-8")
    report = sync(follower, name=NAME)
    assert report.loaded is None and report.merge is not None
    assert (follower / "mine.md").exists() and (follower / "note_000002.md").exists()


def test_a_memory_written_while_the_first_follow_loads_is_merged_never_overwritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = _tree(tmp_path / "w", 3)
    _writer(writer)
    follower = tmp_path / "f"
    Memory(follower).init()
    load = bundlekit.bundle.load.load_bundle
    mine = _text("note_000001", "Written by the agent meanwhile.", updated="2026-04-16T12:00:00Z", revision=5)

    def loading(*args: Any, **kwargs: Any) -> Any:
        result = load(*args, **kwargs)
        (follower / "note_000001.md").write_text(mine, "utf-8")  # the agent wrote between the check and the move
        return result

    monkeypatch.setattr(bundlekit.bundle.load, "load_bundle", loading)
    report = sync(follower, name=NAME)
    assert report.loaded is None and report.merge is not None  # the tree was no longer empty: merged instead
    assert (follower / "note_000001.md").read_text("utf-8") == mine and (follower / "note_000002.md").exists()
    assert not _staged(follower)


def _publish_files(tmp_path: Path, files: dict[str, bytes]) -> str:
    """A hand-made ``bundlekit/2`` bundle of ``files`` (bundle paths) imported into the store and published."""
    prof = get_profile()
    manifest = make_manifest(namespace="agent", created=datetime(2026, 4, 15, tzinfo=UTC), profile=prof.name,
                             files={p: (b"", len(d)) for p, d in files.items()}, timeline=[], encryption=None,
                             parents=[], version=2)
    car = tmp_path / "hand.car"
    with CarFileWriter(car) as out:
        root = import_tree([("manifest.json", canonical_json(manifest)), *sorted(files.items())], out, prof).root
        out.finish(root)
    with open(car, "rb") as fh:
        BlockStore().import_car(fh, pin=True)
    publish(SIGNER, root)
    return str(root)


def test_a_first_follow_of_a_bundle_holding_a_credential_is_refused_and_moves_nothing(tmp_path: Path) -> None:
    """The guard a merge runs on every file it writes runs on every file a first follow would move."""
    leak = _text("leak", "the key is AKIA" + "IOSFODNN7EXAMPLE")
    _publish_files(tmp_path, {"memory/MEMORY.md": b"# Memory\n", "memory/leak.md": leak.encode(),
                              "memory/fine.md": _text("fine", "Nothing secret.").encode()})
    follower = tmp_path / "f"
    Memory(follower).init()
    with pytest.raises(SecretDetectedError):
        sync(follower, name=NAME)
    assert _files(follower) == {} and heads(follower) == [] and not _staged(follower)


def test_a_first_follow_makes_the_tree_durable_without_an_fsync_per_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One flush of the file system for the staged tree and per batch of kept blocks, not 10,000 fsyncs."""
    counts = []
    for n in (20, 120):
        writer = _tree(tmp_path / f"w{n}", n)
        monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / f"home{n}"))
        _writer(writer)
        follower = tmp_path / f"f{n}"
        Memory(follower).init()
        calls: list[int] = []
        real = os.fsync

        def counted(fd: int, calls: list[int] = calls) -> None:
            calls.append(fd)
            real(fd)

        monkeypatch.setattr(os, "fsync", counted)
        assert sync(follower, name=NAME).loaded is not None
        monkeypatch.setattr(os, "fsync", real)
        counts.append(len(calls))
    assert counts[1] <= counts[0] + 2, counts


def test_the_root_a_first_follow_records_is_the_names(tmp_path: Path) -> None:
    writer = _tree(tmp_path / "w", 2)
    root = _writer(writer)
    follower = tmp_path / "f"
    follower.mkdir()  # an empty directory, not even initialised
    report = sync(follower, name=NAME)
    assert report.loaded is not None and report.remote == root and cid_from_text(heads(follower)[0])


def test_a_first_follow_never_writes_through_a_timeline_link_planted_in_the_tree(tmp_path: Path) -> None:
    """An empty ``timeline`` link to a folder elsewhere: the day files would have been renamed into that folder."""
    writer = _tree(tmp_path / "w", 2)
    _writer(writer)
    follower, elsewhere = tmp_path / "f", tmp_path / "elsewhere"
    follower.mkdir()
    elsewhere.mkdir()
    (follower / "timeline").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(MemoryStoreError, match="symbolic link"):
        sync(follower, name=NAME)
    assert list(elsewhere.iterdir()) == [] and _files(follower) == {} and heads(follower) == []


def test_a_device_bound_memory_of_a_bundle_is_not_loaded(tmp_path: Path) -> None:
    """A merge never lets a device-bound memory cross machines; a first follow keeps it out the same way."""
    bound = _text("here", "Only on that machine.").replace(
        "revision: 1\n", "revision: 1\nx-magicfrog-local-only: true\n")
    assert "x-magicfrog-local-only: true" in bound
    _publish_files(tmp_path, {"memory/MEMORY.md": b"# Memory\n", "memory/here.md": bound.encode(),
                              "memory/fine.md": _text("fine", "Crosses.").encode()})
    follower = tmp_path / "f"
    Memory(follower).init()
    report = sync(follower, name=NAME)
    assert report.loaded is not None and report.loaded.memories == 1
    assert "device-bound" in report.loaded.warnings[0] and set(_files(follower)) == {"fine.md"}


def test_a_writer_with_an_empty_tree_loads_the_name_publishes_nothing_then_publishes_its_edit(tmp_path: Path) -> None:
    root = _writer(_tree(tmp_path / "w", 5))
    mine = tmp_path / "e"
    Memory(mine).init()
    first = sync(mine, name_key=SIGNER, pinners=[HookedPinner()])
    assert first.loaded is not None and first.up_to_date and first.published is None and first.root == root
    _edit(mine, [1])
    again = sync(mine, name_key=SIGNER, pinners=[HookedPinner()])
    assert again.published is not None and again.published.sequence == 1


def test_the_staging_tree_a_killed_first_follow_left_is_swept_by_the_next(tmp_path: Path) -> None:
    _writer(_tree(tmp_path / "w", 2))
    follower = tmp_path / "f"
    Memory(follower).init()
    left = follower / ".bundlekit" / ".incoming.999999999.0a1b2c3d.tmp"  # a pid no process has
    left.mkdir()
    (left / "note_000001.md").write_text("half a follow", "utf-8")
    old = 1_000_000_000 * 1_700_000_000
    os.utime(left, ns=(old, old))
    assert sync(follower, name=NAME).loaded is not None
    assert not left.exists() and not _staged(follower)
