"""The library reports progress through an optional ``progress(done, total)`` callback and never prints."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.load import LoadOptions, load_bundle
from bundlekit.flows.source import prepare_source

FIXTURE_TREE = Path(__file__).resolve().parents[2] / "fixtures" / "memory"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    dest = tmp_path / "memory"
    shutil.copytree(FIXTURE_TREE, dest)
    return dest


def test_build_reports_every_file_up_to_the_total(tree: Path, tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    result = build_bundle(tree, tmp_path / "b.car",
                          options=BuildOptions(progress=lambda done, total: calls.append((done, total))))
    total = result.files + 1  # the manifest counts too
    assert calls[0] == (0, total) and calls[-1] == (total, total)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_build_with_progress_gives_the_same_root(tree: Path, tmp_path: Path) -> None:
    plain = build_bundle(tree, tmp_path / "a.car")
    reported = build_bundle(tree, tmp_path / "b.car", options=BuildOptions(progress=lambda done, total: None))
    assert reported.root == plain.root
    assert (tmp_path / "a.car").read_bytes() == (tmp_path / "b.car").read_bytes()


def test_load_reports_every_manifest_file(tree: Path, tmp_path: Path) -> None:
    built = build_bundle(tree, tmp_path / "b.car")
    calls: list[tuple[int, int]] = []
    load_bundle(str(tmp_path / "b.car"),
                options=LoadOptions(progress=lambda done, total: calls.append((done, total))))
    assert calls[0] == (0, built.files) and calls[-1] == (built.files, built.files)


def test_pin_source_reports_the_build_of_a_memory_tree(tree: Path, tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    prepare_source(tree, tmp_path, options=BuildOptions(progress=lambda done, total: calls.append((done, total))))
    assert calls and calls[-1][0] == calls[-1][1]


def test_progress_callbacks_print_nothing(tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_bundle(tree, tmp_path / "b.car", options=BuildOptions(progress=lambda done, total: None))
    assert capsys.readouterr() == ("", "")
