"""Journey: a memory file that exists but cannot be read never blocks the rest.

A backup restored as another user, a file left ``chmod 000`` by a tool, a disk error: ``k1.md`` is in the tree
but the OS refuses its bytes (before, ``bundlekit build`` exited 1 with "cannot read .../k1.md: Permission
denied" and nothing was carried). Typed as a person types them, in fresh processes, with the file's mode
really refusing the read (as root, run with the capabilities that pass file modes dropped from the bounding
set, ``setpriv``): ``memory list`` shows it as broken naming why, ``memory show k1`` refuses naming the file
(exit 1, no traceback), ``build``, ``pin --pinner local`` and a ``sync`` writer round carry the rest with a
warning naming it, and ``build --strict`` / ``pin --strict`` exit 1 before anything is written (no CAR, no
pin). Nine memories: the C reader (``_statscan.read_files``, from eight names on) meets the refusal for real.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from bundlekit.memory import Memory

from .typed import machine_env, set_up

_DROP = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]


def _prefix() -> list[str]:
    """What runs a command so that a file of mode 000 refuses it: nothing for another user, ``setpriv`` for root."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root passes file modes and setpriv is not installed to drop that")
    return _DROP


def _typed(line: str, *, cwd: Path, env: Mapping[str, str], code: int = 0) -> subprocess.CompletedProcess[str]:
    """``typed``'s fresh process, run where the file's mode is honoured (:func:`_prefix`)."""
    args = line.split()
    assert args[0] == "bundlekit"
    done = subprocess.run([*_prefix(), sys.executable, "-m", "bundlekit", *args[1:]], cwd=cwd, env=dict(env),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == code, f"{line}: exit {done.returncode}\n{done.stderr}"
    assert "Traceback" not in done.stderr
    return done


@pytest.fixture
def machine(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    mem = Memory(tmp_path / "mem")
    try:
        for number in range(1, 10):
            mem.write(f"k{number}", name=f"Memory {number}", description="d", type="user", body=f"body {number}")
    finally:
        mem.close()
    (tmp_path / "mem" / "k1.md").chmod(0)
    env = machine_env(tmp_path)
    probe = subprocess.run([*_prefix(), sys.executable, "-c", "open('mem/k1.md', 'rb')"], cwd=tmp_path,
                           env=env, capture_output=True, check=False)
    if probe.returncode == 0:
        pytest.skip("this machine lets the process read a file of mode 000")
    return tmp_path, env


PROBLEM = "cannot read mem/k1.md: Permission denied; fix its permissions or move it out of the memory tree"
WARNING = f"warning: {PROBLEM}; left out"  # neither show nor forget offered: neither can read it


def test_list_shows_it_as_broken_and_show_refuses_naming_it(machine: tuple[Path, dict[str, str]]) -> None:
    cwd, env = machine
    listed = _typed("bundlekit memory list -d mem", cwd=cwd, env=env).stdout.splitlines()
    assert listed[0] == f"k1\tbroken\t-\t-\t{PROBLEM}"
    assert [line.split("\t")[0] for line in listed[1:]] == [f"k{n}" for n in range(2, 10)]
    rows = json.loads(_typed("bundlekit memory list -d mem --json", cwd=cwd, env=env).stdout)
    assert rows[0] == {"key": "k1", "broken": PROBLEM}
    shown = _typed("bundlekit memory show k1 -d mem", cwd=cwd, env=env, code=1)
    assert shown.stdout == "" and shown.stderr == f"error: {PROBLEM}\n"
    assert "body 2" in _typed("bundlekit memory show k2 -d mem", cwd=cwd, env=env).stdout
    forgot = _typed("bundlekit memory forget k1 -d mem", cwd=cwd, env=env, code=1)  # its version cannot be named
    assert forgot.stderr.startswith("error: cannot read ") and (cwd / "mem" / "k1.md").exists()


def test_build_carries_the_rest_naming_it_and_strict_writes_nothing(machine: tuple[Path, dict[str, str]]) -> None:
    cwd, env = machine
    refused = _typed("bundlekit build mem -o strict.car --strict", cwd=cwd, env=env, code=1)
    assert refused.stderr == f"error: {PROBLEM}; fix the file\n" and not (cwd / "strict.car").exists()
    built = _typed("bundlekit build mem -o b.car", cwd=cwd, env=env)
    assert WARNING in built.stderr.splitlines()
    set_up("bundlekit load b.car -o loaded", cwd=cwd, env=env)
    assert sorted(p.name for p in (cwd / "loaded").glob("*.md") if p.name != "MEMORY.md") == [
        f"k{n}.md" for n in range(2, 10)]


def test_pin_carries_the_rest_naming_it_and_strict_pins_nothing(machine: tuple[Path, dict[str, str]]) -> None:
    cwd, env = machine
    refused = _typed("bundlekit pin -d mem --pinner local --strict", cwd=cwd, env=env, code=1)
    assert refused.stderr.startswith(f"error: {PROBLEM}; ")
    assert set_up("bundlekit store ls", cwd=cwd, env=env).stdout == ""
    pinned = _typed("bundlekit pin -d mem --pinner local", cwd=cwd, env=env)
    assert WARNING in pinned.stderr.splitlines()
    root = pinned.stdout.strip()
    assert root in set_up("bundlekit store ls", cwd=cwd, env=env).stdout


def test_a_sync_writer_round_carries_the_rest_naming_it(machine: tuple[Path, dict[str, str]]) -> None:
    cwd, env = machine
    set_up("bundlekit name create --name-key k.pem", cwd=cwd, env=env)
    synced = _typed("bundlekit sync -d mem --name-key k.pem --json", cwd=cwd, env=env)
    assert WARNING in synced.stderr.splitlines()
    report = json.loads(synced.stdout)
    assert report["warnings"] == [WARNING.removeprefix("warning: ")] and report["published"] is not None
    set_up(f"bundlekit store export {report['root']} -o synced.car", cwd=cwd, env=env)
    set_up("bundlekit load synced.car -o loaded", cwd=cwd, env=env)
    assert not (cwd / "loaded" / "k1.md").exists() and (cwd / "loaded" / "k9.md").is_file()


def test_a_writer_never_publishes_a_memory_it_cannot_read_as_deleted_for_its_followers(
        machine: tuple[Path, dict[str, str]]) -> None:
    """A sync's lineage is proven: a bundle without a memory its parent held deletes it on every follower. So a
    writer round whose build left out a memory the name's bundle holds refuses (exit 1, nothing pinned or
    published) instead of deleting, on the followers, the memory it could not read; the follower keeps it."""
    cwd, env = machine
    (cwd / "mem" / "k1.md").chmod(0o644)
    set_up("bundlekit name create --name-key k.pem", cwd=cwd, env=env)
    name = json.loads(set_up("bundlekit sync -d mem --name-key k.pem --json", cwd=cwd, env=env).stdout)["name"]
    (cwd / "fol").mkdir()
    set_up(f"bundlekit sync -d fol --name {name}", cwd=cwd, env=env)
    assert (cwd / "fol" / "k1.md").is_file()
    (cwd / "mem" / "k1.md").chmod(0)
    refused = _typed("bundlekit sync -d mem --name-key k.pem", cwd=cwd, env=env, code=1)
    assert refused.stderr.splitlines()[-1].startswith(f"error: {PROBLEM}; ") and "k1" in refused.stderr
    set_up(f"bundlekit sync -d fol --name {name}", cwd=cwd, env=env)
    assert (cwd / "fol" / "k1.md").is_file()
