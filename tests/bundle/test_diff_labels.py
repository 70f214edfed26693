"""diff OLD NEW: each line names the side a memory is only in, the direction is old -> new."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.diff import diff_sources, side_labels
from bundlekit.cli import cli
from bundlekit.memory import Memory

from .conftest import CREATED


def _changed_tree(tree: Path, tmp_path: Path) -> Path:
    """Build ``tree`` into tmp_path/bundle.car, then add, remove and change one memory each."""
    car = tmp_path / "bundle.car"
    build_bundle(tree, car, options=BuildOptions(created=CREATED))
    mem = Memory(tree, clock=lambda: CREATED.replace(day=15))
    mem.write("new_one", name="New", description="fresh", type="project", body="New.")
    mem.forget("reference_reel")
    mem.write("user_role", name="Role", description="now a goalkeeper", type="user", body="Plays in goal.")
    return car


def _diff(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["diff", *args], catch_exceptions=False)
    return result.exit_code, result.stdout


def test_a_memory_only_in_the_new_side_is_labelled_with_the_new_sides_name(tree: Path, tmp_path: Path) -> None:
    car = _changed_tree(tree, tmp_path)
    _code, out = _diff(str(car), str(tree))
    assert f"+ new_one         only in {tree}" in out.splitlines()


def test_a_memory_only_in_the_old_side_is_labelled_with_the_old_sides_name(tree: Path, tmp_path: Path) -> None:
    car = _changed_tree(tree, tmp_path)
    _code, out = _diff(str(car), str(tree))
    assert f"- reference_reel  only in {car}" in out.splitlines()


def test_a_changed_memory_lists_the_fields_that_differ(tree: Path, tmp_path: Path) -> None:
    car = _changed_tree(tree, tmp_path)
    _code, out = _diff(str(car), str(tree))
    assert "~ user_role       changed: body, description, revision, updated" in out.splitlines()


def test_swapping_the_sides_swaps_added_and_removed(tree: Path, tmp_path: Path) -> None:
    car = _changed_tree(tree, tmp_path)
    forward, backward = diff_sources(car, tree), diff_sources(tree, car)
    assert (forward.added, forward.removed) == (["new_one"], ["reference_reel"])
    assert (backward.added, backward.removed) == (["reference_reel"], ["new_one"])


def test_the_summary_names_the_direction_old_to_new(tree: Path, tmp_path: Path) -> None:
    car = _changed_tree(tree, tmp_path)
    result = CliRunner().invoke(cli, ["diff", str(car), str(tree)], catch_exceptions=False)
    assert result.stderr.splitlines()[-1] == (  # a summary: stderr (README, "Output and exit codes")
        f"{car} -> {tree}: 1 added, 1 removed, 1 changed, 2 unchanged; timeline entries: 1 added, 0 removed"
    )


def test_json_carries_the_two_side_labels(tree: Path, tmp_path: Path) -> None:
    car = _changed_tree(tree, tmp_path)
    _code, out = _diff(str(car), str(tree) + "/", "--json")
    data = json.loads(out)
    assert (data["old"], data["new"]) == (str(car), str(tree))


def test_exit_code_is_still_one_when_the_sides_differ(tree: Path, tmp_path: Path) -> None:
    car = _changed_tree(tree, tmp_path)
    assert _diff(str(car), str(tree), "--exit-code")[0] == 1


def test_sides_spelled_the_same_are_told_apart() -> None:
    assert side_labels("memory", "memory/") == ("memory (old)", "memory (new)")


def test_help_states_the_old_new_order() -> None:
    out = CliRunner().invoke(cli, ["diff", "--help"]).stdout
    assert "OLD NEW" in out and "only in NEW" in out
