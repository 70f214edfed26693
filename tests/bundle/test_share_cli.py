"""``build``/``pin --share TYPES``: one option name on both commands, failing closed before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.cli import cli
from bundlekit.memory import Memory


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    mem = Memory(tmp_path / "tree")
    mem.init()
    mem.write("deploys", name="Deploys", description="never on fridays", type="project", body="projmarker")
    mem.write("tea", name="Tea", description="likes tea", type="user", body="usermarker")
    mem.note("decision", what="timelinemarker")
    return tmp_path / "tree"


def test_build_share_keeps_only_the_named_types(tree: Path, tmp_path: Path) -> None:
    code, out, _err = _run("build", "-d", str(tree), "-o", str(tmp_path / "s.car"), "--share", "project")
    data = (tmp_path / "s.car").read_bytes()
    assert code == 0 and out.strip().startswith("bafy")
    assert b"projmarker" in data and b"usermarker" not in data and b"timelinemarker" not in data


def test_build_share_timeline_carries_the_timeline(tree: Path, tmp_path: Path) -> None:
    code, _out, _err = _run("build", "-d", str(tree), "-o", str(tmp_path / "s.car"), "--share", "project",
                            "--share-timeline")
    assert code == 0 and b"timelinemarker" in (tmp_path / "s.car").read_bytes()


@pytest.mark.parametrize("args", [["--share", "bogus"], ["--share", ","], ["--share-timeline"]])
def test_build_refuses_a_share_that_fails_closed_with_exit_2_and_no_car(
    tree: Path, tmp_path: Path, args: list[str]
) -> None:
    code, out, err = _run("build", "-d", str(tree), "-o", str(tmp_path / "s.car"), *args)
    assert code == 2 and out == "" and "Traceback" not in err
    assert not (tmp_path / "s.car").exists()


def test_build_reads_the_share_section_of_the_tree_config(tree: Path, tmp_path: Path) -> None:
    (tree / ".bundlekit").mkdir(exist_ok=True)
    (tree / ".bundlekit" / "config.toml").write_text('[share]\ntypes = ["user"]\n')
    code, _out, _err = _run("build", "-d", str(tree), "-o", str(tmp_path / "s.car"))
    data = (tmp_path / "s.car").read_bytes()
    assert code == 0 and b"usermarker" in data and b"projmarker" not in data


def test_build_refuses_a_malformed_share_config(tree: Path, tmp_path: Path) -> None:
    (tree / ".bundlekit").mkdir(exist_ok=True)
    (tree / ".bundlekit" / "config.toml").write_text("[share]\ntypes = []\n")
    code, _out, err = _run("build", "-d", str(tree), "-o", str(tmp_path / "s.car"))
    assert code == 2 and "config.toml" in err and not (tmp_path / "s.car").exists()


def test_pin_share_publishes_only_the_named_types(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    code, out, _err = _run("pin", "-d", str(tree), "--share", "user", "--json")
    assert code == 0, _err
    blocks = b"".join(p.read_bytes() for p in (tmp_path / "home").rglob("*") if p.is_file())
    assert b"usermarker" in blocks and b"projmarker" not in blocks


def test_pin_share_of_a_car_is_refused(tree: Path, tmp_path: Path) -> None:
    _run("build", "-d", str(tree), "-o", str(tmp_path / "full.car"))
    code, _out, err = _run("pin", str(tmp_path / "full.car"), "--share", "project")
    assert code == 2 and "--share" in err
