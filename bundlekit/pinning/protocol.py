"""The Pinner protocol: the small contract every publisher implements, its result and statuses."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO, Protocol, Self, runtime_checkable

from bundlekit._closing import Closing
from bundlekit.errors import (
    PinnerNotConfigured,
    UsageError,
)

__all__ = [
    "FAILED",
    "MISSING",
    "PINNED",
    "PINNING",
    "QUEUED",
    "REQUIRE_MODES",
    "BasePinner",
    "DescribesUploads",
    "PinEntry",
    "PinResult",
    "Pinner",
    "PinnerFactory",
    "require_env",
]

# Pin statuses. Only PINNED is durable: QUEUED/PINNING mean the service has not
# finished (e.g. a Pinning Service API still fetching), FAILED carries an error,
# MISSING is what status() answers for content the service does not hold.
PINNED = "pinned"
QUEUED = "queued"
PINNING = "pinning"
FAILED = "failed"
MISSING = "missing"

REQUIRE_MODES = ("all", "any")


@dataclass
class PinResult:
    """What one pinner reports: its name, the CID it holds, the status, where to find it, what went wrong."""

    pinner: str
    cid: str
    status: str
    url: str | None = None
    error: str | None = None

    @property
    def durable(self) -> bool:
        """True only for a completed pin."""
        return self.status == PINNED and self.error is None


@dataclass(frozen=True)
class PinEntry:
    """One pin a service lists for retention: its CID (text), its name, and when it was made (ISO 8601 text)."""

    cid: str
    name: str | None = None
    created: str | None = None


@runtime_checkable
class Pinner(Protocol):
    """A publishing backend.

    ``pin`` reads ``car`` (a CARv1 stream positioned at its start) whose root
    is ``root`` (binary CID), publishes it, and returns a ``PinResult``
    whose ``cid`` is the CID the *service* reports; it must not return a
    different root silently (raise ``CIDMismatch``) and should reuse an
    existing pin of the same root rather than create a duplicate.
    ``size`` is the CAR's length when known, ``name`` a human label.
    ``status`` reports on a root; ``unpin`` removes our pin (no error if
    absent); ``close`` releases connections. Errors are ``PinError``
    subclasses, with no secret in their text.
    Optional: ``holds(cid) -> bool``, whether the pinner has a block already; a pinner that has it may be given
    a CAR that leaves out what it holds (``orchestrate.held_by_all``; ``local`` has it) and must take those
    blocks from where it holds them; ``holds_many(cids) -> set[bytes]``, those of ``cids`` it has, asked at once
    (a build's 10,000 blocks: one pass, not a call each); ``forget_held()``, drop what it learnt of its holdings
    (``held_by_all`` calls it: each round asks afresh).
    """

    name: str

    def pin(
        self, car: BinaryIO, root: bytes, *, name: str | None = None, size: int | None = None
    ) -> PinResult: ...

    def status(self, cid: bytes) -> PinResult: ...

    def unpin(self, cid: bytes) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


@runtime_checkable
class DescribesUploads(Protocol):
    """An optional part of the contract: a pinner that stores a group and key-values with its uploads.

    ``describe`` sets them for the uploads that follow (Pinata's ``group_id`` and ``keyvalues``);
    :func:`~bundlekit.pinning.orchestrate.describe_uploads` hands ``--group`` and ``--meta`` to the pinners
    that are one (``isinstance(pinner, DescribesUploads)``) and refuses them when none is.
    """

    def describe(self, *, group: str | None = None, keyvalues: Mapping[str, str] | None = None) -> None: ...


class PinnerFactory(Protocol):
    """What an entry point in ``bundlekit.pinners`` must load to."""

    def from_env(self, env: Mapping[str, str]) -> Pinner: ...

    def is_configured(self, env: Mapping[str, str]) -> bool: ...


class BasePinner(Closing):
    """Optional convenience base: context manager, no-op ``close``/``check``, env helpers.

    Subclasses set ``name``, ``description`` and ``env_vars`` (required
    variables first; optional ones in ``optional_env``).
    """

    name: str = ""
    description: str = ""
    env_vars: tuple[str, ...] = ()
    optional_env: tuple[str, ...] = ()

    @classmethod
    def is_configured(cls, env: Mapping[str, str]) -> bool:
        """True when every required variable is set and not blank (as ``require_env`` counts them)."""
        return all(env.get(var, "").strip() for var in cls.env_vars)

    def check(self) -> None:
        """A cheap authenticated call; raise a ``PinError`` when it fails. Default: nothing to check."""

    def list(self, name_prefix: str = "") -> list[PinEntry]:
        """The pins whose name starts with ``name_prefix`` (retention). Default: this pinner cannot list.

        Raises UsageError for a pinner that cannot list its pins by name.
        """
        raise UsageError(
            f"pinner {self.name!r} cannot list its pins by name, so it cannot retire old releases; "
            "retention works with local, kubo, psa, pinata and cluster"
        )

    def close(self) -> None:
        """Release resources. Default: nothing held."""


def require_env(env: Mapping[str, str], names: Iterable[str], pinner: str) -> dict[str, str]:
    """Return the named variables; raise ``PinnerNotConfigured`` naming every missing (unset, empty or
    blank) one, every one holding a control character such as a line break, and every credential
    (a name not ending in ``_URL``) holding a non-ASCII character (never a value)."""
    names = list(names)
    missing = [n for n in names if not env.get(n, "").strip()]
    if missing:
        raise PinnerNotConfigured(
            f"pinner {pinner!r} is not configured: set {', '.join(missing)} in the environment "
            "(in CI, from the pipeline's secrets)"
        )
    # A pasted secret with a line break or other control character cannot go into an HTTP header.
    garbled = [n for n in names if any(ord(c) < 0x20 or ord(c) == 0x7F for c in env[n])]
    if garbled:
        raise PinnerNotConfigured(
            f"pinner {pinner!r}: {', '.join(garbled)} holds a line break or control character; "
            "set it again without one (check how the secret was pasted)"
        )
    # HTTP headers carry ASCII only: a token with a typographic quote or a non-breaking space would
    # fail deep inside the HTTP library (URLs may be international: httpx encodes them).
    foreign = [n for n in names if not n.endswith("_URL") and not env[n].isascii()]
    if foreign:
        raise PinnerNotConfigured(
            f"pinner {pinner!r}: {', '.join(foreign)} holds a non-ASCII character; tokens are ASCII, "
            "set it again (check how the secret was pasted)"
        )
    return {n: env[n] for n in names}

