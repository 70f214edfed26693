"""The embedder registry: the built-ins found by name without an entry-point scan, as pyproject.toml registers them."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bundlekit.embed.protocol import EmbedderSettings, semantic_installed
from bundlekit.embed.registry import BUILT_IN, ENTRY_POINT_GROUP, create_embedder
from bundlekit.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]


def test_the_built_ins_are_the_entry_points_pyproject_registers() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"][ENTRY_POINT_GROUP] == BUILT_IN


@pytest.mark.skipif(not semantic_installed(), reason="the semantic extra is not installed")
def test_the_default_embedder_is_made_without_reading_entry_points_or_importing_numpy() -> None:
    code = ("import sys\n"
            "from bundlekit.embed.protocol import EmbedderSettings\n"
            "from bundlekit.embed.registry import create_embedder\n"
            "embedder = create_embedder(EmbedderSettings())\n"
            "print(embedder.name, 'importlib.metadata' in sys.modules, 'numpy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["wordllama", "False", "False"]


def test_a_name_not_built_in_is_looked_for_among_the_entry_points_and_named_when_missing() -> None:
    with pytest.raises(UsageError, match="no embedder named 'nonesuch' is registered .available: openai, wordllama"):
        create_embedder(EmbedderSettings(name="nonesuch"))
