"""Issue 37: a HAMT built again with a memo of its sub-shards (``hamt.encode_hamt``'s ``memo``,
``bundle.shardmemo``) is the HAMT a full build makes, byte for byte, after any adds, removes and changes, the
ones that split a sub-shard (a slot's entries colliding one level down) or merge it back included; and only the
sub-shards under slots whose entries did not change are taken from the memo, never written again.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.bundle.buildcache import CACHE_NAME
from bundlekit.bundle.shardmemo import ShardMemo
from bundlekit.ipld.cid import RAW, make_cid
from bundlekit.unixfs.hamt import Child, DirNode, encode_hamt, name_hash, slot_message
from bundlekit.unixfs.importer import ListSink
from bundlekit.unixfs.profiles import get_profile

PROFILE = get_profile()


class DictMemo:
    """A ``hamt.ShardMemo`` in a dict; ``held``: the blocks the reader has (those of the builds before)."""

    def __init__(self) -> None:
        self.nodes: dict[bytes, DirNode] = {}
        self.held: set[bytes] = set()
        self.found: list[bytes] = []

    def find(self, message: bytes) -> DirNode | None:
        node = self.nodes.get(message)
        if node is None or node.cid not in self.held:
            return None
        self.found.append(message)
        return node

    def keep(self, message: bytes, node: DirNode) -> None:
        self.nodes[message] = node


def _child(name: str, version: int) -> Child:
    data = f"{name} v{version}".encode()
    return Child(name.encode(), make_cid(1, RAW, data), len(data))


def _full(children: dict[str, Child]) -> tuple[DirNode, list[tuple[bytes, bytes]]]:
    sink = ListSink()
    return encode_hamt(list(children.values()), PROFILE, sink), sink.blocks


def _slots(children: dict[str, Child]) -> dict[int, list[Child]]:
    """The entries under each slot of the root, sorted by name."""
    slots: dict[int, list[Child]] = {}
    for child in sorted(children.values()):
        slots.setdefault(name_hash(child.name)[0], []).append(child)
    return slots


_OPS = st.lists(st.tuples(st.sampled_from(("add", "remove", "change")), st.integers(0, 5999), st.integers(1, 400)),
                min_size=1, max_size=5)


@settings(max_examples=15, deadline=None)
@given(ops=_OPS)
def test_a_hamt_built_with_a_memo_is_the_full_build_after_any_adds_removes_and_changes(
    ops: list[tuple[str, int, int]],
) -> None:
    # 3,000 entries: about 12 per slot of the root, so sub-shards hold sub-shards of their own; adding or
    # removing hundreds splits and merges them
    children = {f"note_{i:05d}.md": _child(f"note_{i:05d}.md", 0) for i in range(3000)}
    memo = DictMemo()
    sink = ListSink()
    first = encode_hamt(list(children.values()), PROFILE, sink, memo)
    assert first == _full(children)[0]
    memo.held.update(cid for cid, _data in sink.blocks)
    before = _slots(children)
    for step, (op, start, count) in enumerate(ops, start=1):
        names = [f"note_{i:05d}.md" for i in range(start, start + count)]
        if op == "add":
            children.update((name, _child(name, step)) for name in names)
        elif op == "remove":
            for name in names:
                children.pop(name, None)
        else:
            children.update((name, _child(name, step)) for name in names if name in children)
        memo.found.clear()
        sink = ListSink()
        built = encode_hamt(list(children.values()), PROFILE, sink, memo)
        full, every = _full(children)
        assert built == full, (step, op, start, count)
        written = {cid for cid, _data in sink.blocks}
        assert all(cid in written or cid in memo.held for cid, _data in every)  # the reader can walk it whole
        assert full.cid in written
        now = _slots(children)
        untouched = {slot_message(members, 1) for slot, members in now.items()
                     if len(members) > 1 and before.get(slot) == members}
        as_now = {slot_message(members, 1) for members in now.values() if len(members) > 1}
        # Every sub-shard under a slot whose entries are as they were is taken from the memo, and only sub-shards
        # whose entries are the slot's now: one an earlier build made for the same entries counts (a slot changed
        # and changed back), since its bytes are fixed by them.
        assert untouched <= set(memo.found) <= as_now
        before = now
        memo.held.update(written)


def test_a_memo_whose_blocks_the_reader_lacks_gives_every_block() -> None:
    children = {f"n{i}.md": _child(f"n{i}.md", 0) for i in range(2000)}
    memo = DictMemo()
    encode_hamt(list(children.values()), PROFILE, ListSink(), memo)
    sink = ListSink()
    built = encode_hamt(list(children.values()), PROFILE, sink, memo)  # held: nothing
    full, every = _full(children)
    assert built == full and memo.found == []
    assert {cid for cid, _data in sink.blocks} == {cid for cid, _data in every}


def test_an_unchanged_directory_takes_every_sub_shard_from_the_memo() -> None:
    children = {f"n{i}.md": _child(f"n{i}.md", 0) for i in range(2000)}
    memo = DictMemo()
    sink = ListSink()
    encode_hamt(list(children.values()), PROFILE, sink, memo)
    memo.held.update(cid for cid, _data in sink.blocks)
    again = ListSink()
    assert encode_hamt(list(children.values()), PROFILE, again, memo) == _full(children)[0]
    assert len(again.blocks) == 1  # the root block alone: every slot of more than one entry found


def test_a_memo_row_whose_cid_was_swapped_is_never_taken(tmp_path: Path) -> None:
    # attack37w: a row's tag is sealed under the user's key but its cid and tsize were not: a row of the user's
    # own, edited in the tree's cache to name another sub-shard the reader holds, put that one in the built root
    children = {f"note_{i:05d}.md": _child(f"note_{i:05d}.md", 0) for i in range(3000)}
    tree = tmp_path / "tree"
    tree.mkdir()
    held: set[bytes] = set()
    memo = ShardMemo(tree, held.__contains__)
    sink = ListSink()
    encode_hamt(list(children.values()), PROFILE, sink, memo)
    memo.save()
    held.update(cid for cid, _data in sink.blocks)
    with closing(sqlite3.connect(tree / CACHE_NAME)) as db, db:
        rows = db.execute("SELECT tag, cid, tsize FROM shards ORDER BY tag").fetchall()
        assert len(rows) > 2
        (tag_a, cid_a, size_a), (tag_b, cid_b, size_b) = rows[0], rows[1]
        db.execute("UPDATE shards SET cid = ?, tsize = ? WHERE tag = ?", (cid_b, size_b, tag_a))
        db.execute("UPDATE shards SET cid = ?, tsize = ? WHERE tag = ?", (cid_a, size_a, tag_b))
    again = encode_hamt(list(children.values()), PROFILE, ListSink(), ShardMemo(tree, held.__contains__))
    assert again == _full(children)[0]
