"""Progress seen on a real terminal (a pseudo-terminal): redrawn in place for pack and load, absent under CI."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from bundlekit.bundle.build import build_bundle
from bundlekit.memory import Memory

ROOT = Path(__file__).resolve().parents[2]


def _on_a_terminal(args: list[str], cwd: Path, ci: bool) -> tuple[int, str]:
    """Run ``bundlekit ARGS`` with stderr on a pseudo-terminal; return its exit code and what the terminal got."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(PYTHONPATH=str(ROOT), BUNDLEKIT_HOME=str(cwd / "home"))
    if ci:
        env["CI"] = "true"
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "bundlekit", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return proc.wait(timeout=120), seen.decode(errors="replace")


@pytest.fixture
def big_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "data"
    tree.mkdir()
    for i in range(4):
        (tree / f"f{i}.bin").write_bytes(os.urandom(2 << 20))
    return tree


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    mem = Memory(tmp_path / "memory")
    for i in range(30):
        mem.write(f"note_{i}", name=f"note {i}", description="a note", type="project", body="x" * 2000)
    build_bundle(mem, tmp_path / "bundle.car")
    return tmp_path / "bundle.car"


@pytest.mark.parametrize("command", [["pack", "data", "-o", "out.car"], ["cid", "data"]], ids=["pack", "cid"])
def test_pack_redraws_its_bar_on_a_terminal(command: list[str], big_tree: Path) -> None:
    code, seen = _on_a_terminal(command, big_tree.parent, ci=False)
    assert code == 0, seen
    draws = seen.count("\r")
    assert draws >= 2 and "100%" in seen, seen  # drawn, then redrawn in place up to the end


def test_load_redraws_its_bar_on_a_terminal(bundle: Path) -> None:
    code, seen = _on_a_terminal(["load", "bundle.car", "-o", "out"], bundle.parent, ci=False)
    assert code == 0, seen
    assert seen.count("\rloading [") >= 2 and "100%" in seen, seen


@pytest.mark.parametrize("command", [["pack", "data", "-o", "out.car"], ["load", "bundle.car", "-o", "out"]],
                         ids=["pack", "load"])
def test_no_bar_under_ci(command: list[str], big_tree: Path, bundle: Path) -> None:
    code, seen = _on_a_terminal(command, big_tree.parent, ci=True)
    assert code == 0, seen
    assert "\r" not in seen.replace("\r\n", "\n") and "[#" not in seen and "[-" not in seen, seen
    assert ("wrote out.car" in seen) if command[0] == "pack" else ("loaded " in seen)


@pytest.mark.parametrize(("command", "label"), [(["verify", "data.car"], "verifying"),
                                                (["unpack", "data.car", "-o", "out"], "unpacking")],
                         ids=["verify", "unpack"])
def test_verify_and_unpack_draw_a_bar_on_a_terminal(command: list[str], label: str, big_tree: Path) -> None:
    code, seen = _on_a_terminal(["pack", "data", "-o", "data.car"], big_tree.parent, ci=True)
    assert code == 0, seen
    code, seen = _on_a_terminal(command, big_tree.parent, ci=False)
    assert code == 0, seen
    assert f"\r{label} [" in seen, seen


def test_pin_of_a_plain_directory_draws_a_packing_bar(big_tree: Path) -> None:
    code, seen = _on_a_terminal(["pin", "data"], big_tree.parent, ci=False)
    assert code == 0, seen
    assert "\rpacking [" in seen and "100%" in seen, seen
