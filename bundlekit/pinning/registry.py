"""The pinner registry: publishers found through the ``bundlekit.pinners`` entry-point group."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from bundlekit.errors import (
    PinnerNotFound,
)
from bundlekit.pinning.protocol import Pinner

__all__ = ["ENTRY_POINT_GROUP", "available_pinners", "create_pinner", "pinner_factory"]

log = logging.getLogger("bundlekit.pinning")

ENTRY_POINT_GROUP = "bundlekit.pinners"


def _entry_points() -> list[metadata.EntryPoint]:
    """Every entry point in the pinner group (the one place the registry looks)."""
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def available_pinners() -> dict[str, metadata.EntryPoint]:
    """Registered pinners by name, sorted; nothing is imported yet.

    When two distributions register the same name, the first found wins and
    the shadowing is logged.
    """
    found: dict[str, metadata.EntryPoint] = {}
    for ep in _entry_points():
        if ep.name in found:
            log.warning("pinner %r registered twice; using %s", ep.name, found[ep.name].value)
            continue
        found[ep.name] = ep
    return dict(sorted(found.items()))


def pinner_factory(name: str, registered: Mapping[str, metadata.EntryPoint] | None = None) -> Any:
    """Load the class or factory registered under ``name``; ``PinnerNotFound`` if none.

    ``registered`` is an :func:`available_pinners` answer to look ``name`` up in,
    so a caller loading every pinner scans the installed distributions once.
    """
    pinners = available_pinners() if registered is None else registered
    ep = pinners.get(name)
    if ep is None:
        known = ", ".join(pinners) or "none"
        raise PinnerNotFound(
            f"no pinner named {name!r} is registered (available: {known}); "
            "install the package that provides it or check the spelling"
        )
    try:
        return ep.load()
    except (ImportError, AttributeError) as exc:
        raise PinnerNotFound(
            f"pinner {name!r} is registered as {ep.value} but cannot be loaded ({type(exc).__name__}); "
            "reinstall the package that provides it"
        ) from exc


def create_pinner(name: str, env: Mapping[str, str] | None = None) -> Pinner:
    """Build the pinner registered under ``name`` from ``env`` (default ``os.environ``).

    Raises PinnerNotFound or PinnerNotConfigured.
    """
    factory = pinner_factory(name)
    pinner: Pinner = factory.from_env(os.environ if env is None else env)
    return pinner
