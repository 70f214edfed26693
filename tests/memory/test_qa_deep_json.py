"""QA regressions: absurdly deep JSON is refused as malformed input, never a RecursionError traceback."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.errors import MemoryStoreError
from bundlekit.memory import Memory

DEEP = "[" * 5_000 + "]" * 5_000


@pytest.fixture(autouse=True)
def _default_recursion_limit() -> Iterator[None]:
    # Deeper than Python's default limit, shallow enough for the C stack whatever ran before.
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def test_import_of_deeply_nested_json_is_a_one_line_error(tmp_path: Path) -> None:
    blob = tmp_path / "deep.json"
    blob.write_text(DEEP)
    result = CliRunner().invoke(cli, ["memory", "-d", str(tmp_path / "m"), "import", str(blob)])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.stderr == f"error: {blob} is not a JSON export blob; export it again\n"


def test_deeply_nested_timeline_line_is_reported_as_invalid_json(tmp_path: Path) -> None:
    (tmp_path / "timeline").mkdir()
    (tmp_path / "timeline" / "2026-01-01.jsonl").write_text(DEEP + "\n")
    with pytest.raises(MemoryStoreError, match="line 1 is not valid JSON"):
        Memory(tmp_path).timeline()
