"""Issue 37: a writer who publishes with ``build``, ``pin`` and ``name publish`` (no ``sync``) keeps lineage.

Before, ``build`` and ``pin`` recorded no parent: the writer's second bundle named no ancestor, a follower
that merged it found no common base, and every memory the writer had changed became a conflict. Now a build
names the tree's last root as its parent (``specs/provenance.md``, "Lineage"), and rebuilding an unchanged
tree (``build`` then ``pin`` of the same tree) still gives the same root. Every step of the journey is typed as
a user would type it, writer and follower on one machine, meeting at the local store, each line through the CLI in
the test process (``typed.in_process``, ``typed.set_up``: what is checked is what each command records, reads and
reports, not a fresh process's start-up).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.journeys.typed import in_process, machine_env, set_up


def _cli(cwd: Path, *args: str) -> str:
    done = in_process(args, cwd=cwd, env=machine_env(cwd))
    assert done.returncode == 0, f"bundlekit {' '.join(args)}: exit {done.returncode}\n{done.stderr}"
    return done.stdout


def _prepare(cwd: Path, *args: str) -> None:
    """A set-up command: the same CLI and environment as :func:`_cli`."""
    set_up(shlex.join(["bundlekit", *args]), cwd=cwd, env=machine_env(cwd))


def _write(cwd: Path, tree: str, key: str, body: str) -> None:
    _prepare(cwd, "memory", "-d", tree, "write", key, "--type", "project", "--name", key,
             "--description", f"about {key}", "--body", body)


def test_build_pin_and_name_publish_keep_lineage_so_a_follower_merges_without_conflicts(tmp_path: Path) -> None:
    _prepare(tmp_path, "name", "create", "--key-file", "writer.pem")
    name = _cli(tmp_path, "name", "create", "--key-file", "writer.pem").strip()
    _prepare(tmp_path, "memory", "-d", "mine", "init")
    for key in ("alpha", "beta", "gamma"):
        _write(tmp_path, "mine", key, f"{key}: the first text.")
    first = _cli(tmp_path, "build", "-d", "mine", "-o", "first.car").strip()
    pinned = json.loads(_cli(tmp_path, "pin", "-d", "mine", "--json"))
    assert pinned["root"] == first  # the same unchanged tree builds to the same root: no parent of itself
    _cli(tmp_path, "name", "publish", "--name-key", "writer.pem", first)

    (tmp_path / "theirs").mkdir()
    _cli(tmp_path, "sync", "theirs", "--name", name)
    _write(tmp_path, "theirs", "delta", "the follower's own memory")

    _write(tmp_path, "mine", "beta", "beta: the writer changed this one.")
    second = _cli(tmp_path, "build", "-d", "mine", "-o", "second.car").strip()
    assert second != first
    _cli(tmp_path, "pin", "second.car")
    _cli(tmp_path, "name", "publish", "--name-key", "writer.pem", second)

    report = json.loads(_cli(tmp_path, "sync", "theirs", "--name", name, "--json"))
    assert report["merge"]["base"] == first
    assert report["merge"]["conflicts"] == []
    shown = _cli(tmp_path, "memory", "-d", "theirs", "show", "beta")
    assert "beta: the writer changed this one." in shown
    listed = _cli(tmp_path, "memory", "-d", "theirs", "list")
    assert "delta" in listed and "conflict" not in listed


def test_a_tree_loaded_from_a_car_merges_the_writers_next_car_on_its_base(tmp_path: Path) -> None:
    """``load -o`` remembers the root as the tree's parent and keeps the blocks it read (as ``fork`` does),
    so the writer's next bundle, which names that root as its parent, merges on that base: no conflict."""
    _prepare(tmp_path, "memory", "-d", "mine", "init")
    for key in ("alpha", "beta"):
        _write(tmp_path, "mine", key, f"{key}: the first text.")
    first = _cli(tmp_path, "build", "-d", "mine", "-o", "first.car").strip()
    _cli(tmp_path, "load", "first.car", "-o", "theirs")
    _write(tmp_path, "theirs", "delta", "the reader's own memory")
    _write(tmp_path, "mine", "beta", "beta: the writer changed this one.")
    _cli(tmp_path, "build", "-d", "mine", "-o", "second.car")
    report = json.loads(_cli(tmp_path, "merge", "second.car", "-d", "theirs", "--json"))
    assert report["base"] == first
    assert report["conflicts"] == []
    assert "changed this one" in (tmp_path / "theirs" / "beta.md").read_text()
    assert (tmp_path / "theirs" / "delta.md").is_file()


def test_a_writer_that_starts_empty_publishes_on_the_names_root_alone(tmp_path: Path) -> None:
    """A second writer's machine starts empty: ``sync --name-key`` follows the name into the empty tree, and the
    tree's last root is then the name's root, never the root its round built and never published. Its next bundle
    names the name's root alone as parent (no parent nobody holds), and the first writer's next round merges it on
    that base without a conflict. Every step typed as a user types it (``typed.in_process``)."""
    _prepare(tmp_path, "name", "create", "--key-file", "writer.pem")
    _prepare(tmp_path, "memory", "-d", "laptop", "init")
    _write(tmp_path, "laptop", "alpha", "alpha: the first text.")
    first = json.loads(_cli(tmp_path, "sync", "-d", "laptop", "--name-key", "writer.pem", "--json"))["root"]

    _prepare(tmp_path, "memory", "-d", "desktop", "init")
    followed = json.loads(_cli(tmp_path, "sync", "-d", "desktop", "--name-key", "writer.pem", "--json"))
    assert followed["root"] == first
    assert (tmp_path / "desktop" / ".bundlekit" / "last-root").read_text("ascii").strip() == first

    _write(tmp_path, "desktop", "beta", "beta: written on the desktop.")
    second = json.loads(_cli(tmp_path, "sync", "-d", "desktop", "--name-key", "writer.pem", "--json"))["root"]
    assert second != first
    walked = json.loads(_cli(tmp_path, "log", f"ipfs://{second}", "--json"))
    assert walked["note"] is None and [step["root"] for step in walked["steps"]] == [second, first]
    assert walked["steps"][0]["parents"] == [first]  # the name's root alone: no parent nobody holds

    _write(tmp_path, "laptop", "gamma", "gamma: written on the laptop meanwhile.")
    merged = json.loads(_cli(tmp_path, "sync", "-d", "laptop", "--name-key", "writer.pem", "--json"))
    assert merged["merge"]["base"] == first and merged["merge"]["conflicts"] == []
