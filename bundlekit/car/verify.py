"""Checking a CAR file end to end: every block re-hashed, each root's DAG complete."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from bundlekit.car.index import CarIndex
from bundlekit.errors import (
    BundlekitError,
    CARError,
    CodecError,
    VerificationError,
)
from bundlekit.ipld.block import MAX_BLOCK_SIZE, block_codec
from bundlekit.ipld.cid import RAW
from bundlekit.ipld.walk import MAX_DEPTH, MAX_LINKS, walk_dag

__all__ = ["VerifyReport", "verify_car"]


@dataclass
class VerifyReport:
    """What ``verify_car`` found: roots, counts, and the first problem (``None`` when all is well)."""

    path: str
    roots: list[bytes] = field(default_factory=list)
    blocks: int = 0  # sections read (a repeated block counts each time)
    unique_blocks: int = 0
    bytes: int = 0  # block data bytes read
    reachable: int = 0  # distinct blocks reachable from the roots
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
) -> VerifyReport:
    """Verify a CAR file: every block hashes to its CID and each root's DAG is complete.

    One streaming pass re-hashes every block and indexes offsets; then
    ``walk_dag`` walks each root over that index, reading dag-pb blocks back
    from the same open file without hashing them a second time (raw blocks
    have no links: their presence in the index is all completeness needs). A CAR without roots fails: there is nothing to
    check completeness against. Never raises ``BundlekitError``; the first
    problem (``CARError``, ``VerificationError``, ``CodecError``) is returned
    in the report.
    """

    report = VerifyReport(path=os.fspath(path))
    try:
        with CarIndex(path, verify=True, max_block_size=max_block_size) as index:
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
    except (CARError, VerificationError, CodecError) as exc:
        report.problem = exc
    return report
