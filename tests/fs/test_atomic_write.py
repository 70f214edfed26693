"""The one atomic write helper: modes, cleanup on failure, the caller's error class, the directory form."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from bundlekit import _fs
from bundlekit._fs import (
    AtomicFile,
    atomic_directory,
    atomic_write,
    atomic_write_bytes,
    is_temp_name,
)
from bundlekit.errors import CARError, ConvertError, LoadError, MemoryStoreError


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_027() -> Iterator[None]:
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


def test_written_bytes_land_at_the_path(tmp_path: Path) -> None:
    atomic_write_bytes(tmp_path / "f", b"data", error=ConvertError)
    assert (tmp_path / "f").read_bytes() == b"data"


def test_a_new_file_mode_follows_the_umask(tmp_path: Path, umask_027: None) -> None:
    atomic_write_bytes(tmp_path / "f", b"x", error=ConvertError)
    assert _mode(tmp_path / "f") == 0o640


def test_replacing_a_file_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    target.chmod(0o604)
    atomic_write_bytes(target, b"new", error=ConvertError)
    assert target.read_bytes() == b"new"
    assert _mode(target) == 0o604


def test_an_explicit_mode_is_applied_exactly(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    target.chmod(0o644)
    atomic_write_bytes(target, b"secret", error=ConvertError, mode=0o600)
    assert _mode(target) == 0o600


def test_a_failure_mid_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_write(target, error=ConvertError) as fh:
        fh.write(b"half")
        raise RuntimeError("crash in the middle")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f"]


def test_an_os_error_mid_write_is_the_callers_error_naming_the_path(tmp_path: Path) -> None:
    target = tmp_path / "f"
    with (
        pytest.raises(MemoryStoreError, match=f"cannot write {target}: No space left on device"),
        atomic_write(target, error=MemoryStoreError),
    ):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert os.listdir(tmp_path) == []


def test_the_hint_follows_the_reason(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ConvertError, match=r": Is a directory; choose another output path$"):
        atomic_write_bytes(tmp_path / "d", b"x", error=ConvertError, hint="choose another output path")


def test_a_file_in_the_way_of_the_parent_is_said_plainly(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(CARError, match="a file is in the way where a directory is needed"):
        atomic_write_bytes(tmp_path / "afile" / "sub" / "f", b"x", error=CARError, parents=True)


def test_a_failed_rename_is_the_callers_error_and_removes_the_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(src: object, dst: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(_fs.os, "replace", refuse)
    with pytest.raises(LoadError, match="Read-only file system"):
        atomic_write_bytes(tmp_path / "f", b"x", error=LoadError)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_a_read_only_directory_gives_the_callers_error(tmp_path: Path) -> None:
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(ConvertError, match=f"cannot write {locked / 'f'}: Permission denied"):
            atomic_write_bytes(locked / "f", b"x", error=ConvertError)
    finally:
        locked.chmod(0o755)


def test_a_refused_temp_file_gives_the_callers_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a read-only directory does, simulated so that it also runs as root."""

    def refuse(path: object, flags: int, mode: int = 0o777) -> int:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(_fs.os, "open", refuse)
    with pytest.raises(ConvertError, match=f"cannot write {tmp_path / 'f'}: Permission denied"):
        atomic_write_bytes(tmp_path / "f", b"x", error=ConvertError)


def test_the_temp_file_is_hidden_beside_the_target_and_recognisable(tmp_path: Path) -> None:
    pending = AtomicFile(tmp_path / "out.car", error=CARError)
    try:
        assert pending.temp.parent == tmp_path
        assert pending.temp.name.startswith(f".out.car.{os.getpid()}.")
        assert is_temp_name(pending.temp.name)
    finally:
        pending.discard()
    assert os.listdir(tmp_path) == []


def test_ordinary_names_are_not_temp_names() -> None:
    assert not is_temp_name("bafkreiabc")
    assert not is_temp_name(".hidden.tmp")
    assert not is_temp_name("MEMORY.md")


def test_a_commit_can_follow_an_explicit_sync_and_close(tmp_path: Path) -> None:
    pending = AtomicFile(tmp_path / "f", error=CARError)
    pending.file.write(b"batched")
    pending.close()
    pending.sync()
    assert pending.commit() == tmp_path / "f"
    assert (tmp_path / "f").read_bytes() == b"batched"
    assert os.listdir(tmp_path) == ["f"]


def test_a_guarded_os_error_discards_the_temp_and_names_the_path(tmp_path: Path) -> None:
    pending = AtomicFile(tmp_path / "f", error=CARError)
    with pytest.raises(CARError, match=f"cannot write {tmp_path / 'f'}: Input/output error"), pending.guard():
        raise OSError(errno.EIO, os.strerror(errno.EIO))
    assert os.listdir(tmp_path) == []


def test_parents_are_created_on_request(tmp_path: Path) -> None:
    atomic_write_bytes(tmp_path / "a" / "b" / "f", b"x", error=ConvertError, parents=True)
    assert (tmp_path / "a" / "b" / "f").read_bytes() == b"x"


def test_a_directory_appears_only_when_complete(tmp_path: Path) -> None:
    dest = tmp_path / "tree"
    with atomic_directory(dest, error=LoadError) as tmp:
        (tmp / "a.md").write_text("a")
        assert not dest.exists()
        assert is_temp_name(tmp.name) and tmp.parent == tmp_path
    assert (dest / "a.md").read_text() == "a"
    assert os.listdir(tmp_path) == ["tree"]


def test_a_failed_directory_leaves_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "tree"
    with pytest.raises(RuntimeError), atomic_directory(dest, error=LoadError) as tmp:
        (tmp / "a.md").write_text("a")
        raise RuntimeError("crash in the middle")
    assert os.listdir(tmp_path) == []


def test_a_directory_replaces_an_empty_directory_and_keeps_its_mode(tmp_path: Path) -> None:
    dest = tmp_path / "tree"
    dest.mkdir()
    dest.chmod(0o750)
    with atomic_directory(dest, error=LoadError) as tmp:
        (tmp / "a.md").write_text("a")
    assert (dest / "a.md").read_text() == "a"
    assert _mode(dest) == 0o750


def test_a_new_directory_mode_follows_the_umask(tmp_path: Path, umask_027: None) -> None:
    with atomic_directory(tmp_path / "tree", error=LoadError):
        pass
    assert _mode(tmp_path / "tree") == 0o750


def test_a_directory_is_private_while_it_is_filled(tmp_path: Path) -> None:
    with atomic_directory(tmp_path / "tree", error=LoadError) as tmp:
        assert _mode(tmp) == 0o700


def test_a_directory_over_one_with_content_is_the_callers_error(tmp_path: Path) -> None:
    dest = tmp_path / "tree"
    dest.mkdir()
    (dest / "old").write_text("keep me")
    with (
        pytest.raises(LoadError, match=f"cannot write {dest}"),
        atomic_directory(dest, error=LoadError) as tmp,
    ):
        (tmp / "new").write_text("x")
    assert os.listdir(dest) == ["old"]
    assert os.listdir(tmp_path) == ["tree"]


def test_replace_any_swaps_a_directory_with_content(tmp_path: Path) -> None:
    dest = tmp_path / "tree"
    dest.mkdir()
    (dest / "old").write_text("x")
    with atomic_directory(dest, error=LoadError, replace_any=True) as tmp:
        (tmp / "new").write_text("x")
    assert os.listdir(dest) == ["new"]
    assert os.listdir(tmp_path) == ["tree"]


def test_a_directory_under_a_file_is_the_callers_error(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with (
        pytest.raises(LoadError, match="a file is in the way"),
        atomic_directory(tmp_path / "afile" / "tree", error=LoadError, parents=True),
    ):
        pass


def test_a_failed_swap_puts_the_original_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dest = tmp_path / "tree"
    dest.mkdir()
    (dest / "old").write_text("keep me")
    real_rename = os.rename

    def refuse_the_new_tree(src: str | Path, dst: str | Path) -> None:
        if Path(dst) == dest and is_temp_name(Path(src).name):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_rename(src, dst)

    monkeypatch.setattr(_fs.os, "rename", refuse_the_new_tree)
    with (
        pytest.raises(LoadError, match="Input/output error"),
        atomic_directory(dest, error=LoadError, replace_any=True) as tmp,
    ):
        (tmp / "new").write_text("x")
    monkeypatch.undo()
    assert (dest / "old").read_text() == "keep me"
    assert os.listdir(tmp_path) == ["tree"]
