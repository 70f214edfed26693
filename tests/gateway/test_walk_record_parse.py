"""A pin walk record (``BlockStore._record_walk``) read in C (``bundlekit/_packscan.c``'s ``parse_walk``) reads as the
interpreter's loops read it where that is not built (``blockstore._parse_walk_py``): the same root, sizes (in the same
order) and links, on records made by the store and on random, cut and mutated ones; where one refuses a record
(``ValueError``, ``IndexError``: the store then trusts no walk), so does the other. Its block entries laid out in C
(``pack_walk``) are the bytes the interpreter lays out (``blockstore._pack_walk_py``), or both refuse."""

from __future__ import annotations

import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit import blockstore
from bundlekit.ipld.cid import MAX_BLOCK_SIZE

packscan = pytest.importorskip("bundlekit._packscan", reason="bundlekit._packscan is not built")

_Entry = tuple[bytes, int, list[int]]


def _record(root: bytes, entries: list[_Entry]) -> bytes:
    """A record body as ``_record_walk`` lays it out (without the magic line and digest), links as given."""
    parts = [bytes((len(root),)), root]
    for cid, size, links in entries:
        parts += [bytes((len(cid),)), cid, struct.pack(">II", size, len(links))]
        parts += [struct.pack(">I", index) for index in links]
    return b"".join(parts)


def _read(parse: object, body: bytes) -> object:
    try:
        walked = blockstore._parse_walk(memoryview(body)) if parse == "c" else blockstore._parse_walk_py(memoryview(body))
    except (ValueError, IndexError):
        return "refused"
    return walked.root, list(walked.sizes.items()), walked.links


def _same(body: bytes) -> None:
    assert _read("c", body) == _read("py", body)


_CIDS = st.binary(min_size=0, max_size=40)
_ENTRIES = st.lists(
    st.tuples(_CIDS, st.integers(min_value=0, max_value=MAX_BLOCK_SIZE + 2),
              st.lists(st.integers(min_value=0, max_value=12), max_size=4)),
    max_size=10,
)


@settings(max_examples=400, deadline=None)
@given(root=_CIDS, entries=_ENTRIES, cut=st.integers(min_value=0, max_value=8))
def test_a_random_record_reads_the_same_or_is_refused_by_both(root: bytes, entries: list[_Entry], cut: int) -> None:
    body = _record(root, entries)
    _same(body)
    _same(body[: max(0, len(body) - cut)])


@settings(max_examples=300, deadline=None)
@given(count=st.integers(min_value=1, max_value=12), data=st.data())
def test_a_well_formed_record_reads_the_same(count: int, data: st.DataObject) -> None:
    cids = [bytes([1, 0x70, 0x12, 0x20]) + bytes([i]) * 32 for i in range(count)]
    entries = [(cid, data.draw(st.integers(min_value=0, max_value=MAX_BLOCK_SIZE)),
                sorted(set(data.draw(st.lists(st.integers(min_value=i + 1, max_value=count - 1), max_size=3))))
                if i + 1 < count else [])
               for i, cid in enumerate(cids)]
    body = _record(cids[0], entries)
    assert _read("c", body) != "refused"
    _same(body)


@settings(max_examples=300, deadline=None)
@given(at=st.integers(min_value=0), value=st.integers(min_value=0, max_value=255))
def test_a_mutated_record_reads_the_same_or_is_refused_by_both(at: int, value: int) -> None:
    cids = [bytes([1, 0x55, 0x12, 0x20]) + bytes([i]) * 32 for i in range(5)]
    body = bytearray(_record(cids[0], [(cids[0], 300, [1, 2]), (cids[1], 40, [3]), (cids[2], 9, []),
                                       (cids[3], 7, [4]), (cids[4], 1, [])]))
    body[at % len(body)] = value
    _same(bytes(body))


def test_a_record_the_store_wrote_reads_the_same(tmp_path: Path) -> None:
    cids = [bytes([1, 0x70, 0x12, 0x20]) + bytes([i]) * 32 for i in range(40)]
    sizes = {cid: 100 + i for i, cid in enumerate(cids)}
    links = {cids[i]: [cids[j] for j in range(i + 1, min(i + 4, 40))] for i in range(0, 39, 2)}
    store = blockstore.BlockStore(tmp_path, fsync=False)
    store._record_walk(cids[0], sizes, links)
    data = (store.root / blockstore.WALK_FILE).read_bytes()
    body = data[len(blockstore._WALK_MAGIC):-32]
    walked = blockstore._parse_walk(memoryview(body))
    assert (walked.root, walked.sizes, walked.links) == (cids[0], sizes, links)
    _same(body)


def _packed(pack: object, args: tuple[list[bytes], dict[bytes, int], dict[bytes, list[bytes]], dict[bytes, int]]) -> object:
    try:
        return pack(*args)  # type: ignore[operator]
    except Exception:  # noqa: BLE001 - either refuses: a record is then not written, whichever error says so
        return "refused"


@settings(max_examples=400, deadline=None)
@given(data=st.data(), count=st.integers(min_value=0, max_value=10))
def test_entries_laid_out_in_c_are_the_interpreters(data: st.DataObject, count: int) -> None:
    cids = data.draw(st.lists(st.binary(min_size=0, max_size=260), min_size=count, max_size=count, unique=True))
    sizes = {cid: data.draw(st.integers(min_value=0, max_value=(1 << 32) + 1)) for cid in cids
             if data.draw(st.integers(0, 20)) > 0}
    index = {cid: at for at, cid in enumerate(cids) if data.draw(st.integers(0, 20)) > 0}
    links = {cid: data.draw(st.lists(st.sampled_from(cids), max_size=4)) for cid in cids[:count // 2]} if cids else {}
    args = (cids, sizes, links, index)
    assert _packed(packscan.pack_walk, args) == _packed(blockstore._pack_walk_py, args)


def test_the_store_writes_the_same_record_with_c_or_without(tmp_path: Path) -> None:
    cids = [bytes([1, 0x70, 0x12, 0x20]) + bytes([i]) * 32 for i in range(30)]
    sizes = {cid: 100 + i for i, cid in enumerate(cids)}
    links = {cids[i]: [cids[j] for j in range(i + 1, min(i + 4, 30))] for i in range(0, 29, 3)}
    written = []
    for compiled in (True, False):
        store = blockstore.BlockStore(tmp_path / str(compiled), fsync=False)
        saved = blockstore._packscan
        if not compiled:
            blockstore._packscan = None  # type: ignore[assignment]
        try:
            store._record_walk(cids[0], sizes, links)
        finally:
            blockstore._packscan = saved
        written.append((store.root / blockstore.WALK_FILE).read_bytes())
    assert written[0] == written[1]


# A key whose ``==`` runs code (here: changes the lists pack_walk was given) once armed: a dict lookup of a CID meets
# it when their hashes agree. pack_walk must lay out the lists as they were when it was called, never read or write
# past what it counted (a heap overflow, uninitialised bytes in a record, a freed list read); run in a child process,
# where a crash is an exit code, not the test run's end.
_HOSTILE = textwrap.dedent("""
    import sys
    from bundlekit import blockstore
    from bundlekit._packscan import pack_walk
    class Key:
        armed = False
        def __init__(self, twin, act):
            self.twin, self.act = twin, act
        def __hash__(self):
            return hash(self.twin)
        def __eq__(self, other):
            if Key.armed:
                self.act()
            return False
    a, b = b"a" * 36, b"b" * 36
    how = sys.argv[1]
    cids, kids = [a, b, *(bytes([i]) * 36 for i in range(20))], [a] * 50
    act = {"grow": lambda: kids.extend([a] * 5000), "shrink": kids.clear, "cids": cids.clear}[how]
    sizes = {Key(a, act): 0, **{cid: 7 for cid in cids}}
    index = {cid: at for at, cid in enumerate(cids)}
    expected = blockstore._pack_walk_py(list(cids), dict(sizes), {b: list(kids)}, dict(index))
    Key.armed = True
    print(pack_walk(cids, sizes, {b: kids}, index) == expected)
""")


@pytest.mark.parametrize("how", ["grow", "shrink", "cids"])
def test_entries_are_laid_out_as_given_when_a_lookup_changes_the_lists(how: str) -> None:
    done = subprocess.run([sys.executable, "-c", _HOSTILE, how], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr[-2000:]
