"""The seeder registry: account lanes found through the ``bundlekit.seeders`` entry-point group.

The built-in lanes (``github``, ``farcaster``, ``x``) register in bundlekit's ``pyproject.toml`` exactly as a
third-party package registers its own; nothing is imported until a lane is asked for by name.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from bundlekit.errors import BundlekitError, UsageError

__all__ = ["ENTRY_POINT_GROUP", "available_seeders", "seeder_factory", "seeder_listing"]

log = logging.getLogger("bundlekit.seed")

ENTRY_POINT_GROUP = "bundlekit.seeders"
_MAX_SUMMARY = 300  # a listing's description: a third party's docstring may be a book


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


def seeder_listing(env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One row per registered seeder, by name: its entry point, the first paragraph of its docstring, the lane
    options it takes, the variables it reads (``env_vars``) and whether ``env`` has what it needs
    (``is_configured``). Never a value from ``env``. A registration that cannot be loaded, or whose
    ``is_configured`` fails, is a row with its ``error``; nothing is read from any account."""
    source = os.environ if env is None else env
    rows: list[dict[str, Any]] = []
    for name, ep in available_seeders().items():
        row: dict[str, Any] = {"name": name, "entry_point": ep.value}
        row.update(configured=False, description="", options=[], env=[])
        try:
            factory = seeder_factory(name)
            row.update(description=_summary(getattr(factory, "__doc__", None)),
                       options=[str(option) for option in getattr(factory, "options", ())],
                       env=[str(var) for var in getattr(factory, "env_vars", ())])
            row["configured"] = bool(factory.is_configured(source))
        except BundlekitError as exc:
            row["error"] = str(exc)
        except Exception as exc:  # noqa: BLE001 - a third party's is_configured: its failure is its row's
            row["error"] = f"seeder {name!r}: is_configured failed ({type(exc).__name__})"
        rows.append(row)
    return rows


def _summary(doc: object) -> str:
    """A docstring's first paragraph on one line, its ``literal`` quoting dropped, at most ``_MAX_SUMMARY``
    characters."""
    if not isinstance(doc, str):
        return ""
    paragraph = doc.strip().split("\n\n")[0][:_MAX_SUMMARY * 2]
    return " ".join(paragraph.split()).replace("``", "")[:_MAX_SUMMARY]
