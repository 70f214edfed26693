"""A URI or ``--gateway`` that httpx cannot parse is a usage error, not a traceback (issue 12, item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Run

CID = "bafybeibaxstr6kbnpp45puzgkdmtnx37yjoeqccpcp4qg27mzip2hxq7fy"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["load", "https://bafy.ipfs.localhost:X/"], "URI 'https://bafy.ipfs.localhost:X/'"),
        (["load", CID, "--gateway", "http://[::1"], "--gateway 'http://[::1'"),
        (["fork", f"https://h:X/ipfs/{CID}", "{dest}"], "URI"),
        (["diff", "https://h:X/manifest.json", "{dest}"], "URI"),
    ],
    ids=["load-uri", "load-gateway", "fork-uri", "diff-uri"],
)
def test_an_unparseable_url_exits_2_naming_it(args: list[str], named: str, run: Run, tmp_path: Path) -> None:
    result = run(*[a.format(dest=tmp_path / "dest") for a in args])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"error: {named}")
    assert "is not a valid URL" in result.stderr
    assert result.stdout == ""
