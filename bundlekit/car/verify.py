"""Checking a CAR file end to end: every block re-hashed, each root's DAG complete."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from bundlekit.car.index import CarIndex
from bundlekit.errors import (
    BundlekitError,
    CARError,
    CodecError,
    DAGLimitExceeded,
    UnsafePathError,
    VerificationError,
)
from bundlekit.ipld.block import MAX_BLOCK_SIZE, block_codec
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str
from bundlekit.ipld.walk import MAX_DEPTH, MAX_LINKS, GetBlock, WalkBudget, WalkLimits, expand_dag, walk_dag
from bundlekit.unixfs.reader import UnixFSReader

__all__ = ["RootExpansion", "VerifyReport", "verify_car"]


@dataclass(frozen=True)
class RootExpansion:
    """What one root claims to expand to (``verify_car(strict=True)``): ``blocks`` distinct,
    ``visits`` with every reuse followed; for a UnixFS root also ``entries`` and ``bytes``
    (``None`` otherwise)."""

    root: bytes
    blocks: int
    visits: int
    entries: int | None
    bytes: int | None

    @property
    def reuses(self) -> bool:
        return self.visits > self.blocks


@dataclass
class VerifyReport:
    """What ``verify_car`` found: roots, counts, and the first problem (``None`` when all is well)."""

    path: str
    roots: list[bytes] = field(default_factory=list)
    blocks: int = 0  # sections read (a repeated block counts each time)
    unique_blocks: int = 0
    bytes: int = 0  # block data bytes read
    reachable: int = 0  # distinct blocks reachable from the roots
    expansions: list[RootExpansion] = field(default_factory=list)  # strict only
    problem: BundlekitError | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def verify_car(
    path: str | os.PathLike[str],
    *,
    max_depth: int = MAX_DEPTH,
    max_links: int = MAX_LINKS,
    max_block_size: int = MAX_BLOCK_SIZE,
    strict: bool = False,
    limits: WalkLimits | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> VerifyReport:
    """Verify a CAR file: every block hashes to its CID and each root's DAG is complete.

    One streaming pass re-hashes every block and indexes offsets; then
    ``walk_dag`` walks each root over that index, reading dag-pb blocks back
    from the same open file without hashing them a second time (raw blocks
    have no links: their presence in the index is all completeness needs). A CAR without roots fails: there is nothing to
    check completeness against. Never raises ``BundlekitError``; the first
    problem (``CARError``, ``VerificationError``, ``CodecError``; with
    ``strict`` also ``UnsafePathError`` for a hostile link name) is returned
    in the report.

    With ``strict``, each root's claimed expansion is measured too
    (``expand_dag``; for UnixFS roots ``UnixFSReader.claim``, which also
    refuses a HAMT that links one shard twice) and reported in
    ``expansions``; a root that reuses blocks and claims more visits,
    entries or bytes than ``limits`` (default ``WalkLimits()``) is the
    problem (``DAGLimitExceeded``). Nothing is expanded to measure it. ``progress(bytes, file_size)``
    follows the hashing pass, the bulk of the work.
    """

    report = VerifyReport(path=os.fspath(path))
    try:
        with CarIndex(path, verify=True, max_block_size=max_block_size, progress=progress) as index:
            report.roots = list(index.roots)
            report.blocks = index.sections
            report.unique_blocks = len(index)
            report.bytes = index.bytes
            if not index.roots:
                raise CARError(f"CAR {report.path} lists no roots; there is no DAG to check for completeness")

            def structure(cid: bytes) -> bytes:
                # raw leaves have no links: being indexed is all completeness needs.
                if block_codec(cid) == RAW and cid in index:
                    return b""
                return index.read(cid)

            reached: set[bytes] = set()
            for root in index.roots:
                for cid, _data in walk_dag(
                    root, structure, max_depth=max_depth, max_links=max_links, verify=False
                ):
                    reached.add(cid)
            report.reachable = len(reached)
            if strict:
                for root in index.roots:
                    report.expansions.append(_expansion(root, structure, index.get, max_depth, max_links))
                for expansion in report.expansions:
                    _check_expansion(expansion, limits if limits is not None else WalkLimits())
    except (CARError, VerificationError, CodecError, UnsafePathError) as exc:
        report.problem = exc
    return report


def _expansion(
    root: bytes, structure: GetBlock, get: GetBlock, max_depth: int, max_links: int
) -> RootExpansion:
    dag = expand_dag(root, walk_dag(root, structure, max_depth=max_depth, max_links=max_links, verify=False))
    entries = size = None
    if block_codec(root) == DAG_PB and _is_unixfs(get, root):
        # Measuring reads each distinct block once whatever the claim; only the limits on depth apply.
        limits = WalkLimits(max_depth=max_depth, max_visits=max_links, max_entries=2**63, max_bytes=None)
        claim = UnixFSReader(get, verify=False, budget=WalkBudget(limits, what=cid_to_str(root))).claim(root)
        entries, size = claim.entries, claim.bytes
    return RootExpansion(root, dag.blocks, dag.visits, entries, size)


def _is_unixfs(get: GetBlock, root: bytes) -> bool:
    try:
        UnixFSReader(get, verify=False).stat(root)
    except (CodecError, VerificationError):
        return False
    return True


def _check_expansion(found: RootExpansion, limits: WalkLimits) -> None:
    if not found.reuses:
        return
    claims = [f"{found.visits} block visits"]
    plural = {True: "entry", False: "entries"}
    over = found.visits > limits.max_visits
    if found.entries is not None and found.bytes is not None:
        claims += [f"{found.entries} {plural[found.entries == 1]}", f"{found.bytes} bytes"]
        over = over or found.entries > limits.max_entries
        over = over or (limits.max_bytes is not None and found.bytes > limits.max_bytes)
    if over:
        raise DAGLimitExceeded(
            f"root {cid_to_str(found.root)} reuses blocks: {found.blocks} distinct blocks claim "
            f"{', '.join(claims)}, past the limits (visits {limits.max_visits}, entries "
            f"{limits.max_entries}, bytes {limits.max_bytes}); ls, unpack, load and the gateway refuse it"
        )
