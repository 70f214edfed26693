"""import_from / export_to: foreign store -> bundlekit tree -> foreign store, through the real Memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bundlekit.convert import FORMATS, export_to, get_format, import_from
from bundlekit.errors import DeviceMemoryError, SecretDetectedError, UsageError
from bundlekit.memory import Memory

from .conftest import MASSGEN_PREFS, PROJECT, tree_files, write
from .test_magic_context import clock, rows


def test_registry_lists_the_six_formats() -> None:
    assert FORMATS == ("massgen", "claude-code", "three.ws", "magic-context", "magicfrog", "letta")
    assert get_format("threews").name == "three.ws"


def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown memory format"):
        import_from("mem0", tmp_path, tmp_path / "out")


def test_unknown_option_is_a_usage_error(massgen_workspace: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not take"):
        import_from("massgen", massgen_workspace, tmp_path / "out", dimension="user")


def test_massgen_import_writes_a_valid_tree(massgen_workspace: Path, tmp_path: Path) -> None:
    result = import_from("massgen", massgen_workspace, tmp_path / "mem")
    assert result.memories == 2
    memory = Memory(tmp_path / "mem")
    memory.check()
    rec = memory.read("user_preferences")
    assert rec is not None and rec.meta["x-massgen-tier"] == "short_term" and rec.meta["important"] is True
    assert "user_preferences.md" in memory.index_text()


def test_massgen_round_trip_through_a_tree(massgen_workspace: Path, tmp_path: Path) -> None:
    import_from("massgen", massgen_workspace, tmp_path / "mem")
    export_to("massgen", tmp_path / "mem", tmp_path / "back")
    assert tree_files(tmp_path / "back") == tree_files(massgen_workspace)


def test_claude_code_round_trip_through_a_tree(claude_dir: Path, tmp_path: Path) -> None:
    import_from("claude-code", claude_dir, tmp_path / "mem")
    export_to("claude-code", tmp_path / "mem", tmp_path / "back", form="source")
    assert tree_files(tmp_path / "back") == tree_files(claude_dir)


def test_threews_round_trip_through_a_tree(
    threews_file: Path, threews_blob: dict[str, Any], tmp_path: Path
) -> None:
    import_from("three.ws", threews_file, tmp_path / "mem")
    assert [e["type"] for e in Memory(tmp_path / "mem").timeline()] == ["waved", "user_said"]
    export_to("three.ws", tmp_path / "mem", tmp_path / "back.json", namespace="agent-7")
    back = json.loads((tmp_path / "back.json").read_text())
    assert back["files"] == threews_blob["files"]
    assert {e["type"] for e in back["timeline"]} == {"waved", "user_said"}


def test_magic_context_round_trip_through_a_tree(mc_db: Path, tmp_path: Path) -> None:
    import_from("magic-context", mc_db, tmp_path / "mem", project=PROJECT, clock=clock)
    export_to("magic-context", tmp_path / "mem", tmp_path / "back.db")
    assert rows(tmp_path / "back.db") == [r for r in rows(mc_db) if r["id"] in (1, 2, 6)]


def test_magicfrog_round_trip_through_a_tree(magicfrog_tree: Path, tmp_path: Path) -> None:
    import_from("magicfrog", magicfrog_tree, tmp_path / "mem")
    export_to("magicfrog", tmp_path / "mem", tmp_path / "back")
    assert tree_files(tmp_path / "back") == tree_files(magicfrog_tree)


def test_device_memory_in_a_tree_is_refused_by_every_exporter(
    magicfrog_with_device: Path, tmp_path: Path
) -> None:
    import_from("magicfrog", magicfrog_with_device, tmp_path / "mem", include_device=True, local_only=True)
    with pytest.raises(DeviceMemoryError):
        export_to("massgen", tmp_path / "mem", tmp_path / "mg")
    assert not (tmp_path / "mg").exists()


def test_device_memory_import_is_refused_and_writes_nothing(
    magicfrog_with_device: Path, tmp_path: Path
) -> None:
    with pytest.raises(DeviceMemoryError):
        import_from("magicfrog", magicfrog_with_device, tmp_path / "mem")
    assert not (tmp_path / "mem").exists()


def test_secret_in_foreign_memory_is_refused(tmp_path: Path) -> None:
    write(
        tmp_path / "ws" / "memory" / "short_term" / "k.md",
        MASSGEN_PREFS.replace("Uses tabs", "key AKIAIOSFODNN7EXAMPLE"),
    )
    with pytest.raises(SecretDetectedError):
        import_from("massgen", tmp_path / "ws", tmp_path / "mem")
    assert not list((tmp_path / "mem").glob("*.md"))


def test_merge_strategy_keeps_the_local_memory(massgen_workspace: Path, tmp_path: Path) -> None:
    mem = Memory(tmp_path / "mem")
    mem.write("user_preferences", name="Mine", description="local", type="user", body="local body")
    import_from("massgen", massgen_workspace, tmp_path / "mem", strategy="merge")
    rec = mem.read("user_preferences")
    assert rec is not None and rec.body == "local body"
    assert mem.read("project_history") is not None


def test_device_bound_memories_are_found_in_a_tree(magicfrog_with_device: Path, tmp_path: Path) -> None:
    from bundlekit.convert import device_bound_keys, refuse_device_memory

    import_from("magicfrog", magicfrog_with_device, tmp_path / "mem", include_device=True, local_only=True)
    records = Memory(tmp_path / "mem").list()
    assert device_bound_keys(records) == ["device.paths"]
    with pytest.raises(DeviceMemoryError, match="refusing to bundle 1 device memories"):
        refuse_device_memory(records)
