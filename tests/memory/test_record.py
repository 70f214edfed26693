from __future__ import annotations

import pytest

from bundlekit.errors import FrontmatterError
from bundlekit.memory import parse_memory_file, render_memory_file

SEED_TONE = """---
name: Tone
description: user wants direct critique, not encouragement-first
type: feedback
created: 2026-03-22
updated: 2026-04-14
---

User prefers direct critique over encouragement-first framing.
"""

VALID_META = {
    "name": "Tone",
    "description": "direct critique",
    "type": "feedback",
    "created": "2026-03-22T09:00:00Z",
    "updated": "2026-04-14T12:03:12Z",
}


def test_date_only_timestamps_read_as_midnight_utc() -> None:
    record = parse_memory_file(SEED_TONE, key="feedback_tone")
    assert record.meta["created"] == "2026-03-22T00:00:00Z"
    assert record.meta["updated"] == "2026-04-14T00:00:00Z"


def test_unquoted_datetime_is_normalised_to_utc_z_form() -> None:
    text = SEED_TONE.replace("updated: 2026-04-14", "updated: 2026-04-14T14:03:12+02:00")
    assert parse_memory_file(text).meta["updated"] == "2026-04-14T12:03:12Z"


def test_missing_revision_reads_as_revision_one() -> None:
    assert parse_memory_file(SEED_TONE).revision == 1


def test_render_uses_fixed_key_order_plain_timestamps_and_flow_lists() -> None:
    meta = {
        "zeta": 1,
        "important": True,
        "tags": ["a"],
        "revision": 3,
        **VALID_META,
        "source": "s4",
        "decay": "30d",
    }
    text = render_memory_file(meta, "Body.")
    assert text == (
        "---\n"
        "name: Tone\n"
        "description: direct critique\n"
        "type: feedback\n"
        "created: 2026-03-22T09:00:00Z\n"
        "updated: 2026-04-14T12:03:12Z\n"
        "revision: 3\n"
        "source: s4\n"
        "decay: 30d\n"
        "tags: [a]\n"
        "important: true\n"
        "zeta: 1\n"
        "---\n"
        "\n"
        "Body.\n"
    )


def test_unknown_keys_survive_a_round_trip_in_order() -> None:
    text = SEED_TONE.replace(
        "---\n\n", "mood: calm\nlinks: [a, b]\nwhen: 2026-05-01T10:00:00Z\nnested: {x: 1}\n---\n\n"
    )
    record = parse_memory_file(text)
    again = parse_memory_file(render_memory_file(record.meta, record.body))
    assert again.meta == record.meta
    assert [k for k in again.meta if k not in VALID_META] == ["mood", "links", "when", "nested"]
    assert again.meta["when"] == "2026-05-01T10:00:00Z"


def test_rendering_is_a_fixed_point() -> None:
    text = render_memory_file({**VALID_META, "tags": ["x", "y"], "extra": "2026-01-01"}, "Body\n\nmore")
    record = parse_memory_file(text)
    assert render_memory_file(record.meta, record.body) == text


def test_body_is_stripped_and_ends_with_one_newline() -> None:
    text = render_memory_file(VALID_META, "\n\nBody line\n\n\n")
    assert text.endswith("---\n\nBody line\n")
    assert parse_memory_file(text).body == "Body line"


def test_file_without_frontmatter_is_refused() -> None:
    with pytest.raises(FrontmatterError, match="no YAML frontmatter"):
        parse_memory_file("Just a body.\n", key="x")


def test_unclosed_frontmatter_is_refused() -> None:
    with pytest.raises(FrontmatterError):
        parse_memory_file("---\nname: x\n", key="x")


def test_invalid_yaml_is_refused() -> None:
    with pytest.raises(FrontmatterError, match="not valid YAML"):
        parse_memory_file("---\nname: [unclosed\n---\nbody\n", key="x")


def test_frontmatter_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(FrontmatterError, match="mapping"):
        parse_memory_file("---\n- a\n- b\n---\nbody\n", key="x")


@pytest.mark.parametrize("missing", ["name", "description", "type", "created", "updated"])
def test_each_required_key_is_enforced(missing: str) -> None:
    meta = {k: v for k, v in VALID_META.items() if k != missing}
    with pytest.raises(FrontmatterError, match=f"missing required key '{missing}'"):
        render_memory_file(meta, "b")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("type", "opinion"),
        ("decay", "7d"),
        ("revision", 0),
        ("revision", "2"),
        ("revision", True),
        ("tags", "football"),
        ("tags", ["ok", 3]),
        ("important", "yes"),
        ("name", "two\nlines"),
        ("description", ""),
        ("created", "yesterday"),
        ("updated", "2026-13-01"),
        ("source", 42),
    ],
)
def test_invalid_values_are_refused(key: str, value: object) -> None:
    with pytest.raises(FrontmatterError, match=key):
        render_memory_file({**VALID_META, key: value}, "b")


def test_error_names_the_file() -> None:
    with pytest.raises(FrontmatterError, match="notes.md"):
        parse_memory_file("---\nname: x\n---\n", key="notes")


def test_body_lines_that_look_like_fences_stay_in_the_body() -> None:
    body = "Intro\n\n---\n\nAfter a rule.\n---\nEnd"
    record = parse_memory_file(render_memory_file(VALID_META, body))
    assert record.body == body


def test_awkward_plain_strings_are_written_unquoted_and_read_back_unchanged() -> None:
    meta = {**VALID_META, "name": "Tone no.1 - 'direct' \"critique\"", "description": "a:b, c#d, 50% café", "note": "x"}
    text = render_memory_file(meta, "b")
    record = parse_memory_file(text)
    assert record.name == meta["name"] and record.description == meta["description"]
    assert "name: Tone no.1 - 'direct' \"critique\"\n" in text


def test_value_that_is_not_plain_data_is_refused() -> None:
    with pytest.raises(FrontmatterError, match="plain data"):
        render_memory_file({**VALID_META, "thing": object()}, "b")


@pytest.mark.parametrize("breaker", ["\r", "\u2028", "\x85", "\x0c"])
def test_names_with_any_line_break_are_refused(breaker: str) -> None:
    with pytest.raises(FrontmatterError, match="single line"):
        render_memory_file({**VALID_META, "name": f"a{breaker}b"}, "b")
