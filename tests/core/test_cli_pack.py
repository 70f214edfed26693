"""The pack and cid commands: stdout carries the CID alone; errors exit non-zero."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from bundlekit.car.reader import read_car
from bundlekit.cli import cli
from bundlekit.ipld.cid import cid_to_str, parse_cid
from bundlekit.unixfs.importer import NullSink, import_path
from bundlekit.unixfs.profiles import get_profile


def _tree(root: Path) -> Path:
    (root / "d").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"a")
    (root / "d" / "b.txt").write_bytes(b"b" * 3000)
    return root


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_pack_prints_only_the_root_cid(tmp_path: Path) -> None:
    _tree(tmp_path / "t")
    code, out, _ = _run("pack", str(tmp_path / "t"))
    expected = cid_to_str(import_path(tmp_path / "t", NullSink(), get_profile()).root)
    assert code == 0 and out == expected + "\n"


def test_pack_writes_a_car_with_the_root_in_its_header(tmp_path: Path) -> None:
    src = _tree(tmp_path / "t")
    car = tmp_path / "out.car"
    code, out, _ = _run("pack", str(src), "-o", str(car))
    assert code == 0
    with open(car, "rb") as fh:
        roots, blocks = read_car(fh)
        stored = dict(blocks)
    assert roots == [parse_cid(out.strip())]
    assert roots[0] in stored and len(stored) == 4


def test_pack_json_reports_root_profile_blocks_and_bytes(tmp_path: Path) -> None:
    src = _tree(tmp_path / "t")
    code, out, _ = _run("pack", str(src), "--json", "--profile", "unixfs-v0-2015")
    doc = json.loads(out)
    assert code == 0 and sorted(doc) == ["blocks", "bytes", "profile", "root"]
    assert doc["root"].startswith("Qm") and doc["profile"] == "unixfs-v0-2015" and doc["blocks"] == 4


def test_pack_without_output_writes_nothing(tmp_path: Path) -> None:
    src = _tree(tmp_path / "t")
    before = sorted(os.listdir(tmp_path))
    assert _run("pack", str(src))[0] == 0
    assert sorted(os.listdir(tmp_path)) == before


def test_cid_prints_the_cid_of_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"hello world")
    code, out, _ = _run("cid", str(tmp_path / "f"), "--profile", "unixfs-v0-2015")
    assert (code, out) == (0, "Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD\n")


def test_cid_applies_overrides(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 100)
    plain = _run("cid", str(tmp_path / "f"))[1]
    small = _run("cid", str(tmp_path / "f"), "--chunk-size", "10", "--max-links", "3")[1]
    v0 = _run("cid", str(tmp_path / "f"), "--cid-version", "0", "--no-raw-leaves")[1]
    assert plain.startswith("bafkrei") and small.startswith("bafybei") and v0.startswith("Qm")


def test_hidden_flag_changes_the_root(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / ".h").write_bytes(b"h")
    assert _run("cid", str(tmp_path))[1] != _run("cid", str(tmp_path), "--hidden")[1]


def test_skipped_symlink_is_reported_on_stderr_only(tmp_path: Path) -> None:
    _tree(tmp_path)
    os.symlink(tmp_path / "a.txt", tmp_path / "l")
    code, out, err = _run("pack", str(tmp_path))
    assert code == 0 and out.count("\n") == 1 and "warning: skipped symbolic link 'l'" in err


def test_a_missing_path_is_a_usage_error_with_exit_2(tmp_path: Path) -> None:
    code, out, err = _run("cid", str(tmp_path / "missing"))
    assert code == 2 and out == "" and err.startswith("error: Invalid value for 'PATH'")


def test_bad_override_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x")
    code, _, err = _run("cid", str(tmp_path / "f"), "--chunk-size", str(64 << 20))
    assert code != 0 and "chunk_size" in err


def test_failed_pack_leaves_no_car(tmp_path: Path) -> None:
    _tree(tmp_path / "t")
    fd = os.open(os.fsencode(tmp_path / "t") + b"/bad-\xff", os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
    code, _, _ = _run("pack", str(tmp_path / "t"), "-o", str(tmp_path / "out.car"))
    assert code == 1 and not (tmp_path / "out.car").exists()
    assert [p for p in os.listdir(tmp_path) if p != "t"] == []


# `pack -o` never overwrites the file or tree it is reading.


def test_pack_refuses_to_overwrite_its_input_file(tmp_path: Path) -> None:
    src = tmp_path / "notes.txt"
    src.write_text("precious")
    result = CliRunner().invoke(cli, ["pack", str(src), "-o", str(src)])
    assert result.exit_code == 2
    assert "would overwrite the input" in result.stderr
    assert src.read_text() == "precious"


def test_pack_refuses_to_overwrite_a_file_inside_its_input_tree(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    victim = tmp_path / "tree" / "a.txt"
    victim.write_text("precious")
    result = CliRunner().invoke(cli, ["pack", str(tmp_path / "tree"), "-o", str(victim)])
    assert result.exit_code == 2
    assert victim.read_text() == "precious"


def test_pack_may_write_a_new_car_inside_its_input_tree(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.txt").write_text("x")
    result = CliRunner().invoke(
        cli, ["pack", str(tmp_path / "tree"), "-o", str(tmp_path / "tree" / "out.car")]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "tree" / "out.car").is_file()


def test_pack_hidden_refuses_a_car_inside_its_input_tree(tmp_path: Path) -> None:
    # --hidden would read the CAR's own dot-named temp file (half-written) into the DAG.
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.txt").write_text("x")
    out = tmp_path / "tree" / "out.car"
    result = CliRunner().invoke(cli, ["pack", str(tmp_path / "tree"), "-o", str(out), "--hidden"])
    assert result.exit_code == 2
    assert "--hidden" in result.stderr
    assert list((tmp_path / "tree").iterdir()) == [tmp_path / "tree" / "a.txt"]


def test_pack_hidden_may_write_a_car_beside_its_input_tree(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / ".a.txt").write_text("x")
    result = CliRunner().invoke(cli, ["pack", str(tmp_path / "tree"), "-o", str(tmp_path / "out.car"), "--hidden"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out.car").is_file()
