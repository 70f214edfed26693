"""Issue 37: the importer's fast paths for a build's files imported already give the slow paths' CIDs and blocks.

``import_many`` makes a one-chunk raw-leaf file's CID from the digest its caller took (no second hash, no call per
file); ``import_tree`` forwards the blocks of files imported already in batches (``put_many``) and, without
``list_files``, lists only directories. For every profile (CIDv0 and v1, raw leaves on and off, each HAMT rule), chunk
sizes around the files' sizes and trees that shard or not, each must equal what the per-file path makes, byte for
byte and block for block, in the same order.
"""

from __future__ import annotations

import dataclasses
import hashlib

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.errors import UsageError
from bundlekit.unixfs.hamt import Child, slot_message
from bundlekit.unixfs.importer import Imported, ListSink, Source, import_bytes, import_many, import_tree
from bundlekit.unixfs.profiles import PROFILES, Profile, get_profile

_NAMES = st.text(alphabet="abcdefgh-_.é0123", min_size=1, max_size=8).filter(lambda n: n not in (".", ".."))


def _profile(name: str, chunk: int, raw: bool | None) -> Profile:
    return get_profile(name, chunk_size=chunk, raw_leaves=raw)


class _BatchSink(ListSink):
    """A sink that takes batches too (as a build's thin CAR writer and the block store do)."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0

    def put_many(self, blocks: list[tuple[bytes, bytes]]) -> None:
        self.batches += 1
        self.blocks.extend(blocks)


@settings(max_examples=150, deadline=None)
@given(
    profile=st.sampled_from(sorted(PROFILES)),
    raw=st.sampled_from([None, True, False]),
    chunk=st.integers(min_value=1, max_value=48),
    files=st.lists(st.tuples(st.binary(max_size=120), st.booleans()), max_size=12),
)
def test_import_many_equals_import_bytes_of_each_file(
    profile: str, raw: bool | None, chunk: int, files: list[tuple[bytes, bool]]
) -> None:
    prof = _profile(profile, chunk, raw)
    given_digests = [(data, hashlib.sha256(data).digest() if known else None) for data, known in files]
    assert import_many(given_digests, prof) == [import_bytes(data, prof) for data, _known in files]


@settings(max_examples=120, deadline=None)
@given(
    profile=st.sampled_from(sorted(PROFILES)),
    raw=st.sampled_from([None, True, False]),
    threshold_small=st.booleans(),
    tree=st.dictionaries(
        st.lists(_NAMES, min_size=1, max_size=3).map("/".join), st.binary(max_size=90), max_size=40
    ),
)
def test_a_tree_of_files_imported_already_is_the_tree_of_their_bytes(
    profile: str, raw: bool | None, threshold_small: bool, tree: dict[str, bytes]
) -> None:
    prof = _profile(profile, 64, raw)
    if threshold_small:  # shard (nearly) every directory: the HAMT's rules under each profile
        prof = dataclasses.replace(prof, hamt_threshold=40 if prof.hamt != "count" else 2)
    paths = _consistent(tree)
    slow_sink, fast_sink, plain_sink = ListSink(), _BatchSink(), ListSink()
    slow = import_tree([(p, tree[p]) for p in paths], slow_sink, prof)
    imported: list[tuple[str, Source]] = [(p, import_bytes(tree[p], prof, hashlib.sha256(tree[p]).digest()))
                                          for p in paths]
    fast = import_tree(imported, fast_sink, prof, list_files=False)
    plain = import_tree(imported, plain_sink, prof)
    assert fast.root == slow.root == plain.root
    assert fast_sink.blocks == slow_sink.blocks == plain_sink.blocks  # the same blocks, in the same order
    assert (fast.blocks, fast.bytes) == (slow.blocks, slow.bytes)
    assert plain.entries == slow.entries
    assert fast.entries == [entry for entry in slow.entries if entry.kind == "directory"]


def test_a_batch_is_one_hand_over_per_run_of_files_imported_already() -> None:
    prof = get_profile()
    files: list[tuple[str, Source]] = [(f"m/{i:03d}.md", import_bytes(b"x%d" % i, prof)) for i in range(300)]
    sink = _BatchSink()
    result = import_tree(files, sink, prof, list_files=False)
    assert sink.batches == 1  # the 300 files of m/, then m/ and the root one at a time
    assert len(sink.blocks) == 302 and sink.blocks[-1][0] == result.root


def test_a_block_two_files_share_is_forwarded_once() -> None:
    prof = get_profile()
    same = import_bytes(b"the same bytes", prof)
    sink = _BatchSink()
    result = import_tree([("a.md", same), ("b.md", Imported(same.cid, same.size, same.tsize, same.blocks))],
                         sink, prof)
    assert [cid for cid, _data in sink.blocks].count(same.cid) == 1
    assert result.blocks == 2


def _consistent(tree: dict[str, bytes]) -> list[str]:
    """The paths of ``tree`` that can be files together (none also a directory of another), sorted."""
    kept: list[str] = []
    for path in sorted(tree, key=len):
        parts = path.split("/")
        prefixes = {"/".join(parts[:i]) for i in range(1, len(parts))}
        if any(p in prefixes or p.startswith(path + "/") for p in kept):
            continue
        kept.append(path)
    return sorted(kept)


def _reference_tree(paths: list[str]) -> str:
    """What the per-part walk import_tree had before folders were found once says of ``paths``: "ok", or its error."""
    root: dict[str, object] = {}
    for path in paths:
        parts = path.split("/")
        if "" in parts or "." in parts or ".." in parts or "\\" in path or "\0" in path:
            return f"invalid path {path!r} in import tree: use '/'-separated names without '.', '..' or empty parts"
        node = root
        for part in parts[:-1]:
            if part in node and not isinstance(node[part], dict):
                return f"{path!r} is both a file and a directory in the import tree"
            node = node.setdefault(part, {})  # type: ignore[assignment]
        if parts[-1] in node:
            return f"duplicate path {path!r} in the import tree"
        node[parts[-1]] = b""
    return "ok"


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet="ab/.\\\0", max_size=7), max_size=8))
def test_paths_are_refused_as_the_per_part_walk_refused_them(paths: list[str]) -> None:
    expected = _reference_tree(paths)
    if expected == "ok":
        import_tree([(p, b"") for p in paths], ListSink(), get_profile())
        return
    with pytest.raises(UsageError) as caught:
        import_tree([(p, b"") for p in paths], ListSink(), get_profile())
    assert str(caught.value) == expected


_CHILDREN = st.lists(st.tuples(st.binary(min_size=1, max_size=6), st.binary(max_size=5), st.integers(0, 1 << 40)),
                     max_size=5, unique_by=lambda entry: entry[0])


@settings(max_examples=400, deadline=None)
@given(first=_CHILDREN, second=_CHILDREN, version=st.sampled_from([0, 1]))
def test_a_slot_message_tells_its_entries_apart(first: list[tuple[bytes, bytes, int]],
                                               second: list[tuple[bytes, bytes, int]], version: int) -> None:
    """Two slots' messages are equal exactly when they hold the same entries (in any order): the memo's key."""
    one, two = [Child(*entry) for entry in first], [Child(*entry) for entry in second]
    same = sorted(first) == sorted(second)
    assert (slot_message(one, version) == slot_message(two[::-1], version)) == same
    assert slot_message(one, 0) != slot_message(one, 1)
