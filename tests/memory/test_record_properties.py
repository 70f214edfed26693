"""Property tests: any plain-data frontmatter and body survive render -> parse, and rendering is a fixed point."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.memory import parse_memory_file, render_memory_file

BASE = {
    "name": "N",
    "description": "D",
    "type": "user",
    "created": "2026-03-22T09:00:00Z",
    "updated": "2026-04-14T12:03:12Z",
}
# Scalars YAML keeps exactly: no floats (repr drift), no surrogates.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4)
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
