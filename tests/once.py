"""What a costly session fixture makes, made once per run and shared by every test process.

pytest-xdist's worksteal moves tests between processes, so a module's tests often run in two or three of them, and a
session fixture ran once in each (the differential CIDs' reference run: ~9 s of node and Python, twice a run). Here
the first process to ask makes it under a lock, in a folder beside the processes' own temporary folders
(``getbasetemp().parent``, pytest-xdist's run folder), with a JSON summary; the others wait for the lock and read
the folder and the summary. Without pytest-xdist the folder is in the run's own temporary folder. A make that fails
leaves nothing behind: the next process that asks tries again, and fails the same way.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def once_per_run(
    factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Any]
) -> tuple[Path, Any]:
    """The folder ``make`` filled and the JSON value it returned, made by the first test process of the run to ask."""
    base = factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, summary = shared / f"once-{name}", shared / f"once-{name}.json"
    with (shared / f"once-{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not summary.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            try:
                value = make(folder)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            partial = summary.with_suffix(f".{os.getpid()}")
            partial.write_text(json.dumps(value), encoding="utf-8")
            partial.replace(summary)
        return folder, json.loads(summary.read_text(encoding="utf-8"))
