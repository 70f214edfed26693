"""Issue 37: two writers and a follower meet at one name, every sync and merge typed at the CLI (each line through the
CLI in the test process, ``typed.in_process``, sharing one machine's store; what is checked is what each command
reads, writes and reports, not a fresh process's start-up, ~0.2 s of CPU a line): what each sync fetches
and parses follows the change, a conflict keeps the losing version once, as one sibling every writer holds alike,
and every ``--json`` counts the conflicts."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

from tests.journeys.typed import in_process, machine_env, set_up


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = in_process(args, cwd=root, env=machine_env(root))
    assert done.returncode == 0, f"bundlekit {' '.join(args)}: exit {done.returncode}\n{done.stderr}"
    return done


def _prepare(root: Path, *args: str) -> str:
    """A set-up command (a key, a tree, a memory written): the same CLI and environment as :func:`_cli`; its
    stdout."""
    return set_up(shlex.join(["bundlekit", *args]), cwd=root, env=machine_env(root)).stdout


def _write(root: Path, tree: str, key: str, body: str) -> None:
    _prepare(root, "memory", "-d", tree, "write", key, "--type", "project", "--name", key,
             "--description", f"about {key}", "--body", body)


def _sync(root: Path, tree: str, *role: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(_cli(root, "sync", "-d", tree, *role, "--json").stdout)
    return report


def test_two_writers_and_a_follower_keep_one_sibling_and_count_their_conflicts(tmp_path: Path) -> None:
    name = _prepare(tmp_path, "name", "create", "--name-key", "team.key").strip()
    _prepare(tmp_path, "memory", "-d", "alice", "init")
    for key in ("plan", "budget", "people"):
        _write(tmp_path, "alice", key, f"The first {key}.")
    _sync(tmp_path, "alice", "--name-key", "team.key")
    _prepare(tmp_path, "memory", "-d", "bob", "init")
    _prepare(tmp_path, "memory", "-d", "carol", "init")
    first = _sync(tmp_path, "bob", "--name", name)  # a first follow into an empty tree: a load, not a merge
    assert first["merge"] is None and first["loaded"]["memories"] == 3 and first["conflicts"] == 0
    _sync(tmp_path, "carol", "--name", name)

    _write(tmp_path, "alice", "plan", "Alice's plan.")
    _sync(tmp_path, "alice", "--name-key", "team.key")
    _write(tmp_path, "bob", "plan", "Bob's plan.")  # later: bob's wins, alice's is kept beside it
    bob = _sync(tmp_path, "bob", "--name-key", "team.key")
    assert bob["conflicts"] == 1 and bob["merge"]["conflicts"][0]["winner"] == "ours"
    alice = _sync(tmp_path, "alice", "--name-key", "team.key")
    assert alice["conflicts"] == 0 and alice["up_to_date"] and alice["merge"]["converged"]
    carol = _sync(tmp_path, "carol", "--name", name)
    assert carol["conflicts"] == 0 and carol["merge"]["converged"] is None  # not judged for a follower: see below

    for tree in ("alice", "bob", "carol"):
        siblings = sorted(p.name for p in (tmp_path / tree).glob("plan.conflict-*.md"))
        assert len(siblings) == 1, (tree, siblings)
        assert "Alice's plan." in (tmp_path / tree / siblings[0]).read_text("utf-8")
        assert "Bob's plan." in (tmp_path / tree / "plan.md").read_text("utf-8")
    files = {tree: {p.name: p.read_bytes() for p in (tmp_path / tree).glob("*.md") if p.name != "MEMORY.md"}
             for tree in ("alice", "bob", "carol")}
    assert files["alice"] == files["bob"] == files["carol"]

    merged = json.loads(_cli(tmp_path, "merge", f"ipfs://{bob['root']}", "-d", "carol", "--json").stdout)
    assert merged["conflicts"] == [] and merged["written"] is False
