"""``bundlekit merge``: a bundle merged into a memory tree over their nearest common ancestor.

Steps (``specs/sync.md``, "Merge"):

1. Load the bundle (``load_bundle``: any URI it takes, verified, decrypted with a key,
   ``publishers`` enforced): *theirs*.
2. The base (:func:`find_base`): walk back from the tree's heads (``bundle.lineage``:
   the roots it was loaded, forked, merged or synced from) and from the bundle's root
   through each manifest's ``parents``, level by level on both sides at once, every
   manifest read from verified blocks, at most ``max_manifests`` of them; the first root
   both walks reach is the base (the one nearest to both; then the smallest CID text).
   None found (no lineage, a parent no source supplies, the bound): an empty base, so
   every key both sides hold differently is a conflict (nothing is lost). The base
   bundle is then loaded and verified like theirs; one no source supplies refuses the
   merge (``LoadError`` saying how to give it), except in a ``trusted`` merge (``sync``),
   which goes on without it. The base is *proven* when the merge is ``trusted`` or the
   bundle is signed by a required publisher; over an unproven one (a bare ``parents``
   claim) a memory theirs merely lacks is kept (``memory.merge``).
3. Under the tree's lock: read ours, :func:`memory.merge.merge_trees`, write the changes
   (``Transaction.apply`` inside ``memory.transaction()``: all or nothing) and the new lineage: parents = the bundle's
   root, the tree's last root and every other head of ours the bundle does not descend
   from (the next build names both sides, so ``bundlekit log`` shows the merge). A CAR's
   blocks are kept in the local block store (unpinned: a cache ``store gc`` may drop), so
   the next merge can find this bundle as an ancestor. ``dry_run`` stops before the writes.
   Before any write, a merge deleting all of the tree's memories or more than
   ``MAX_DELETE_SHARE`` of them is refused (``ConflictError``) unless ``allow_deletes`` or
   ``trusted``; a dry run warns instead.

The load and build calls of merge and sync are here and only here (``_load``,
:func:`read_manifest`, ``_Ancestry``, :func:`build_tree`), so a change of the loader's or builder's
options meets them in one place.
"""

from __future__ import annotations

import os
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from bundlekit._lazy import lazy_module
from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.bundle.lineage import heads, read_last, set_lineage
from bundlekit.bundle.manifest import MAX_PARENTS, MEMORY_DIR, is_listed
from bundlekit.bundle.loadoptions import LoadOptions
from bundlekit.bundle.sources import BlockSource, CarFile, Gateways
from bundlekit.car.index import CarIndex
from bundlekit.errors import BundlekitError, ConflictError, LoadError, MissingBlock, UsageError
from bundlekit.memory import Memory
from bundlekit.memory.device import is_device_bound
from bundlekit.memory.record import MemoryRecord
from bundlekit.ipld.cid import cid_from_text, cid_to_str
from bundlekit.unixfs.reader import UnixFSReader

if TYPE_CHECKING:
    from bundlekit.bundle import load as loader
    from bundlekit.bundle import treemerge
    from bundlekit.bundle.load import BundleBlocks, LoadResult
    from bundlekit.bundle.signature import ExternalSignature
    from bundlekit.bundle.treemerge import Difference
    from bundlekit.crypto._keys import KeySpec
    from bundlekit.crypto.signing import Signer
    from bundlekit.memory import merge as tree_merge
    from bundlekit.memory.merge import MergeOutcome, MergeReport, TreeState
else:  # imported at the first merge or load (DEVELOPERS.md, "Lazy imports": a writer's uncontested round does neither)
    treemerge, tree_merge = lazy_module("bundlekit.bundle.treemerge"), lazy_module("bundlekit.memory.merge")
    loader = lazy_module("bundlekit.bundle.load")

__all__ = ["DEFAULT_MAX_MANIFESTS", "LOCAL_LABEL", "MAX_ANCESTRY_BYTES", "MAX_ANCESTRY_SECONDS", "MAX_DELETE_SHARE",
           "AncestryBoundReached", "BaseSearch", "MergeOptions", "MergeResult", "build_tree", "find_base",
           "car_source", "keep_car_blocks", "memory_names", "merge", "merge_bundle", "read_manifest", "same_files"]

#: At most this many manifests are read looking for the common ancestor (both sides together).
DEFAULT_MAX_MANIFESTS: Final = 256
#: And at most about this many bytes of them (the next manifest is read while fewer were): a manifest may be
#: 64 MiB, so a hostile lineage of 256 would cost 16 GiB; a 10,000-memory tree's is 1.1 MB.
MAX_ANCESTRY_BYTES: Final = 256 * 1024 * 1024
#: And for at most this many seconds in all (one load's deadline; each read had its own, 256 of them).
MAX_ANCESTRY_SECONDS: Final = 600.0
#: A merge that is not ``trusted`` deletes at most this share of the tree's memories (and never all of them)
#: without ``allow_deletes``, as rsync's and rclone's ``--max-delete`` bound a sync.
MAX_DELETE_SHARE: Final = 0.25
#: Blocks (or bytes) of a merged or forked CAR written to the store at once (as ``BlockStore.import_car`` batches).
_KEEP_BATCH: Final = 256
_KEEP_BATCH_BYTES: Final = 8 * 1024 * 1024
#: What the working tree is called in a report and in a conflict sibling that came from it.
LOCAL_LABEL: Final = "local"


class AncestryBoundReached(Exception):  # a signal, not an error: outside the error tree
    """``parents_of`` read its bound of manifest bytes: :func:`find_base` stops looking (a note, not an error).

    Control flow between ``_Ancestry.parents`` and :func:`find_base`, which always catches it.
    """


@dataclass(frozen=True)
class MergeOptions:
    """How a merge decides and what it may do: the conflict policy (``memory.merge.CONFLICT_POLICIES``),
    ``dry_run`` (report, write nothing), the bound on manifests read looking for the common ancestor, and
    ``allow_secrets`` (the tree's secret guard, as ``Memory.write`` takes it), ``allow_deletes`` (past the
    ``MAX_DELETE_SHARE`` bound) and ``trusted`` (the bundle's root came from a verified record of the tree's own
    name: its lineage is proven and its deletions unbounded; ``sync`` sets it). Where the blocks come from is
    the caller's ``BlockSource``; the load's limits, publishers and HTTP options its ``LoadOptions``."""

    on_conflict: str = "both"
    dry_run: bool = False
    max_manifests: int = DEFAULT_MAX_MANIFESTS
    allow_secrets: bool = False
    allow_deletes: bool = False
    trusted: bool = False
    #: Judge ``converged`` (a writer skips publishing on it). False (a follower's sync, which publishes nothing): a
    #: merge by difference leaves it None, since judging it lists the base's whole ``memory/`` directory.
    judge_converged: bool = True


@dataclass
class BaseSearch:
    """The common ancestor found (CID text or None), the roots each side reaches (with their distance) and notes."""

    base: str | None
    ours: dict[str, int] = field(default_factory=dict)
    theirs: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class MergeResult:
    """A merge: the report, the bundle merged (``root``), the base, whether the tree was written, notes."""

    report: MergeReport
    root: str | None
    base: str | None
    written: bool
    changed_files: int
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    publisher: str | None = None
    #: The tree now holds exactly the bundle's memories and days; None when not judged (``judge_converged``).
    converged: bool | None = False

    def to_dict(self) -> dict[str, Any]:
        out = self.report.to_dict()
        out.update({"root": self.root, "base": self.base, "written": self.written,
                    "changed_files": self.changed_files, "notes": list(self.notes),
                    "warnings": list(self.warnings), "publisher": self.publisher, "converged": self.converged})
        return out


def find_base(
    ours: Iterable[str],
    theirs: str,
    *,
    parents_of: Callable[[str], list[str]],
    max_manifests: int = DEFAULT_MAX_MANIFESTS,
) -> BaseSearch:
    """The nearest common ancestor of the roots ``ours`` and the root ``theirs`` (see the module, step 2).

    ``parents_of(root)`` reads a manifest's ``parents`` (raising ``BundlekitError`` when no source has it:
    that line of ancestry ends there, noted; ``AncestryBoundReached``: the whole search ends there, noted).
    Deterministic: the same lineage gives the same base.
    """
    if max_manifests < 0:
        raise UsageError("the manifest bound must be 0 or more")
    search = BaseSearch(None, {r: 0 for r in ours}, {theirs: 0})
    frontiers = [sorted(search.ours), [theirs]]
    budget = [max_manifests]

    def expand(frontier: list[str], reached: dict[str, int]) -> list[str]:
        nxt: set[str] = set()
        for root in frontier:
            if budget[0] <= 0:
                if budget[0] == 0:
                    search.notes.append(f"stopped looking for a common ancestor after {max_manifests} manifests")
                return []
            budget[0] -= 1
            try:
                found = parents_of(root)
            except AncestryBoundReached as exc:
                search.notes.append(str(exc))
                budget[0] = -1  # no other manifest is read, and the count's note is not added
                return []
            except BundlekitError as exc:
                search.notes.append(f"the ancestry stops at {root}: {exc}")
                continue
            for parent in found:
                if parent not in reached:
                    reached[parent] = reached[root] + 1
                    nxt.add(parent)
        return sorted(nxt)

    while True:
        common = set(search.ours) & set(search.theirs)
        if common:
            search.base = min(common, key=lambda r: (max(search.ours[r], search.theirs[r]),
                                                     search.ours[r] + search.theirs[r], r))
            return search
        if not search.ours or (not frontiers[0] and not frontiers[1]):
            return search  # no heads of ours (nothing can be common), or both walks ended
        frontiers = [expand(frontiers[0], search.ours), expand(frontiers[1], search.theirs)]


def merge_bundle(
    source: str,
    into: str | os.PathLike[str],
    *,
    blocks: BlockSource | None = None,
    key: KeySpec | None = None,
    load: LoadOptions | None = None,
    options: MergeOptions | None = None,
    loaded: LoadResult | None = None,
) -> MergeResult:
    """Merge the bundle at ``source`` into the memory tree ``into`` (module steps); returns the report.

    ``blocks`` is where the bundle's and its ancestors' blocks come from (None: the URI decides, as
    ``load_bundle``); ``load`` the loads' limits, HTTP options and required ``publishers`` (enforced on
    ``source`` only); ``options`` the merge's own (:class:`MergeOptions`). ``loaded`` is the bundle when the
    caller loaded it already (``sync``). Raises ``UsageError`` (no tree, an unknown policy), the loader's
    errors (nothing written; ``LoadError`` too for a common ancestor no source supplies), ``ConflictError``
    with ``on_conflict="fail"`` or past the delete bound, and the tree's ``MemoryStoreError``s (nothing
    written).
    """
    opts = options or MergeOptions()
    load = load or LoadOptions()
    tree = Path(into)
    if not tree.is_dir():
        raise UsageError(f"memory tree {str(tree)!r} is not a directory; create it with `bundlekit memory init`")
    if isinstance(blocks, Gateways):
        blocks.gateways  # noqa: B018 (a --gateway that is no URL is a usage error, whether or not a CAR needs it)
    if loaded is None:
        fast = _merge_by_difference(source, tree, blocks=blocks, load=load, opts=opts)
        if fast is not None:
            return fast
    car = car_source(source) if loaded is None else None
    theirs_load = loaded or _load(source, blocks=car or blocks, key=key, load=load)
    theirs = tree_merge.TreeState.from_files(theirs_load.source, theirs_load.files)
    root = theirs_load.root_cid
    notes = list(theirs_load.notes)
    search = BaseSearch(None)
    if root is not None:
        search = _find_base(tree, root, theirs_load.parents, blocks, load, opts)
        notes += search.notes
    proven = opts.trusted or bool(load.publishers)  # the load refused any bundle not signed by one of them
    _note_unproven(notes, proven, search, root, theirs.label)
    base = _base_state(search, root, theirs, blocks=blocks, key=key, load=load, trusted=opts.trusted,
                       notes=notes)
    memory = Memory(tree)
    try:
        with memory.transaction() as tx:
            ours = tree_merge.TreeState.from_transaction(LOCAL_LABEL, tx)
            outcome, files, days, warnings = _decide(base, ours, theirs, search, tree, opts, proven)
            warnings[:0] = theirs_load.warnings
            _write(tx, tree, (files, days), root, search, opts, car)
    finally:
        memory.close()
    written = not opts.dry_run and bool(files or days)
    return MergeResult(outcome.report, root, search.base, written, len(files) + len(days), notes,
                       warnings, theirs_load.publisher, _same(outcome, theirs))


def _find_base(tree: Path, root: str, parents: list[str], blocks: BlockSource | None, load: LoadOptions,
               opts: MergeOptions) -> BaseSearch:
    """Step 2: the nearest common ancestor of the tree's heads and ``root`` (whose ``parents`` are read already,
    maybe from a CAR no store holds)."""
    ancestry = _Ancestry(blocks, load)

    def parents_of(r: str) -> list[str]:
        return list(parents) if r == root else ancestry.parents(r)

    return find_base(heads(tree), root, max_manifests=opts.max_manifests, parents_of=parents_of)


def _note_unproven(notes: list[str], proven: bool, search: BaseSearch, root: str | None, label: str) -> None:
    if not proven and search.base is not None and search.base != root:
        notes.append(f"{label} names {search.base} as an ancestor, which no required --publisher vouches "
                     "for: a memory it merely lacks is kept; only a forget of that very version removes one")


def _decide(
    base: TreeState, ours: TreeState, theirs: TreeState, search: BaseSearch, tree: Path, opts: MergeOptions,
    proven: bool, held: Callable[[], int] | None = None,
) -> tuple[MergeOutcome, dict[str, str | None], dict[str, bytes | None], list[str]]:
    """Step 3 up to the writes: the merge, its changes to ours and its warnings (``ConflictError`` past the
    delete bound); ``held`` counts the tree's memories that cross machines when ``ours`` holds only some of them."""
    outcome = tree_merge.merge_trees(base, ours, theirs, on_conflict=opts.on_conflict, proven=proven)
    outcome.report.base = search.base
    files, days = outcome.changes(ours)
    warnings = [*outcome.report.warnings, *_check_deletions(ours, outcome, tree, opts, held)]
    return outcome, files, days, warnings


def _write(tx: Any, tree: Path, changes: tuple[dict[str, str | None], dict[str, bytes | None]], root: str | None,
           search: BaseSearch, opts: MergeOptions, car: CarFile | None,
           known: tuple[Mapping[str, MemoryRecord], Mapping[str, MemoryRecord]] = ({}, {})) -> None:
    """Step 3's writes (none in a dry run): the changes, all or nothing, then the lineage and a CAR's blocks.
    ``known`` are the merged records and ours' records as read under this lock (by key): what the write would
    otherwise parse again."""
    parents = _merged_parents(tree, root, search)
    if opts.dry_run:
        return
    tx.apply(*changes, allow_secrets=opts.allow_secrets,
             records={r.filename: r for r in known[0].values()}, read={r.filename: r for r in known[1].values()})
    if parents is not None:
        set_lineage(tree, parents)
        keep_car_blocks(car)


def _merge_by_difference(
    source: str, tree: Path, *, blocks: BlockSource | None, load: LoadOptions, opts: MergeOptions,
) -> MergeResult | None:
    """The merge of a ``bundlekit/2`` plaintext bundle whose common ancestor this machine's store (or a gateway)
    serves, by tree difference (``bundle.treemerge``): only the memories theirs changed since the base are read
    (blocks the store lacks fetched, and kept by a keeping source), parsed and decided; the rest of the tree is
    ours untouched. None when it does not apply (another URI or format, encrypted, no base): the whole loads."""
    if not source.startswith("ipfs://") or source.count("/") > 3 or not heads(tree):
        return None  # no head: no common ancestor to differ from (a first follow loads the whole bundle)
    fast = replace(load, prefer_car=False)  # no CAR of the whole bundle: only the blocks the difference needs
    with loader.bundle_blocks(source, source=blocks, options=fast, signed=True) as theirs:
        if is_listed(theirs.manifest) or theirs.manifest["encryption"] is not None:
            return None
        root = cid_to_str(theirs.root)
        search = _find_base(tree, root, [str(p) for p in theirs.manifest.get("parents", [])], blocks, load, opts)
        if search.base is None or search.base == root:
            return None
        try:
            with loader.bundle_blocks(f"ipfs://{search.base}", source=blocks, options=_unsigned(fast)) as found:
                base = (found.root, found.manifest)
        except (LoadError, MissingBlock):
            return None  # the whole merge says what is missing, and how to supply it
        if base[1]["encryption"] is not None:
            return None
        diff = treemerge.read_difference(theirs.get, base=base, theirs=(theirs.root, theirs.manifest),
                               labels=(f"ipfs://{search.base}", f"ipfs://{root}"), prefetch=theirs.prefetch)
        return _apply_difference(tree, diff, root, search, theirs, opts, proven=opts.trusted or bool(load.publishers))


def _apply_difference(tree: Path, diff: Difference, root: str, search: BaseSearch, theirs: BundleBlocks,
                      opts: MergeOptions, *, proven: bool) -> MergeResult:
    """Step 3 over the difference: ours read for the changed keys only (and the keys a sibling or a key equal
    but for case may meet), merged, written; ``converged`` judged on the rest by the derived index's digests."""
    notes = list(search.notes)
    _note_unproven(notes, proven, search, root, diff.theirs.label)
    memory = Memory(tree)
    try:
        with memory.transaction() as tx:
            everything = tx.names()
            read = _touched(everything, diff.names, tx.present)
            ours = tree_merge.TreeState(LOCAL_LABEL, {r.key: r for r in tx.records_of(read)}, tx.days())
            while True:
                outcome, files, days, warnings = _decide(diff.base_state(ours), ours, diff.theirs, search, tree, opts,
                                                         proven, held=lambda: _crossing(tx, everything))
                # A file the merge would write that ours holds but was not read (a sibling's key, from a losing
                # memory's digest or its conflict-of): read it and decide again, so it is merged, never overwritten.
                unread = set(tx.present(files)) - read
                if not unread:
                    break
                read |= unread
                ours = tree_merge.TreeState(LOCAL_LABEL, {**ours.records, **{r.key: r for r in tx.records_of(unread)}}, ours.days)
            converged = None if not opts.judge_converged else _converged(outcome, ours, diff) and treemerge.same_tree(
                theirs.get, diff.base_memory or b"", str(theirs.manifest["profile"]), digests=tx.digests(),
                changed=diff.names, read_ours=lambda name: _read_file(tree, name), names=everything)
            _write(tx, tree, (files, days), root, search, opts, None, known=(outcome.records, ours.records))
    finally:
        memory.close()
    written = not opts.dry_run and bool(files or days)
    return MergeResult(outcome.report, root, search.base, written, len(files) + len(days), notes, warnings,
                       theirs.publisher, converged)


def _crossing(tx: Any, names: list[str]) -> int:
    """How many of the tree's memories cross machines (device-bound ones never do), read from the files now:
    what the delete bound is a share of, never the derived index's say."""
    return sum(1 for record in tx.records_of(names) if not is_device_bound(record.meta))


def _touched(names: list[str], changed: set[str], present: Callable[[Iterable[str]], list[str]]) -> set[str]:
    """The memory files a merge of ``changed`` may meet in ours: those, their conflict siblings, and the files
    equal to one of them but for case (the merged tree must not hold two such keys). ``names``: ours' files,
    sorted (``Transaction.names``); ``present``: those of some names ours holds (``Transaction.present``).
    ASCII names (sorted bytewise, so as ``str`` compares them) are looked up by binary search, a few steps per
    changed file, not by a Python test of each of 100,000 names; any other listing is walked."""
    stems = {name[:-3] for name in changed}
    folded = {name.lower() for name in changed}
    if not all(map(str.isascii, names)):
        return set(changed) | {n for n in names if n.lower() in folded or n.split(_SIBLING)[0] in stems}
    marked = [stem for stem in stems if _SIBLING not in stem]  # a name without the mark is its own "stem"
    found = set(changed) | set(present(marked))
    for stem in marked:
        prefix = stem + _SIBLING
        at = bisect_left(names, prefix)
        while at < len(names) and names[at].startswith(prefix):
            found.add(names[at])
            at += 1
    for want in folded:
        found.update(_case_variants(names, want))
    return found


_SIBLING = ".conflict-"  # what a conflict sibling's key holds after the key it lost (``memory.merge.sibling_key``)


def _case_variants(names: list[str], folded: str) -> list[str]:
    """Those of ``names`` (ASCII, sorted) whose lower case is ``folded``: each letter's two cases followed
    down the sorted list while some name begins so (one live prefix in a tree without such look-alikes)."""
    if not folded.isascii():
        return []  # an ASCII name lowers to ASCII
    prefixes = [""]
    for char in folded:
        prefixes = [p + c for p in prefixes for c in dict.fromkeys((char, char.upper())) if _begins(names, p + c)]
    return [p for p in prefixes if _begins(names, p, whole=True)]


def _begins(names: list[str], prefix: str, *, whole: bool = False) -> bool:
    """Whether a name of ``names`` (sorted) begins with ``prefix`` (``whole``: is it)."""
    at = bisect_left(names, prefix)
    return at < len(names) and (names[at] == prefix if whole else names[at].startswith(prefix))


def _converged(outcome: MergeOutcome, ours: TreeState, diff: Difference) -> bool:
    """The merged memories and days are theirs' where theirs changed, and ours untouched elsewhere (the rest is
    ``treemerge.same_tree``'s to judge)."""
    for key, record in outcome.records.items():
        held = diff.theirs.records.get(key) if f"{key}.md" in diff.names else ours.records.get(key)
        if held is None or held.raw != record.raw:
            return False
    gone = {n[:-3] for n in diff.names if n[:-3] not in diff.theirs.records}
    return not (gone & set(outcome.records)) and outcome.days == dict(diff.theirs.days)


def _read_file(tree: Path, name: str) -> bytes | None:
    try:
        return (tree / name).read_bytes()
    except OSError:
        return None


def _base_state(
    search: BaseSearch, root: str | None, theirs: TreeState, *, blocks: BlockSource | None,
    key: KeySpec | None, load: LoadOptions, trusted: bool, notes: list[str],
) -> TreeState:
    """The common ancestor's tree (empty when none was found). One found that no source supplies is refused
    (``LoadError`` saying how to supply it): merged without it, every memory both sides hold would conflict.
    A trusted merge (``sync``) goes on without it, noted, as the name's rounds must."""
    if search.base is None:
        return tree_merge.TreeState.empty()
    if search.base == root:
        return theirs
    try:
        return _state(_load(f"ipfs://{search.base}", blocks=blocks, key=key, load=_unsigned(load)))
    except BundlekitError as exc:
        if not trusted and not isinstance(exc, (LoadError, MissingBlock)):
            raise  # the base is there but does not verify or open: that error, as for theirs
        if not trusted:
            raise LoadError(
                f"the common ancestor {search.base} of {theirs.label} and this tree cannot be loaded ({exc}); nothing "
                "was merged: give its blocks with `bundlekit store import <the bundle's CAR>` or a --gateway "
                "that serves it, then merge again") from exc
        notes.append(f"the common ancestor {search.base} cannot be loaded ({exc}); merged without it")
        search.base = None
        return tree_merge.TreeState.empty()


def _check_deletions(ours: TreeState, outcome: MergeOutcome, tree: Path, opts: MergeOptions,
                     held_in_tree: Callable[[], int] | None = None) -> list[str]:
    """Refuse (``ConflictError``, before anything is written) a merge deleting all of the tree's memories or more
    than ``MAX_DELETE_SHARE`` of them, unless ``allow_deletes`` or ``trusted``; a dry run is warned instead.
    Device-bound memories, which no merge touches, are not counted: three of them beside one memory that
    crosses must not let a bundle delete that one as "a quarter of the tree". ``held_in_tree`` counts them when
    ``ours`` holds only some of the tree's memories (a merge by difference: called only when one is deleted)."""
    gone = sorted(k for k in ours.records if k not in outcome.records)
    if not gone or opts.allow_deletes or opts.trusted:
        return []
    held = sum(1 for record in ours.records.values() if not is_device_bound(record.meta))
    if held_in_tree is not None:  # ours holds some of the tree's memories: count them all
        held = held_in_tree()
    if len(gone) < held and len(gone) <= held * MAX_DELETE_SHARE:
        return []
    message = (f"the merge would delete {len(gone)} of the {held} memories in {tree} (first: {gone[0]!r}); "
               f"more than {MAX_DELETE_SHARE:.0%} of a tree is deleted only with --allow-deletes")
    if opts.dry_run:
        return [message]
    raise ConflictError(f"{message}; nothing was written: read `bundlekit merge --dry-run` first")


def _same(outcome: MergeOutcome, theirs: TreeState) -> bool:
    """True when the merged tree holds exactly what ``theirs`` holds (device-bound memories, which never
    cross, aside): nothing of ours is missing from the bundle."""
    mine = {k: r.raw for k, r in outcome.records.items() if not is_device_bound(r.meta)}
    return mine == {k: r.raw for k, r in theirs.records.items()} and outcome.days == dict(theirs.days)


def _merged_parents(tree: Path, root: str | None, search: BaseSearch) -> list[str] | None:
    """The tree's parents after merging ``root``: it, the tree's last root and every other head ``root`` does
    not descend from (None: the lineage stays, ``root`` being an ancestor already). Checked before anything is
    written: a merge the lineage file could not record is refused whole (``UsageError``)."""
    if root is None or search.base == root:
        return None
    last = read_last(tree)
    parents = sorted({root, *(h for h in heads(tree) if h not in search.theirs or h == last)})
    if len(parents) > MAX_PARENTS:
        raise UsageError(f"the merge would give {tree} {len(parents)} parents; a manifest holds {MAX_PARENTS}: "
                         "build and publish the tree first, then merge")
    return parents


#: The public API's name (``bundlekit.merge``).
merge = merge_bundle


def car_source(source: str) -> CarFile | None:
    """The source of a CAR path that notes every block a load reads from it (:func:`keep_car_blocks` keeps
    those); None for anything else (a URI)."""
    if source.startswith(("ipfs://", "ipns://", "http://", "https://")) or not Path(source).is_file():
        return None
    return CarFile(Path(source), read=set())


def keep_car_blocks(car: CarFile | None) -> None:
    """The blocks a load read from a merged or forked CAR (``car.read``) into the local store (verified as they
    go in), for later ancestor walks and bases. Nothing else of the CAR: one padded with blocks its bundle never
    uses (gigabytes of them) must not fill the store. Nothing for another source, and nothing when the store
    cannot take them (a cache: the merge or fork is done either way)."""
    if car is None or not car.read:
        return
    with suppress(BundlekitError, OSError), CarIndex(car.path, verify=False) as index:
        store = BlockStore()
        batch: list[tuple[bytes, bytes]] = []
        size = 0
        for cid in sorted(car.read):
            batch.append((cid, index.get(cid)))
            size += len(batch[-1][1])
            if len(batch) >= _KEEP_BATCH or size >= _KEEP_BATCH_BYTES:
                store.put_many(batch)
                batch, size = [], 0
        if batch:
            store.put_many(batch)


def _state(loaded: LoadResult) -> TreeState:
    return tree_merge.TreeState.from_files(loaded.source, loaded.files)


def _load(uri: str, *, blocks: BlockSource | None, key: KeySpec | None, load: LoadOptions) -> LoadResult:
    """The one call of the loader: ``uri`` verified (``load.publishers`` enforced), nothing written."""
    return loader.load_bundle(uri, source=blocks, key=key, options=load)


def _unsigned(load: LoadOptions) -> LoadOptions:
    """``load`` without required publishers: an ancestor is found through verified ``parents``, and the
    publishers a merge requires are those of the bundle merged, not of every bundle before it."""
    return replace(load, publishers=())


def read_manifest(
    root: str, *, blocks: BlockSource | None = None, load: LoadOptions | None = None
) -> dict[str, Any]:
    """The manifest of the bundle ``root``, read from verified blocks (no memory file fetched)."""
    with loader.bundle_blocks(f"ipfs://{root}", source=blocks, options=_unsigned(load or LoadOptions())) as found:
        return found.manifest


class _Ancestry:
    """The ``parents`` of bundles, read from their verified manifests until ``MAX_ANCESTRY_BYTES`` were read
    or ``MAX_ANCESTRY_SECONDS`` passed (a parent may name any DAG: a slow or huge one costs the walk's time)."""

    def __init__(self, blocks: BlockSource | None, load: LoadOptions) -> None:
        self._blocks, self._load, self.read = blocks, _unsigned(load), 0
        self._ends = time.monotonic() + MAX_ANCESTRY_SECONDS

    def parents(self, root: str) -> list[str]:
        left = self._ends - time.monotonic()
        if self.read >= MAX_ANCESTRY_BYTES or left <= 0:
            raise AncestryBoundReached(f"stopped looking for a common ancestor after {self.read} bytes of manifests "
                                       f"and {MAX_ANCESTRY_SECONDS - left:.0f} seconds")
        options = replace(self._load, deadline=left)
        with loader.bundle_blocks(f"ipfs://{root}", source=self._blocks, options=options) as found:
            self.read += found.manifest_size
            return [str(p) for p in found.manifest.get("parents", [])]


def same_files(built: BundleResult, remote: str, *, blocks: BlockSource | None, load: LoadOptions) -> bool:
    """True when the bundle just built holds the very files of the bundle ``remote`` (the same ``memory/``
    directory CID: the same paths with the same CIDs, whatever either manifest's format; plaintext bundles only
    can agree, whose file CIDs depend on nothing but the bytes). One block when the local store holds the remote
    root (a writer's own last publish): its link to ``memory/``, read without opening any other source."""
    return built.memory_cid == _memory_dir(remote, blocks=blocks, load=load, names=False)[0]


def memory_names(remote: str, *, blocks: BlockSource | None, load: LoadOptions) -> set[str]:
    """The names in the bundle ``remote``'s ``memory/`` directory (``<key>.md``, ``MEMORY.md``, ``timeline``), read as
    :func:`same_files` reads its link: what a sync writer checks a memory file its build left out against."""
    return _memory_dir(remote, blocks=blocks, load=load, names=True)[1]


def _memory_dir(remote: str, *, blocks: BlockSource | None, load: LoadOptions,
                names: bool) -> tuple[bytes | None, set[str]]:
    """The bundle ``remote``'s ``memory/`` CID and (``names``) its entries' names: from the local store when it
    holds the root, else loaded (unsigned: only compared, never merged)."""
    root = cid_from_text(remote)
    if isinstance(blocks, Gateways) and blocks.store is not None and blocks.store.has(root):
        return _memory_listing(UnixFSReader(blocks.store.get), root, names)
    with loader.bundle_blocks(f"ipfs://{remote}", source=blocks, options=_unsigned(load)) as found:
        return _memory_listing(UnixFSReader(found.get, verify=False), found.root, names)


def _memory_listing(reader: UnixFSReader, root: bytes, names: bool) -> tuple[bytes | None, set[str]]:
    memory = dict(reader.list_dir(root)).get(MEMORY_DIR)
    if memory is None or not names:
        return memory, set()
    return memory, {name for name, _cid in reader.list_dir(memory, MEMORY_DIR)}


def build_tree(
    tree: str | os.PathLike[str] | Memory,
    car: str | os.PathLike[str],
    *,
    parents: Sequence[str],
    key: KeySpec | None = None,
    sign: Signer | ExternalSignature | None = None,
    profile: str | None = None,
    leave_out: Callable[[bytes], bool] | None = None,
    keep_last: bool = False,
) -> BundleResult:
    """The one call of the builder for sync: the tree into ``car`` with exactly these ``parents`` (a thin CAR
    without the blocks ``leave_out`` is true for: ``BuildOptions.leave_out``; ``keep_last``: the tree's last
    root left as it is, ``BuildOptions.keep_last``). ``car`` is sync's scratch file, read back in the round and
    removed with its temporary directory: not synced to the disk (``BuildOptions.scratch_car``). ``tree`` may be
    an open ``Memory``: its ``on_warning`` then hears each memory file left out (as ``build_bundle`` takes it)."""
    options = BuildOptions(parents=sorted(set(parents)), profile=profile, manifest_version=2,
                           leave_out=leave_out, keep_last=keep_last, scratch_car=True)
    return build_bundle(tree, car, key=key, sign=sign, options=options)
