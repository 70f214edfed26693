"""No benchmark writes the user's data directory (attack37w).

A build of a tree on disk makes the user's sealing key (``<data dir>/build-check.key``) and a pin writes the
default store: ``bench/load.py``, ``encrypt.py``, ``gateway.py`` and ``memory.py`` built trees with the caller's
``HOME`` and left a ``build-check.key`` in ``~/.local/share/bundlekit``. Every script that builds, pins or
starts the CLI first moves its home under its scratch folder (``bench/_home.own_home``) or sets one for its
children (``BUNDLEKIT_HOME``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


BENCH = Path(__file__).resolve().parents[2] / "bench"
#: What a script does that writes the data directory: builds, pins, stores, runs the CLI.
_WRITES = ("build_bundle(", "BlockStore(", '"-m", "bundlekit"', "cli(")


def _scripts() -> list[Path]:
    return sorted(path for path in BENCH.glob("*.py") if not path.name.startswith("_"))


@pytest.mark.parametrize("script", _scripts(), ids=lambda path: path.name)
def test_every_benchmark_that_writes_bundlekit_data_has_a_home_of_its_own(script: Path) -> None:
    text = script.read_text(encoding="utf-8")
    if any(marker in text for marker in _WRITES):
        assert "own_home(" in text or "BUNDLEKIT_HOME" in text, f"bench/{script.name} runs in the caller's home"


def test_own_home_moves_the_data_directory_under_the_scratch_folder(tmp_path: Path) -> None:
    # in a child: own_home rewrites its process's environment, the suite's own included
    program = (f"import sys; sys.path.insert(0, {str(BENCH)!r}); from pathlib import Path; from _home import own_home; "
               f"own_home(Path({str(tmp_path)!r})); import os; from bundlekit.blockstore import default_store_root; "
               "print(default_store_root()); print(os.environ.get('BUNDLEKIT_SERVE_TOKEN'))")
    env = {**os.environ, "BUNDLEKIT_SERVE_TOKEN": "the user's", "BUNDLEKIT_HOME": "/nowhere/the-users"}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True)
    store, token = done.stdout.splitlines()
    assert Path(store).is_relative_to(tmp_path) and token == "None"
