"""A second writer's machine starts empty: ``sync --name-key`` follows the name into the empty tree, and the
tree's last root is then the name's root, never the root its round built and never published. Its next bundle
names the name's root alone as parent (no parent nobody holds), and the first writer's next round merges it on
that base without a conflict. Every step typed as a user types it (``typed.in_process``)."""

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
    set_up(shlex.join(["bundlekit", *args]), cwd=cwd, env=machine_env(cwd))


def _write(cwd: Path, tree: str, key: str, body: str) -> None:
    _prepare(cwd, "memory", "-d", tree, "write", key, "--type", "project", "--name", key,
             "--description", f"about {key}", "--body", body)


def test_a_writer_that_starts_empty_publishes_on_the_names_root_alone(tmp_path: Path) -> None:
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
