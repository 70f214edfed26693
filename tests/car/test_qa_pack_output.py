"""QA regression: `pack -o` never overwrites the file or tree it is reading."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from bundlekit.cli import cli


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
