"""QA regression: a garbage CID is refused with a message that says what a CID looks like."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.errors import CIDError
from bundlekit.ipld.cid import parse_cid


def test_parse_cid_error_says_what_to_give() -> None:
    with pytest.raises(CIDError, match=r"not a valid CID: 'garbage'; give a CID string such as bafy"):
        parse_cid("garbage")


def test_store_unpin_of_garbage_is_a_one_line_usage_error(tmp_path: object) -> None:
    result = CliRunner().invoke(cli, ["store", "--store", str(tmp_path), "unpin", "garbage"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "give a CID string" in result.stderr
