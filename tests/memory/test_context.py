from __future__ import annotations

import pytest

from bundlekit.errors import UsageError
from bundlekit.memory import Memory

from .conftest import Clock, fields


def _small_tree(mem: Memory, clock: Clock) -> None:
    mem.write(
        "reference_reel", **fields(name="Reel", description="clips", type="reference", body="Drive folder.")
    )
    mem.write(
        "feedback_tone", **fields(name="Tone", description="direct", type="feedback", body="Be direct.")
    )
    mem.note("waved", style="big")
    clock.advance(seconds=1)
    mem.note("user_said", text="hi")


def test_context_block_layout_is_exact_for_a_fixed_clock(mem: Memory, clock: Clock) -> None:
    _small_tree(mem, clock)
    assert mem.context_block() == (
        "# Memory\n"
        "\n"
        "## Feedback\n"
        "- [Tone](feedback_tone.md) — direct\n"
        "\n"
        "## Reference\n"
        "- [Reel](reference_reel.md) — clips\n"
        "\n"
        "## Memory files\n"
        "\n"
        "### Tone (`feedback_tone.md`)\n"
        "\n"
        "Be direct.\n"
        "\n"
        "### Reel (`reference_reel.md`)\n"
        "\n"
        "Drive folder.\n"
        "\n"
        "## Recent timeline\n"
        "\n"
        '{"ts":"2026-04-14T12:03:12.345Z","type":"waved","style":"big"}\n'
        '{"ts":"2026-04-14T12:03:13.345Z","type":"user_said","text":"hi"}\n'
    )


def test_context_block_is_deterministic(mem: Memory, clock: Clock) -> None:
    _small_tree(mem, clock)
    assert mem.context_block(500) == mem.context_block(500)


def test_index_is_always_included_even_over_budget(mem: Memory, clock: Clock) -> None:
    _small_tree(mem, clock)
    assert mem.context_block(max_tokens=1) == mem.index_text()


def test_memory_that_does_not_fit_is_skipped_and_the_next_tried(mem: Memory) -> None:
    mem.write("a_big", **fields(type="feedback", body="B" * 2000))
    mem.write("b_small", **fields(type="reference", body="small body"))
    index = mem.index_text()
    budget_chars = len(index) + 200
    block = mem.context_block(max_tokens=budget_chars // 4)
    assert "small body" in block and "BBBB" not in block
    assert len(block) <= budget_chars


def test_timeline_gets_the_newest_entries_that_fit(mem: Memory, clock: Clock) -> None:
    for i in range(50):
        mem.note("tick", n=i)
        clock.advance(seconds=1)
    index = mem.index_text()
    line = len('{"ts":"2026-04-14T12:03:12.345Z","type":"tick","n":10}\n')
    budget = len(index) + len("\n## Recent timeline\n\n") + 3 * line
    block = mem.context_block(max_tokens=budget // 4)
    ns = [int(x.split('"n":')[1].rstrip("}")) for x in block.splitlines() if '"n":' in x]
    assert ns == sorted(ns) and ns[-1] == 49 and len(ns) >= 2


def test_budget_is_four_characters_per_token(mem: Memory) -> None:
    for i in range(30):
        mem.write(f"k{i:02d}", **fields(body="x" * 300))
    index_tokens = len(mem.index_text()) // 4 + 1
    for tokens in (index_tokens, index_tokens + 100, index_tokens + 1000):
        block = mem.context_block(max_tokens=tokens)
        assert len(block) <= tokens * 4
        assert tokens * 4 - len(block) < 340  # the next piece (about 330 characters) would not have fit


def test_negative_budget_is_refused(mem: Memory) -> None:
    with pytest.raises(UsageError):
        mem.context_block(max_tokens=-1)
