"""Attacks on the threaded C listing (``_statscan.scan(dir_fd, threads)``, issue 37: git's preload-index): the
sizes around its 256-entry chunks and 500-stat threads, thread counts past its cap, odd names, and a folder
changed by other threads while it is listed; no crash, no hang, no descriptor left open."""

from __future__ import annotations

import os
import random
from array import array
import threading
import time
from pathlib import Path

import pytest

from bundlekit.memory import backend as backend_module
from bundlekit.memory.catalog import stat as stat_module

from .test_statscan import _same, _scans

pytestmark = pytest.mark.skipif(backend_module._statscan is None, reason="the C listing is not built here")

_COUNTS = (1, 0, 2, 3, 20, 21, 64, 1000, 2**31, 2**62)


def _open_fds(where: Path | None = None) -> int:
    """How many descriptors this process holds open (on ``where`` or under it when given: other threads of a test
    worker open and close their own meanwhile)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        count += where is None or target.startswith(str(where))
    return count


@pytest.mark.parametrize("entries", [0, 1, 255, 256, 257, 511, 512, 513, 1100])
def test_every_thread_count_lists_a_folder_of_odd_names_alike(tmp_path: Path, entries: int) -> None:
    for i in range(entries):
        (tmp_path / f"{i:06d}\xe9\n.md").write_bytes(b"x" * (i % 5))
    if entries:
        (tmp_path / "dir.md").mkdir()
        os.mkfifo(tmp_path / "fifo.md")
        (tmp_path / os.fsdecode(b"\xff\xfe odd.md")).write_bytes(b"y")
        (tmp_path / ("a" * 252 + ".md")).write_bytes(b"z")  # a name of 255 bytes
    results = _scans(tmp_path, _COUNTS)
    assert all(result == results[0] for result in results)
    assert results[0][2] == (entries + 2 if entries else 0)  # type: ignore[index]
    assert _same(tmp_path) is not None  # the Python listing agrees
    assert _open_fds(tmp_path) == 0


def _mutate(root: Path, stop: threading.Event, seed: int) -> None:
    """Replace memory files by new ones, links, folders and fifos, rename them away and back, add others."""
    rng = random.Random(seed)
    while not stop.is_set():
        path = root / f"m{rng.randrange(2000)}.md"
        step = rng.randrange(6)
        try:
            if step == 5:
                (root / f"n{rng.randrange(10**6)}.md").write_bytes(b"d")
                continue
            path.unlink()
            if step == 1:
                path.symlink_to("m0.md")
                path.unlink()
            elif step == 2:
                path.mkdir()
                path.rmdir()
            elif step == 3:
                os.mkfifo(path)
                path.unlink()
            elif step == 4:
                (root / "away.md").write_bytes(b"r")
                os.rename(root / "away.md", path)
                continue
            path.write_bytes(b"new")
        except OSError:
            continue


def test_a_folder_changed_while_it_is_listed_by_threads_gives_a_whole_listing_or_a_link(tmp_path: Path) -> None:
    for i in range(2000):
        (tmp_path / f"m{i}.md").write_bytes(b"x")
    stop = threading.Event()
    workers = [threading.Thread(target=_mutate, args=(tmp_path, stop, seed)) for seed in (1, 2)]
    for worker in workers:
        worker.start()
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        end = time.monotonic() + 3
        while time.monotonic() < end:
            for threads in (1, 0, 4, 20):
                result = backend_module._statscan.scan(fd, threads)
                assert result is not None
                names, numbers, count, _index, _hidden, link = result
                if link is None:
                    listed = names.split(b"\0") if count else []
                    assert listed == sorted(set(listed)) and len(listed) == count and len(numbers) == 24 * count
    finally:
        stop.set()
        for worker in workers:
            worker.join()
        os.close(fd)
    assert _open_fds(tmp_path) == 0


@pytest.mark.parametrize("args", [(-1,), (0, -1), (10**6,), (0, 2**64)])
def test_a_bad_descriptor_or_thread_count_is_an_error_not_a_crash(args: tuple[int, ...]) -> None:
    before = _open_fds()
    for _ in range(100):  # a descriptor left by each failure would show as 100 more
        with pytest.raises((ValueError, OSError, OverflowError)):
            backend_module._statscan.scan(*args)
    assert _open_fds() < before + 50


@pytest.mark.parametrize("names", [b"\0", b"\0\0", b"a\0", b"\0a", b"a\0\0b", b"\xff\0\xfe"])
@pytest.mark.parametrize("written", [-(2**63), -1, 0, 2**63 - 1, 2**63 + 2 * 10**9, -(2**64)])
def test_racy_rows_of_empty_names_and_extreme_times_are_the_python_walks(names: bytes, written: int) -> None:
    count = names.count(b"\0") + 1
    mtimes = [-(2**63), 2**63 - 1, 0, -1, 2**62][:count] + [5] * max(count - 5, 0)
    numbers = array("q", [n for i, mtime in enumerate(mtimes) for n in (i, mtime, 1)]).tobytes()
    in_c = stat_module.racy_rows(names, numbers, written)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stat_module, "_racy_rows", None)
        assert in_c == stat_module.racy_rows(names, numbers, written)
