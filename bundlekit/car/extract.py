"""Extracting a CAR file's DAG to a directory: the CAR index as the block getter for ``unpack``."""

from __future__ import annotations

import os
from collections.abc import Callable

from bundlekit.car.index import CarIndex
from bundlekit.errors import UsageError
from bundlekit.ipld.block import MAX_BLOCK_SIZE
from bundlekit.ipld.cid import cid_to_str
from bundlekit.unixfs.unpack import UnpackOptions, UnpackResult, unpack

__all__ = ["unpack_car"]


def unpack_car(
    car: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    root: bytes | None = None,
    options: UnpackOptions | None = None,
    max_block_size: int = MAX_BLOCK_SIZE,
    progress: Callable[[int, int], None] | None = None,
) -> UnpackResult:
    """Extract a CAR file's DAG to ``dest``; ``root`` defaults to the CAR's only root.

    The CAR is indexed in one pass (offsets only); every block the DAG uses is
    then read from disk and verified as it is extracted. Raises ``UsageError``
    when the CAR has several roots and none was chosen, or ``root`` is not
    among them; ``CARError`` for a malformed CAR; ``MissingBlock`` when the
    DAG is incomplete; and everything ``unpack`` raises (``options``: its
    ``force``, limits and ``fsync``). Blocks over ``max_block_size`` bytes are refused.
    ``progress(bytes, total)`` follows the blocks read against the CAR's block bytes.
    """
    with CarIndex(car, verify=False, max_block_size=max_block_size) as index:
        if root is None:
            if len(index.roots) != 1:
                raise UsageError(
                    f"CAR {car} has {len(index.roots)} roots; choose one with --root "
                    f"({', '.join(cid_to_str(r) for r in index.roots) or 'none listed'})"
                )
            root = index.roots[0]
        elif root not in index.roots:
            raise UsageError(f"{cid_to_str(root)} is not a root of CAR {car}; `bundlekit ls` shows the roots")
        # index.get verifies every block at this CAR's max_block_size (the reader's own check
        # would hold blocks to the default limit whatever the caller allowed).
        get = index.get
        if progress is not None:
            read = [0]

            def get(cid: bytes) -> bytes:
                block = index.get(cid)
                read[0] += len(block)
                progress(min(read[0], index.bytes), index.bytes)
                return block

        return unpack(get, root, dest, options=options, verify=False, raw_size=index.length)
