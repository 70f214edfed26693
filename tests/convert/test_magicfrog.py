"""MagicFrog five-dimension trees: nested paths, legacy directories, the device rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.convert._common import Entry, ForeignTree
from bundlekit.convert.magicfrog import read_magicfrog, write_magicfrog
from bundlekit.errors import ConvertError, DeviceMemoryError

from .conftest import mf_note, through_bundlekit, tree_files, write


def by_key(tree: ForeignTree) -> dict[str, Entry]:
    return {e.key: e for e in tree.entries}


def test_every_dimension_is_read_with_dimension_prefixed_keys(magicfrog_tree: Path) -> None:
    assert sorted(by_key(read_magicfrog(magicfrog_tree))) == [
        "account.notes.style",
        "agent.reviewer.notes.style",
        "task.t-42.notes.progress",
        "user.notes.style",
        "user.prefs",
    ]


def test_nested_path_is_recorded_for_the_way_back(magicfrog_tree: Path) -> None:
    e = by_key(read_magicfrog(magicfrog_tree))["agent.reviewer.notes.style"]
    assert (e.meta["x-magicfrog-dimension"], e.meta["x-magicfrog-path"]) == (
        "agent",
        "reviewer/notes/style.md",
    )
    assert (e.meta["revision"], e.meta["updated"]) == (3, "2026-10-20T09:12:00Z")
    assert e.meta["x-magicfrog-updated"] == "2026-10-20T09:12:00.000Z"
    assert e.body == "Prefer functional array methods over for loops."


def test_one_dimension_gives_path_only_keys(magicfrog_tree: Path) -> None:
    assert sorted(by_key(read_magicfrog(magicfrog_tree, dimension="user"))) == ["notes.style", "prefs"]


def test_legacy_directories_read_as_device_and_task(tmp_path: Path) -> None:
    write(tmp_path / "project" / "plan.md", mf_note(1, "2026-01-01T00:00:00.000Z", "plan"))
    write(tmp_path / "machine" / "gpu.md", mf_note(1, "2026-01-01T00:00:00.000Z", "gpu", machine="box"))
    tree = by_key(read_magicfrog(tmp_path, include_device=True, local_only=True))
    assert tree["task.plan"].meta["x-magicfrog-legacy"] == "project"
    assert tree["device.gpu"].meta["x-magicfrog-dimension"] == "device"
    assert tree["device.gpu"].meta["x-magicfrog-machine"] == "box"


def test_project_magicfrog_directory_reads_as_task(tmp_path: Path) -> None:
    proj = tmp_path / "repo"
    write(
        proj / ".magicfrog" / "memory" / "notes" / "progress.md", mf_note(2, "2026-01-01T00:00:00.000Z", "p")
    )
    e = read_magicfrog(proj).entries[0]
    assert (e.key, e.meta["x-magicfrog-root"]) == ("task.notes.progress", "project")


def test_device_entries_are_refused_by_default(magicfrog_with_device: Path) -> None:
    with pytest.raises(DeviceMemoryError, match="never leaves this machine"):
        read_magicfrog(magicfrog_with_device)


def test_device_entries_need_local_only_too(magicfrog_with_device: Path) -> None:
    with pytest.raises(DeviceMemoryError, match="--local-only"):
        read_magicfrog(magicfrog_with_device, include_device=True)


def test_device_entries_pass_for_a_local_only_copy(magicfrog_with_device: Path) -> None:
    e = by_key(read_magicfrog(magicfrog_with_device, include_device=True, local_only=True))["device.paths"]
    assert e.meta["x-magicfrog-local-only"] is True
    assert e.meta["x-magicfrog-machine"] == "alex-laptop"


def test_device_entries_can_be_left_out_with_a_warning(magicfrog_with_device: Path) -> None:
    tree = read_magicfrog(magicfrog_with_device, exclude_device=True)
    assert "device.paths" not in by_key(tree)
    assert any("device" in w for w in tree.warnings)


def test_round_trip_through_bundlekit_gives_identical_files(
    magicfrog_with_device: Path, tmp_path: Path
) -> None:
    tree = read_magicfrog(magicfrog_with_device, include_device=True, local_only=True)
    write_magicfrog(through_bundlekit(tree), tmp_path / "out", include_device=True, local_only=True)
    assert tree_files(tmp_path / "out") == tree_files(magicfrog_with_device)


def test_writing_device_entries_is_refused_without_local_only(
    magicfrog_with_device: Path, tmp_path: Path
) -> None:
    tree = read_magicfrog(magicfrog_with_device, include_device=True, local_only=True)
    with pytest.raises(DeviceMemoryError):
        write_magicfrog(tree, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_native_entries_land_in_the_chosen_dimension(tmp_path: Path) -> None:
    tree = ForeignTree(
        [
            Entry(
                "style",
                {
                    "name": "s",
                    "description": "d",
                    "type": "user",
                    "revision": 2,
                    "created": "2026-01-01T00:00:00Z",
                    "updated": "2026-01-02T03:04:05Z",
                },
                "Use tabs.",
            )
        ]
    )
    write_magicfrog(tree, tmp_path, dimension="account")
    assert (tmp_path / "memory" / "account" / "style.md").read_text() == (
        "---\nrevision: 2\nupdated: 2026-01-02T03:04:05.000Z\n---\nUse tabs.\n"
    )


def test_unsafe_recorded_path_gives_way_to_the_key_with_a_warning(tmp_path: Path) -> None:
    tree = ForeignTree(
        [
            Entry(
                "x",
                {
                    "name": "x",
                    "description": "d",
                    "type": "user",
                    "x-magicfrog-dimension": "user",
                    "x-magicfrog-path": "../escape.md",
                    "created": "2026-01-01T00:00:00Z",
                    "updated": "2026-01-01T00:00:00Z",
                },
                "b",
            )
        ]
    )
    assert write_magicfrog(tree, tmp_path / "out") == [tmp_path / "out" / "memory" / "user" / "x.md"]
    assert not (tmp_path / "escape.md").exists()
    assert any(w.startswith("memory 'x': x-magicfrog-path is not a plain relative") for w in tree.warnings)


def test_no_dimensions_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConvertError, match="no MagicFrog dimensions"):
        read_magicfrog(tmp_path)


def test_timestamp_spelling_survives_the_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src / "user" / "a.md", "---\nrevision: 1\nupdated: 2026-01-01T00:00:00Z\nowner: alex\n---\nbody\n")
    write_magicfrog(through_bundlekit(read_magicfrog(src)), tmp_path / "out")
    assert (tmp_path / "out" / "memory" / "user" / "a.md").read_text() == (
        "---\nrevision: 1\nupdated: 2026-01-01T00:00:00Z\nowner: alex\n---\nbody\n"
    )


def test_effective_view_keeps_the_most_specific_dimension_per_path(magicfrog_tree: Path) -> None:
    tree = read_magicfrog(magicfrog_tree, effective=True)
    entries = by_key(tree)
    assert sorted(entries) == ["notes.style", "prefs", "reviewer.notes.style", "t-42.notes.progress"]
    assert entries["notes.style"].meta["x-magicfrog-dimension"] == "user"
    assert entries["notes.style"].body == "User style: detailed."
    assert tree.warnings == ["account/notes/style.md is overridden by user/notes/style.md"]


def test_effective_view_task_overrides_every_other_dimension(magicfrog_tree: Path) -> None:
    write(
        magicfrog_tree / "memory" / "task" / "notes" / "style.md",
        mf_note(1, "2026-10-22T00:00:00.000Z", "Task."),
    )
    write(
        magicfrog_tree / "memory" / "agent" / "notes" / "style.md",
        mf_note(1, "2026-10-22T00:00:00.000Z", "Agent."),
    )
    e = by_key(read_magicfrog(magicfrog_tree, effective=True))["notes.style"]
    assert (e.meta["x-magicfrog-dimension"], e.body) == ("task", "Task.")


def test_effective_view_keeps_device_notes_apart(magicfrog_with_device: Path) -> None:
    tree = read_magicfrog(magicfrog_with_device, effective=True, include_device=True, local_only=True)
    assert "device.paths" in by_key(tree)


def test_effective_view_prefers_the_canonical_directory_over_legacy(tmp_path: Path) -> None:
    write(tmp_path / "project" / "plan.md", mf_note(1, "2026-01-01T00:00:00.000Z", "legacy"))
    write(tmp_path / "task" / "plan.md", mf_note(2, "2026-01-02T00:00:00.000Z", "canonical"))
    e = by_key(read_magicfrog(tmp_path, effective=True))["plan"]
    assert e.body == "canonical"


def test_effective_view_for_an_agent_lets_its_prefixed_note_win(magicfrog_tree: Path) -> None:
    # Seed 004: agent/<agentId>/notes/style.md applies only to that agent and overrides shared notes.
    tree = read_magicfrog(magicfrog_tree, effective=True, agent="reviewer")
    notes = {e.key: e for e in tree.entries}
    assert notes["notes.style"].body == "Prefer functional array methods over for loops."
    assert notes["notes.style"].meta["x-magicfrog-path"] == "reviewer/notes/style.md"
    assert "reviewer.notes.style" not in notes
    assert any("is overridden by agent/reviewer/notes/style.md" in w for w in tree.warnings)


def test_effective_view_for_a_task_lets_its_prefixed_note_win(magicfrog_tree: Path) -> None:
    write(
        magicfrog_tree / "memory" / "task" / "notes" / "progress.md",
        mf_note(1, "2026-10-21T09:00:00.000Z", "Shared progress."),
    )
    notes = {e.key: e for e in read_magicfrog(magicfrog_tree, effective=True, task="t-42").entries}
    assert notes["notes.progress"].body == "Step 2 of 5."


def test_another_agents_notes_keep_their_prefix_in_the_view(magicfrog_tree: Path) -> None:
    notes = {e.key for e in read_magicfrog(magicfrog_tree, effective=True, agent="writer").entries}
    assert "reviewer.notes.style" in notes
    assert "notes.style" in notes  # the user's note, unshadowed for this agent


def test_agent_without_effective_is_refused(magicfrog_tree: Path) -> None:
    with pytest.raises(ConvertError, match="--effective"):
        read_magicfrog(magicfrog_tree, agent="reviewer")


@pytest.mark.parametrize("recorded", ["a\0b.md", "a\nb.md", "dir\\x.md"])
def test_a_recorded_path_with_a_nul_control_character_or_backslash_gives_way_to_the_key(
    tmp_path: Path, recorded: str
) -> None:
    meta = {
        "name": "x", "description": "d", "type": "user", "x-magicfrog-dimension": "user",
        "x-magicfrog-path": recorded, "created": "2026-01-01T00:00:00Z", "updated": "2026-01-01T00:00:00Z",
    }
    tree = ForeignTree([Entry("x", meta, "b")])
    assert write_magicfrog(tree, tmp_path / "out") == [tmp_path / "out" / "memory" / "user" / "x.md"]
    assert [(loss.key, loss.left_out) for loss in tree.losses] == [("x", False)]


def test_a_recorded_path_with_a_nul_refuses_a_strict_export(tmp_path: Path) -> None:
    meta = {
        "name": "x", "description": "d", "type": "user", "x-magicfrog-dimension": "user",
        "x-magicfrog-path": "a\0b.md", "created": "2026-01-01T00:00:00Z", "updated": "2026-01-01T00:00:00Z",
    }
    with pytest.raises(ConvertError, match="strict"):
        write_magicfrog(ForeignTree([Entry("x", meta, "b")]), tmp_path / "out", strict=True)
    assert not (tmp_path / "out").exists()
