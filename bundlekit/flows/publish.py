"""Publish: build (or pack, or take a CAR), pin to every pinner, then move the name once the pins hold.

The one place ``bundlekit pin`` and the MCP server's ``bundle_publish`` run a publish: the pinners are
opened first (a missing secret fails the run before any upload), the CAR is made in a temporary
directory removed however the run ends, ``pin_all`` publishes it, the pinners are closed, and only
when ``require`` holds is the root published under the name (``PublishOptions.name``). A name that
cannot be moved does not hide the pins: its error is in the report (``name_error``) for the front end
to raise after printing them. ``require_not_met`` is the one wording of a ``--require`` that did not hold
(``bundlekit pin`` and ``bundlekit sync``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bundlekit.bundle.build import BuildOptions
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import BundlekitError, PinError
from bundlekit.flows.names import publish_name
from bundlekit.flows.source import PreparedSource, is_memory_dir, prepare_source
from bundlekit.names import Published
from bundlekit.names.publish import Router
from bundlekit.names.routing import RoutingEndpoint
from bundlekit.pinning.orchestrate import PinReport, describe_uploads, pin_all
from bundlekit.pinning.origins import open_pinners

if TYPE_CHECKING:
    from bundlekit.bundle.signature import ExternalSignature
    from bundlekit.crypto import KeySpec
    from bundlekit.crypto.signing import Signer

__all__ = ["NameTarget", "PublishOptions", "PublishProgress", "PublishReport", "publish", "require_not_met"]


class PublishProgress(Protocol):
    """Where a publish reports progress: one bar while the CAR is made, one while it uploads."""

    def building(self, packing: bool) -> AbstractContextManager[Callable[[int, int], None] | None]:
        """The build's ``progress(done, total)`` (files; bytes when ``packing`` a plain directory), or None."""

    def uploading(self, total: int) -> AbstractContextManager[Callable[[str, int], None] | None]:
        """``pin_all``'s ``progress(pinner, n)`` over ``total`` bytes (the CAR once per pinner), or None."""


@dataclass(frozen=True)
class NameTarget:
    """The name moved once the pins hold: its key, and the routers and routing endpoints (checked already)."""

    signer: Ed25519Signer
    routers: list[tuple[str, Router]] = field(default_factory=list)
    routing: list[RoutingEndpoint] = field(default_factory=list)


@dataclass(frozen=True)
class PublishOptions:
    """One publish: what (``src``: a memory tree, a CAR or a directory to pack), where (the pinners by name,
    the psa origins), what must hold (``require``), the pin's ``label`` on the services, Pinata's ``group`` and
    ``keyvalues``, the build's key, signer and options, the name to move, the progress bars, and the prefix of
    the temporary directory the CAR is made in."""

    src: Path
    pinners: tuple[str, ...] = ("local",)
    psa_origins: tuple[str, ...] = ()
    require: str = "all"
    label: str | None = None
    group: str | None = None
    keyvalues: Mapping[str, str] = field(default_factory=dict)
    key: KeySpec | None = None
    sign: Signer | ExternalSignature | None = None
    build: BuildOptions | None = None
    name: NameTarget | None = None
    progress: PublishProgress | None = None
    workdir_prefix: str = "bundlekit-pin-"


@dataclass
class PublishReport:
    """What a publish did: the source published (root, kind, signer), the pins, the name moved, or why not."""

    source: PreparedSource
    pins: PinReport
    published: Published | None = None
    name_error: BundlekitError | None = None


def publish(options: PublishOptions) -> PublishReport:
    """Build, pin, then move the name (module docstring); the pins' report, whether ``require`` holds or not.

    Raises the pinners' construction errors, ``describe_uploads``' and ``prepare_source``'s (all before any
    upload), and ``pin_all``'s; a name that could not be moved is ``name_error`` in the report.
    """
    built = open_pinners(options.pinners, options.psa_origins)
    try:
        describe_uploads(built, options.group, options.keyvalues)
        with tempfile.TemporaryDirectory(prefix=options.workdir_prefix) as workdir:
            source = _prepare(options, workdir)
            size = source.car.stat().st_size
            with _uploading(options.progress, size * len(built)) as counted:
                pins = pin_all(source.car, source.root, built, name=options.label, require=options.require,
                               progress=counted)
    finally:
        for pinner in built:
            pinner.close()
    report = PublishReport(source, pins)
    if pins.ok and options.name is not None:  # the name moves only once the pins hold
        target = options.name
        try:
            report.published = publish_name(target.signer, source.root, routers=target.routers,
                                             routing=target.routing)
        except BundlekitError as exc:  # the pins hold: the front end reports them (and the root) before failing
            report.name_error = exc
    return report


def _prepare(options: PublishOptions, workdir: str) -> PreparedSource:
    """The CAR to pin, made under ``workdir``, with the build's progress bar when there is one."""
    if options.progress is None:
        return prepare_source(options.src, workdir, key=options.key, sign=options.sign, options=options.build)
    packing = options.src.is_dir() and not is_memory_dir(options.src)  # a plain directory: bytes packed
    with options.progress.building(packing) as callback:
        build = replace(options.build or BuildOptions(), progress=callback)
        return prepare_source(options.src, workdir, key=options.key, sign=options.sign, options=build)


def _uploading(progress: PublishProgress | None, total: int) -> AbstractContextManager[Callable[[str, int], None] | None]:
    """The upload bar's ``pin_all`` callback, or none without a progress reporter."""
    return nullcontext() if progress is None else progress.uploading(total)


def require_not_met(pins: PinReport, require: str, *, reasons: bool = False, then: str = "") -> PinError:
    """The error of a ``--require`` that did not hold: how many pins are not durable, each one's reason
    when ``reasons``, and ``then`` (what was therefore not done). ``PinError``: exit 4."""
    failed = [p for p in pins.pins if not p.durable]
    why = "".join(f"; {p.error if p.error.startswith(p.pinner) else f'{p.pinner}: {p.error}'}"
                  for p in failed if p.error) if reasons else ""
    return PinError(f"--require {require} not met: {len(failed)} of {len(pins.pins)} pin(s) not durable{why}{then}")
