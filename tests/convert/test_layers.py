"""Dimension merge: the most specific layer wins for the same path."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bundlekit.bundle.build import BuildOptions
from bundlekit.bundle.layers import effective_view, load_layered, parse_layer_option, render_layered_context
from bundlekit.errors import LoadError, UsageError
from bundlekit.memory import Memory


def clock() -> datetime:
    return datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)


def tree(root: Path, memories: dict[str, str], *, notes: tuple[str, ...] = ()) -> Path:
    mem = Memory(root, clock=clock)
    for key, body in memories.items():
        mem.write(key, name=key.title(), description=f"{key} from {root.name}", type="user", body=body)
    for n in notes:
        mem.note("event", what=n)
    return root


@pytest.fixture
def layers(tmp_path: Path) -> list[tuple[str, str]]:
    account = tree(
        tmp_path / "account",
        {"style": "Account style.", "billing": "Invoices monthly."},
        notes=("account-note",),
    )
    user = tree(tmp_path / "user", {"style": "User style.", "units": "Metric."})
    task = tree(tmp_path / "task", {"Style": "Task style.", "progress": "Step 2 of 5."}, notes=("task-note",))
    return [("account", str(account)), ("task", str(task)), ("user", str(user))]


def test_most_specific_layer_wins_for_the_same_path(layers: list[tuple[str, str]], tmp_path: Path) -> None:
    result = load_layered(layers, tmp_path / "out")
    assert result.winners == {"billing": "account", "progress": "task", "Style": "task", "units": "user"}
    out = Memory(tmp_path / "out")
    assert sorted(r.key for r in out.list()) == ["Style", "billing", "progress", "units"]
    assert (tmp_path / "out" / "Style.md").read_bytes() == (tmp_path / "task" / "Style.md").read_bytes()


def test_overrides_are_reported(layers: list[tuple[str, str]], tmp_path: Path) -> None:
    result = load_layered(layers, tmp_path / "out")
    assert result.overridden == [("Style", "user", "task"), ("style", "account", "user")]


def test_layer_order_in_the_arguments_does_not_matter(layers: list[tuple[str, str]]) -> None:
    a = effective_view(layers)
    b = effective_view(list(reversed(layers)))
    assert [(n, r.raw) for n, r in a.records] == [(n, r.raw) for n, r in b.records]


def test_timelines_of_all_layers_are_united(layers: list[tuple[str, str]], tmp_path: Path) -> None:
    load_layered(layers, tmp_path / "out")
    assert sorted(e["what"] for e in Memory(tmp_path / "out").timeline()) == ["account-note", "task-note"]


def test_layer_given_as_a_bundle(layers: list[tuple[str, str]], tmp_path: Path) -> None:
    from bundlekit.bundle.build import build_bundle

    car = tmp_path / "task.car"
    build_bundle(dict(layers)["task"], car, options=BuildOptions(created=clock()))
    mixed = [("account", dict(layers)["account"]), ("task", str(car))]
    result = load_layered(mixed, tmp_path / "out")
    assert result.winners["Style"] == "task"
    assert (tmp_path / "out" / "Style.md").read_bytes() == (tmp_path / "task" / "Style.md").read_bytes()


def test_unknown_layer_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown layer"):
        effective_view([("team", str(tmp_path))])


def test_device_is_not_a_layer(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="never merges"):
        effective_view([("device", str(tmp_path))])


def test_repeated_layer_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="twice"):
        effective_view([("user", str(tmp_path)), ("user", str(tmp_path))])


def test_output_directory_must_be_empty(layers: list[tuple[str, str]], tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("keep")
    with pytest.raises(UsageError, match="not an empty directory"):
        load_layered(layers, tmp_path / "out")
    assert (tmp_path / "out" / "x").read_text() == "keep"


def test_layer_option_parsing() -> None:
    assert parse_layer_option(["task=ipfs://bafy", "user=./u"]) == [("task", "ipfs://bafy"), ("user", "./u")]
    with pytest.raises(UsageError, match="NAME=URI"):
        parse_layer_option(["task"])


def test_context_renders_most_specific_layer_first(layers: list[tuple[str, str]]) -> None:
    text = render_layered_context(layers)
    assert text.startswith("<memory>\n## task\n\n")
    assert text.index("## task") < text.index("## user") < text.index("## account")
    assert text.endswith("</memory>")
    assert "Task style." in text and "User style." not in text and "Account style." not in text


def test_context_respects_the_budget(layers: list[tuple[str, str]]) -> None:
    text = render_layered_context(layers, max_tokens=30)
    assert 0 < len(text) <= 120
    assert text.startswith("<memory>\n## task")


def test_context_with_no_room_is_empty(layers: list[tuple[str, str]]) -> None:
    assert render_layered_context(layers, max_tokens=2) == ""


def test_layered_memory_is_the_effective_view_in_memory(layers: list[tuple[str, str]]) -> None:
    from bundlekit.bundle.layers import layered_memory

    mem = layered_memory(layers)
    rec = mem.read("Style")
    assert mem.mode == "none" and rec is not None and rec.body == "Task style."
    assert [h.key for h in mem.recall("style")] == ["Style"]


def test_memory_context_cli_renders_layers(layers: list[tuple[str, str]]) -> None:
    from click.testing import CliRunner

    from bundlekit.cli import cli

    args = ["memory", "context"] + [a for name, src in layers for a in ("--layer", f"{name}={src}")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("<memory>\n## task")


def test_load_cli_writes_the_layered_view(layers: list[tuple[str, str]], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from bundlekit.cli import cli

    args = ["load", "-o", str(tmp_path / "out")] + [
        a for name, src in layers for a in ("--layer", f"{name}={src}")
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "Style.md").read_bytes() == (tmp_path / "task" / "Style.md").read_bytes()


def test_an_output_under_a_file_is_a_load_error(layers: list[tuple[str, str]], tmp_path: Path) -> None:
    """Regression: the merged tree's write let a raw OSError (FileExistsError) escape."""
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    with pytest.raises(LoadError, match=f"cannot write {blocker / 'out'}: a file is in the way"):
        load_layered(layers, blocker / "out")
    assert blocker.read_text() == "x"


def test_a_merged_tree_follows_the_umask(layers: list[tuple[str, str]], tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        load_layered(layers, tmp_path / "out")
    finally:
        os.umask(old)
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o750
