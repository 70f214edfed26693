"""The merge rules of specs/sync.md, one per test, on trees held in memory (memory/merge.py), and the base search."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bundlekit.bundle.merge import find_base
from bundlekit.errors import ConflictError, UsageError
from bundlekit.memory.merge import CONFLICT_FROM, CONFLICT_OF, TreeState, merge_trees, sibling_key
from bundlekit.memory.naming import MAX_KEY_LENGTH
from bundlekit.memory.record import MemoryRecord
from bundlekit.memory.timeline import version_digest

from .conftest import line, record, state

THEIRS = "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"
B = record("k", "base body")
NOW = datetime(2026, 4, 16, 12, 0, tzinfo=UTC)


def test_a_change_on_theirs_only_is_taken() -> None:
    t = record("k", "theirs body", updated="2026-04-15T00:00:00Z", revision=2)
    out = merge_trees(state("base", B), state("local", B), state(THEIRS, t))
    assert out.records["k"] == t and [(e.action, e.source) for e in out.report.entries] == [("updated", "theirs")]


def test_a_change_on_ours_only_is_kept_and_not_reported() -> None:
    o = record("k", "ours body", revision=2)
    out = merge_trees(state("base", B), state("local", o), state(THEIRS, B))
    assert out.records["k"] == o and out.report.entries == []


def test_the_same_change_on_both_sides_is_taken_without_a_conflict() -> None:
    same = record("k", "same body", revision=2)
    out = merge_trees(state("base", B), state("local", same), state(THEIRS, same))
    assert out.records == {"k": same} and out.report.conflicts == []


def test_a_both_conflict_keeps_the_newer_under_the_key_and_the_other_as_a_named_sibling() -> None:
    o = record("k", "ours body", updated="2026-04-16T00:00:00Z", revision=2)
    t = record("k", "theirs body", updated="2026-04-15T00:00:00Z", revision=2)
    out = merge_trees(state("base", B), state("local", o), state(THEIRS, t))
    sibling = sibling_key("k", version_digest(t.raw))
    assert sibling == f"k.conflict-{version_digest(t.raw)[:10]}"
    assert out.records["k"] == o
    kept = out.records[sibling]
    assert kept.body == "theirs body" and kept.meta[CONFLICT_OF] == "k" and CONFLICT_FROM not in kept.meta
    assert [c.to_dict() for c in out.report.conflicts] == [
        {"key": "k", "resolution": "both", "winner": "ours", "sibling": sibling}]


@pytest.mark.parametrize(("policy", "winner"), [("newer", "theirs"), ("ours", "ours"), ("theirs", "theirs")])
def test_newer_ours_and_theirs_keep_one_side_and_no_sibling(policy: str, winner: str) -> None:
    o = record("k", "ours body", updated="2026-04-15T00:00:00Z", revision=2)
    t = record("k", "theirs body", updated="2026-04-16T00:00:00Z", revision=2)
    out = merge_trees(state("base", B), state("local", o), state(THEIRS, t), on_conflict=policy)
    assert out.records == {"k": o if winner == "ours" else t}
    assert out.report.conflicts[0].winner == winner and out.report.conflicts[0].sibling is None


def test_fail_refuses_a_conflict_naming_the_key() -> None:
    o, t = record("k", "ours body", revision=2), record("k", "theirs body", revision=2)
    with pytest.raises(ConflictError, match="'k'"):
        merge_trees(state("base", B), state("local", o), state(THEIRS, t), on_conflict="fail")


def test_an_unknown_policy_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="on-conflict"):
        merge_trees(TreeState.empty(), TreeState.empty(), TreeState.empty(), on_conflict="mine")


def test_different_fields_changed_on_each_side_merge_with_revision_above_both() -> None:
    o = record("k", "base body", updated="2026-04-15T00:00:00Z", revision=3, description="ours description")
    t = record("k", "theirs body", updated="2026-04-16T00:00:00Z", revision=2)
    out = merge_trees(state("base", B), state("local", o), state(THEIRS, t))
    merged = out.records["k"]
    assert (merged.description, merged.body) == ("ours description", "theirs body")
    assert merged.revision == 4 and merged.meta["updated"] == "2026-04-16T00:00:00Z"
    assert out.report.conflicts == [] and out.report.entries[0].action == "merged"


def test_different_fields_changed_at_the_last_revision_are_a_conflict_keeping_both() -> None:
    last = 2**63 - 1  # a frontmatter integer stops at 64 bits: no revision is left above both
    o = record("k", "base body", updated="2026-04-15T00:00:00Z", revision=last, description="ours description")
    t = record("k", "theirs body", updated="2026-04-16T00:00:00Z", revision=last)
    out = merge_trees(state("base", B), state("local", o), state(THEIRS, t))
    assert out.report.conflicts[0].winner == "theirs" and out.records["k"] == t
    assert out.records[sibling_key("k", version_digest(o.raw))].description == "ours description"


def test_tags_changed_on_both_sides_are_a_three_way_set_union() -> None:
    base = record("k", tags=["a", "b"])
    o = record("k", tags=["a", "b", "ours"], revision=2)
    t = record("k", tags=["b", "theirs"], revision=2)  # theirs removed "a"
    out = merge_trees(state("base", base), state("local", o), state(THEIRS, t))
    assert out.records["k"].tags == ["b", "ours", "theirs"] and out.report.conflicts == []


def test_deleted_on_one_side_and_changed_on_the_other_keeps_the_change_and_reports_the_deletion() -> None:
    t = record("k", "theirs body", revision=2)
    out = merge_trees(state("base", B), state("local"), state(THEIRS, t))
    assert out.records == {"k": t}
    assert [(e.action, e.source) for e in out.report.entries] == [("kept", "theirs")]
    assert "deleted by ours" in out.report.entries[0].detail


def test_a_memory_forgotten_on_one_side_and_unchanged_on_the_other_stays_forgotten() -> None:
    out = merge_trees(state("base", B), state("local", B), state(THEIRS))
    assert out.records == {} and out.report.entries[0].action == "deleted"


def test_without_a_base_a_forget_after_the_last_change_keeps_the_memory_forgotten() -> None:
    forgot = {"2026-04-15.jsonl": line("2026-04-15T09:00:00.000Z", "forgot", key="k", name="k")}
    out = merge_trees(TreeState.empty(), state("local", days=forgot), state(THEIRS, B))
    assert "k" not in out.records and out.report.entries[0].action == "forgotten"


def test_without_a_base_a_memory_changed_after_the_forget_comes_back() -> None:
    forgot = {"2026-04-13.jsonl": line("2026-04-13T09:00:00.000Z", "forgot", key="k", name="k")}
    out = merge_trees(TreeState.empty(), state("local", days=forgot), state(THEIRS, B))
    assert out.records["k"] == B and out.report.entries[0].action == "added"


def _forgot(record_: MemoryRecord | None, ts: str = "2026-04-15T09:00:00.000Z", key: str = "k") -> dict[str, bytes]:
    extra = {} if record_ is None else {"sha256": version_digest(record_.raw), "revision": record_.revision}
    return {f"{ts[:10]}.jsonl": line(ts, "forgot", key=key, name=key, **extra)}


def test_over_an_unproven_base_a_memory_theirs_merely_lacks_is_kept_and_reported() -> None:
    out = merge_trees(state("base", B), state("local", B), state(THEIRS), proven=False)
    assert out.records == {"k": B} and [(e.action, e.source) for e in out.report.entries] == [("kept", "ours")]


def test_over_an_unproven_base_a_forgot_naming_the_very_version_deletes_it() -> None:
    out = merge_trees(state("base", B), state("local", B), state(THEIRS, days=_forgot(B)), proven=False)
    assert out.records == {} and out.report.entries[0].action == "deleted"


def test_a_forgot_naming_another_version_keeps_the_edit_and_reports_it() -> None:
    o = record("k", "ours changed it", revision=2)
    out = merge_trees(state("base", B), state("local", o), state(THEIRS, days=_forgot(B)))
    assert out.records == {"k": o} and out.report.entries[0].action == "kept"


def test_a_forgot_naming_the_version_ours_changed_to_deletes_it() -> None:
    o = record("k", "ours changed it", revision=2)
    out = merge_trees(state("base", B), state("local", o), state(THEIRS, days=_forgot(o)))
    assert out.records == {} and out.report.entries[0].action == "deleted"


def test_a_forgot_the_base_already_held_decides_nothing_again() -> None:
    days = _forgot(B)
    out = merge_trees(state("base", days=days), state("local", B), state(THEIRS, days=days))
    assert out.records == {"k": B} and out.report.entries == []


@pytest.mark.parametrize("ts", ["2099-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"])
def test_without_a_base_a_future_forgot_of_theirs_deletes_nothing_and_is_warned(ts: str) -> None:
    out = merge_trees(TreeState.empty(), state("local", B), state(THEIRS, days=_forgot(None, ts)), now=NOW)
    assert out.records == {"k": B} and out.report.entries[0].action == "kept"
    assert len(out.report.warnings) == 1 and "later than now" in out.report.warnings[0]


def test_a_date_past_now_plus_the_skew_wins_no_newer_conflict() -> None:
    o = record("k", "ours", updated="2099-01-01T00:00:00Z", revision=2, description="z - the greater text")
    t = record("k", "theirs", updated="9999-12-31T00:00:00Z", revision=2, description="a")
    out = merge_trees(state("base", B), state("local", o), state(THEIRS, t), on_conflict="newer", now=NOW)
    assert out.records["k"] == o  # both order before every honest time: the text decides, as for equal times
    assert len(out.report.warnings) == 2


@pytest.mark.parametrize("forged", ["2026-04-16T12:10:01Z", "2099-01-01T00:00:00Z", "9999-12-31T23:59:59Z"])
@pytest.mark.parametrize("policy", ["newer", "both"])
def test_a_forged_future_date_loses_a_conflict_to_an_edit_made_before_the_merge(forged: str, policy: str) -> None:
    o = record("k", "ours, edited an hour before the merge", updated="2026-04-16T11:00:00Z", revision=2)
    t = record("k", "theirs, dated ahead", updated=forged, revision=2)
    out = merge_trees(state("base", B), state("local", o), state(THEIRS, t), on_conflict=policy, now=NOW)
    assert out.records["k"] == o and out.report.conflicts[0].winner == "ours"
    assert "ordered before every other time" in out.report.warnings[0]


def test_a_future_dated_no_version_forgot_planted_in_our_timeline_keeps_no_memory_out() -> None:
    planted = {"9999-12-31.jsonl": line("9999-12-31T23:59:59.999Z", "forgot", key="k", name="k")}
    t = record("k", "theirs, written before the merge", updated="2026-04-16T11:59:00Z")
    out = merge_trees(TreeState.empty(), state("local", days=planted), state(THEIRS, t), now=NOW)
    assert out.records == {"k": t} and [e.action for e in out.report.entries] == ["added"]


def test_a_field_merge_keeps_the_honest_updated_not_a_forged_future_one() -> None:
    o = record("k", "base body", updated="2026-04-16T11:00:00Z", revision=2, description="ours description")
    t = record("k", "theirs body", updated="9999-12-31T23:59:59Z", revision=2)
    out = merge_trees(state("base", B), state("local", o), state(THEIRS, t), now=NOW)
    assert out.records["k"].body == "theirs body" and out.records["k"].meta["updated"] == "2026-04-16T11:00:00Z"


def _forgetting(record: MemoryRecord) -> dict[str, bytes]:
    return {"2026-04-15.jsonl": line("2026-04-15T09:00:00.000Z", "forgot", key=record.key, name=record.key,
                                     revision=record.revision, sha256=version_digest(record.raw))}


def test_a_forget_ours_holds_too_does_not_delete_the_version_ours_brought_back_after_it() -> None:
    # ours forgot k, then imported an old export holding k again (the same text: the same digest); theirs holds
    # the forget it took from ours, and the base (a lineage that lost the root between) predates it
    days = _forgetting(B)
    out = merge_trees(state("base", B), state("local", B, days=days), state(THEIRS, days=days), proven=False)
    assert out.records == {"k": B} and [e.action for e in out.report.entries] == ["kept"]


def test_a_forget_theirs_holds_too_keeps_no_version_theirs_brought_back_after_it_out() -> None:
    days = _forgetting(B)
    out = merge_trees(TreeState.empty(), state("local", days=days), state(THEIRS, B, days=days))
    assert out.records == {"k": B} and [e.action for e in out.report.entries] == ["added"]


def test_a_forget_only_theirs_holds_still_deletes_the_version_it_names() -> None:
    out = merge_trees(state("base", B), state("local", B), state(THEIRS, days=_forgetting(B)), proven=False)
    assert out.records == {} and [e.action for e in out.report.entries] == ["deleted"]


def test_a_memory_differing_only_by_an_old_forks_source_stamp_is_unchanged() -> None:
    stamped = record("k", "base body", source=f"{THEIRS}")
    out = merge_trees(state("base", B), state("local", B), state(THEIRS, stamped))
    assert out.records == {"k": B} and out.report.entries == []


def test_without_a_base_different_memories_under_one_key_are_a_conflict() -> None:
    o, t = record("k", "ours"), record("k", "theirs")
    out = merge_trees(TreeState.empty(), state("local", o), state(THEIRS, t))
    assert len(out.report.conflicts) == 1 and len(out.records) == 2


def test_a_device_memory_of_theirs_never_comes_in() -> None:
    t = record("k", "theirs", **{"x-magicfrog-dimension": "device"})
    out = merge_trees(TreeState.empty(), state("local"), state(THEIRS, t))
    assert out.records == {} and out.report.entries[0].action == "device"


def test_a_device_memory_of_ours_stays_whatever_theirs_did() -> None:
    o = record("k", "ours", **{"x-magicfrog-local-only": True})
    for theirs in (state(THEIRS), state(THEIRS, record("k", "theirs", revision=5))):
        out = merge_trees(state("base", o), state("local", o), theirs)
        assert out.records == {"k": o}


def test_the_timeline_is_the_union_of_both_sides_deduplicated_by_bytes_and_ordered_by_time() -> None:
    day = "2026-04-14.jsonl"
    shared = line("2026-04-14T08:00:00.000Z", text="shared")
    ours_new = line("2026-04-14T10:00:00.000Z", text="ours")
    theirs_new = line("2026-04-14T09:00:00.000Z", text="theirs")
    out = merge_trees(state("base", days={day: shared}), state("local", days={day: shared + ours_new}),
                      state(THEIRS, days={day: shared + theirs_new + ours_new}))
    assert out.days == {day: shared + theirs_new + ours_new} and out.report.timeline_added == 1


@pytest.mark.parametrize("ours_bytes", ["a line twice", "another order", "a CR"])
def test_a_day_both_sides_hold_in_other_bytes_is_the_ordered_form_whichever_side_is_ours(ours_bytes: str) -> None:
    day = "2026-04-14.jsonl"
    first, second = line("2026-04-14T08:00:00.000Z", text="one"), line("2026-04-14T09:00:00.000Z", text="two")
    mine = {"a line twice": first + first + second, "another order": second + first,
            "a CR": first.replace(b"\n", b"\r\n") + second}[ours_bytes]
    one = merge_trees(state("base"), state("local", days={day: mine}), state(THEIRS, days={day: first + second}))
    other = merge_trees(state("base"), state(THEIRS, days={day: first + second}), state("local", days={day: mine}))
    assert one.days == other.days == {day: first + second}


def test_a_day_theirs_holds_in_our_very_bytes_or_not_at_all_keeps_our_bytes() -> None:
    day = "2026-04-14.jsonl"
    mine = line("2026-04-14T09:00:00.000Z", text="two") + line("2026-04-14T08:00:00.000Z", text="one")
    for theirs in ({day: mine}, {}):
        assert merge_trees(state("base"), state("local", days={day: mine}), state(THEIRS, days=theirs)).days == {day: mine}


def test_timeline_lines_one_side_pruned_stay_pruned() -> None:
    old, new = line("2026-04-01T08:00:00.000Z"), line("2026-04-14T08:00:00.000Z")
    days = {"2026-04-01.jsonl": old, "2026-04-14.jsonl": new}
    out = merge_trees(state("base", days=days), state("local", days={"2026-04-14.jsonl": new}), state(THEIRS, days=days))
    assert out.days == {"2026-04-14.jsonl": new}


def test_changes_name_only_the_files_that_differ_from_ours() -> None:
    t = record("new", "theirs")
    ours = state("local", B, days={"2026-04-14.jsonl": line("2026-04-14T08:00:00.000Z")})
    out = merge_trees(state("base", B), ours, state(THEIRS, t))
    files, days = out.changes(ours)
    assert files == {"k.md": None, "new.md": t.raw} and days == {}


def test_a_sibling_key_fits_the_key_length_limit() -> None:
    key = "k" * MAX_KEY_LENGTH
    sibling = sibling_key(key, "0123456789abcdef")
    assert len(sibling) == MAX_KEY_LENGTH and sibling.endswith(".conflict-0123456789")


def test_a_sibling_key_another_memory_holds_moves_on_and_the_report_names_the_key_it_got() -> None:
    o = record("k", "ours body", updated="2026-04-13T00:00:00Z")
    t = record("k", "theirs body", updated="2026-04-15T00:00:00Z")
    taken = sibling_key("k", version_digest(o.raw))
    planted = [record(taken, "planted"), record(taken + "-2", "planted")]
    out = merge_trees(state("base", B), state("local", o), state(THEIRS, t, *planted))
    got = taken + "-3"
    assert out.records[got].body == "ours body" and all(out.records[p.key] == p for p in planted)
    assert out.report.conflicts[0].sibling == got
    assert [e.detail for e in out.report.entries if e.action == "conflict"] == [f"resolved both; the other kept as {got}"]


def test_merging_a_tree_with_itself_changes_nothing() -> None:
    o = state("local", B, record("x", "x"), days={"2026-04-14.jsonl": line("2026-04-14T08:00:00.000Z")})
    out = merge_trees(o, o, TreeState(THEIRS, o.records, o.days))
    assert out.changes(o) == ({}, {}) and out.report.entries == []


def test_a_tree_with_no_heads_reads_no_manifest_looking_for_a_base() -> None:
    read: list[str] = []
    search = find_base([], "theirs", parents_of=lambda r: read.append(r) or ["older"])  # type: ignore[func-returns-value]
    assert search.base is None and read == []


def test_the_base_is_the_ancestor_nearest_to_both_sides() -> None:
    lineage = {"o1": ["o2"], "o2": ["far"], "t1": ["near"], "near": ["o2"], "far": []}
    search = find_base(["o1"], "t1", parents_of=lambda r: lineage.get(r, []))
    assert search.base == "o2" and search.ours["o2"] == 1 and search.theirs["o2"] == 2


def test_two_writers_keeping_one_losing_version_make_one_sibling_that_merges_as_one() -> None:
    """Issue 37: writer A kept its own losing version as a sibling, writer B kept the same version (from A's root) as
    another; merged, the tree held it twice (``X.conflict-local-2`` and ``X.conflict-<cid>``)."""
    a = record("k", "A's body", updated="2026-04-14T00:00:00Z", revision=2)
    b = record("k", "B's body", updated="2026-04-15T00:00:00Z", revision=2)
    base = state("base", B)
    at_a = merge_trees(base, state("local", a), state(THEIRS, b))  # A merges B's root: A's version loses
    at_b = merge_trees(base, state("local", b), state("ipfs://bafyA", a))  # B merges A's root: the same one loses
    assert at_a.records == at_b.records
    rejoined = merge_trees(base, TreeState("local", at_a.records, {}), TreeState(THEIRS, at_b.records, {}))
    siblings = [k for k in rejoined.records if ".conflict-" in k]
    assert len(siblings) == 1 and rejoined.records[siblings[0]].body == "A's body"
    assert rejoined.report.conflicts == []


def test_a_conflict_on_a_sibling_keeps_the_loser_beside_the_original_key_never_a_sibling_of_a_sibling() -> None:
    s = record("k.conflict-0123456789", "edited here", updated="2026-04-14T00:00:00Z", **{CONFLICT_OF: "k"})
    t = record("k.conflict-0123456789", "edited there", updated="2026-04-15T00:00:00Z", **{CONFLICT_OF: "k"})
    out = merge_trees(state("base", B), state("local", B, s), state(THEIRS, B, t))
    [conflict] = out.report.conflicts
    assert conflict.sibling == sibling_key("k", version_digest(s.raw))
    assert conflict.sibling.count(".conflict-") == 1 and out.records[conflict.sibling].meta[CONFLICT_OF] == "k"
