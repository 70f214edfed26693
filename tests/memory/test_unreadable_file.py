"""A memory file the OS refuses to read (EACCES, EIO) is one file left out, never the tree refused.

The refusal is injected at the lowest read: the open (``backend.open_nofollow``), the read of the open file
(``os.fdopen``'s handle), and the C reader (``_statscan.read_files``, which stops at the first file it cannot
read): every reader returns :class:`MemoryFileUnreadable` in the file's place and reads the rest, and the tree
lists it as broken, leaves it out of a build with a warning naming it, and ``strict`` refuses. A link or a
directory under a memory's name stays a refusal of the tree. The real refusal (a file mode the process
cannot pass, the C path included) is tests/journeys/test_unreadable_file.py.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.errors import (
    FrontmatterError,
    MemoryFileTooLarge,
    MemoryFileUnreadable,
    MemoryFileUnusable,
    MemoryStoreError,
)
from bundlekit.memory import Memory
from bundlekit.memory import backend as backend_module
from bundlekit.memory.backend import DirectoryBackend
from bundlekit.memory.filesize import shown_whole, unreadable
from tests.memory.test_size_bound import MEMORY, tree  # noqa: F401  (the nine memories' tree, a fixture)

BAD = "user_3.md"

needs_c = pytest.mark.skipif(backend_module._statscan is None, reason="the C reader is not built here")


def _refuse_open(monkeypatch: pytest.MonkeyPatch, code: int, name: str = BAD) -> None:
    """Make the Python open of ``name`` fail with ``code`` (and the C reader, if built, fail at it first)."""
    real_open = backend_module.open_nofollow

    def refusing(path: Path, flags: int, mode: int = 0o777) -> int:
        if Path(path).name == name:
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, flags, mode)

    monkeypatch.setattr(backend_module, "open_nofollow", refusing)
    if backend_module._statscan is not None:
        monkeypatch.setattr(backend_module, "_statscan", _CReaderFailingAt(backend_module._statscan, name, code))


class _CReaderFailingAt:
    """``_statscan`` whose ``read_files`` raises as the C reader does at a file it cannot read: an OSError
    naming that one file, nothing returned for the others."""

    def __init__(self, real: Any, name: str, code: int) -> None:
        self._real, self._name, self._code = real, name, code
        self.calls = 0

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._real, attr)

    def scan(self, dir_fd: int, threads: int = 0, limit: int = -1) -> object:
        """The listing without its read ahead: the real one leaves a file it cannot read unread (None), for
        ``read_many`` to read."""
        return self._real.scan(dir_fd, threads)

    def read_files(self, dir_fd: int, names: bytes, limit: int) -> list[object]:
        self.calls += 1
        if self._name.encode() in names.split(b"\0"):
            raise OSError(self._code, os.strerror(self._code), self._name)
        result: list[object] = self._real.read_files(dir_fd, names, limit)
        return result


def _failing_read(monkeypatch: pytest.MonkeyPatch, path: Path, code: int) -> None:
    """Make the read of ``path``'s open file (not its open) fail with ``code``."""
    inode = path.stat().st_ino
    real_fdopen = os.fdopen

    class Failing:
        def __enter__(self) -> Failing:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def read(self, size: int = -1) -> bytes:
            raise OSError(code, os.strerror(code))

    def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
        if os.fstat(fd).st_ino == inode:
            return Failing()
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr(backend_module.os, "fdopen", fdopen)


def _by_name(tree: Path, names: list[str]) -> dict[str, object]:
    return dict(zip(names, DirectoryBackend(tree).read_many(names), strict=True))


@pytest.mark.parametrize("code", [errno.EACCES, errno.EIO])
@pytest.mark.parametrize("c_reader", [pytest.param(True, marks=needs_c), False])
def test_read_many_returns_the_refused_file_in_its_place_and_reads_the_rest(
        tree: Path, monkeypatch: pytest.MonkeyPatch, code: int, c_reader: bool) -> None:
    if not c_reader:
        monkeypatch.setattr(backend_module, "_statscan", None)
    _refuse_open(monkeypatch, code)
    names = sorted(path.name for path in tree.iterdir())
    found = _by_name(tree, names)
    bad = found.pop(BAD)
    assert isinstance(bad, MemoryFileUnreadable) and isinstance(bad, MemoryFileUnusable)
    assert str(bad) == str(unreadable(str(tree / BAD), os.strerror(code)))
    assert all(isinstance(data, bytes) and data.startswith(b"---") for data in found.values())
    if c_reader:
        assert backend_module._statscan.calls == 1  # type: ignore[union-attr]  # the C reader was asked first


@needs_c
def test_the_real_c_reader_is_still_used_when_every_file_reads(tree: Path) -> None:
    names = sorted(path.name for path in tree.iterdir())
    assert all(isinstance(data, bytes) for data in _by_name(tree, names).values())


def test_an_io_error_during_the_read_is_the_files_alone(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend_module, "_statscan", None)
    _failing_read(monkeypatch, tree / BAD, errno.EIO)
    found = _by_name(tree, sorted(path.name for path in tree.iterdir()))
    assert isinstance(found.pop(BAD), MemoryFileUnreadable)
    assert all(isinstance(data, bytes) for data in found.values())
    with pytest.raises(MemoryFileUnreadable, match=rf"cannot read .*{BAD}: "):
        DirectoryBackend(tree).read(BAD)


def test_a_link_or_a_directory_under_a_memorys_name_stays_a_refusal_of_the_tree(tree: Path) -> None:
    (tree / "user_link.md").symlink_to(tree / "user_0.md")
    with pytest.raises(MemoryStoreError, match="symbolic link") as raised:
        DirectoryBackend(tree).read("user_link.md")
    assert not isinstance(raised.value, MemoryFileUnusable)
    (tree / "user_link.md").unlink()
    (tree / "user_dir.md").mkdir()
    for names in (["user_dir.md"], sorted(path.name for path in tree.iterdir())):  # Python, then C
        with pytest.raises(MemoryStoreError, match="is a directory") as raised:
            DirectoryBackend(tree).read_many(names)
        assert not isinstance(raised.value, MemoryFileUnusable)


@pytest.mark.parametrize("c_reader", [pytest.param(True, marks=needs_c), False])
def test_the_tree_lists_it_as_broken_and_leaves_it_out_of_every_read(
        tree: Path, monkeypatch: pytest.MonkeyPatch, c_reader: bool) -> None:
    if not c_reader:
        monkeypatch.setattr(backend_module, "_statscan", None)
    _refuse_open(monkeypatch, errno.EACCES)
    mem = Memory(tree)
    problem = str(unreadable(str(tree / BAD), "Permission denied"))
    assert mem.broken() == {"user_3": problem}
    assert [record.key for record in mem.list()] == [f"user_{n}" for n in range(9) if n != 3]
    assert "user_3" not in [hit.key for hit in mem.recall("memory 3", rank="salience")]
    with pytest.raises(MemoryFileUnreadable, match="Permission denied"):
        mem.read("user_3")
    assert not shown_whole(problem)  # the warning never offers `memory show` for it


def test_a_file_indexed_then_made_unreadable_loses_its_row(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "user_3" in [hit.key for hit in Memory(tree).recall("memory 3", rank="salience")]
    (tree / BAD).write_text(MEMORY.format(body="memory 3 moved"), encoding="utf-8")  # a new signature
    _refuse_open(monkeypatch, errno.EIO)
    mem = Memory(tree)
    assert "user_3" in mem.broken()
    assert "user_3" not in [hit.key for hit in mem.recall("memory 3", rank="salience")]


def _build(tree: Path, car: Path, strict: bool) -> tuple[list[str], Callable[[], None]]:
    warnings: list[str] = []
    return warnings, lambda: build_bundle(tree, car, options=BuildOptions(strict=strict, warn=warnings.append))


def test_a_build_leaves_it_out_naming_it_and_strict_refuses_writing_nothing(
        tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _refuse_open(monkeypatch, errno.EACCES)
    car = tmp_path / "b.car"
    warnings, build = _build(tree, car, strict=True)
    with pytest.raises(FrontmatterError, match=f"cannot read .*{BAD}: Permission denied"):  # as a broken file
        build()
    assert not car.exists()
    warnings, build = _build(tree, car, strict=False)
    build()
    assert car.is_file()
    named = [w for w in warnings if BAD in w]
    assert len(named) == 1 and "Permission denied" in named[0] and "memory show" not in named[0]


def test_a_timeline_day_that_cannot_be_read_is_left_out_with_one_warning(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Memory(tree).note("first day")  # today's day file
    day = next((tree / "timeline").iterdir()).name
    _refuse_open(monkeypatch, errno.EIO, name=day)
    mem = Memory(tree)
    assert mem.timeline() == []
    mem.context_block()
    named = [w for w in mem.warnings if f"{day}: " in w]
    assert len(named) == 1 and named[0].endswith("; left out")
    with pytest.raises(MemoryFileUnreadable):
        mem._tree.snapshot(strict=True)


def test_both_kinds_are_one_base_every_consumer_tests() -> None:
    assert issubclass(MemoryFileTooLarge, MemoryFileUnusable)
    assert issubclass(MemoryFileUnreadable, MemoryFileUnusable)
    assert issubclass(MemoryFileUnusable, FrontmatterError)


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE, errno.ENOMEM])
@pytest.mark.parametrize("c_reader", [pytest.param(True, marks=needs_c), False])
def test_the_process_out_of_descriptors_or_memory_is_a_refusal_not_each_file_unreadable(
        tree: Path, monkeypatch: pytest.MonkeyPatch, code: int, c_reader: bool) -> None:
    """Too many open files (``ulimit -n``) or no memory is the process's problem, not the file's: every file
    would be "unreadable", left out of a build and dropped from the index; the read is refused instead."""
    if not c_reader:
        monkeypatch.setattr(backend_module, "_statscan", None)
    _refuse_open(monkeypatch, code)
    names = sorted(path.name for path in tree.iterdir())
    with pytest.raises(MemoryStoreError, match=os.strerror(code)) as raised:
        DirectoryBackend(tree).read_many(names)
    assert not isinstance(raised.value, MemoryFileUnusable)
    with pytest.raises(MemoryStoreError) as raised:
        DirectoryBackend(tree).read(BAD)
    assert not isinstance(raised.value, MemoryFileUnusable)
