"""QA regressions for `bundlekit store export`: output problems are one-line errors, nothing half-written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.ipld.cid import cid_to_str


def _import(tmp_path: Path, sample_car: Path) -> Path:
    store = tmp_path / "s"
    result = CliRunner().invoke(cli, ["store", "--store", str(store), "import", str(sample_car)])
    assert result.exit_code == 0, result.output
    return store


def test_export_under_a_file_is_a_one_line_error(tmp_path: Path, sample_car: Path, sample_dag) -> None:  # type: ignore[no-untyped-def]
    store = _import(tmp_path, sample_car)
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    result = CliRunner().invoke(
        cli,
        ["store", "--store", str(store), "export", cid_to_str(sample_dag.root), "-o", str(blocker / "x.car")],
    )
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stderr.startswith(f"error: cannot write {blocker / 'x.car'}: a file is in the way")
    assert "Traceback" not in result.output


def test_export_of_a_missing_root_leaves_no_temp_file(tmp_path: Path, sample_car: Path) -> None:
    store = _import(tmp_path, sample_car)
    out = tmp_path / "out"
    out.mkdir()
    missing = "bafkreiey5jxe6ilpf62lnh77tm5ejbbmhbugzjuf6p2v3remlu73ced34q"
    result = CliRunner().invoke(
        cli, ["store", "--store", str(store), "export", missing, "-o", str(out / "x.car")]
    )
    assert result.exit_code != 0
    assert result.stderr.startswith("error: ")
    assert os.listdir(out) == []


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_exported_car_mode_follows_the_umask_like_pack_output(
    tmp_path: Path, sample_car: Path, sample_dag, umask: int, mode: int
) -> None:  # type: ignore[no-untyped-def]
    store = _import(tmp_path, sample_car)
    dest = tmp_path / "x.car"
    old = os.umask(umask)
    try:
        result = CliRunner().invoke(
            cli, ["store", "--store", str(store), "export", cid_to_str(sample_dag.root), "-o", str(dest)]
        )
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    assert dest.stat().st_mode & 0o777 == mode
