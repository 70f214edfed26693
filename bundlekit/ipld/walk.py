"""Walking a DAG with limits: iterative, every block verified before its links are followed."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from bundlekit.errors import (
    CodecError,
    DAGLimitExceeded,
    MissingBlock,
    UnsupportedBlock,
)
from bundlekit.ipld.block import MAX_BLOCK_SIZE, block_codec, check_block
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str
from bundlekit.ipld.dagpb import decode_node

__all__ = ["MAX_DEPTH", "MAX_LINKS", "GetBlock", "block_links", "walk_dag"]

MAX_DEPTH = 1024
MAX_LINKS = 10_000_000
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
