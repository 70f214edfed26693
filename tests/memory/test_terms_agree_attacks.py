"""The first index's terms rows inserted from the values given to ``search`` (issue 37, ``StatCache.put``), not read
back from it, attacked by many writes, rewrites, forgets, hand edits and a rebuild: the ``terms`` index holds the
stems, with their memory and occurrence counts, of an index built from scratch over the same files (SQLite 3.40's
integrity-check does not compare an external-content index with its content), and recall answers as that one."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from bundlekit.memory import Memory
from bundlekit.memory.catalog import CATALOG_FILE
from bundlekit.memory.naming import HIDDEN_DIR

WORDS = ["kick", "drills", "volley", "Sprint", "rondo", "naïve", "café", "running", "runs", "ünïcode", "x" * 40]
QUERIES = ["kick", "running", "cafe", "unicode", "sprint drills", "volley naive"]


def _vocabulary(tree: Path) -> list[tuple[str, int, int]]:
    """Each stem of the ``terms`` index with the memories and times it occurs in (``terms_df``, fts5vocab 'row'):
    what the index holds, read from the index itself, free of rowids."""
    with sqlite3.connect(tree / HIDDEN_DIR / CATALOG_FILE) as conn:
        if not conn.execute("SELECT value FROM state WHERE name = 'fts'").fetchone()[0]:
            pytest.skip("SQLite here has no FTS5")
        rows = conn.execute("SELECT term, doc, cnt FROM terms_df ORDER BY term").fetchall()
    conn.close()
    return rows


def _recalled(tree: Path) -> list[list[str]]:
    mem = Memory(tree)
    try:
        return [[hit.key for hit in mem.recall(query)] for query in QUERIES]
    finally:
        mem.close()


def _text(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


@pytest.mark.parametrize("seed", range(4))
def test_terms_and_search_agree_after_many_writes_edits_and_forgets(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    tree = tmp_path / "tree"
    for step in range(60):
        key = f"k{rng.randrange(25)}"
        mem = Memory(tree)
        try:
            action = rng.randrange(5)
            if action == 0 and mem.read(key) is not None:
                mem.forget(key)
            elif action == 1 and (tree / f"{key}.md").exists():  # a hand edit: a new size, an old mtime
                path = tree / f"{key}.md"
                path.write_text(path.read_text(encoding="utf-8") + _text(rng, 3) + "\n", encoding="utf-8")
                os.utime(path, ns=(10**18 + step, 10**18 + step))
            else:
                mem.write(key, name=_text(rng, 2), description=_text(rng, 3), type="user", body=_text(rng, 8))
        finally:
            mem.close()
        if step % 10 == 9:
            recalled, vocabulary = _recalled(tree), _vocabulary(tree)
            fresh = tmp_path / f"fresh{step}"
            shutil.copytree(tree, fresh)
            shutil.rmtree(fresh / HIDDEN_DIR)
            assert recalled == _recalled(fresh)
            assert vocabulary == _vocabulary(fresh)
