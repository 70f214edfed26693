"""dag-pb nodes and UnixFS ``Data`` messages: encode and decode.

dag-pb has no maintained Python codec, so this is a small one. Encoding
follows the canonical form the reference tools produce:

* ``PBNode``: every ``Links`` entry (field 2) first, then ``Data`` (field 1).
* ``PBLink``: ``Hash`` (1), ``Name`` (2), ``Tsize`` (3), and *all three are
  always written*, even an empty name and a zero size.
* UnixFS ``Data``: fields in number order; ``blocksizes`` (4) is repeated,
  not packed.

Decoding is strict (the dag-pb spec's rules): fields in that order, no
duplicates, no unknown fields, lengths within the buffer. Anything else is a
``CodecError``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from bundlekit.errors import CodecError
from bundlekit.ipld.cid import decode_varint, encode_varint

__all__ = [
    "DIRECTORY",
    "FILE",
    "HAMT_SHARD",
    "METADATA",
    "RAW_T",
    "SYMLINK",
    "PBLink",
    "UnixFSData",
    "decode_node",
    "encode_node",
]

# UnixFS Data.DataType
RAW_T = 0
DIRECTORY = 1
FILE = 2
METADATA = 3
SYMLINK = 4
HAMT_SHARD = 5

_TYPE_NAMES = {RAW_T: "raw", DIRECTORY: "directory", FILE: "file", METADATA: "metadata", SYMLINK: "symlink", HAMT_SHARD: "hamt-shard"}


class PBLink(NamedTuple):
    """One dag-pb link: binary CID, name (UTF-8 bytes) and cumulative size."""

    cid: bytes
    name: bytes
    tsize: int


_new_link = tuple.__new__


def _len_field(tag: int, payload: bytes) -> bytes:
    return bytes((tag,)) + encode_varint(len(payload)) + payload


def encode_node(links: list[PBLink] | tuple[PBLink, ...], data: bytes | None) -> bytes:
    """Serialize a dag-pb node. Links keep the order given (callers sort directories)."""
    parts: list[bytes] = []
    for link in links:
        body = (
            _len_field(0x0A, link.cid)
            + _len_field(0x12, link.name)
            + b"\x18"
            + encode_varint(link.tsize)
        )
        parts.append(_len_field(0x12, body))
    if data is not None:
        parts.append(_len_field(0x0A, data))
    return b"".join(parts)


def _read_len(buf: bytes, pos: int, what: str) -> tuple[bytes, int]:
    try:
        length, pos = decode_varint(buf, pos)
    except ValueError as exc:
        raise CodecError(f"bad length in {what}: {exc}") from exc
    end = pos + length
    if end > len(buf):
        raise CodecError(f"{what} runs past the end of the block")
    return buf[pos:end], end


def _decode_link(buf: bytes) -> PBLink:
    pos = 0
    cid: bytes | None = None
    name = b""
    tsize = 0
    last = 0
    while pos < len(buf):
        key = buf[pos]
        pos += 1
        field_no, wire = key >> 3, key & 7
        if field_no <= last:
            raise CodecError("dag-pb link fields out of order or duplicated")
        last = field_no
        if field_no == 1 and wire == 2:
            cid, pos = _read_len(buf, pos, "link hash")
        elif field_no == 2 and wire == 2:
            name, pos = _read_len(buf, pos, "link name")
        elif field_no == 3 and wire == 0:
            try:
                tsize, pos = decode_varint(buf, pos)
            except ValueError as exc:
                raise CodecError(f"bad link Tsize: {exc}") from exc
        else:
            raise CodecError(f"unknown dag-pb link field {field_no} (wire type {wire})")
    if cid is None:
        raise CodecError("dag-pb link without a Hash")
    return PBLink(cid, name, tsize)


def _canonical_link(buf: bytes, pos: int, n: int) -> tuple[PBLink, int] | None:
    """The link whose length prefix starts at ``pos``, if it has the canonical shape; else None.

    Canonical: ``Links`` length in 1-2 varint bytes, then ``Hash`` and ``Name``
    with one-byte lengths and a ``Tsize`` varint ending exactly at the link's
    end (what bundlekit, kubo and ipfs-car write). The result equals the
    careful ``_read_len`` + ``_decode_link``; None sends the caller there
    (which raises for anything malformed).
    """
    if pos + 1 >= n:
        return None
    length = buf[pos]
    if length < 0x80:
        q = pos + 1
    elif 0 < buf[pos + 1] < 0x80:
        length, q = (length & 0x7F) | (buf[pos + 1] << 7), pos + 2
    else:
        return None
    end = q + length
    if end > n or length < 6 or buf[q] != 0x0A or buf[q + 1] >= 0x80:
        return None
    cid_end = q + 2 + buf[q + 1]
    if cid_end + 2 >= end or buf[cid_end] != 0x12 or buf[cid_end + 1] >= 0x80:
        return None
    name_end = cid_end + 2 + buf[cid_end + 1]
    if name_end + 1 >= end or buf[name_end] != 0x18:
        return None
    # Tsize in one or two varint bytes (minimal: a last byte of 0 is left to decode_varint to refuse).
    if end == name_end + 2 and buf[name_end + 1] < 0x80:
        tsize = buf[name_end + 1]
    elif end == name_end + 3 and buf[name_end + 1] >= 0x80 and 0 < buf[name_end + 2] < 0x80:
        tsize = (buf[name_end + 1] & 0x7F) | (buf[name_end + 2] << 7)
    else:
        try:
            tsize, after = decode_varint(buf, name_end + 1)
        except ValueError:
            return None
        if after != end:
            return None
    # tuple.__new__ builds the PBLink without the Python-level __new__ of a NamedTuple (once per link).
    return _new_link(PBLink, (buf[q + 2 : cid_end], buf[cid_end + 2 : name_end], tsize)), end


def decode_node(buf: bytes) -> tuple[list[PBLink], bytes | None]:
    """Parse a dag-pb block into ``(links, data)``; raise ``CodecError`` if malformed."""
    return _decode_node(buf, fast=True)


def _decode_node(buf: bytes, *, fast: bool) -> tuple[list[PBLink], bytes | None]:
    """``decode_node``; with ``fast`` canonical links take ``_canonical_link`` (the tests compare both ways)."""
    links: list[PBLink] = []
    data: bytes | None = None
    pos = 0
    n = len(buf)
    while pos < n:
        key = buf[pos]
        pos += 1
        if key == 0x12:
            if data is not None:
                raise CodecError("dag-pb Links after Data")
            got = _canonical_link(buf, pos, n) if fast else None
            if got is not None:
                link, pos = got
                links.append(link)
                continue
            body, pos = _read_len(buf, pos, "link")
            links.append(_decode_link(body))
        elif key == 0x0A:
            if data is not None:
                raise CodecError("dag-pb node with two Data fields")
            data, pos = _read_len(buf, pos, "node data")
        else:
            raise CodecError(f"unknown dag-pb node field (key byte 0x{key:02x})")
    return links, data


@dataclass
class UnixFSData:
    """The UnixFS ``Data`` protobuf message (mode and mtime are not produced by our profiles)."""

    type: int
    data: bytes | None = None
    filesize: int | None = None
    blocksizes: list[int] = field(default_factory=list)
    hash_type: int | None = None
    fanout: int | None = None

    @property
    def type_name(self) -> str:
        return _TYPE_NAMES.get(self.type, f"unknown({self.type})")

    def encode(self) -> bytes:
        out = bytearray(b"\x08" + encode_varint(self.type))
        if self.data is not None:
            out += _len_field(0x12, self.data)
        if self.filesize is not None:
            out += b"\x18" + encode_varint(self.filesize)
        for size in self.blocksizes:
            out += b"\x20" + encode_varint(size)
        if self.hash_type is not None:
            out += b"\x28" + encode_varint(self.hash_type)
        if self.fanout is not None:
            out += b"\x30" + encode_varint(self.fanout)
        return bytes(out)

    @classmethod
    def decode(cls, buf: bytes) -> UnixFSData:
        """Parse UnixFS Data; unknown optional fields (mode, mtime) are skipped, not kept."""
        pos = 0
        typ: int | None = None
        msg = cls(type=-1)
        try:
            while pos < len(buf):
                key, pos = decode_varint(buf, pos)
                field_no, wire = key >> 3, key & 7
                if wire == 0:
                    value, pos = decode_varint(buf, pos)
                    if field_no == 1:
                        typ = value
                    elif field_no == 3:
                        msg.filesize = value
                    elif field_no == 4:
                        msg.blocksizes.append(value)
                    elif field_no == 5:
                        msg.hash_type = value
                    elif field_no == 6:
                        msg.fanout = value
                elif wire == 2:
                    payload, pos = _read_len(buf, pos, "UnixFS field")
                    if field_no == 2:
                        msg.data = payload
                    elif field_no == 4:  # tolerate packed blocksizes from other encoders
                        p = 0
                        while p < len(payload):
                            v, p = decode_varint(payload, p)
                            msg.blocksizes.append(v)
                elif wire == 5:
                    pos += 4
                elif wire == 1:
                    pos += 8
                else:
                    raise CodecError(f"unsupported wire type {wire} in UnixFS data")
        except ValueError as exc:
            raise CodecError(f"malformed UnixFS data: {exc}") from exc
        if pos > len(buf):
            raise CodecError("UnixFS data truncated")
        if typ is None:
            raise CodecError("UnixFS data without a Type")
        msg.type = typ
        return msg
