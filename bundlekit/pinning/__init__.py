"""Publishing: the ``Pinner`` protocol, the pinner registry, and multi-pinner orchestration.

A pinner publishes a CAR whose root we computed ourselves. The contract is as
small as httpx's ``BaseTransport``: one verb to publish (``pin``), ``status``,
``unpin``, ``close`` and a context manager. Retries, redaction and timeouts
live in ``bundlekit.net.http``; what a service's answer means for a pin (the
``PinError`` map) lives in ``http``; choosing pinners, running them
concurrently and checking that every service reports *our* root live here.

Modules: ``protocol`` (the contract, ``PinResult``, statuses, ``BasePinner``, the optional ``DescribesUploads``,
``require_env``), ``registry`` (the ``bundlekit.pinners`` entry-point group, and ``pinner_listing``: what
``bundlekit pinners`` shows),
``orchestrate`` (``pin_all``, ``PinReport``, CID equality), ``http`` (``HttpClient``: the shared
retry loop plus the pinning error map), ``origins`` (``link_origins``: where a
Pinning Service API fetches the content from), ``polling`` (waiting for a
service that finishes a pin later) and ``retention``
(``retire``: which old releases ``bundlekit unpin`` removes).

Pinners are found only through the ``bundlekit.pinners`` entry-point group:
the built-ins in ``pinners/`` register exactly as a third-party package would
(see ``specs/pinning.md``). A registered object is a class (or factory) with

* ``from_env(env) -> Pinner``: build from settings, raising
  ``PinnerNotConfigured`` that names the missing variables (never values);
* ``is_configured(env) -> bool``;
* optional ``description: str`` and ``env_vars: tuple[str, ...]`` for
  ``bundlekit pinners``.

Errors: ``PinnerNotFound`` (unknown name), ``PinnerNotConfigured``, and the
``PinError`` family raised by pinners (see ``bundlekit.errors``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bundlekit._lazy import lazy_getattr

if TYPE_CHECKING:
    from bundlekit.pinning.orchestrate import PinReport, describe_uploads, pin_all, same_cid
    from bundlekit.pinning.protocol import (
        FAILED,
        MISSING,
        PINNED,
        PINNING,
        QUEUED,
        REQUIRE_MODES,
        BasePinner,
        DescribesUploads,
        PinEntry,
        Pinner,
        PinnerFactory,
        PinResult,
        require_env,
    )
    from bundlekit.pinning.registry import (
        ENTRY_POINT_GROUP,
        available_pinners,
        create_pinner,
        pinner_factory,
        pinner_listing,
    )

# Loaded on first use (PEP 562), so importing one submodule does not import the others.
_LAZY: dict[str, str] = {
    "PinReport": "bundlekit.pinning.orchestrate",
    "describe_uploads": "bundlekit.pinning.orchestrate",
    "pin_all": "bundlekit.pinning.orchestrate",
    "same_cid": "bundlekit.pinning.orchestrate",
    "FAILED": "bundlekit.pinning.protocol",
    "MISSING": "bundlekit.pinning.protocol",
    "PINNED": "bundlekit.pinning.protocol",
    "PINNING": "bundlekit.pinning.protocol",
    "QUEUED": "bundlekit.pinning.protocol",
    "REQUIRE_MODES": "bundlekit.pinning.protocol",
    "BasePinner": "bundlekit.pinning.protocol",
    "DescribesUploads": "bundlekit.pinning.protocol",
    "Pinner": "bundlekit.pinning.protocol",
    "PinEntry": "bundlekit.pinning.protocol",
    "PinnerFactory": "bundlekit.pinning.protocol",
    "PinResult": "bundlekit.pinning.protocol",
    "require_env": "bundlekit.pinning.protocol",
    "ENTRY_POINT_GROUP": "bundlekit.pinning.registry",
    "available_pinners": "bundlekit.pinning.registry",
    "create_pinner": "bundlekit.pinning.registry",
    "pinner_factory": "bundlekit.pinning.registry",
    "pinner_listing": "bundlekit.pinning.registry",
}

__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "ENTRY_POINT_GROUP",
    "FAILED",
    "MISSING",
    "PINNED",
    "PINNING",
    "QUEUED",
    "REQUIRE_MODES",
    "BasePinner",
    "DescribesUploads",
    "PinEntry",
    "PinReport",
    "PinResult",
    "Pinner",
    "PinnerFactory",
    "available_pinners",
    "create_pinner",
    "describe_uploads",
    "pin_all",
    "pinner_factory",
    "pinner_listing",
    "require_env",
    "same_cid",
]
