"""age v1 files (C2SP ``age.md``): X25519 recipients, the header MAC, the STREAM payload, ASCII armor.

A recipients bundle wraps its key material in a real age file, so Debian's ``age``
decrypts it with the same identity (``specs/encryption.md``, "Recipients"). This
module is the part of age that needs: writing a file for X25519 recipients, and
reading one with X25519 identities, each step a function of its own so the C2SP
test vectors (github.com/C2SP/CCTV, ``age/testdata``) can check each failure class
where it belongs::

    dearmor(text)                       armor failure   -> HeaderDecryptionError
    parse_header(data)                  header failure  -> HeaderDecryptionError
    unwrap_file_key(header, identities) no match        -> WrongKeyError (a malformed X25519 stanza:
                                                           HeaderDecryptionError)
    check_mac(header, file_key)         HMAC failure    -> HeaderDecryptionError
    open_payload(file_key, payload)     payload failure -> PayloadDecryptionError (plaintext yielded
                                                           chunk by chunk, each once it authenticates)

Unrecognised stanza types are ignored, as the spec asks; an ``scrypt`` stanza beside
any other is refused. Every read is bounded by the caller's ``max_bytes`` and
``max_stanzas`` before any key agreement runs. Sources read: C2SP/C2SP ``age.md`` at
5ba5ee830903e91240fc6f9f3a7a9293d49e69c9; the vectors of C2SP/CCTV ``age/testdata`` at
1e3d2860d46e94e777e1b17c7a6f2436387e3ecc.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from bundlekit.crypto import _bech32
from bundlekit.crypto._keys import Rng, _hkdf
from bundlekit.errors import HeaderDecryptionError, PayloadDecryptionError, UsageError, WrongKeyError

__all__ = [
    "FILE_KEY_SIZE",
    "Header",
    "Identity",
    "Recipient",
    "Secret",
    "Stanza",
    "X25519Identity",
    "X25519Recipient",
    "armor",
    "b64_raw",
    "b64_raw_decode",
    "check_mac",
    "check_shape",
    "check_x25519",
    "dearmor",
    "encrypt",
    "header_failure",
    "is_canonical_point",
    "is_low_order",
    "open_payload",
    "parse_header",
    "stanza_text",
    "unwrap_body",
    "unwrap_file_key",
]

VERSION_LINE: Final = b"age-encryption.org/v1"
X25519_TYPE: Final = "X25519"
X25519_INFO: Final = b"age-encryption.org/v1/X25519"
FILE_KEY_SIZE: Final = 16
CHUNK_SIZE: Final = 64 * 1024
_TAG: Final = 16
_NONCE_SIZE: Final = 16
_ZERO_NONCE: Final = bytes(12)
_MAX_LINE: Final = 4096  # the longest stanza argument age defines (an ML-KEM share) is 1,494 characters
_ARMOR_BEGIN: Final = "-----BEGIN AGE ENCRYPTED FILE-----"
_ARMOR_END: Final = "-----END AGE ENCRYPTED FILE-----"
_ARMOR_COLUMNS: Final = 64
_B64_BODY: Final = re.compile(rb"[A-Za-z0-9+/]*")
_ARG: Final = re.compile(rb"[\x21-\x7e]+")


@dataclass(frozen=True)
class Stanza:
    """One recipient stanza: its arguments (the first names its type) and its decoded body."""

    args: tuple[str, ...]
    body: bytes


@dataclass(frozen=True)
class Header:
    """A parsed header: the stanzas, the bytes the MAC covers (up to ``---``) and the MAC."""

    stanzas: tuple[Stanza, ...]
    mac_input: bytes
    mac: bytes


def header_failure(why: str) -> HeaderDecryptionError:
    return HeaderDecryptionError(f"the age header is malformed: {why}")


def b64_raw(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii").rstrip("=")


def b64_raw_decode(text: bytes, what: str) -> bytes:
    """Canonical unpadded base64 (age's conventions); ``HeaderDecryptionError`` otherwise."""
    if not _B64_BODY.fullmatch(text) or len(text) % 4 == 1:
        raise header_failure(f"{what} is not unpadded base64")
    try:
        data = base64.b64decode(text + b"=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        raise header_failure(f"{what} is not unpadded base64") from None
    if b64_raw(data).encode("ascii") != text:
        raise header_failure(f"{what} is not canonical base64")
    return data


_PROBE: Final = X25519PrivateKey.from_private_bytes(bytes(range(1, 33)))


def is_low_order(point: bytes) -> bool:
    """Whether an X25519 public key is a low-order point: every shared secret with it is zero,
    so no one could decrypt what is wrapped for it (and age refuses such a share)."""
    try:
        _PROBE.exchange(X25519PublicKey.from_public_bytes(point))
    except ValueError:
        return True
    return False


_FIELD_PRIME: Final = 2**255 - 19


def is_canonical_point(point: bytes) -> bool:
    """Whether 32 bytes are the one encoding of an X25519 public key (u below 2^255 - 19, top bit
    clear). X25519 reduces any other to a canonical one, but age binds the recipient's bytes into
    the wrap key's HKDF salt and a reader uses its own canonical key: no identity decrypts for a
    non-canonical recipient, though ``age -r`` encrypts for it."""
    return int.from_bytes(point, "little") < _FIELD_PRIME


class Secret:
    """A base for objects that hold a secret key: never shown by ``repr``, never pickled."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(<secret>)"

    def __reduce__(self) -> Any:
        raise TypeError("an identity cannot be pickled; keep keys out of caches and queues")


def unwrap_body(
    secret: X25519PrivateKey, share: bytes, body: bytes, wrap_key: Callable[[bytes], bytes]
) -> bytes | None:
    """The file key in a stanza ``body``: X25519 of ``secret`` and ``share``, then ``wrap_key(shared)``
    opens the body; None when it does not authenticate (another recipient's stanza). A low-order
    share (an all-zero shared secret) is a header failure, as the spec asks."""
    try:
        shared = secret.exchange(X25519PublicKey.from_public_bytes(share))
    except ValueError:
        raise header_failure("a stanza's share is a low-order point") from None
    try:
        return ChaCha20Poly1305(wrap_key(shared)).decrypt(_ZERO_NONCE, body, None)
    except InvalidTag:
        return None


def stanza_text(args: str, wrap_key: bytes, file_key: bytes) -> str:
    """A stanza: ``-> args``, then the wrapped file key in base64 at 64 columns, ending with a short line."""
    body = b64_raw(ChaCha20Poly1305(wrap_key).encrypt(_ZERO_NONCE, file_key, None))
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    if not lines or len(lines[-1]) == 64:
        lines.append("")
    return f"-> {args}\n" + "".join(line + "\n" for line in lines)


def check_shape(stanza: Stanza, sizes: Sequence[int]) -> None:
    """A stanza of a known type: exactly one argument per size (canonical base64 of that many bytes)
    after the type, and a 32-byte body (checked before any decryption, as the spec asks)."""
    kind = stanza.args[0]
    if len(stanza.args) != 1 + len(sizes):
        raise header_failure(f"a {kind} stanza does not have exactly {1 + len(sizes)} arguments")
    for arg, size in zip(stanza.args[1:], sizes, strict=True):
        if len(b64_raw_decode(arg.encode("ascii"), f"a {kind} stanza argument")) != size:
            raise header_failure(f"a {kind} stanza argument is not {size} bytes")
    if len(stanza.body) != FILE_KEY_SIZE + _TAG:
        raise header_failure(f"a {kind} stanza body is not 32 bytes")


class X25519Identity(Secret):
    """An age X25519 identity: 32 secret bytes; ``recipient`` is its public key. Never printed."""

    __slots__ = ("_key", "recipient")

    def __init__(self, secret: bytes) -> None:
        if len(secret) != 32:
            raise UsageError("internal: an X25519 identity is 32 bytes")
        self._key = X25519PrivateKey.from_private_bytes(secret)
        self.recipient: bytes = self._key.public_key().public_bytes_raw()

    def secret_bytes(self) -> bytes:
        """The 32 secret bytes, for writing an identity file (``bundlekit key new``) only."""
        return self._key.private_bytes_raw()

    def recipient_text(self) -> str:
        """The ``age1...`` recipient of this identity."""
        return _bech32.encode("age", self.recipient)

    def unwrap(self, stanza: Stanza) -> bytes | None:
        """The file key if ``stanza`` is an X25519 stanza for this identity, else None.

        A malformed X25519 stanza is a header failure (``HeaderDecryptionError``).
        """
        if stanza.args[0] != X25519_TYPE:
            return None
        check_x25519(stanza)
        share = b64_raw_decode(stanza.args[1].encode("ascii"), "an X25519 share")
        return unwrap_body(self._key, share, stanza.body,
                           lambda shared: _hkdf(shared, share + self.recipient, X25519_INFO, 32))


class Recipient(Protocol):
    """What ``encrypt`` wraps a file key for: one stanza per recipient."""

    def wrap(self, file_key: bytes, rng: Rng) -> str:
        """The stanza (text ending in LF) that wraps ``file_key``, drawing its randomness from ``rng``."""


class Identity(Protocol):
    """What ``unwrap_file_key`` tries each stanza with."""

    def unwrap(self, stanza: Stanza) -> bytes | None:
        """The file key if the stanza is for this identity, else None (a malformed stanza of its type raises)."""

    def recipient_text(self) -> str:
        """The recipient this identity answers for, as the user writes it."""


@dataclass(frozen=True)
class X25519Recipient:
    """An age X25519 recipient: the 32-byte public key."""

    key: bytes

    def wrap(self, file_key: bytes, rng: Rng) -> str:
        """One X25519 stanza for this recipient."""
        return _wrap_x25519(file_key, self.key, rng)


def _wrap_x25519(file_key: bytes, recipient: bytes, rng: Rng) -> str:
    """One X25519 stanza (text, ending in LF) wrapping ``file_key`` for ``recipient``."""
    ephemeral = X25519PrivateKey.from_private_bytes(rng(32))
    share = ephemeral.public_key().public_bytes_raw()
    try:
        shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(recipient))
    except ValueError:
        raise UsageError("a recipient is a low-order X25519 point; it is not a usable age key") from None
    wrap_key = _hkdf(shared, share + recipient, X25519_INFO, 32)
    return stanza_text(f"{X25519_TYPE} {b64_raw(share)}", wrap_key, file_key)


def _header_key(file_key: bytes) -> bytes:
    return _hkdf(file_key, None, b"header", 32)


def encrypt(plaintext: bytes, recipients: Sequence[Recipient], rng: Rng) -> bytes:
    """A binary age file of ``plaintext`` for ``recipients`` (each wraps the file key in its stanza).

    ``rng(n)`` draws the file key (16), each stanza's ephemeral secret (32) and the
    payload nonce (16), in that order. Raises ``UsageError`` for no recipient.
    """
    if not recipients:
        raise UsageError("an age file needs at least one recipient")
    file_key = rng(FILE_KEY_SIZE)
    text = VERSION_LINE + b"\n" + b"".join(r.wrap(file_key, rng).encode("ascii") for r in recipients)
    text += b"---"
    mac = hmac.digest(_header_key(file_key), text, "sha256")
    header = text + b" " + b64_raw(mac).encode("ascii") + b"\n"
    nonce = rng(_NONCE_SIZE)
    aead = ChaCha20Poly1305(_hkdf(file_key, nonce, b"payload", 32))
    chunks = [plaintext[i:i + CHUNK_SIZE] for i in range(0, len(plaintext), CHUNK_SIZE)] or [b""]
    sealed = [aead.encrypt(_chunk_nonce(i, i == len(chunks) - 1), chunk, None) for i, chunk in enumerate(chunks)]
    return header + nonce + b"".join(sealed)


def _chunk_nonce(counter: int, last: bool) -> bytes:
    return counter.to_bytes(11, "big") + (b"\x01" if last else b"\x00")


def _lines(data: bytes, max_bytes: int) -> Iterator[tuple[bytes, int]]:
    """The header's lines (without LF) with the offset after each; bounded by ``max_bytes``."""
    pos = 0
    while True:
        end = data.find(b"\n", pos, min(len(data), pos + _MAX_LINE + 1))
        if end < 0:
            raise header_failure("a line is unterminated or too long")
        if end + 1 > max_bytes:
            raise header_failure(f"the header is longer than {max_bytes} bytes")
        yield data[pos:end], end + 1
        pos = end + 1


def parse_header(data: bytes, *, max_stanzas: int, max_bytes: int) -> tuple[Header, int]:
    """Parse the header at the start of ``data``; return it and the offset of the payload.

    Raises ``HeaderDecryptionError`` for anything the ABNF of ``age.md`` does not
    allow, an unsupported version, no stanza, more than ``max_stanzas`` stanzas, a
    header over ``max_bytes``, or an ``scrypt`` stanza beside another.
    """
    lines = _lines(data, max_bytes)
    first, _ = next(lines)
    if first != VERSION_LINE:
        raise header_failure("not an age v1 file (the first line is not age-encryption.org/v1)")
    stanzas: list[Stanza] = []
    for line, offset in lines:
        if line.startswith(b"---"):
            if not line.startswith(b"--- ") or not stanzas:
                raise header_failure("the MAC line is malformed or there is no stanza")
            mac = b64_raw_decode(line[4:], "the header MAC")
            if len(mac) != 32:
                raise header_failure("the header MAC is not 32 bytes")
            _check_scrypt_alone(stanzas)
            return Header(tuple(stanzas), data[:offset - len(line) + 2], mac), offset
        if len(stanzas) >= max_stanzas:
            raise header_failure(f"more than {max_stanzas} stanzas")
        stanzas.append(_stanza(line, lines))
    raise header_failure("the header has no MAC line")  # pragma: no cover  (_lines raises at the end)


def _stanza(arg_line: bytes, lines: Iterator[tuple[bytes, int]]) -> Stanza:
    if not arg_line.startswith(b"-> "):
        raise header_failure("a line is neither a stanza nor the MAC")
    args = arg_line[3:].split(b" ")
    if not all(_ARG.fullmatch(arg) for arg in args):
        raise header_failure("a stanza argument is empty or holds a character outside VCHAR")
    body = b""
    for line, _ in lines:
        if len(line) > 64 or not _B64_BODY.fullmatch(line):
            raise header_failure("a stanza body line is too long or not base64")
        body += line
        if len(line) < 64:
            return Stanza(tuple(a.decode("ascii") for a in args), b64_raw_decode(body, "a stanza body"))
    raise header_failure("a stanza has no final short line")  # pragma: no cover


def _check_scrypt_alone(stanzas: Sequence[Stanza]) -> None:
    if len(stanzas) > 1 and any(s.args[0] == "scrypt" for s in stanzas):
        raise header_failure("an scrypt stanza must be the only stanza")


def check_x25519(stanza: Stanza) -> None:
    """An X25519 stanza's shape as the spec asks: a 32-byte share, a 32-byte body."""
    check_shape(stanza, (32,))


def unwrap_file_key(header: Header, identities: Sequence[Identity]) -> tuple[bytes, Identity]:
    """The file key and the identity that unwrapped it; ``WrongKeyError`` when no stanza is for them.

    Every X25519 stanza is checked first, whoever it is for (a malformed one fails the file).
    Then each identity tries each stanza in turn, as age's reference ``Decrypt`` does, and
    the result is age's: the first match, or the first failure (a low-order share) met
    before any match. Unlike age, the stanzas after a match are tried too (what they raise
    is ignored, as age never meets it), so the time taken does not tell which stanza (which
    listed reader) an identity answers; the work is the same bounded amount as for a wrong key.
    """
    for stanza in header.stanzas:
        if stanza.args[0] == X25519_TYPE:
            check_x25519(stanza)
    found: tuple[bytes, Identity] | None = None
    for identity in identities:
        for stanza in header.stanzas:
            try:
                file_key = identity.unwrap(stanza)
            except HeaderDecryptionError:
                if found is None:
                    raise
                continue
            if file_key is not None and found is None:
                found = (file_key, identity)
    if found is None:
        raise WrongKeyError("no identity given matches a recipient of this age file")
    return found


def check_mac(header: Header, file_key: bytes) -> None:
    """Check the header MAC under ``file_key``, in constant time; ``HeaderDecryptionError`` if it differs."""
    if not hmac.compare_digest(hmac.digest(_header_key(file_key), header.mac_input, "sha256"), header.mac):
        raise HeaderDecryptionError("the age header MAC does not match: the header was altered")


def open_payload(file_key: bytes, payload: bytes) -> Iterator[bytes]:
    """The plaintext of a STREAM payload, one chunk at a time, each yielded once it authenticates.

    A full-size chunk is tried as a middle chunk, then as the last; a shorter one only
    as the last (as age's reference reader does). Raises ``HeaderDecryptionError`` when
    the nonce is missing, ``PayloadDecryptionError`` for a chunk that does not
    authenticate, no final chunk, an empty final chunk after others, or data after the final chunk.
    """
    if len(payload) < _NONCE_SIZE:
        raise HeaderDecryptionError("the age file ends before its payload nonce")
    aead = ChaCha20Poly1305(_hkdf(file_key, payload[:_NONCE_SIZE], b"payload", 32))
    view = memoryview(payload)[_NONCE_SIZE:]
    size, pos, counter = CHUNK_SIZE + _TAG, 0, 0
    while True:
        piece = bytes(view[pos:pos + size])
        if len(piece) < _TAG:
            raise PayloadDecryptionError("the age payload is truncated: no final chunk")
        plain, last = _open_chunk(aead, counter, piece)
        if last and not plain and counter > 0:
            raise PayloadDecryptionError("the age payload ends in an empty chunk")
        yield plain
        pos += len(piece)
        if last:
            if pos != len(view):
                raise PayloadDecryptionError("the age payload has data after its final chunk")
            return
        counter += 1


def _open_chunk(aead: ChaCha20Poly1305, counter: int, piece: bytes) -> tuple[bytes, bool]:
    """(plaintext, is last) of one chunk: a full one as a middle chunk first, then as the last."""
    if len(piece) == CHUNK_SIZE + _TAG:
        try:
            return aead.decrypt(_chunk_nonce(counter, False), piece, None), False
        except InvalidTag:
            pass
    try:
        return aead.decrypt(_chunk_nonce(counter, True), piece, None), True
    except InvalidTag:
        raise PayloadDecryptionError("an age payload chunk does not authenticate") from None


def armor(data: bytes) -> str:
    """``data`` in age's ASCII armor (strict PEM, RFC 7468, 64 columns, LF line ends)."""
    text = base64.b64encode(data).decode("ascii")
    lines = [text[i:i + _ARMOR_COLUMNS] for i in range(0, len(text), _ARMOR_COLUMNS)]
    return "\n".join([_ARMOR_BEGIN, *lines, _ARMOR_END]) + "\n"


def _armor_failure(why: str) -> HeaderDecryptionError:
    return HeaderDecryptionError(f"the age armor is malformed: {why}")


def dearmor(text: str | bytes, *, max_bytes: int) -> bytes:
    """The bytes inside age's ASCII armor, read strictly (``HeaderDecryptionError`` otherwise).

    Whitespace is allowed only before the first line and after the last; lines end in
    LF or CRLF; every body line but the last holds exactly 64 characters of
    canonical, padded base64; the armored text is at most ``max_bytes`` long.
    """
    if len(text) > max_bytes:  # before any copy: a hostile manifest's envelope may be megabytes
        raise _armor_failure(f"longer than {max_bytes} bytes")
    raw = text.encode("ascii", "replace") if isinstance(text, str) else text
    lines = raw.strip(b" \t\r\n").replace(b"\r\n", b"\n").split(b"\n")
    if len(lines) < 2 or lines[0] != _ARMOR_BEGIN.encode() or lines[-1] != _ARMOR_END.encode():
        raise _armor_failure("not one AGE ENCRYPTED FILE block")
    body = lines[1:-1]
    if not body:
        return b""  # an empty file: its header then fails to parse
    if any(len(line) != _ARMOR_COLUMNS for line in body[:-1]) or not 0 < len(body[-1]) <= _ARMOR_COLUMNS:
        raise _armor_failure("a line is not 64 columns, or the last is empty or too long")
    joined = b"".join(body)
    try:
        data = base64.b64decode(joined, validate=True)
    except binascii.Error:
        raise _armor_failure("the body is not padded base64") from None
    if base64.b64encode(data) != joined:
        raise _armor_failure("the body is not canonical base64")
    return data
