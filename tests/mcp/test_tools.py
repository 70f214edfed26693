"""The rules of the MCP tools, checked on ``MemoryTools`` directly (no SDK needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.errors import MemoryNotFoundError, UsageError
from bundlekit.mcp_server import MemoryTools, PublishSettings, ServedMemory, open_served_memory
from bundlekit.memory import Memory


def test_a_read_only_source_refuses_every_write(tree: Path) -> None:
    tools = MemoryTools(ServedMemory(Memory(tree), read_only=True, origin="ipfs://x"))
    with pytest.raises(UsageError, match="read-only .*-d DIR"):
        tools.write("k", "N", "d", "user", "b")
    with pytest.raises(UsageError, match="read-only"):
        tools.forget("user_role")
    with pytest.raises(UsageError, match="read-only"):
        tools.note("session", {"summary": "x"})
    assert (tree / "user_role.md").is_file()


def test_publish_needs_the_opt_in_and_a_tree_on_disk(tree: Path) -> None:
    assert not MemoryTools(ServedMemory(Memory(tree), read_only=False, origin="x")).can_publish
    with pytest.raises(UsageError, match="--allow-publish"):
        MemoryTools(ServedMemory(Memory(tree), read_only=False, origin="x")).publish()
    in_memory = ServedMemory(Memory(None), read_only=True, origin="layers:user")
    assert not MemoryTools(in_memory, publish=PublishSettings()).can_publish


def test_recall_arguments_are_checked(tree: Path) -> None:
    tools = MemoryTools(ServedMemory(Memory(tree), read_only=False, origin="x"))
    with pytest.raises(UsageError, match="query is empty"):
        tools.recall("  ")
    with pytest.raises(UsageError, match="between 1 and 100"):
        tools.recall("tea", limit=0)


def test_timeline_day_takes_only_a_date(tree: Path) -> None:
    tools = MemoryTools(ServedMemory(Memory(tree), read_only=False, origin="x"))
    assert [e["type"] for e in tools.timeline_day("2026-04-14")] == ["session"]
    assert tools.timeline_day("2026-04-15") == []
    with pytest.raises(UsageError, match="YYYY-MM-DD"):
        tools.timeline_day("../etc")


def test_show_of_a_missing_key_names_it(tree: Path) -> None:
    tools = MemoryTools(ServedMemory(Memory(tree), read_only=False, origin="x"))
    with pytest.raises(MemoryNotFoundError, match="'ghost'"):
        tools.show("ghost")


def test_a_read_only_load_is_held_in_memory_with_no_tree_on_disk(tmp_path: Path, tree: Path) -> None:
    from bundlekit.bundle.build import build_bundle

    car = tmp_path / "b.car"
    build_bundle(tree, car)
    with open_served_memory(from_uri=str(car)) as served:
        assert served.read_only and served.tree_dir is None
        assert "user_role" in [record.key for record in served.memory.list()]


def test_mcp_help_does_not_import_the_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from bundlekit.cli import cli\n"
        "result = CliRunner().invoke(cli, ['mcp', '--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(sorted(m for m in ('mcp', 'pydantic', 'uvicorn', 'starlette') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("field", ["type", "ts"])
def test_a_note_whose_data_sets_the_type_or_time_is_refused(tree: Path, field: str) -> None:
    tools = MemoryTools(ServedMemory(Memory(tree), read_only=False, origin="x"))
    before = tools.served.memory.timeline()
    with pytest.raises(UsageError, match=f"data may not set '{field}'"):
        tools.note("decision", {field: "1999-01-01", "summary": "x"})
    assert tools.served.memory.timeline() == before


def test_publish_refuses_psa_without_an_origin_before_any_build(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same rule as `bundlekit pin --pinner psa` (pinning.origins.open_pinners): no libp2p node, no pin.
    monkeypatch.setenv("BUNDLEKIT_PSA_URL", "https://psa.example/api/v1")
    monkeypatch.setenv("PSA_TOKEN", "token")
    tools = MemoryTools(ServedMemory(Memory(tree), read_only=False, origin="x"), publish=PublishSettings())
    with pytest.raises(UsageError, match="--psa-origin"):
        tools.publish(["psa"])


def test_a_tree_is_served_whenever_the_memory_commands_would_read_it(tmp_path: Path) -> None:
    # One definition of "a tree is there" (Memory.exists): a directory without MEMORY.md qualifies.
    tree = tmp_path / "tree"
    Memory(tree).write("k", name="K", description="d", type="user", body="b.")
    (tree / "MEMORY.md").unlink()
    assert Memory(tree).exists()
    with open_served_memory(memory_dir=tree) as served:
        assert [row["key"] for row in MemoryTools(served).list()] == ["k"]


def test_a_missing_tree_is_refused_as_memory_exists_says(tmp_path: Path) -> None:
    assert not Memory(tmp_path / "nowhere").exists()
    with pytest.raises(UsageError, match="no memory tree at .*nowhere .*: run `bundlekit memory -d .*nowhere init`"):
        open_served_memory(memory_dir=tmp_path / "nowhere")
