"""Journey: an agent recalls, reads what it found, and finds it first next time (issue 38, "Usage that ranks").

Each line is typed as a person types it at the CLI, a fresh process per command, on a tree of memories
that tie for the question (the same words, type and age): the first recall orders them by key; the agent
reads the second with ``memory show``; the next ``recall`` and ``context --query`` put it first, and
``--no-usage-boost`` gives the order without it. Nothing of this is in the memory files: it lives in the
derived index (specs/memory.md, "Usage that ranks").
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from bundlekit.memory import Memory
from tests.memory.test_usage import TWINS as MEMORIES  # two that tie for the question, three others

ROOT = Path(__file__).resolve().parents[2]


def _bundlekit(tree: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BUNDLEKIT_MEMORY_DIR": str(tree)}
    done = subprocess.run([sys.executable, "-m", "bundlekit", *args], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _first_two(tree: Path, *flags: str) -> list[str]:
    hits = json.loads(_bundlekit(tree, "memory", "recall", "where does the water drip", "--rank", "relevance",
                                 "--json", *flags))
    return [hit["key"] for hit in hits][:2]


def test_a_memory_read_after_a_recall_comes_first_next_time(tmp_path: Path) -> None:
    tree = tmp_path / "memory"
    mem = Memory(tree)
    for key, (name, description, body) in MEMORIES.items():
        mem.write(key, name=name, description=description, type="project", body=body)
    mem.close()
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tree.glob("*.md")}

    assert _first_two(tree) == ["leak_a", "leak_b"]  # a tie: by key
    assert "bathroom sink drips" in _bundlekit(tree, "memory", "show", "leak_b")
    assert _first_two(tree) == ["leak_b", "leak_a"]
    block = _bundlekit(tree, "memory", "context", "--query", "where does the water drip", "--rank", "relevance")
    assert block.index("(`leak_b.md`)") < block.index("(`leak_a.md`)")
    assert _first_two(tree, "--no-usage-boost") == ["leak_a", "leak_b"]
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tree.glob("*.md")} == files
