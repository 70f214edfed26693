"""The C listing (``bundlekit.memory._statscan``) decides exactly what the Python listing decides.

Both list one directory with every memory file's stat signature
(``DirectoryBackend._listed_in_c`` and ``DirectoryBackend._listed``); the
index compares either with its compact copy. Checked here against each other,
and against ``os.lstat``, on random trees: hidden names, folders and other
files named ``*.md``, ``MEMORY.md``, ``timeline``, names that are not UTF-8,
and links (refused by both with the same error). The memory store then works
the same with the C listing taken away.
"""

from __future__ import annotations

import os
import string
from array import array
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundlekit.errors import MemoryFileTooLarge, MemoryStoreError
from bundlekit.memory import Memory
from bundlekit.memory import backend as backend_module
from bundlekit.memory.backend import DirectoryBackend, Scan
from bundlekit.memory.catalog import stat as stat_module

pytestmark = pytest.mark.skipif(backend_module._statscan is None, reason="the C listing is not built here")

_NAME = st.text(alphabet=string.ascii_letters + string.digits + "_-é", min_size=1, max_size=12)


def _python_listing(root: Path) -> tuple[Scan | None, list[str], str | None]:
    hidden: list[str] = []
    try:
        with os.scandir(root) as entries:
            scan = DirectoryBackend(root)._listed(entries, hidden)
    except MemoryStoreError as exc:
        return None, hidden, str(exc)
    return scan, hidden, None


def _c_listing(root: Path, read: bool = False) -> tuple[Scan | None, list[str], str | None]:
    hidden: list[str] = []
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        scan = DirectoryBackend(root)._listed_in_c(fd, hidden, read)
    except MemoryStoreError as exc:
        return None, hidden, str(exc)
    finally:
        os.close(fd)
    assert scan is not None  # no number past 64 bits in these trees
    return scan, hidden, None


def _same(root: Path) -> Scan | None:
    # The C listing stats with several threads, then decides in readdir's order: any thread count lists alike
    # (git's preload-index.c splits its lstat calls among threads the same way, each on its own share).
    first, *others = _scans(root, (1, 0, 2, 3, 7, 64))
    assert all(other == first for other in others)
    py_scan, py_hidden, py_error = _python_listing(root)
    c_scan, c_hidden, c_error = _c_listing(root)
    assert c_error == py_error
    if py_error is not None:
        return None
    assert py_scan is not None and c_scan is not None
    assert sorted(c_hidden) == sorted(py_hidden)
    assert c_scan.memories == py_scan.memories
    assert c_scan.names() == py_scan.names() and c_scan.packed() == py_scan.packed()  # sorted by name, both
    assert len(c_scan) == len(py_scan) and c_scan.index == py_scan.index
    assert c_scan.packed() == py_scan.packed()
    _same_read(root, c_scan, c_hidden)
    return c_scan


def _same_read(root: Path, listed: Scan, hidden: list[str]) -> None:
    """The listing that reads as it lists (a build's: ``scan(read=True)``) lists what the one that only stats
    lists, and its bytes are those the Python reading (where nothing is built) reads of its names."""
    read, read_hidden, error = _c_listing(root, read=True)
    assert error is None and read is not None and read.contents is not None
    assert sorted(read_hidden) == sorted(hidden)
    assert read.packed() == listed.packed() and read.index == listed.index and len(read) == len(listed)
    python = [backend_module._read_or_unusable(root / name) for name in read.names()]
    assert [str(d) if isinstance(d, Exception) else d for d in read.contents] == [
        str(d) if isinstance(d, Exception) else d for d in python]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    memories=st.lists(_NAME, max_size=25, unique=True),
    hidden=st.lists(_NAME, max_size=4, unique=True),
    others=st.lists(_NAME, max_size=4, unique=True),
    md_folders=st.lists(_NAME, max_size=3, unique=True),
    links=st.lists(_NAME, max_size=2, unique=True),
    with_index=st.booleans(),
    timeline=st.sampled_from(["none", "folder", "file"]),
    sizes=st.integers(min_value=0, max_value=3000),
)
def test_the_c_listing_is_the_python_listing_on_random_trees(
    tmp_path_factory: pytest.TempPathFactory,
    memories: list[str],
    hidden: list[str],
    others: list[str],
    md_folders: list[str],
    links: list[str],
    with_index: bool,
    timeline: str,
    sizes: int,
) -> None:
    root = tmp_path_factory.mktemp("tree")
    for i, name in enumerate(memories):
        (root / f"{name}.md").write_bytes(b"x" * ((sizes + i) % 2000))
    for name in hidden:
        (root / f".{name}.md").write_bytes(b"hidden")
    for name in others:
        (root / f"{name}.txt").write_bytes(b"other")
    for name in md_folders:
        if f"{name}.md" not in {f"{m}.md" for m in memories}:
            (root / f"{name}.md").mkdir()
    for name in links:
        if name != "MEMORY" and not (root / f"{name}.md").exists():
            (root / f"{name}.md").symlink_to(root)
    if with_index:
        (root / "MEMORY.md").write_text("# Memory index\n", encoding="utf-8")
    if timeline == "folder":
        (root / "timeline").mkdir()
    elif timeline == "file":
        (root / "timeline").write_bytes(b"")
    scan = _same(root)
    if links and any((root / f"{name}.md").is_symlink() for name in links):
        assert scan is None  # refused by both, with the same error
        return
    assert scan is not None
    for name, signature in scan.memories.items():
        st_ = os.lstat(root / name)
        assert signature == (st_.st_ino, st_.st_mtime_ns, st_.st_size)


def _scans(root: Path, threads: tuple[int, ...]) -> list[object]:
    """``_statscan.scan`` of ``root`` with each thread count: its result, or the error it raised."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    out: list[object] = []
    try:
        for count in threads:
            try:
                out.append(backend_module._statscan.scan(fd, count))
            except OSError as exc:
                out.append((type(exc), exc.errno, exc.filename))
    finally:
        os.close(fd)
    return out


def test_a_large_tree_is_listed_alike_by_any_number_of_threads(tmp_path: Path) -> None:
    # More than git's 500 stats a thread, so the automatic count (0) starts threads too; a link among them is
    # the first in readdir's order for every count, and removed, every count lists the 3,000 files alike.
    for i in range(3_000):
        (tmp_path / f"m{i:05d}.md").write_bytes(b"m" * (i % 7))
    (tmp_path / "MEMORY.md").write_bytes(b"# Memory index\n")
    (tmp_path / "m01234.md").unlink()
    (tmp_path / "m01234.md").symlink_to(tmp_path / "m00001.md")
    (tmp_path / "m02345.md").unlink()
    (tmp_path / "m02345.md").symlink_to(tmp_path / "m00002.md")
    linked = _scans(tmp_path, (1, 0, 2, 5, 20))
    assert all(result == linked[0] for result in linked) and linked[0] is not None
    assert linked[0][5] in ("m01234.md", "m02345.md")  # type: ignore[index]
    (tmp_path / "m01234.md").unlink()
    (tmp_path / "m02345.md").unlink()
    listed = _scans(tmp_path, (1, 0, 2, 5, 20))
    assert all(result == listed[0] for result in listed) and listed[0] is not None
    assert listed[0][2] == 2_998 and listed[0][3] is not None  # type: ignore[index]
    assert _same(tmp_path) is not None  # and the Python listing agrees


def test_names_that_are_not_utf8_are_listed_as_python_lists_them(tmp_path: Path) -> None:
    os.close(os.open(os.fsencode(tmp_path) + b"/\xff\xfe.md", os.O_CREAT | os.O_WRONLY, 0o644))
    os.close(os.open(os.fsencode(tmp_path) + b"/.\xff", os.O_CREAT | os.O_WRONLY, 0o644))
    (tmp_path / "plain.md").write_bytes(b"p")
    scan = _same(tmp_path)
    assert scan is not None and os.fsdecode(b"\xff\xfe.md") in scan.memories


@pytest.mark.parametrize("name", ["a.md", "MEMORY.md", "timeline"])
def test_a_link_is_refused_by_both_listings_with_the_same_error(tmp_path: Path, name: str) -> None:
    (tmp_path / "target").mkdir()
    (tmp_path / "b.md").write_bytes(b"b")
    (tmp_path / name).symlink_to(tmp_path / "target")
    assert _same(tmp_path) is None
    with pytest.raises(MemoryStoreError, match="is a symbolic link"):
        DirectoryBackend(tmp_path).scan()


def test_a_link_with_another_name_is_ignored_by_both(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_bytes(b"b")
    (tmp_path / "notes.txt").symlink_to(tmp_path / "b.md")
    scan = _same(tmp_path)
    assert scan is not None and list(scan.memories) == ["b.md"]


def test_an_mtime_past_64_bits_of_nanoseconds_is_listed_in_python(tmp_path: Path) -> None:
    path = tmp_path / "far.md"
    path.write_bytes(b"f")
    far = 10_000_000_000 * 10**9  # the year 2286: more nanoseconds than a signed 64-bit integer holds
    try:
        os.utime(path, ns=(far, far))
    except (OSError, OverflowError):
        pytest.skip("this file system cannot hold that time")
    if os.lstat(path).st_mtime_ns < 2**63:
        pytest.skip("this file system clamped the time")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert backend_module._statscan.scan(fd) is None  # the C listing declines
    finally:
        os.close(fd)
    scan = DirectoryBackend(tmp_path).scan()  # listed in Python instead
    assert scan.memories == {"far.md": (os.lstat(path).st_ino, os.lstat(path).st_mtime_ns, 1)}
    assert scan.packed() is None  # and no index row could hold it


def test_the_c_listing_refuses_a_bad_descriptor(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="directory descriptor"):
        backend_module._statscan.scan(-1)
    with pytest.raises(ValueError, match="thread count"):
        backend_module._statscan.scan(0, -1)
    fd = os.open(tmp_path / "f", os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        with pytest.raises(NotADirectoryError):
            backend_module._statscan.scan(fd)
    finally:
        os.close(fd)


def test_the_store_works_the_same_with_the_c_listing_taken_away(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def run(root: Path) -> tuple[list[str], list[str], str]:
        memory = Memory(root)
        for i in range(30):
            memory.write(f"k{i:02d}", name=f"K {i}", description="rondo", type="project", body=f"body {i}")
        (root / "k03.md").unlink()  # by hand, between commands
        (root / "k04.md").rename(root / "moved.md")
        memory.forget("k05")
        fresh = Memory(root)
        return [r.key for r in fresh.list()], [h.key for h in fresh.recall("rondo", 50)], fresh.list_text()

    with_c = run(tmp_path / "c")
    monkeypatch.setattr(backend_module, "_statscan", None)
    without = run(tmp_path / "py")
    assert with_c[0] == without[0] and "moved" in with_c[0] and "k03" not in with_c[0]
    assert sorted(with_c[1]) == sorted(without[1])


def test_the_descriptor_is_left_at_the_start_of_the_listing(tmp_path: Path) -> None:
    for name in ("a.md", "b.md", "c.md"):
        (tmp_path / name).write_bytes(b"x")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        first, second = backend_module._statscan.scan(fd), backend_module._statscan.scan(fd)
        assert first is not None and first == second and first[2] == 3
        assert sorted(os.listdir(fd)) == ["a.md", "b.md", "c.md"]  # a Python listing after it sees them all
    finally:
        os.close(fd)


@pytest.mark.parametrize("listing", ["c", "python"])
def test_a_folder_that_cannot_be_read_is_a_store_error_from_both_listings(tmp_path: Path, listing: str) -> None:
    # With one descriptor left, the root opens but the listing's own duplicate cannot: found by review.
    (tmp_path / "a.md").write_bytes(b"x")
    code = (
        "import os, resource, sys\n"
        "from pathlib import Path\n"
        "from bundlekit.memory import backend\n"
        "from bundlekit.errors import MemoryStoreError\n"
        f"if {listing!r} == 'python':\n"
        "    backend._statscan = None\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
        "held = []\n"
        "try:\n"
        "    while True:\n"
        "        held.append(os.open(os.devnull, os.O_RDONLY))\n"
        "except OSError:\n"
        "    os.close(held.pop())\n"
        "try:\n"
        f"    backend.DirectoryBackend(Path({str(tmp_path)!r})).scan()\n"
        "except MemoryStoreError as exc:\n"
        "    print('store error:', exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.startswith("store error: cannot list the memory tree") and "Too many open files" in out


_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.tuples(st.binary(min_size=1, max_size=6).map(lambda b: b.replace(b"\0", b"_")), _INT64),
                  max_size=30),
    written=st.one_of(_INT64, st.integers(min_value=-(2**70), max_value=2**70)),
)
def test_the_racy_rows_picked_in_c_are_those_the_python_walk_picks(rows: list[tuple[bytes, int]], written: int) -> None:
    # StatCache.compare's racy rows (mtime + RACY_NS > written_ns) taken from the signature blob by the C pass are
    # the Python walk's, names not UTF-8 and numbers at the ends of 64 bits included.
    names = b"\0".join(name for name, _mtime in rows)
    numbers = array("q", [n for i, (_name, mtime) in enumerate(rows) for n in (i, mtime, 7)]).tobytes()
    in_c = stat_module.racy_rows(names, numbers, written)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stat_module, "_racy_rows", None)
        assert in_c == stat_module.racy_rows(names, numbers, written)


def test_a_blob_whose_names_and_numbers_differ_in_count_is_left_to_the_python_walk() -> None:
    assert backend_module._statscan.racy(b"a.md\0b.md", b"\0" * 24, 0) is None
    assert backend_module._statscan.racy(b"", b"", 0) == []
    with pytest.raises(ValueError):  # as the walk always did
        stat_module.racy_rows(b"a.md\0b.md", array("q", [1, 2, 3]).tobytes(), 0)


def test_a_listing_that_reads_names_a_file_over_the_bound_as_read_many_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend_module, "MAX_MEMORY_BYTES", 100)
    (tmp_path / "project_big.md").write_bytes(b"x" * 101)
    (tmp_path / "project_small.md").write_bytes(b"y" * 100)
    scan, _hidden, error = _c_listing(tmp_path, read=True)
    assert error is None and scan is not None and scan.contents is not None
    big, small = scan.contents
    assert small == b"y" * 100
    assert isinstance(big, MemoryFileTooLarge)
    assert str(big) == str(DirectoryBackend(tmp_path).read_many(["project_big.md"] * 8)[0])
