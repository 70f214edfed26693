"""``check_bundle_path``'s one-regex fast path accepts exactly the paths its segment-by-segment rules accept.

The rules (specs/bundle.md): ``memory/<segment>`` or ``memory/timeline/<segment>``,
each segment ``[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}``. The fast match may only
skip the careful checks for paths those checks accept; everything else still
raises ``ManifestError``.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.bundle.manifest import _BUNDLE_PATH, _usual_paths, check_bundle_path
from bundlekit.errors import ManifestError

_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}")


def _careful(path: str) -> bool:
    parts = path.split("/")
    if len(parts) < 2 or parts[0] != "memory" or any(not _SEGMENT.fullmatch(p) for p in parts[1:]):
        return False
    return not (len(parts) > 3 or (len(parts) == 3 and parts[1] != "timeline"))


pieces = st.sampled_from(["memory", "timeline", "a", ".", "..", "-x", "a.md", "", "é", "\n", "x" * 200, "x" * 201, "A_b-9"])


# Example counts halved for the suite's time (issue 36 item 8); neither these tests nor their issues set them.
@settings(max_examples=200)  # 400 before
@given(st.lists(pieces, min_size=1, max_size=4), st.sampled_from(["", "/", "\n", " "]))
def test_fast_match_accepts_exactly_the_paths_the_rules_accept(parts: list[str], tail: str) -> None:
    path = "/".join(parts) + tail
    assert bool(_BUNDLE_PATH.fullmatch(path)) == _careful(path)
    if _careful(path):
        check_bundle_path(path)
    else:
        with pytest.raises(ManifestError):
            check_bundle_path(path)


@settings(max_examples=150)  # 300 before
@given(st.lists(st.lists(pieces, min_size=1, max_size=4).map("/".join), max_size=5))
def test_all_paths_at_once_accepts_exactly_when_each_path_is_accepted(paths: list[str]) -> None:
    # _usual_paths matches every path in one regex over their newline-joined text: a path holding
    # a newline ("memory/a\nmemory/b") must not pass for two good ones.
    keys = dict.fromkeys(paths, 0)
    assert _usual_paths(keys) == (bool(keys) and all(_careful(p) for p in keys))


def test_a_path_holding_a_newline_is_refused_even_when_its_lines_are_good_paths() -> None:
    assert not _usual_paths({"memory/a.md\nmemory/b.md": 0, "memory/c.md": 0})
    with pytest.raises(ManifestError):
        check_bundle_path("memory/a.md\nmemory/b.md")
