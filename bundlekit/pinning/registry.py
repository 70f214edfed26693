"""The pinner registry: publishers found through the ``bundlekit.pinners`` entry-point group.

The built-ins (:data:`BUILT_IN`, registered in ``pyproject.toml`` as a third-party package registers) are found by
name without reading the installed distributions' entry points: that scan (``importlib.metadata``, ~25 ms with its
import) is made only for another name, or to list them all (every ``sync --name-key`` round names ``local``).
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bundlekit._plugins import PluginFailed, configured, guarded, names, one_line
from bundlekit.errors import (
    BundlekitError,
    PinnerNotFound,
)
from bundlekit.pinning.protocol import Pinner

if TYPE_CHECKING:
    from importlib import metadata

__all__ = ["BUILT_IN", "ENTRY_POINT_GROUP", "available_pinners", "create_pinner", "pinner_factory", "pinner_listing"]

log = logging.getLogger("bundlekit.pinning")

ENTRY_POINT_GROUP = "bundlekit.pinners"
# The built-in pinners as pyproject.toml registers them (tests/pinners/test_registry.py checks they agree).
BUILT_IN = {
    "local": "pinners.local:LocalPinner",
    "memory": "pinners.memory:MemoryPinner",
    "pinata": "pinners.pinata:PinataPinner",
    "web3-storage": "pinners.web3storage:Web3StoragePinner",
    "filebase": "pinners.filebase:FilebasePinner",
    "kubo": "pinners.kubo:KuboPinner",
    "psa": "pinners.psa:PSAPinner",
    "cluster": "pinners.cluster:ClusterPinner",
}
CHECK_SECONDS = 120.0  # `pinners --check`: one pinner's authenticated call, its retries included


def _entry_points() -> list[metadata.EntryPoint]:
    """Every entry point in the pinner group (the one place the registry looks; ``importlib.metadata`` is imported
    for it alone: DEVELOPERS.md, "Lazy imports")."""
    from importlib import metadata

    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def available_pinners() -> dict[str, metadata.EntryPoint]:
    """Registered pinners by name, sorted; nothing is imported yet.

    When two distributions register the same name, the first found wins and
    the shadowing is logged. A built-in name (:data:`BUILT_IN`) is never taken by another
    distribution: :func:`pinner_factory` loads the built-in by name without this scan, so a
    listing that showed the other one would name a pinner a publish does not use; its entry
    point is passed over with a warning naming it.
    """
    found: dict[str, metadata.EntryPoint] = {}
    for ep in _entry_points():
        if ep.name in BUILT_IN and ep.value != BUILT_IN[ep.name]:
            log.warning("pinner %r is built in; the one %s registers under that name is not used",
                        ep.name, ep.value)
            continue
        if ep.name in found:
            log.warning("pinner %r registered twice; using %s", ep.name, found[ep.name].value)
            continue
        found[ep.name] = ep
    return dict(sorted(found.items()))


def pinner_factory(name: str, registered: Mapping[str, metadata.EntryPoint] | None = None) -> Any:
    """Load the class or factory registered under ``name``; ``PinnerNotFound`` if none.

    ``registered`` is an :func:`available_pinners` answer to look ``name`` up in,
    so a caller loading every pinner scans the installed distributions once; without it
    a built-in name (:data:`BUILT_IN`) is loaded without the scan.
    """
    value = BUILT_IN.get(name) if registered is None else None
    try:
        if value is not None:  # ours: no entry-point scan
            module, _, attribute = value.partition(":")
            return getattr(importlib.import_module(module), attribute)
        pinners = available_pinners() if registered is None else registered
        ep = pinners.get(name)
        if ep is None:
            known = ", ".join(pinners) or "none"
            raise PinnerNotFound(
                f"no pinner named {name!r} is registered (available: {known}); "
                "install the package that provides it or check the spelling"
            )
        value = ep.value
        return ep.load()
    except PinnerNotFound:
        raise
    except Exception as exc:  # noqa: BLE001 - a third party's module: any failure to import is "cannot load"
        raise PinnerNotFound(
            f"pinner {name!r} is registered as {value} but cannot be loaded ({type(exc).__name__}); "
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
    """One pinner's row; its registration is foreign code, read through ``bundlekit._plugins`` (as seeders'):
    one that cannot load, declares what is not a tuple of names, or whose ``is_configured`` fails, hangs,
    exits or answers other than True or False is a row with its ``error``."""
    row: dict[str, Any] = {"name": name, "entry_point": ep.value, "configured": False, "description": "",
                           "env": []}
    try:
        factory = guarded(lambda: pinner_factory(name, registered), "loading it")
        description, required, optional = guarded(
            lambda: (getattr(factory, "description", ""), getattr(factory, "env_vars", ()),
                     getattr(factory, "optional_env", ())), "reading its attributes")
        row.update(description=one_line(description),
                   env=names(required, "env_vars") + names(optional, "optional_env"))
        row["configured"] = configured(guarded(lambda: factory.is_configured(env), "is_configured"))
    except BundlekitError as exc:
        row["error"] = str(exc)
    except PluginFailed as exc:
        row["error"] = f"pinner {name!r}: {exc}"
    if check:
        row["check"] = "skipped" if not row["configured"] else "ok"
        if row["configured"]:
            _check_pinner(factory, env, row)
    return row


def _check_pinner(factory: Any, env: Mapping[str, str], row: dict[str, Any]) -> None:
    """Build the pinner (create_pinner, minus a second registry scan) and run its ``check``, bounded by
    :data:`CHECK_SECONDS` (the call crosses the network; each request has its own, shorter, timeout).

    A failure goes in ``row``: ``check`` ``"failed"`` and its ``error``.
    """

    def build_and_check() -> None:
        with factory.from_env(env) as pinner:
            checker = getattr(pinner, "check", None)
            if callable(checker):
                checker()

    try:
        guarded(build_and_check, "its check", timeout=CHECK_SECONDS)
    except BundlekitError as exc:
        row["check"] = "failed"
        row["error"] = str(exc)
    except PluginFailed as exc:
        row["check"] = "failed"
        row["error"] = f"pinner {row['name']!r}: {exc}"
