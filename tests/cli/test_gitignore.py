"""Running README's tour in a clone leaves nothing git would offer to commit (issue 34, item 9).

Every path the tour writes (each ``-o``, ``-d``, key file and the exported ``$BUNDLEKIT_MEMORY_DIR``)
is ignored by the repository's ``.gitignore``, a key above all; and no file the repository tracks, nor a
new file beside them (``bundlekit/memory/``, a CAR fixture under ``tests/``), is.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_readme_tour import tour_lines

ROOT = Path(__file__).resolve().parents[2]
WRITES = ("-o", "--output", "-d", "--dir", "--name-key", "--sign-key")

pytestmark = pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                                reason="needs git and this checkout's history")


def _ignored(path: str) -> bool:
    return subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "--no-index", path],
                          check=False, timeout=60).returncode == 0


def _tour_writes() -> set[str]:
    written: set[str] = set()
    for line in tour_lines():
        if line.startswith("export BUNDLEKIT_MEMORY_DIR="):
            written.add(line.partition("=")[2])
            continue
        words = shlex.split(re.sub(r"\s&$", "", line).replace("&&", ";"))
        for flag, value in zip(words, words[1:]):
            if flag in WRITES:
                written.add(value)
    return {w.removeprefix("./") for w in written}


def test_the_tour_writes_something() -> None:
    assert {"memory", "bundle.car", "agent.pem"} <= _tour_writes()


@pytest.mark.parametrize("path", sorted(_tour_writes()))
def test_what_the_tour_writes_is_ignored(path: str) -> None:
    probe = path if not path.endswith("/") and "." in Path(path).name else f"{path.rstrip('/')}/a-file.md"
    assert _ignored(probe), f"{probe} (written by README's tour) is not in .gitignore"


@pytest.mark.parametrize("path", ["bundlekit/memory/new_module.py", "tests/car/data/new-fixture.car",
                                  "fixtures/memory/project_new.md", "README.md", "specs/new.pem.md"])
def test_the_repositorys_own_files_are_not_ignored(path: str) -> None:
    assert not _ignored(path)
