from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bundlekit.errors import MemoryNotFoundError, MemoryStoreError, UsageError
from bundlekit.memory import Memory
from bundlekit.memory.timeline import parse_day, validate_entry

from .conftest import Clock, count_listings, fields


def test_note_appends_ts_with_milliseconds_and_type(mem: Memory, tree: Path) -> None:
    entry = mem.note("waved", style="enthusiastic")
    assert entry == {"ts": "2026-04-14T12:03:12.345Z", "type": "waved", "style": "enthusiastic"}
    line = (tree / "timeline" / "2026-04-14.jsonl").read_text(encoding="utf-8")
    assert line == '{"ts":"2026-04-14T12:03:12.345Z","type":"waved","style":"enthusiastic"}\n'


def test_data_cannot_override_ts(mem: Memory) -> None:
    entry = mem.note("waved", ts="1999-01-01T00:00:00Z")
    assert entry["ts"] == "2026-04-14T12:03:12.345Z"


def test_note_with_unserialisable_data_is_refused(mem: Memory, tree: Path) -> None:
    with pytest.raises(UsageError, match="JSON"):
        mem.note("odd", value=object())
    assert not (tree / "timeline").exists()


def test_note_needs_a_type(mem: Memory) -> None:
    with pytest.raises(UsageError):
        mem.note("")


def test_entries_go_to_the_file_of_their_utc_day(mem: Memory, clock: Clock, tree: Path) -> None:
    mem.note("a")
    clock.advance(hours=12)
    mem.note("b")
    assert sorted(p.name for p in (tree / "timeline").iterdir()) == ["2026-04-14.jsonl", "2026-04-15.jsonl"]


def test_timeline_returns_the_most_recent_entries_across_days_oldest_first(mem: Memory, clock: Clock) -> None:
    for i in range(6):
        mem.note("tick", n=i)
        clock.advance(hours=10)
    assert [e["n"] for e in mem.timeline(limit=4)] == [2, 3, 4, 5]
    assert [e["n"] for e in mem.timeline()] == [0, 1, 2, 3, 4, 5]
    assert mem.timeline(limit=0) == []


def test_prune_timeline_removes_days_before_the_kept_window(mem: Memory, clock: Clock, tree: Path) -> None:
    for _ in range(5):
        mem.note("tick")
        clock.advance(days=1)
    # now is 2026-04-19; keeping 3 days keeps 17, 18 (and 19, which has no file).
    assert mem.prune_timeline(keep_days=3) == 3
    assert sorted(p.name for p in (tree / "timeline").iterdir()) == ["2026-04-17.jsonl", "2026-04-18.jsonl"]


def test_prune_timeline_zero_removes_every_day(mem: Memory) -> None:
    mem.note("tick")
    assert mem.prune_timeline(keep_days=0) == 1
    assert mem.timeline() == []


def test_malformed_timeline_line_is_reported_with_its_line(mem: Memory, tree: Path) -> None:
    mem.note("ok")
    with open(tree / "timeline" / "2026-04-14.jsonl", "a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    with pytest.raises(MemoryStoreError, match="2026-04-14.jsonl line 2"):
        mem.timeline()


def test_forget_deletes_the_file_and_notes_key_name_and_version_but_not_body(mem: Memory, tree: Path) -> None:
    mem.write("user_name", **fields(name="User name", body="Alex, formal address", type="user"))
    text = (tree / "user_name.md").read_text(encoding="utf-8")
    mem.forget("user_name")
    assert not (tree / "user_name.md").exists()
    assert mem.read("user_name") is None
    last = mem.timeline(limit=1)[0]
    assert last == {
        "ts": "2026-04-14T12:03:12.345Z",
        "type": "forgot",
        "key": "user_name",
        "name": "User name",
        "revision": 1,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }
    assert "Alex" not in json.dumps(mem.timeline())


def test_forget_of_missing_memory_raises(mem: Memory) -> None:
    with pytest.raises(MemoryNotFoundError, match="nope.md"):
        mem.forget("nope")


def test_badly_named_timeline_file_fails_check(mem: Memory, tree: Path) -> None:
    mem.note("ok")
    (tree / "timeline" / "yesterday.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(MemoryStoreError, match="yesterday.jsonl"):
        mem.check()


def test_entries_of_a_day_are_ordered_by_parsed_timestamp(mem: Memory, tree: Path) -> None:
    (tree / "timeline").mkdir(parents=True)
    (tree / "timeline" / "2026-04-14.jsonl").write_text(
        '{"ts":"2026-04-14T12:00:00Z","type":"b"}\n{"ts":"2026-04-14T11:59:59.500Z","type":"a"}\n',
        encoding="utf-8",
    )
    assert [e["type"] for e in mem.timeline()] == ["a", "b"]


def test_reader_skips_an_append_in_flight_but_check_refuses_it(mem: Memory, tree: Path) -> None:
    mem.note("ok")
    with open(tree / "timeline" / "2026-04-14.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"ts":"2026-04-14T12:0')
    assert [e["type"] for e in mem.timeline()] == ["ok"]
    with pytest.raises(MemoryStoreError, match="line 2"):
        mem.check()


@pytest.mark.usefixtures("default_recursion_limit")
def test_deeply_nested_timeline_line_is_reported_as_invalid_json(tmp_path: Path) -> None:
    (tmp_path / "timeline").mkdir()
    (tmp_path / "timeline" / "2026-01-01.jsonl").write_text("[" * 5_000 + "]" * 5_000 + "\n")
    with pytest.raises(MemoryStoreError, match="line 1 is not valid JSON"):
        Memory(tmp_path).timeline()


def test_forget_lists_the_tree_once(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37: forget refreshed the index twice under one lock (its own, then the timeline append's): two
    listings of the whole tree, 250 ms each at 100,000 memories."""
    mem.write("gone", **fields())
    mem.close()
    fresh = Memory(mem.root)
    scans = count_listings(monkeypatch)
    fresh.forget("gone")
    assert len(scans) == 1
    assert fresh.read("gone") is None


@pytest.mark.parametrize("escape", ["\\ud800", "\\uDFFF", "\\\\\\udc00"])
def test_a_day_line_escaping_a_lone_surrogate_is_refused(escape: str) -> None:
    line = '{"ts":"2026-01-15T04:48:38Z","type":"note","text":"a ' + escape + ' b"}\n'
    with pytest.raises(MemoryStoreError, match="line 1 holds a lone UTF-16 surrogate"):
        parse_day("2026-01-15.jsonl", line.encode("utf-8"))


def test_a_day_line_escaping_a_surrogate_pair_or_none_parses_to_its_text() -> None:
    data = ('{"ts":"2026-01-15T04:48:38Z","type":"note","text":"\\ud83d\\ude00 \\\\u"}\n'
            '{"ts":"2026-01-15T04:48:39Z","type":"note","text":"caf\u00e9 \U0001F600"}\n').encode("utf-8")
    texts = [entry["text"] for entry in parse_day("2026-01-15.jsonl", data)]
    assert texts == ["\U0001F600 \\u", "caf\u00e9 \U0001F600"]


def test_an_escaped_entry_nested_past_the_recursion_limit_is_refused_as_the_line_is_not_a_defect() -> None:
    """json.loads takes a line nested ~990 deep from a shallow frame; the surrogate check re-encoding it from a
    deeper one raised RecursionError: 'build' printed "internal error". It is refused as parse_day refuses it."""
    nested: list[object] = []
    for _ in range(5000):
        nested = [nested]
    entry = {"ts": "2026-01-15T04:48:38Z", "type": "note", "a": nested}
    with pytest.raises(MemoryStoreError, match="timeline/d line 1 is not valid JSON; fix or remove that line"):
        validate_entry(entry, "timeline/d line 1", escaped=True)
