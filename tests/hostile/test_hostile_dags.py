"""Issue 12, item 1: DAGs that reuse blocks to claim huge sizes are refused quickly, with exit 3.

Each input (``make_inputs.py``) is a few kilobytes of blocks that verify; each
command runs in a subprocess capped in memory and time (``conftest.run_cli``).
Before the budgets, ``ls`` and ``unpack`` of these ran for ever with memory
growing, or wrote until the disk was full.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

RunCli = Callable[..., subprocess.CompletedProcess[str]]

# (input, what the refusal says)
REFUSALS = {
    "hamt-bomb.car": "links shard",
    "file-bomb.car": "more than 68719476736 bytes",
    "dir-bomb.car": "claims 2147483647 entries",
}


def _refused(result: subprocess.CompletedProcess[str], says: str) -> None:
    assert result.returncode == 3, result.stderr
    assert result.stderr.startswith("error: ")
    assert says in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", ["hamt-bomb.car", "dir-bomb.car"])
def test_ls_refuses_a_dag_claiming_billions_of_entries(
    name: str, inputs: dict[str, Path], run_cli: RunCli
) -> None:
    result = run_cli("ls", str(inputs[name]))
    _refused(result, "links shard" if name == "hamt-bomb.car" else "it reuses directories and claims 2147483647")
    assert result.stdout == ""


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_unpack_refuses_before_writing_anything(
    name: str, inputs: dict[str, Path], run_cli: RunCli, tmp_path: Path
) -> None:
    result = run_cli("unpack", str(inputs[name]), "-o", "out")
    _refused(result, REFUSALS[name])
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == []


def test_unpack_refuses_a_declared_size_beyond_the_free_disk(inputs: dict[str, Path], run_cli: RunCli) -> None:
    result = run_cli("unpack", str(inputs["file-bomb.car"]), "-o", "out", "--max-bytes", str(2**60))
    assert result.returncode == 1, result.stderr
    assert "declares 1125899906842624 bytes of content but only" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_plain_verify_accepts_the_blocks(name: str, inputs: dict[str, Path], run_cli: RunCli) -> None:
    result = run_cli("verify", str(inputs[name]))
    assert result.returncode == 0, result.stderr  # every block hashes to its CID: the DAG is complete


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("hamt-bomb.car", "more than once"),
        ("file-bomb.car", "claim 2199023255551 block visits, 1 entry, 1125899906842624 bytes"),
        ("dir-bomb.car", "claim 2147483647 block visits, 2147483647 entries"),
    ],
)
def test_verify_strict_reports_what_a_reused_dag_claims(
    name: str, says: str, inputs: dict[str, Path], run_cli: RunCli
) -> None:
    _refused(run_cli("verify", "--strict", str(inputs[name])), says)


def test_verify_strict_reports_reuse_within_the_limits(inputs: dict[str, Path], run_cli: RunCli) -> None:
    result = run_cli("verify", "--strict", "--max-visits", str(2**62), "--max-entries", str(2**62),
                     "--max-bytes", str(2**62), str(inputs["dir-bomb.car"]))
    assert result.returncode == 0, result.stderr
    assert "reuses blocks: 31 distinct blocks expand to 2147483647 block visits, 2147483647 entries" in result.stderr
