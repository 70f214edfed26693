"""Magic Context databases read and written by the plugin's rules.

``fixtures/interop/magic-context`` comes from its ``generate.py``: the schema is
the plugin's own DDL (``storage-db.ts`` ``memories``, ``migrations.ts`` v80
``memory_stats``), the hashes and identities were computed by the plugin's own
``computeNormalizedHash`` and ``resolveProjectIdentity`` under bun
(ahrav/magic-context 413bb72a1729e384f6d8628f60ae8007b75a60aa).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.convert.magic_context import (
    DEFAULT_IMPORTANCE,
    directory_identity,
    normalized_hash,
    project_identity,
    read_magic_context,
    write_magic_context,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "interop" / "magic-context"
EXPECTED: dict[str, Any] = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
DB = FIXTURES / "context.db"
PROJECT = EXPECTED["project"]


def by_id(db: Path = DB) -> dict[int, Any]:
    tree = read_magic_context(db, project=PROJECT, clock=lambda: __import__("datetime").datetime(2026, 6, 1))
    return {e.meta["x-magic-context-id"]: e for e in tree.entries}


@pytest.mark.parametrize("content", list(EXPECTED["hashes"]))
def test_normalized_hash_is_the_plugins(content: str) -> None:
    assert normalized_hash(content) == EXPECTED["hashes"][content]


def _generator() -> ModuleType:
    """The fixture generator, for the one repository recipe it shares with this test."""
    spec = importlib.util.spec_from_file_location("mc_generate", FIXTURES / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_identity_of_a_repository_with_two_roots_is_the_smallest_root(tmp_path: Path) -> None:
    roots = _generator().two_root_repo(tmp_path / "repo")  # fixed dates: the shas the plugin saw
    assert sorted(roots) == sorted(EXPECTED["roots"])
    assert project_identity(tmp_path / "repo") == EXPECTED["identities"]["two_roots"] == f"git:{min(roots)}"


def test_identity_outside_git_is_the_plugins() -> None:
    plain = EXPECTED["identities"]["plain_dir"]
    assert directory_identity(plain["path"]) == plain["identity"]


def test_only_live_rows_of_the_project_are_read_and_the_rest_is_reported() -> None:
    tree = read_magic_context(DB, project=PROJECT)
    assert sorted(e.meta["x-magic-context-id"] for e in tree.entries) == [1, 2, 3]
    assert any(
        "1 archived or other status" in w and "1 expired" in w and "1 of other projects" in w
        for w in tree.warnings
    )


def test_memory_stats_give_the_counts_and_the_effective_update_time() -> None:
    e = by_id()[1]
    assert (e.meta["x-magic-context-seen-count"], e.meta["x-magic-context-retrieval-count"]) == (7, 3)
    assert e.meta["updated"] == "2026-01-04T00:00:00Z"
    assert e.meta["x-magic-context-base-updated-at"] == 1_767_312_000_000


def test_importance_is_an_integer_and_null_stays_null() -> None:
    rows = by_id()
    assert rows[1].meta["x-magic-context-importance"] == 80
    assert "x-magic-context-importance" not in rows[2].meta
    assert DEFAULT_IMPORTANCE == 50


def test_edge_contents_come_back_exactly() -> None:
    rows = by_id()
    assert rows[2].body == 'Never write "done" before the tests ran --- ask first.'
    assert rows[3].body == "Use kebab-case for\u00a0CLI  command names.\n"


def test_export_writes_the_plugins_schema_and_hashes(tmp_path: Path) -> None:
    tree = read_magic_context(DB, project=PROJECT)
    out = tmp_path / "out.db"
    write_magic_context(tree, out)
    conn = sqlite3.connect(out)
    try:
        cols = {r[1]: (r[2], r[4]) for r in conn.execute("PRAGMA table_info(memories)")}
        ref = sqlite3.connect(DB)
        want = {r[1]: (r[2], r[4]) for r in ref.execute("PRAGMA table_info(memories)")}
        ref.close()
        assert cols == want
        for content, digest in conn.execute("SELECT content, normalized_hash FROM memories"):
            assert digest == EXPECTED["hashes"][content]
        stats = dict(conn.execute("SELECT memory_id, updated_at FROM memory_stats"))
        base = dict(conn.execute("SELECT id, updated_at FROM memories"))
    finally:
        conn.close()
    assert stats[1] == 1_767_484_800_000 and base[1] == 1_767_312_000_000


def test_repo_with_zero_matching_memories_exits_non_zero(tmp_path: Path) -> None:
    plain = tmp_path / "elsewhere"
    plain.mkdir()
    db = tmp_path / "context.db"
    shutil.copy(DB, db)
    result = CliRunner().invoke(
        cli, ["convert", "--from", "magic-context", str(db), "--repo", str(plain), "-o", str(tmp_path / "t")]
    )
    assert result.exit_code == 1
    assert "no memories" in result.stderr and PROJECT in result.stderr
