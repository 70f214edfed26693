"""A first follow keeps the blocks it fetched in one pack of the store (specs/gateway.md 2.2a, specs/sync.md
section 7), not a file each; the next follow reads them from there and fetches only what changed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

import bundlekit.bundle.sources
from bundlekit.blockstore import BlockStore
from bundlekit.bundle.ahead import FetchAhead
from bundlekit.bundle.sources import Gateways
from bundlekit.gateway.server import serve_in_thread
from bundlekit.memory import Memory
from bundlekit.syncer import sync

from .test_tree_difference import NAME, _edit, _tree, _writer


def _block_files(store: BlockStore) -> list[Path]:
    return [p for p in store.blocks_dir.rglob("*") if p.is_file()]


def test_a_first_follow_keeps_its_blocks_in_one_pack_and_the_next_follow_reads_them_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundlekit.bundle.sources, "_KEEP_BATCH", 8)  # a batch fills: the load goes to a pack
    writer = _tree(tmp_path / "w", 30)
    _writer(writer)
    follower, store = tmp_path / "f", BlockStore(tmp_path / "f-store", fsync=False)
    Memory(follower).init()
    with serve_in_thread(store=BlockStore()) as server:
        first = sync(follower, name=NAME, source=Gateways([server.url], store=store))
        assert first.loaded is not None and first.loaded.memories == 30
        packs = sorted(p.suffix for p in (store.root / "packs").iterdir())
        assert packs == [".idx", ".pack"] and _block_files(store) == []
        _edit(writer, [3])
        root = _writer(writer)
        again = sync(follower, name=NAME, source=Gateways([server.url], store=store))
    assert again.merge is not None and again.merge.report.counts() == {"updated": 1} and again.root is None
    assert again.remote == root
    assert 0 < len(_block_files(store)) < 10  # only the changed file and the directories above it
    assert store.verify().ok


def test_a_small_load_keeps_its_blocks_as_files(tmp_path: Path) -> None:
    writer = _tree(tmp_path / "w", 3)
    _writer(writer)
    follower, store = tmp_path / "f", BlockStore(tmp_path / "f-store", fsync=False)
    Memory(follower).init()
    with serve_in_thread(store=BlockStore()) as server:
        assert sync(follower, name=NAME, source=Gateways([server.url], store=store)).loaded is not None
    assert _block_files(store) and not (store.root / "packs").exists()


def test_a_follow_by_difference_fetches_the_changed_files_together_within_the_manifests_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[int, int]] = []
    prefetch = FetchAhead.prefetch

    def noted(self: FetchAhead, cids: Sequence[bytes], max_bytes: int, concurrency: int) -> None:
        asked.append((len(cids), max_bytes))
        prefetch(self, cids, max_bytes, concurrency)

    monkeypatch.setattr(FetchAhead, "prefetch", noted)
    writer = _tree(tmp_path / "w", 12)
    _writer(writer)
    follower, store = tmp_path / "f", BlockStore(tmp_path / "f-store", fsync=False)
    Memory(follower).init()
    with serve_in_thread(store=BlockStore()) as server:
        sync(follower, name=NAME, source=Gateways([server.url], store=store))
        _edit(writer, [2, 5, 9])
        _writer(writer)
        asked.clear()
        again = sync(follower, name=NAME, source=Gateways([server.url], store=store))
    assert again.merge is not None and again.merge.report.counts() == {"updated": 3}
    assert [count for count, _bound in asked] == [3] and 0 < asked[0][1] < 1_000_000
