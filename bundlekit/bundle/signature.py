"""Signed manifests: ``signature.json`` beside ``manifest.json`` at a bundle's root.

The signer signs one fixed, versioned text that names the manifest's CID
(``manifest_message``)::

    bundlekit manifest signature v1
    manifest: <manifest CID, CIDv1 base32>

``signature.json`` (canonical JSON, ``specs/provenance.md``) holds ``format``
(``bundlekit-signature/1``), ``signer`` (an Ethereum address for ``eip191``, an
Ed25519 ``did:key`` for ``ed25519``), ``scheme``, ``manifest`` (the CID),
``message`` (the exact text signed) and ``signature`` (``0x`` + hex). Because
the message names the manifest's CID, a signature moved onto another
manifest no longer covers it; because the root directory links both files,
the bundle's root CID covers the signature too.

``check_signature`` is what a loader runs before it fetches a memory file:
an invalid signature is always an error; with ``publishers`` an unsigned
bundle or one signed by anybody else is refused too (``SignatureError``, exit 3).

Who signs comes from the key options (``bundle.keyoptions.KeyOptions``):
``manifest_signer`` reads the one option into a signer, and ``build_keys`` /
``publish_keys`` hold the rules of which options go together when a bundle
is built or published (signed, encrypted, both), for the CLI, the MCP server
and the Python API alike.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bundlekit.bundle.keyoptions import KeyOptions, key_spec
from bundlekit.bundle.manifest import canonical_json
from bundlekit.crypto._keys import KeySpec, parse_signature_hex
from bundlekit.crypto.signing import Ed25519Signer, EthSigner, Signer, is_identity, verify_signature
from bundlekit.errors import CIDError, KeySourceError, SignatureError, UsageError
from bundlekit.ipld.cid import cid_from_text, cid_to_str

__all__ = [
    "MESSAGE_PREFIX",
    "SIGNATURE_FORMAT",
    "SIGNATURE_NAME",
    "BundleKeys",
    "ExternalSignature",
    "build_keys",
    "check_publishers",
    "check_signature",
    "external_signature",
    "manifest_message",
    "manifest_signer",
    "parse_publishers",
    "publish_keys",
    "sign_manifest",
    "signature_document",
    "verify_signature_file",
]

SIGNATURE_NAME: Final = "signature.json"
SIGNATURE_FORMAT: Final = "bundlekit-signature/1"
MESSAGE_PREFIX: Final = "bundlekit manifest signature v1\nmanifest: "
MAX_SIGNATURE_BYTES: Final = 16 * 1024
_SCHEMES: Final = ("eip191", "ed25519")


def manifest_message(manifest_cid: bytes | str) -> str:
    """The exact text a publisher signs for the manifest ``manifest_cid`` (its CIDv1 text)."""
    text = manifest_cid if isinstance(manifest_cid, str) else cid_to_str(manifest_cid)
    try:
        canonical = cid_to_str(cid_from_text(text))
    except CIDError as exc:
        raise UsageError(f"{text[:80]!r} is not a CID; give the manifest CID `bundlekit build --json` prints") from exc
    return MESSAGE_PREFIX + canonical


def _document(manifest_cid: bytes, signer: str, scheme: str, signature: bytes) -> bytes:
    return canonical_json({
        "format": SIGNATURE_FORMAT,
        "signer": signer,
        "scheme": scheme,
        "manifest": cid_to_str(manifest_cid),
        "message": manifest_message(manifest_cid),
        "signature": "0x" + signature.hex(),
    })


@dataclass(frozen=True)
class ExternalSignature:
    """An EIP-191 signature of :func:`manifest_message` made elsewhere (a hardware wallet) by ``signer``."""

    signer: str
    signature: bytes

    def __repr__(self) -> str:
        return f"ExternalSignature({self.signer})"


def signature_document(manifest_cid: bytes, sign: Signer | ExternalSignature) -> bytes:
    """``signature.json`` for the manifest ``manifest_cid``: signed now, or an external signature checked."""
    if isinstance(sign, ExternalSignature):
        return external_signature(manifest_cid, sign.signature, sign.signer)
    return sign_manifest(manifest_cid, sign)


def sign_manifest(manifest_cid: bytes, signer: Signer) -> bytes:
    """The ``signature.json`` bytes of ``signer``'s signature over the manifest ``manifest_cid``."""
    message = manifest_message(manifest_cid).encode("utf-8")
    return _document(manifest_cid, signer.identity, signer.scheme, signer.sign(message))


def external_signature(manifest_cid: bytes, signature: bytes, signer: str) -> bytes:
    """``signature.json`` for an EIP-191 signature made elsewhere (a hardware wallet) by the address ``signer``.

    Raises ``SignatureError`` unless ``signature`` is ``signer``'s signature of
    :func:`manifest_message` for this manifest (a signature of another
    manifest's message, or by another key, is refused before anything is written).
    """
    message = manifest_message(manifest_cid)
    if not verify_signature(signer, message.encode("utf-8"), signature):
        raise SignatureError(
            f"the signature does not verify as {signer}'s signature of the message for manifest "
            f"{cid_to_str(manifest_cid)}; sign the text `bundlekit key message --manifest "
            f"{cid_to_str(manifest_cid)}` prints"
        )
    return _document(manifest_cid, signer, "eip191", signature)


def verify_signature_file(data: bytes, manifest_cid: bytes) -> str:
    """Check ``signature.json`` bytes against the manifest it sits beside; return the signer.

    Raises ``SignatureError`` when the file is malformed, names another
    manifest, carries another message, or its signature does not verify.
    """
    doc = _parse(data)
    named = doc["manifest"]
    try:
        covered = cid_from_text(named)
    except CIDError:
        covered = b""
    if covered != manifest_cid:
        raise SignatureError(
            f"{SIGNATURE_NAME} covers manifest {named[:80]!r}, but this bundle's manifest is "
            f"{cid_to_str(manifest_cid)}: the signature was moved from another bundle; refusing it"
        )
    if doc["message"] != manifest_message(manifest_cid):
        raise SignatureError(f"{SIGNATURE_NAME} carries a message other than the one for its manifest; refusing it")
    try:
        signature = bytes.fromhex(doc["signature"].removeprefix("0x"))
    except ValueError:
        raise SignatureError(f"{SIGNATURE_NAME}: 'signature' is not hex") from None
    if not verify_signature(doc["signer"], doc["message"].encode("utf-8"), signature):
        raise SignatureError(
            f"{SIGNATURE_NAME}: the signature is not {doc['signer']}'s signature of manifest "
            f"{cid_to_str(manifest_cid)} (tampered or made by another key); refusing the bundle"
        )
    signer: str = doc["signer"]
    return signer


def _parse(data: bytes) -> dict[str, Any]:
    if len(data) > MAX_SIGNATURE_BYTES:
        raise SignatureError(f"{SIGNATURE_NAME} is {len(data)} bytes, over the {MAX_SIGNATURE_BYTES}-byte limit")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise SignatureError(f"{SIGNATURE_NAME} is not UTF-8 JSON") from None
    if not isinstance(doc, dict) or doc.get("format") != SIGNATURE_FORMAT:
        raise SignatureError(f"{SIGNATURE_NAME} is not a {SIGNATURE_FORMAT} document")
    for name in ("signer", "scheme", "manifest", "message", "signature"):
        if not isinstance(doc.get(name), str):
            raise SignatureError(f"{SIGNATURE_NAME}: field {name!r} is missing or not a string")
    scheme = doc["scheme"]
    if scheme not in _SCHEMES:
        raise SignatureError(f"{SIGNATURE_NAME}: unknown scheme {scheme[:40]!r}; expected eip191 or ed25519")
    if (scheme == "eip191") != doc["signer"].startswith("0x") or not is_identity(doc["signer"]):
        raise SignatureError(f"{SIGNATURE_NAME}: signer {doc['signer'][:80]!r} is not a {scheme} identity")
    return doc


def parse_publishers(publishers: Iterable[str]) -> list[str]:
    """The ``--publisher`` identities, checked; ``UsageError`` for one that is neither an address nor a did:key."""
    out = []
    for publisher in publishers:
        text = publisher.strip()
        if not is_identity(text):
            raise UsageError(
                f"publisher {text[:80]!r} is neither an Ethereum address (0x + 40 hex) nor an Ed25519 did:key"
            )
        out.append(text)
    return out


def check_publishers(signer: str | None, publishers: Iterable[str], where: str) -> None:
    """Refuse (``SignatureError``) an unsigned bundle, or one whose signer is not among ``publishers``.

    Ethereum addresses compare without regard to case (EIP-55 is a checksum of the same address).
    """
    wanted = parse_publishers(publishers)
    if not wanted:
        return
    if signer is None:
        raise SignatureError(f"{where} is not signed, but a publisher was required ({', '.join(wanted)}); "
                             "refusing it")
    if not any(signer == w or (signer.startswith("0x") and signer.lower() == w.lower()) for w in wanted):
        raise SignatureError(f"{where} is signed by {signer}, not by {' or '.join(wanted)}; refusing it")


def check_signature(
    entries: Mapping[str, bytes],
    read: Callable[[bytes], bytes],
    manifest_cid: bytes,
    publishers: Iterable[str],
    where: str,
) -> str | None:
    """The verified signer of a bundle root (``entries``: name -> CID), or None when it is unsigned.

    ``read(cid)`` returns a file's verified bytes. Raises ``SignatureError``
    for an invalid signature, and, when ``publishers`` is not empty, for an
    unsigned bundle or another signer. Runs before any memory file is read.
    """
    wanted = list(publishers)
    cid = entries.get(SIGNATURE_NAME)
    signer = None if cid is None else verify_signature_file(read(cid), manifest_cid)
    check_publishers(signer, wanted, where)
    return signer



def manifest_signer(
    options: KeyOptions,
    *,
    sign: bool,
    signer_address: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Signer | ExternalSignature | None:
    """The manifest's signer (``sign``) from the one key option, or ``None`` without ``sign``.

    ``private_key_env`` gives an EIP-191 signer, ``key_file`` an Ed25519 PEM key (did:key),
    ``signature_file`` with ``signer_address`` a signature made elsewhere. Secrets are read,
    never shown. ``UsageError`` for options that do not go together, ``KeySourceError``
    for a variable or file that holds no key.
    """
    if not sign:
        if signer_address is not None:
            raise UsageError("--signer goes with --sign --signature-file; add --sign")
        return None
    options.one()  # more than one key option: UsageError
    if options.private_key_env:
        var = options.private_key_env
        value = (os.environ if environ is None else environ).get(var, "").strip()
        if not value:
            raise KeySourceError(f"environment variable {var} is not set or empty; export the private key in it")
        return EthSigner(value)
    if options.key_file:
        return Ed25519Signer.from_file(options.key_file)
    if options.signature_file:
        if not signer_address:
            raise UsageError("--signature-file with --sign needs --signer ADDRESS: the address that signed")
        path = Path(options.signature_file)
        try:
            with open(path, encoding="ascii", errors="replace") as fh:
                text = fh.read(4096)  # the first 4096 characters, never a whole wrong, huge file
        except OSError as exc:
            raise KeySourceError(f"cannot read {path}: {exc.strerror}; check the path") from exc
        return ExternalSignature(signer_address.strip(), parse_signature_hex(text, where=path.name))
    raise UsageError("--sign needs --private-key-env VAR, an Ed25519 --key-file, or --signature-file with --signer")


@dataclass(frozen=True)
class BundleKeys:
    """What the key options make of a new bundle: its manifest's signer and its encryption key (each optional)."""

    signer: Signer | ExternalSignature | None
    key: KeySpec | None


def build_keys(
    options: KeyOptions,
    *,
    sign: bool,
    encrypt: bool,
    signer_address: str | None = None,
    compat: str | None = None,
    environ: Mapping[str, str] | None = None,
    warn: Callable[[str], None] | None = None,
) -> BundleKeys:
    """The signer and key of ``bundlekit build``: the key option encrypts with ``encrypt``, signs with ``sign``.

    Signing and encrypting together takes ``private_key_env``, the one option that
    does both. A key option without ``encrypt`` (unless it signs), ``encrypt`` without
    one and ``compat`` without ``encrypt`` are ``UsageError``; the signer is read
    first, then the key (a weak passphrase is handed to ``warn``, see ``key_spec``).
    """
    if options.recipients_given():
        if compat is not None:
            raise UsageError(f"--compat {compat} takes a wallet key option, not --recipient")
        return _recipients_keys(options, sign=sign, signer_address=signer_address, environ=environ, warn=warn)
    signer = manifest_signer(options, sign=sign, signer_address=signer_address, environ=environ)
    if sign and encrypt and not options.private_key_env:
        raise UsageError("--sign with --encrypt needs --private-key-env: the one key option both signs and encrypts")
    key = key_spec(options, environ=environ, new_key=True, warn=warn) if encrypt or not sign else None
    if encrypt and key is None:
        raise UsageError("--encrypt needs a key option (--signature-env, --passphrase-env, --key-file, ...)")
    if key is not None and not encrypt:
        raise UsageError("a key option was given without --encrypt; add --encrypt to build an encrypted bundle")
    if compat is not None and not encrypt:
        raise UsageError(f"--compat {compat} is an encrypted form; add --encrypt and a wallet key option")
    return BundleKeys(signer, key)


def publish_keys(
    options: KeyOptions,
    *,
    sign: bool,
    signer_address: str | None = None,
    environ: Mapping[str, str] | None = None,
    warn: Callable[[str], None] | None = None,
) -> BundleKeys:
    """The signer and key of ``bundlekit pin``: with ``sign`` the key option signs, else it encrypts (if any).

    Recipients always encrypt; with them, the other key option (if any) signs.
    """
    if options.recipients_given():
        return _recipients_keys(options, sign=sign, signer_address=signer_address, environ=environ, warn=warn)
    signer = manifest_signer(options, sign=sign, signer_address=signer_address, environ=environ)
    key = None if sign else key_spec(options, environ=environ, new_key=True, warn=warn)
    return BundleKeys(signer, key)


def _recipients_keys(
    options: KeyOptions,
    *,
    sign: bool,
    signer_address: str | None,
    environ: Mapping[str, str] | None,
    warn: Callable[[str], None] | None,
) -> BundleKeys:
    """Recipients encrypt (their keys are public, no secret of the writer's); with ``sign`` the
    other key option signs (``--sign-key``, ``--private-key-env``, ``--signature-file --signer``).
    Without ``sign`` another key option beside them is a ``UsageError``."""
    rest = options.without_recipients()
    if not sign and rest.given():
        raise UsageError(f"{rest.flags()[0]} and --recipient cannot be combined; recipients are the one key "
                         "that encrypts (with --sign, the other option signs)")
    signer = manifest_signer(rest, sign=sign, signer_address=signer_address, environ=environ)
    return BundleKeys(signer, key_spec(options.only_recipients(), environ=environ, new_key=True, warn=warn))
