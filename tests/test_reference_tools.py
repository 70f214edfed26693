"""The reference tools are pinned in the repository and installed by CI, never looked up on one machine."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def test_every_reference_tool_is_pinned_to_one_exact_version() -> None:
    manifest = json.loads((TESTS / "package.json").read_text(encoding="utf-8"))
    pins = {**manifest["dependencies"], **manifest.get("optionalDependencies", {})}
    assert {"ipfs-car", "ipfs-unixfs-importer", "ipns"} <= set(pins)
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", version) for version in pins.values()), pins


def test_the_lockfile_holds_every_pinned_version() -> None:
    manifest = json.loads((TESTS / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((TESTS / "package-lock.json").read_text(encoding="utf-8"))
    for name, version in {**manifest["dependencies"], **manifest.get("optionalDependencies", {})}.items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version


def test_ci_installs_the_reference_tools_from_the_lockfile() -> None:
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    install = lines.index("(cd tests && npm ci --no-audit --no-fund --loglevel=error)")
    assert install < next(i for i, line in enumerate(lines) if "python -m pytest" in line)


def test_no_tracked_file_names_a_folder_of_one_machine() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode().split("\0")
    machine_paths = re.compile(rb"/work/|/tmp/speed|npmref")
    offenders = [
        name for name in tracked
        if name and name != "tests/test_reference_tools.py" and (ROOT / name).is_file()
        and machine_paths.search((ROOT / name).read_bytes())
    ]
    assert offenders == []
