"""Walking DAGs with limits, and checking a CAR file end to end.

``walk_dag`` is iterative (an explicit stack, never recursion), so a hostile
DAG cannot exhaust Python's recursion limit; it visits each block once, so
shared subtrees (or a "diamond" DAG built to explode) cost one visit each; it
stops at ``max_depth`` and ``max_links`` and on a cycle with
``DAGLimitExceeded``. Every block is verified against its CID before its links
are followed. dag-pb blocks are decoded to find links; raw blocks are leaves.

``verify_car`` is what ``bundlekit verify`` runs: every block of the file
re-hashed, then the DAG under each root checked complete. It returns a
``VerifyReport`` holding the first problem instead of raising, so callers can
print the counts alongside it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .cid import DAG_PB, RAW, cid_to_str, parse_cid_bytes, verify_block
from .dagpb import decode_node
from .errors import (
    BundlekitError,
    CARError,
    CIDError,
    CodecError,
    DAGLimitExceeded,
    MissingBlock,
    UnsupportedBlock,
    VerificationError,
)

__all__ = [
    "MAX_BLOCK_SIZE",
    "MAX_DEPTH",
    "MAX_LINKS",
    "check_block",
    "block_codec",
    "walk_dag",
    "block_links",
    "VerifyReport",
    "verify_car",
]

MAX_BLOCK_SIZE = 2 * 1024 * 1024
MAX_DEPTH = 1024
MAX_LINKS = 10_000_000


def block_codec(cid: bytes) -> int:
    """The codec of a binary CID (dag-pb for CIDv0); ``UnsupportedBlock`` if it cannot be parsed."""
    try:
        return parse_cid_bytes(cid).codec
    except CIDError as exc:
        raise UnsupportedBlock(f"cannot parse CID {cid.hex()}: {exc}") from exc


def check_block(cid: bytes, data: bytes, max_size: int | None = MAX_BLOCK_SIZE) -> None:
    """``cid.verify_block`` with the size limit defaulting to ``MAX_BLOCK_SIZE`` (same errors)."""
    verify_block(cid, data, max_size=max_size)


GetBlock = Callable[[bytes], bytes]


def block_links(cid: bytes, data: bytes) -> list[tuple[bytes, bytes]]:
    """The ``(child_cid, name)`` links of a block: decoded dag-pb links, none for raw.

    Raises ``UnsupportedBlock`` for other codecs, ``CodecError`` (naming the
    block) for malformed dag-pb.
    """
    codec = block_codec(cid)
    if codec == RAW:
        return []
    if codec != DAG_PB:
        raise UnsupportedBlock(f"block {cid_to_str(cid)} uses codec 0x{codec:x}; only dag-pb and raw are walked")
    try:
        links, _data = decode_node(data)
    except CodecError as exc:
        raise CodecError(f"block {cid_to_str(cid)} is not valid dag-pb: {exc}") from exc
    return [(link.cid, link.name) for link in links]


class _Frame:
    __slots__ = ("cid", "name", "links", "next")

    def __init__(self, cid: bytes, name: bytes, links: list[tuple[bytes, bytes]]) -> None:
        self.cid = cid
        self.name = name
        self.links = links
        self.next = 0


def _path(stack: list[_Frame], last: bytes | None = None) -> str:
    names = [f.name for f in stack[1:]]
    if last is not None:
        names.append(last)
    return "/".join(n.decode("utf-8", "replace") for n in names)


def walk_dag(
    root: bytes,
    get_block: GetBlock,
    *,
    max_depth: int = MAX_DEPTH,
    max_links: int = MAX_LINKS,
    verify: bool = True,
    max_block_size: int | None = MAX_BLOCK_SIZE,
) -> Iterator[tuple[bytes, bytes]]:
    """Yield ``(cid, data)`` for every distinct block reachable from ``root``, parents first.

    Depth-first, links in stored order, each block once. With ``verify`` (the
    default; turn it off only for a getter that already verifies) each block is
    checked against its CID before its links are followed.

    Raises ``MissingBlock`` naming the CID and the link path to it,
    ``BlockMismatch`` / ``UnsupportedBlock`` for a bad block, ``CodecError`` for
    malformed dag-pb, and ``DAGLimitExceeded`` when the DAG is deeper than
    ``max_depth`` links, has more than ``max_links`` links in all, or links
    back to one of its own ancestors (a cycle: impossible with honest hashes,
    so only reachable through a getter that does not verify).
    """
    seen: set[bytes] = set()
    on_path: set[bytes] = set()
    stack: list[_Frame] = []
    links_seen = 0

    def enter(cid: bytes, name: bytes) -> bytes:
        try:
            data = get_block(cid)
        except MissingBlock as exc:
            where = _path(stack, name) if stack else ""
            at = f" at path {where!r}" if where else ""
            raise MissingBlock(
                f"block {cid_to_str(cid)}{at} under root {cid_to_str(root)} is missing; "
                "the DAG is incomplete, fetch the missing blocks or a complete CAR"
            ) from exc
        if verify:
            check_block(cid, data, max_block_size)
        seen.add(cid)
        on_path.add(cid)
        stack.append(_Frame(cid, name, block_links(cid, data)))
        return data

    yield root, enter(root, b"")
    while stack:
        frame = stack[-1]
        if frame.next >= len(frame.links):
            stack.pop()
            on_path.discard(frame.cid)
            continue
        child, name = frame.links[frame.next]
        frame.next += 1
        links_seen += 1
        if links_seen > max_links:
            raise DAGLimitExceeded(
                f"DAG under {cid_to_str(root)} has more than {max_links} links; refusing to walk further "
                "(raise max_links only for DAGs you trust)"
            )
        if child in on_path:
            raise DAGLimitExceeded(
                f"DAG under {cid_to_str(root)} has a cycle: {_path(stack, name)!r} links back to "
                f"{cid_to_str(child)}; the blocks are corrupt"
            )
        if child in seen:
            continue
        if len(stack) > max_depth:
            raise DAGLimitExceeded(
                f"DAG under {cid_to_str(root)} is deeper than {max_depth} levels at {cid_to_str(child)}; "
                "refusing to walk further (raise max_depth only for DAGs you trust)"
            )
        yield child, enter(child, name)


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
    from .car import CarIndex  # car.py imports this module's checks

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
