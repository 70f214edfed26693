"""Hostile frontmatter (issue 12, item 2): every YAML trick is a FrontmatterError naming the line, never a
raw exception, a hang or a memory blow-up. The reader refuses anchors, aliases and tags before it builds
a single value, so an alias bomb costs one pass over its text."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.errors import FrontmatterError
from bundlekit.memory import Memory, parse_memory_file
from bundlekit.memory.frontmatter import MAX_DEPTH, MAX_NODES, load_frontmatter

HEAD = "name: N\ndescription: D\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n"
# The classic "billion laughs": nine levels of nine aliases (9**9 strings once expanded).
LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{b}: &{b} [{','.join(['*' + a] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi")
)


def memory_file(extra: str) -> str:
    return f"---\n{HEAD}{extra}---\n\nbody\n"


def test_the_billion_laughs_bomb_is_refused_at_its_first_anchor() -> None:
    assert len(LAUGHS) < 600
    with pytest.raises(FrontmatterError, match=r"bomb\.md line 7: YAML anchors and aliases"):
        parse_memory_file(memory_file(LAUGHS), key="bomb")


def test_an_alias_alone_is_refused() -> None:
    with pytest.raises(FrontmatterError, match="anchors and aliases"):
        load_frontmatter("x: *nowhere\n", where="f.md")


@pytest.mark.parametrize(
    "value", ["!!bool yms", "!!int ''", "!!timestamp 204-01-01", "!!float x", "!!python/object:os.system x", "! x"]
)
def test_explicit_tags_are_refused_with_the_line(value: str) -> None:
    with pytest.raises(FrontmatterError, match=r"f\.md line 7: YAML tags"):
        parse_memory_file(memory_file(f"odd: {value}\n"), where="f.md")


def test_a_5000_digit_integer_is_refused_with_the_line() -> None:
    with pytest.raises(FrontmatterError, match=r"f\.md line 7: an integer longer than 64 bits"):
        parse_memory_file(memory_file(f"big: {'9' * 5000}\n"), where="f.md")


@pytest.mark.parametrize("spelling", [str(2**63), "0x8000000000000000", "-9223372036854775809", "1:" * 12 + "1"])
def test_integers_outside_64_bits_are_refused_in_every_spelling(spelling: str) -> None:
    with pytest.raises(FrontmatterError, match="outside 64 bits"):
        load_frontmatter(f"n: {spelling}\n", where="f.md")


def test_the_largest_64_bit_integer_is_read() -> None:
    assert load_frontmatter(f"n: {2**63 - 1}\n", where="f.md") == {"n": 2**63 - 1}


def test_too_many_values_are_refused() -> None:
    with pytest.raises(FrontmatterError, match=f"more than {MAX_NODES} values"):
        load_frontmatter("x: [" + ",".join(["1"] * (MAX_NODES + 1)) + "]\n", where="f.md")


def test_too_deep_nesting_is_refused() -> None:
    with pytest.raises(FrontmatterError, match=f"nested more than {MAX_DEPTH} deep"):
        load_frontmatter("x: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n", where="f.md")


def test_a_syntax_error_names_its_line() -> None:
    with pytest.raises(FrontmatterError, match=r"f\.md line 7: frontmatter is not valid YAML"):
        parse_memory_file(memory_file("description2: Note: written by three.ws\n"), where="f.md")


def test_a_planted_bomb_is_a_frontmatter_error_for_the_tree(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "m")
    mem.write("ok", name="N", description="D", type="user", body="b")
    (tmp_path / "m" / "bomb.md").write_text(memory_file(LAUGHS), encoding="utf-8")
    with pytest.raises(FrontmatterError, match="bomb.md"):
        mem.check()


def test_line_reader_trims_as_javascript_does() -> None:
    """three.ws trims with JavaScript's ``trim``: U+FEFF goes, U+0085 stays (Python's ``strip`` is the reverse)."""
    from bundlekit.memory.frontmatter import split_lines

    assert split_lines("\ufeffname:\ufeff Goal \ufeff\nnote: a\u0085") == {"name": "Goal", "note": "a\u0085"}


def test_value_with_a_javascript_space_at_its_edge_is_not_written_plain() -> None:
    """A value ending in U+FEFF would lose it to three.ws's reader, so it is not plain."""
    from bundlekit.memory.frontmatter import plain_problem

    assert plain_problem("Goal\ufeff") is not None
    assert plain_problem("Goal") is None
