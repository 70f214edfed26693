"""``bundle.merge._touched`` (issue 37: a merge's few files found in ours' sorted listing by binary search, conflict
siblings and case look-alikes included) against the walk it replaced, on names made to collide: case variants,
conflict marks inside keys, prefixes of one another, names that are not ASCII."""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from bundlekit.bundle import merge as bundle_merge

_PART = st.sampled_from(["a", "A", "ab", "aB", "b", "x.conflict", ".conflict-", "conflict-", "-1", "é", "-", "_"])
_NAME = st.lists(_PART, min_size=1, max_size=4).map(lambda parts: "".join(parts) + ".md")


def _walked(names: list[str], changed: set[str]) -> set[str]:
    """The walk of every name that ``_touched`` replaced (bundle/merge.py before issue 37)."""
    stems = {name[:-3] for name in changed}
    folded = {name.lower() for name in changed}
    return set(changed) | {n for n in names if n.lower() in folded or n.split(".conflict-")[0] in stems}


@settings(max_examples=500, deadline=None)
@given(ours=st.sets(_NAME, max_size=30), changed=st.sets(_NAME, max_size=6))
def test_the_files_a_merge_may_meet_are_those_the_walk_found(ours: set[str], changed: set[str]) -> None:
    names = sorted(ours, key=lambda name: name.encode("utf-8", "surrogateescape"))

    def present(wanted: Iterable[str]) -> list[str]:
        keep = set(wanted)
        return [name for name in names if name in keep]

    assert bundle_merge._touched(names, changed, present) == _walked(names, changed)
