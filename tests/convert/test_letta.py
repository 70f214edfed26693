"""Letta export and import: what a Letta 0.16.8 server needs and keeps (see test_letta_server.py for the server).

Facts from letta-ai/letta at tag 0.16.8 (commit 1131535716e8a31c9a437f8695e25ac98f203a24):
``letta/services/agent_manager.py`` (``create_agent_async``: "llm_config is required"),
``letta/services/agent_serialization_manager.py`` (``import_file``: every block of the file is created,
the agent holds its ``block_ids``), ``letta/schemas/agent_file.py`` (``AgentSchema.metadata`` and
``BlockSchema.metadata`` are exported as stored), ``letta/server/rest_api/routers/v1/agents.py``
(a document without ``agents`` is "Legacy AgentSchema format is deprecated").
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.convert import export_to, import_from
from bundlekit.convert._common import Entry, ForeignTree
from bundlekit.convert.letta import (
    DEFAULT_MODEL,
    MAX_AGENT_DEPTH,
    MAX_AGENT_FILE,
    METADATA_KEY,
    label_type,
    read_letta,
    write_letta,
)
from bundlekit.errors import ConvertError, UsageError
from bundlekit.memory import Memory
from tests.journeys.typed import in_process

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_TREE = ROOT / "fixtures" / "memory"
AGENT = ROOT / "fixtures" / "interop" / "letta" / "agent.af"


def _meta(**extra: object) -> dict[str, object]:
    return {"name": "N", "description": "d", "type": "user", "created": "2026-01-01T00:00:00Z",
            "updated": "2026-01-02T00:00:00Z", **extra}


def _doc(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _files(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*"))
            if p.is_file() and ".bundlekit" not in p.parts}


def test_the_agent_carries_the_llm_config_of_letta_free_by_default(tmp_path: Path) -> None:
    write_letta(ForeignTree([Entry("a", _meta(), "b")]), tmp_path / "a.af")
    config = _doc(tmp_path / "a.af")["agents"][0]["llm_config"]
    assert (config["handle"], config["model"], config["model_endpoint_type"]) == (DEFAULT_MODEL, "letta-free", "openai")
    assert config["context_window"] == 30_000


def test_letta_model_chooses_the_handle_of_the_llm_config(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["convert", "--to", "letta", str(FIXTURE_TREE), "-o", str(tmp_path / "a.af"),
                                      "--letta-model", "anthropic/claude-sonnet-4"])
    assert result.exit_code == 0, result.stderr
    config = _doc(tmp_path / "a.af")["agents"][0]["llm_config"]
    assert (config["handle"], config["model"], config["model_endpoint_type"]) == (
        "anthropic/claude-sonnet-4", "claude-sonnet-4", "anthropic")


@pytest.mark.parametrize("handle", ["gpt-4o", "nosuch/model", "openai/", "/x"])
def test_a_model_that_is_no_letta_handle_is_a_usage_error_writing_nothing(tmp_path: Path, handle: str) -> None:
    result = CliRunner().invoke(cli, ["convert", "--to", "letta", str(FIXTURE_TREE), "-o", str(tmp_path / "a.af"),
                                      "--letta-model", handle])
    assert result.exit_code == 2
    assert "--letta-model" in result.stderr
    assert not (tmp_path / "a.af").exists()


def test_letta_model_does_not_apply_to_an_import(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["convert", "--from", "letta", str(AGENT), "-o", str(tmp_path / "t"),
                                      "--letta-model", DEFAULT_MODEL])
    assert result.exit_code == 2


def test_a_tree_through_an_agent_file_comes_back_byte_for_byte(tmp_path: Path) -> None:
    export = export_to("letta", FIXTURE_TREE, tmp_path / "a.af")
    assert export.timeline == 10 and not export.warnings
    back = import_from("letta", tmp_path / "a.af", tmp_path / "back")
    assert back.timeline == 10
    assert _files(tmp_path / "back") == _files(FIXTURE_TREE)


def test_bundlekit_fields_travel_under_one_key_of_each_block_metadata(tmp_path: Path) -> None:
    export_to("letta", FIXTURE_TREE, tmp_path / "a.af")
    blocks = {b["label"]: b for b in _doc(tmp_path / "a.af")["blocks"]}
    carried = blocks["project_season"]["metadata"][METADATA_KEY]
    assert carried["deadline"] == "2026-06-13"
    assert {"name", "type", "created", "updated", "revision"} <= set(carried)
    assert set(blocks["project_season"]["metadata"]) == {METADATA_KEY}


def test_the_timeline_travels_in_the_agents_metadata(tmp_path: Path) -> None:
    export_to("letta", FIXTURE_TREE, tmp_path / "a.af")
    agent = _doc(tmp_path / "a.af")["agents"][0]
    assert len(agent["metadata"][METADATA_KEY]["timeline"]) == 10


def test_timeline_events_without_ts_or_type_are_left_out_with_a_warning(tmp_path: Path) -> None:
    doc = _doc(AGENT)
    doc["agents"][0]["metadata"] = {METADATA_KEY: {"timeline": [
        {"ts": "2026-01-01T00:00:00Z", "type": "note"}, {"type": "x"}, "junk"]}}
    (tmp_path / "t.af").write_text(json.dumps(doc), encoding="utf-8")
    tree = read_letta(tmp_path / "t.af")
    assert len(tree.timeline) == 1
    assert any("left out 2 timeline events" in w for w in tree.warnings)


@pytest.mark.parametrize(
    "value",
    ["\n" * 31, "  lead and trail  ", "\ttabs\t", "final cr\r", "", " ", "\r\n", "a\r\nb\r\n", "\u2028x\x85"],
)
def test_a_value_is_kept_byte_for_byte(tmp_path: Path, value: str) -> None:
    doc = _doc(AGENT)
    doc["blocks"][0]["value"] = value
    (tmp_path / "in.af").write_text(json.dumps(doc), encoding="utf-8")
    import_from("letta", tmp_path / "in.af", tmp_path / "tree")
    export_to("letta", tmp_path / "tree", tmp_path / "out.af")
    out = {b["label"]: b["value"] for b in _doc(tmp_path / "out.af")["blocks"]}
    assert out[doc["blocks"][0]["label"]] == value


@pytest.mark.parametrize(
    ("label", "kind"),
    [
        ("human", "user"),
        ("persona", "feedback"),
        ("system/human/family", "user"),
        ("system/persona/soul", "feedback"),
        ("system/persona", "feedback"),
        ("human/work", "user"),
        ("memory_persona", "reference"),
        ("reference/faq", "reference"),
        ("system", "reference"),
        ("system//human", "user"),
    ],
)
def test_a_label_reads_as_the_type_of_its_first_path_part(label: str, kind: str) -> None:
    assert label_type(label) == kind


def _with_loose_block(tmp_path: Path) -> Path:
    doc = _doc(AGENT)  # its fourth block, "scratch", is held by no agent
    path = tmp_path / "loose.af"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_all_blocks_imports_the_blocks_no_agent_holds_marked_unattached(tmp_path: Path) -> None:
    tree = read_letta(_with_loose_block(tmp_path), all_blocks=True)
    by_label = {e.meta["x-letta-label"]: e for e in tree.entries}
    assert by_label["scratch"].meta["x-letta-attached"] is False
    assert "x-letta-attached" not in by_label["human"].meta
    assert not any("--all-blocks" in w for w in tree.warnings)


def test_unattached_blocks_go_back_as_blocks_the_agent_does_not_hold(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["convert", "--from", "letta", str(_with_loose_block(tmp_path)),
                                      "-o", str(tmp_path / "tree"), "--all-blocks"])
    assert result.exit_code == 0, result.stderr
    export_to("letta", tmp_path / "tree", tmp_path / "out.af")
    doc = _doc(tmp_path / "out.af")
    held = set(doc["agents"][0]["block_ids"])
    assert {b["label"] for b in doc["blocks"] if b["id"] not in held} == {"scratch"}
    assert len(held) == 3


def test_without_all_blocks_the_warning_counts_the_blocks_left_out(tmp_path: Path) -> None:
    tree = read_letta(_with_loose_block(tmp_path))
    assert any("1 blocks attached to no agent (--all-blocks imports them)" in w for w in tree.warnings)


@pytest.mark.parametrize("version", ["0.6.47", "0.10.0"])
def test_a_legacy_agent_file_is_named_as_the_format_letta_no_longer_imports(tmp_path: Path, version: str) -> None:
    # The shape of letta-ai/letta tests/test_agent_files/*.af at 0.16.8: one agent, core_memory, a version.
    path = tmp_path / "old.af"
    path.write_text(json.dumps({"agent_type": "memgpt_agent", "core_memory": [], "version": version}), encoding="utf-8")
    with pytest.raises(ConvertError, match=f"legacy Letta agent file \\(version {version}.*Letta itself no longer imports"):
        read_letta(path)


def test_a_second_memory_with_a_taken_label_is_written_unattached_as_a_loss(tmp_path: Path) -> None:
    tree = ForeignTree([Entry("a", _meta(**{"x-letta-label": "human"}), "one"),
                        Entry("b", _meta(**{"x-letta-label": "human"}), "two")])
    write_letta(tree, tmp_path / "o.af")
    doc = _doc(tmp_path / "o.af")
    assert [b["value"] for b in doc["blocks"]] == ["one", "two"]
    assert doc["agents"][0]["block_ids"] == ["block-0"]
    assert [(loss.key, loss.left_out) for loss in tree.losses] == [("b", False)]
    assert "x-letta-label: 'human' is held by an earlier memory" in tree.losses[0].change
    assert tree.losses[0].warning() in tree.warnings


def test_a_bad_limit_in_the_tree_gives_the_default_as_a_loss(tmp_path: Path) -> None:
    tree = ForeignTree([Entry("a", _meta(**{"x-letta-limit": "big"}), "x")])
    write_letta(tree, tmp_path / "o.af")
    assert _doc(tmp_path / "o.af")["blocks"][0]["limit"] == 100_000
    assert [loss.change for loss in tree.losses] == ["x-letta-limit: not a positive integer; the default limit is written"]


@pytest.mark.parametrize(
    "carried",
    ["text", {"type": "nonsense"}, {"created": "yesterday"}, {"tags": "not a list"}, {"name": "two\nlines"}],
)
def test_bundlekit_fields_a_memory_cannot_hold_leave_the_block_as_letta_has_it(tmp_path: Path, carried: object) -> None:
    doc = _doc(AGENT)
    doc["blocks"][0]["metadata"] = {METADATA_KEY: carried, "other": 1}
    (tmp_path / "h.af").write_text(json.dumps(doc), encoding="utf-8")
    result = import_from("letta", tmp_path / "h.af", tmp_path / "tree")
    assert result.memories == 3
    record = Memory(tmp_path / "tree").read("human")
    assert record is not None
    assert record.type == "user" and record.name == "human"
    assert any(f"metadata.{METADATA_KEY}" in w for w in result.warnings)


def test_carried_fields_never_set_lettas_own_keys(tmp_path: Path) -> None:
    doc = _doc(AGENT)
    doc["blocks"][0]["metadata"] = {METADATA_KEY: {"x-letta-lead": "INJECTED", "deadline": "soon"}}
    (tmp_path / "h.af").write_text(json.dumps(doc), encoding="utf-8")
    entry = next(e for e in read_letta(tmp_path / "h.af").entries if e.key == "human")
    assert entry.meta["x-letta-lead"] == "\n" and entry.meta["deadline"] == "soon"


def test_convert_help_lists_letta_options_and_what_letta_cannot_hold(tmp_path: Path) -> None:
    done = _cli(tmp_path, "convert", "--help")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "--letta-model" in out and "--all-blocks" in out
    assert "letta: nothing of a memory" in " ".join(out.split())


def test_block_metadata_nested_deeper_than_frontmatter_holds_travels_as_json_text(tmp_path: Path) -> None:
    deep: dict[str, object] = {}
    cur = deep
    for _ in range(200):  # past the memory store's 64, within MAX_AGENT_DEPTH
        cur["a"] = {}
        cur = cur["a"]  # type: ignore[assignment]
    doc = _doc(AGENT)
    doc["blocks"][0]["metadata"] = {"x": deep}
    (tmp_path / "d.af").write_text(json.dumps(doc), encoding="utf-8")
    result = import_from("letta", tmp_path / "d.af", tmp_path / "tree")
    assert result.memories == 3
    assert any("kept as JSON text in x-letta-metadata-json" in w for w in result.warnings)
    export_to("letta", tmp_path / "tree", tmp_path / "back.af")
    back = {b["label"]: b for b in _doc(tmp_path / "back.af")["blocks"]}
    assert back["human"]["metadata"]["x"] == deep


def test_a_lone_surrogate_escape_reads_as_the_replacement_character_with_a_warning(tmp_path: Path) -> None:
    # "\ud800" is valid JSON but no UTF-8 file holds it: the memory store failed with a traceback.
    text = json.dumps(_doc(AGENT)).replace("Name: Alex", "Name: Alex \\ud800", 1)
    (tmp_path / "s.af").write_text(text, encoding="utf-8")
    result = import_from("letta", tmp_path / "s.af", tmp_path / "tree")
    assert result.memories == 3
    record = Memory(tmp_path / "tree").read("human")
    assert record is not None and "Name: Alex \ufffd" in record.body
    assert any("'human': lone UTF-16 surrogates" in w for w in result.warnings)


def test_a_300_kb_memory_is_exported_with_exit_0_and_named_in_the_json_warnings(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "mem")
    mem.write("small", name="S", description="d", type="user", body="b")
    mem.write("huge", name="H", description="d", type="reference", body="x" * 300_000)
    result = CliRunner().invoke(cli, ["convert", "--to", "letta", str(tmp_path / "mem"), "-o", str(tmp_path / "a.af"),
                                      "--json"])
    assert result.exit_code == 0, result.stderr
    warnings = json.loads(result.stdout)["warnings"]
    assert any("'huge' holds 300000 characters" in w and "exported with limit 300000" in w for w in warnings)
    limits = {b["label"]: b["limit"] for b in _doc(tmp_path / "a.af")["blocks"]}
    assert limits == {"huge": 300_000, "small": 100_000}


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``bundlekit ARGS`` through the CLI in this process (what convert writes and prints, not a process start)."""
    return in_process(args, cwd=cwd)


def _two_on_one_label(tmp_path: Path) -> Path:
    mem = Memory(tmp_path / "mem")
    for key in ("a", "b"):
        mem.write(key, name=key, description="d", type="user", body=key, extra={"x-letta-label": "human"})
    return tmp_path / "mem"


def test_strict_refuses_an_export_with_a_taken_label_writing_nothing(tmp_path: Path) -> None:
    result = _cli(tmp_path, "convert", "--to", "letta", str(_two_on_one_label(tmp_path)), "-o", str(tmp_path / "a.af"), "--strict")
    assert result.returncode == 1
    assert "cannot be carried exactly as letta (strict)" in result.stderr and "memory 'b'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "a.af").exists()


def test_without_strict_the_taken_label_is_a_loss_in_json_and_the_export_exits_0(tmp_path: Path) -> None:
    result = _cli(tmp_path, "convert", "--to", "letta", str(_two_on_one_label(tmp_path)), "-o", str(tmp_path / "a.af"), "--json")
    assert result.returncode == 0, result.stderr
    losses = json.loads(result.stdout)["losses"]
    assert [(loss["memory"], loss["left_out"]) for loss in losses] == [("b", False)]
    assert len(_doc(tmp_path / "a.af")["blocks"]) == 2


def test_strict_exports_a_memory_over_the_default_limit_since_every_byte_is_kept(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "mem")
    mem.write("huge", name="H", description="d", type="reference", body="x" * 150_000)
    result = _cli(tmp_path, "convert", "--to", "letta", str(tmp_path / "mem"), "-o", str(tmp_path / "a.af"), "--strict", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["losses"] == [] and any("exported with limit 150000" in w for w in report["warnings"])
    assert _doc(tmp_path / "a.af")["blocks"][0]["limit"] == 150_000


def test_a_memory_with_a_value_json_cannot_write_is_left_out_and_the_rest_written(tmp_path: Path) -> None:
    tree = ForeignTree([Entry("a", _meta(score=float("nan")), "one"), Entry("b", _meta(), "two")])
    write_letta(tree, tmp_path / "o.af")
    doc = _doc(tmp_path / "o.af")
    assert [b["value"] for b in doc["blocks"]] == ["two"] and doc["agents"][0]["block_ids"] == ["block-0"]
    assert [(loss.key, loss.left_out) for loss in tree.losses] == [("a", True)]


def test_strict_export_of_a_memory_json_cannot_write_raises_before_writing(tmp_path: Path) -> None:
    tree = ForeignTree([Entry("a", _meta(score=float("nan")), "one"), Entry("b", _meta(), "two")])
    with pytest.raises(ConvertError, match="left out memory 'a'.*nothing was written"):
        write_letta(tree, tmp_path / "o.af", strict=True)
    assert not (tmp_path / "o.af").exists()


def test_an_extra_key_naming_a_block_field_is_not_written_and_is_a_loss(tmp_path: Path) -> None:
    tree = ForeignTree([Entry("a", _meta(**{"x-letta-extra": {"value": "INJECTED", "hidden": True}}), "one")])
    write_letta(tree, tmp_path / "o.af")
    block = _doc(tmp_path / "o.af")["blocks"][0]
    assert block["value"] == "one" and block["hidden"] is True
    assert [loss.change for loss in tree.losses] == ["x-letta-extra key 'value' is a field the block has; not written"]


def test_a_read_only_that_is_no_boolean_is_written_false_as_a_loss(tmp_path: Path) -> None:
    tree = ForeignTree([Entry("a", _meta(**{"x-letta-read-only": "false"}), "one")])
    write_letta(tree, tmp_path / "o.af")
    assert _doc(tmp_path / "o.af")["blocks"][0]["read_only"] is False
    assert [loss.key for loss in tree.losses] == ["a"]


def _surrogate_file(tmp_path: Path) -> Path:
    text = json.dumps(_doc(AGENT)).replace("Name: Alex", "Name: Alex \\ud800", 1)
    (tmp_path / "s.af").write_text(text, encoding="utf-8")
    return tmp_path / "s.af"


def test_a_lone_surrogate_is_a_loss_of_its_memory_on_import(tmp_path: Path) -> None:
    tree = read_letta(_surrogate_file(tmp_path))
    assert [(loss.key, loss.left_out) for loss in tree.losses] == [("human", False)]


def test_strict_refuses_an_import_with_a_lone_surrogate_before_the_tree_is_touched(tmp_path: Path) -> None:
    result = _cli(tmp_path, "convert", "--from", "letta", str(_surrogate_file(tmp_path)), "-o", str(tmp_path / "tree"), "--strict")
    assert result.returncode == 1
    assert "into a bundlekit tree (strict)" in result.stderr and "U+FFFD" in result.stderr
    assert not (tmp_path / "tree").exists()


def _unfitting_fields_file(tmp_path: Path) -> Path:
    doc = _doc(AGENT)
    doc["blocks"][0]["metadata"] = {METADATA_KEY: {"created": "yesterday", "tags": ["t"]}}
    (tmp_path / "u.af").write_text(json.dumps(doc), encoding="utf-8")
    return tmp_path / "u.af"


def test_bundlekit_fields_that_do_not_fit_a_memory_are_a_loss_on_import(tmp_path: Path) -> None:
    result = import_from("letta", _unfitting_fields_file(tmp_path), tmp_path / "tree")
    assert result.memories == 3
    assert [(loss.key, loss.left_out) for loss in result.losses] == [("human", False)]
    assert result.losses[0].change.startswith(f"metadata.{METADATA_KEY}: does not fit a memory")


def test_strict_refuses_an_import_whose_bundlekit_fields_do_not_fit(tmp_path: Path) -> None:
    with pytest.raises(ConvertError, match="strict"):
        import_from("letta", _unfitting_fields_file(tmp_path), tmp_path / "tree", strict=True)
    assert not (tmp_path / "tree").exists()


def test_strict_imports_a_clean_agent_file(tmp_path: Path) -> None:
    result = import_from("letta", AGENT, tmp_path / "tree", strict=True)
    assert result.memories == 3 and result.losses == []


def test_a_created_at_that_is_no_timestamp_is_a_loss_and_the_files_time_is_used(tmp_path: Path) -> None:
    doc = _doc(AGENT)
    doc["created_at"] = "last tuesday"
    (tmp_path / "c.af").write_text(json.dumps(doc), encoding="utf-8")
    tree = read_letta(tmp_path / "c.af")
    assert [loss.change for loss in tree.losses] == ["created_at is not an ISO 8601 timestamp; the file's time is used"]


def test_an_agent_file_over_16_mib_is_refused_without_being_read(tmp_path: Path) -> None:
    path = tmp_path / "big.af"
    with path.open("wb") as fh:
        fh.truncate(MAX_AGENT_FILE + 1)  # sparse: the reader stops at the cap either way
    result = _cli(tmp_path, "convert", "--from", "letta", str(path), "-o", str(tmp_path / "tree"))
    assert result.returncode == 1
    assert "is larger than 16 MiB" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "tree").exists()


@pytest.mark.parametrize("depth", [MAX_AGENT_DEPTH + 1, 100_000])
def test_an_agent_file_nested_past_the_bound_is_refused_with_a_clear_error(tmp_path: Path, depth: int) -> None:
    doc = _doc(AGENT)
    text = json.dumps(doc).replace('"metadata": {}', '"metadata": {"x": ' + "[" * depth + "]" * depth + "}", 1)
    assert text != json.dumps(doc)
    (tmp_path / "d.af").write_text(text, encoding="utf-8")
    result = _cli(tmp_path, "convert", "--from", "letta", str(tmp_path / "d.af"), "-o", str(tmp_path / "tree"))
    assert result.returncode == 1
    assert f"nests deeper than {MAX_AGENT_DEPTH} levels" in result.stderr and "Traceback" not in result.stderr


def test_an_agent_file_nested_just_within_the_bound_converts_both_ways(tmp_path: Path) -> None:
    doc = _doc(AGENT)
    deep: object = []
    for _ in range(MAX_AGENT_DEPTH - 5):  # + the innermost list, the metadata, block, blocks list, document
        deep = [deep]
    doc["blocks"][0]["metadata"] = {"x": deep}
    doc["blocks"][0]["value"] += "\ud800"
    (tmp_path / "d.af").write_text(json.dumps(doc), encoding="utf-8")
    result = _cli(tmp_path, "convert", "--from", "letta", str(tmp_path / "d.af"), "-o", str(tmp_path / "tree"))
    assert result.returncode == 0, result.stderr
    back = _cli(tmp_path, "convert", "--to", "letta", str(tmp_path / "tree"), "-o", str(tmp_path / "back.af"))
    assert back.returncode == 0, back.stderr
    assert {b["label"]: b for b in _doc(tmp_path / "back.af")["blocks"]}["human"]["metadata"]["x"] == deep


def test_a_timeline_event_json_cannot_write_is_left_out_and_the_rest_exported(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "mem")
    mem.write("a", name="a", description="d", type="user", body="x")
    (tmp_path / "mem" / "timeline").mkdir()
    (tmp_path / "mem" / "timeline" / "2026-01-01.jsonl").write_text(
        '{"ts": "2026-01-01T00:00:00Z", "type": "write", "x": NaN}\n{"ts": "2026-01-01T00:00:01Z", "type": "write"}\n'
    )
    result = export_to("letta", tmp_path / "mem", tmp_path / "a.af")
    assert result.memories == 1 and result.timeline == 1
    change = "left out 1 timeline events holding a value JSON cannot write (NaN, infinity)"
    assert [loss.to_dict() for loss in result.losses] == [{"memory": None, "change": change, "left_out": True}]
    assert change in result.warnings
    assert len(_doc(tmp_path / "a.af")["agents"][0]["metadata"][METADATA_KEY]["timeline"]) == 1


def test_strict_refuses_a_timeline_event_json_cannot_write_before_writing(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "mem")
    mem.write("a", name="a", description="d", type="user", body="x")
    (tmp_path / "mem" / "timeline").mkdir()
    (tmp_path / "mem" / "timeline" / "2026-01-01.jsonl").write_text('{"ts": "2026-01-01T00:00:00Z", "type": "w", "x": NaN}\n')
    with pytest.raises(ConvertError, match="timeline events holding a value JSON cannot write"):
        export_to("letta", tmp_path / "mem", tmp_path / "a.af", strict=True)
    assert not (tmp_path / "a.af").exists()


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_an_agent_file_holding_nan_or_infinity_is_refused_as_no_json(tmp_path: Path, constant: str) -> None:
    # Python's json reads them; read, the memory could never be exported to an agent file again.
    text = json.dumps(_doc(AGENT)).replace('"metadata": {}', '"metadata": {"score": ' + constant + "}", 1)
    (tmp_path / "n.af").write_text(text, encoding="utf-8")
    with pytest.raises(ConvertError, match=f"not a Letta agent file \\(JSON\\): {constant} is not a JSON value"):
        read_letta(tmp_path / "n.af")
