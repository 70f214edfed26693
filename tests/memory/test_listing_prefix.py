"""A listing's names looked up by prefix (``Scan.begins``, ``Scan.starting``, ``Scan.all_ascii``; issue 37: a
merge's conflict siblings and case look-alikes found without a list of 100,000 names): by binary search over the
packed names' bytes, the same answers as testing every name, for names that prefix one another, hold NUL-adjacent
bytes' neighbours, are not ASCII or are not UTF-8."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.memory.backend import Scan

_PART = st.sampled_from(["a", "A", "ab", "b", ".conflict-", "-", "é", "\udcff", "z", "\x7f", " ", "0"])
_NAME = st.lists(_PART, min_size=1, max_size=4).map(lambda parts: "".join(parts) + ".md")
_PREFIX = st.one_of(st.just(""), _NAME, st.lists(_PART, max_size=3).map("".join))


def _bytewise(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


@settings(max_examples=400, deadline=None)
@given(names=st.sets(_NAME, max_size=25), prefixes=st.lists(_PREFIX, min_size=1, max_size=5))
def test_a_packed_and_a_listed_scan_find_by_prefix_what_testing_every_name_finds(
        names: set[str], prefixes: list[str]) -> None:
    listed = sorted(names, key=_bytewise)
    whole = Scan({name: (1, 2, 3) for name in names}, None)
    packed = whole.packed()
    assert packed is not None
    for scan in (Scan({name: (1, 2, 3) for name in names}, None), Scan.from_packed(*packed, len(names), None)):
        assert scan.all_ascii() == all(name.isascii() for name in listed)
        for prefix in prefixes:
            starting = [name for name in listed if _bytewise(name).startswith(_bytewise(prefix))]
            assert scan.starting(prefix) == starting
            assert scan.begins(prefix) == bool(starting)
            assert scan.begins(prefix, whole=True) == (prefix in names)
