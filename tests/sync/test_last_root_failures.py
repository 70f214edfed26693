"""A writer's round that fails before its name moves (a refused pin, a refused name publish) leaves the tree's last
root at a published root or at none: never at the root it built and nobody holds (specs/sync.md, step 4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bundlekit.flows.sync
from bundlekit.bundle.lineage import read_last, read_parents
from bundlekit.bundle.merge import read_manifest
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import PinError, PinUnavailable
from bundlekit.memory import Memory
from bundlekit.syncer import sync

from .conftest import HookedPinner

SIGNER = Ed25519Signer.from_seed(bytes([41]) * 32)


def _tree(path: Path) -> Path:
    mem = Memory(path, namespace="agent")
    mem.init()
    mem.write("project_a", name="A", description="about a", type="project", body="A's plan.")
    return path


def _refuse() -> None:
    raise OSError("the pinning service is down")


def test_a_first_writers_refused_pin_leaves_no_unpublished_last_root(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a")
    with pytest.raises(PinError):
        sync(tree, name_key=SIGNER, pinners=[HookedPinner(_refuse)])
    assert read_last(tree) is None  # the root it built was never pinned nor published
    report = sync(tree, name_key=SIGNER, pinners=[HookedPinner()])
    assert report.published is not None and report.root is not None
    assert read_last(tree) == report.root and read_parents(tree) == [report.root]
    assert read_manifest(report.root).get("parents", []) == []  # no parent nobody holds


def test_a_first_writers_refused_name_publish_leaves_no_unpublished_last_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "a")

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise PinUnavailable("the routing endpoint is down")

    monkeypatch.setattr(bundlekit.flows.sync, "publish", refuse)
    with pytest.raises(PinUnavailable):
        sync(tree, name_key=SIGNER, pinners=[HookedPinner()])
    assert read_last(tree) is None
    monkeypatch.undo()
    report = sync(tree, name_key=SIGNER, pinners=[HookedPinner()])
    assert report.published is not None and read_last(tree) == report.root
    assert report.root is not None and read_manifest(report.root).get("parents", []) == []


def test_a_writer_with_a_last_root_keeps_it_through_a_refused_pin(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "a")
    first = sync(tree, name_key=SIGNER, pinners=[HookedPinner()])
    Memory(tree).write("project_b", name="B", description="about b", type="project", body="B's plan.")
    with pytest.raises(PinError):
        sync(tree, name_key=SIGNER, pinners=[HookedPinner(_refuse)])
    assert read_last(tree) == first.root
    again = sync(tree, name_key=SIGNER, pinners=[HookedPinner()])
    assert again.root is not None and read_manifest(again.root).get("parents") == [first.root]
    assert again.published is not None and read_last(tree) == again.root


def test_a_writers_first_follow_into_an_empty_tree_takes_the_names_root_as_its_last(tmp_path: Path) -> None:
    first = sync(_tree(tmp_path / "a"), name_key=SIGNER, pinners=[HookedPinner()])
    empty = tmp_path / "e"
    Memory(empty, namespace="agent").init()
    followed = sync(empty, name_key=SIGNER, pinners=[HookedPinner()])
    assert followed.up_to_date and followed.loaded is not None and followed.root == first.root
    assert read_last(empty) == first.root and read_parents(empty) == [first.root]
    Memory(empty).write("project_b", name="B", description="about b", type="project", body="B's plan.")
    second = sync(empty, name_key=SIGNER, pinners=[HookedPinner()])
    assert second.published is not None and second.root is not None
    assert read_manifest(second.root).get("parents") == [first.root]  # the name's root alone: no root nobody holds


_KILLED_ROUND = """
import os, signal, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from sync.conftest import HookedPinner
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.syncer import sync
import bundlekit.flows.sync as flow
where = {where!r}
def killed(*_args, **_kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
if where == "publish":
    flow.publish = killed
sync(Path({tree!r}), name_key=Ed25519Signer.from_seed(bytes([41]) * 32),
     pinners=[HookedPinner(killed if where == "pin" else None)])
"""


@pytest.mark.parametrize("where", ["pin", "publish"])
def test_a_round_killed_before_its_name_moves_loses_no_write_and_keeps_the_lineage(
        tmp_path: Path, where: str) -> None:
    tree = _tree(tmp_path / "a")
    first = sync(tree, name_key=SIGNER, pinners=[HookedPinner()])
    Memory(tree).write("project_b", name="B", description="about b", type="project", body="B's plan.")
    code = _KILLED_ROUND.format(tests=str(Path(__file__).parents[1]), where=where, tree=str(tree))
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ), capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == -9, done.stderr
    assert read_last(tree) == first.root and read_parents(tree) == [first.root]
    again = sync(tree, name_key=SIGNER, pinners=[HookedPinner()])
    assert again.published is not None and again.published.sequence == 1 and again.conflicts == 0
    assert again.root is not None and read_manifest(again.root).get("parents") == [first.root]
    assert {p.stem for p in tree.glob("project_*.md")} == {"project_a", "project_b"}
    assert read_last(tree) == again.root
