"""What a target cannot hold (specs/interop.md 1.4): every memory converted, losses named, --strict refuses.

A memory a format cannot hold exactly is written in its nearest faithful form
or left out; either way a warning (stderr and ``--json``'s ``warnings`` and
``losses``) names it and the command exits 0. ``--strict`` turns any such
loss into exit 1 with nothing written.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.convert import ExportPlan, Unholdable, export_to
from bundlekit.convert._common import Entry, ForeignTree
from bundlekit.convert.claude_code import read_claude_code, write_claude_code
from bundlekit.convert.magic_context import write_magic_context
from bundlekit.convert.massgen import parse_massgen_file, write_massgen
from bundlekit.convert.threews import tree_to_blob
from bundlekit.errors import ConvertError
from bundlekit.memory import Memory

from .conftest import write

EM_DASH = "\u2014"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def tree_with_dashes(root: Path, count: int = 13, dashed: int = 5) -> Path:
    """``count`` memories; ``m<dashed>``'s description holds ``---`` (as a hand edit leaves it)."""
    memory = Memory(root)
    for i in range(count):
        memory.write(f"m{i:02d}", body=f"body {i}", name=f"m{i:02d}", description=f"d{i}", type="user")
    path = root / f"m{dashed:02d}.md"
    path.write_text(path.read_text().replace(f"description: d{dashed}\n", "description: a --- b\n"))
    return root


def entry(key: str, **meta: object) -> Entry:
    base: dict[str, object] = {"name": key, "description": "d", "type": "user"}
    base["updated"] = "2026-01-01T00:00:00Z"
    base.update(meta)
    return Entry(key, base, "body")


@pytest.mark.parametrize("fmt", ["massgen", "claude-code"])
def test_one_description_with_three_dashes_no_longer_blocks_the_export(fmt: str, tmp_path: Path) -> None:
    src = tree_with_dashes(tmp_path / "tree")
    code, out, err = run("convert", "--to", fmt, str(src), "-o", str(tmp_path / "out"), "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["memories"] == 13
    assert len([p for p in summary["paths"] if not p.endswith("MEMORY.md")]) == 13
    dashes = [loss for loss in summary["losses"] if "'---'" in loss["change"]]
    assert dashes == [{"memory": "m05", "change": dashes[0]["change"], "left_out": False}]
    assert any(w.startswith("memory 'm05': ") for w in summary["warnings"])
    assert "warning: memory 'm05': " in err


@pytest.mark.parametrize("fmt", ["massgen", "claude-code"])
def test_strict_turns_the_loss_into_exit_1_with_nothing_written(fmt: str, tmp_path: Path) -> None:
    src = tree_with_dashes(tmp_path / "tree")
    code, _out, err = run("convert", "--to", fmt, str(src), "-o", str(tmp_path / "out"), "--strict")
    assert code == 1
    assert "m05" in err and "nothing was written" in err
    assert not (tmp_path / "out").exists()


def test_strict_without_a_loss_exports_as_usual(tmp_path: Path) -> None:
    src = tree_with_dashes(tmp_path / "tree")
    (src / "m05.md").unlink()
    code, out, err = run("convert", "--to", "letta", str(src), "-o", str(tmp_path / "a.af"), "--strict", "--json")
    assert code == 0, err
    assert json.loads(out)["memories"] == 12 and json.loads(out)["losses"] == []


def test_an_unreadable_file_is_left_out_of_an_import_and_named(tmp_path: Path) -> None:
    write(tmp_path / "cc" / "ok.md", "---\nname: ok\ndescription: d\ntype: user\n---\nbody\n")
    (tmp_path / "cc" / "bad.md").write_bytes(b"---\nname: caf\xe9\n---\nbody\n")
    code, out, err = run(
        "convert", "--from", "claude-code", str(tmp_path / "cc"), "-o", str(tmp_path / "t"), "--json"
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["memories"] == 1
    assert summary["losses"][0]["left_out"] is True and summary["losses"][0]["memory"].endswith("bad.md")
    assert "bad.md is not UTF-8 text" in err


def test_strict_refuses_an_import_that_leaves_a_file_out(tmp_path: Path) -> None:
    write(tmp_path / "cc" / "ok.md", "---\nname: ok\ndescription: d\ntype: user\n---\nbody\n")
    (tmp_path / "cc" / "bad.md").write_bytes(b"---\nname: caf\xe9\n---\nbody\n")
    code, _out, err = run(
        "convert", "--from", "claude-code", str(tmp_path / "cc"), "-o", str(tmp_path / "t"), "--strict"
    )
    assert code == 1 and "nothing was written" in err
    assert not (tmp_path / "t").exists()


def test_a_timestamp_that_is_no_time_reads_as_the_file_time_with_a_warning(tmp_path: Path) -> None:
    text = "---\nname: a\ndescription: d\ntype: user\nmetadata: {modified: soon}\n---\nb\n"
    write(tmp_path / "cc" / "a.md", text)
    tree = read_claude_code(tmp_path / "cc")
    assert tree.entries[0].meta["updated"] == "2025-10-09T08:53:20Z"  # conftest.FIXED_MTIME
    assert [loss.left_out for loss in tree.losses] == [False]


def test_massgen_reads_the_em_dash_where_the_description_held_three_dashes(tmp_path: Path) -> None:
    write_massgen(ForeignTree([entry("x", description="a --- b")]), tmp_path)
    fields, content = parse_massgen_file((tmp_path / "memory" / "long_term" / "x.md").read_text())
    assert fields is not None and fields["description"] == f"a {EM_DASH} b"
    assert content == "body"


def test_claude_code_reads_the_em_dash_in_every_frontmatter_value(tmp_path: Path) -> None:
    tree = ForeignTree([entry("x", name="n---", **{"x-claude-code-extra": {"owner": "a---b"}})])
    write_claude_code(tree, tmp_path)
    meta = read_claude_code(tmp_path).entries[0].meta
    assert (meta["name"], meta["x-claude-code-extra"]) == (f"n{EM_DASH}", {"owner": f"a{EM_DASH}b"})
    assert [loss.key for loss in tree.losses] == ["x", "x"]


def test_a_memory_whose_file_is_taken_is_left_out_and_named(tmp_path: Path) -> None:
    first = entry("a", name="same", **{"x-massgen-name": "same"})
    second = entry("b", name="same", **{"x-massgen-name": "same"})
    tree = ForeignTree([first, second])
    paths = write_massgen(tree, tmp_path)
    assert paths == [tmp_path / "memory" / "long_term" / "same.md"]
    assert [(loss.key, loss.left_out) for loss in tree.losses] == [("b", True)]
    assert tree.warnings[0].startswith("left out memory 'b': ")


def test_json_counts_only_the_memories_written(tmp_path: Path) -> None:
    src = tmp_path / "tree"
    Memory(src).write("a", body="x", name="A", description="d", type="user")
    Memory(src).write("b", body="y", name="B", description="d", type="user")
    path = src / "b.md"
    path.write_text(path.read_text().replace("type: user\n", "type: user\nx-massgen-name: a\n"))
    code, out, _err = run("convert", "--to", "massgen", str(src), "-o", str(tmp_path / "out"), "--json")
    summary = json.loads(out)
    assert code == 0 and summary["memories"] == 1
    assert [loss["memory"] for loss in summary["losses"] if loss["left_out"]] == ["b"]


def test_a_plan_under_strict_refuses_before_writing_any_file(tmp_path: Path) -> None:
    plan = ExportPlan("massgen", strict=True)
    plan.add(tmp_path / "a.md", "a")
    plan.altered("a", "description: shortened")
    with pytest.raises(ConvertError, match="1 memory cannot be carried exactly as massgen"):
        plan.commit()
    assert list(tmp_path.iterdir()) == []


def test_a_plan_refuses_a_new_file_that_exists_before_writing_any(tmp_path: Path) -> None:
    (tmp_path / "db").write_bytes(b"theirs")
    plan = ExportPlan("magic-context")
    plan.add(tmp_path / "other", "x")
    plan.add(tmp_path / "db", b"ours", new=True)
    with pytest.raises(ConvertError, match="already exists"):
        plan.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db"]
    assert (tmp_path / "db").read_bytes() == b"theirs"


def test_an_unholdable_memory_is_left_out_with_its_reason(tmp_path: Path) -> None:
    plan = ExportPlan("x")

    def render(e: Entry) -> str:
        if e.key == "bad":
            raise Unholdable("it holds nothing the target has")
        return e.key

    kept = plan.memories([entry("ok"), entry("bad")], render)
    assert [(e.key, out) for e, out in kept] == [("ok", "ok")]
    assert [loss.warning() for loss in plan.losses] == [
        "left out memory 'bad': it holds nothing the target has"
    ]


def test_threews_leaves_out_an_extra_key_that_would_write_another_field() -> None:
    tree = ForeignTree([entry("x", **{"x-threews-extra": {"q\nname": "EVIL", "ok": "v"}})])
    text = tree_to_blob(tree, namespace=None)["files"]["x.md"]
    assert "\nname: EVIL" not in text and "ok: v\n" in text
    assert any("x-threews-extra key 'q\\nname'" in w for w in tree.warnings)


def test_claude_code_metadata_form_writes_no_modified_for_a_memory_without_a_time(tmp_path: Path) -> None:
    write(tmp_path / "src" / "x.md", "---\nname: X\ndescription: d\ntype: user\n---\nbody\n")
    write_claude_code(read_claude_code(tmp_path / "src"), tmp_path / "out", form="metadata")
    assert "modified" not in (tmp_path / "out" / "x.md").read_text()


def test_claude_code_metadata_form_writes_modified_for_a_memory_with_a_time(tmp_path: Path) -> None:
    write_claude_code(ForeignTree([entry("x")]), tmp_path, form="metadata")
    assert "  modified: 2026-01-01T00:00:00.000Z\n" in (tmp_path / "x.md").read_text()


def test_claude_code_writes_modified_once_a_timeless_memory_is_changed(tmp_path: Path) -> None:
    write(tmp_path / "src" / "x.md", "---\nname: X\ndescription: d\ntype: user\n---\nbody\n")
    tree = read_claude_code(tmp_path / "src")
    tree.entries[0].meta["updated"] = "2026-05-05T05:05:05Z"
    write_claude_code(tree, tmp_path / "out", form="metadata")
    assert "  modified: 2026-05-05T05:05:05.000Z\n" in (tmp_path / "out" / "x.md").read_text()


def test_a_memory_the_tree_cannot_hold_is_left_out_of_an_import_and_named(tmp_path: Path) -> None:
    many = "".join(f"k{i}: v\n" for i in range(10_001))
    tier = tmp_path / "mg" / "memory" / "long_term"
    write(tier / "wide.md", f"---\nname: wide\ndescription: d\n{many}---\nb\n")
    write(tier / "ok.md", "---\nname: ok\ndescription: d\n---\nb\n")
    code, out, err = run(
        "convert", "--from", "massgen", str(tmp_path / "mg"), "-o", str(tmp_path / "t"), "--json"
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["memories"] == 1 and [loss["memory"] for loss in summary["losses"]] == ["wide"]
    assert sorted(p.name for p in (tmp_path / "t").glob("*.md")) == ["MEMORY.md", "ok.md"]


def test_magic_context_leaves_out_a_second_memory_of_the_same_content(tmp_path: Path) -> None:
    meta = {"x-magic-context-project": "p", "x-magic-context-category": "NAMING", "created": "2026-01-01"}
    tree = ForeignTree([entry("a", **meta), entry("b", **meta)])  # both bodies are "body"
    write_magic_context(tree, tmp_path / "out.db")
    conn = sqlite3.connect(tmp_path / "out.db")
    assert conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)
    conn.close()
    assert [(loss.key, loss.left_out) for loss in tree.losses] == [("b", True)]


def test_magic_context_writes_a_carried_mapping_as_json_text(tmp_path: Path) -> None:
    meta = {"x-magic-context-project": "p", "x-magic-context-columns": {"extra_info": {"k": [1]}}}
    meta["created"] = "2026-01-01"
    tree = ForeignTree([entry("a", **meta)])
    write_magic_context(tree, tmp_path / "out.db")
    conn = sqlite3.connect(tmp_path / "out.db")
    assert conn.execute("SELECT extra_info FROM memories").fetchone() == ('{"k": [1]}',)
    conn.close()
    assert [loss.key for loss in tree.losses] == ["a"]


def test_device_memory_left_out_by_choice_is_a_warning_that_strict_lets_through(tmp_path: Path) -> None:
    src = tmp_path / "tree"
    memory = Memory(src)
    memory.write("plain", body="x", name="plain", description="d", type="user")
    memory.write("paths", body="y", name="paths", description="d", type="reference",
                 extra={"x-magicfrog-dimension": "device"})
    code, out, err = run("convert", "--to", "letta", str(src), "-o", str(tmp_path / "a.af"),
                         "--exclude-device", "--strict", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["memories"] == 1 and summary["losses"] == []
    assert "left out 1 device memories (they never leave this machine)" in summary["warnings"]


def test_strict_names_the_timeline_a_format_drops(tmp_path: Path) -> None:
    src = tmp_path / "tree"
    Memory(src).write("plain", body="x", name="plain", description="d", type="user")
    Memory(src).note("played_clip", name="kick")
    with pytest.raises(ConvertError, match=r"the timeline cannot be carried exactly.*left out 1 timeline event: "):
        export_to("massgen", src, tmp_path / "ws", strict=True)
    assert not (tmp_path / "ws").exists()
