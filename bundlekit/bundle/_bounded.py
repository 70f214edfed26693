"""Reading one file of a DAG the loader does not trust, with its caps checked while it streams.

A DAG may link one block many times: a few kilobytes can claim gigabytes
(issue 12). ``read_bounded`` therefore never joins first and checks after:
the size the file's root claims is checked before any other block is read,
every chunk is counted as it arrives, and every block visit (a reused block
counts once per visit) is counted against a budget that an honest file never
comes near (``visit_budget``).
"""

from __future__ import annotations

from collections.abc import Callable

from bundlekit.errors import BundlekitError, DAGLimitExceeded
from bundlekit.ipld.cid import RAW, cid_to_str
from bundlekit.unixfs.reader import UnixFSReader, _Node

__all__ = ["VISITS_BASE", "VISITS_PER_BYTE_DIVISOR", "read_bounded", "visit_budget"]

# Block visits allowed for a file of n bytes: VISITS_BASE + n // VISITS_PER_BYTE_DIVISOR.
# Any importer's file of n bytes has far fewer blocks (one per chunk of 256 KiB or
# 1 MiB, plus one node per 174 or 1024 links); a budget keyed to bytes lets a DAG of
# empty nodes linked over and over stop as surely as one that claims bytes.
VISITS_BASE = 1024
VISITS_PER_BYTE_DIVISOR = 1024
_RAW_V1_PREFIX = bytes([0x01, RAW])


def visit_budget(max_bytes: int) -> int:
    """How many block visits reading a file of at most ``max_bytes`` may take."""
    return VISITS_BASE + max_bytes // VISITS_PER_BYTE_DIVISOR


def read_bounded(
    get: Callable[[bytes], bytes],
    cid: bytes,
    max_bytes: int,
    too_big: Callable[[int], BundlekitError],
    what: str,
) -> bytes:
    """The content of the file at ``cid``, refused as soon as it passes ``max_bytes`` or its visit budget.

    ``get`` returns verified blocks (raising ``MissingBlock``/``BlockMismatch``).
    ``too_big(seen)`` builds the error raised when the file claims or streams
    more than ``max_bytes``; ``DAGLimitExceeded`` (naming ``what``) when it
    needs more block visits than ``visit_budget(max_bytes)``. A raw-codec CID
    is a single block and is its own content (no reader needed).
    """
    if cid[:2] == _RAW_V1_PREFIX:
        data = get(cid)
        if len(data) > max_bytes:
            raise too_big(len(data))
        return data
    reader = _CountingReader(get, visit_budget(max_bytes), what, cid, max_bytes)
    claimed = reader.stat(cid).size
    if claimed > max_bytes:
        raise too_big(claimed)
    parts: list[bytes] = []
    seen = 0
    for chunk in reader.iter_file(cid):
        seen += len(chunk)
        if seen > max_bytes:
            raise too_big(seen)
        parts.append(chunk)
    return b"".join(parts)


class _CountingReader(UnixFSReader):
    """A reader that counts every node visit, a reused block once per visit.

    The count sits in ``_load`` because every visit goes through it, also
    the visits the reader answers from its one-node cache (a node linking
    one empty block thousands of times would otherwise cost no count at all).
    """

    def __init__(self, get: Callable[[bytes], bytes], budget: int, what: str, cid: bytes, max_bytes: int) -> None:
        super().__init__(get, verify=False)  # the getter returns verified blocks
        self._budget = budget
        self._visits = 0
        self._what = what
        self._cid = cid
        self._max_bytes = max_bytes

    def _load(self, cid: bytes) -> _Node:
        self._visits += 1
        if self._visits > self._budget:
            raise DAGLimitExceeded(
                f"{self._what}: reading {cid_to_str(self._cid)} takes more than {self._budget} block visits "
                f"for at most {self._max_bytes} bytes; the DAG reuses blocks to claim more than it holds"
            )
        return super()._load(cid)
