"""QA regression: a three.ws file of absurdly deep JSON is a ConvertError, not a RecursionError."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bundlekit.convert.threews import read_threews
from bundlekit.errors import ConvertError

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


def test_deep_json_file_is_not_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    with pytest.raises(ConvertError, match="is not a JSON file"):
        read_threews(path)


def test_deep_json_in_a_local_storage_value_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "ls.json"
    path.write_text(json.dumps({"agent:a1:memory": DEEP}))
    with pytest.raises(ConvertError, match="is not JSON"):
        read_threews(path, agent_id="a1")


def test_deeply_nested_yaml_frontmatter_is_malformed(tmp_path: Path) -> None:
    from bundlekit.convert._common import load_yaml

    with pytest.raises(ConvertError, match="malformed YAML frontmatter in a.md"):
        load_yaml("tags: " + "[" * 3_000 + "]" * 3_000 + "\n", where="a.md")
