"""``bundlekit sync``: many writers, one memory, met at an IPNS name.

One round (``specs/sync.md``, "Sync"):

1. Resolve the name (``names.resolve``: the store, the routing endpoints and the gateways,
   verified records, the highest valid sequence; none yet is a first publish). A tree with no
   lineage that holds no memory and no day file (a first follow) loads the bundle instead of
   merging it (``bundle.firstload``: streamed, one flush, each file moved into place).
2. Merge the bundle it points at into the tree (``bundle.merge.merge_bundle``: verified,
   over the common ancestor, all or nothing). A follower (no name key) stops here.
   A tree that descends from the name's root (it published or merged it last:
   ``bundle.lineage.heads``) skips the load, a follower's always, a writer's when plaintext: merging an
   ancestor changes nothing.
3. A writer whose tree now holds exactly what the name points at has nothing to publish
   (judged by the merge, or, when the merge was skipped, by the built manifest's file CIDs).
   Otherwise it builds the tree (signed with ``sign``, encrypted with ``key``) with
   ``parents`` = [the remote root, the tree's last root], pins the CAR to every pinner
   (``pinning.pin_all``; ``require`` must hold, else ``PinError``) and publishes the
   root under the name with the sequence one above the record it merged
   (``names.publish(follows=...)``: refused when the name moved meanwhile; with routing
   endpoints, each one's compare-and-swap refuses it too, ``specs/sync.md`` "Routing API use").
4. The name moved (another writer published between 1 and 3): start again from the new
   record, at most ``max_attempts`` rounds (``NameMovedError`` after). Each new round merges
   the other writer's bundle over the one merged before, so neither loses the other's
   memories.

The tree then remembers the published root as its parent and last root. The CAR is
built in a temporary directory removed when the round ends, however it ends.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from bundlekit._gcpause import gc_paused
from bundlekit._lazy import lazy_module
from bundlekit.blockstore import BlockStore
from bundlekit.bundle.firstload import FirstLoad, is_empty_tree, load_into_empty
from bundlekit.bundle.lineage import heads, read_last, record_last, set_lineage
from bundlekit.bundle.loadoptions import LoadOptions
from bundlekit.bundle.merge import MergeOptions, MergeResult, build_tree, memory_names, merge_bundle, same_files
from bundlekit.bundle.sources import Gateways
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import BundlekitError, FrontmatterError, LoadError, NameMovedError, UsageError
from bundlekit.ipld.cid import cid_from_text, cid_to_str
from bundlekit.memory import Memory
from bundlekit.memory.filesize import remedy
from bundlekit.names.publish import Published, PublishTargets, Router, publish
from bundlekit.names.record import name_from_key
from bundlekit.names.routing import RoutingEndpoint
from bundlekit.names.resolve import resolve
from bundlekit.pinning.orchestrate import PinReport, held_by_all, pin_all

if TYPE_CHECKING:
    from bundlekit.bundle.signature import ExternalSignature
    from bundlekit.crypto._keys import KeySpec
    from bundlekit.crypto.signing import Signer
    from bundlekit.flows import publish as publishing
    from bundlekit.pinning.protocol import Pinner
else:  # imported when a round's pins fail (DEVELOPERS.md, "Lazy imports": a round that pins imports none of it)
    publishing = lazy_module("bundlekit.flows.publish")

__all__ = ["DEFAULT_ATTEMPTS", "DEFAULT_MAX_BLOCKS", "BackgroundSync", "SyncOptions", "SyncReport", "sync", "sync_forever"]

#: Rounds a writer tries when the name keeps moving under it.
DEFAULT_ATTEMPTS: Final = 5
#: Blocks one load of a sync may fetch and keep (``SyncOptions.max_blocks``; ``Gateways.max_blocks``). A bundle
#: has about one block per memory file (a leaf per 256 KiB or 1 MiB chunk past that) plus a directory node per
#: few hundred entries: 100,000 memories take about 100,000. Twice that leaves room for any honest bundle while
#: a hostile name's DAG of tiny blocks (each within the byte and visit bounds) cannot fill the store.
DEFAULT_MAX_BLOCKS = 200_000


@dataclass(frozen=True)
class SyncOptions:
    """How a sync runs: the pins that must hold before the name moves (``require``, as ``pin_all``), the rounds
    a writer tries when the name keeps moving, the routers a record is published to besides the store and the
    gateways, the Delegated Routing endpoints where records are read and written besides the store (``routing``:
    the meeting point of writers on different machines, a team's ``bundlekit serve``), the merge's options (``on_conflict``; ``dry_run`` is not a sync's) and the loads' limits, HTTP
    options and required ``publishers``; ``max_blocks``, the blocks one load may fetch and keep (None:
    ``DEFAULT_MAX_BLOCKS``, read when the sync starts)."""

    require: str = "all"
    max_attempts: int = DEFAULT_ATTEMPTS
    routers: tuple[tuple[str, Router], ...] = ()
    routing: tuple[RoutingEndpoint, ...] = ()
    merge: MergeOptions = MergeOptions()
    load: LoadOptions = LoadOptions()
    max_blocks: int | None = None


@dataclass
class SyncReport:
    """One sync: the name, the role, the record merged (root and sequence), the merge report, the root built,
    pinned and published (writer), the rounds it took and whether the name already held the tree."""

    name: str
    role: str
    remote: str | None = None
    remote_sequence: int | None = None
    merge: MergeResult | None = None
    root: str | None = None
    pins: PinReport | None = None
    published: Published | None = None
    attempts: int = 0
    up_to_date: bool = False
    notes: list[str] = field(default_factory=list)
    #: A first follow into an empty tree: the bundle loaded, not merged (``bundle.firstload``).
    loaded: FirstLoad | None = None
    #: What the writer's build left out, one warning each naming the memory file (a file that does not parse,
    #: over the size bound or unreadable): the bundle carries the rest (``BuildOptions.warn``).
    warnings: list[str] = field(default_factory=list)
    #: The conflicts every round's merge resolved (``merge`` is the last round's only: a round lost to another
    #: writer may have made the siblings, and the next merges them as its own tree).
    conflicts: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "role": self.role, "remote": self.remote, "remote_sequence": self.remote_sequence,
            "merge": self.merge.to_dict() if self.merge is not None else None, "root": self.root,
            "pins": self.pins.to_json()["pins"] if self.pins is not None else None,
            "published": self.published.to_dict() if self.published is not None else None,
            "attempts": self.attempts, "up_to_date": self.up_to_date, "notes": list(self.notes),
            "conflicts": self.conflicts, "warnings": list(self.warnings),
            "loaded": None if self.loaded is None else {
                "root": self.loaded.root, "memories": self.loaded.memories, "days": self.loaded.days,
                "warnings": list(self.loaded.warnings)},
        }


@gc_paused()  # one round, bounded by the tree and the name's bundle (bundlekit._gcpause)
def sync(
    tree: str | os.PathLike[str],
    *,
    name_key: str | os.PathLike[str] | Ed25519Signer | None = None,
    name: str | None = None,
    pinners: Sequence[Pinner] = (),
    key: KeySpec | None = None,
    sign: Signer | ExternalSignature | None = None,
    source: Gateways | None = None,
    options: SyncOptions | None = None,
) -> SyncReport:
    """One sync of the memory tree ``tree`` with a name (module steps); returns its report.

    A writer gives ``name_key`` (the Ed25519 key file or signer of the name) and ``pinners``;
    a follower gives ``name`` and only merges. ``source`` is where records and blocks come from:
    its gateways (none: ``$BUNDLEKIT_GATEWAYS``) and its store (none: ``$BUNDLEKIT_HOME``'s), which
    holds the records and keeps every block fetched, so the next sync moves only what changed.
    Raises ``UsageError`` (neither or both, no tree, a writer without pinners), the resolver's,
    loader's and merge's errors, ``PinError`` when ``options.require`` does not hold (the name is
    not moved), ``NameMovedError`` after ``options.max_attempts`` rounds lost to other writers.
    """
    opts = options or SyncOptions()
    if (name_key is None) == (name is None):
        raise UsageError("give --name-key KEY (a writer) or --name NAME (a follower), not both or neither")
    if not Path(tree).is_dir():
        raise UsageError(f"memory tree {str(tree)!r} is not a directory; create it with `bundlekit memory init`")
    if opts.max_attempts < 1:
        raise UsageError("sync needs at least one attempt")
    signer = None
    if name_key is not None:
        signer = name_key if isinstance(name_key, Ed25519Signer) else Ed25519Signer.from_file(name_key)
        if not pinners:
            raise UsageError("a writer needs at least one pinner (--pinner); the default is local")
    label = name_from_key(signer.public) if signer is not None else str(name).removeprefix("ipns://").split("/")[0]
    given = source or Gateways()
    max_blocks = DEFAULT_MAX_BLOCKS if opts.max_blocks is None else opts.max_blocks
    if max_blocks < 1:
        raise UsageError("a sync's block bound (max_blocks) must be 1 or more")
    blocks = Gateways(given.gateways, store=given.store or BlockStore(), keep=True, max_blocks=max_blocks)
    report = SyncReport(label, "writer" if signer is not None else "follower")
    lost: set[str] = set()  # the roots of rounds refused as lost: a later round finding one is told so
    while True:
        report.attempts += 1
        _merge_remote(report, tree, blocks, key, opts)
        if signer is None:
            return report
        try:
            _publish(report, tree, signer, pinners, key=key, sign=sign, blocks=blocks, options=opts)
            if report.up_to_date and report.root is not None and report.root in lost:
                report.notes.append(f"the name points at {report.root}, the root this writer built in an earlier "
                                    "round: its record was kept after all, by another path")
            return report
        except NameMovedError as exc:
            report.notes.append(f"round {report.attempts}: {exc}")
            if report.root is not None:
                lost.add(report.root)
            if report.attempts >= opts.max_attempts:
                raise NameMovedError(f"{exc}; gave up after {opts.max_attempts} rounds (the tree holds every "
                                     "merge so far: sync again)") from exc


def _merge_remote(
    report: SyncReport, tree: str | os.PathLike[str], blocks: Gateways, key: KeySpec | None, options: SyncOptions
) -> None:
    """Steps 1-2: the name's newest record and its bundle merged into the tree (nothing when there is none)."""
    store = _store(blocks)
    try:
        resolution = resolve(report.name, gateways=blocks.gateways, store=store, http=options.load.http,
                             routing=options.routing)
    except LoadError as exc:
        if report.role == "follower":
            raise
        report.notes.append(f"no record for {report.name} yet ({exc}); publishing the first")
        report.remote, report.remote_sequence, report.merge = None, None, None
        return
    report.notes.extend(resolution.notes)
    report.remote = cid_to_str(resolution.cid)
    report.remote_sequence = resolution.record.sequence
    report.merge = None
    if is_empty_tree(tree):  # nothing of ours to merge with: the bundle is loaded, streamed, not merged
        report.loaded = load_into_empty(f"ipfs://{report.remote}", tree, source=blocks, key=key,
                                        options=_load_options(tree, store, options.load),
                                        allow_secrets=options.merge.allow_secrets)
        if report.loaded is not None:
            report.notes.extend(report.loaded.notes)
            return
    if report.remote in heads(tree) and (key is None or report.role == "follower"):
        # The tree descends from the name's root (it published or merged it): merging it changes nothing, so
        # nothing is loaded (a follower polling a name that did not move reads one record, not the bundle);
        # a writer's tree changed since is judged on the build (``_publish``).
        report.notes.append(f"the tree already descends from {report.remote}: nothing to merge")
        return
    report.merge = merge_bundle(f"ipfs://{report.remote}", tree, blocks=blocks, key=key,
                                load=_load_options(tree, store, options.load),
                                options=replace(options.merge, dry_run=False, trusted=True,
                                                judge_converged=report.role == "writer"))
    report.conflicts += len(report.merge.report.conflicts)


def _load_options(tree: str | os.PathLike[str], store: BlockStore, load: LoadOptions) -> LoadOptions:
    """Block by block (only what the store lacks crosses the network) once the store holds a root the tree
    descends from, so most of the name's new bundle is there already; else ``load`` as given (a first sync:
    one CAR, its blocks kept in the store for the next)."""
    if any(store.has(cid_from_text(h)) for h in heads(tree)):
        return replace(load, prefer_car=False)
    return load


def _store(blocks: Gateways) -> BlockStore:
    assert blocks.store is not None  # sync always gives one
    return blocks.store


def _publish(
    report: SyncReport, tree: str | os.PathLike[str], signer: Ed25519Signer, pinners: Sequence[Pinner], *,
    key: KeySpec | None, sign: Signer | ExternalSignature | None, blocks: Gateways, options: SyncOptions,
) -> None:
    """Step 3: build, pin, publish (``NameMovedError`` when another writer published first)."""
    if report.merge is not None and report.merge.converged and report.remote is not None:
        report.up_to_date = True
        report.root = report.remote
        set_lineage(tree, [report.remote], cid_from_text(report.remote))
        return
    last = read_last(tree)
    parents = [p for p in (report.remote, last) if p is not None]
    del report.warnings[:]  # this round's build alone: a round lost to another writer built before it
    with tempfile.TemporaryDirectory(prefix="bundlekit-sync-") as workdir:
        # a thin CAR when every pinner tells which blocks it holds (the local store): only what they lack
        # until it is published, the tree's last root stays, none included: a root built, then never pinned or
        # published (a refused pin, a stop, the name's own files) is no root the tree's next bundle may name
        memory = Memory(tree, on_warning=report.warnings.append)  # each file the build leaves out, named
        try:
            built = build_tree(memory, Path(workdir) / "bundle.car", parents=parents, key=key, sign=sign,
                               leave_out=held_by_all(pinners), keep_last=True)
            if report.warnings and parents:
                _refuse_deleting_left_out(memory, report.name, parents, blocks, options.load,
                                          encrypted=key is not None)
        finally:
            memory.close()
        if (report.merge is None and report.remote is not None
                and same_files(built, report.remote, blocks=blocks, load=options.load)):
            report.up_to_date = True
            report.root = report.remote
            if last is None:  # a first follow's tree: the name's root, published, becomes its last
                record_last(tree, cid_from_text(report.remote))
            return
        report.root = built.root_cid
        report.pins = pin_all(built.car, built.root, pinners, require=options.require,
                              name=f"sync-{report.name[-10:]}")
    if not report.pins.ok:
        raise publishing.require_not_met(report.pins, options.require, reasons=True, then="; the name was not moved")
    follows = report.remote_sequence if report.remote_sequence is not None else -1
    targets = PublishTargets(routing=options.routing, routers=options.routers, gateways=blocks.gateways)
    report.published = publish(signer, built.root, store=_store(blocks), targets=targets,
                               http=options.load.http, follows=follows)
    set_lineage(tree, [built.root_cid], built.root)


def _refuse_deleting_left_out(
    memory: Memory, name: str, parents: Sequence[str], blocks: Gateways, load: LoadOptions, *, encrypted: bool
) -> None:
    """Refuse the round (nothing pinned or published) when its build left out a memory file (broken: it does not
    parse, is over the size bound or cannot be read) that a bundle of the round's ``parents`` holds (the name's
    root, the tree's last root: read from the local store, else through the round's gateways): a sync's lineage
    is proven, so a bundle without it deletes it on every follower. One no parent holds is only left out (the
    warning). An encrypted bundle's names are not compared, and a parent that cannot be read holds what it may:
    then any memory left out refuses."""
    broken = memory.broken()
    if not broken:
        return
    names: set[str] = set()
    for parent in dict.fromkeys(parents) if not encrypted else ():  # the name's root is often the tree's last
        try:
            names |= memory_names(parent, blocks=blocks, load=load)
        except BundlekitError as exc:
            key, problem = next(iter(broken.items()))
            raise FrontmatterError(
                f"{problem}; whether {name}'s last bundle holds {key} cannot be read ({exc}), and publishing the tree "
                f"without it could delete it on every follower: {remedy(key, problem)}, or give the round a "
                "--gateway that serves the name's bundles; nothing was pinned or published") from exc
    held = None if encrypted else names
    for key, problem in broken.items():
        if held is None or f"{key}.md" in held:
            raise FrontmatterError(
                f"{problem}; {name}'s bundle holds {key}, and publishing the tree without it would delete it "
                f"on every follower: {remedy(key, problem)}; nothing was pinned or published"
            )


def sync_forever(
    run: Callable[[], SyncReport],
    interval: float,
    *,
    on_report: Callable[[SyncReport], None],
    on_error: Callable[[BundlekitError], None],
    sleep: Callable[[float], None] = time.sleep,
    rounds: int | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Call ``run`` every ``interval`` seconds until stopped (Ctrl-C, SIGTERM, SIGHUP: the interrupt propagates
    from the sleep or the round, whose cleanups run; or ``stop`` set, which also ends the sleep at once).
    A round's ``BundlekitError`` goes to ``on_error`` and the next round comes all the same (a gateway down
    for a minute must not end a long-running agent's sync), except a usage error or a missing setting
    (exit 2), which ends the loop. ``rounds`` bounds the loop (tests)."""
    if interval <= 0:
        raise UsageError("--interval must be a positive number of seconds")
    if stop is not None:
        halt = stop

        def sleep(seconds: float) -> None:
            halt.wait(seconds)

    done = 0
    while (rounds is None or done < rounds) and not (stop is not None and stop.is_set()):
        try:
            on_report(run())
        except BundlekitError as exc:
            if exc.exit_code == UsageError.exit_code:
                raise  # a usage mistake or a missing setting does not mend itself by waiting
            on_error(exc)
        done += 1
        if rounds is None or done < rounds:
            sleep(interval)


class BackgroundSync:
    """``sync_forever`` on a thread beside a server (``bundlekit mcp --sync-name-key``): started on entry,
    stopped on exit (the sleep ends at once; a round in progress finishes, so its temporary CAR is removed)."""

    def __init__(self, run: Callable[[], SyncReport], interval: float, *,
                 on_report: Callable[[SyncReport], None], on_error: Callable[[BundlekitError], None]) -> None:
        if interval <= 0:
            raise UsageError("the sync interval must be a positive number of seconds")
        self.stop = threading.Event()
        self._run, self._interval, self._on_report, self._on_error = run, interval, on_report, on_error
        self._thread = threading.Thread(target=self._loop, name="bundlekit-sync", daemon=True)

    def _loop(self) -> None:
        """The rounds; an error that ends them (exit 2, or a defect) is reported, never a thread's traceback."""
        try:
            sync_forever(self._run, self._interval, on_report=self._on_report, on_error=self._on_error,
                         stop=self.stop)
        except BundlekitError as exc:
            self._on_error(BundlekitError(f"{exc}; background sync stopped"))
        except Exception as exc:  # noqa: BLE001 - a defect must not print a raw traceback beside a server
            self._on_error(BundlekitError(f"background sync stopped by an internal error ({type(exc).__name__})"))

    def __enter__(self) -> BackgroundSync:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self._thread.join()
