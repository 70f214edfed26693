"""CARv1 framing: the header (dag-cbor roots) and its limits."""

from __future__ import annotations

import os
from collections.abc import Sequence

from bundlekit.errors import CARError, CIDError
from bundlekit.ipld.cid import encode_varint

__all__ = ["CARV2_PRAGMA", "CAR_CONTENT_TYPE", "CAR_MEDIA_TYPE", "MAX_HEADER_SIZE", "decode_header", "encode_header"]

# The media type of a CAR over HTTP (trustless gateway ``format=car``), and the full
# Content-Type a CAR of ours is served with: walk_dag emits parents before children,
# depth first, each block once.
CAR_MEDIA_TYPE = "application/vnd.ipld.car"
CAR_CONTENT_TYPE = "application/vnd.ipld.car; version=1; order=dfs; dups=n"

# A header holds a few roots; anything this large is hostile or not a CAR.
MAX_HEADER_SIZE = 1024 * 1024
# CIDs we can verify are 34-36 bytes; this bounds how far read_cid may look.
_MAX_CID_PEEK = 256
# CARv2: the fixed 11-byte pragma (varint 10 + dag-cbor {"version": 2}) and 40-byte header.
CARV2_PRAGMA = bytes.fromhex("0aa16776657273696f6e02")
_CARV2_HEADER_SIZE = 40
_READ_CHUNK = 256 * 1024
# The dag-cbor bytes of {"roots": [<36-byte CID>], "version": 1} around the CID (map of 2, "roots",
# array of 1, tag 42, bytes of 37 starting with the identity multibase 0x00; then "version", 1).
_ONE_ROOT_HEAD = bytes.fromhex("a265726f6f747381d82a582500")
_ONE_ROOT_TAIL = bytes.fromhex("6776657273696f6e01")
_ONE_ROOT_SIZE = len(_ONE_ROOT_HEAD) + 36 + len(_ONE_ROOT_TAIL)
_USUAL_ROOT_PREFIXES = frozenset(bytes((1, codec, 0x12, 0x20)) for codec in (0x70, 0x55))
_PREAD = getattr(os, "pread", None)


def encode_header(roots: Sequence[bytes]) -> bytes:
    """The CARv1 header for ``roots`` (binary CIDs), varint length prefix included. The header of nearly
    every CAR (one sha2-256 CIDv1 root, dag-pb or raw) is the fixed bytes :func:`decode_header` reads without
    decoding, written without ``dag_cbor`` and ``multiformats`` (~60 ms to import, issue 37)."""
    if len(roots) == 1 and len(roots[0]) == 36 and bytes(roots[0][:4]) in _USUAL_ROOT_PREFIXES:
        return encode_varint(_ONE_ROOT_SIZE) + _ONE_ROOT_HEAD + bytes(roots[0]) + _ONE_ROOT_TAIL
    import dag_cbor
    from multiformats import CID

    try:
        cids = [CID.decode(bytes(root)) for root in roots]
    except Exception as exc:  # multiformats raises assorted ValueError/KeyError subclasses
        raise CIDError("a CAR root is not a valid binary CID") from exc
    header: dict[str, dag_cbor.IPLDKind] = {"roots": list(cids), "version": 1}
    body = dag_cbor.encode(header)
    return encode_varint(len(body)) + body


def decode_header(body: bytes) -> tuple[int, list[bytes]]:
    """Decode a header body (without its length prefix) into ``(version, roots)``.

    Returns ``(2, [])`` for the CARv2 pragma. Raises ``CARError`` for anything
    that is not dag-cbor, not a map, or has a wrong ``version`` / ``roots``.
    """
    # The header of nearly every CAR: one sha2-256 CIDv1 root (dag-pb or raw), the bytes dag-cbor gives
    # {"roots": [root], "version": 1}; read without decoding (dag_cbor and multiformats cost ~0.3 ms).
    if len(body) == _ONE_ROOT_SIZE and body.startswith(_ONE_ROOT_HEAD) and body.endswith(_ONE_ROOT_TAIL):
        cid = body[len(_ONE_ROOT_HEAD) : -len(_ONE_ROOT_TAIL)]
        if cid[:4] in _USUAL_ROOT_PREFIXES:
            return 1, [cid]
    import dag_cbor
    from multiformats import CID

    try:
        header = dag_cbor.decode(body)
    except Exception as exc:  # dag_cbor raises CBORDecodingError and friends
        raise CARError(
            f"CAR header is not valid dag-cbor ({exc}); the file is not a CAR or is corrupt"
        ) from exc
    if not isinstance(header, dict):
        raise CARError("CAR header is not a dag-cbor map; the file is not a CAR")
    version = header.get("version")
    if version == 2 and set(header) == {"version"}:
        return 2, []
    if version != 1 or type(version) is not int:
        raise CARError(f"unsupported CAR version {version!r}; only CARv1 (and CARv2 wrapping v1) are read")
    if set(header) != {"roots", "version"}:
        extra = sorted(str(k) for k in set(header) - {"roots", "version"})
        raise CARError(f"CARv1 header has unexpected keys {extra} or lacks 'roots'")
    roots = header["roots"]
    if not isinstance(roots, list):
        raise CARError("CARv1 header 'roots' is not a list of CIDs")
    out: list[bytes] = []
    for root in roots:
        if not isinstance(root, CID):
            raise CARError("CARv1 header 'roots' is not a list of CIDs")
        out.append(bytes(root))
    return 1, out
