"""A memory file over the size bound (``bundlekit.memory.filesize``) is never read whole, in Python or in C.

Its size is checked before the read (the file's ``fstat``) and the read stops after ``MAX_MEMORY_BYTES + 1``
bytes (a file growing meanwhile): the backend reports it as :class:`MemoryFileTooLarge`, and the tree lists it
as broken naming its size. The index re-checks it whatever happens to its size: cut back under the bound it
is indexed, grown past it again it is left out again (no row of its former bytes is left to rank).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bundlekit.errors import MemoryFileTooLarge
from bundlekit.memory import Memory
from bundlekit.memory import backend as backend_module
from bundlekit.memory.backend import DirectoryBackend, InMemoryBackend
from bundlekit.memory.filesize import MAX_MEMORY_BYTES, check_text_size, shown_whole, too_large
from bundlekit.memory.record import parse_memory_file

MEMORY = (
    "---\nname: N\ndescription: d\ntype: user\n"
    "created: 2026-04-14T12:03:12Z\nupdated: 2026-04-14T12:03:12Z\n---\n\n{body}\n"
)

needs_c = pytest.mark.skipif(backend_module._statscan is None, reason="the C reader is not built here")


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as file:
        file.truncate(size)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "m"
    root.mkdir()
    for number in range(9):  # nine: read_many takes the C reader from eight names on
        (root / f"user_{number}.md").write_text(MEMORY.format(body=f"memory {number}"), encoding="utf-8")
    return root


def test_a_file_at_the_bound_is_read_and_one_byte_more_is_not(tree: Path) -> None:
    backend = DirectoryBackend(tree)
    at = MEMORY.format(body="")
    at = at + "x" * (MAX_MEMORY_BYTES - len(at))
    (tree / "user_at.md").write_text(at, encoding="utf-8")
    assert backend.read("user_at.md") == at.encode()
    (tree / "user_at.md").write_text(at + "x", encoding="utf-8")
    with pytest.raises(MemoryFileTooLarge, match=rf"user_at.md holds 4.0 MiB \({MAX_MEMORY_BYTES + 1} bytes\)"):
        backend.read("user_at.md")


@pytest.mark.parametrize("c_reader", [pytest.param(True, marks=needs_c), False])
def test_read_many_reports_the_file_over_the_bound_and_reads_the_rest(
        tree: Path, c_reader: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not c_reader:
        monkeypatch.setattr(backend_module, "_statscan", None)
    _sparse(tree / "user_huge.md", 8 * 1024**3)
    names = sorted(path.name for path in tree.iterdir())
    found = DirectoryBackend(tree).read_many(names)
    by_name = dict(zip(names, found, strict=True))
    huge = by_name.pop("user_huge.md")
    assert isinstance(huge, MemoryFileTooLarge)
    assert str(huge) == str(too_large("user_huge.md", 8 * 1024**3))
    assert "8192 MiB (8589934592 bytes)" in str(huge)
    assert all(isinstance(data, bytes) and data.startswith(b"---") for data in by_name.values())


def test_python_stops_after_the_bound_when_the_file_grew_since_its_size_was_taken(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _sparse(tree / "user_grew.md", 64 * 1024**2)
    real_fstat = os.fstat
    sizes: list[int] = []

    def small_fstat(fd: int) -> os.stat_result:  # the size as it was before the file grew
        st = real_fstat(fd)
        return os.stat_result((*st[:6], 1000, *st[7:]))

    real_read = backend_module.os.fdopen

    def counting_fdopen(fd: int, *args: object, **kwargs: object) -> object:
        handle = real_read(fd, *args, **kwargs)  # type: ignore[call-overload]
        read = handle.read

        def bounded_read(size: int = -1) -> bytes:
            data: bytes = read(size)
            sizes.append(len(data))
            return data

        handle.read = bounded_read
        return handle

    monkeypatch.setattr(backend_module.os, "fstat", small_fstat)
    monkeypatch.setattr(backend_module.os, "fdopen", counting_fdopen)
    with pytest.raises(MemoryFileTooLarge, match="user_grew.md holds more than 4 MiB"):
        DirectoryBackend(tree).read("user_grew.md")
    assert sizes == [MAX_MEMORY_BYTES + 1]


@needs_c
def test_c_reports_a_size_over_the_limit_without_reading(tree: Path) -> None:
    _sparse(tree / "user_big.md", 1000)
    fd = os.open(tree, os.O_RDONLY)
    try:
        found = backend_module._statscan.read_files(fd, b"user_0.md\0user_big.md\0user_gone.md", 999)
        assert found[1:] == [1000, None] and isinstance(found[0], bytes)
        assert backend_module._statscan.read_files(fd, b"user_big.md", 1000) == [bytes(1000)]
        with pytest.raises(ValueError, match="limit"):
            backend_module._statscan.read_files(fd, b"user_big.md", -1)
    finally:
        os.close(fd)


def test_the_tree_lists_it_as_broken_and_indexes_it_once_cut_back(tree: Path) -> None:
    mem = Memory(tree)
    assert len(mem.list()) == 9
    huge = tree / "user_huge.md"
    _sparse(huge, 100 * 1024**2)
    assert mem.broken() == {"user_huge": str(too_large("user_huge.md", 100 * 1024**2))}
    assert [r.key for r in mem.list()] == [f"user_{n}" for n in range(9)]
    with huge.open("r+b") as file:  # the same inode, cut back in place
        file.truncate(0)
        file.write(MEMORY.format(body="cut back").encode())
    fresh = Memory(tree)
    assert fresh.broken() == {}
    assert "user_huge" in [hit.key for hit in fresh.recall("cut back", rank="salience")]
    _sparse(huge, 100 * 1024**2)  # and past the bound again: its row goes, no recall finds its former text
    again = Memory(tree)
    assert "user_huge" in again.broken()
    assert "user_huge" not in [hit.key for hit in again.recall("cut back", rank="salience")]


def test_read_and_stored_text_raise_for_it_and_forget_removes_it(tree: Path) -> None:
    _sparse(tree / "user_huge.md", 5 * 1024**2)
    mem = Memory(tree)
    with pytest.raises(MemoryFileTooLarge):
        mem.read("user_huge")
    with pytest.raises(MemoryFileTooLarge):
        mem.stored_text("user_huge")
    mem.forget("user_huge")
    assert not (tree / "user_huge.md").exists() and mem.broken() == {}


def test_a_text_over_the_bound_is_refused_by_the_parser_and_the_writer(tmp_path: Path) -> None:
    text = MEMORY.format(body="é" * (MAX_MEMORY_BYTES // 2))  # fewer characters than bytes: measured encoded
    with pytest.raises(MemoryFileTooLarge, match="merged user_x.md would hold"):
        parse_memory_file(text, key="user_x", where="merged user_x.md")
    check_text_size("é" * (MAX_MEMORY_BYTES // 2), "at the bound")
    mem = Memory(None)
    with pytest.raises(MemoryFileTooLarge, match="user_x.md would hold"):
        mem.write("user_x", name="n", description="d", type="user", body="x" * MAX_MEMORY_BYTES)
    assert mem.list() == []


def test_only_a_file_over_the_bound_is_never_offered_to_show() -> None:
    assert not shown_whole(str(too_large("a.md", None)))
    assert shown_whole("a.md line 2: frontmatter is not valid YAML")


def test_the_in_memory_backend_hashes_what_it_holds() -> None:
    backend = InMemoryBackend()
    backend.write("user_a.md", b"abc")
    assert backend.digest("user_a.md") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert backend.digest("user_b.md") is None


PROC = Path("/proc/self")
needs_proc = pytest.mark.skipif(not (PROC / "status").is_file(), reason="no /proc here")


@needs_proc
@needs_c
def test_c_stops_one_byte_past_the_limit_when_the_file_holds_more_than_its_size_said() -> None:
    # /proc/self/status is a regular file whose size says 0 and which holds a kilobyte or more: a file that
    # grew between the size taken and the read, at will.
    assert os.stat(PROC / "status").st_size == 0
    fd = os.open(PROC, os.O_RDONLY)
    try:
        assert backend_module._statscan.read_files(fd, b"status", 100) == [-1]
        whole = backend_module._statscan.read_files(fd, b"status", 1 << 20)[0]
        assert isinstance(whole, bytes) and len(whole) > 100
    finally:
        os.close(fd)


@needs_proc
def test_python_stops_one_byte_past_the_limit_when_the_file_holds_more_than_its_size_said() -> None:
    with pytest.raises(MemoryFileTooLarge, match="status holds more than"):
        backend_module._read(PROC / "status", 100)
    data = backend_module._read(PROC / "status", 1 << 20)
    assert data is not None and len(data) > 100


DAY = '{"k":"v","ts":"2026-04-14T12:03:12.000Z","type":"test"}\n'


def _huge_day(tree: Path) -> Path:
    (tree / "timeline").mkdir(exist_ok=True)
    (tree / "timeline" / "2026-04-13.jsonl").write_text(DAY.replace("14T", "13T"), encoding="utf-8")
    day = tree / "timeline" / "2026-04-14.jsonl"
    _sparse(day, 8 * 1024**3)  # 8 GiB of NULs: read whole, it would take the machine
    return day


def test_a_timeline_day_over_the_bound_is_refused_without_reading_it(tree: Path) -> None:
    _huge_day(tree)
    with pytest.raises(MemoryFileTooLarge, match=r"timeline/2026-04-14.jsonl holds 8192 MiB"):
        DirectoryBackend(tree).read_timeline("2026-04-14.jsonl")


def test_a_timeline_day_at_the_bound_is_read(tree: Path) -> None:
    (tree / "timeline").mkdir()
    day = DAY * (MAX_MEMORY_BYTES // len(DAY))
    day += " " * (MAX_MEMORY_BYTES - len(day) - 1) + "\n"
    (tree / "timeline" / "2026-04-14.jsonl").write_text(day, encoding="utf-8")
    assert len(DirectoryBackend(tree).read_timeline("2026-04-14.jsonl") or b"") == MAX_MEMORY_BYTES


def test_the_timeline_and_context_leave_a_day_over_the_bound_out_with_one_warning_naming_it(tree: Path) -> None:
    _huge_day(tree)
    memory = Memory(tree)
    assert [e["ts"] for e in memory.timeline()] == ["2026-04-13T12:03:12.000Z"]
    memory.context_block()
    named = [w for w in memory.warnings if "timeline/2026-04-14.jsonl holds 8192 MiB" in w]
    assert len(named) == 1 and named[0].endswith("; left out")


def test_a_snapshot_leaves_a_day_over_the_bound_out_and_strict_refuses_it(tree: Path) -> None:
    _huge_day(tree)
    memory = Memory(tree)
    _found, days = memory._tree.snapshot(strict=False)
    assert [name for name, _data in days] == ["2026-04-13.jsonl"]
    with pytest.raises(MemoryFileTooLarge, match="timeline/2026-04-14.jsonl"):
        memory._tree.snapshot(strict=True)


def test_a_day_over_the_bound_from_anywhere_is_refused_unparsed_and_one_at_it_parses() -> None:
    # A bundle's or a merge's day arrives as bytes, not through the tree's bounded read: parse_day refuses it
    # before decoding (parsed, a 300 MB day took ~4 GB).
    from bundlekit.memory.timeline import parse_day

    at = DAY * (MAX_MEMORY_BYTES // len(DAY))
    at += " " * (MAX_MEMORY_BYTES - len(at))
    assert len(parse_day("2026-04-14.jsonl", at.encode())) == MAX_MEMORY_BYTES // len(DAY)
    with pytest.raises(MemoryFileTooLarge, match=r"timeline/2026-04-14.jsonl holds 4.0 MiB \(4194305 bytes\)"):
        parse_day("2026-04-14.jsonl", (at + " ").encode(), strict=False)


def test_an_import_that_would_make_a_day_over_the_bound_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "m")
    memory.init()
    memory.note("kept", k="v")
    day = memory.timeline()[0]["ts"][:10] + ".jsonl"
    before = (tmp_path / "m" / "timeline" / day).read_bytes()
    blob = memory.export()
    big = "x" * 1000
    blob["timeline"] = [{**blob["timeline"][0], "n": str(n), "pad": big} for n in range(4500)]  # ~4.5 MB, one day
    with pytest.raises(MemoryFileTooLarge, match=rf"timeline/{day} would hold 4.\d MiB"):
        memory.import_(blob)
    assert (tmp_path / "m" / "timeline" / day).read_bytes() == before
