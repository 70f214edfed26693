"""Usage that ranks (issue 38): a memory a recall returned and the agent then read gains a small boost that
decays, kept in the derived index, off with ``usage=False`` (CLI ``--no-usage-boost``)."""

from __future__ import annotations

import json
import math
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.memory import Memory
from bundlekit.memory.catalog.usage import BOOST_CAP, BOOST_HALF_LIFE_S, RETURN_WINDOW_S, USAGE_WEIGHT, factor

from .conftest import Clock

# Two memories the query matches equally (the same words, the same type and age), and three others so
# that neither word is in more than half the memories (BM25 leaves such a word out).
TWINS = {
    "leak_a": ("Sink leak", "bathroom sink drips", "The bathroom sink drips at night."),
    "leak_b": ("Sink leak again", "bathroom sink drips", "The bathroom sink drips at night."),
    "garden": ("Garden", "balcony plants", "Tomatoes and basil on the balcony."),
    "car": ("Car", "the lease", "Electric car from September."),
    "music": ("Cello", "orchestra", "Rehearsals on Tuesday evenings."),
}


def _twins(tree: Path, clock: Clock) -> Memory:
    mem = Memory(tree, clock=clock)
    for key, (name, description, body) in TWINS.items():
        mem.write(key, name=name, description=description, type="project", body=body)
    return mem


def _boost(mem: Memory, key: str) -> float:
    now_s = mem._tree.now().timestamp()
    return mem._tree.read(lambda catalog: catalog.usage.boosts(now_s)).get(key, 0.0)


def _read(mem: Memory, key: str) -> bool:
    """Read ``key`` as the agent does; whether its boost grew."""
    before = _boost(mem, key)
    assert mem.read(key, used=True) is not None
    return _boost(mem, key) > before


def _recalled(mem: Memory, query: str = "sink drips", **kwargs: object) -> list[str]:
    return [hit.key for hit in mem.recall(query, limit=5, rank="relevance", **kwargs)]  # type: ignore[arg-type]


def test_a_read_after_a_recall_returned_the_memory_raises_it(tree: Path, clock: Clock) -> None:
    mem = _twins(tree, clock)
    before = _recalled(mem, usage=True)
    assert before[:2] == ["leak_a", "leak_b"]  # equal scores: by key
    clock.advance(minutes=1)
    assert _read(mem, "leak_b") is True
    assert _recalled(mem, usage=True)[:2] == ["leak_b", "leak_a"]
    assert _recalled(mem, usage=False)[:2] == ["leak_a", "leak_b"]  # off: the order without it


def test_a_read_without_a_recent_recall_does_not_count(tree: Path, clock: Clock) -> None:
    mem = _twins(tree, clock)
    assert _read(mem, "leak_b") is False  # never returned
    _recalled(mem, usage=True)
    clock.advance(seconds=RETURN_WINDOW_S + 1)
    assert _read(mem, "leak_b") is False  # returned too long ago
    _recalled(mem, usage=False)  # a recall without usage notes nothing
    assert _read(mem, "leak_b") is False and _boost(mem, "leak_b") == 0.0
    assert mem.read("leak_b") is not None and _boost(mem, "leak_b") == 0.0  # a plain read is no use


def test_one_return_counts_one_read(tree: Path, clock: Clock) -> None:
    mem = _twins(tree, clock)
    _recalled(mem, usage=True)
    assert (_read(mem, "leak_b"), _read(mem, "leak_b")) == (True, False)
    assert _boost(mem, "leak_b") == 1.0


def test_the_boost_decays_by_half_every_half_life_and_stops_at_its_cap(tree: Path, clock: Clock) -> None:
    mem = _twins(tree, clock)
    for _ in range(6):
        _recalled(mem, usage=True)
        _read(mem, "leak_b")
    assert _boost(mem, "leak_b") == BOOST_CAP
    clock.advance(seconds=BOOST_HALF_LIFE_S)
    assert _boost(mem, "leak_b") == pytest.approx(BOOST_CAP / 2)
    clock.advance(seconds=20 * BOOST_HALF_LIFE_S)
    assert _boost(mem, "leak_b") < 1e-5
    assert _recalled(mem, usage=True)[:2] == ["leak_a", "leak_b"]  # decayed away: the order without it


def test_the_factor_is_small_and_bounded() -> None:
    assert factor(0.0) == 1.0 and factor(BOOST_CAP) == factor(100.0) == 1.0 + USAGE_WEIGHT


@pytest.mark.parametrize("rank", ["relevance", "hybrid"])
def test_a_boosted_distractor_never_ranks_above_the_memory_named_as_the_query(
    tree: Path, clock: Clock, rank: str
) -> None:
    mem = _twins(tree, clock)
    mem.write("plumber", name="plumber", description="who fixes leaks", type="reference", body="Call Joao.")
    mem.write("leak_c", name="Plumber visit", description="plumber came about the sink leak", type="project",
              body="The plumber fixed the plumber's own plumber mistakes: plumber, plumber.")
    for _ in range(6):  # the distractor read after every recall: at the cap
        mem.recall("plumber", limit=5, rank=rank, usage=True)
        _read(mem, "leak_c")
    assert _boost(mem, "leak_c") == BOOST_CAP
    assert [hit.key for hit in mem.recall("Plumber", limit=3, rank=rank, usage=True)][0] == "plumber"


def test_cli_show_after_recall_raises_the_memory_and_no_usage_boost_turns_it_off(tree: Path, clock: Clock) -> None:
    _twins(tree, clock).close()
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(cli, ["memory", "-d", str(tree), *args])
        assert result.exit_code == 0, result.output
        return result.stdout

    def order(*flags: str) -> list[str]:
        return [h["key"] for h in json.loads(run("recall", "sink drips", "--rank", "relevance", "--json", *flags))][:2]

    assert order("--no-usage-boost") == ["leak_a", "leak_b"]
    run("show", "leak_b")  # the recall above noted nothing: this read does not count
    assert order() == ["leak_a", "leak_b"]
    run("show", "leak_b", "--no-usage-boost")  # not counted either
    assert order() == ["leak_a", "leak_b"]
    run("show", "leak_b")
    assert order() == ["leak_b", "leak_a"] and order("--no-usage-boost") == ["leak_a", "leak_b"]


# -- the usage table as a hostile or broken index holds it (issue 38's attack) --------------------------------


def _tampered(tree: Path, sql: str) -> None:
    with closing(sqlite3.connect(tree / ".bundlekit" / "index.sqlite")) as conn:
        conn.execute(sql)
        conn.commit()


@pytest.mark.parametrize("sql", [
    "UPDATE usage SET boost = 1, at = 'yesterday'",  # text in a REAL column (SQLite keeps it)
    "UPDATE usage SET boost = 'a lot'",
    "UPDATE usage SET boost = 1, at = x'00'",  # a blob
    "UPDATE usage SET returned = 'now'",
    "UPDATE usage SET boost = 9e999, at = -9e999",  # infinity decayed by infinity: NaN, were it believed
])
def test_a_hand_edited_usage_row_never_breaks_recall_context_or_show(tree: Path, clock: Clock, sql: str) -> None:
    mem = _twins(tree, clock)
    _recalled(mem, usage=True)
    mem.close()
    _tampered(tree, sql)
    mem = Memory(tree, clock=clock)
    for rank in ("relevance", "hybrid"):
        hits = mem.recall("sink drips", limit=5, rank=rank, usage=True)  # type: ignore[arg-type]
        assert {"leak_a", "leak_b"} <= {hit.key for hit in hits}
        assert all(math.isfinite(hit.score) for hit in hits)
    assert "Sink leak" in mem.context_block(2000, query="sink drips", rank="relevance", usage=True)
    assert mem.read("leak_a", used=True) is not None  # a read after that recall counts again, on a sound row
    assert 0.0 <= _boost(mem, "leak_a") <= BOOST_CAP


def test_a_boost_dated_in_the_future_counts_nothing(tree: Path, clock: Clock) -> None:
    mem = _twins(tree, clock)
    _recalled(mem, usage=True)
    future = clock.now.timestamp() + 10 * 365 * 86400.0  # a clock set years ahead once, since set right
    _tampered(tree, f"UPDATE usage SET boost = {BOOST_CAP}, at = {future} WHERE key = 'leak_b'")
    assert _boost(mem, "leak_b") == 0.0  # believed, it would never decay
    assert _recalled(mem, usage=True)[:2] == ["leak_a", "leak_b"]
    assert _read(mem, "leak_b") is True and _boost(mem, "leak_b") == 1.0  # the next read starts it afresh


def test_a_usage_note_gives_way_to_another_process_holding_the_index(tree: Path, clock: Clock) -> None:
    """A note waits NOTE_WAIT_MS for the index's write lock, not the connection's 30 s: the recall and the read
    answer, and the note is lost."""
    mem = _twins(tree, clock)
    _recalled(mem, usage=True)
    with closing(sqlite3.connect(tree / ".bundlekit" / "index.sqlite", isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")  # another process writing the index (an embedding of 10,000 memories)
        started = time.monotonic()
        assert _recalled(mem, usage=True)[:2] == ["leak_a", "leak_b"]
        assert mem.read("leak_b", used=True) is not None
        assert time.monotonic() - started < 10.0  # two notes given up, not two 30-second waits
        other.execute("ROLLBACK")
    assert _boost(mem, "leak_b") == 0.0 and _read(mem, "leak_b") is True  # the lost note; the earlier return counts
