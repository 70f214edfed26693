"""The files edited in place found from the index's signature blob (issue 37: a sync round's refresh at 10,000
memories read every row's signature to find the ten that moved): the same files, in the same order, as comparing
the rows one by one, and nothing found when the listing names other files than the index."""

from __future__ import annotations

import os
from array import array
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.memory import Memory
from bundlekit.memory import catalog as catalog_module
from bundlekit.memory.catalog import stat as catalog_stat
from bundlekit.memory.backend import DirectoryBackend, Scan
from bundlekit.memory.catalog import CATALOG_FILE
from bundlekit.memory.naming import HIDDEN_DIR

from .conftest import fields

_SIG = st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**63 - 1))
_FILE = st.sampled_from([f"{c}{i}.md" for c in "abcé" for i in range(8)])


@settings(max_examples=300, deadline=None)
@given(records=st.lists(st.binary(min_size=6, max_size=6), max_size=40), data=st.data())
def test_the_records_found_differing_are_exactly_those_that_differ(records: list[bytes], data: st.DataObject) -> None:
    theirs = [data.draw(st.one_of(st.just(record), st.binary(min_size=6, max_size=6))) for record in records]
    expected = [at for at, (a, b) in enumerate(zip(records, theirs, strict=True)) if a != b]
    assert catalog_stat._differing(b"".join(records), b"".join(theirs), 6) == expected


@settings(max_examples=200, deadline=None)
@given(listing=st.dictionaries(_FILE, _SIG, max_size=20), asked=st.lists(_FILE, max_size=6))
def test_a_packed_listing_gives_the_signatures_its_dict_gives(
    listing: dict[str, tuple[int, int, int]], asked: list[str]
) -> None:
    whole = Scan(dict(listing), None)
    packed = whole.packed()
    assert packed is not None
    from_packed = Scan.from_packed(packed[0], packed[1], len(listing), None)
    expected = {name: listing[name] for name in asked if name in listing}
    assert from_packed.signatures_of(asked) == expected == whole.signatures_of(asked)


def _indexed_scan(mem: Memory, tree: Path) -> tuple[catalog_module.Catalog, Scan]:
    mem.list()  # the index in step with the files, its signature blob of the current generation
    mem.close()
    return catalog_module.Catalog(tree / HIDDEN_DIR / CATALOG_FILE), DirectoryBackend(tree).scan()


def _moved_by_rows(catalog: catalog_module.Catalog, scan: Scan) -> list[str]:
    known = catalog.stat.signatures()
    return sorted(name for name, signature in scan.memories.items() if known.get(name) != signature)


def test_files_edited_in_place_are_found_from_the_blob_as_row_by_row(mem: Memory, tree: Path) -> None:
    for key in ("alpha", "beta", "gamma", "delta", "omega"):
        mem.write(key, **fields(name=key.title()))
    catalog, _scan = _indexed_scan(mem, tree)
    catalog.close()
    (tree / "beta.md").write_text((tree / "beta.md").read_text(encoding="utf-8") + "more\n", encoding="utf-8")
    stamp = os.stat(tree / "omega.md")  # the same size, another mtime: moved all the same
    os.utime(tree / "omega.md", ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1))
    catalog = catalog_module.Catalog(tree / HIDDEN_DIR / CATALOG_FILE)
    try:
        scan = DirectoryBackend(tree).scan()
        assert catalog.stat.moved_in_place(scan) == _moved_by_rows(catalog, scan) == ["beta.md", "omega.md"]
    finally:
        catalog.close()


def test_a_listing_of_other_files_than_the_index_finds_nothing_from_the_blob(mem: Memory, tree: Path) -> None:
    for key in ("alpha", "beta"):
        mem.write(key, **fields(name=key.title()))
    catalog, scan = _indexed_scan(mem, tree)
    try:
        assert catalog.stat.moved_in_place(scan) == []  # the same files, none moved
        (tree / "gamma.md").write_text((tree / "alpha.md").read_text(encoding="utf-8"), encoding="utf-8")
        assert catalog.stat.moved_in_place(DirectoryBackend(tree).scan()) is None  # one added: the rows decide
        (tree / "gamma.md").unlink()
        (tree / "beta.md").unlink()
        assert catalog.stat.moved_in_place(DirectoryBackend(tree).scan()) is None  # one removed
    finally:
        catalog.close()


def test_a_refresh_indexes_again_exactly_the_files_edited_in_place(mem: Memory, tree: Path) -> None:
    for key in ("alpha", "beta", "gamma"):
        mem.write(key, **fields(name=key.title(), body=f"{key} body"))
    mem.list()
    text = (tree / "gamma.md").read_text(encoding="utf-8").replace("gamma body", "gamma changed, longer body")
    (tree / "gamma.md").write_text(text, encoding="utf-8")
    assert [hit.key for hit in Memory(tree).recall("changed")] == ["gamma"]


def test_a_signature_blob_whose_numbers_are_cut_finds_nothing_from_it(mem: Memory, tree: Path) -> None:
    mem.write("alpha", **fields())
    catalog, scan = _indexed_scan(mem, tree)
    try:
        packed = scan.packed()
        assert packed is not None
        short = Scan.from_packed(packed[0], bytes(array("q", [1, 2])), 1, None)  # names whole, numbers not
        assert catalog.stat.moved_in_place(short) is None
    finally:
        catalog.close()
