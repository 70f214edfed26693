"""Letta Agent Files: memory blocks in and out.

``fixtures/interop/letta`` is derived by its ``generate.py`` from
letta-ai/agent-file's ``agents/@letta-ai/loop/loop.af`` (commit 78212eb): the
example's document, agent and block keys with our own values;
``agent-double.af`` is double-encoded like that repository's ``customer_service.af``.
Block fields follow letta's ``BlockSchema`` (``letta/schemas/agent_file.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.convert import export_to, import_from
from bundlekit.convert._common import Entry, ForeignTree
from bundlekit.convert.letta import DEFAULT_LIMIT, read_letta, write_letta
from bundlekit.errors import ConvertError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "interop" / "letta"
AGENT = FIXTURES / "agent.af"
SOURCE = json.loads(AGENT.read_text(encoding="utf-8"))
BLOCKS = {b["label"]: b for b in SOURCE["blocks"]}


def by_label(path: Path = AGENT) -> dict[str, Entry]:
    return {e.meta["x-letta-label"]: e for e in read_letta(path).entries}


@pytest.mark.parametrize("label", ["human", "persona", "project_notes"])
def test_every_block_field_is_read(label: str) -> None:
    e, block = by_label()[label], BLOCKS[label]
    assert e.meta.get("x-letta-lead", "") + e.body + e.meta.get("x-letta-trail", "") == block["value"]
    assert e.meta["x-letta-limit"] == block["limit"]
    assert e.meta["x-letta-read-only"] == block["read_only"]
    assert e.meta.get("x-letta-description") == block["description"]
    assert e.meta.get("x-letta-no-description", False) is (block["description"] is None)
    assert e.meta["x-letta-metadata"] == block["metadata"]


def test_only_the_agents_own_blocks_are_read_and_the_rest_is_reported() -> None:
    tree = read_letta(AGENT)
    assert [e.key for e in tree.entries] == ["human", "persona", "project_notes"]
    assert any(
        "2 messages" in w
        and "the system prompt" in w
        and "1 blocks attached to no agent (--all-blocks imports them)" in w
        for w in tree.warnings
    )


def test_a_double_encoded_file_reads_the_same() -> None:
    plain, double = by_label(), by_label(FIXTURES / "agent-double.af")
    assert {k: (e.meta, e.body) for k, e in plain.items()} == {k: (e.meta, e.body) for k, e in double.items()}


def test_round_trip_through_a_tree_gives_the_blocks_back(tmp_path: Path) -> None:
    import_from("letta", AGENT, tmp_path / "tree")
    export_to("letta", tmp_path / "tree", tmp_path / "out.af")
    out = json.loads((tmp_path / "out.af").read_text(encoding="utf-8"))
    fields = ("label", "value", "limit", "read_only", "description", "metadata")
    for b in out["blocks"]:
        b["metadata"].pop("bundlekit")  # bundlekit's own fields (tests/convert/test_letta.py)
    assert sorted(tuple(json.dumps(b[f]) for f in fields) for b in out["blocks"]) == sorted(
        tuple(json.dumps(BLOCKS[label][f]) for f in fields) for label in ("human", "persona", "project_notes")
    )
    assert out["agents"][0]["block_ids"] == [b["id"] for b in out["blocks"]]


def test_a_block_over_the_default_limit_gets_its_limit_raised_to_fit_with_a_warning(tmp_path: Path) -> None:
    # Letta 0.16.7 stopped enforcing limits (letta-ai/letta d34cb1c "deprecate enforcing block limits").
    huge = Entry("big", {"name": "b", "description": "d", "type": "user"}, "x" * (DEFAULT_LIMIT + 1))
    tree = ForeignTree([huge])
    write_letta(tree, tmp_path / "out.af")
    (block,) = json.loads((tmp_path / "out.af").read_text(encoding="utf-8"))["blocks"]
    assert block["limit"] == DEFAULT_LIMIT + 1
    assert any("'big'" in w and f"exported with limit {DEFAULT_LIMIT + 1}" in w for w in tree.warnings)


def test_a_block_over_its_own_limit_keeps_that_limit_with_a_warning(tmp_path: Path) -> None:
    # ezra.af holds such blocks; a Letta 0.16.8 server imports and exports them unchanged.
    long = Entry("notes", {"name": "n", "description": "d", "type": "user", "x-letta-limit": 5}, "123456")
    tree = ForeignTree([long])
    write_letta(tree, tmp_path / "out.af")
    (block,) = json.loads((tmp_path / "out.af").read_text(encoding="utf-8"))["blocks"]
    assert (block["limit"], block["value"]) == (5, "123456")
    assert any("'notes' holds 6 characters, over its limit 5: kept as is" in w for w in tree.warnings)


def test_export_carries_every_field_of_a_memory(tmp_path: Path) -> None:
    import_from("letta", AGENT, tmp_path / "tree")
    result = export_to("letta", tmp_path / "tree", tmp_path / "out.af")
    assert not any("has no place for" in w for w in result.warnings)


def test_cli_json_carries_the_warnings(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["convert", "--from", "letta", str(AGENT), "-o", str(tmp_path / "tree"), "--json"]
    )
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["memories"] == 3
    assert any("not a memory block" in w for w in summary["warnings"])


def test_several_agents_need_a_choice(tmp_path: Path) -> None:
    doc = dict(SOURCE)
    doc["agents"] = SOURCE["agents"] + [{**SOURCE["agents"][0], "id": "agent-1", "name": "other"}]
    path = tmp_path / "two.af"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ConvertError, match="several agents"):
        read_letta(path)
    assert len(read_letta(path, agent_id="other").entries) == 3


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("limit", "big", "limit is not a positive integer"),
        ("limit", 0, "limit is not a positive integer"),
        ("read_only", "no", "read_only is not true or false"),
        ("metadata", [1, 2], "metadata is not a JSON object"),
    ],
)
def test_a_block_field_of_another_type_than_lettas_schema_is_refused(
    tmp_path: Path, field: str, value: object, problem: str
) -> None:
    # letta/schemas/block.py: limit int, read_only bool, metadata dict; carried as read, "big" failed the
    # export back and a list was lost on it.
    doc = json.loads(AGENT.read_text(encoding="utf-8"))
    doc["blocks"][0][field] = value
    path = tmp_path / "odd.af"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ConvertError, match=f"block 'block-0': {problem}; fix the agent file"):
        read_letta(path)
