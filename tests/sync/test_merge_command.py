"""`bundlekit merge` and `merge_bundle`: fork and merge back, the report, --dry-run, all or nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.bundle.lineage import read_last, read_parents
from bundlekit.bundle.merge import MergeOptions, merge_bundle
from bundlekit.cli import cli
from bundlekit.errors import SecretDetectedError
from bundlekit.memory import Memory


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _clock(day: int) -> Callable[[], datetime]:
    return lambda: datetime(2026, 4, day, 12, 0, 0, tzinfo=UTC)


def _tree(path: Path) -> Path:
    mem = Memory(path, namespace="coach", clock=_clock(10))
    mem.write("user_role", name="Role", description="plays 5-a-side", type="user", body="Winger.")
    mem.write("feedback_tone", name="Tone", description="warm", type="feedback", body="Be direct.")
    mem.write("project_old", name="Old", description="old", type="project", body="Old plan.")
    return path


def _pin(tree: Path) -> str:
    code, out, err = _run("pin", str(tree))
    assert code == 0, err
    return out.strip()


def _files(tree: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(tree.glob("*.md")) if p.name != "MEMORY.md"}


@pytest.fixture
def forked(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """Tree A pinned as RA; B forked from RA, changed and pinned as RB; A changed meanwhile."""
    a = _tree(tmp_path / "a")
    ra = _pin(a)
    b = tmp_path / "b"
    code, _out, err = _run("fork", f"ipfs://{ra}", str(b))
    assert code == 0, err
    mb = Memory(b, clock=_clock(12))
    mb.write("project_new", name="New", description="from b", type="project", body="B learned this.")
    mb.write("user_role", name="Role", description="plays 5-a-side", type="user", body="Striker now.")
    mb.forget("project_old")
    rb = _pin(b)
    Memory(a, clock=_clock(11)).write("feedback_tone", name="Tone", description="warm but direct",
                                      type="feedback", body="Be direct.")
    return a, b, ra, rb


def test_fork_and_merge_back_takes_both_sides_and_the_next_build_names_both_parents(
        forked: tuple[Path, Path, str, str]) -> None:
    a, _b, ra, rb = forked
    code, out, err = _run("merge", f"ipfs://{rb}/manifest.json", "--into", str(a), "--json",
                          "--allow-deletes")
    assert code == 0, err
    report = json.loads(out)
    assert report["base"] == ra and report["conflicts"] == [] and report["written"] is True
    mem = Memory(a)
    assert mem.read("project_new") is not None and mem.read("project_old") is None
    role, tone = mem.read("user_role"), mem.read("feedback_tone")
    assert role is not None and role.body == "Striker now."
    assert tone is not None and tone.description == "warm but direct"
    assert read_parents(a) == sorted([ra, rb])
    merged = _pin(a)
    code, out, err = _run("log", f"ipfs://{merged}", "--json")
    assert code == 0, err
    assert json.loads(out)["steps"][0]["parents"] == sorted([ra, rb])


def test_merging_the_same_bundle_again_changes_nothing(forked: tuple[Path, Path, str, str]) -> None:
    a, _b, _ra, rb = forked
    merge_bundle(f"ipfs://{rb}", a, options=MergeOptions(allow_deletes=True))
    before = _files(a)
    again = merge_bundle(f"ipfs://{rb}", a)
    assert again.base == rb and again.written is False and _files(a) == before


def test_the_report_table_names_each_key_with_its_action_and_side(forked: tuple[Path, Path, str, str]) -> None:
    a, _b, _ra, rb = forked
    code, out, err = _run("merge", f"ipfs://{rb}", "--into", str(a), "--allow-deletes")
    assert code == 0, err
    rows = [line.split()[:3] for line in out.splitlines()]
    assert rows[0] == ["KEY", "ACTION", "FROM"] and rows[1] == ["project_old", "deleted", "theirs"]
    assert ["project_new", "added", "theirs"] in rows and ["project_old", "deleted", "theirs"] in rows
    assert "merged" in err and "over" in err


def test_dry_run_reports_and_writes_nothing(forked: tuple[Path, Path, str, str]) -> None:
    a, _b, ra, rb = forked
    before, parents = _files(a), read_parents(a)
    code, out, _err = _run("merge", f"ipfs://{rb}", "--into", str(a), "--dry-run", "--json")
    assert code == 0 and json.loads(out)["written"] is False and json.loads(out)["counts"]["added"] == 1
    assert _files(a) == before and read_parents(a) == parents and read_last(a) == ra


def test_on_conflict_fail_exits_1_and_writes_nothing(forked: tuple[Path, Path, str, str]) -> None:
    a, _b, _ra, rb = forked
    Memory(a, clock=_clock(13)).write("user_role", name="Role", description="plays 5-a-side", type="user",
                                      body="Goalkeeper.")
    before = _files(a)
    code, _out, err = _run("merge", f"ipfs://{rb}", "--into", str(a), "--on-conflict", "fail")
    assert code == 1 and "user_role" in err and _files(a) == before


def test_a_both_conflict_keeps_the_later_change_and_the_other_beside_it(forked: tuple[Path, Path, str, str]) -> None:
    a, _b, _ra, rb = forked
    Memory(a, clock=_clock(13)).write("user_role", name="Role", description="plays 5-a-side", type="user",
                                      body="Goalkeeper.")
    result = merge_bundle(f"ipfs://{rb}", a, options=MergeOptions(allow_deletes=True))
    [conflict] = result.report.conflicts
    assert conflict.winner == "ours" and conflict.sibling is not None and ".conflict-" in conflict.sibling
    sibling = Memory(a).read(conflict.sibling)
    assert sibling is not None and sibling.body == "Striker now."
    assert sibling.meta["x-bundlekit-conflict-of"] == "user_role"
    [entry] = [e for e in result.report.entries if e.action == "sibling"]
    assert entry.detail.endswith(f"from ipfs://{rb}")


def test_a_missing_tree_is_a_usage_error(tmp_path: Path) -> None:
    code, _out, err = _run("merge", str(tmp_path / "x.car"), "--into", str(tmp_path / "none"))
    assert code == 2 and "not a directory" in err


def test_a_merge_that_cannot_be_written_whole_writes_nothing(tmp_path: Path) -> None:
    mem = Memory(_tree(tmp_path / "a"), clock=_clock(10))
    before = _files(tmp_path / "a")
    good = mem.read("user_role")
    assert good is not None
    secret = good.raw.replace("Winger.", "key " + "AKIA" + "IOSFODNN7EXAMPLE")
    with pytest.raises(SecretDetectedError), mem.transaction() as tx:
        tx.apply({"project_x.md": good.raw.replace("Winger.", "x"), "user_role.md": secret}, {})
    assert _files(tmp_path / "a") == before
