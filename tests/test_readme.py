"""README promises that must stay true: the two set-up commands and the command list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bundlekit.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_ci_runs_exactly_the_readme_test_command() -> None:
    test_command = "python -m pip install -e '.[test]' && python -m pytest"
    assert f"    {test_command}\n" in README
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_readme_first_command_pins_the_bundled_fixture() -> None:
    assert "    python -m pip install . && bundlekit pin fixtures/memory\n" in README
    assert (ROOT / "fixtures" / "memory" / "MEMORY.md").is_file()


def test_readme_names_every_command() -> None:
    table = README[README.index("## Commands") :]
    named = set(re.findall(r"`([a-z]+)`", table[: table.index("\n## ", 3)]))
    assert set(COMMANDS) <= named


def test_readme_python_api_builds_the_named_bundle_and_loads_it_into_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    section = README[README.index("## Python API") :]
    start = section.index("```python\n") + len("```python\n")
    code = section[start : section.index("```", start)]
    local = code[: code.index("forked = ")]  # the last line needs a running gateway
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    exec(local, scope)  # noqa: S102 - the README's own example, run as a reader would
    result = scope["result"]
    assert result.manifest["namespace"] == "coach"  # type: ignore[attr-defined]
    assert result.manifest_uri == f"ipfs://{result.root_cid}/manifest.json"  # type: ignore[attr-defined]
    assert (tmp_path / "restored" / "user_role.md").is_file()
