"""One command line typed as a person types it: ``bundlekit ...`` as a fresh process, its exit code checked."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def typed(line: str, *, cwd: Path, env: Mapping[str, str], code: int = 0) -> subprocess.CompletedProcess[str]:
    """Run ``line`` (it starts with ``bundlekit``) in ``cwd`` with ``env``; assert exit ``code`` and no traceback."""
    args = shlex.split(line)
    assert args[0] == "bundlekit"
    done = subprocess.run([sys.executable, "-m", "bundlekit", *args[1:]], cwd=cwd, env=dict(env),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == code, f"{line}: exit {done.returncode}\n{done.stderr}"
    assert "Traceback" not in done.stderr
    return done
