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

from bundlekit.errors import BundlekitError
from bundlekit.ipld.cid import RAW, cid_to_str
from bundlekit.ipld.walk import WalkBudget, WalkLimits
from bundlekit.unixfs.reader import UnixFSReader

__all__ = ["RAW_V1_PREFIX", "VISITS_BASE", "VISITS_PER_BYTE_DIVISOR", "read_bounded", "visit_budget"]

# Block visits allowed for a file of n bytes: VISITS_BASE + n // VISITS_PER_BYTE_DIVISOR.
# Any importer's file of n bytes has far fewer blocks (one per chunk of 256 KiB or
# 1 MiB, plus one node per 174 or 1024 links); a budget keyed to bytes lets a DAG of
# empty nodes linked over and over stop as surely as one that claims bytes.
VISITS_BASE = 1024
VISITS_PER_BYTE_DIVISOR = 1024
# A CIDv1 starting with these bytes is one raw block: its bytes are the whole file.
RAW_V1_PREFIX = bytes([0x01, RAW])


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
    if cid[:2] == RAW_V1_PREFIX:
        data = get(cid)
        if len(data) > max_bytes:
            raise too_big(len(data))
        return data
    # The reader counts every visit, a reused block once per visit (ipld/walk.WalkBudget);
    # the bytes are checked here, so the caller's too_big error names the file.
    limits = WalkLimits(max_visits=visit_budget(max_bytes), max_bytes=None)
    reader = UnixFSReader(get, verify=False, budget=WalkBudget(limits, what=f"{what}: {cid_to_str(cid)}"))
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
