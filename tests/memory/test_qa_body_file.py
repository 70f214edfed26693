"""QA regression: a --body-file that is not UTF-8 is a one-line usage error, and nothing is written."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from bundlekit.cli import cli


def test_non_utf8_body_file_is_a_usage_error(tmp_path: Path) -> None:
    body = tmp_path / "latin1.txt"
    body.write_bytes(b"caf\xe9\n")
    tree = tmp_path / "mem"
    args = ["memory", "-d", str(tree), "write", "k", "--name", "n", "--description", "d", "--type", "user"]
    result = CliRunner().invoke(cli, [*args, "--body-file", str(body)])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.stderr == f"error: --body-file {body} is not UTF-8 text; re-save it as UTF-8\n"
    assert not (tree / "k.md").exists()
