"""Bad inputs to build, load and fork: one clear error, the right exit code, nothing written."""

from __future__ import annotations

import gc
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.bundle.manifest import format_created, parse_created, parse_manifest
from bundlekit.car.reader import read_car
from bundlekit.car.writer import CarWriter
from bundlekit.cli import cli
from bundlekit.errors import ManifestError, UsageError

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "memory"


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    shutil.copytree(FIXTURE, tmp_path / "mem")
    run = CliRunner().invoke(cli, ["build", str(tmp_path / "mem"), "-o", str(tmp_path / "b.car")])
    assert run.exit_code == 0, run.output
    return tmp_path / "b.car"


@pytest.mark.parametrize("text", ["99999999999999999999", "-5", "0001-01-01T00:00:00-01:00", "10000-01-01"])
def test_created_out_of_range_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        parse_created(text)


def test_created_is_always_a_four_digit_year() -> None:
    from datetime import UTC, datetime

    assert format_created(datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC)) == "0999-01-02T03:04:05Z"


def test_huge_source_date_epoch_is_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(FIXTURE, tmp_path / "mem")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "99999999999999999")
    run = CliRunner().invoke(cli, ["build", str(tmp_path / "mem"), "-o", str(tmp_path / "b.car")])
    assert run.exit_code == 2 and "out of range" in run.output
    assert not (tmp_path / "b.car").exists()


def test_deeply_nested_manifest_is_a_manifest_error() -> None:
    # Pin the recursion limit: a library imported earlier in the run (py_ecc, via eth-account)
    # may have raised it so far that this nesting would overflow the C stack instead.
    # And hold the garbage collector off meanwhile: a collection that runs a finalizer at the bottom of that
    # recursion (another test's leftovers) hits the limit inside pytest's unraisable-exception hook instead.
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    gc.collect()
    gc.disable()
    try:
        with pytest.raises(ManifestError, match="nested too deeply"):
            parse_manifest(b"[" * 100_000 + b"]" * 100_000)
    finally:
        gc.enable()
        sys.setrecursionlimit(old)


def test_load_under_a_file_is_one_line_error(built: Path, tmp_path: Path) -> None:
    (tmp_path / "emptyf").write_bytes(b"")
    run = CliRunner().invoke(cli, ["load", str(built), "-o", str(tmp_path / "emptyf" / "sub")])
    assert run.exit_code != 0 and "error:" in run.output and "Traceback" not in run.output


def test_fork_under_a_file_is_one_line_error(built: Path, tmp_path: Path) -> None:
    (tmp_path / "emptyf").write_bytes(b"")
    run = CliRunner().invoke(cli, ["fork", str(built), str(tmp_path / "emptyf" / "sub")])
    assert run.exit_code == 2 and "file in the way" in run.output


def test_a_car_whose_root_does_not_match_exits_3_and_names_the_car(built: Path, tmp_path: Path) -> None:
    with open(built, "rb") as fh:
        roots, it = read_car(fh, verify=False)
        blocks = list(it)
    bad = tmp_path / "bad.car"
    with open(bad, "wb") as out:
        writer = CarWriter(out, roots)
        for cid, data in blocks:
            writer.put(cid, data[:-1] + bytes([data[-1] ^ 1]) if cid == roots[0] else data)
    run = CliRunner().invoke(cli, ["load", str(bad), "-o", str(tmp_path / "out")])
    assert run.exit_code == 3
    assert "bad.car" in run.output and "local store" not in run.output
    assert not (tmp_path / "out").exists()


def test_a_directory_that_is_not_a_memory_tree_is_refused(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print('hi')\n")
    run = CliRunner().invoke(cli, ["build", str(tmp_path / "src"), "-o", str(tmp_path / "b.car")])
    assert run.exit_code == 2 and "not a memory tree" in run.output
    assert not (tmp_path / "b.car").exists()


@pytest.mark.parametrize("namespace", ["", "two\nlines"])
def test_bad_namespace_is_refused(tmp_path: Path, namespace: str) -> None:
    shutil.copytree(FIXTURE, tmp_path / "mem")
    run = CliRunner().invoke(cli, ["build", str(tmp_path / "mem"), "-o", str(tmp_path / "b.car"), "--namespace", namespace])
    assert run.exit_code == 2 and "namespace" in run.output
