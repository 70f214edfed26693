"""Data on stdout, everything else on stderr, for the commands whose text output changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Run


def test_build_prints_the_root_on_stdout_and_where_it_wrote_on_stderr(run: Run, tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "b.car"
    result = run("build", tree, "-o", out)
    assert result.exit_code == 0, result.stderr
    root = result.stdout.strip()
    assert result.stdout == root + "\n" and root.startswith("baf")
    assert result.stderr.startswith(f"wrote {out}: root {root}, ")
    assert " files, " in result.stderr


def test_build_says_when_it_replaced_an_existing_file(run: Run, tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "b.car"
    out.write_bytes(b"an older bundle")
    result = run("build", tree, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(f"replaced {out}: root ")


def test_load_without_output_says_verified_and_writes_nothing(run: Run, bundle: Path) -> None:
    result = run("load", bundle)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("verified ") and "nothing written" in result.stderr


def test_load_with_output_says_loaded_into(run: Run, bundle: Path, tmp_path: Path) -> None:
    result = run("load", bundle, "-o", tmp_path / "loaded")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("loaded ") and f"into {tmp_path / 'loaded'}" in result.stderr


def test_store_export_prints_the_root_on_stdout(run: Run, store: tuple[Path, str], tmp_path: Path) -> None:
    directory, root = store
    out = tmp_path / "x.car"
    result = run("store", "--store", directory, "export", root, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == root + "\n"
    assert result.stderr == f"wrote {out}\n"


def test_store_unpin_says_what_it_did_on_stderr(run: Run, store: tuple[Path, str]) -> None:
    directory, root = store
    result = run("store", "--store", directory, "unpin", root)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and result.stderr.startswith(f"unpinned {root}")


def test_verify_summary_goes_to_stderr(run: Run, plain_car: Path) -> None:
    result = run("verify", plain_car)
    assert result.exit_code == 0
    assert result.stdout == "" and result.stderr.startswith("ok ")


def test_key_message_ends_with_a_newline(run: Run) -> None:
    result = run("key", "message", "--namespace", "coach")
    assert result.stdout == "bundlekit memory key v1\nnamespace: coach\n"


def test_memory_export_is_one_line_of_json(run: Run, tree: Path) -> None:
    result = run("memory", "-d", tree, "export")
    assert result.exit_code == 0 and result.stdout.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "summary"),
    [
        (["pack", "{files}", "-o", "{tmp}/p.car", "--json"], "wrote {tmp}/p.car: root "),
        (["unpack", "{car}", "-o", "{tmp}/out", "--json"], "unpacked "),
        (["store", "import", "{car}", "--json"], "imported {car} into the store: 1 root, pinned"),
    ],
    ids=["pack", "unpack", "store-import"],
)
def test_a_command_that_writes_says_so_on_stderr_with_json_too(
    args: list[str], summary: str, run: Run, files: Path, plain_car: Path, tmp_path: Path
) -> None:
    fill = {"files": files, "car": plain_car, "tmp": tmp_path}
    result = run(*[a.format(**fill) for a in args])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(summary.format(**fill)) and result.stderr.count("\n") == 1
    assert result.stdout.startswith("{")
