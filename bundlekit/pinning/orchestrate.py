"""Publishing to several pinners at once, and checking every service reports our root."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from bundlekit._signals import shielded
from bundlekit.errors import (  # Cancelled: re-exported, drawn in the error tree
    BundlekitError,
    Cancelled,
    CIDError,
    CIDMismatch,
    UsageError,
)
from bundlekit.ipld.cid import as_cidv1, cid_from_text, cid_to_str
from bundlekit.pinning.origins import fetches_content
from bundlekit.pinning.protocol import FAILED, PINNED, REQUIRE_MODES, DescribesUploads, Pinner, PinResult

__all__ = ["Cancelled", "HeldByAll", "PinReport", "ProgressCallback", "describe_uploads", "held_by_all", "pin_all", "same_cid"]

log = logging.getLogger("bundlekit.pinning")


def same_cid(a: str, b: bytes) -> bool:
    """True when the CID text ``a`` (any multibase) names exactly the block ``b`` (binary CID).

    CIDv0 and the CIDv1 dag-pb form of the same multihash name the same
    block and compare equal (a service may answer in either version). A
    different codec or multihash (the service re-encoded the content) does not.
    """
    try:
        return as_cidv1(cid_from_text(a)) == as_cidv1(b)  # base32 without multiformats, else parse_cid
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

#: How long the main thread waits on a pin at a stretch: the bound on how late a Ctrl-C is noticed (see ``_outcome``).
SIGNAL_POLL_SECONDS = 0.1


def describe_uploads(pinners: Sequence[Pinner], group: str | None, keyvalues: Mapping[str, str]) -> None:
    """Hand a group and key-values to the pinners that store them (``DescribesUploads``); UsageError when none does.

    Nothing given: nothing to do. Called before any upload, so a misplaced option refuses the run.
    """
    if group is None and not keyvalues:
        return
    takers = [p for p in pinners if isinstance(p, DescribesUploads)]
    if not takers:
        raise UsageError("--group and --meta apply to --pinner pinata only")
    for p in takers:
        p.describe(group=group, keyvalues=keyvalues)


class _CountingReader:
    """A read-only file wrapper that reports bytes read to a progress callback and stops once cancelled."""

    def __init__(self, raw: BinaryIO, pinner: str, progress: ProgressCallback | None,
                 cancel: threading.Event) -> None:
        self._raw = raw
        self._pinner = pinner
        self._progress = progress
        self._cancel = cancel

    def read(self, n: int = -1) -> bytes:
        if self._cancel.is_set():
            raise Cancelled(f"{self._pinner}: upload cancelled (interrupted)")
        data = self._raw.read(n)
        if data and self._progress is not None:
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


class _Uploads:
    """The uploads of one ``pin_all`` under way, and the Ctrl-C that stops them.

    Counted by the workers themselves, not through the pool's list of threads:
    a Ctrl-C that lands while ``ThreadPoolExecutor.submit`` starts a worker
    thread (its ``Thread.start`` waits for the thread to run) unwinds before the
    pool records that thread, so ``pool.shutdown(wait=True)`` returns while the
    thread still uploads, and the local pin it makes can outlive the rollback.
    Once :meth:`stop` ran no upload starts; :meth:`wait` returns when every
    started one has ended.
    """

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self._changed = threading.Condition()
        self._running = 0

    @contextmanager
    def running(self, label: str) -> Iterator[None]:
        """Count one upload while in the block; ``Cancelled`` instead when stopped already."""
        with self._changed:
            if self.cancel.is_set():
                raise Cancelled(f"{label}: not started (interrupted)")
            self._running += 1
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()

    def stop(self) -> None:
        """Cancel every upload's next read and let none start (under the lock :meth:`running` checks it in)."""
        with self._changed:
            self.cancel.set()

    def wait(self) -> None:
        """Return once no upload runs (call after :meth:`stop`)."""
        with self._changed:
            self._changed.wait_for(lambda: not self._running)


def _pin_one(
    pinner: Pinner,
    car_path: Path,
    root: bytes,
    name: str | None,
    size: int,
    progress: ProgressCallback | None,
    uploads: _Uploads,
) -> PinResult:
    """Pin with one pinner on its own file handle; never raises (errors become a failed result)."""
    label = getattr(pinner, "name", type(pinner).__name__)
    root_text = cid_to_str(root)
    try:
        with uploads.running(label), open(car_path, "rb") as fh:
            stream: BinaryIO = _CountingReader(fh, label, progress, uploads.cancel)  # type: ignore[assignment]
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


def _outcome(future: Future[PinResult]) -> PinResult:
    """``future.result()``, waited for in slices of ``SIGNAL_POLL_SECONDS`` so a Ctrl-C is noticed within one.

    Python runs a signal's handler in the main thread between bytecodes; a wait
    on a lock is cut short only when the signal interrupts that very wait. A
    Ctrl-C the kernel hands to a worker thread, or one landing just before the
    main thread blocks, leaves the handler pending until the lock is released:
    with one unbounded wait, when the upload ends by itself (minutes for a large
    CAR), so the uploads go on and the interrupt surfaces after they finished.
    """
    while True:
        try:
            return future.result(timeout=SIGNAL_POLL_SECONDS)
        except TimeoutError:
            continue


class HeldByAll:
    """What every one of some pinners holds already (each one's ``holds``): called with a CID, whether they all hold
    that block; :meth:`many`, which of many CIDs they all hold, asked of each pinner at once where it can
    (``holds_many``): a build's thin CAR asks it of its 10,000 files' blocks together (``bundle.build``). Made, it
    has each pinner forget what it learnt of its holdings before (its optional ``forget_held``): a pinner kept across
    ``sync --interval``'s rounds must not answer from a pin since retired and collected."""

    __slots__ = ("_pinners",)

    def __init__(self, pinners: Sequence[Pinner]) -> None:
        self._pinners = list(pinners)
        for pinner in self._pinners:  # a new question (a sync round's): what a pinner learnt before may be gone since
            forget = getattr(pinner, "forget_held", None)
            if callable(forget):
                forget()

    def __call__(self, cid: bytes) -> bool:
        return all(pinner.holds(cid) for pinner in self._pinners)  # type: ignore[attr-defined]

    def many(self, cids: Sequence[bytes]) -> set[bytes]:
        held: set[bytes] | None = None
        for pinner in self._pinners:
            batch = getattr(pinner, "holds_many", None)
            check = pinner.holds  # type: ignore[attr-defined]
            found = set(batch(cids)) if callable(batch) else {cid for cid in cids if check(cid)}
            held = found if held is None else held & found
        return held or set()


def held_by_all(pinners: Sequence[Pinner]) -> HeldByAll | None:
    """Whether every one of ``pinners`` holds a block already (each pinner's optional ``holds(cid)``: the local
    store's), or None when one of them cannot tell: a CAR for them all may then leave out the blocks they all
    hold, as git sends a remote only the objects it lacks. A pinner without ``holds`` gets every block."""
    if not pinners or not all(callable(getattr(p, "holds", None)) for p in pinners):
        return None
    return HeldByAll(pinners)


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
    worker threads as each pinner reads the CAR. Pinners whose service
    fetches the content (``fetches_content``) start after the others end.

    On Ctrl-C (``KeyboardInterrupt``) every upload is cancelled (its next read
    of the CAR raises ``Cancelled``; connections are closed; none starts after),
    every upload started is awaited (wherever the Ctrl-C lands, thread start
    included), a pin a ``rollback_on_interrupt`` pinner (``local``) made in
    this run is removed, and the interrupt propagates. Under the CLI's
    handlers (``_signals.stop_signals_interrupt``) a second signal during that
    rollback is held until it ends (``_signals.shielded``).

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

    uploads = _Uploads()
    # Pinners that keep a pin on this machine: an interrupted run must leave none it made.
    local = [p for p in pinners if getattr(p, "rollback_on_interrupt", False)]
    had = {id(p) for p in local if p.status(root).status == PINNED}
    # A service that fetches the content itself runs after the pinners that put it on the network.
    waves = [[p for p in pinners if not fetches_content(p)], [p for p in pinners if fetches_content(p)]]
    results: dict[int, PinResult] = {}
    workers = max_workers or max(1, len(pinners))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bundlekit-pin") as pool:
        try:
            for wave in waves:
                futures = {id(p): pool.submit(_pin_one, p, path, root, name, size, safe_progress, uploads)
                           for p in wave}
                results.update({key: _outcome(f) for key, f in futures.items()})
        except KeyboardInterrupt:
            with shielded():  # a second Ctrl-C (or SIGTERM) waits for the rollback, then ends the command
                _abort(pinners, local, had, root, uploads, pool)
            raise
    return PinReport(root=cid_to_str(root), require=require, pins=[results[id(p)] for p in pinners])


def _abort(pinners: Sequence[Pinner], local: Sequence[Pinner], had: set[int], root: bytes,
           uploads: _Uploads, pool: ThreadPoolExecutor) -> None:
    """Ctrl-C: stop every upload (cancel reads, close connections), wait for them, undo new local pins."""
    uploads.stop()
    pool.shutdown(wait=False, cancel_futures=True)
    for pinner in pinners:
        if pinner not in local:
            try:
                pinner.close()  # a worker waiting on the network gets an error at once
            except Exception:  # noqa: BLE001 - closing is best effort while interrupted
                log.debug("closing %s while interrupted failed", getattr(pinner, "name", pinner))
    uploads.wait()  # the pool's own wait misses a worker whose start the Ctrl-C cut short
    pool.shutdown(wait=True)
    for pinner in local:
        if id(pinner) not in had:
            pinner.unpin(root)
