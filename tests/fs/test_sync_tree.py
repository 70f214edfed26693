"""A written tree made durable in one flush: syncfs(2) of its file system, os.sync, or an fsync each."""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from pathlib import Path

import pytest

import bundlekit._fs as fs
from bundlekit._fs import atomic_directory, sync_tree
from bundlekit.errors import LoadError


def _fill(tmp: Path) -> None:
    (tmp / "sub").mkdir()
    (tmp / "a.md").write_bytes(b"a")
    (tmp / "sub" / "b.md").write_bytes(b"b")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs(2) is Linux's")
def test_linux_flushes_only_the_trees_file_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def every_file_system() -> None:
        raise AssertionError("os.sync() flushes every mounted file system")

    monkeypatch.setattr(fs, "_SYNCFS", [])  # looked up afresh: the real libc syncfs
    monkeypatch.setattr(fs.os, "sync", every_file_system)
    _fill(tmp_path)
    sync_tree(tmp_path)
    assert fs._SYNCFS[0] is not None


def test_syncfs_is_given_a_descriptor_on_the_trees_file_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    devices: list[int] = []

    def syncfs(fd: int) -> int:
        devices.append(os.fstat(fd).st_dev)
        return 0

    monkeypatch.setattr(fs, "_SYNCFS", [syncfs])
    sync_tree(tmp_path)
    assert devices == [os.stat(tmp_path).st_dev]


def test_a_failed_syncfs_is_an_os_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def syncfs(fd: int) -> int:
        ctypes.set_errno(errno.EIO)
        return -1

    monkeypatch.setattr(fs, "_SYNCFS", [syncfs])
    with pytest.raises(OSError, match="Input/output error") as caught:
        sync_tree(tmp_path)
    assert caught.value.errno == errno.EIO


def test_without_syncfs_one_os_sync_flushes_the_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[None] = []
    monkeypatch.setattr(fs, "_SYNCFS", [None])
    monkeypatch.setattr(fs.os, "sync", lambda: calls.append(None), raising=False)
    sync_tree(tmp_path)
    assert calls == [None]


def test_where_sync_may_return_before_the_writes_every_file_is_fsynced_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """macOS and the BSDs: ``sync(2)`` only schedules the writes (POSIX sync(3p): "not necessarily complete upon
    return"), so a tree, or a block store's batch, renamed after it could name bytes never written."""
    calls: list[None] = []
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(fs, "_SYNCFS", [None])
    monkeypatch.setattr(fs, "_SYNC_WAITS", False)
    monkeypatch.setattr(fs.os, "sync", lambda: calls.append(None), raising=False)
    monkeypatch.setattr(fs.os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    _fill(tmp_path)
    sync_tree(tmp_path)
    assert calls == [] and len(fsyncs) == 4
    batch = [fs.AtomicFile(tmp_path / f"block{i}", error=LoadError) for i in range(3)]
    assert not fs.sync_files(batch, tmp_path) and calls == []  # the caller fsyncs each
    for block in batch:
        block.discard()


def test_without_syncfs_or_os_sync_every_file_and_directory_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self/fd") else str(fd))
        real_fsync(fd)

    monkeypatch.setattr(fs, "_SYNCFS", [None])
    monkeypatch.delattr(fs.os, "sync", raising=False)
    monkeypatch.setattr(fs.os, "fsync", fsync)
    _fill(tmp_path)
    sync_tree(tmp_path)
    assert len(synced) == 4  # a.md, sub/b.md, sub, the top directory
    if os.path.exists("/proc/self/fd"):
        assert sorted(synced) == sorted(str(p) for p in (tmp_path, tmp_path / "a.md", tmp_path / "sub",
                                                         tmp_path / "sub" / "b.md"))


def test_a_synced_directory_is_flushed_before_it_is_renamed_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[bool, bool]] = []
    dest = tmp_path / "tree"
    monkeypatch.setattr(fs, "sync_tree", lambda p, **_: seen.append((dest.exists(), (Path(p) / "a.md").exists())))
    with atomic_directory(dest, error=LoadError, sync=True) as tmp:
        _fill(tmp)
    assert seen == [(False, True)]
    assert (dest / "sub" / "b.md").read_bytes() == b"b"


def watch_flushes(monkeypatch: pytest.MonkeyPatch, created: str = "created") -> list[str]:
    """Every ``os.open`` (``created`` for a new file, else ``open``) and every ``syncfs`` (``syncfs N``: through
    the descriptor the N-th event opened), in order; the real flush replaced by that record."""
    events: list[str] = []
    real_open = os.open
    opened: dict[int, int] = {}

    def watching_open(path: object, flags: int, *args: object, **kwargs: object) -> int:
        fd = real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]
        opened[fd] = len(events)
        events.append(created if flags & os.O_CREAT else "open")
        return fd

    def syncfs(fd: int) -> int:
        events.append(f"syncfs {opened[fd]}")
        return 0

    monkeypatch.setattr(fs, "_SYNCFS", [syncfs])
    monkeypatch.setattr(os, "open", watching_open)
    return events


def flushed_before(events: list[str], first: str) -> bool:
    """One flush, through a descriptor opened before the event ``first``."""
    flushes = [e for e in events if e.startswith("syncfs")]
    return len(flushes) == 1 and int(flushes[0].split()[1]) < events.index(first)


def test_a_synced_directory_is_flushed_through_a_descriptor_opened_before_its_files_were_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """syncfs(2) reports the writeback errors since its descriptor was opened (Linux 5.8+, ``f_sb_err``): one
    opened at the flush would miss an error met writing a file back before it, and the tree would be renamed
    into place onto lost bytes."""
    events = watch_flushes(monkeypatch)
    with atomic_directory(tmp_path / "tree", error=LoadError, sync=True) as tmp:
        events.append("files written")
        _fill(tmp)
    assert flushed_before(events, "files written"), events


def test_an_unsynced_directory_is_not_flushed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []
    monkeypatch.setattr(fs, "sync_tree", seen.append)
    with atomic_directory(tmp_path / "tree", error=LoadError) as tmp:
        _fill(tmp)
    assert seen == []


def test_a_failed_flush_leaves_nothing_and_names_the_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def syncfs(fd: int) -> int:
        ctypes.set_errno(errno.EIO)
        return -1

    monkeypatch.setattr(fs, "_SYNCFS", [syncfs])
    dest = tmp_path / "tree"
    with (
        pytest.raises(LoadError, match=f"cannot write {dest}: Input/output error"),
        atomic_directory(dest, error=LoadError, sync=True) as tmp,
    ):
        _fill(tmp)
    assert os.listdir(tmp_path) == []


def test_a_head_start_is_skipped_where_the_flush_is_an_fsync_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    monkeypatch.setattr(fs, "_SYNCFS", [None])
    monkeypatch.delattr(fs.os, "sync", raising=False)
    monkeypatch.setattr(fs.os, "fsync", synced.append)
    _fill(tmp_path)
    sync_tree(tmp_path, head_start=True)
    assert synced == []


@pytest.mark.parametrize("refused", [errno.ENOSYS, errno.EPERM])
def test_a_sandbox_refusing_syncfs_falls_back_to_one_os_sync(
    refused: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # syncfs(2) itself never fails with ENOSYS or EPERM: a seccomp filter (Docker's default answer is
    # EPERM) or an emulating kernel refused the call, and the old os.sync() must still make the tree durable.
    calls: list[str] = []

    def syncfs(fd: int) -> int:
        calls.append("syncfs")
        ctypes.set_errno(refused)
        return -1

    monkeypatch.setattr(fs, "_SYNCFS", [syncfs])
    monkeypatch.setattr(fs.os, "sync", lambda: calls.append("sync"))
    sync_tree(tmp_path)
    sync_tree(tmp_path)
    assert calls == ["syncfs", "sync", "sync"]
