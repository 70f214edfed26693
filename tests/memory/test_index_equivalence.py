"""On random trees, recall, list and context through the derived index equal a full rescan of the files."""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundlekit.memory import Memory, indexer, ranking
from bundlekit.memory.index import list_line
from bundlekit.memory.files import read_tree_files
from bundlekit.memory.index import render_index
from bundlekit.memory.record import MEMORY_TYPES, render_memory_file

NOW = datetime(2026, 4, 14, 12, 0, tzinfo=UTC)
WORDS = ["kick", "Pass", "drill", "KNEE", "ß", "straße", "İstanbul", "rondo", "\u00e9t\u00e9", "a", "sprint", "x\"y"]

text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
memory_st = st.fixed_dictionaries(
    {
        "name": text,
        "description": text,
        "type": st.sampled_from(MEMORY_TYPES),
        "body": st.lists(text, max_size=4).map("\n".join),
        "age_hours": st.integers(0, 24 * 200),
        "important": st.booleans(),
        "tags": st.lists(st.sampled_from(["t1", "t2", "t3", "t4", "t5"]), max_size=5, unique=True),
        "decay": st.sampled_from([None, "never", "30d", "90d"]),
    }
)
trees = st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), memory_st, min_size=0, max_size=12)
queries = st.one_of(st.sampled_from(WORDS), text, st.text(alphabet="aeiknrst ßİ", min_size=1, max_size=4))


def _write(root: Path, tree: dict[str, dict[str, object]]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for key, m in tree.items():
        updated = (NOW - timedelta(hours=int(m["age_hours"]))).strftime("%Y-%m-%dT%H:%M:%SZ")  # type: ignore[call-overload]
        meta = {"name": m["name"], "description": m["description"], "type": m["type"]}
        meta |= {"created": "2025-01-01T00:00:00Z", "updated": updated, "revision": 1}
        if m["important"]:
            meta["important"] = True
        if m["tags"]:
            meta["tags"] = m["tags"]
        if m["decay"]:
            meta["decay"] = m["decay"]
        (root / f"{key}.md").write_text(render_memory_file(meta, str(m["body"])), encoding="utf-8")


def _rescan(root: Path) -> list:  # type: ignore[type-arg]
    records = read_tree_files({p.name: p.read_bytes() for p in root.glob("*.md") if p.name != "MEMORY.md"}).records
    return [records[k] for k in sorted(records)]


def _compare(memory: Memory, root: Path, query: str, tokens: int) -> None:
    records = _rescan(root)
    assert [r.raw for r in memory.list()] == [r.raw for r in records]
    assert memory.list_lines() == [list_line(r) for r in records]
    if query.strip():
        assert memory.recall(query, limit=4) == ranking.recall(records, query, NOW, 4)
    expected = ranking.context_block(render_index(records), ranking.ranked_records(records, NOW), iter([]), tokens)
    assert memory.context_block(tokens) == expected


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=trees, second=trees, query=queries, tokens=st.integers(0, 400))
def test_index_answers_equal_a_full_rescan_before_and_after_hand_edits(
    first: dict[str, dict[str, object]], second: dict[str, dict[str, object]], query: str, tokens: int
) -> None:
    root = Path(tempfile.mkdtemp()) / "memory"
    try:
        _write(root, first)
        memory = Memory(root, clock=lambda: NOW)
        _compare(memory, root, query, tokens)
        # Edit, add and delete by hand between commands; the same instance and a new one both follow.
        for path in root.glob("*.md"):
            if path.name != "MEMORY.md" and path.stem not in second:
                path.unlink()
        _write(root, second)
        _compare(Memory(root, clock=lambda: NOW), root, query, tokens)
        # The same instance trusts its last full check for REUSE_S after an edit in place; past it, it follows too.
        reuse, indexer.REUSE_S = indexer.REUSE_S, 0.0
        try:
            _compare(memory, root, query, tokens)
        finally:
            indexer.REUSE_S = reuse
    finally:
        shutil.rmtree(root.parent)
