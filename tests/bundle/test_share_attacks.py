"""The attack pass on per-type sharing (issue 39): hand-written frontmatter, timeline events, lineage, configs.

Each payload is a memory, event or config a person (or a hostile tool) could leave in a tree; the promise is
that nothing of a memory left out reaches a shared bundle's CAR (specs/bundle.md, "Shared bundles"), and
that a share config that cannot be read as one stops the build (exit 2), never shares the whole tree.
The reader models are PyYAML (bundlekit), three.ws's line reader (``parseFrontmatter`` in
``src/memory/index.js`` of nirholas/three.ws: each line split at its first ``:``) and js-yaml, which
refuses a duplicated key: a frontmatter they could read differently stays out.
"""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.lineage import read_last, record_parent
from bundlekit.bundle.share import SharePolicy, read_share_config
from bundlekit.car.reader import read_car
from bundlekit.cli import cli
from bundlekit.errors import UsageError
from bundlekit.memory import Memory

CREATED = datetime(2026, 1, 2, tzinfo=UTC)
PROJECT = SharePolicy(("project",), timeline=True)
_HEAD = "---\nname: n{m}\ndescription: d{m}\ncreated: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n"


def _blocks(car: Path) -> bytes:
    with open(car, "rb") as fh:
        _roots, blocks = read_car(fh)
        return b"\x00".join(data for _cid, data in blocks)


def _tree(root: Path) -> Memory:
    mem = Memory(root)
    mem.init()
    mem.write("plan", name="Plan", description="the plan", type="project", body="shared body")
    return mem


def _hand_written(root: Path, key: str, frontmatter: str, marker: str) -> None:
    """A memory file as a person writes it, ``marker`` in its name, description and body."""
    (root / f"{key}.md").write_text(_HEAD.format(m=marker) + frontmatter + f"---\nb{marker}\n", encoding="utf-8")


def _shared_blocks(root: Path, policy: SharePolicy = PROJECT) -> bytes:
    build_bundle(root, root.parent / "s.car", options=BuildOptions(created=CREATED, share=policy))
    return _blocks(root.parent / "s.car")


@pytest.mark.parametrize("frontmatter", [
    "type: project\nshare: null\n",                      # a share key with no value is still a mark
    "type: project\nshare:\n",
    "type: project\nshare: ~\n",
    "type: project\nshare: private\nshare:\n",           # PyYAML keeps the last (null); a line reader the first
    "type: project\nShare: private\n",                   # a key in another case
    "type: project\nSHARE: private\n",
    'type: project\n"share ": private\n',                # quoted with a space
    "type: project\nsh\u200bare: private\n",             # a zero-width character inside
    "type: project\n\uff53hare: private\n",              # a fullwidth letter (NFKC folds it)
    "type: project\nmetadata: {share: private}\n",       # nested in a flow mapping
    "type: project\nmetadata:\n  share: private\n",      # nested in a block mapping
])
def test_a_share_mark_in_any_spelling_keeps_the_memory_out(tmp_path: Path, frontmatter: str) -> None:
    root = tmp_path / "tree"
    _tree(root)
    marker = f"mk{os.urandom(6).hex()}"
    _hand_written(root, "hand", frontmatter, marker)
    blocks = _shared_blocks(root)
    assert marker.encode() not in blocks
    assert b"shared body" in blocks


@pytest.mark.parametrize("frontmatter", [
    "type: user\ntype: project\n",                       # PyYAML reads project, a first-wins reader user
    "type: project\nType: user\n",
    "type: project\nmetadata:\n  type: user\n",
])
def test_a_type_written_twice_or_ambiguously_keeps_the_memory_out(tmp_path: Path, frontmatter: str) -> None:
    root = tmp_path / "tree"
    _tree(root)
    marker = f"mk{os.urandom(6).hex()}"
    _hand_written(root, "hand", frontmatter, marker)
    warnings: list[str] = []
    build_bundle(root, tmp_path / "s.car", options=BuildOptions(created=CREATED, share=PROJECT, warn=warnings.append))
    assert marker.encode() not in _blocks(tmp_path / "s.car")
    assert any(w.startswith("hand.md: not shared") for w in warnings)


def test_a_plain_project_memory_with_a_commented_type_is_still_shared(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _tree(root)
    _hand_written(root, "hand", "type: project # the team's\n", "mkplain")
    assert b"mkplain" in _shared_blocks(root)


@pytest.mark.parametrize("event", [
    {"key": "plan", "from": "secretkey"},                # a rename from a left-out key
    {"keys": ["plan", "secretkey"]},                     # a merge listing both
    {"memories": {"plan": "x", "secretkey": "y"}},       # seeded/unseeded: keys as object keys
    {"what": "edited secretkey.md today"},               # a note naming its file
    {"title": "Secret Name"},                            # its name
])
def test_a_timeline_event_naming_a_memory_left_out_stays_out(tmp_path: Path, event: dict[str, object]) -> None:
    root = tmp_path / "tree"
    mem = _tree(root)
    mem.write("secretkey", name="Secret Name", description="d", type="user", body="b")
    mem.note("evt", marker="evtmarker", **event)
    mem.note("kept", marker="keptmarker")
    blocks = _shared_blocks(root)
    assert b"evtmarker" not in blocks and b"secretkey" not in blocks and b"Secret Name" not in blocks
    assert b"keptmarker" in blocks


def test_a_timeline_event_naming_a_forgotten_memory_stays_out(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    mem = _tree(root)
    mem.write("gonekey", name="Gone", description="d", type="project", body="b")
    mem.note("renamed", **{"from": "gonekey", "to": "plan"})
    mem.forget("gonekey")
    assert b"gonekey" not in _shared_blocks(root)


def test_a_shared_bundle_carries_no_parents_and_leaves_the_last_root_alone(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    mem = _tree(root)
    mem.write("secretkey", name="s", description="d", type="user", body="b")
    full = build_bundle(root, tmp_path / "full.car", options=BuildOptions(created=CREATED))
    record_parent(root, full.root_bytes)  # as `load -o` or `fork` leaves it: the whole tree's root
    last = read_last(root)
    shared = build_bundle(root, tmp_path / "s.car", options=BuildOptions(created=CREATED, share=PROJECT))
    assert "parents" not in shared.manifest
    assert full.root_cid.encode() not in _blocks(tmp_path / "s.car")
    assert read_last(root) == last


def test_a_shared_build_refuses_explicit_parents(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _tree(root)
    with pytest.raises(UsageError, match="no parents"):
        build_bundle(root, tmp_path / "s.car", options=BuildOptions(
            created=CREATED, share=PROJECT, parents=["bafkqaaa"]))


def _config_path(root: Path) -> Path:
    (root / ".bundlekit").mkdir(parents=True, exist_ok=True)
    return root / ".bundlekit" / "config.toml"


@pytest.mark.parametrize("text", [
    '[Share]\ntypes = ["project"]\n',                    # a section in another case
    '[sharing]\ntypes = ["project"]\n',
    'types = ["project"]\n',                             # the keys outside the section
])
def test_a_misspelt_share_config_fails_closed(tmp_path: Path, text: str) -> None:
    _config_path(tmp_path).write_text(text)
    with pytest.raises(UsageError, match="nothing was shared"):
        read_share_config(tmp_path)


def test_another_section_beside_share_is_left_alone(tmp_path: Path) -> None:
    _config_path(tmp_path).write_text('[other]\nx = 1\n[share]\ntypes = ["project"]\n')
    assert read_share_config(tmp_path) == SharePolicy(("project",))


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_config_that_is_no_regular_file_fails_closed_without_waiting(tmp_path: Path, kind: str) -> None:
    path = _config_path(tmp_path)
    if kind == "fifo":
        os.mkfifo(path)  # opened for reading, it would block until a writer came
        assert stat.S_ISFIFO(path.lstat().st_mode)
    else:
        path.mkdir()
    with pytest.raises(UsageError, match="not a regular file"):
        read_share_config(tmp_path)


def test_build_with_a_directory_as_config_is_exit_2(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _tree(root)
    _config_path(root).mkdir()
    done = CliRunner().invoke(cli, ["build", str(root), "-o", str(tmp_path / "o.car")])
    assert done.exit_code == 2, done.output
    assert "not a regular file" in done.output and not (tmp_path / "o.car").exists()
