"""The ``recipients`` key source: a bundle readable by a named set of age keys.

A writer gives age recipients (``age1...``); each build draws 32 fresh random bytes
of input key material (``ikm``), wraps them in a real age v1 file for every
recipient (:mod:`bundlekit.crypto.age`), and stores that file, ASCII-armored, in
``manifest["encryption"]["envelope"]`` beside the sorted list of ``recipients``.
The bundle key follows from ``ikm`` exactly as for the other sources (HKDF with the
bundle salt, the source name and the namespace), with its key id and commitment.
A reader gives an identity (``AGE-SECRET-KEY-1...``, the file ``bundlekit key new``
or ``age-keygen`` writes): it unwraps its stanza, checks the header MAC, decrypts the
32 bytes, then the commitment, all before any memory file is read. So
``age -d -i agent.key`` on the envelope prints the same ``ikm``.

Because ``ikm`` is fresh per build, dropping a recipient and rebuilding gives a
bundle that recipient cannot open; bundles already published stay readable by
whoever could read them (specs/encryption.md, "Recipients").

Identity files are foreign input: read at most ``MAX_IDENTITY_FILE`` bytes, only
from a regular file (a symlink is followed to one; a FIFO or device is refused
without blocking), and a file that others can read draws a warning. Messages name
the file and line, never a key. SSH Ed25519 keys work as age reads them (``agessh``:
``ssh-ed25519 ...`` recipients, unencrypted OpenSSH private keys as identities); other
SSH key types are refused with a message saying why.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from bundlekit._fs import create_file_bytes
from bundlekit.crypto import _bech32, age, agessh
from bundlekit.crypto._keys import (
    IDENTITY_ENV,
    KEY_SIZE,
    SCHEME,
    BundleKey,
    KeySpec,
    Rng,
    _bundle_key,
    _check_namespace,
    _parse_params,
    _verified_key,
)
from bundlekit.errors import HeaderDecryptionError, KeySourceError, ManifestError, UsageError, WrongKeyError

__all__ = [
    "IDENTITY_ENV",
    "MAX_IDENTITIES",
    "MAX_IDENTITY_FILE",
    "MAX_RECIPIENTS",
    "IdentityKey",
    "RecipientsKey",
    "identity_file_text",
    "new_identity",
    "parse_identities",
    "parse_recipient",
    "read_identity_file",
    "read_recipients_file",
    "recipient_of",
    "recipient_wrapper",
    "write_new_identity",
]

SOURCE: Final = "recipients"
RECIPIENT_HRP: Final = "age"
IDENTITY_HRP: Final = "age-secret-key-"
MAX_RECIPIENTS: Final = 256
MAX_IDENTITIES: Final = 64
MAX_IDENTITY_FILE: Final = 64 * 1024
MAX_RECIPIENTS_FILE: Final = 256 * 1024
# An armored envelope for MAX_RECIPIENTS: 22 + 256 stanzas of 110 bytes + MAC + payload, x 4/3: ~40 KiB.
MAX_ENVELOPE: Final = 128 * 1024

_SSH_WHY: Final = (
    "only ssh-ed25519 SSH keys are bundle recipients (as age reads them); give one of those, or an age key "
    "(age1...; `bundlekit key new -o FILE` makes one). specs/encryption.md, \"Recipients\", says why"
)


#: Human-readable parts of age's post-quantum and tagged recipients (C2SP/C2SP age.md): the
#: part before a Bech32 string's *last* ``1``, so an X25519 key whose data happens to begin
#: ``tag`` or ``pq`` (``age1tag9y4...``) is not mistaken for one.
_NOT_X25519_HRPS = frozenset({"age1pq", "age1tag", "age1tagpq"})


def _recipient_problem(text: str) -> str | None:
    """Why ``text`` is not a recipient bundlekit takes, or None; the text itself is never quoted.

    An X25519 recipient is lowercase, as ``age -r`` reads it (age refuses ``AGE1...`` as an
    unknown type)."""
    if text.upper().startswith("AGE-SECRET-KEY-"):
        return ("is a secret identity, not a recipient; never share it. "
                "`bundlekit key recipient FILE` prints its recipient")
    if text.startswith("AGE1"):
        return "is in uppercase; an age recipient is written in lowercase (age1...), as age reads it"
    if text.startswith(f"{agessh.STANZA_TYPE} "):
        try:
            agessh.parse_public_key(text)
        except UsageError as exc:
            return f"is not a usable ssh-ed25519 key: {exc}"
        return None
    if text.startswith(("ssh-rsa ", "ssh-dss ", "ecdsa-sha2-", "sk-")):
        return f"is an SSH key of another type. {_SSH_WHY}"
    if text.lower()[:text.rfind("1")] in _NOT_X25519_HRPS:
        return "is a post-quantum or tagged age recipient; bundlekit takes X25519 recipients (age1...) only"
    try:
        hrp, data = _bech32.decode(text)
    except UsageError:
        return "is not an age recipient (age1... in Bech32)"
    if hrp != RECIPIENT_HRP:
        return "is not an age X25519 recipient (age1...); plugin recipients are not supported"
    if len(data) != 32:
        return "is not an age X25519 recipient: its key is not 32 bytes"
    if not age.is_canonical_point(data):
        return ("is not the canonical encoding of an X25519 key (top bit set, or out of range); no identity "
                "decrypts for it (age would encrypt for it all the same)")
    if age.is_low_order(data):
        return "is a low-order X25519 point, which no one can decrypt for"
    return None


def parse_recipient(text: str, *, where: str) -> str:
    """The canonical form of a recipient; ``KeySourceError`` naming ``where`` (the text is not quoted).

    An age X25519 recipient (lowercase), or ``ssh-ed25519 BASE64`` without its comment.
    A single value given (``--recipient``, the API) may carry whitespace around it, as ``$(cat
    key.pub)`` leaves it; a file's lines may not (:func:`_key_lines`).
    """
    body = text.strip()
    problem = _recipient_problem(body)
    if problem is not None:
        raise KeySourceError(f"{where} {problem}")
    if body.startswith(f"{agessh.STANZA_TYPE} "):
        return agessh.parse_public_key(body).text
    return body


def recipient_wrapper(recipient: str) -> age.Recipient:
    """What wraps a file key for a canonical recipient (parsed first by :func:`parse_recipient`)."""
    if recipient.startswith(f"{agessh.STANZA_TYPE} "):
        return agessh.parse_public_key(recipient)
    return age.X25519Recipient(_bech32.decode(recipient)[1])


def read_recipients_file(path: str | os.PathLike[str]) -> list[str]:
    """The recipients in ``path``: one per line, ``#`` comments and blank lines skipped (as ``age -R``).

    ``KeySourceError`` (exit 2) naming the file and the line that does not parse,
    for an unreadable or oversized file, or for a file with no recipient.
    """
    name = Path(path).name
    data = _read_bounded(Path(path), MAX_RECIPIENTS_FILE, "recipients file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise KeySourceError(f"the recipients file {name} is not UTF-8 text") from None
    where = f"the recipients file {name}"
    found = [parse_recipient(line, where=f"{where} line {number}") for number, line in _key_lines(text, where)]
    if not found:
        raise KeySourceError(f"the recipients file {name} lists no recipient; add age1... lines")
    return found


def _key_lines(text: str, where: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of a recipients or identity file, as age reads one: lines end in LF (a CR
    before it is dropped), a line that is empty or starts with ``#`` is skipped, and a line with
    whitespace around it is refused (``KeySourceError`` naming ``where`` and the line), as age does,
    so a file one tool reads the other reads too."""
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r")
        if line != line.strip():
            raise KeySourceError(f"{where} line {number} has whitespace around it; age reads each line "
                                 "exactly as written, so remove it")
        if line and not line.startswith("#"):
            yield number, line


def _read_bounded(path: Path, limit: int, what: str, warn: Callable[[str], None] | None = None) -> bytes:
    """At most ``limit`` bytes of a regular file (a FIFO or device is refused without blocking)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise KeySourceError(f"cannot read the {what} {path}: {exc.strerror}; check the path") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeySourceError(f"the {what} {path} is not a regular file; give the file itself")
        if info.st_size > limit:
            raise KeySourceError(f"the {what} {path} is {info.st_size} bytes, over the limit of {limit}")
        if warn is not None and info.st_mode & 0o077:
            warn(f"the {what} {path} can be read by other users (mode {stat.S_IMODE(info.st_mode):o}); "
                 f"run: chmod 600 {path}")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise KeySourceError(f"cannot read the {what} {path}: {exc.strerror}") from exc
    finally:
        os.close(fd)
    if len(data) > limit:
        raise KeySourceError(f"the {what} {path} is over the limit of {limit} bytes")
    return data


def _identity_problem(line: str) -> str:
    """Why a line of an identity file is not an X25519 identity (the line is never quoted)."""
    if line.startswith("-----BEGIN"):
        return ("starts a PEM block that is not an OpenSSH private key; give an age identity file or an "
                "OpenSSH ssh-ed25519 key (a whole file of its own)")
    if line.startswith("AGE-PLUGIN-"):
        return "is an age plugin identity; plugins are not supported"
    if line.startswith("AGE-SECRET-KEY-PQ-"):
        return "is a post-quantum age identity; bundlekit takes X25519 identities (AGE-SECRET-KEY-1...) only"
    if line.lower().startswith("age1"):
        return "is a recipient (a public key), not an identity; give the file `bundlekit key new` wrote"
    return "is not an age identity (AGE-SECRET-KEY-1... in uppercase Bech32)"


def parse_identities(text: str, *, where: str) -> list[age.Identity]:
    """The identities in an identity file's text: an OpenSSH ssh-ed25519 private key (the whole
    text), or age X25519 identities, one a line (``#`` comments and blank lines skipped).

    ``KeySourceError`` naming ``where`` and the line for a line that is not one, for no
    identity, or for more than ``MAX_IDENTITIES``. A key is never quoted.
    """
    if text.lstrip().startswith("-----BEGIN OPENSSH PRIVATE KEY-----"):
        return [agessh.parse_private_key(text, where=where)]
    found: list[age.Identity] = []
    for number, line in _key_lines(text, where):
        identity = _identity(line)
        if identity is None:
            raise KeySourceError(f"{where} line {number} {_identity_problem(line)}")
        if len(found) == MAX_IDENTITIES:
            raise KeySourceError(f"{where} holds more than {MAX_IDENTITIES} identities")
        found.append(identity)
    if not found:
        raise KeySourceError(f"{where} holds no age identity (AGE-SECRET-KEY-1...)")
    return found


def _identity(line: str) -> age.Identity | None:
    if not line.startswith("AGE-SECRET-KEY-1") or line.upper() != line:
        return None
    try:
        hrp, data = _bech32.decode(line)
    except UsageError:
        return None
    return age.X25519Identity(data) if hrp == IDENTITY_HRP and len(data) == 32 else None


def read_identity_file(
    path: str | os.PathLike[str], *, warn: Callable[[str], None] | None = None
) -> list[age.Identity]:
    """The identities in the file at ``path`` (see the module's rules); ``warn`` hears of loose permissions."""
    data = _read_bounded(Path(path), MAX_IDENTITY_FILE, "identity file", warn)
    name = Path(path).name
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise KeySourceError(f"the identity file {name} is not ASCII text, so not an identity file") from None
    return parse_identities(text, where=f"the identity file {name}")


def new_identity(rng: Rng = os.urandom) -> age.X25519Identity:
    """A fresh X25519 identity from 32 random bytes."""
    return age.X25519Identity(rng(32))


def recipient_of(identity: age.Identity) -> str:
    """The recipient of ``identity``: ``age1...``, or ``ssh-ed25519 ...`` for an SSH key."""
    return identity.recipient_text()


def identity_file_text(identity: age.X25519Identity, *, now: datetime | None = None) -> str:
    """An identity file as ``age-keygen`` writes it: two comment lines, then the key."""
    when = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    secret = _bech32.encode(IDENTITY_HRP, identity.secret_bytes(), upper=True)
    return f"# created: {when}\n# public key: {recipient_of(identity)}\n{secret}\n"


def write_new_identity(path: str | os.PathLike[str], rng: Rng = os.urandom) -> str:
    """Make an identity, write it to a new file at ``path`` (mode 0600), return its recipient.

    Never replaces a file already there (``KeySourceError``: pick another name or remove it).
    """
    identity = new_identity(rng)
    create_file_bytes(path, identity_file_text(identity).encode("ascii"), error=KeySourceError, mode=0o600,
                      exists_hint="an identity file is never replaced; choose a new name")
    return recipient_of(identity)


class RecipientsKey(KeySpec):
    """Encrypt for a set of age recipients (``age1...``): a fresh key per bundle, wrapped for each.

    ``recipients`` are checked (``KeySourceError``), de-duplicated and sorted; at most
    ``MAX_RECIPIENTS``. This key only encrypts: a bundle is opened with an :class:`IdentityKey`.
    """

    source = SOURCE
    fresh_per_bundle = True

    def __init__(self, recipients: Iterable[str]) -> None:
        listed = sorted({parse_recipient(r, where="a recipient") for r in recipients})
        if not listed:
            raise KeySourceError("give at least one recipient (--recipient age1... or --recipients-file FILE)")
        if len(listed) > MAX_RECIPIENTS:
            raise KeySourceError(f"{len(listed)} recipients, over the limit of {MAX_RECIPIENTS}")
        self.recipients: tuple[str, ...] = tuple(listed)

    def new_bundle_key(self, namespace: str, rng: Rng = os.urandom) -> tuple[BundleKey, dict[str, Any]]:
        """A fresh bundle key and ``manifest["encryption"]``, with the envelope for every recipient."""
        ns = _check_namespace(namespace)
        salt, ikm = rng(32), rng(KEY_SIZE)
        if len(salt) != 32 or len(ikm) != KEY_SIZE:
            raise UsageError("internal: the random source returned the wrong number of bytes")
        envelope = age.armor(age.encrypt(ikm, [recipient_wrapper(r) for r in self.recipients], rng))
        key = _bundle_key(ikm, salt, SOURCE, ns)
        return key, {
            "scheme": SCHEME, "key_source": SOURCE, "kdf": {"name": "hkdf-sha256"}, "salt": salt.hex(),
            "key_id": key.key_id.hex(), "commitment": key.commitment().hex(),
            "recipients": list(self.recipients), "envelope": envelope,
        }

    def open_bundle_key(self, params: Mapping[str, Any], namespace: str) -> BundleKey:
        raise KeySourceError("recipients encrypt a bundle; to open one give --identity-file FILE "
                             f"or ${IDENTITY_ENV} (the identity of one recipient)")

    def _ikm(self, namespace: str, salt: bytes, kdf: Mapping[str, Any]) -> bytes:
        raise UsageError("internal: a recipients key draws its key material in new_bundle_key")


class IdentityKey(KeySpec):
    """Open a recipients bundle with age identities (``AGE-SECRET-KEY-1...``).

    ``open_bundle_key`` unwraps the envelope: ``WrongKeyError`` (exit 3) when no
    identity matches a stanza, ``HeaderDecryptionError`` (exit 3) for an envelope
    that is malformed, over its bounds, altered, or inconsistent with the listed
    recipients, ``ManifestError`` for a malformed recipients list. It re-encrypts
    (``new_bundle_key``, as ``merge`` and ``sync`` do) for the recipients that every
    bundle it opened lists.
    """

    source = SOURCE
    fresh_per_bundle = True

    def __init__(self, identities: Sequence[age.Identity]) -> None:
        if not identities:
            raise KeySourceError("give an identity: --identity-file FILE")
        self._identities = tuple(identities)
        self._opened: set[tuple[str, ...]] = set()

    def open_bundle_key(self, params: Mapping[str, Any], namespace: str) -> BundleKey:
        ns = _check_namespace(namespace)
        salt, _, key_id, commitment = _parse_params(params)
        if params["key_source"] != SOURCE:
            raise KeySourceError(
                f"this bundle was encrypted with a {params['key_source']} key, not for recipients; give that "
                f"key's option (an identity, from --identity-file or ${IDENTITY_ENV}, opens recipients bundles only)"
            )
        recipients = _listed_recipients(params["recipients"])
        ikm = self._unwrap(params["envelope"], recipients)
        key = _verified_key(_bundle_key(ikm, salt, SOURCE, ns), key_id, commitment, "identity")
        self._opened.add(recipients)
        return key

    def _unwrap(self, envelope: object, recipients: tuple[str, ...]) -> bytes:
        """The 32 bytes in the envelope, for the identity that opens it (which must be listed)."""
        if not isinstance(envelope, str):
            raise ManifestError("manifest encryption.envelope must be a string (an armored age file)")
        data = age.dearmor(envelope, max_bytes=MAX_ENVELOPE)
        header, offset = age.parse_header(data, max_stanzas=MAX_RECIPIENTS, max_bytes=MAX_ENVELOPE)
        stanzas = _known_stanzas(header)
        if len(stanzas) != len(recipients) or len({s.args[-1] for s in stanzas}) != len(stanzas):
            raise HeaderDecryptionError(
                f"the recipients envelope holds {len(stanzas)} distinct recipient stanzas for {len(recipients)} "
                "listed recipients; the bundle is damaged or forged"
            )
        try:
            file_key, identity = age.unwrap_file_key(header, self._identities)
        except WrongKeyError:
            raise WrongKeyError(
                f"no identity given is a recipient of this bundle (it is encrypted for {len(recipients)}); "
                "ask its publisher to add yours (`bundlekit key recipient FILE` prints it) and rebuild"
            ) from None
        age.check_mac(header, file_key)
        if recipient_of(identity) not in recipients:
            raise HeaderDecryptionError(
                "the envelope opens for this identity, but the manifest does not list its recipient: "
                "the bundle's list of readers is false; do not trust it"
            )
        plain = b"".join(age.open_payload(file_key, data[offset:]))
        if len(plain) != KEY_SIZE:
            raise HeaderDecryptionError(f"the recipients envelope holds {len(plain)} bytes, not a 32-byte key")
        return plain

    def new_bundle_key(self, namespace: str, rng: Rng = os.urandom) -> tuple[BundleKey, dict[str, Any]]:
        """Encrypt anew (a merge, a sync) for the recipients every bundle this key opened lists.

        The intersection never widens who can read: a reader removed in any of the
        bundles stays removed. ``UsageError`` when nothing was opened, nobody is in all, or
        none of the identities held is in all (bundles opened by different identities of
        one file: the new bundle would lock its own writer out).
        """
        readers = set.intersection(*(set(r) for r in self._opened)) if self._opened else set()
        if not readers:
            raise UsageError(
                "an identity opens bundles but names no readers for a new one: build or pin it with "
                "--recipient age1... (no recipients bundle was opened, or the ones opened share no recipient)"
            )
        if not readers & {recipient_of(identity) for identity in self._identities}:
            raise UsageError(
                "the bundles opened share readers, but none of your identities is among them, so the new "
                "bundle would lock you out of it; build or pin it with --recipient age1... (yours among them)"
            )
        return RecipientsKey(readers).new_bundle_key(namespace, rng)

    def _ikm(self, namespace: str, salt: bytes, kdf: Mapping[str, Any]) -> bytes:
        raise UsageError("internal: an identity unwraps its key material in open_bundle_key")


def _known_stanzas(header: age.Header) -> list[age.Stanza]:
    """The X25519 and ssh-ed25519 stanzas, each checked (``HeaderDecryptionError``); others are ignored."""
    found = []
    for stanza in header.stanzas:
        if stanza.args[0] == age.X25519_TYPE:
            age.check_x25519(stanza)
        elif stanza.args[0] == agessh.STANZA_TYPE:
            agessh.check_stanza(stanza)
        else:
            continue
        found.append(stanza)
    return found


def _canonical(value: object) -> bool:
    if not isinstance(value, str) or len(value) > 200:
        return False
    try:
        return parse_recipient(value, where="") == value
    except KeySourceError:
        return False


def _listed_recipients(value: object) -> tuple[str, ...]:
    """The manifest's recipients: 1 to ``MAX_RECIPIENTS`` canonical ``age1`` strings, sorted, unique."""
    if not isinstance(value, list) or not 0 < len(value) <= MAX_RECIPIENTS:
        raise ManifestError(f"manifest encryption.recipients must list 1 to {MAX_RECIPIENTS} recipients")
    if not all(_canonical(r) for r in value):
        raise ManifestError("manifest encryption.recipients holds an entry that is not a canonical recipient")
    if value != sorted(set(value)):
        raise ManifestError("manifest encryption.recipients must be sorted and without repeats")
    return tuple(value)

