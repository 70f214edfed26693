"""The seeder registry: account lanes found through the ``bundlekit.seeders`` entry-point group.

The built-in lanes (``github``, ``farcaster``, ``x``) register in bundlekit's ``pyproject.toml`` exactly as a
third-party package registers its own; nothing is imported until a lane is asked for by name.
"""

from __future__ import annotations

import logging
from importlib import metadata
from typing import Any

from bundlekit.errors import UsageError

__all__ = ["ENTRY_POINT_GROUP", "available_seeders", "seeder_factory"]

log = logging.getLogger("bundlekit.seed")

ENTRY_POINT_GROUP = "bundlekit.seeders"


def available_seeders() -> dict[str, metadata.EntryPoint]:
    """Registered seeders by name, sorted; the first of two registrations of a name wins (logged)."""
    found: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found:
            log.warning("seeder %r registered twice; using %s", ep.name, found[ep.name].value)
            continue
        found[ep.name] = ep
    return dict(sorted(found.items()))


def seeder_factory(name: str) -> Any:
    """Load the factory registered under ``name``; ``UsageError`` (exit 2) naming the registered ones if none,
    or when its package cannot be imported."""
    seeders = available_seeders()
    ep = seeders.get(name)
    if ep is None:
        known = ", ".join(seeders) or "none"
        raise UsageError(f"no seeder named {name!r} is registered (available: {known}); "
                         "install the package that provides it or check the spelling")
    try:
        return ep.load()
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"seeder {name!r} is registered as {ep.value} but cannot be loaded "
                         f"({type(exc).__name__}); reinstall the package that provides it") from exc
