"""The shared key options of ``build``, ``load``, ``fork`` and ``pin``.

Secrets never travel as command-line arguments (they would land in shell
history and ``ps``): each option names an environment variable or a file that
holds the secret. At most one may be given::

    --signature-env VAR     a wallet signature (hex, 0x optional) in $VAR
    --signature-file F      the same, in a file
    --passphrase-env VAR    a passphrase in $VAR (scrypt)
    --key-file F            a raw key: 32 bytes, or 64 hex digits
    --private-key-env VAR   an Ethereum private key in $VAR; bundlekit signs the
                            key message itself (needs bundlekit[wallet])

A command that builds a bundle also applies ``@sign_options`` (``--sign``, ``--signer``):
with ``--sign``, ``resolve_signer`` turns the key option into the manifest's signer.

A command applies ``@key_options`` and calls ``resolve_key_spec(**params)``,
which returns the :class:`~bundlekit.crypto.KeySpec` or ``None`` when no key
option was given. A command that encrypts anew (``build``, ``pin``) also
applies ``@strict_option`` and passes ``new_key=True``: a passphrase shorter
than ``PASSPHRASE_MIN_CHARS`` then draws a warning on stderr, or with
``--strict`` a usage error (exit 2), before any work is done.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from bundlekit.bundle.signature import ExternalSignature
from bundlekit.cli import output
from bundlekit.crypto._keys import (
    PASSPHRASE_MIN_CHARS,
    KeySpec,
    PassphraseKey,
    PrivateKeySigner,
    RawKeyFile,
    SignatureKey,
    parse_signature_hex,
    weak_passphrase,
)
from bundlekit.crypto.signing import Ed25519Signer, EthSigner
from bundlekit.errors import KeySourceError, UsageError

__all__ = [
    "KEY_OPTION_PARAMS", "key_options", "resolve_key_spec", "resolve_signer", "sign_options", "strict_option",
]

F = TypeVar("F", bound=Callable[..., Any])

# parameter name -> the option as the user types it
KEY_OPTION_PARAMS: dict[str, str] = {
    "signature_env": "--signature-env",
    "signature_file": "--signature-file",
    "passphrase_env": "--passphrase-env",
    "key_file": "--key-file",
    "private_key_env": "--private-key-env",
}

_MAX_SECRET_FILE = 4096  # a signature file is 132 characters; refuse to slurp a wrong, huge file


def key_options(func: F) -> F:
    """Add the five mutually exclusive key options to a click command."""
    options = [
        click.option(
            "--signature-env",
            metavar="VAR",
            help="Key from a wallet signature of `bundlekit key message`, hex in env var VAR.",
        ),
        click.option(
            "--signature-file",
            metavar="FILE",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Key from a wallet signature, hex in FILE.",
        ),
        click.option(
            "--passphrase-env",
            metavar="VAR",
            help=f"Key from a passphrase in env var VAR (scrypt; to encrypt, at least {PASSPHRASE_MIN_CHARS} "
            "characters, else a warning).",
        ),
        click.option(
            "--key-file",
            metavar="FILE",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Key from FILE: 32 raw bytes or 64 hex digits.",
        ),
        click.option(
            "--private-key-env",
            metavar="VAR",
            help="Sign the key message with the Ethereum private key in env var VAR (needs bundlekit[wallet]).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def sign_options(func: F) -> F:
    """Add ``--sign`` and ``--signer`` to a command that builds a bundle (``build``, ``pin``)."""
    func = click.option("--signer", "signer_address", metavar="ADDRESS",
                        help="The Ethereum address that made the --signature-file signature (with --sign).")(func)
    return click.option("--sign", is_flag=True,
                        help="Sign the manifest (signature.json): --private-key-env, an Ed25519 --key-file, "
                             "or --signature-file with --signer.")(func)


def strict_option(func: F) -> F:
    """Add ``--strict`` (refuse a weak passphrase) to a command that encrypts with a new key."""
    return click.option(
        "--strict",
        is_flag=True,
        help=f"Refuse (exit 2) a passphrase shorter than {PASSPHRASE_MIN_CHARS} characters; "
        "without it such a passphrase is used with a warning.",
    )(func)


def _new_passphrase(passphrase: str, *, strict: bool) -> str:
    """``passphrase``, after warning on stderr (or, ``strict``, refusing) when it is weak."""
    problem = weak_passphrase(passphrase)
    if problem is not None:
        if strict:
            raise UsageError(f"{problem} (--strict refuses it)")
        output.warn(problem)
    return passphrase


def _env(var: str, environ: Mapping[str, str], what: str) -> str:
    value = environ.get(var)
    if not value:
        raise KeySourceError(f"environment variable {var} is not set or empty; export the {what} in it")
    return value


def resolve_key_spec(
    *,
    environ: Mapping[str, str] | None = None,
    new_key: bool = False,
    strict: bool = False,
    **params: Any,
) -> KeySpec | None:
    """Turn a command's parameters into a :class:`KeySpec`, or ``None`` if no key option was given.

    Other parameters of the command are ignored, so a command can pass all of
    its ``**params``. With ``new_key`` (the key will encrypt, not open) a weak
    passphrase is warned about on stderr, or refused when ``strict``. Raises
    ``UsageError`` if more than one key option is given or ``strict`` refuses
    the passphrase, ``KeySourceError`` if the named variable or file is
    missing or holds no usable key (the secret itself is never shown).
    """
    env = os.environ if environ is None else environ
    given = {name: params[name] for name in KEY_OPTION_PARAMS if params.get(name)}
    if len(given) > 1:
        names = " and ".join(KEY_OPTION_PARAMS[name] for name in given)
        raise UsageError(f"{names} cannot be combined; give exactly one key option")
    if not given:
        return None
    (name, value), = given.items()
    if name == "signature_env":
        return SignatureKey(parse_signature_hex(_env(value, env, "wallet signature"), where=f"${value}"))
    if name == "signature_file":
        return SignatureKey(parse_signature_hex(_read_text(Path(value)), where=Path(value).name))
    if name == "passphrase_env":
        passphrase = _env(value, env, "passphrase")
        return PassphraseKey(_new_passphrase(passphrase, strict=strict) if new_key else passphrase)
    if name == "key_file":
        return RawKeyFile.from_path(Path(value))
    return PrivateKeySigner(_env(value, env, "private key").strip())


def _read_text(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_SECRET_FILE + 1)
    except OSError as exc:
        raise KeySourceError(f"cannot read {path}: {exc.strerror}; check the path and permissions") from exc
    if len(data) > _MAX_SECRET_FILE:
        raise KeySourceError(f"{path.name} is too large to be a signature file; give the hex signature only")
    return data.decode("ascii", "replace")


def resolve_signer(sign: bool, signer_address: str | None, params: dict[str, Any]) -> Any:
    """The manifest's signer (``--sign``) from the one key option, or ``None`` without ``--sign``.

    ``--private-key-env`` gives an EIP-191 signer, ``--key-file`` an Ed25519 PEM key (did:key),
    ``--signature-file`` with ``--signer ADDRESS`` a signature made elsewhere. Secrets are read,
    never shown. Returns a ``crypto.signing.Signer`` or a ``bundle.signature.ExternalSignature``.
    """
    if not sign:
        if signer_address is not None:
            raise UsageError("--signer goes with --sign --signature-file; add --sign")
        return None
    given = [KEY_OPTION_PARAMS[name] for name in KEY_OPTION_PARAMS if params.get(name)]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)} cannot be combined; give exactly one key option")
    if params.get("private_key_env"):
        var = params["private_key_env"]
        value = os.environ.get(var, "").strip()
        if not value:
            raise KeySourceError(f"environment variable {var} is not set or empty; export the private key in it")
        return EthSigner(value)
    if params.get("key_file"):
        return Ed25519Signer.from_file(params["key_file"])
    if params.get("signature_file"):
        if not signer_address:
            raise UsageError("--signature-file with --sign needs --signer ADDRESS: the address that signed")
        path = Path(params["signature_file"])
        try:
            text = path.read_text(encoding="ascii", errors="replace")[:4096]
        except OSError as exc:
            raise KeySourceError(f"cannot read {path}: {exc.strerror}; check the path") from exc
        return ExternalSignature(signer_address.strip(), parse_signature_hex(text, where=path.name))
    raise UsageError("--sign needs --private-key-env VAR, an Ed25519 --key-file, or --signature-file with --signer")
