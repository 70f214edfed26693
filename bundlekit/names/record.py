"""IPNS names and V2 records: encode, sign, decode, verify (``specs/provenance.md``, "IPNS").

Follows the IPNS Record specification (github.com/ipfs/specs, ``src/ipns/ipns-record.md``,
commit 0005ac87):

* A *name* is the CIDv1 (codec ``libp2p-key``, 0x72) of the identity multihash of
  the signer's libp2p ``PublicKey`` protobuf; bundlekit names are Ed25519 keys,
  written in base36 (``k51...``).
* A *record* is the protobuf ``IpnsEntry``. bundlekit creates V2-only records:
  ``signatureV2`` (8) and ``data`` (9), no ``pubKey`` (an Ed25519 key is inlined in
  the name). ``data`` is DAG-CBOR ``{Value, Validity, ValidityType, Sequence, TTL}``
  and ``signatureV2`` signs ``b"ipns-signature:" + data``.
* Verification, in the spec's order: size at most 10 KiB; ``signatureV2`` and
  ``data`` present; public key from ``pubKey`` (which must match the name) or
  from the name's identity multihash; DAG-CBOR ``data``; the V2 signature; the V1
  copies (fields 1, 3-6) equal to ``data`` when present; ``Validity`` (RFC 3339)
  after now. ``signatureV1`` is never used.

The unsigned structure (the ``IpnsEntry`` protobuf, the DAG-CBOR ``data`` map, the
RFC 3339 validity) is read and written by ``bundlekit.ipld.ipns_entry``, the codec the
gateway shares; here its ``CodecError`` becomes ``SignatureError``: a record that cannot
be read is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from bundlekit.blockstore import IPNS_RECORD_MEDIA_TYPE
from bundlekit.crypto.signing import Ed25519Signer, libp2p_ed25519_public_key
from bundlekit.errors import CIDError, CodecError, SignatureError, UsageError
from bundlekit.ipld import ipns_entry
from bundlekit.ipld.cbormap import encode_flat_map
from bundlekit.ipld.bases import BASE36, decode, encode
from bundlekit.ipld.cid import cid_from_text, cid_to_str, decode_varint, encode_varint
from bundlekit.ipld.ipns_entry import EOL, MAX_RECORD_SIZE, encode_entry, format_validity

__all__ = [
    "LIBP2P_KEY",
    "MAX_RECORD_SIZE",
    "MAX_UINT64",
    "RECORD_MEDIA_TYPE",
    "SIGNATURE_PREFIX",
    "IpnsRecord",
    "create_record",
    "decode_entry",
    "encode_entry",
    "format_validity",
    "name_from_key",
    "name_public_key",
    "parse_name",
    "verify_record",
    "verify_signed",
]

RECORD_MEDIA_TYPE: Final = IPNS_RECORD_MEDIA_TYPE
SIGNATURE_PREFIX: Final = b"ipns-signature:"
LIBP2P_KEY: Final = 0x72
_IDENTITY: Final = 0x00
_UNIX_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
#: The largest Sequence and TTL a record holds (``uint64`` in the spec's field list).
MAX_UINT64: Final = 2**64 - 1


# -- names ----------------------------------------------------------------------------------


def name_from_key(public: bytes) -> str:
    """The IPNS name (``k51...``) of a 32-byte Ed25519 public key."""
    key = libp2p_ed25519_public_key(public)
    cid = b"\x01" + encode_varint(LIBP2P_KEY) + bytes([_IDENTITY]) + encode_varint(len(key)) + key
    return "k" + encode(cid, BASE36)


def parse_name(text: str) -> bytes:
    """The binary CID of an IPNS name (``k51...`` base36, or any multibase CIDv1 with the libp2p-key codec).

    Raises ``UsageError`` for anything else (a CIDv0 peer id, a DNSLink name).
    """
    name = text.strip()
    try:
        cid = decode(name[1:].lower(), BASE36) if name[:1] in ("k", "K") else cid_from_text(name)
    except (ValueError, CIDError):
        cid = b""
    if cid[:1] != b"\x01" or cid[1:2] != bytes([LIBP2P_KEY]):
        raise UsageError(f"{name[:80]!r} is not an IPNS name; expected a k51... name from `bundlekit name create`")
    return cid


def name_public_key(name: bytes) -> bytes | None:
    """The Ed25519 public key inlined in a name's identity multihash, or None when it is not inlined."""
    digest_part = name[2:]
    if digest_part[:1] != bytes([_IDENTITY]):
        return None
    length, offset = decode_varint(digest_part, 1)
    key = digest_part[offset:offset + length]
    if len(key) != 36 or key[:4] != libp2p_ed25519_public_key(b"")[:4]:
        return None
    return key[4:]


def name_text(name: bytes) -> str:
    """A binary name as ``k51...``."""
    return "k" + encode(name, BASE36)


# -- protobuf -------------------------------------------------------------------------------


def decode_entry(data: bytes) -> dict[str, bytes | int]:
    """Parse an ``IpnsEntry`` (``ipns_entry.decode_entry``); ``SignatureError`` for malformed bytes."""
    try:
        return ipns_entry.decode_entry(data)
    except CodecError as exc:
        raise SignatureError(str(exc)) from exc


# -- records --------------------------------------------------------------------------------


@dataclass(frozen=True)
class IpnsRecord:
    """A verified record's content: the name it is for, the path it points at and its validity."""

    name: str
    value: str
    sequence: int
    validity: datetime
    ttl_ns: int

    @property
    def cid(self) -> bytes:
        """The CID of an ``/ipfs/<cid>`` value (one trailing ``/`` allowed): the root of a bundle.

        The spec lets a value be any content path; bundlekit loads a bundle at
        its root only, so a value with a path inside the DAG (``/ipfs/<cid>/sub``)
        is refused, never cut back to its CID, and so is any other value (another
        name, a CID with white space or a line break around it): ``SignatureError``.
        """
        if not self.value.startswith("/ipfs/"):
            raise SignatureError(f"the record for {self.name} points at {self.value[:100]!r}, not an /ipfs/ path")
        cid_text, _, path = self.value[len("/ipfs/"):].partition("/")
        if path:
            raise SignatureError(
                f"the record for {self.name} points at {self.value[:160]!r}, a path inside a DAG; bundlekit loads "
                "a bundle at its root CID only: the publisher must publish the bundle's root (/ipfs/<CID>)"
            )
        if not (cid_text.isascii() and cid_text.isalnum()):
            raise SignatureError(f"the record for {self.name} points at {self.value[:100]!r}, not an /ipfs/<CID> path")
        try:
            return cid_from_text(cid_text)
        except CIDError as exc:
            raise SignatureError(f"the record for {self.name} names an invalid CID") from exc

    @property
    def rank(self) -> tuple[int, datetime]:
        """What makes a record newer (boxo ``ipns/record.go`` ``compare``): the higher sequence, then the later validity."""
        return self.sequence, self.validity


def _parse_validity(text: str) -> datetime:
    """The record's RFC 3339 validity (to the microsecond); ``SignatureError`` when it is not a valid time."""
    try:
        return _UNIX_EPOCH + timedelta(microseconds=ipns_entry.parse_validity(text) // 1000)
    except CodecError as exc:
        raise SignatureError(str(exc)) from exc
    except OverflowError:  # a valid RFC 3339 time outside datetime's years 1-9999 once moved to UTC
        raise SignatureError(f"the IPNS record's validity {text[:60]!r} is not a valid time") from None


def create_record(
    signer: Ed25519Signer,
    value: str,
    *,
    sequence: int,
    validity: datetime,
    ttl_ns: int,
) -> bytes:
    """A signed V2-only ``IpnsEntry`` for ``signer``'s name pointing at ``value`` (``/ipfs/<cid>``)."""
    if not (0 <= sequence <= MAX_UINT64 and 0 <= ttl_ns <= MAX_UINT64):
        raise UsageError(f"an IPNS record's sequence and TTL are unsigned 64-bit integers (0 to {MAX_UINT64})")
    doc: dict[str, bytes | int] = {
        "Value": value.encode("utf-8"),
        "Validity": format_validity(validity).encode("ascii"),
        "ValidityType": EOL,
        "Sequence": sequence,
        "TTL": ttl_ns,
    }
    data = encode_flat_map(doc)  # dag_cbor's bytes without importing it (ipld.cbormap)
    if data is None:  # not reached: every value above is bytes or a checked uint64
        import dag_cbor  # lazy: 25 ms to import, and only names need it

        data = dag_cbor.encode(dict(doc))
    entry = encode_entry({"signatureV2": signer.sign(SIGNATURE_PREFIX + data), "data": data})
    if len(entry) > MAX_RECORD_SIZE:
        raise UsageError(f"the IPNS record would be {len(entry)} bytes, over the {MAX_RECORD_SIZE}-byte limit")
    return entry


def _decode_data(data: bytes) -> dict[str, Any]:
    """The record's DAG-CBOR data with the five keys a V2 record must hold; ``SignatureError`` otherwise."""
    try:
        doc = ipns_entry.decode_data(data)
    except CodecError as exc:
        raise SignatureError(str(exc)) from None
    for key, kind in (("Value", bytes), ("Validity", bytes), ("ValidityType", int), ("Sequence", int), ("TTL", int)):
        if not isinstance(doc.get(key), kind) or isinstance(doc.get(key), bool):
            raise SignatureError(f"the IPNS record's data lacks a valid {key!r}")
    if doc["ValidityType"] != EOL:
        raise SignatureError(f"the IPNS record's validity type {doc['ValidityType']} is not EOL (0)")
    for key in ("Sequence", "TTL"):  # uint64 in the spec: a negative one is no version and no duration
        if not 0 <= doc[key] <= MAX_UINT64:
            raise SignatureError(f"the IPNS record's {key} {doc[key]} is not an unsigned 64-bit integer")
    return doc


def verify_record(
    name: bytes, record: bytes, *, now: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> IpnsRecord:
    """Verify ``record`` as the IPNS record of ``name`` (binary) at ``now()``; return its content.

    Raises ``SignatureError`` (exit 3) at the first failed step of the spec's
    verification: too large, no V2 signature or data, a public key that is
    not the name's, malformed data, a bad signature, V1 copies that differ from
    the signed data, or an expired validity.
    """
    label = name_text(name)
    if len(record) > MAX_RECORD_SIZE:
        raise SignatureError(f"the IPNS record for {label} is {len(record)} bytes, over the 10 KiB limit")
    entry = decode_entry(record)
    signature, data = entry.get("signatureV2"), entry.get("data")
    if not isinstance(signature, bytes) or not isinstance(data, bytes) or not signature or not data:
        raise SignatureError(f"the IPNS record for {label} has no V2 signature or data; refusing it")
    public = _record_key(name, entry, label)
    doc = _decode_data(data)
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, SIGNATURE_PREFIX + data)
    except (InvalidSignature, ValueError):
        raise SignatureError(
            f"the IPNS record for {label} is not signed by the name's key (tampered, or signed by another key)"
        ) from None
    if "signatureV1" in entry or "value" in entry:
        copies = {"value": doc["Value"], "validity": doc["Validity"], "validityType": doc["ValidityType"],
                  "sequence": doc["Sequence"], "ttl": doc["TTL"]}
        for field, expected in copies.items():
            if entry.get(field, b"" if isinstance(expected, bytes) else 0) != expected:
                raise SignatureError(f"the IPNS record for {label}: V1 field {field!r} differs from the signed data")
    validity = _parse_validity(doc["Validity"].decode("ascii", "replace"))
    if validity <= now():
        raise SignatureError(f"the IPNS record for {label} expired at {format_validity(validity)}; "
                             "the publisher must publish it again")
    return IpnsRecord(name=label, value=doc["Value"].decode("utf-8", "replace"), sequence=doc["Sequence"],
                      validity=validity, ttl_ns=doc["TTL"])


def verify_signed(name: bytes, record: bytes) -> IpnsRecord:
    """``verify_record`` without the validity step: the record is the name's, whenever it expires (or expired).

    An expired record still proves its sequence was published: publishing
    continues above it and resolution refuses to go back below it.
    """
    return verify_record(name, record, now=lambda: datetime.min.replace(tzinfo=UTC))


def _record_key(name: bytes, entry: dict[str, bytes | int], label: str) -> bytes:
    """The Ed25519 key that must have signed: inlined in the name (``pubKey``, if present, must be the same)."""
    public = name_public_key(name)
    if public is None:
        raise SignatureError(f"{label} does not inline an Ed25519 key; bundlekit resolves Ed25519 names only")
    embedded = entry.get("pubKey")
    if embedded is not None and embedded != libp2p_ed25519_public_key(public):
        raise SignatureError(f"the IPNS record for {label} embeds a public key that is not the name's; refusing it")
    return public


def cid_value(cid: bytes) -> str:
    """The record value for a CID: ``/ipfs/<CIDv1 base32>``."""
    return f"/ipfs/{cid_to_str(cid)}"
