"""QA regressions: unpack under a file says that a file is in the way, and leaves nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bundlekit.errors import BundlekitError
from bundlekit.ipld.cid import RAW, make_cid
from bundlekit.unixfs.unpack import unpack


def test_unpack_under_a_file_names_the_problem(tmp_path: Path) -> None:
    data = b"hello"
    cid = make_cid(1, RAW, data)
    blocks = {cid: data}
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    with pytest.raises(BundlekitError, match="a file is in the way where a directory is needed"):
        unpack(blocks.__getitem__, cid, blocker / "sub" / "out")
    assert sorted(os.listdir(tmp_path)) == ["afile"]
