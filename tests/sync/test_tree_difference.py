"""Issue 37: a merge by tree difference reads what changed, a follower fetches what it lacks, and the old manifest
format still loads and merges with the new (bundle/treediff.py, bundle/treemerge.py, bundle/merge.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bundlekit.memory.files
import bundlekit.memory.indexer
import bundlekit.memory.transaction
from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.lineage import record_last, set_lineage
from bundlekit.bundle.load import load_bundle
from bundlekit.bundle.manifest import canonical_json, make_manifest
from bundlekit.car.writer import CarFileWriter
from bundlekit.errors import IntegrityError, ManifestError
from bundlekit.bundle.merge import MergeOptions, _touched, merge_bundle
from bundlekit.bundle.sources import Gateways
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import cid_from_text, cid_to_str
from bundlekit.memory import Memory
from bundlekit.memory.backend import Scan
from bundlekit.memory.record import parse_memory_file
from bundlekit.names.record import name_from_key
from bundlekit.syncer import sync
from bundlekit.unixfs.importer import import_tree
from bundlekit.unixfs.profiles import get_profile

from .conftest import CountingStore, HookedPinner

SIGNER = Ed25519Signer.from_seed(bytes([37]) * 32)
NAME = name_from_key(SIGNER.public)


def _text(key: str, body: str, *, updated: str = "2026-04-14T12:00:00Z", revision: int = 1) -> str:
    return (f"---\nname: {key}\ndescription: about {key}\ntype: project\ncreated: '2026-04-14T12:00:00Z'\n"
            f"updated: '{updated}'\nrevision: {revision}\n---\n\n{body}\n")


#: When the memories :func:`_tree` writes were written (their ``updated``): a tree written earlier, not in the last two
#: seconds, so the index trusts their stat signatures (git's racy rule, ``memory/indexer.RACY_NS``) instead of reading
#: all 10,000 again at the first sync (~1.6 s of CPU that nothing here checks).
WRITTEN_NS = int(datetime(2026, 4, 14, 12, tzinfo=UTC).timestamp()) * 1_000_000_000


def _tree(path: Path, n: int) -> Path:
    """``n`` memories written as files (fast) at :data:`WRITTEN_NS`, a timeline day, then opened once (index and
    MEMORY.md)."""
    path.mkdir(parents=True)
    for i in range(n):
        file = path / f"note_{i:06d}.md"
        file.write_text(_text(f"note_{i:06d}", f"Body of note {i}, " * 8), "utf-8")
        os.utime(file, ns=(WRITTEN_NS, WRITTEN_NS))
    (path / "timeline").mkdir()
    (path / "timeline" / "2026-04-14.jsonl").write_text(
        '{"ts":"2026-04-14T12:00:00.000Z","type":"note","text":"started"}\n', "utf-8")
    Memory(path).init()
    return path


def _edit(path: Path, keys: list[int]) -> None:
    """Each edit a new file renamed over the old, as editors and bundlekit write: never into the old inode, which
    a follower made by :func:`_linked_copy` shares."""
    for i in keys:
        key = f"note_{i:06d}"
        new = path / f"{key}.md.edit"
        new.write_text(_text(key, f"Changed note {i}.", updated="2026-04-15T12:00:00Z", revision=2), "utf-8")
        new.replace(path / f"{key}.md")


def _linked_copy(src: Path, dest: Path) -> None:
    """``src`` copied to ``dest`` with its memory files hard-linked: each keeps its inode, mtime and size, so the
    copied index is current (a plain copy's new inodes had the follower parse all 10,000 files again, a third of
    the test's CPU). Every later write on either side replaces a file (:func:`_edit`, bundlekit's own writes)."""
    def link_or_copy(source: str, target: str) -> None:
        if Path(source).parent == src and source.endswith(".md") and Path(source).name != "MEMORY.md":
            os.link(source, target)
        else:
            shutil.copy2(source, target)

    shutil.copytree(src, dest, copy_function=link_or_copy)


def _warm(path: Path) -> None:
    """The derived index brought up to date with the files (a copied tree's files have other inodes), as an
    agent's first command after a copy would."""
    memory = Memory(path)
    try:
        memory.index_text()
    finally:
        memory.close()


def _writer(path: Path) -> str:
    root = sync(path, name_key=SIGNER, pinners=[HookedPinner()]).root
    assert root is not None
    return root


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every ``parse_memory_file`` call in the memory layer, by key."""
    calls: list[str] = []

    def counted(text: str, *args: Any, **kwargs: Any) -> Any:
        record = parse_memory_file(text, *args, **kwargs)
        calls.append(record.key)
        return record

    for module in (bundlekit.memory.files, bundlekit.memory.indexer, bundlekit.memory.transaction):
        monkeypatch.setattr(module, "parse_memory_file", counted)
    yield calls


@pytest.mark.slow
def test_a_merge_of_10000_memories_with_10_changed_parses_only_the_changed_ones(
    tmp_path: Path, parses: list[str]
) -> None:
    writer = _tree(tmp_path / "w", 10_000)
    _writer(writer)
    follower = tmp_path / "f"
    _linked_copy(writer, follower)  # the same tree, its last root the name's: a follower that synced
    _edit(writer, list(range(0, 10_000, 1_000)))
    root = _writer(writer)
    _warm(follower)
    parses.clear()
    result = merge_bundle(f"ipfs://{root}", follower, options=MergeOptions(trusted=True))
    assert 10 <= len(parses) <= 30, len(parses)
    assert sorted(set(parses)) == [f"note_{i:06d}" for i in range(0, 10_000, 1_000)]
    assert result.report.counts() == {"updated": 10} and result.converged
    assert (follower / "note_001000.md").read_text("utf-8") == (writer / "note_001000.md").read_text("utf-8")


def _blocks_for_one_change(tmp_path: Path, n: int) -> int:
    writer = _tree(tmp_path / f"w{n}", n)
    home = tmp_path / f"home{n}"
    served = CountingStore(home)
    follower = _tree(tmp_path / f"f{n}", 0)
    pinner = HookedPinner(store=home)
    sync(writer, name_key=SIGNER, pinners=[pinner], source=Gateways([], store=BlockStore(home)))
    with serve_in_thread(served) as server:
        source = Gateways([server.url], store=BlockStore(tmp_path / f"follower-home{n}"))
        sync(follower, name=NAME, source=source)  # the first follow: every block, kept
        _edit(writer, [n // 2])
        sync(writer, name_key=SIGNER, pinners=[HookedPinner(store=home)], source=Gateways([], store=BlockStore(home)))
        served.served.clear()
        report = sync(follower, name=NAME, source=source)
    assert report.merge is not None and report.merge.report.counts() == {"updated": 1}
    assert (follower / f"note_{n // 2:06d}.md").read_bytes() == (writer / f"note_{n // 2:06d}.md").read_bytes()
    return len(served.served)


@pytest.mark.slow
def test_a_followers_fetch_of_one_change_asks_for_as_many_blocks_at_3000_memories_as_at_300(tmp_path: Path) -> None:
    small, large = _blocks_for_one_change(tmp_path, 300), _blocks_for_one_change(tmp_path, 3_000)
    # root, manifest, memory/ (and at 3,000 the shards on the changed path), the changed file: never the index
    assert large <= small + 3 and large <= 10, (small, large)


def test_a_bundlekit_1_base_and_a_bundlekit_2_bundle_merge_both_ways(tmp_path: Path) -> None:
    """The old format loads and merges with the new: a v1 bundle the tree came from, a v2 one changed since."""
    store = BlockStore()
    a = _tree(tmp_path / "a", 20)
    old = build_bundle(a, tmp_path / "old.car", options=BuildOptions(manifest_version=1))
    with open(old.car, "rb") as fh:
        store.import_car(fh, pin=True)
    assert load_bundle(f"ipfs://{old.root_cid}").manifest["format"] == "bundlekit/1"
    b = tmp_path / "b"
    shutil.copytree(a, b)
    _edit(a, [3])
    new = build_bundle(a, tmp_path / "new.car", options=BuildOptions(manifest_version=2, parents=[old.root_cid or ""]))
    assert load_bundle(str(new.car)).manifest["format"] == "bundlekit/2"
    result = merge_bundle(str(new.car), b)  # v1 base, v2 theirs
    assert result.base == old.root_cid and result.report.counts() == {"updated": 1}
    _edit(b, [5])
    back = build_bundle(b, tmp_path / "back.car", options=BuildOptions(manifest_version=1,
                                                                       parents=[new.root_cid or ""]))
    with open(new.car, "rb") as fh:
        store.import_car(fh, pin=True)
    record_last(a, cid_from_text(new.root_cid or ""))
    set_lineage(a, [new.root_cid or ""])
    result = merge_bundle(str(back.car), a)  # v2 base, v1 theirs
    assert result.base == new.root_cid and result.report.counts() == {"updated": 1}
    assert (a / "note_000005.md").read_bytes() == (b / "note_000005.md").read_bytes()


def test_a_bundlekit_2_manifest_does_not_grow_with_the_tree(tmp_path: Path) -> None:
    sizes = []
    for n in (10, 1_000):
        tree = _tree(tmp_path / f"t{n}", n)
        built = build_bundle(tree, tmp_path / f"{n}.car", options=BuildOptions(manifest_version=2))
        manifest = load_bundle(str(built.car)).manifest
        sizes.append(len(str(manifest)))
        assert manifest["memory"]["count"] == n + 2  # the memories, the index, the day file
    assert abs(sizes[1] - sizes[0]) <= 8  # the digits of the count and the bytes, nothing per file


def test_a_sync_counts_the_conflicts_of_every_round_in_its_json(tmp_path: Path) -> None:
    """Issue 37: a round lost to another writer made the siblings, the next round merged them as its own tree, and
    ``--json`` said ``"conflicts": 0``."""
    a, b = _tree(tmp_path / "a", 3), tmp_path / "b"
    _writer(a)
    shutil.copytree(a, b)
    _warm(b)
    _edit(a, [1])
    (b / "note_000001.md").write_text(_text("note_000001", "B's own.", updated="2026-04-16T12:00:00Z", revision=2),
                                      "utf-8")
    _writer(a)  # a publishes its version of note 1; b's differs: a conflict when b merges it
    _edit(a, [2])
    report = sync(b, name_key=SIGNER, pinners=[HookedPinner(lambda: _writer(a))])  # a publishes again meanwhile
    assert report.attempts == 2 and report.conflicts == 1 and report.to_dict()["conflicts"] == 1
    assert len(list(b.glob("note_000001.conflict-*.md"))) == 1


def _hostile_child(tmp_path: Path, tree: Path, base: str, extra: dict[str, bytes], *, count: int = 0) -> str:
    """A bundlekit/2 bundle claiming ``base`` as its parent: ``tree``'s files plus ``extra`` (bundle paths), its
    count off by ``count``; imported into the store, as a gateway's blocks a sync kept would be."""
    with Memory(tree).transaction(lock=False) as tx:
        files = {f"memory/{path}": data for path, data in tx.files()}
    files.update(extra)
    prof = get_profile()
    manifest = make_manifest(namespace="agent", created=datetime(2026, 4, 15, tzinfo=UTC), profile=prof.name,
                             files={p: (b"", len(d)) for p, d in files.items()}, timeline=[], encryption=None,
                             parents=[base], version=2)
    manifest["memory"]["count"] += count
    car = tmp_path / "hostile.car"
    with CarFileWriter(car) as writer:
        root = import_tree([("manifest.json", canonical_json(manifest)), *files.items()], writer, prof).root
        writer.finish(root)
    with open(car, "rb") as fh:
        BlockStore().import_car(fh, pin=True)
    return cid_to_str(root)


@pytest.mark.parametrize(("extra", "count", "error"), [
    ({"memory/notes/escape.md": b"x"}, 0, ManifestError),
    ({"memory/timeline/not-a-day.md": b"x"}, 0, ManifestError),
    ({"memory/x.md.enc": b"x"}, 0, ManifestError),
    ({"memory/added.md": _text("added", "Added.").encode()}, 1, IntegrityError),
])
def test_a_merge_by_difference_refuses_what_a_load_refuses_and_writes_nothing(
    tmp_path: Path, extra: dict[str, bytes], count: int, error: type[Exception]
) -> None:
    tree = _tree(tmp_path / "t", 5)
    base = build_bundle(tree, tmp_path / "base.car", options=BuildOptions(manifest_version=2))
    with open(base.car, "rb") as fh:
        BlockStore().import_car(fh, pin=True)
    child = _hostile_child(tmp_path, tree, base.root_cid or "", extra, count=count)
    before = {p.name: p.read_bytes() for p in tree.glob("*.md")}
    with pytest.raises(error):
        merge_bundle(f"ipfs://{child}", tree)
    assert {p.name: p.read_bytes() for p in tree.glob("*.md")} == before


_TOUCH_NAMES = st.lists(st.text(alphabet="abAB._-Kéσ", min_size=1, max_size=5), max_size=6).map(
    lambda parts: [p + s for p in parts for s in ("", ".conflict-a1", ".CONFLICT-a1")])


@settings(max_examples=300, deadline=None)
@given(pool=_TOUCH_NAMES, picked=st.lists(st.integers(0, 40), max_size=14), changed_at=st.lists(st.integers(0, 40), max_size=4),
       upper=st.lists(st.booleans(), max_size=14))
def test_the_files_a_merge_reads_of_ours_are_found_by_search_as_a_walk_finds_them(
    pool: list[str], picked: list[int], changed_at: list[int], upper: list[bool],
) -> None:
    # ``_touched`` looks the changed files' siblings and case look-alikes up in the sorted listing (100,000 names at
    # 100,000 memories); what it finds is what testing every name finds.
    if not pool:
        return
    files = {pool[i % len(pool)] + ".md" for i in picked}
    files |= {name.upper() for name, up in zip(sorted(files), upper) if up}
    scan = Scan({name: (1, 2, 3) for name in files}, None)
    names = scan.names()
    changed = {pool[i % len(pool)] + ".md" for i in changed_at}
    stems, folded = {n[:-3] for n in changed}, {n.lower() for n in changed}
    walked = changed | {n for n in names if n.lower() in folded or n.split(".conflict-")[0] in stems}
    assert _touched(names, changed, scan.holding) == walked
