"""README's tour runs as written: every line, in order, in a temporary folder.

The tour's placeholders are filled the way a reader fills them: ``<root>`` with the root
``build --json`` printed, ``k51...`` with the name ``name create`` printed, ``age1...`` with the
recipient ``key new`` printed, ``did:key:z6Mk...`` with the signer ``build --sign`` reported, ``...`` with a passphrase, port 8080 with a free
one, and the inputs the tour assumes (``some/dir``, ``~/.claude/projects/x/memory``,
``acct.car``, ``task.car``) are made first. The remote pinner it names (``pinata``) becomes the
local pinner (no service is reachable from a test; duplicate pinners collapse), so the whole tour
runs on the local pinner and a loopback ``serve``. Each line must exit 0.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bundlekit.bundle.build import build_bundle
from bundlekit.memory import Memory
from tests.net.loopback import free_port

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PASSPHRASE = "correct horse battery staple"


def tour_lines() -> list[str]:
    """The tour's command lines: continuations joined, comments and blank lines dropped."""
    section = README[README.index("## A tour") :]
    start = section.index("```sh\n") + len("```sh\n")
    block = section[start : section.index("```", start)].replace("\\\n", " ")
    lines = []
    for line in block.splitlines():
        command = re.sub(r"\s+#.*$", "", line).strip()  # a comment follows two or more spaces and '#'
        if command and not command.startswith("#"):
            lines.append(command)
    return lines




def _inputs(work: Path, home: Path) -> None:
    """What the tour assumes is there: a directory and a file to pack, a Claude Code store, two layer CARs."""
    (work / "some" / "dir").mkdir(parents=True)
    (work / "some" / "dir" / "a.txt").write_text("alpha\n", encoding="utf-8")
    (work / "some" / "file.bin").write_bytes(bytes(range(256)) * 1000)
    shutil.copytree(ROOT / "fixtures" / "interop" / "claude-code" / "memory", home / ".claude" / "projects" / "x" / "memory")
    for layer in ("acct", "task"):
        mem = Memory(work / f"{layer}-tree")
        mem.write(f"{layer}_note", name=layer, description=f"the {layer} layer", type="project", body="layer body")
        build_bundle(mem, work / f"{layer}.car")


def _shim(bin_dir: Path) -> None:
    """``bundlekit`` on PATH: this interpreter running this checkout."""
    bin_dir.mkdir()
    script = bin_dir / "bundlekit"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m bundlekit "$@"\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


@pytest.mark.slow
def test_every_tour_line_runs_in_order(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    _inputs(work, home)
    _shim(tmp_path / "bin")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BUNDLEKIT_", "PINATA_", "CI"))}
    env.update(HOME=str(home), BUNDLEKIT_HOME=str(tmp_path / "bkhome"), PATH=f"{tmp_path / 'bin'}:{env['PATH']}",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    port = str(free_port())
    filled: dict[str, str] = {}
    server: subprocess.Popen[str] | None = None
    try:
        for line in tour_lines():
            command = line.replace("8080", port).replace("pinata", "local")
            for placeholder, value in filled.items():
                command = command.replace(placeholder, value)
            assert "..." not in command.replace("MEMORY_PASSPHRASE=...", ""), f"unfilled placeholder: {command}"
            if command.startswith("export "):
                name, _, value = command.removeprefix("export ").partition("=")
                env[name] = PASSPHRASE if value == "..." else value
                continue
            if command.endswith("&"):
                server = subprocess.Popen(["sh", "-c", "exec " + command.rstrip("& ")], cwd=work, env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                assert server.stdout is not None
                assert server.stdout.readline().strip() == f"http://127.0.0.1:{port}", command
                continue
            done = subprocess.run(["sh", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                                  timeout=120, check=False)
            assert done.returncode == 0, f"{command}\n{done.stderr}"
            if command.startswith("bundlekit build") and "-o bundle.car --json" in command:
                filled["<root>"] = json.loads(done.stdout)["root"]
            elif command.startswith("bundlekit name create"):
                filled["k51..."] = done.stdout.strip()
            elif command.startswith("bundlekit key new"):
                filled["age1..."] = done.stdout.strip()
            elif "--sign" in command and command.startswith("bundlekit build"):
                filled["did:key:z6Mk..."] = re.findall(r"signed by (\S+)", done.stderr)[0]
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
            assert server.stdout is not None
            server.stdout.close()
    assert (work / "latest" / "feedback_tone.md").is_file()
