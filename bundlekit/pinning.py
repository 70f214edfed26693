"""The ``Pinner`` protocol, the pinner registry, and multi-pinner orchestration.

A pinner publishes a CAR whose root we computed ourselves. The contract is as
small as httpx's ``BaseTransport``: one verb to publish (``pin``), ``status``,
``unpin``, ``close`` and a context manager. Retries, redaction and timeouts
live in ``bundlekit._http``; choosing pinners, running them concurrently and
checking that every service reports *our* root live here.

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

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Protocol, Self, runtime_checkable

from .cid import cid_to_str, parse_cid
from .errors import (
    BundlekitError,
    CIDError,
    CIDMismatch,
    PinnerNotConfigured,
    PinnerNotFound,
    UsageError,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "FAILED",
    "MISSING",
    "PINNED",
    "PINNING",
    "QUEUED",
    "REQUIRE_MODES",
    "BasePinner",
    "PinReport",
    "PinResult",
    "Pinner",
    "PinnerFactory",
    "PreparedSource",
    "available_pinners",
    "create_pinner",
    "is_memory_dir",
    "pin_all",
    "pinner_factory",
    "prepare_source",
    "require_env",
    "same_cid",
]

log = logging.getLogger("bundlekit.pinning")

ENTRY_POINT_GROUP = "bundlekit.pinners"

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


class PinnerFactory(Protocol):
    """What an entry point in ``bundlekit.pinners`` must load to."""

    def from_env(self, env: Mapping[str, str]) -> Pinner: ...

    def is_configured(self, env: Mapping[str, str]) -> bool: ...


class BasePinner:
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

    def close(self) -> None:
        """Release resources. Default: nothing held."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def require_env(env: Mapping[str, str], names: Iterable[str], pinner: str) -> dict[str, str]:
    """Return the named variables; raise ``PinnerNotConfigured`` naming every missing (unset, empty or
    blank) one, or every one holding a control character such as a line break (never a value)."""
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
    return {n: env[n] for n in names}


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


def _as_v1(cid: bytes) -> bytes:
    """CIDv0 is shorthand for a CIDv1 dag-pb sha2-256 CID; spell it out for comparison."""
    if len(cid) == 34 and cid[0] == 0x12 and cid[1] == 0x20:
        return bytes((0x01, 0x70)) + cid
    return cid


def same_cid(a: str, b: bytes) -> bool:
    """True when the CID text ``a`` (any multibase) names exactly the block ``b`` (binary CID).

    CIDv0 and the CIDv1 dag-pb form of the same multihash name the same
    block and compare equal (a service may answer in either version). A
    different codec or multihash (the service re-encoded the content) does not.
    """
    try:
        return _as_v1(parse_cid(a)) == _as_v1(b)
    except CIDError:
        return False


@dataclass
class PinReport:
    """The outcome of ``pin_all``: our root, every pinner's result, and whether ``require`` holds."""

    root: str
    require: str
    pins: list[PinResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """``all``: every pin durable; ``any``: at least one."""
        durable = [p.durable for p in self.pins]
        if not durable:
            return False
        return all(durable) if self.require == "all" else any(durable)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` shape: ``{"root", "pins": [{"pinner","cid","status","url","error"}]}``."""
        return {"root": self.root, "pins": [asdict(p) for p in self.pins]}


ProgressCallback = Callable[[str, int], None]


class _CountingReader:
    """A read-only file wrapper that reports bytes read to a progress callback."""

    def __init__(self, raw: BinaryIO, pinner: str, progress: ProgressCallback) -> None:
        self._raw = raw
        self._pinner = pinner
        self._progress = progress

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        if data:
            self._progress(self._pinner, len(data))
        return data

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._raw, attr)

    def __iter__(self) -> Any:
        # httpx iterates file bodies; route iteration through read() so progress counts.
        while True:
            chunk = self.read(64 * 1024)
            if not chunk:
                return
            yield chunk


def _pin_one(
    pinner: Pinner,
    car_path: Path,
    root: bytes,
    name: str | None,
    size: int,
    progress: ProgressCallback | None,
) -> PinResult:
    """Pin with one pinner on its own file handle; never raises (errors become a failed result)."""
    label = getattr(pinner, "name", type(pinner).__name__)
    root_text = cid_to_str(root)
    try:
        with open(car_path, "rb") as fh:
            stream: BinaryIO = fh
            if progress is not None:
                stream = _CountingReader(fh, label, progress)  # type: ignore[assignment]
            result = pinner.pin(stream, root, name=name, size=size)
    except BundlekitError as exc:
        return PinResult(label, root_text, FAILED, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a third-party pinner's bug must not sink the other pins
        log.debug("pinner %s raised %s", label, type(exc).__name__)
        return PinResult(label, root_text, FAILED, error=f"pinner {label!r} crashed: {type(exc).__name__}")
    if not same_cid(result.cid, root):
        mismatch = CIDMismatch(
            f"{label} reports CID {result.cid} but the local root is {root_text}; "
            "the service re-encoded the content: do not rely on this pin"
        )
        return PinResult(label, result.cid, FAILED, url=result.url, error=str(mismatch))
    return result


def pin_all(
    car_path: str | os.PathLike[str],
    root: bytes,
    pinners: Sequence[Pinner],
    *,
    name: str | None = None,
    require: str = "all",
    progress: ProgressCallback | None = None,
    max_workers: int | None = None,
) -> PinReport:
    """Pin the CAR at ``car_path`` (root ``root``) to every pinner concurrently.

    Each pinner gets its own file handle. A pinner that raises yields a
    ``failed`` result; a pinner reporting a CID other than ``root`` yields a
    ``failed`` result carrying the ``CIDMismatch`` message. Results keep the
    order of ``pinners``. ``progress(pinner_name, nbytes)`` is called from
    worker threads as each pinner reads the CAR.

    Raises UsageError for an unknown ``require`` or an empty pinner list.
    """
    if require not in REQUIRE_MODES:
        raise UsageError(f"--require must be one of {', '.join(REQUIRE_MODES)}, not {require!r}")
    if not pinners:
        raise UsageError("no pinner given: name at least one with --pinner")
    path = Path(car_path)
    size = path.stat().st_size
    lock = threading.Lock()
    safe_progress: ProgressCallback | None = None
    if progress is not None:
        user_progress = progress

        def safe_progress(pinner: str, n: int) -> None:
            with lock:  # the callback usually draws on one terminal
                user_progress(pinner, n)

    workers = max_workers or max(1, len(pinners))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bundlekit-pin") as pool:
        futures = [pool.submit(_pin_one, p, path, root, name, size, safe_progress) for p in pinners]
        results = [f.result() for f in futures]
    return PinReport(root=cid_to_str(root), require=require, pins=results)


# -- what `bundlekit pin SRC` publishes ------------------------------------------

MEMORY_INDEX = "MEMORY.md"


@dataclass
class PreparedSource:
    """The CAR to publish, its root, and what SRC was: ``car``, ``memory`` or ``directory``."""

    car: Path
    root: bytes
    kind: str


def _has_frontmatter(path: Path) -> bool:
    """True when the file's first line is ``---`` and a later line (within 200) is ``---``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            if fh.readline().rstrip("\r\n") != "---":
                return False
            for _, line in zip(range(200), fh):
                if line.rstrip("\r\n") == "---":
                    return True
    except OSError:
        return False
    return False


def is_memory_dir(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a memory directory.

    A memory directory is a directory with a top-level ``MEMORY.md``, or with
    at least one top-level, non-hidden ``*.md`` file that opens with a YAML
    frontmatter block (first line exactly ``---``, closed by a later line
    exactly ``---``). Subdirectories are not searched: a repository that
    merely contains a memory tree somewhere is packed as a plain directory.
    """
    root = Path(path)
    if not root.is_dir():
        return False
    if (root / MEMORY_INDEX).is_file():
        return True
    return any(
        entry.is_file() and _has_frontmatter(entry)
        for entry in sorted(root.glob("*.md"))
        if not entry.name.startswith(".")
    )


def prepare_source(
    src: str | os.PathLike[str],
    workdir: str | os.PathLike[str],
    *,
    profile: str | None = None,
    namespace: str | None = None,
    key: Any = None,
) -> PreparedSource:
    """Turn SRC into a CAR and its root, writing any new CAR under ``workdir``.

    * a file is read as a CAR; its header must name exactly one root;
    * a memory directory (``is_memory_dir``) is built with
      ``bundlekit.bundle.build_bundle`` (encrypted when ``key`` is given);
    * any other directory is packed with ``bundlekit.unixfs.import_path``.

    Raises UsageError (missing SRC, several roots, build options for a CAR,
    a key for a non-memory source), CARError (a file that is not a CAR),
    VerificationError / CodecError (a CAR whose blocks do not verify or whose
    DAG is incomplete: nothing is published), and the builders' errors.
    """
    path = Path(src)
    out = Path(workdir) / "bundle.car"
    if path.is_file():
        if key is not None or profile is not None or namespace is not None:
            raise UsageError(
                f"{path} is a CAR: it is published as is, so key options, --profile and --namespace cannot apply"
            )
        from .car import read_car

        with open(path, "rb") as fh:
            roots, _blocks = read_car(fh, verify=False)
        if len(roots) != 1:
            raise UsageError(
                f"{path} names {len(roots)} roots; bundlekit pins single-root CARs: re-pack it with `bundlekit pack`"
            )
        # A pin of a partial or corrupt DAG is a pin no one can fetch: check before any upload.
        from .verify import verify_car

        report = verify_car(path)
        if report.problem is not None:
            raise report.problem
        return PreparedSource(path, roots[0], "car")
    if not path.is_dir():
        raise UsageError(f"{path} does not exist; give a memory directory, a CAR file or a directory to pack")
    if is_memory_dir(path):
        from .bundle import build_bundle

        result = build_bundle(path, out, namespace=namespace, profile=profile, key=key)
        return PreparedSource(Path(result.car), result.root, "memory")
    if key is not None:
        raise UsageError(
            f"{path} is not a memory directory (no {MEMORY_INDEX}, no memory files): only bundles can be "
            "encrypted; drop the key option or point at the memory tree"
        )
    if namespace is not None:
        raise UsageError("--namespace applies to memory directories only")
    from .car import CarFileWriter
    from .profiles import get_profile
    from .unixfs import import_path

    with CarFileWriter(out) as writer:
        imported = import_path(path, writer, get_profile(profile))
        writer.finish(imported.root)
    return PreparedSource(out, imported.root, "directory")
