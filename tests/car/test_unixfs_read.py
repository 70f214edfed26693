"""UnixFSReader: files of every layout, directories, HAMT shards, resolve, walk, and rejections."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.errors import (
    BlockMismatch,
    CodecError,
    DAGLimitExceeded,
    MissingBlock,
    PathNotFound,
    UnsafePathError,
    UnsupportedBlock,
)
from bundlekit.ipld.cid import DAG_PB, make_cid
from bundlekit.ipld.dagpb import DIRECTORY, FILE, HAMT_SHARD, SYMLINK, PBLink, UnixFSData, encode_node
from bundlekit.unixfs.reader import UnixFSReader, _plain_entries, check_name

from .conftest import Blocks

Tree = tuple[Blocks, bytes, dict[str, bytes]]
CONTENT = bytes(range(256)) * 5


def _read(blocks: Blocks, cid: bytes) -> bytes:
    return b"".join(UnixFSReader(blocks.get).iter_file(cid))


def test_raw_block_reads_as_whole_file(blocks: Blocks) -> None:
    assert _read(blocks, blocks.raw(b"tiny")) == b"tiny"


def test_dag_pb_leaf_with_data_reads_back(blocks: Blocks) -> None:
    assert _read(blocks, blocks.file(b"abc", raw_leaves=False)) == b"abc"


def test_empty_file_reads_as_nothing(blocks: Blocks) -> None:
    assert _read(blocks, blocks.file(b"")) == b""


@pytest.mark.parametrize("raw_leaves", [True, False])
@pytest.mark.parametrize("fanout", [2, 3, 174])
def test_balanced_tree_streams_content_in_order(blocks: Blocks, raw_leaves: bool, fanout: int) -> None:
    cid = blocks.file(CONTENT, chunk=7, raw_leaves=raw_leaves, fanout=fanout)
    assert _read(blocks, cid) == CONTENT


def test_node_data_comes_before_its_children(blocks: Blocks) -> None:
    # Trickle-style: a node carrying data of its own and a child.
    child = blocks.raw(b"-tail")
    root = blocks.node([PBLink(child, b"", 5)], UnixFSData(FILE, data=b"head", filesize=9, blocksizes=[5]))
    assert _read(blocks, root) == b"head-tail"


def test_stat_reports_kind_and_size(sample_tree: Tree) -> None:
    blocks, root, files = sample_tree
    reader = UnixFSReader(blocks.get)
    assert reader.stat(root).kind == "directory"
    big = reader.resolve(root, "big.bin")
    assert (reader.stat(big).kind, reader.stat(big).size) == ("file", len(files["big.bin"]))
    assert reader.stat(blocks.raw(b"xy")).kind == "raw"


def test_filesize_disagreeing_with_blocksizes_is_rejected(blocks: Blocks) -> None:
    leaf = blocks.raw(b"abc")
    root = blocks.node([PBLink(leaf, b"", 3)], UnixFSData(FILE, filesize=4, blocksizes=[3]))
    with pytest.raises(CodecError, match="filesize"):
        _read(blocks, root)


def test_child_size_disagreeing_with_blocksize_is_rejected(blocks: Blocks) -> None:
    leaf = blocks.raw(b"abcd")
    root = blocks.node([PBLink(leaf, b"", 4)], UnixFSData(FILE, filesize=3, blocksizes=[3]))
    with pytest.raises(CodecError, match="says 3"):
        _read(blocks, root)


def test_links_without_matching_blocksizes_are_rejected(blocks: Blocks) -> None:
    leaf = blocks.raw(b"abc")
    root = blocks.node([PBLink(leaf, b"", 3)], UnixFSData(FILE, filesize=0))
    with pytest.raises(CodecError, match="blocksizes"):
        _read(blocks, root)


def test_file_linking_to_a_directory_is_rejected(blocks: Blocks) -> None:
    d = blocks.directory({})
    root = blocks.node([PBLink(d, b"", 4)], UnixFSData(FILE, filesize=0, blocksizes=[0]))
    with pytest.raises(CodecError, match="links to a directory"):
        _read(blocks, root)


def test_file_read_verifies_every_block(blocks: Blocks) -> None:
    cid = blocks.file(CONTENT, chunk=64)
    leaf = next(c for c, d in blocks.blocks.items() if d == CONTENT[64:128])
    blocks.blocks[leaf] = bytes(64)
    with pytest.raises(BlockMismatch):
        _read(blocks, cid)


def test_file_read_reports_missing_leaf(blocks: Blocks) -> None:
    cid = blocks.file(CONTENT, chunk=64)
    leaf = next(c for c, d in blocks.blocks.items() if d == CONTENT[:64])
    del blocks.blocks[leaf]
    with pytest.raises(MissingBlock):
        _read(blocks, cid)


def test_over_deep_file_is_rejected(blocks: Blocks) -> None:
    node = blocks.raw(b"x")
    for _ in range(30):
        node = blocks.node([PBLink(node, b"", 1)], UnixFSData(FILE, filesize=1, blocksizes=[1]))
    with pytest.raises(DAGLimitExceeded):
        b"".join(UnixFSReader(blocks.get, max_depth=10).iter_file(node))


def test_iter_file_of_a_directory_is_path_not_found(sample_tree: Tree) -> None:
    blocks, root, _ = sample_tree
    with pytest.raises(PathNotFound, match="not a file"):
        list(UnixFSReader(blocks.get).iter_file(root))


def test_list_dir_keeps_stored_order(sample_tree: Tree) -> None:
    blocks, root, _ = sample_tree
    names = [n for n, _ in UnixFSReader(blocks.get).list_dir(root)]
    assert names == ["a.md", "big.bin", "empty.txt", "sub", "void"]


def test_hamt_directory_lists_entries_sorted_through_sub_shards(blocks: Blocks) -> None:
    entries = {f"n{i}": blocks.raw(str(i).encode()) for i in range(5)}
    shard = blocks.hamt(entries)
    assert UnixFSReader(blocks.get).list_dir(shard) == sorted(entries.items())


def test_hamt_resolve_finds_entry_in_sub_shard(blocks: Blocks) -> None:
    entries = {f"n{i}": blocks.raw(str(i).encode()) for i in range(5)}
    root = blocks.directory({"d": blocks.hamt(entries)})
    assert UnixFSReader(blocks.get).resolve(root, "d/n0") == entries["n0"]


def _shard(blocks: Blocks, links: list[PBLink], bits: int, fanout: int = 256, hash_type: int = 0x22) -> bytes:
    data = bits.to_bytes(max(1, (bits.bit_length() + 7) // 8), "big")
    return blocks.node(links, UnixFSData(HAMT_SHARD, data=data, hash_type=hash_type, fanout=fanout))


def test_hamt_link_name_with_lowercase_hex_is_rejected(blocks: Blocks) -> None:
    shard = _shard(blocks, [PBLink(blocks.raw(b"1"), b"0afile", 1)], 1 << 10)
    with pytest.raises(CodecError, match="uppercase hex"):
        UnixFSReader(blocks.get).list_dir(shard)


def test_hamt_link_disagreeing_with_bitfield_is_rejected(blocks: Blocks) -> None:
    shard = _shard(blocks, [PBLink(blocks.raw(b"1"), b"0Afile", 1)], 1 << 3)
    with pytest.raises(CodecError, match="bitfield"):
        UnixFSReader(blocks.get).list_dir(shard)


def test_hamt_with_unknown_hash_is_unsupported(blocks: Blocks) -> None:
    shard = _shard(blocks, [PBLink(blocks.raw(b"1"), b"00file", 1)], 1, hash_type=0x12)
    with pytest.raises(UnsupportedBlock, match="murmur3"):
        UnixFSReader(blocks.get).list_dir(shard)


def test_hamt_with_non_power_of_two_fanout_is_rejected(blocks: Blocks) -> None:
    shard = _shard(blocks, [PBLink(blocks.raw(b"1"), b"00file", 1)], 1, fanout=100)
    with pytest.raises(CodecError, match="fanout"):
        UnixFSReader(blocks.get).list_dir(shard)


def test_hamt_sub_shard_that_is_a_plain_directory_is_rejected(blocks: Blocks) -> None:
    shard = _shard(blocks, [PBLink(blocks.directory({}), b"00", 1)], 1)
    with pytest.raises(CodecError, match="not a HAMT shard"):
        UnixFSReader(blocks.get).list_dir(shard)


def test_hamt_duplicate_names_across_shards_are_rejected(blocks: Blocks) -> None:
    one = blocks.raw(b"1")
    sub = _shard(blocks, [PBLink(one, b"00same", 1)], 1)
    shard = _shard(blocks, [PBLink(sub, b"00", 1), PBLink(one, b"01same", 1)], 0b11)
    with pytest.raises(UnsafePathError, match="duplicate"):
        UnixFSReader(blocks.get).list_dir(shard)


@pytest.mark.parametrize("name", [b"", b".", b"..", b"../etc", b"a/b", b"a\\b", b"a\x00b", b"\xff\xfe"])
def test_unsafe_link_names_are_refused(blocks: Blocks, name: bytes) -> None:
    root = blocks.directory([(name, blocks.raw(b"x"))])
    with pytest.raises(UnsafePathError):
        UnixFSReader(blocks.get).list_dir(root)


def test_unsafe_name_error_names_the_name_and_directory(blocks: Blocks) -> None:
    bad = blocks.directory([(b"..", blocks.raw(b"x"))])
    root = blocks.directory({"inner": bad})
    with pytest.raises(UnsafePathError, match=r"'\.\.' in directory 'inner'"):
        list(UnixFSReader(blocks.get).walk(root))


def test_duplicate_names_in_one_directory_are_refused(blocks: Blocks) -> None:
    root = blocks.directory([(b"same", blocks.raw(b"1")), (b"same", blocks.raw(b"2"))])
    with pytest.raises(UnsafePathError, match="duplicate link name 'same'"):
        UnixFSReader(blocks.get).list_dir(root)


def test_check_name_accepts_unicode_and_dots_inside_names() -> None:
    assert check_name("ünï.côdé..md".encode(), "") == "ünï.côdé..md"


@settings(max_examples=500)
@given(st.binary(max_size=12) | st.text(alphabet=st.sampled_from("ab./\\\0é -~"), max_size=8).map(str.encode))
def test_check_name_accepts_exactly_the_safe_utf8_names(name: bytes) -> None:
    # The rule of check_name's docstring, stated here on its own: the plain-ASCII shortcut must agree with it.
    try:
        text = name.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    safe = text is not None and name not in (b"", b".", b"..") and not any(c in name for c in (b"/", b"\\", b"\0"))
    if safe:
        assert check_name(name, "d") == text
    else:
        with pytest.raises(UnsafePathError):
            check_name(name, "d")


@settings(max_examples=500)
@given(st.lists(st.sampled_from([b"a", b"b.md", b"", b".", b"..", b"a/b", b"\\", b"\0", "é".encode(), b"x y", b"/"]),
                max_size=6))
def test_plain_directory_shortcut_lists_what_the_name_checks_accept(names: list[bytes]) -> None:
    # _plain_entries may only answer when check_name and the duplicate check would accept every
    # name, and must then give what they give; otherwise it leaves the directory to them.
    links = [PBLink(make_cid(1, DAG_PB, bytes([i])), name, 0) for i, name in enumerate(names)]
    got = _plain_entries(links)
    try:
        careful = [(check_name(name, "d"), link.cid) for name, link in zip(names, links, strict=True)]
    except UnsafePathError:
        careful = None
    if careful is not None and len({n for n, _ in careful}) != len(careful):
        careful = None
    if got is not None:
        assert got == careful


@settings(max_examples=500)
@given(st.lists(st.binary(max_size=4) | st.sampled_from([b"a", b"a/", b"/a", b"a//b", b"a\n", b"\x7f", b"~", b"."]),
                max_size=5))
def test_plain_directory_shortcut_agrees_with_the_name_checks_on_any_bytes(names: list[bytes]) -> None:
    # Any bytes, separators and controls included: the shortcut answers only with what check_name and
    # the duplicate check give, and it does answer for unique printable-ASCII names.
    links = [PBLink(make_cid(1, DAG_PB, bytes([i])), name, 0) for i, name in enumerate(names)]
    try:
        careful: list[tuple[str, bytes]] | None = [
            (check_name(name, "d"), link.cid) for name, link in zip(names, links, strict=True)
        ]
    except UnsafePathError:
        careful = None
    if careful is not None and len({n for n, _ in careful}) != len(careful):
        careful = None
    got = _plain_entries(links)
    if got is not None:
        assert got == careful
    plain = all(name.isascii() and all(0x20 <= b < 0x7F and b not in b"/\\" for b in name) for name in names)
    if careful is not None and names and plain:
        assert got == careful


def test_plain_directory_shortcut_takes_a_usual_directory() -> None:
    links = [PBLink(make_cid(1, DAG_PB, bytes([i])), f"mem_{i}.md".encode(), 0) for i in range(3)]
    assert _plain_entries(links) == [(f"mem_{i}.md", link.cid) for i, link in enumerate(links)]


def test_resolve_walks_nested_path(sample_tree: Tree) -> None:
    blocks, root, files = sample_tree
    reader = UnixFSReader(blocks.get)
    assert b"".join(reader.iter_file(reader.resolve(root, "sub/deeper/c.txt"))) == files["sub/deeper/c.txt"]


def test_resolve_of_empty_path_is_the_root(sample_tree: Tree) -> None:
    blocks, root, _ = sample_tree
    assert UnixFSReader(blocks.get).resolve(root, "") == root


def test_resolve_missing_entry_is_path_not_found(sample_tree: Tree) -> None:
    blocks, root, _ = sample_tree
    with pytest.raises(PathNotFound, match="'nope' in sub"):
        UnixFSReader(blocks.get).resolve(root, "sub/nope")


def test_resolve_through_a_file_is_path_not_found(sample_tree: Tree) -> None:
    blocks, root, _ = sample_tree
    with pytest.raises(PathNotFound, match="not a directory"):
        UnixFSReader(blocks.get).resolve(root, "a.md/x")


def test_resolve_refuses_dot_dot_segments(sample_tree: Tree) -> None:
    blocks, root, _ = sample_tree
    with pytest.raises(UnsafePathError):
        UnixFSReader(blocks.get).resolve(root, "sub/../a.md")


def test_walk_lists_every_entry_pre_order_with_kind_and_size(sample_tree: Tree) -> None:
    blocks, root, files = sample_tree
    listing = [(p, k, s) for p, _c, k, s in UnixFSReader(blocks.get).walk(root)]
    assert listing == [
        ("", "directory", 0),
        ("a.md", "file", len(files["a.md"])),
        ("big.bin", "file", len(files["big.bin"])),
        ("empty.txt", "file", 0),
        ("sub", "directory", 0),
        ("sub/b.txt", "file", len(files["sub/b.txt"])),
        ("sub/deeper", "directory", 0),
        ("sub/deeper/c.txt", "file", 1),
        ("void", "directory", 0),
    ]


def test_listing_sums_sizes_into_directories(sample_tree: Tree) -> None:
    blocks, root, files = sample_tree
    sizes = {p: s for p, _c, _k, s in UnixFSReader(blocks.get).listing(root)}
    assert sizes[""] == sum(map(len, files.values()))
    assert sizes["sub"] == len(files["sub/b.txt"]) + len(files["sub/deeper/c.txt"])
    assert sizes["sub/deeper"] == 1
    assert sizes["void"] == 0


def test_walk_stops_at_the_entry_limit(blocks: Blocks) -> None:
    node = blocks.raw(b"x")
    for _ in range(20):  # 2**20 paths through a diamond of shared directories
        node = blocks.directory({"l": node, "r": node})
    with pytest.raises(DAGLimitExceeded, match="more than 1000 entries"):
        list(UnixFSReader(blocks.get, max_entries=1000).walk(node))


def test_walk_stops_at_the_depth_limit(blocks: Blocks) -> None:
    node = blocks.raw(b"x")
    for _ in range(20):
        node = blocks.directory({"d": node})
    with pytest.raises(DAGLimitExceeded, match="deeper than 5"):
        list(UnixFSReader(blocks.get, max_depth=5).walk(node))


def test_symlink_is_reported_as_symlink(blocks: Blocks) -> None:
    link = blocks.node([], UnixFSData(SYMLINK, data=b"/etc/passwd"))
    root = blocks.directory({"ln": link})
    assert [k for _p, _c, k, _s in UnixFSReader(blocks.get).walk(root)] == ["directory", "symlink"]


def test_dag_pb_node_without_unixfs_data_is_rejected(blocks: Blocks) -> None:
    data = encode_node([], None)
    cid = make_cid(1, DAG_PB, data)
    blocks.put(cid, data)
    with pytest.raises(CodecError, match="without UnixFS Data"):
        UnixFSReader(blocks.get).stat(cid)


def test_directory_cid_v0_is_read(blocks: Blocks) -> None:
    leaf = blocks.file(b"v0!", raw_leaves=False)
    root = blocks.node([PBLink(leaf, b"f", blocks.tsize(leaf))], UnixFSData(DIRECTORY), version=0)
    assert UnixFSReader(blocks.get).list_dir(root) == [("f", leaf)]
