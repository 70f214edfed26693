"""The limits table of specs/bundle.md ("Limits") states the defaults the code uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.bundle._bounded import visit_budget
from bundlekit.bundle.load import DEFAULT_DEADLINE, DEFAULT_MAX_BYTES
from bundlekit.bundle.manifest import MAX_MANIFEST_BYTES
from bundlekit.ipld.block import MAX_BLOCK_SIZE
from bundlekit.net.http import DEFAULT_MAX_CAR_BYTES, MAX_REDIRECTS
from bundlekit.net.stream import WINDOW_BYTES

SPEC = Path(__file__).parents[2] / "specs" / "bundle.md"
MIB = 1024 * 1024


def _limits() -> dict[str, str]:
    """Each row of the limits table: its first cell -> its default cell."""
    text = SPEC.read_text().split("### Limits", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    return {cells[0].strip(): cells[1].strip() for cells in rows[1:]}


@pytest.mark.parametrize(("row", "default", "value"), [
    ("the whole load", "600 s", f"{DEFAULT_DEADLINE:g} s"),
    ("a CAR response", "1 GiB", f"{DEFAULT_MAX_CAR_BYTES // (1024 * MIB)} GiB"),
    ("blocks kept ahead", "256 MiB", f"{WINDOW_BYTES // MIB} MiB"),
    ("a raw block", "2 MiB", f"{MAX_BLOCK_SIZE // MIB} MiB"),
    ("`manifest.json`", "64 MiB", f"{MAX_MANIFEST_BYTES // MIB} MiB"),
    ("all files of a manifest", "2 GiB", f"{DEFAULT_MAX_BYTES // (1024 * MIB)} GiB"),
    ("redirect hops", "10, same origin", f"{MAX_REDIRECTS}, same origin"),
])
def test_the_spec_states_each_default(row: str, default: str, value: str) -> None:
    cells = {k: v for k, v in _limits().items() if k.startswith(row)}
    assert list(cells.values()) == [default] and value == default


def test_the_visit_budget_is_the_spec_formula() -> None:
    assert "1024 + n / 1024" in _limits()[next(k for k in _limits() if k.startswith("node visits"))]
    assert [visit_budget(n) for n in (0, 1023, 1024, 64 * MIB)] == [1024, 1024, 1025, 1024 + 64 * 1024]
