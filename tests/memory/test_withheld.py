"""A credential in a hand-planted memory file is withheld from everything that shows memories.

The file hides it from its stored text with YAML escapes (``\\x73`` is ``s``, ``\\u0073`` too);
the parsed value is the credential. Output shows ``[withheld]`` in its place and warns naming
the file, never the text; ``MEMORY.md`` never holds it; the file itself is left as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.errors import UsageError
from bundlekit.mcp_server import MemoryTools, open_served_memory
from bundlekit.memory import Memory
from bundlekit.memory.withhold import WITHHELD, mask, withhold

SECRET = "sk-ant-api03-" + "Ab3" * 12
TAIL = SECRET[len("sk-ant-api03-"):]
PLANTED = f"""---
name: "Deploy \\x73k-ant-api03-{TAIL}"
description: "the key is \\u0073k-ant-api03-{TAIL} for prod"
type: reference
created: 2026-01-01T00:00:00Z
updated: 2026-01-01T00:00:00Z
revision: 1
x-note: "also \\x73k-ant-api03-{TAIL}"
---
Rotate it monthly. Keyword: deployment.
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    mem = Memory(root)
    mem.write("clean", name="Clean", description="nothing to hide", type="user", body="deployment notes")
    (root / "planted.md").write_text(PLANTED, encoding="utf-8")
    return root


def _warned(mem: Memory) -> None:
    assert mem.warnings and all("planted.md" in w and SECRET not in w and TAIL not in w for w in mem.warnings)


def test_the_planted_file_hides_the_credential_from_its_stored_text_only(tree: Path) -> None:
    assert SECRET not in (tree / "planted.md").read_text(encoding="utf-8")
    record = Memory(tree).read("planted")
    assert record is not None and SECRET in record.description


def test_mask_replaces_each_credential_and_keeps_the_rest() -> None:
    assert mask(f"the key is {SECRET} for prod") == f"the key is {WITHHELD} for prod"
    assert mask("sk-learn-compatible-pipeline") == "sk-learn-compatible-pipeline"


def test_withhold_names_the_fields_never_the_text(tree: Path) -> None:
    record = Memory(tree).read("planted")
    assert record is not None
    shown, fields = withhold(record)
    assert fields == ["name", "description", "frontmatter 'x-note'"]
    assert SECRET not in json.dumps(shown.meta) and shown.description == f"the key is {WITHHELD} for prod"
    assert shown.body == record.body


def test_list_lines_withhold_the_credential_and_warn(tree: Path) -> None:
    mem = Memory(tree)
    lines = mem.list_lines()
    assert not any(TAIL in line for line in lines)
    assert lines[1] == f"planted\treference\tr1\t2026-01-01T00:00:00Z\tDeploy {WITHHELD} — the key is {WITHHELD} for prod"
    _warned(mem)


def test_list_with_withhold_and_read_with_withhold_show_no_credential(tree: Path) -> None:
    mem = Memory(tree)
    assert not any(TAIL in json.dumps(r.summary()) for r in mem.list(withhold=True))
    shown = mem.read("planted", withhold=True)
    assert shown is not None and TAIL not in json.dumps(shown.meta)
    _warned(mem)


def test_list_and_read_without_withhold_give_the_data_as_parsed(tree: Path) -> None:
    mem = Memory(tree)
    assert any(SECRET in r.description for r in mem.list())
    assert mem.warnings == []


def test_recall_withholds_the_credential(tree: Path) -> None:
    mem = Memory(tree)
    hits = mem.recall("deploy")
    assert {h.key for h in hits} == {"clean", "planted"}
    assert not any(TAIL in json.dumps(h.to_dict()) for h in hits)
    _warned(mem)


def test_recall_cannot_probe_the_credential(tree: Path) -> None:
    assert [h.key for h in Memory(tree).recall(TAIL[:12])] == []
    assert [h.key for h in Memory(tree).recall("k-ant-api03", rank="relevance")] == []


def test_context_and_index_withhold_the_credential(tree: Path) -> None:
    mem = Memory(tree)
    assert TAIL not in mem.context_block()
    assert TAIL not in mem.index_text()
    _warned(mem)


def test_memory_md_never_holds_the_credential(tree: Path) -> None:
    Memory(tree).list_lines()  # any read brings MEMORY.md up to date
    index = (tree / "MEMORY.md").read_text(encoding="utf-8")
    assert "planted.md" in index and TAIL not in index and "withheld" in index


def test_the_file_itself_is_left_as_stored(tree: Path) -> None:
    Memory(tree).context_block()
    assert (tree / "planted.md").read_text(encoding="utf-8") == PLANTED


@pytest.mark.parametrize(
    "args", [["list"], ["list", "--json"], ["recall", "deploy"], ["recall", "deploy", "--json"], ["context"],
             ["context", "--style", "magic-context"], ["show", "planted", "--json"], ["show", "planted"]],
)
def test_cli_output_withholds_the_credential_and_warns_naming_the_file(tree: Path, args: list[str]) -> None:
    result = CliRunner().invoke(cli, ["memory", "-d", str(tree), *args])
    assert result.exit_code == 0, result.stderr
    assert TAIL not in result.stdout and TAIL not in result.stderr
    assert "warning: planted.md:" in result.stderr and "withheld" in result.stderr


def test_mcp_tools_withhold_the_credential_and_refuse_the_raw_file(tree: Path) -> None:
    with open_served_memory(memory_dir=tree) as served:
        tools = MemoryTools(served)
        shown = [tools.list(), tools.recall("deploy"), tools.context(), tools.show("planted"), tools.index()]
        assert all(TAIL not in json.dumps(item) for item in shown)
        with pytest.raises(UsageError, match="holds what looks like a credential") as refused:
            tools.raw("planted")
        assert TAIL not in str(refused.value)
        assert "nothing to hide" in tools.raw("clean")


def test_layered_context_withholds_the_credential_and_warns_naming_the_file(tree: Path) -> None:
    result = CliRunner().invoke(cli, ["memory", "context", "--layer", f"agent={tree}"])
    assert result.exit_code == 0, result.stderr
    assert "Deploy" in result.stdout and TAIL not in result.stdout and TAIL not in result.stderr
    assert "warning: agent: planted.md:" in result.stderr


def test_show_prints_the_file_rendered_with_the_credential_withheld(tree: Path) -> None:
    result = CliRunner().invoke(cli, ["memory", "-d", str(tree), "show", "planted"])
    assert result.exit_code == 0, result.stderr
    assert TAIL not in result.stdout and f"name: Deploy {WITHHELD}" in result.stdout
    assert "Rotate it monthly." in result.stdout


def test_a_credential_as_a_frontmatter_key_is_never_named_in_the_warning(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    Memory(root).init()
    (root / "keyed.md").write_text(
        PLANTED.replace('x-note: "also', f'"\\x73k-ant-api03-{TAIL}": "also'), encoding="utf-8"
    )
    mem = Memory(root)
    shown = mem.read("keyed", withhold=True)
    assert shown is not None and TAIL not in json.dumps(shown.meta) and TAIL not in shown.raw
    assert mem.warnings and not any(TAIL in w for w in mem.warnings)


def _plant_timeline_entry(root: Path) -> None:
    """A day file written by hand: a JSON escape (``\\u0073`` is ``s``) hides the credential from its line."""
    line = '{"ts":"2026-01-01T00:00:00.000Z","type":"note","text":"key \\u0073k-ant-api03-' + TAIL + '"}\n'
    (root / "timeline").mkdir(exist_ok=True)
    (root / "timeline" / "2026-01-01.jsonl").write_text(line, encoding="utf-8")


def test_a_planted_timeline_entry_is_withheld_from_the_context_and_warned_about(tree: Path) -> None:
    _plant_timeline_entry(tree)
    result = CliRunner().invoke(cli, ["memory", "-d", str(tree), "context"])
    assert result.exit_code == 0, result.stderr
    assert f"key {WITHHELD}" in result.stdout and TAIL not in result.stdout and TAIL not in result.stderr
    assert "warning: timeline/2026-01-01.jsonl: an entry withheld" in result.stderr


def test_a_planted_timeline_entry_is_withheld_from_the_mcp_tools(tree: Path) -> None:
    _plant_timeline_entry(tree)
    with open_served_memory(memory_dir=tree) as served:
        tools = MemoryTools(served)
        assert [entry["text"] for entry in tools.timeline_day("2026-01-01")] == [f"key {WITHHELD}"]
        assert TAIL not in tools.context()


def test_the_timeline_without_withhold_gives_the_entries_as_parsed(tree: Path) -> None:
    _plant_timeline_entry(tree)
    assert [entry["text"] for entry in Memory(tree).timeline()] == [f"key {SECRET}"]
