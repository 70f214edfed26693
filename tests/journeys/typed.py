"""One command line typed as a person types it: ``bundlekit ...`` as a fresh process, its exit code checked.

``set_up`` runs the same line through the same CLI in this test process (click's ``CliRunner``, :func:`invoke`;
:func:`in_process` answers as ``subprocess.run`` does): for the commands whose fresh-process start-up (~0.15 s of
CPU each, paid per test) is not what the test checks: those that only prepare a journey (a tree, a bundle to
merge), and the lines of tests about what the CLI parses and prints (option names, ``convert --strict``). A
journey's own commands, where the fresh process is part of the journey, stay ``typed``.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from click.testing import CliRunner, Result

from bundlekit.cli import cli


def machine_env(root: Path) -> dict[str, str]:
    """This process's environment for a machine of its own under ``root``: no ``BUNDLEKIT_*`` or XDG setting, the
    home and the store (``BUNDLEKIT_HOME``) in ``root``: for ``typed`` and ``set_up`` alike."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BUNDLEKIT_", "XDG_"))}
    env.update(HOME=str(root / "home"), BUNDLEKIT_HOME=str(root / "store"),
               PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    return env


def typed(line: str, *, cwd: Path, env: Mapping[str, str], code: int = 0) -> subprocess.CompletedProcess[str]:
    """Run ``line`` (it starts with ``bundlekit``) in ``cwd`` with ``env``; assert exit ``code`` and no traceback."""
    args = shlex.split(line)
    assert args[0] == "bundlekit"
    done = subprocess.run([sys.executable, "-m", "bundlekit", *args[1:]], cwd=cwd, env=dict(env),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == code, f"{line}: exit {done.returncode}\n{done.stderr}"
    assert "Traceback" not in done.stderr
    return done


def invoke(args: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None) -> Result:
    """``bundlekit ARGS`` through the same CLI in this process (click's ``CliRunner``): in ``cwd``, with exactly
    ``env`` as the environment (every other variable unset for the call; ``None`` keeps this process's). An
    exception escaping the CLI fails the test, as a traceback would."""
    overlay: dict[str, str | None] = {}
    if env is not None:
        overlay = {key: None for key in os.environ if key not in env}
        overlay.update(env)
    with contextlib.chdir(cwd):
        return CliRunner().invoke(cli, list(args), prog_name="bundlekit", env=overlay, catch_exceptions=False)


def in_process(args: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """:func:`invoke`, answered as ``subprocess.run`` answers for a fresh process (exit code, stdout, stderr)."""
    done = invoke(args, cwd=cwd, env=env)
    return subprocess.CompletedProcess(["bundlekit", *args], done.exit_code, done.stdout, done.stderr)


def set_up(line: str, *, cwd: Path, env: Mapping[str, str] | None = None, code: int = 0) -> Result:
    """Run ``line`` as ``typed`` does, in this process (:func:`invoke`), exit ``code`` asserted."""
    args = shlex.split(line)
    assert args[0] == "bundlekit"
    done = invoke(args[1:], cwd=cwd, env=env)
    assert done.exit_code == code, f"{line}: exit {done.exit_code}\n{done.stderr}"
    assert "Traceback" not in done.stderr
    return done
