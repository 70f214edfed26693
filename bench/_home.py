"""A benchmark's own home: every bundlekit setting and data directory under its scratch folder, never the user's.

A build of a tree on disk writes its sealing key (``<data dir>/build-check.key``, ``bundle.buildcheck``) and a pin
its blocks into the default store (``blockstore.default_store_root``: ``$BUNDLEKIT_HOME``, else
``$XDG_DATA_HOME/bundlekit``, else ``~/.local/share/bundlekit``). A benchmark run in the user's shell resolved
those to the user's own data directory: a ``build-check.key`` appeared in ``/root/.local/share/bundlekit`` from
a run of ``bench/encrypt.py``/``load.py``/``gateway.py``/``memory.py``. Each calls :func:`own_home` first.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["own_home"]

#: Settings a benchmark keeps from the caller: where the Letta server's venv is (no user data).
_KEPT = ("BUNDLEKIT_LETTA_VENV",)


def own_home(work: Path) -> None:
    """Point this process (and every child it starts) at a home under ``work``: ``HOME``, the XDG folders and
    ``BUNDLEKIT_HOME``; every other ``BUNDLEKIT_*`` setting and ``SOURCE_DATE_EPOCH`` of the caller removed."""
    for name in list(os.environ):
        if (name.startswith(("BUNDLEKIT_", "XDG_")) and name not in _KEPT) or name == "SOURCE_DATE_EPOCH":
            del os.environ[name]
    home = work / "bench-home"
    os.environ.update(
        HOME=str(home),
        BUNDLEKIT_HOME=str(home / "store"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
    )
