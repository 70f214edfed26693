"""The importer's filesystem walk and virtual-tree API."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import BinaryIO

import pytest

from bundlekit.errors import SourceError, UsageError
from bundlekit.ipld.cid import cid_to_str, verify_block
from bundlekit.unixfs.importer import ListSink, NullSink, import_file, import_path, import_tree
from bundlekit.unixfs.profiles import get_profile


def _tree(root: Path) -> Path:
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"a")
    (root / "sub" / "b.txt").write_bytes(b"b" * 5000)
    (root / "sub" / "deep" / "c.txt").write_bytes(b"c")
    (root / "empty").mkdir()
    return root


def _paths(root: Path, **kwargs: object) -> dict[str, str]:
    result = import_path(root, NullSink(), get_profile(), **kwargs)  # type: ignore[arg-type]
    return {e.path: e.kind for e in result.entries}


def test_root_is_the_directory_itself_and_comes_last(tmp_path: Path) -> None:
    result = import_path(_tree(tmp_path), NullSink(), get_profile())
    assert result.entries[-1].path == "" and result.entries[-1].cid == result.root
    assert result.entries[-1].kind == "directory"


def test_every_file_and_directory_gets_an_entry(tmp_path: Path) -> None:
    assert _paths(_tree(tmp_path)) == {
        "a.txt": "file", "sub/b.txt": "file", "sub/deep/c.txt": "file",
        "sub/deep": "directory", "sub": "directory", "empty": "directory", "": "directory",
    }


def test_a_file_path_imports_as_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"hello world")
    result = import_path(tmp_path / "f", NullSink(), get_profile())
    assert cid_to_str(result.root) == "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"


def test_dot_files_are_skipped_by_default(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / ".secret").write_bytes(b"s")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_bytes(b"h")
    assert not any(p.startswith(".") for p in _paths(tmp_path))


def test_hidden_true_includes_dot_files(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / ".secret").write_bytes(b"s")
    assert ".secret" in _paths(tmp_path, hidden=True)


def test_symlinks_are_skipped_with_a_warning(tmp_path: Path) -> None:
    _tree(tmp_path)
    os.symlink(tmp_path / "a.txt", tmp_path / "link")
    os.symlink("/etc", tmp_path / "dirlink")
    result = import_path(tmp_path, NullSink(), get_profile())
    assert {e.path for e in result.entries}.isdisjoint({"link", "dirlink"})
    assert any("'link'" in w and "symbolic link" in w for w in result.warnings)
    assert any("'dirlink'" in w for w in result.warnings)


def test_symlink_as_the_root_is_refused(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    os.symlink(_tree(tmp_path / "t"), tmp_path / "root-link")
    with pytest.raises(SourceError, match="symlinks are not followed"):
        import_path(tmp_path / "root-link", NullSink(), get_profile())


def test_missing_path_raises_source_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="nope"):
        import_path(tmp_path / "nope", NullSink(), get_profile())


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file regardless of permissions")
def test_unreadable_file_raises_source_error_naming_it(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "a.txt").chmod(0)
    with pytest.raises(SourceError, match="a.txt"):
        import_path(tmp_path, NullSink(), get_profile())


def test_failing_source_raises_source_error_naming_the_path() -> None:
    class Broken(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer: object) -> int:
            raise OSError(5, "Input/output error")

    with pytest.raises(SourceError, match="notes/x.md"):
        import_tree([("notes/x.md", lambda: Broken())], NullSink(), get_profile())  # type: ignore[list-item,return-value]


def test_non_utf8_name_raises_source_error(tmp_path: Path) -> None:
    _tree(tmp_path)
    fd = os.open(os.fsencode(tmp_path) + b"/bad-\xff.txt", os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
    with pytest.raises(SourceError, match="UTF-8"):
        import_path(tmp_path, NullSink(), get_profile())


def test_ipfs_car_profile_drops_empty_directories(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "only-empty" / "inner").mkdir(parents=True)
    paths = set(_paths_for(tmp_path, "ipfs-car"))
    assert "empty" not in paths and "only-empty" not in paths and "sub/deep" in paths


def _paths_for(root: Path, profile: str) -> list[str]:
    return [e.path for e in import_path(root, NullSink(), get_profile(profile)).entries]


def test_blocks_are_emitted_once_and_verify(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "dup.txt").write_bytes(b"a")  # same content as a.txt
    sink = ListSink()
    result = import_path(tmp_path, sink, get_profile(chunk_size=1024))
    cids = [cid for cid, _ in sink.blocks]
    assert len(cids) == len(set(cids)) == result.blocks
    assert sum(len(d) for _, d in sink.blocks) == result.bytes
    for cid, data in sink.blocks:
        verify_block(cid, data)


def test_children_are_emitted_before_parents(tmp_path: Path) -> None:
    sink = ListSink()
    result = import_path(_tree(tmp_path), sink, get_profile())
    assert sink.blocks[-1][0] == result.root


def test_import_tree_equals_import_path_on_the_same_tree(tmp_path: Path) -> None:
    _tree(tmp_path)
    files = [("a.txt", b"a"), ("sub/b.txt", b"b" * 5000), ("sub/deep/c.txt", b"c")]
    for profile in ("unixfs-v1-2025", "unixfs-v0-2015", "ipfs-car"):
        virtual = import_tree(files, NullSink(), get_profile(profile), dirs=["empty"])
        disk = import_path(tmp_path, NullSink(), get_profile(profile))
        assert virtual.root == disk.root


def test_import_tree_accepts_paths_and_openers(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"content")
    def opener() -> BinaryIO:
        return open(tmp_path / "f", "rb")  # the importer closes what the opener returns

    a = import_tree([("x", tmp_path / "f"), ("y", opener)], NullSink(), get_profile())
    b = import_tree([("x", b"content"), ("y", b"content")], NullSink(), get_profile())
    assert a.root == b.root


@pytest.mark.parametrize("bad", ["", "/abs", "a//b", "a/./b", "../x", "a\\b", "nul\0"])
def test_import_tree_refuses_malformed_paths(bad: str) -> None:
    with pytest.raises(UsageError):
        import_tree([(bad, b"x")], NullSink(), get_profile())


def test_import_tree_refuses_duplicates() -> None:
    with pytest.raises(UsageError, match="duplicate"):
        import_tree([("a", b"1"), ("a", b"2")], NullSink(), get_profile())


def test_import_tree_refuses_a_file_that_is_also_a_directory() -> None:
    with pytest.raises(UsageError):
        import_tree([("a", b"1"), ("a/b", b"2")], NullSink(), get_profile())


def test_import_file_counts_content_and_dag_sizes() -> None:
    entry = import_file(io.BytesIO(b"x" * 3000), NullSink(), get_profile(chunk_size=1000))
    assert entry.size == 3000 and entry.tsize > 3000 and entry.kind == "file" and entry.path == ""


def test_same_input_gives_the_same_bytes(tmp_path: Path) -> None:
    _tree(tmp_path)
    first, second = ListSink(), ListSink()
    import_path(tmp_path, first, get_profile())
    import_path(tmp_path, second, get_profile())
    assert first.blocks == second.blocks


def test_failing_stream_in_import_file_raises_source_error() -> None:
    class Broken(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer: object) -> int:
            raise OSError(5, "Input/output error")

    with pytest.raises(SourceError, match="Input/output error"):
        import_file(Broken(), NullSink(), get_profile())  # type: ignore[arg-type]
