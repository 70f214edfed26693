"""The hostile-input harness: inputs built by ``make_inputs.py``, commands run in a bounded subprocess.

Each command runs as ``bundlekit ...`` in a child process whose address
space is capped (``RLIMIT_AS``, ``MEMORY_LIMIT``, set by ``bounded.py``) and which is killed
after ``TIMEOUT`` seconds. A command that grows without bound dies of the cap
(a ``MemoryError`` traceback, or a kill) and one that runs for ever hits the
timeout: both fail the test. These are bounds, not timing assertions.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from bundlekit.car.index import CarIndex
from bundlekit.ipld.cid import cid_to_str

HERE = Path(__file__).parent
#: Address space of a child: the interpreter and bundlekit need about 100 MiB.
MEMORY_LIMIT = 512 * 1024 * 1024
#: Seconds before a child is killed: far above a refusal (well under a second), far below "for ever".
TIMEOUT = 60.0

RunCli = Callable[..., subprocess.CompletedProcess[str]]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"hostile_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def bounded(*args: str) -> list[str]:
    """The command line running ``bundlekit ARGS`` with its address space capped at ``MEMORY_LIMIT``."""
    return [sys.executable, str(HERE / "bounded.py"), str(MEMORY_LIMIT), *args]


def child_env() -> dict[str, str]:
    """The environment of a child: this checkout first on the path, a private home for the store."""
    env = dict(os.environ)
    root = str(HERE.parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@pytest.fixture(scope="session")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The hostile CAR files, name -> path, written once per run by ``make_inputs.write_inputs``."""
    paths: dict[str, Path] = _load("make_inputs").write_inputs(tmp_path_factory.mktemp("hostile-inputs"))
    return paths


@pytest.fixture
def run_cli(tmp_path: Path) -> Iterator[RunCli]:
    """Run ``bundlekit ARGS`` bounded in memory and time; returns the completed process (text)."""
    env = child_env()
    env["BUNDLEKIT_HOME"] = str(tmp_path / "home")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            bounded(*args),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=env,
            cwd=tmp_path,
            check=False,
        )

    yield run


@pytest.fixture(scope="session")
def roots(inputs: dict[str, Path]) -> dict[str, str]:
    """The root CID (text) of each hostile input."""
    found: dict[str, str] = {}
    for name, path in inputs.items():
        with CarIndex(path) as index:
            found[name] = cid_to_str(index.roots[0])
    return found


@pytest.fixture(scope="module")
def gateway_url(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``bundlekit serve`` of every hostile input in a memory-capped child; its URL."""
    env = child_env()
    env["BUNDLEKIT_HOME"] = str(tmp_path_factory.mktemp("gateway-home"))
    with subprocess.Popen(
        bounded("serve", "--port", "0", "--json", *map(str, inputs.values())),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    ) as child:
        try:
            assert child.stdout is not None
            yield str(json.loads(child.stdout.readline())["url"])
        finally:
            child.terminate()
            child.wait(timeout=TIMEOUT)
