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

from bundlekit._plugins import PluginFailed, configured, guarded, names, summary
from bundlekit.errors import BundlekitError, SeedError, UsageError

__all__ = ["ENTRY_POINT_GROUP", "available_seeders", "seeder_declared", "seeder_factory", "seeder_listing"]

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


def seeder_factory(name: str, registered: Mapping[str, metadata.EntryPoint] | None = None) -> Any:
    """Load the factory registered under ``name``; ``UsageError`` (exit 2) naming the registered ones if none,
    or when its package cannot be imported (whatever its import raises: it is foreign code). ``registered`` is
    an :func:`available_seeders` answer, so a listing scans the installed distributions once."""
    seeders = available_seeders() if registered is None else registered
    ep = seeders.get(name)
    if ep is None:
        known = ", ".join(seeders) or "none"
        raise UsageError(f"no seeder named {name!r} is registered (available: {known}); "
                         "install the package that provides it or check the spelling")
    try:
        return ep.load()
    except Exception as exc:  # noqa: BLE001 - a third party's module: any failure to import is "cannot load"
        raise UsageError(f"seeder {name!r} is registered as {ep.value} but cannot be loaded "
                         f"({type(exc).__name__}); reinstall the package that provides it") from exc


def seeder_declared(name: str) -> tuple[Any, list[str], list[str]]:
    """The factory registered as ``name``, its ``options`` and its ``env_vars``, checked as :func:`seeder_listing`
    checks them (``_plugins.names``), with a callable ``from_request``: a lane that breaks its contract there is
    a ``SeedError`` naming it, before anything runs (a str ``env_vars`` was read letter by letter, bytes or a
    missing ``from_request`` were an "internal error" blaming bundlekit)."""
    factory = seeder_factory(name)
    try:
        options = names(getattr(factory, "options", ()), "options")
        env_vars = names(getattr(factory, "env_vars", ()), "env_vars")
        if not callable(getattr(factory, "from_request", None)):
            raise PluginFailed("it has no from_request")
    except PluginFailed as exc:
        raise SeedError(f"seeder {name!r} breaks the seeder contract: {exc}; "
                        "report it to the package that provides it") from None
    return factory, options, env_vars


def seeder_listing(env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One row per registered seeder, by name: its entry point, the first paragraph of its docstring, the lane
    options it takes, the variables it reads (``env_vars``) and whether ``env`` has what it needs
    (``is_configured``). Never a value from ``env``. Each registration is foreign code read through
    ``bundlekit._plugins`` (bounded in time, its prints off stdout, only plain names kept): one that cannot be
    loaded, declares what is not a tuple of names, or whose ``is_configured`` fails, hangs, exits or answers
    other than True or False, is a row with its ``error``; nothing is read from any account."""
    source = os.environ if env is None else env
    registered = available_seeders()
    return [_listing_row(name, ep, registered, source) for name, ep in registered.items()]


def _listing_row(name: str, ep: metadata.EntryPoint, registered: Mapping[str, metadata.EntryPoint],
                 env: Mapping[str, str]) -> dict[str, Any]:
    row: dict[str, Any] = {"name": name, "entry_point": ep.value, "configured": False, "description": "",
                           "options": [], "env": []}
    try:
        factory = guarded(lambda: seeder_factory(name, registered), "loading it")
        doc, options, env_vars = guarded(lambda: (getattr(factory, "__doc__", None), getattr(factory, "options", ()),
                                                  getattr(factory, "env_vars", ())), "reading its attributes")
        row.update(description=summary(doc), options=names(options, "options"), env=names(env_vars, "env_vars"))
        row["configured"] = configured(guarded(lambda: factory.is_configured(env), "is_configured"))
    except BundlekitError as exc:
        row["error"] = str(exc)
    except PluginFailed as exc:
        row["error"] = f"seeder {name!r}: {exc}"
    return row
