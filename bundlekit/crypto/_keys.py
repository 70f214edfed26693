"""Key sources for encrypted bundles: wallet signature, passphrase, raw key file.

Every source yields a 32-byte *bundle key* through the same last step::

    bundle_key = HKDF-SHA256(ikm, salt = manifest salt (32 random bytes),
                             info = "bundlekit-enc/1 bundle key" 0x00 source 0x00 namespace)

where ``ikm`` is the normalised 65-byte signature, the scrypt output of the
passphrase, or the raw key. The random salt makes every bundle's key (and so its
key id) unique even when the same secret is reused, which is what makes a
ciphertext moved to another bundle fail.

From the bundle key come a non-secret *key id* (16 bytes, bound into every
file's associated data) and a *key commitment* (32 bytes, stored in the
manifest and compared in constant time) so a wrong key fails fast with
``WrongKeyError`` before any file is decrypted. ``manifest["encryption"]`` is
the dict :meth:`KeySpec.new_bundle_key` returns; its exact shape is in
specs/encryption.md, "Manifest parameters".

Nothing here ever puts a secret in a message or a ``repr``.
"""

from __future__ import annotations

import hmac
import os
import sys
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

from bundlekit._lazy import extra_install_line, lazy_module
from bundlekit.crypto._hmac import hmac_pads, hmac_sha256, hmac_with
from bundlekit.errors import KeySourceError, ManifestError, UsageError, WrongKeyError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.kdf import scrypt
else:  # imported when a passphrase is stretched (DEVELOPERS.md, "Lazy imports": a build without one never does)
    scrypt = lazy_module("cryptography.hazmat.primitives.kdf.scrypt")

__all__ = [
    "COMMITMENT_SIZE",
    "KEY_ID_SIZE",
    "KEY_SIZE",
    "PASSPHRASE_MIN_CHARS",
    "SALT_SIZE",
    "SCHEME",
    "SCRYPT_DEFAULT_N",
    "SCRYPT_MAX_N",
    "SCRYPT_MIN_N",
    "SIGNATURE_MESSAGE_PREFIX",
    "BundleKey",
    "KeySpec",
    "PassphraseKey",
    "PrivateKeySigner",
    "RawKeyFile",
    "Rng",
    "SignatureKey",
    "eth_account_api",
    "normalize_signature",
    "parse_key_file",
    "parse_signature_hex",
    "signature_message",
    "weak_passphrase",
]

Rng = Callable[[int], bytes]

SCHEME: Final = "bundlekit-enc/1"
SIGNATURE_MESSAGE_PREFIX: Final = "bundlekit memory key v1\nnamespace: "
KEY_SIZE: Final = 32
SALT_SIZE: Final = 32
KEY_ID_SIZE: Final = 16
COMMITMENT_SIZE: Final = 32
SIGNATURE_SIZE: Final = 65
#: The variable holding an age identity itself (``crypto.recipients``' key that opens); here so a build that names
#: no key reads it without importing the recipients source (``bundle.keyoptions``, DEVELOPERS.md "Lazy imports").
IDENTITY_ENV: Final = "BUNDLEKIT_IDENTITY"

# scrypt: r and p are fixed so the work is one number; N is bounded on read so a
# hostile manifest can make the derivation neither trivial (N too small) nor a
# memory bomb (128 * N * r bytes: 32 MiB at the floor, 1 GiB at the ceiling).
SCRYPT_DEFAULT_N: Final = 2**17
SCRYPT_MIN_N: Final = 2**15
SCRYPT_MAX_N: Final = 2**20
SCRYPT_R: Final = 8
SCRYPT_P: Final = 1

# The shortest passphrase bundlekit encrypts with without a warning (characters after NFC).
# Whoever holds a bundle can guess offline without limit; scrypt makes each guess cost, but a
# short passphrase still falls to a search. Readers never check it (old bundles still open).
PASSPHRASE_MIN_CHARS: Final = 12

_INFO_BUNDLE_KEY: Final = b"bundlekit-enc/1 bundle key"
_INFO_KEY_ID: Final = b"bundlekit-enc/1 key id"
_INFO_COMMITMENT: Final = b"bundlekit-enc/1 key commitment"
_INFO_FILE: Final = b"bundlekit-enc/1 file"
_INFO_REUSE: Final = b"bundlekit-enc/1 build cache"

# secp256k1 group order: a signature's s and n - s are both valid, so the
# low-s form is the one canonical representative (EIP-2).
_SECP256K1_N: Final = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141

_WALLET_HINT: Final = f"install the wallet extra: {extra_install_line('wallet')}"


def _hkdf(ikm: bytes, salt: bytes | None, info: bytes, length: int) -> bytes:
    """HKDF-SHA-256 (RFC 5869), extract then expand, on the standard library's HMAC.

    The two-step RFC construction over ``hmac.digest`` costs a few microseconds,
    several times less than building a ``cryptography`` HKDF object, and it runs
    once per file; tests check it against ``cryptography``'s HKDF.
    """
    if length > 255 * 32:
        raise UsageError("internal: HKDF-SHA-256 output is limited to 8160 bytes")
    prk = hmac.digest(salt or bytes(32), ikm, "sha256")
    out = b""
    block = b""
    counter = 1
    while len(out) < length:
        block = hmac.digest(prk, block + info + bytes([counter]), "sha256")
        out += block
        counter += 1
    return out[:length]


def _check_namespace(namespace: str) -> bytes:
    """Return the namespace's UTF-8 bytes; refuse what would make the signed message ambiguous."""
    if not isinstance(namespace, str) or not namespace:
        raise UsageError("an encrypted bundle needs a non-empty namespace; pass one with --namespace")
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in namespace):
        raise UsageError(
            "the namespace contains a control character or lone surrogate; use printable text only"
        )
    return namespace.encode("utf-8")


def signature_message(namespace: str) -> str:
    """The exact text a wallet signs (EIP-191 personal_sign) to key a bundle of ``namespace``.

    ``"bundlekit memory key v1\\nnamespace: " + namespace``, no trailing newline.
    Raises ``UsageError`` for an empty namespace or one with control characters.
    """
    _check_namespace(namespace)
    return SIGNATURE_MESSAGE_PREFIX + namespace


def normalize_signature(sig: bytes) -> bytes:
    """Return the canonical 65-byte ``r || s || v`` form of a secp256k1 signature.

    ``v`` 0/1 becomes 27/28, and a high ``s`` becomes ``n - s`` with ``v``
    flipped, so every encoding a wallet may produce of one signature derives the
    same key. Raises ``KeySourceError`` if ``sig`` is not exactly 65 bytes, ``v``
    is not 0, 1, 27 or 28, or ``r`` or ``s`` is out of range.
    """
    if len(sig) != SIGNATURE_SIZE:
        raise KeySourceError(
            f"a wallet signature must be exactly 65 bytes (r, s, v); got {len(sig)} bytes. "
            "Give the full personal_sign output as hex"
        )
    r = int.from_bytes(sig[:32], "big")
    s = int.from_bytes(sig[32:64], "big")
    v = sig[64]
    if v in (0, 1):
        v += 27
    if v not in (27, 28):
        raise KeySourceError("the wallet signature's recovery byte v is not 0, 1, 27 or 28; check the signer")
    if not (0 < r < _SECP256K1_N and 0 < s < _SECP256K1_N):
        raise KeySourceError("the wallet signature's r or s is out of range; it is not a secp256k1 signature")
    if s > _SECP256K1_N // 2:
        s = _SECP256K1_N - s
        v = 55 - v  # 27 <-> 28: negating s negates the recovered point's parity
    return r.to_bytes(32, "big") + s.to_bytes(32, "big") + bytes([v])


def parse_signature_hex(text: str, *, where: str) -> bytes:
    """Parse a signature written as hex, with or without ``0x``, surrounding whitespace ignored.

    ``where`` names the source (``"$SIG"``, a file name) for the error message; the
    text itself never appears in it. Returns the normalised 65 bytes. Raises
    ``KeySourceError`` for non-hex text or a wrong length.
    """
    body = text.strip()
    if body[:2] in ("0x", "0X"):
        body = body[2:]
    try:
        raw = bytes.fromhex(body)
    except ValueError:
        raise KeySourceError(
            f"the signature in {where} is not hex; give the 65-byte signature as 130 hex digits, 0x optional"
        ) from None
    if len(raw) != SIGNATURE_SIZE:
        raise KeySourceError(
            f"the signature in {where} is {len(raw)} bytes, not 65; give the full personal_sign output"
        )
    return normalize_signature(raw)


def parse_key_file(data: bytes, *, where: str) -> bytes:
    """Parse a key file: exactly 32 raw bytes, or 64 hex digits (surrounding whitespace ignored).

    A file of exactly 32 bytes is always taken as raw, whatever its content; any
    other length must be hex. Raises ``KeySourceError`` otherwise (the content is
    never quoted).
    """
    if len(data) == KEY_SIZE:
        return data
    body = data.strip()
    if len(body) == 2 * KEY_SIZE:
        try:
            return bytes.fromhex(body.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            pass
    raise KeySourceError(
        f"the key file {where} must hold exactly 32 raw bytes or 64 hex digits; "
        "create one with: openssl rand 32 > KEYFILE"
    )


class BundleKey:
    """A bundle's 32-byte key and its non-secret key id. Never printed, never stored.

    Build it through a :class:`KeySpec`; :mod:`bundlekit.crypto` uses it to
    encrypt and decrypt files.
    """

    __slots__ = ("_key", "key_id")

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_SIZE:
            raise UsageError("internal: a bundle key is 32 bytes")
        self._key = bytes(key)
        self.key_id: bytes = _hkdf(key, None, _INFO_KEY_ID, KEY_ID_SIZE)

    def commitment(self) -> bytes:
        """The 32-byte check value stored in the manifest (reveals nothing about the key)."""
        return _hkdf(self._key, None, _INFO_COMMITMENT, COMMITMENT_SIZE)

    def reuse_tag(self, path: bytes, plaintext_sha256: bytes, ciphertext_sha256: bytes) -> bytes:
        """A 32-byte HMAC binding a ciphertext this key made to the path and plaintext it encrypts
        (``specs/encryption.md``, "Re-builds"): only a holder of the key can make one, so a build cache
        entry that carries it was made by this key for exactly this plaintext at this path."""
        mac_key = _hkdf(self._key, None, _INFO_REUSE, 32)
        message = len(path).to_bytes(4, "big") + path + plaintext_sha256 + ciphertext_sha256
        return hmac.digest(mac_key, message, "sha256")

    def __repr__(self) -> str:
        return f"BundleKey(key_id={self.key_id.hex()})"

    def __reduce__(self) -> Any:
        raise TypeError("a BundleKey cannot be pickled; keep keys out of caches and queues")


def _file_keys(key: BundleKey, salt: bytes, path: bytes) -> tuple[bytes, bytes]:
    """The (header MAC key, payload AES key) pair of one file; see specs/encryption.md.

    ``HKDF(bundle_key, salt, INFO_FILE || 0x00 || key_id || P, 64)`` cut in two,
    written out for speed since it runs once per file: the extract and the two
    expand blocks on :mod:`~bundlekit.crypto._hmac`, with the pseudorandom key's
    pads computed once for both blocks. The bytes are :func:`_hkdf`'s (a test
    proves it; an empty salt pads to the same zero block as the RFC's default).
    """
    prk = hmac_pads(hmac_sha256(salt, key._key))
    info = _INFO_FILE + b"\x00" + key.key_id + path
    header_key = hmac_with(prk, info + b"\x01")
    return header_key, hmac_with(prk, header_key + info + b"\x02")


def _bundle_key(ikm: bytes, salt: bytes, source: str, namespace: bytes) -> BundleKey:
    info = _INFO_BUNDLE_KEY + b"\x00" + source.encode("ascii") + b"\x00" + namespace
    return BundleKey(_hkdf(ikm, salt, info, KEY_SIZE))


class KeySpec(ABC):
    """Where a bundle key comes from. Exactly one source per bundle.

    Subclasses supply the input key material; the derivation, the manifest
    parameters and the commitment check are shared and live here.
    """

    source: ClassVar[str]
    #: True for a source that draws a fresh key for every bundle (recipients): a build never re-opens an
    #: earlier bundle's key with it, so a reader removed since can read nothing of the new bundle.
    fresh_per_bundle: ClassVar[bool] = False

    def new_bundle_key(self, namespace: str, rng: Rng = os.urandom) -> tuple[BundleKey, dict[str, Any]]:
        """Make a fresh bundle key; return it and the ``manifest["encryption"]`` dict.

        ``rng(n)`` must return ``n`` random bytes (tests inject a fixed source).
        Raises ``KeySourceError`` if the source is unusable, ``UsageError`` for a
        bad namespace.
        """
        ns = _check_namespace(namespace)
        salt = rng(SALT_SIZE)
        if len(salt) != SALT_SIZE:
            raise UsageError("internal: the random source returned the wrong number of bytes")
        kdf = self._new_kdf()
        key = _bundle_key(self._ikm(namespace, salt, kdf), salt, self.source, ns)
        params: dict[str, Any] = {
            "scheme": SCHEME,
            "key_source": self.source,
            "kdf": kdf,
            "salt": salt.hex(),
            "key_id": key.key_id.hex(),
            "commitment": key.commitment().hex(),
        }
        return key, params

    def open_bundle_key(self, params: Mapping[str, Any], namespace: str) -> BundleKey:
        """Re-derive the bundle key described by ``manifest["encryption"]`` and check it.

        Raises ``ManifestError`` for malformed or out-of-bounds parameters,
        ``KeySourceError`` if the bundle was keyed with another kind of source,
        ``WrongKeyError`` if the key does not match the commitment.
        """
        ns = _check_namespace(namespace)
        salt, kdf, key_id, commitment = _parse_params(params)
        if params["key_source"] != self.source:
            raise KeySourceError(
                f"this bundle was encrypted with a {params['key_source']} key, not a {self.source} key; "
                f"give the matching key option ({_OPTION_FOR[str(params['key_source'])]})"
            )
        key = _bundle_key(self._ikm(namespace, salt, kdf), salt, self.source, ns)
        return _verified_key(key, key_id, commitment, self.source)

    def _new_kdf(self) -> dict[str, Any]:
        return {"name": "hkdf-sha256"}

    @abstractmethod
    def _ikm(self, namespace: str, salt: bytes, kdf: Mapping[str, Any]) -> bytes:
        """The input key material for the final HKDF step."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(<secret>)"


def _verified_key(key: BundleKey, key_id: bytes, commitment: bytes, what: str) -> BundleKey:
    """``key`` once it matches the manifest's commitment (``WrongKeyError``) and key id (``ManifestError``)."""
    if not hmac.compare_digest(key.commitment(), commitment):
        raise WrongKeyError(
            f"the {what} key does not open this bundle (key commitment mismatch); "
            "check that you use the same key, passphrase or wallet and namespace that built it"
        )
    if not hmac.compare_digest(key.key_id, key_id):
        raise ManifestError("the manifest's encryption key_id does not match its key; the manifest is damaged")
    return key


_OPTION_FOR: Final = {
    "signature": "--signature-env, --signature-file or --private-key-env",
    "passphrase": "--passphrase-env",
    "key-file": "--key-file",
    "recipients": "--identity-file or $BUNDLEKIT_IDENTITY",
}
# The members a key source adds to the six every source has (the recipients source: crypto/recipients).
_SOURCE_MEMBERS: Final = {"recipients": frozenset({"recipients", "envelope"})}


def _parse_hex(params: Mapping[str, Any], name: str, size: int) -> bytes:
    value = params.get(name)
    if not isinstance(value, str) or len(value) != 2 * size or value != value.lower():
        raise ManifestError(f"manifest encryption.{name} must be {2 * size} lowercase hex digits")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise ManifestError(f"manifest encryption.{name} must be {2 * size} lowercase hex digits") from None


def _parse_params(params: Mapping[str, Any]) -> tuple[bytes, dict[str, Any], bytes, bytes]:
    """Validate ``manifest["encryption"]``: exact keys, known scheme and source, bounded KDF work."""
    if not isinstance(params, Mapping):
        raise ManifestError("manifest encryption must be an object; the manifest is damaged")
    expected = {"scheme", "key_source", "kdf", "salt", "key_id", "commitment"}
    expected |= _SOURCE_MEMBERS.get(str(params.get("key_source")), frozenset())
    if set(params) != expected:
        raise ManifestError(
            "manifest encryption must have exactly the fields " + ", ".join(sorted(expected))
        )
    if params["scheme"] != SCHEME:
        raise ManifestError(
            f"unknown encryption scheme {str(params['scheme'])[:40]!r}; this bundlekit reads {SCHEME}"
        )
    source = params["key_source"]
    if source not in _OPTION_FOR:
        raise ManifestError("manifest encryption.key_source must be signature, passphrase, key-file or recipients")
    kdf = params["kdf"]
    if not isinstance(kdf, Mapping):
        raise ManifestError("manifest encryption.kdf must be an object")
    kdf = dict(kdf)
    if source == "passphrase":
        if set(kdf) != {"name", "n", "r", "p"} or kdf["name"] != "scrypt":
            raise ManifestError('manifest encryption.kdf for a passphrase must be {"name": "scrypt", n, r, p}')
        _check_scrypt(kdf["n"], kdf["r"], kdf["p"], ManifestError)
    elif kdf != {"name": "hkdf-sha256"}:
        raise ManifestError(f'manifest encryption.kdf for a {source} key must be {{"name": "hkdf-sha256"}}')
    return (
        _parse_hex(params, "salt", SALT_SIZE),
        kdf,
        _parse_hex(params, "key_id", KEY_ID_SIZE),
        _parse_hex(params, "commitment", COMMITMENT_SIZE),
    )


def _check_scrypt(n: object, r: object, p: object, error: type[Exception]) -> None:
    ok = (
        type(n) is int
        and SCRYPT_MIN_N <= n <= SCRYPT_MAX_N
        and n & (n - 1) == 0
        and r == SCRYPT_R
        and type(r) is int
        and p == SCRYPT_P
        and type(p) is int
    )
    if not ok:
        raise error(
            f"scrypt parameters out of bounds: n must be a power of two from 2**15 to 2**20, "
            f"r must be {SCRYPT_R} and p must be {SCRYPT_P}"
        )


class SignatureKey(KeySpec):
    """A wallet signature (EIP-191 personal_sign) over :func:`signature_message`.

    ``sig`` is the 65 raw bytes; it is normalised at once (``KeySourceError`` if
    it is malformed). bundlekit cannot tell which message was signed: sign the
    output of ``bundlekit key message --namespace NS``, or the key will differ.
    """

    source = "signature"

    def __init__(self, sig: bytes) -> None:
        self._raw = bytes(sig)
        self._sig = normalize_signature(self._raw)

    def _signature(self) -> bytes:
        return self._sig

    def _signature_as_given(self) -> bytes:
        """The 65 bytes as the user gave them (three.ws hashes those, with no normalisation)."""
        return self._raw

    def _ikm(self, namespace: str, salt: bytes, kdf: Mapping[str, Any]) -> bytes:
        return self._sig


def eth_account_api(purpose: str) -> tuple[Any, Any]:
    """eth-account's ``Account`` and ``encode_defunct``, imported on first use (the wallet extra).

    Raises ``KeySourceError`` ("<purpose> needs eth-account; ...") naming the extra when it is not installed.
    """
    limit = sys.getrecursionlimit()
    try:
        from eth_account import Account
        from eth_account.messages import encode_defunct
    except ImportError as exc:
        raise KeySourceError(f"{purpose} needs eth-account; {_WALLET_HINT}") from exc
    finally:
        # eth-account's dependency py_ecc raises the process's recursion limit to
        # 100000 when imported; past that, deep JSON elsewhere (a hostile manifest,
        # a three.ws file) overflows the C stack and crashes instead of raising
        # RecursionError. Signing needs no deep recursion.
        sys.setrecursionlimit(limit)
    return Account, encode_defunct


class PrivateKeySigner(KeySpec):
    """Sign :func:`signature_message` locally with an Ethereum private key (eth-account).

    The signature is made twice and refused if the two differ: a hedged or
    randomised signer would give a different key next time and lock the user
    out of their own bundle. Needs the optional extra ``bundlekit[wallet]``.
    Raises ``KeySourceError`` for a missing extra, a malformed key or unstable
    signatures.
    """

    source = "signature"

    def __init__(self, private_key: str | bytes) -> None:
        self._private_key = private_key

    def sign(self, message: str) -> bytes:
        """Return the normalised 65-byte EIP-191 signature of ``message``."""
        account, encode_defunct = eth_account_api("signing with a private key")
        signatures = []
        for _ in range(2):
            try:
                signed = account.sign_message(encode_defunct(text=message), self._private_key)
            except Exception:  # noqa: BLE001  (eth-account raises many types for a bad key)
                # eth-account's messages may quote the key material; say nothing of it.
                raise KeySourceError(
                    "the private key is not a valid 32-byte secp256k1 key (hex, 0x optional)"
                ) from None
            signatures.append(bytes(signed.signature))
        if signatures[0] != signatures[1]:
            raise KeySourceError(
                "signing the key message twice gave two different signatures; this signer is not "
                "deterministic and would lock you out of the bundle. Use an RFC 6979 signer"
            )
        return normalize_signature(signatures[0])

    def _ikm(self, namespace: str, salt: bytes, kdf: Mapping[str, Any]) -> bytes:
        return self.sign(signature_message(namespace))


def weak_passphrase(passphrase: str) -> str | None:
    """Why ``passphrase`` is too weak to encrypt with, or ``None``: a check the caller reports.

    Weak means shorter than :data:`PASSPHRASE_MIN_CHARS` characters once
    NFC-normalised (as :class:`PassphraseKey` counts them). The message never
    contains the passphrase or its length. Only new encryption needs this: a
    bundle made with a short passphrase still opens with it.
    """
    if len(unicodedata.normalize("NFC", passphrase)) >= PASSPHRASE_MIN_CHARS:
        return None
    return (
        f"the passphrase is shorter than {PASSPHRASE_MIN_CHARS} characters, short enough to guess; "
        f"use a longer one (a few random words), or a wallet signature or key file"
    )


class PassphraseKey(KeySpec):
    """A passphrase stretched with scrypt (N = ``scrypt_n``, r = 8, p = 1).

    The passphrase is NFC-normalised and UTF-8 encoded, so the same text typed
    on different systems gives the same key. Raises ``KeySourceError`` for an
    empty passphrase, ``UsageError`` for an out-of-bounds ``scrypt_n``.
    """

    source = "passphrase"

    def __init__(self, passphrase: str, *, scrypt_n: int = SCRYPT_DEFAULT_N) -> None:
        if not passphrase:
            raise KeySourceError("the passphrase is empty; set a non-empty passphrase")
        _check_scrypt(scrypt_n, SCRYPT_R, SCRYPT_P, UsageError)
        self._passphrase = unicodedata.normalize("NFC", passphrase).encode("utf-8")
        self._n = scrypt_n

    def _new_kdf(self) -> dict[str, Any]:
        return {"name": "scrypt", "n": self._n, "r": SCRYPT_R, "p": SCRYPT_P}

    def _ikm(self, namespace: str, salt: bytes, kdf: Mapping[str, Any]) -> bytes:
        return scrypt.Scrypt(salt=salt, length=KEY_SIZE, n=kdf["n"], r=kdf["r"], p=kdf["p"]).derive(self._passphrase)


class RawKeyFile(KeySpec):
    """A raw 32-byte key (from a key file: see :func:`parse_key_file`).

    Raises ``KeySourceError`` if ``key`` is not 32 bytes.
    """

    source = "key-file"

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_SIZE:
            raise KeySourceError(f"a raw key must be exactly 32 bytes; got {len(key)}")
        self._key = bytes(key)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> RawKeyFile:
        """Read a key file. Raises ``KeySourceError`` if it cannot be read or parsed."""
        where = str(path)
        try:
            with open(path, "rb") as fh:
                data = fh.read(4096)  # a key file is tiny; never slurp a wrong, huge file
        except OSError as exc:
            raise KeySourceError(
                f"cannot read the key file {where}: {exc.strerror}; check the path and permissions"
            ) from exc
        return cls(parse_key_file(data, where=Path(where).name))

    def _ikm(self, namespace: str, salt: bytes, kdf: Mapping[str, Any]) -> bytes:
        return self._key
