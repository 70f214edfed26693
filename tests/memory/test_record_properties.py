"""Property tests: any plain-data frontmatter and body survive render -> parse, and rendering is a fixed point;
any one-line text of a schema key reads back exactly, written plain whenever a line reader would read it alike."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.errors import FrontmatterError
from bundlekit.memory import parse_memory_file, render_memory_file
from bundlekit.memory.frontmatter import plain_problem

BASE = {
    "name": "N",
    "description": "D",
    "type": "user",
    "created": "2026-03-22T09:00:00Z",
    "updated": "2026-04-14T12:03:12Z",
}
# Scalars YAML keeps exactly: no floats (repr drift), no surrogates; text that has a plain form
# (anything else is refused on write, tested below).
plain_text = st.text(
    st.characters(whitelist_categories=("L", "N", "Zs"), whitelist_characters="-_.'\"/()%@!?"),
    min_size=1,
    max_size=30,
).filter(lambda t: plain_problem(t, flow=True) is None)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    plain_text,
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(plain_text, inner, max_size=4)
    ),
    max_leaves=8,
)
unknown = st.dictionaries(
    st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=10).filter(
        lambda k: k not in {*BASE, "revision", "source", "decay", "tags", "important"}
    ),
    values.filter(lambda v: v is not None),
    max_size=5,
)
bodies = st.text(
    st.characters(
        blacklist_categories=("Cs",), blacklist_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    ),
    max_size=200,
)


@settings(max_examples=60, deadline=None)
@given(extra=unknown, body=bodies)
def test_unknown_keys_and_body_round_trip(extra: dict[str, Any], body: str) -> None:
    text = render_memory_file({**BASE, **extra}, body)
    record = parse_memory_file(text)
    assert {k: record.meta[k] for k in extra} == extra
    assert list(record.meta)[len(BASE) :] == list(extra)
    assert record.body == body.strip()
    assert render_memory_file(record.meta, record.body) == text


one_line = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30).filter(
    lambda t: t.strip() != "" and t.splitlines() == [t]
)


@settings(max_examples=200, deadline=None)
@given(value=one_line)
def test_any_one_line_schema_text_reads_back_exactly_plain_when_it_can_be(value: str) -> None:
    text = render_memory_file({**BASE, "name": value, "description": value, "source": value, "tags": [value]}, "b")
    record = parse_memory_file(text)
    assert (record.name, record.description, record.meta["source"], record.tags) == (value, value, value, [value])
    assert render_memory_file(record.meta, record.body) == text
    if plain_problem(value) is None:  # a line reader (three.ws) sees the same text
        assert f"\nsource: {value}\n" in text
    else:  # double-quoted, as Claude Code writes such text
        assert f"\nsource: {json.dumps(value, ensure_ascii=False)[0]}" in text


@settings(max_examples=200, deadline=None)
@given(value=st.text(st.characters(blacklist_categories=("Cs",)), max_size=30))
def test_any_text_of_an_unknown_key_reads_back_unchanged(value: str) -> None:
    record = parse_memory_file(render_memory_file({**BASE, "note": value, f"k{value}": [value]}, "b"))
    assert record.meta["note"] == value and record.meta[f"k{value}"] == [value]


def test_refused_text_names_the_key_not_the_value() -> None:
    with pytest.raises(FrontmatterError, match="'source'") as caught:
        render_memory_file({**BASE, "source": "sk-secret: value\nmore"}, "b")
    assert "sk-secret" not in str(caught.value)
