"""A load whose disk fills while it writes its temp tree (issue 37: ``_fs.TreeFiles`` writes it by ``os.write``
through folders opened once): one ``error:`` line and exit 1, no destination, no temp tree left, so no plaintext
of an encrypted bundle outlives the command."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from bundlekit import _fs

from .conftest import Run

PASS = {"BK_PASS": "correct horse battery staple"}


@pytest.mark.parametrize("encrypted", [False, True])
@pytest.mark.parametrize("after", [0, 2])
def test_a_disk_filling_mid_load_leaves_no_tree_and_no_plaintext(
    run: Run, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encrypted: bool, after: int
) -> None:
    car = tmp_path / "b.car"
    secret = ["--encrypt", "--passphrase-env", "BK_PASS"] if encrypted else []
    built = run("build", tree, "-o", car, *secret, env=PASS)
    assert built.exit_code == 0, built.stderr
    written = 0
    real = _fs.os.write

    def filling(fd: int, data: bytes | memoryview) -> int:
        nonlocal written
        written += 1
        if written > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(_fs.TreeFiles, "write", _writing_with(filling))
    out = tmp_path / "out" / "tree"
    result = run("load", car, "-o", out, *(["--passphrase-env", "BK_PASS"] if encrypted else []), env=PASS)
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and result.stdout == ""
    assert "No space left" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []  # no temp tree left


def _writing_with(write: object) -> object:
    original = _fs.TreeFiles.write

    def patched(self: _fs.TreeFiles, rel: str, data: bytes) -> None:
        saved = _fs.os.write
        _fs.os.write = write  # type: ignore[assignment]
        try:
            original(self, rel, data)
        finally:
            _fs.os.write = saved

    return patched
