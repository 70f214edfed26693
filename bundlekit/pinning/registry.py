"""The pinner registry: publishers found through the ``bundlekit.pinners`` entry-point group."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from bundlekit.errors import (
    BundlekitError,
    PinnerNotFound,
)
from bundlekit.pinning.protocol import Pinner

__all__ = ["ENTRY_POINT_GROUP", "available_pinners", "create_pinner", "pinner_factory", "pinner_listing"]

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


def pinner_listing(env: Mapping[str, str] | None = None, *, check: bool = False) -> list[dict[str, Any]]:
    """One row per registered pinner: name, entry point, whether ``env`` configures it, its variables.

    Never a secret: ``env`` lists variable names only. With ``check`` each configured
    pinner is built and its ``check()`` (a cheap authenticated call) run: ``check`` is
    then ``"ok"``, ``"failed"`` (with ``error``) or ``"skipped"`` (not configured).
    A registered pinner that cannot be loaded is a row with its ``error``.
    """
    source = os.environ if env is None else env
    registered = available_pinners()
    return [_listing_row(name, ep, registered, source, check) for name, ep in registered.items()]


def _listing_row(name: str, ep: metadata.EntryPoint, registered: Mapping[str, metadata.EntryPoint],
                 env: Mapping[str, str], check: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"name": name, "entry_point": ep.value}
    try:
        factory = pinner_factory(name, registered)
    except BundlekitError as exc:
        row.update(configured=False, description="", env=[], error=str(exc))
        return row
    configured = bool(factory.is_configured(env))
    row.update(
        configured=configured,
        description=getattr(factory, "description", ""),
        env=list(getattr(factory, "env_vars", ())) + list(getattr(factory, "optional_env", ())),
    )
    if check:
        row["check"] = "skipped" if not configured else "ok"
        if configured:
            _check_pinner(factory, env, row)
    return row


def _check_pinner(factory: Any, env: Mapping[str, str], row: dict[str, Any]) -> None:
    """Build the pinner (create_pinner, minus a second registry scan) and run its ``check``.

    A failure goes in ``row``: ``check`` ``"failed"`` and its ``error``.
    """
    try:
        with factory.from_env(env) as pinner:
            checker = getattr(pinner, "check", None)
            if callable(checker):
                checker()
    except BundlekitError as exc:
        row["check"] = "failed"
        row["error"] = str(exc)
