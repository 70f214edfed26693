"""Walking a DAG with limits: iterative, every block verified before its links are followed.

IPFS DAGs may link one block many times, so a few kilobytes of blocks can
claim to expand to petabytes or billions of paths. Every walker therefore
spends a ``WalkBudget``: every *visit* of a block counts, a reused block each
time it is reached, and so does every entry, every byte of content and every
level of depth. The budget is checked while walking (never after collecting),
and its defaults (``WalkLimits``) are safe for untrusted DAGs; a caller raises
them for DAGs it trusts. ``expand_dag`` says, without expanding anything, how
many visits a DAG claims (specs/car.md, "Limits").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from bundlekit.errors import (
    CodecError,
    DAGLimitExceeded,
    MissingBlock,
    UnsupportedBlock,
)
from bundlekit.ipld.block import MAX_BLOCK_SIZE, block_codec, check_block
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str
from bundlekit.ipld.dagpb import decode_node

__all__ = [
    "CANCEL_POLL",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_ENTRIES",
    "MAX_LINKS",
    "MAX_VISITS",
    "Expansion",
    "GetBlock",
    "WalkBudget",
    "WalkCancelled",
    "WalkLimits",
    "block_links",
    "expand_dag",
    "walk_dag",
]

MAX_DEPTH = 1024
MAX_LINKS = 10_000_000
#: Block visits one walk may make, a reused block counted at every visit.
MAX_VISITS = 1_000_000
#: Entries (paths) one walk may list or extract.
MAX_ENTRIES = 1_000_000
#: Bytes of content one walk may produce (unpack, the loader): 64 GiB.
MAX_BYTES = 64 * 1024**3
#: Visits between two calls of a budget's ``cancelled`` check.
CANCEL_POLL = 256
GetBlock = Callable[[bytes], bytes]


class WalkCancelled(Exception):
    """Raised by a ``WalkBudget`` whose ``cancelled()`` said yes (the gateway's client left).

    Not a ``BundlekitError``: it only reaches a caller that passed ``cancelled``,
    and that caller stops its work on it.
    """


@dataclass(frozen=True)
class WalkLimits:
    """The ceilings of one walk; ``None`` for ``max_bytes`` means no byte ceiling.

    Defaults (specs/car.md, "Limits"): depth 1024, 1,000,000 block visits,
    1,000,000 entries, 64 GiB of content.
    """

    max_depth: int = MAX_DEPTH
    max_visits: int = MAX_VISITS
    max_entries: int = MAX_ENTRIES
    max_bytes: int | None = MAX_BYTES


class WalkBudget:
    """One walk's spending against ``limits``: ``DAGLimitExceeded`` the moment a ceiling is passed.

    Share one budget between the calls that make up one job (unpack's walk
    and every file it writes; a loader's manifest and files) so that the
    job, not each call, is bounded. ``what`` names the DAG in messages
    ("CAR x.car", a CID). ``cancelled``, when given, is polled every
    ``CANCEL_POLL`` visits; ``WalkCancelled`` when it returns True.
    """

    __slots__ = ("bytes", "cancelled", "entries", "limits", "visits", "what")

    def __init__(
        self,
        limits: WalkLimits | None = None,
        *,
        what: str = "the DAG",
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        self.limits = limits if limits is not None else WalkLimits()
        self.what = what
        self.cancelled = cancelled
        self.visits = 0
        self.entries = 0
        self.bytes = 0

    def visit(self, n: int = 1) -> None:
        """Count ``n`` block visits (a reused block: once per visit)."""
        self.visits += n
        if self.visits > self.limits.max_visits:
            raise DAGLimitExceeded(
                f"{self.what} needs more than {self.limits.max_visits} block visits (blocks linked many "
                "times count at each visit); refusing to walk further (raise --max-visits only for DAGs "
                "you trust)"
            )
        if self.cancelled is not None and self.visits % CANCEL_POLL == 0 and self.cancelled():
            raise WalkCancelled(f"walk of {self.what} cancelled")

    def entry(self, n: int = 1) -> None:
        """Count ``n`` entries (paths) listed or extracted."""
        self.entries += n
        if self.entries > self.limits.max_entries:
            raise DAGLimitExceeded(
                f"{self.what} has more than {self.limits.max_entries} entries; refusing to list further "
                "(raise --max-entries only for DAGs you trust)"
            )

    def spend(self, n: int) -> None:
        """Count ``n`` bytes of content produced."""
        self.bytes += n
        self.check_bytes(self.bytes)

    def check_bytes(self, total: int) -> None:
        """``DAGLimitExceeded`` when ``total`` bytes (spent or declared) pass ``max_bytes``."""
        limit = self.limits.max_bytes
        if limit is not None and total > limit:
            raise DAGLimitExceeded(
                f"{self.what} holds more than {limit} bytes of content (it claims {total}); refusing it "
                "(raise --max-bytes if you expect that much)"
            )

    def check_depth(self, depth: int) -> None:
        """``DAGLimitExceeded`` when ``depth`` levels pass ``max_depth``."""
        if depth > self.limits.max_depth:
            raise DAGLimitExceeded(
                f"{self.what} is deeper than {self.limits.max_depth} levels; refusing to walk further "
                "(raise max_depth only for DAGs you trust)"
            )


@dataclass(frozen=True)
class Expansion:
    """What a DAG claims to expand to: ``blocks`` distinct, ``visits`` when each link is followed.

    ``visits > blocks`` means the DAG reuses blocks; ``visits`` is exact (a
    Python int: 256**4 and beyond are fine), computed over distinct blocks only.
    """

    blocks: int
    visits: int

    @property
    def reuses(self) -> bool:
        return self.visits > self.blocks


def block_links(cid: bytes, data: bytes) -> list[tuple[bytes, bytes]]:
    """The ``(child_cid, name)`` links of a block: decoded dag-pb links, none for raw.

    Raises ``UnsupportedBlock`` for other codecs, ``CodecError`` (naming the
    block) for malformed dag-pb.
    """
    codec = block_codec(cid)
    if codec == RAW:
        return []
    if codec != DAG_PB:
        raise UnsupportedBlock(
            f"block {cid_to_str(cid)} uses codec 0x{codec:x}; only dag-pb and raw are walked"
        )
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
    budget: WalkBudget | None = None,
    skip: Callable[[bytes], bool] | None = None,
) -> Iterator[tuple[bytes, bytes]]:
    """Yield ``(cid, data)`` for every distinct block reachable from ``root``, parents first; one below it for
    which ``skip(cid)`` is true is neither read nor yielded (a pin's walk knows it from its record, ``BlockStore``).

    Depth-first, links in stored order, each block once. With ``verify`` (the
    default; turn it off only for a getter that already verifies) each block is
    checked against its CID before its links are followed.

    Raises ``MissingBlock`` naming the CID and the link path to it,
    ``BlockMismatch`` / ``UnsupportedBlock`` for a bad block, ``CodecError`` for
    malformed dag-pb, and ``DAGLimitExceeded`` when the DAG is deeper than
    ``max_depth`` links, has more than ``max_links`` links in all, or links
    back to one of its own ancestors (a cycle: impossible with honest hashes,
    so only reachable through a getter that does not verify). A ``budget``
    is charged one visit per block read and checked against its depth (its
    ``cancelled`` check stops the walk with ``WalkCancelled``).
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
        if budget is not None:
            budget.visit()
            budget.check_depth(len(stack))
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
        if child in seen or (skip is not None and skip(child)):
            continue
        if len(stack) > max_depth:
            raise DAGLimitExceeded(
                f"DAG under {cid_to_str(root)} is deeper than {max_depth} levels at {cid_to_str(child)}; "
                "refusing to walk further (raise max_depth only for DAGs you trust)"
            )
        yield child, enter(child, name)


def expand_dag(root: bytes, blocks: Iterable[tuple[bytes, bytes]]) -> Expansion:
    """Count the distinct blocks under ``root`` and the visits a full expansion would make.

    ``blocks`` is ``walk_dag(root, ...)`` (with the caller's limits; its errors
    pass through): each distinct block is read once, and the visit count is
    computed bottom-up, so a DAG claiming 256**4 visits costs no more than its
    few blocks.
    """
    children: dict[bytes, list[bytes]] = {}
    for cid, data in blocks:
        children[cid] = [child for child, _name in block_links(cid, data)]
    visits: dict[bytes, int] = {}
    stack = [root]
    while stack:  # post-order over distinct blocks: walk_dag has refused cycles
        cid = stack[-1]
        if cid in visits:
            stack.pop()
            continue
        pending = {child for child in children[cid] if child not in visits}
        if pending:
            stack.extend(pending)
            continue
        visits[cid] = 1 + sum(visits[child] for child in children[cid])
        stack.pop()
    return Expansion(len(children), visits[root])
