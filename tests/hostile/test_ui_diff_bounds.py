"""Issue 24, item 5: the interface's body diff is bounded, says so when it is partial, and is cached per pair.

Two bundles whose bodies held a few hundred KB of distinct lines swapped pairwise
kept ``/ui/diff`` busy for 47 s (difflib's matcher is quadratic at worst), page
after page. Now lines are compared one by one only within ``MAX_DIFF_PAIRS``
line pairs per page, at most ``MAX_DIFF_SHOWN_LINES`` lines a body are shown,
and a diff is made once per pair of roots.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("jinja2")
pytest.importorskip("markdown_it")

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.memory import Memory
from bundlekit.ui import model
from bundlekit.ui.model import BodyDiff, BundleView, DiffCache, MemoryItem, bundle_diff
from tests.ui.conftest import serving_ui

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _patched(old: list[str], diff: BodyDiff) -> list[str]:
    """``old`` with the unified diff applied; fails when a context or removed line does not match."""
    assert diff.lines[:2] == [f"--- {diff.key} (old)", f"+++ {diff.key} (new)"]
    out: list[str] = []
    at = 0  # lines of old consumed
    for line in diff.lines[2:]:
        hunk = _HUNK.fullmatch(line)
        if hunk is not None:
            start, length = int(hunk.group(1)), int(hunk.group(2) or 1)
            begin = start - 1 if length else start
            out += old[at:begin]
            at = begin
        elif line[0] == "+":
            out.append(line[1:])
        else:
            assert old[at] == line[1:], (at, line)
            if line[0] == " ":
                out.append(line[1:])
            at += 1
    return out + old[at:]


def _view(root: str, bodies: dict[str, str]) -> BundleView:
    items = []
    for key, body in bodies.items():
        memory = Memory(None)
        record = memory.write(key, name=key, description="d", type="user", body=body, allow_secrets=True)
        items.append(MemoryItem(key=key, path=f"memory/{key}.md", size=len(body), record=record))
    manifest = {"created": "2026-04-14T00:00:00Z", "encryption": None}
    return BundleView(root, manifest, "", items)


def _swapped(count: int) -> tuple[str, str]:
    """Two bodies of ``count`` distinct lines, the second with each pair of lines swapped (the issue's input)."""
    lines = [f"distinct line {i:08d}" for i in range(count)]
    swapped = list(lines)
    swapped[0::2], swapped[1::2] = lines[1::2], lines[0::2]
    return "\n".join(lines), "\n".join(swapped)


def test_bodies_too_large_to_compare_are_shown_replaced_with_a_note_and_still_patch() -> None:
    old, new = _swapped(2_000)  # 4,000,000 line pairs, over MAX_DIFF_PAIRS
    _result, [body] = bundle_diff(_view("old", {"k": old}), _view("new", {"k": new}))
    assert body.note is not None and "too many to compare line by line" in body.note
    assert _patched(old.splitlines(), body) == new.splitlines()


def test_a_diff_of_hundreds_of_kilobytes_shows_at_most_the_line_cap_and_says_so() -> None:
    old, new = _swapped(15_000)  # about 300 KB a side
    _result, [body] = bundle_diff(_view("old", {"k": old}), _view("new", {"k": new}))
    assert len(body.lines) == model.MAX_DIFF_SHOWN_LINES
    assert body.note is not None and f"only the first {model.MAX_DIFF_SHOWN_LINES} lines" in body.note


def test_the_line_pair_budget_is_shared_by_every_body_of_one_diff(monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = _swapped(100)
    monkeypatch.setattr(model, "MAX_DIFF_PAIRS", 100 * 100 + 50)  # room for one body only
    _result, bodies = bundle_diff(_view("old", {"a": old, "b": old}), _view("new", {"a": new, "b": new}))
    assert [body.note is None for body in bodies] == [True, False]


def test_a_page_shows_at_most_its_line_cap_and_names_the_bodies_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = _swapped(100)
    whole = len(model._body_diff("a", (), old, new, model._Pairs(model.MAX_DIFF_PAIRS)).lines)
    monkeypatch.setattr(model, "MAX_DIFF_PAGE_LINES", whole + 50)  # room for one body, then 50 lines
    _result, bodies = bundle_diff(_view("old", {k: old for k in "abc"}), _view("new", {k: new for k in "abc"}))
    assert [len(body.lines) for body in bodies] == [whole, 50, 0]
    assert bodies[0].note is None
    assert bodies[1].note is not None and "only the first 50 lines" in bodies[1].note
    assert bodies[2].note is not None and f"the page shows {whole + 50} diff lines at most" in bodies[2].note


@settings(max_examples=200, deadline=None)
@given(
    old=st.lists(st.sampled_from(["a", "b", "c", "d", ""]), max_size=40),
    new=st.lists(st.sampled_from(["a", "b", "c", "e", ""]), max_size=40),
    budget=st.sampled_from([0, 10, 10**6]),
)
def test_every_body_diff_patches_the_old_body_into_the_new(old: list[str], new: list[str], budget: int) -> None:
    old_text, new_text = "\n".join(["head", *old, "tail"]), "\n".join(["head", *new, "tail"])
    body = model._body_diff("k", ("body",), old_text, new_text, model._Pairs(budget))
    if old_text == new_text:
        assert body.lines == []
    else:
        assert _patched(old_text.splitlines(), body) == new_text.splitlines()


def test_a_diff_is_made_once_per_pair_of_roots(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[str, str]] = []
    real = model.bundle_diff

    def counting(old: BundleView, new: BundleView) -> tuple[object, list[BodyDiff]]:
        made.append((old.root, new.root))
        return real(old, new)

    monkeypatch.setattr(model, "bundle_diff", counting)
    cache = DiffCache(size=2)
    views = {name: _view(name, {"k": name}) for name in ("x", "y", "z")}
    first = cache.diff(views["x"], views["y"])
    assert cache.diff(views["x"], views["y"]) is first
    cache.diff(views["y"], views["z"])
    cache.diff(views["x"], views["z"])  # the third pair pushes the oldest out
    cache.diff(views["x"], views["y"])
    assert made == [("x", "y"), ("y", "z"), ("x", "z"), ("x", "y")]


def test_the_diff_page_shows_the_note(tmp_path: Path) -> None:
    old, new = _swapped(2_000)
    created = datetime(2026, 4, 14, tzinfo=UTC)
    roots = []
    for name, body in (("old", old), ("new", new)):
        Memory(tmp_path / name).write("k", name="K", description="d", type="user", body=body)
        roots.append(build_bundle(tmp_path / name, tmp_path / f"{name}.car",
                                  options=BuildOptions(created=created)).root_cid)
    with serving_ui(tmp_path / "old.car", tmp_path / "new.car") as server:
        text = httpx.get(f"{server.url}/ui/diff?old={roots[0]}&new={roots[1]}", timeout=60).text
    assert '<p class="problem note">' in text and "too many to compare line by line" in text
