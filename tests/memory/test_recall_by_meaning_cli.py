"""`memory recall --rank semantic|hybrid` and `memory context --query`: which ranking was used (stderr and
--json), and the usage error without the `semantic` extra (exit 2, naming it) in a real `bundlekit` process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bundlekit.cli import cli
from tests.embed.trees import memory_tree

# A `bundlekit` process as installed without the extra: importlib.util.find_spec answers None for wordllama.
WITHOUT_EXTRA = "import sys; sys.modules['wordllama'] = None; from bundlekit.cli import main; main()"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("BUNDLEKIT_MEMORY_DIR", "BUNDLEKIT_EMBEDDER", "BUNDLEKIT_EMBED_URL", "BUNDLEKIT_EMBED_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return memory_tree(tmp_path / "memory", ("reel", "deploy"))


def run(tree: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["memory", "-d", str(tree), *args])


def test_recall_ranks_hybrid_by_default_and_says_so(tree: Path) -> None:
    result = run(tree, "recall", "where are the videos", "--json")
    assert result.exit_code == 0, result.output
    assert "ranked by hybrid" in result.stderr
    hits = json.loads(result.stdout)
    assert hits[0]["key"] == "reel" and {hit["ranking"] for hit in hits} == {"hybrid"}


def test_recall_rank_semantic_finds_by_meaning(tree: Path) -> None:
    result = run(tree, "recall", "where are the videos", "--rank", "semantic")
    assert result.exit_code == 0 and result.stdout.split("\t")[1] == "reel"
    assert "ranked by semantic" in result.stderr


def test_context_query_orders_by_meaning_and_says_so(tree: Path) -> None:
    result = run(tree, "context", "--query", "publish a new version")
    assert result.exit_code == 0 and "ranked by hybrid" in result.stderr
    assert result.stdout.index("(`deploy.md`)") < result.stdout.index("(`reel.md`)")


def test_context_rank_without_query_is_a_usage_error(tree: Path) -> None:
    assert run(tree, "context", "--rank", "semantic").exit_code == 2


def _without_extra(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_EXTRA, "memory", "-d", str(tree), *args],
                          capture_output=True, text=True, timeout=120)


def test_without_the_extra_rank_semantic_is_a_usage_error_naming_it(tree: Path) -> None:
    done = _without_extra(tree, "recall", "videos", "--rank", "semantic")
    assert done.returncode == 2 and "'semantic'" in done.stderr and "Traceback" not in done.stderr


def test_without_the_extra_recall_ranks_by_salience_as_before(tree: Path) -> None:
    done = _without_extra(tree, "recall", "match clips")
    assert done.returncode == 0 and done.stdout.split("\t")[1] == "reel"
    assert done.stderr == "ranked by salience\n"
