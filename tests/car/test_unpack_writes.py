"""How unpack lands its tree: a claim that reads no raw file, writes on a worker thread in walk order,
one flush, the first error wins."""

from __future__ import annotations

import errno
import importlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import bundlekit._fs as fs
from bundlekit.car.extract import unpack_car
from bundlekit.errors import BlockMismatch, BundlekitError, MissingBlock
from bundlekit.ipld.cid import RAW, make_cid
from bundlekit.unixfs import _tree_writer
from bundlekit.unixfs.reader import UnixFSReader
from bundlekit.unixfs.unpack import UnpackOptions, unpack

from .conftest import Blocks

# The module (bundlekit.unixfs re-exports its function under the same name).
unpack_module = importlib.import_module("bundlekit.unixfs.unpack")


def _writers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "bundlekit-unpack-writer"]


def test_a_tree_larger_than_a_batch_is_written_whole(blocks: Blocks, tmp_path: Path) -> None:
    # 700 files (several hand-overs of operations) and one file of many blocks.
    files = {f"d{i % 7}/n{i:03d}.md": f"note {i}\n".encode() for i in range(700)}
    big = bytes(range(256)) * 40
    root = blocks.directory(
        {
            **{d: blocks.directory({n.split("/")[1]: blocks.raw(b) for n, b in files.items() if n.startswith(d + "/")})
               for d in {n.split("/")[0] for n in files}},
            "big.bin": blocks.file(big, chunk=100),
        }
    )
    result = unpack(blocks.get, root, tmp_path / "out")
    assert (result.files, result.directories, result.bytes) == (701, 8, sum(map(len, files.values())) + len(big))
    assert {p: (tmp_path / "out" / p).read_bytes() for p in files} == files
    assert (tmp_path / "out" / "big.bin").read_bytes() == big
    assert _writers() == []


def test_the_tree_is_flushed_once_before_it_is_renamed_into_place(
    blocks: Blocks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "out"
    seen: list[tuple[bool, bytes]] = []
    monkeypatch.setattr(fs, "sync_tree", lambda p, **_opened: seen.append((dest.exists(), (Path(p) / "a.md").read_bytes())))
    unpack(blocks.get, blocks.directory({"a.md": blocks.raw(b"a")}), dest)
    assert seen == [(False, b"a")]


def test_without_fsync_the_tree_is_not_flushed(
    blocks: Blocks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[object] = []
    monkeypatch.setattr(fs, "sync_tree", seen.append)
    monkeypatch.setattr(_tree_writer, "_HEAD_START_EVERY", 1)
    monkeypatch.setattr(unpack_module, "sync_tree", lambda p, head_start=False: seen.append(p))
    root = blocks.directory({"a.md": blocks.raw(b"a")})
    unpack(blocks.get, root, tmp_path / "out", options=UnpackOptions(fsync=False))
    assert seen == []
    assert (tmp_path / "out" / "a.md").read_bytes() == b"a"


def _refuse_to_create(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    real_open = os.open

    def full_disk(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if os.path.basename(path) == name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", full_disk)


def test_a_write_failure_leaves_nothing_behind(blocks: Blocks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = blocks.directory({"a.md": blocks.raw(b"a"), "b.md": blocks.raw(b"b")})
    _refuse_to_create(monkeypatch, "b.md")
    with pytest.raises(BundlekitError, match="cannot create file 'b.md': No space left on device"):
        unpack(blocks.get, root, tmp_path / "out")
    assert os.listdir(tmp_path) == []
    assert _writers() == []


def test_an_earlier_write_failure_is_reported_before_a_later_missing_block(
    blocks: Blocks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if one entry were written after the other: a.md fails first, z.md's missing leaf
    # (the claim reads only its root) is never reached.
    root = blocks.directory({"a.md": blocks.raw(b"a"), "z.md": blocks.file(b"0123456789", chunk=4)})
    del blocks.blocks[make_cid(1, RAW, b"4567")]
    _refuse_to_create(monkeypatch, "a.md")
    with pytest.raises(BundlekitError, match="cannot create file 'a.md'") as caught:
        unpack(blocks.get, root, tmp_path / "out")
    assert not isinstance(caught.value, MissingBlock)
    assert os.listdir(tmp_path) == []


def test_an_interrupt_stops_the_writer_and_leaves_nothing(blocks: Blocks, tmp_path: Path) -> None:
    root = blocks.directory({f"n{i:03d}.md": blocks.raw(f"note {i}".encode()) for i in range(300)})
    reads = 0

    def interrupted(cid: bytes) -> bytes:
        nonlocal reads
        reads += 1
        if reads == 600:  # the claim reads each file once, the walk again: well into the walk
            raise KeyboardInterrupt
        return blocks.get(cid)

    with pytest.raises(KeyboardInterrupt):
        unpack(interrupted, root, tmp_path / "out")
    assert os.listdir(tmp_path) == []
    assert _writers() == []


def test_a_durable_tree_gets_its_flush_started_while_it_is_written(
    blocks: Blocks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    early: list[bool] = []
    monkeypatch.setattr(_tree_writer, "_HEAD_START_EVERY", 64)
    monkeypatch.setattr(unpack_module, "sync_tree", lambda p, head_start=False: early.append(head_start))
    root = blocks.directory({"big.bin": blocks.file(bytes(1000), chunk=100)})
    unpack(blocks.get, root, tmp_path / "out")
    assert early and all(early)  # background starts only: the final flush is atomic_directory's
    assert (tmp_path / "out" / "big.bin").read_bytes() == bytes(1000)


def test_the_claim_takes_a_raw_files_size_from_its_stored_length_without_reading_it(blocks: Blocks) -> None:
    small = blocks.raw(b"twelve bytes")
    chunked = blocks.file(b"0123456789", chunk=4)  # a dag-pb root: read for its declared size
    root = blocks.directory({"a.md": small, "b.bin": chunked})
    read: list[bytes] = []

    def get(cid: bytes) -> bytes:
        read.append(cid)
        return blocks.get(cid)

    stored = {cid: len(data) for cid, data in blocks.blocks.items()}
    claim = UnixFSReader(get, raw_size=stored.get).claim(root)
    assert (claim.entries, claim.bytes) == (3, 22)
    assert small not in read and chunked in read


def test_a_forged_raw_file_in_a_car_is_still_refused_and_leaves_nothing(
    blocks: Blocks, write_car: Callable[[bytes], Path]
) -> None:
    leaf = blocks.raw(b"honest")
    root = blocks.directory({"a.md": blocks.raw(b"a"), "f": leaf})
    blocks.blocks[leaf] = b"forged"  # same length: only the hash tells
    car = write_car(blocks.car([root]))
    with pytest.raises(BlockMismatch):
        unpack_car(car, car.parent / "out")
    assert [p.name for p in car.parent.iterdir()] == [car.name]


def test_a_writer_failing_while_the_walker_waits_on_a_full_queue_raises_instead_of_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker fails only once the queue is full (the walker then blocks in put): it must go on
    # draining so the walker wakes up and raises its error at the next hand-over.
    writers: list[_tree_writer.TreeWriter] = []

    def full_disk(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        while not writers[0]._queue.full():
            threading.Event().wait(0.001)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    caught: list[BaseException] = []

    def walk() -> None:
        try:
            with _tree_writer.TreeWriter() as writer:
                writers.append(writer)
                writer.open_file(os.path.join(tmp_path, "a.md"), "a.md")
                for _ in range(4 * _tree_writer._PENDING):
                    writer.write(bytes(_tree_writer._BATCH_BYTES))  # one hand-over each
        except BaseException as exc:  # noqa: BLE001  (the test inspects it)
            caught.append(exc)

    monkeypatch.setattr(_tree_writer.os, "open", full_disk)
    walker = threading.Thread(target=walk, daemon=True)
    walker.start()
    walker.join(timeout=60)  # a guard against hanging the suite, not a timing assertion
    assert not walker.is_alive()
    assert len(caught) == 1 and isinstance(caught[0], BundlekitError)
    assert "cannot create file 'a.md': No space left on device" in str(caught[0])
    assert _writers() == []
    assert os.listdir(tmp_path) == []
