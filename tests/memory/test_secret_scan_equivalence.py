"""The fast secret patterns (word check after the first literal) match exactly what the
plain form (a word-boundary lookbehind in front) matches."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit._secrets import _GLUED, SECRET_RULES

_PLAIN_START = r"(?<![A-Za-z0-9_])"


def _plain(pattern: re.Pattern[str]) -> re.Pattern[str]:
    text = pattern.pattern
    if _GLUED not in text:
        return pattern
    first, rest = text.split(_GLUED, 1)
    return re.compile(_PLAIN_START + first + rest)


_PIECES = st.sampled_from(
    [
        "AKIA",
        "ASIA",
        "ghp_",
        "github_pat_",
        "sk-",
        "sk-ant-",
        "sk-proj-",
        "xoxb-",
        "eyJ",
        ".",
        "-",
        "_",
        " ",
        "\n",
        "a",
        "Z",
        "9",
        "abcDEF123",
        "ABCDEFGHIJKLMNOP",
        "x" * 20,
        "Ab1" * 15,
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_fast_patterns_find_the_same_matches_as_the_plain_form(text: str) -> None:
    for rule in SECRET_RULES:
        fast = [m.span() for m in rule.pattern.finditer(text)]
        plain = [m.span() for m in _plain(rule.pattern).finditer(text)]
        assert fast == plain, rule.name


def test_a_token_at_the_very_start_of_the_text_is_found() -> None:
    aws = next(r for r in SECRET_RULES if r.name == "aws-access-key-id")
    assert aws.pattern.search("AKIAIOSFODNN7EXAMPLE")
    assert not aws.pattern.search("xAKIAIOSFODNN7EXAMPLE")
