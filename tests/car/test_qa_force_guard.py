"""QA regression: --force never replaces the current directory, its parents, or home."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.errors import UsageError
from bundlekit.ipld.cid import RAW, make_cid
from bundlekit.unixfs.unpack import unpack

DATA = b"hello"
CID = make_cid(1, RAW, DATA)


def _get(cid: bytes) -> bytes:
    assert cid == CID
    return DATA


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "work" / "inner"
    work.mkdir(parents=True)
    (work / "keep.txt").write_text("precious")
    monkeypatch.chdir(work)
    return work


def test_force_refuses_the_current_directory(workdir: Path) -> None:
    with pytest.raises(UsageError, match="refusing to replace"):
        unpack(_get, CID, ".", force=True)
    assert (workdir / "keep.txt").read_text() == "precious"


def test_force_refuses_a_parent_of_the_current_directory(workdir: Path) -> None:
    with pytest.raises(UsageError, match="refusing to replace"):
        unpack(_get, CID, workdir.parent, force=True)
    assert (workdir / "keep.txt").exists()


def test_force_refuses_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "keep.txt").write_text("precious")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="refusing to replace"):
        unpack(_get, CID, home, force=True)
    assert (home / "keep.txt").exists()


def test_force_still_replaces_an_ordinary_occupied_output(workdir: Path) -> None:
    target = workdir / "out"
    target.mkdir()
    (target / "old.txt").write_text("old")
    unpack(_get, CID, target, force=True)
    assert target.read_bytes() == DATA
