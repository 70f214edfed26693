"""Block verification and the block limit: a block is accepted only if it hashes to its CID.

``MAX_BLOCK_SIZE`` is defined beside ``cid.verify_block`` (its default) and re-exported here.
"""

from __future__ import annotations

from bundlekit.errors import (
    CIDError,
    UnsupportedBlock,
)
from bundlekit.ipld.cid import MAX_BLOCK_SIZE, parse_cid_bytes, verify_block

__all__ = ["MAX_BLOCK_SIZE", "RAW_MEDIA_TYPE", "block_codec", "check_block"]

# The media type of one block's bytes over HTTP (trustless gateway ``format=raw``).
RAW_MEDIA_TYPE = "application/vnd.ipld.raw"


def block_codec(cid: bytes) -> int:
    """The codec of a binary CID (dag-pb for CIDv0); ``UnsupportedBlock`` if it cannot be parsed."""
    try:
        return parse_cid_bytes(cid).codec
    except CIDError as exc:
        raise UnsupportedBlock(f"cannot parse CID {cid.hex()}: {exc}") from exc


def check_block(cid: bytes, data: bytes, max_size: int | None = MAX_BLOCK_SIZE) -> None:
    """``cid.verify_block`` with ``max_size`` positional (same default ``MAX_BLOCK_SIZE``, same errors)."""
    verify_block(cid, data, max_size=max_size)
