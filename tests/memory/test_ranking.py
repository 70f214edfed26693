from __future__ import annotations

import math
from datetime import timedelta

import pytest

from bundlekit.errors import UsageError
from bundlekit.memory import Memory
from bundlekit.memory.ranking import decay_factor, recency, salience

from .conftest import Clock, fields


def _record(mem: Memory, key: str = "k", **overrides: object):  # type: ignore[no-untyped-def]
    return mem.write(key, **fields(**overrides))


@pytest.mark.parametrize(
    ("kind", "tags", "expected"),
    [
        ("feedback", 0, 0.8),
        ("user", 0, 0.7),
        ("project", 0, 0.6),
        ("reference", 0, 0.5),
        ("reference", 2, 0.6),
        ("reference", 4, 0.7),
        ("reference", 9, 0.7),  # tag bonus capped at 0.2
        ("feedback", 4, 1.0),  # 0.5 + 0.3 + 0.2 = 1.0
    ],
)
def test_salience_is_base_plus_type_bonus_plus_capped_tag_bonus(
    mem: Memory, kind: str, tags: int, expected: float
) -> None:
    record = _record(mem, type=kind, tags=[f"t{i}" for i in range(tags)])
    assert salience(record) == pytest.approx(expected)


def test_important_pins_salience_to_one(mem: Memory) -> None:
    assert salience(_record(mem, type="reference", important=True)) == 1.0


def test_recency_halves_every_seven_days(mem: Memory, clock: Clock) -> None:
    record = _record(mem)
    clock.advance(days=7)
    assert recency(record, clock()) == pytest.approx(0.5)
    clock.advance(days=7)
    assert recency(record, clock()) == pytest.approx(0.25)


def test_future_updated_counts_as_age_zero(mem: Memory, clock: Clock) -> None:
    record = _record(mem)
    clock.advance(days=-3)
    assert recency(record, clock()) == 1.0


@pytest.mark.parametrize(("decay", "horizon"), [("30d", 30), ("90d", 90)])
def test_decay_down_weights_only_past_its_horizon(
    mem: Memory, clock: Clock, decay: str, horizon: int
) -> None:
    record = _record(mem, decay=decay)
    clock.now = record.updated + timedelta(days=horizon)
    assert decay_factor(record, clock()) == 1.0
    clock.advance(days=14)
    assert decay_factor(record, clock()) == pytest.approx(0.25)


def test_decay_never_does_not_down_weight(mem: Memory, clock: Clock) -> None:
    record = _record(mem, decay="never")
    clock.advance(days=400)
    assert decay_factor(record, clock()) == 1.0


def test_recall_matches_case_insensitively_in_name_description_and_body(mem: Memory) -> None:
    mem.write("a", **fields(name="Direct CRITIQUE", description="x", body="y"))
    mem.write("b", **fields(name="n", description="wants direct critique", body="y"))
    mem.write("c", **fields(name="n", description="x", body="prefers Direct Critique"))
    mem.write("d", **fields(name="n", description="x", body="nothing relevant"))
    assert sorted(hit.key for hit in mem.recall("direct critique")) == ["a", "b", "c"]


def test_recall_ranks_by_salience_times_recency(mem: Memory, clock: Clock) -> None:
    mem.write("old_feedback", **fields(type="feedback", body="kick drill"))
    clock.advance(days=7)
    mem.write("new_reference", **fields(type="reference", body="kick drill"))
    mem.write("new_feedback", **fields(type="feedback", body="kick drill"))
    hits = mem.recall("kick")
    assert [h.key for h in hits] == ["new_feedback", "new_reference", "old_feedback"]
    assert hits[0].score == pytest.approx(0.8)
    assert hits[2].score == pytest.approx(0.4)


def test_recall_breaks_ties_by_key(mem: Memory) -> None:
    for key in ["zeta", "alpha", "mid"]:
        mem.write(key, **fields(body="same"))
    assert [h.key for h in mem.recall("same")] == ["alpha", "mid", "zeta"]


def test_recall_counts_occurrences(mem: Memory) -> None:
    mem.write("k", **fields(name="kick", description="kick", body="kick kick"))
    assert mem.recall("KICK")[0].matches == 4


def test_recall_respects_limit(mem: Memory) -> None:
    for i in range(8):
        mem.write(f"k{i}", **fields(body="hit"))
    assert len(mem.recall("hit")) == 5
    assert len(mem.recall("hit", limit=2)) == 2


def test_recall_with_empty_query_is_refused(mem: Memory) -> None:
    with pytest.raises(UsageError, match="query"):
        mem.recall("  ")


def test_score_is_product_of_parts(mem: Memory, clock: Clock) -> None:
    record = mem.write("k", **fields(type="project", tags=["a"], decay="30d", body="hit"))
    clock.now = record.updated + timedelta(days=33)
    hit = mem.recall("hit")[0]
    expected = 0.65 * 0.5 ** (33 / 7) * 0.5 ** (3 / 7)
    assert math.isclose(hit.score, expected, rel_tol=1e-9)


def test_hits_also_answer_to_seed_003_keys(mem: Memory) -> None:
    mem.write("k", **fields(body="hit me"))
    hit = mem.recall("hit")[0]
    assert hit["file"] == "k.md" and hit["body"] == "hit me" and hit["meta"]["type"] == "feedback"
    assert hit["score"] == hit.score
