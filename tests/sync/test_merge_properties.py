"""Properties of the three-way merge (issue 28's evidence): random base trees, random edits on two sides.

Deterministic; merging a tree with itself or with its own ancestor changes nothing; merge(a, b) and
merge(b, a) give the same memories (a ``both`` conflict keeps the newer under the key either way, the
other under the sibling key named after where it came from); every memory a side edited or added is in
the result (under its key or as the conflict sibling), and every memory a side still holds is kept
unless the other side deleted it without changing it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.memory.merge import CONFLICT_OF, MergeOutcome, TreeState, merge_trees
from bundlekit.memory.record import MemoryRecord

from .conftest import line, record

KEYS = ("a", "b", "c", "d", "e")
OURS, THEIRS = "local", "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"
EDITS = ("keep", "keep", "body", "description", "tags", "delete")


def _at(minute: int) -> str:
    return f"2026-04-14T{12 + minute // 60:02d}:{minute % 60:02d}:00Z"


@st.composite
def _base(draw: st.DrawFn) -> dict[str, MemoryRecord]:
    keys = draw(st.sets(st.sampled_from(KEYS)))
    return {k: record(k, f"base {k}", tags=draw(st.lists(st.sampled_from("xyz"), unique=True))) for k in keys}


@st.composite
def _side(draw: st.DrawFn, base: dict[str, MemoryRecord], name: str) -> dict[str, MemoryRecord]:
    out: dict[str, MemoryRecord] = {}
    for key in KEYS:
        old = base.get(key)
        when = _at(draw(st.integers(1, 200)))
        if old is None:
            if draw(st.booleans()):
                out[key] = record(key, f"{name} added {key}", updated=when)
            continue
        edit = draw(st.sampled_from(EDITS))
        fields: dict[str, Any] = {"tags": old.tags}
        body = old.body
        if edit == "keep":
            out[key] = old
            continue
        if edit == "delete":
            continue
        if edit == "body":
            body = f"{name} body {key} {draw(st.integers(0, 2))}"
        elif edit == "description":
            fields["description"] = f"{name} description {draw(st.integers(0, 2))}"
        else:
            fields["tags"] = draw(st.lists(st.sampled_from("xyzw"), unique=True))
        out[key] = record(key, body, updated=when, revision=2, **fields)
    return out


def _days(draw: st.DrawFn, name: str, shared: list[bytes]) -> dict[str, bytes]:
    mine = [line(_at(draw(st.integers(0, 200))).replace("Z", ".000Z"), text=f"{name} {i}")
            for i in range(draw(st.integers(0, 3)))]
    lines = sorted(shared + mine, key=lambda b: (b[7:31], b))
    return {"2026-04-14.jsonl": b"".join(lines)} if lines else {}


@st.composite
def _three(draw: st.DrawFn) -> tuple[TreeState, TreeState, TreeState]:
    base = draw(_base())
    shared = [line("2026-04-14T11:00:00.000Z", text="shared")] if draw(st.booleans()) else []
    base_days = {"2026-04-14.jsonl": b"".join(shared)} if shared else {}
    ours = TreeState(OURS, draw(_side(base, "ours")), _days(draw, "ours", shared))
    theirs = TreeState(THEIRS, draw(_side(base, "theirs")), _days(draw, "theirs", shared))
    return TreeState("base", base, base_days), ours, theirs


def _memories(out: MergeOutcome) -> dict[str, str]:
    return {k: r.raw for k, r in out.records.items()}


@settings(max_examples=150, deadline=None)
@given(_three())
def test_merge_is_deterministic(trees: tuple[TreeState, TreeState, TreeState]) -> None:
    first, second = merge_trees(*trees), merge_trees(*trees)
    assert _memories(first) == _memories(second) and first.days == second.days
    assert first.report.to_dict() == second.report.to_dict()


@settings(max_examples=200, deadline=None)
@given(_three())
def test_merging_a_tree_with_itself_or_its_own_ancestor_changes_nothing(trees: tuple[TreeState, ...]) -> None:
    base, ours, _theirs = trees
    itself = merge_trees(ours, ours, TreeState(THEIRS, ours.records, ours.days))
    ancestor = merge_trees(base, ours, TreeState(THEIRS, base.records, base.days))
    assert itself.changes(ours) == ({}, {}) and ancestor.changes(ours) == ({}, {})


@settings(max_examples=150, deadline=None)
@given(_three())
def test_merge_is_symmetric_and_a_both_conflict_keeps_the_newer_under_the_key(trees: tuple[TreeState, ...]) -> None:
    base, ours, theirs = trees
    ab, ba = merge_trees(base, ours, theirs), merge_trees(base, theirs, ours)
    assert _memories(ab) == _memories(ba) and ab.days == ba.days
    for conflict in ab.report.conflicts:
        o, t = ours.records[conflict.key], theirs.records[conflict.key]
        newer = o if (o.updated, o.raw) > (t.updated, t.raw) else t
        assert ab.records[conflict.key].raw == newer.raw


@settings(max_examples=150, deadline=None)
@given(_three())
def test_no_edit_is_lost_and_only_unchanged_deleted_memories_go(trees: tuple[TreeState, ...]) -> None:
    base, ours, theirs = trees
    out = merge_trees(base, ours, theirs)
    for side, other in ((ours, theirs), (theirs, ours)):
        for key, mine in side.records.items():
            before = base.records.get(key)
            deleted_unchanged = key not in other.records and before is not None and before.raw == mine.raw
            if deleted_unchanged:
                continue
            assert key in out.records
            held = [r for r in out.records.values() if r.key == key or r.meta.get(CONFLICT_OF) == key]
            if before is None or mine.body != before.body:
                assert mine.body in {r.body for r in held}
            if before is None or mine.description != before.description:
                assert mine.description in {r.description for r in held}
        for name, data in side.days.items():
            new_lines = set(data.splitlines(keepends=True)) - set(base.days.get(name, b"").splitlines(keepends=True))
            assert new_lines <= set(out.days.get(name, b"").splitlines(keepends=True))
