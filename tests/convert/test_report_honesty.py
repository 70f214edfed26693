"""convert counts only the timeline events it wrote, and warns about the ones a format cannot hold."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.convert import export_to, import_from
from bundlekit.crypto._keys import PrivateKeySigner
from bundlekit.memory import Memory

WALLET = "0x" + "4c" * 32


@pytest.fixture
def tree(threews_file: Path, tmp_path: Path) -> Path:
    """A bundlekit tree holding three.ws's sample: memories and two timeline events."""
    import_from("three.ws", threews_file, tmp_path / "mem")
    assert len(Memory(tmp_path / "mem").timeline()) == 2
    return tmp_path / "mem"


@pytest.mark.parametrize("fmt", ["massgen", "claude-code", "magic-context", "magicfrog"])
def test_a_format_without_a_timeline_reports_no_timeline_events(fmt: str, tree: Path, tmp_path: Path) -> None:
    if fmt == "magic-context":
        result = export_to(fmt, tree, tmp_path / "out.db", project="git:" + "0" * 40)
    else:
        result = export_to(fmt, tree, tmp_path / "out")
    assert result.timeline == 0


def test_the_events_left_out_are_named_in_a_warning(tree: Path, tmp_path: Path) -> None:
    result = export_to("massgen", tree, tmp_path / "out")
    assert "left out 2 timeline events: massgen has no timeline" in result.warnings


def test_one_event_left_out_is_named_in_the_singular(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "mem")
    mem.write("user_role", name="Role", description="d", type="user", body="b")
    mem.note("played_clip", name="demo-kick")
    result = export_to("massgen", tmp_path / "mem", tmp_path / "out")
    assert "left out 1 timeline event: massgen has no timeline" in result.warnings


def test_a_tree_without_timeline_events_draws_no_warning(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "mem")
    mem.write("user_role", name="Role", description="plays 5-a-side", type="user", body="Saturdays.")
    for path in (tmp_path / "mem" / "timeline").glob("*"):
        path.unlink()
    result = export_to("massgen", tmp_path / "mem", tmp_path / "out")
    assert not [w for w in result.warnings if "timeline" in w]


def test_a_plain_threews_export_counts_the_events_it_wrote(tree: Path, tmp_path: Path) -> None:
    result = export_to("three.ws", tree, tmp_path / "out.json", namespace="agent-7")
    assert result.timeline == 2 and not result.warnings


def test_an_encrypted_threews_export_counts_no_events_and_warns(tree: Path, tmp_path: Path) -> None:
    result = export_to("three.ws", tree, tmp_path / "out.json", namespace="agent-7", key=PrivateKeySigner(WALLET))
    assert result.timeline == 0
    assert "left out 2 timeline events: three.ws has no timeline in its encrypted form" in result.warnings


def test_an_import_counts_only_events_new_to_the_tree(threews_file: Path, tree: Path) -> None:
    again = import_from("three.ws", threews_file, tree)
    assert again.timeline == 0


def test_the_cli_summary_leaves_out_unwritten_events_and_warns_on_stderr(tree: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["convert", "--to", "massgen", str(tree), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0
    assert "warning: left out 2 timeline events: massgen has no timeline" in result.stderr
    assert "timeline" not in result.stdout


@pytest.mark.parametrize(
    ("fmt", "lost"),
    [("massgen", "type"), ("claude-code", "created"), ("magicfrog", "description")],
)
def test_every_export_names_the_fields_the_format_has_no_place_for(
    fmt: str, lost: str, tree: Path, tmp_path: Path
) -> None:
    dest = tmp_path / ("out.af" if fmt == "letta" else "out")
    warnings = export_to(fmt, tree, dest).warnings
    assert any(w.startswith(f"left out fields {fmt} has no place for") and f"{lost} (" in w for w in warnings)


def test_magic_context_export_names_the_fields_it_leaves_out(tree: Path, tmp_path: Path) -> None:
    result = export_to("magic-context", tree, tmp_path / "out.db", project="git:" + "0" * 40)
    assert any("left out fields magic-context has no place for" in w and "name (2 memories)" in w for w in result.warnings)


def test_the_json_summary_carries_every_warning(tree: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["convert", "--to", "massgen", str(tree), "-o", str(tmp_path / "o"), "--json"])
    assert result.exit_code == 0, result.stderr
    warnings = __import__("json").loads(result.stdout)["warnings"]
    assert "left out 2 timeline events: massgen has no timeline" in warnings
    assert any(w.startswith("left out fields massgen has no place for") for w in warnings)


def test_help_says_which_formats_are_lossy() -> None:
    result = CliRunner().invoke(cli, ["convert", "--help"])
    assert result.exit_code == 0
    for fmt in ("massgen", "claude-code", "three.ws", "magic-context", "magicfrog", "letta"):
        assert f"  {fmt}: " in result.stdout
    assert "Lossy" in result.stdout


@pytest.mark.parametrize("fmt", ["massgen", "claude-code", "three.ws", "magic-context", "magicfrog"])
def test_help_names_every_field_an_export_leaves_out(fmt: str, tmp_path: Path) -> None:
    from bundlekit.convert import get_format

    mem = Memory(tmp_path / "mem")
    mem.write("a", name="A", description="d", type="user", body="b", tags=["t"], source="chat",
              decay="30d", important=True)
    dest = tmp_path / {"magic-context": "o.db", "letta": "o.af", "three.ws": "o.json"}.get(fmt, "o")
    options = {"project": "git:" + "0" * 40} if fmt == "magic-context" else {}
    result = export_to(fmt, tmp_path / "mem", dest, **options)
    prefix = f"left out fields {fmt} has no place for: "
    left_out = [w.removeprefix(prefix) for w in result.warnings if w.startswith(prefix)]
    fields = {part.split(" (")[0] for w in left_out for part in w.split(", ")}
    lossy = get_format(fmt).lossy
    assert fields and all(field in lossy for field in fields), (fields, lossy)
