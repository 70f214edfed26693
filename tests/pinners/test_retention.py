"""Release retention: list by name prefix, keep the newest N, unpin the rest only with --yes (issue 13)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.blockstore import BlockStore
from bundlekit.cli import cli
from bundlekit.errors import UsageError
from bundlekit.pinning.protocol import PinEntry
from bundlekit.pinning.retention import plan_retirement, retire, retire_everywhere
from pinners.filebase import FilebasePinner
from pinners.local import LocalPinner

from .conftest import build_car


def releases(home: Path, tmp_path: Path, count: int) -> list[str]:
    """``count`` releases pinned in the store at ``home`` an hour apart, named memory-1.. (oldest first)."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    roots = []
    for i in range(count):
        store = BlockStore(home, fsync=False, clock=lambda i=i: start + timedelta(hours=i))
        car = build_car(tmp_path / f"r{i}.car", [f"release {i}".encode()])
        with car.open() as fh:
            LocalPinner(store).pin(fh, car.root, name=f"memory-{i + 1}")
        roots.append(car.root_text)
    store = BlockStore(home, fsync=False)
    other = build_car(tmp_path / "other.car", [b"not a release"])
    with other.open() as fh:
        LocalPinner(store).pin(fh, other.root, name="notes")
    return roots


def test_the_newest_are_kept_by_date_then_name() -> None:
    entries = [PinEntry("a", "memory-a", "2026-01-01T00:00:00Z"), PinEntry("b", "memory-b", "2026-01-03T00:00:00Z"),
               PinEntry("c", "memory-c", "2026-01-02T00:00:00Z"), PinEntry("d", "memory-d", None)]
    plan = plan_retirement("local", entries, keep=2)
    assert [e.cid for e in plan.keep] == ["b", "c"] and [e.cid for e in plan.retire] == ["a", "d"]


def test_without_dates_version_numbers_in_names_order_as_numbers() -> None:
    """kubo lists pins without a date: ``v1.10.0`` is newer than ``v1.9.0``, not older as text would have it."""
    entries = [PinEntry("a", "memory-v1.9.0"), PinEntry("b", "memory-v1.10.0"), PinEntry("c", "memory-v1.8.2")]
    plan = plan_retirement("kubo", entries, keep=1)
    assert [e.name for e in plan.keep] == ["memory-v1.10.0"]
    assert [e.name for e in plan.retire] == ["memory-v1.9.0", "memory-v1.8.2"]


def test_a_cid_kept_under_one_name_is_not_retired_under_another() -> None:
    entries = [PinEntry("a", "memory-2", "2026-01-02T00:00:00Z"), PinEntry("a", "memory-1", "2026-01-01T00:00:00Z")]
    plan = plan_retirement("local", entries, keep=1)
    assert [e.name for e in plan.keep] == ["memory-2"] and plan.retire == []


def test_a_dry_run_removes_nothing(tmp_path: Path) -> None:
    roots = releases(tmp_path / "home", tmp_path, 4)
    pinner = LocalPinner(BlockStore(tmp_path / "home", fsync=False))
    plan = retire(pinner, "memory-", 2)
    assert [e.cid for e in plan.retire] == roots[1::-1] and not plan.acted
    assert len(pinner.store.pins()) == 5


def test_acting_unpins_all_but_the_newest(tmp_path: Path) -> None:
    roots = releases(tmp_path / "home", tmp_path, 4)
    pinner = LocalPinner(BlockStore(tmp_path / "home", fsync=False))
    retire(pinner, "memory-", 2, act=True)
    left = sorted(e.name or "" for e in pinner.list())
    assert left == ["memory-3", "memory-4", "notes"]
    assert {e.cid for e in pinner.list("memory-")} == set(roots[2:])


@pytest.mark.parametrize("prefix", ["", "  "])
def test_an_empty_prefix_is_refused_before_listing(prefix: str, tmp_path: Path) -> None:
    releases(tmp_path / "home", tmp_path, 2)
    pinner = LocalPinner(BlockStore(tmp_path / "home", fsync=False))
    with pytest.raises(UsageError, match="--name-prefix must not be empty"):
        retire(pinner, prefix, 0, act=True)
    assert len(pinner.store.pins()) == 3


def test_a_pinner_that_cannot_list_says_so() -> None:
    pinner = FilebasePinner("AKIA0000", "secret-value-0000", "bucket", client=object())
    with pytest.raises(UsageError, match="cannot list its pins by name"):
        retire(pinner, "memory-", 5)


def test_cli_is_a_dry_run_by_default_and_acts_with_yes(store_home: Path, tmp_path: Path) -> None:
    releases(store_home, tmp_path, 7)
    runner = CliRunner()
    dry = runner.invoke(cli, ["unpin", "--pinner", "local", "--name-prefix", "memory-", "--keep", "5"])
    assert dry.exit_code == 0, dry.output
    assert [line.split()[0] for line in dry.stdout.splitlines()] == ["keep"] * 5 + ["unpin"] * 2
    assert "dry run: 2 pin(s) would be unpinned" in dry.stderr
    assert len(BlockStore(store_home).pins()) == 8
    done = runner.invoke(cli, ["unpin", "--pinner", "local", "--name-prefix", "memory-", "--keep", "5", "--yes",
                               "--json"])
    assert done.exit_code == 0, done.output
    plan = json.loads(done.stdout)[0]
    assert plan["acted"] and [e["name"] for e in plan["retire"]] == ["memory-2", "memory-1"]
    assert len(BlockStore(store_home).pins()) == 6


def test_cli_refuses_a_pinner_without_retention() -> None:
    result = CliRunner().invoke(cli, ["unpin", "--pinner", "memory", "--name-prefix", "m", "--keep", "1"])
    assert result.exit_code == 2 and "cannot list its pins by name" in result.stderr


def test_a_pinner_that_cannot_list_named_second_leaves_the_first_ones_pins_in_place(
    store_home: Path, tmp_path: Path
) -> None:
    releases(store_home, tmp_path, 3)
    with pytest.raises(UsageError, match="cannot list its pins by name"):
        retire_everywhere(["local", "memory"], "memory-", 1, act=True)
    assert len(BlockStore(store_home).pins()) == 4
