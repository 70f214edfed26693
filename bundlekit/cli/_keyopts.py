"""The shared key options of ``build``, ``load``, ``fork`` and ``pin``.

Secrets never travel as command-line arguments (they would land in shell
history and ``ps``): each option names an environment variable or a file that
holds the secret. At most one may be given::

    --signature-env VAR     a wallet signature (hex, 0x optional) in $VAR
    --signature-file F      the same, in a file
    --passphrase-env VAR    a passphrase in $VAR (scrypt)
    --key-file F            a raw encryption key: 32 bytes, or 64 hex digits
    --private-key-env VAR   an Ethereum private key in $VAR; bundlekit signs the
                            key message itself (needs bundlekit[wallet])
    --identity-file F       an age identity (AGE-SECRET-KEY-1...) that opens a bundle
                            encrypted for recipients; without any option, $BUNDLEKIT_IDENTITY

A command that encrypts anew (``build``, ``pin``) also applies ``@recipient_options``:
``--recipient age1...`` (repeatable) and ``--recipients-file F`` together are one more key
option, the recipients (specs/encryption.md, "Recipients"); their values are public keys.

A command that builds a bundle also applies ``@sign_options`` (``--sign``, ``--sign-key``, ``--signer``),
folds ``--sign-key FILE`` (an Ed25519 PEM key: its own name, never ``--key-file``, which is an
encryption key) into the options with ``signing(params, sign)``, and hands
``KeyOptions.from_params(params)`` to ``bundle.signature.build_keys`` or ``publish_keys``, which hold
the rules of which options go together and read the signer and the key.

A command applies ``@key_options`` and calls ``resolve_key_spec(**params)``,
which returns the :class:`~bundlekit.crypto.KeySpec` or ``None`` when no key
option was given (the rules live in ``bundle.keyoptions``: this module only
parses). A command that encrypts anew (``build``, ``pin``) also
applies ``@passphrase_check_option`` and passes ``new_key=True``: a passphrase shorter
than ``PASSPHRASE_MIN_CHARS`` then draws a warning on stderr, or with
``--strong-passphrase`` a usage error (exit 2), before any work is done. (``--strict`` means, on
every command that has it, that what cannot be carried is an error before anything is written.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from bundlekit.bundle.keyoptions import KeyOptions, key_spec
from bundlekit.cli import output
from bundlekit.cli._params import AliasOption
from bundlekit.crypto._keys import PASSPHRASE_MIN_CHARS, KeySpec
from bundlekit.errors import UsageError

__all__ = [
    "key_options", "passphrase_check_option", "recipient_options", "resolve_key_spec", "sign_options", "signing",
]

F = TypeVar("F", bound=Callable[..., Any])


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
            help="The encryption key in FILE: 32 raw bytes or 64 hex digits.",
        ),
        click.option(
            "--private-key-env",
            metavar="VAR",
            help="Sign the key message with the Ethereum private key in env var VAR (needs bundlekit[wallet]).",
        ),
        click.option(
            "--identity-file",
            metavar="FILE",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Open a bundle encrypted for recipients with the age identity in FILE "
            "(default: $BUNDLEKIT_IDENTITY, the identity itself).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def recipient_options(func: F) -> F:
    """Add ``--recipient`` (repeatable) and ``--recipients-file`` to a command that encrypts anew
    (``build``, ``pin``)."""
    func = click.option("--recipients-file", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path),
                        help="Encrypt for every age recipient in FILE, one per line (# comments).")(func)
    return click.option("--recipient", metavar="AGE1...", multiple=True,
                        help="Encrypt for this age recipient (repeatable); `bundlekit key new` makes one.")(func)


def sign_options(func: F) -> F:
    """Add ``--sign``, ``--sign-key`` and ``--signer`` to a command that builds a bundle (``build``, ``pin``,
    ``sync``); the command calls ``signing(params, sign)`` before reading the key options."""
    func = click.option("--signer", "signer_address", metavar="ADDRESS",
                        help="The Ethereum address that made the --signature-file signature (with --sign).")(func)
    func = click.option("--sign-key", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path),
                        help="Sign the manifest with the Ed25519 key (PEM) in FILE, as did:key; implies --sign.")(func)
    return click.option("--sign", is_flag=True,
                        help="Sign the manifest (signature.json): with --sign-key FILE, --private-key-env VAR "
                             "(EIP-191), or --signature-file with --signer.")(func)


def signing(params: dict[str, Any], sign: bool) -> bool:
    """Fold ``--sign-key FILE`` (removed from ``params``) into the key options ``bundle.signature`` reads,
    where an Ed25519 key file signs; returns whether the manifest is signed. ``--sign-key`` with another key
    option is a usage error naming both (one key option signs, or signs and encrypts)."""
    sign_key = params.pop("sign_key", None)
    if sign_key is None:
        return sign
    others = KeyOptions.from_params(params).without_recipients().flags()  # recipients encrypt beside it
    if others:
        raise UsageError(f"--sign-key and {others[0]} cannot be combined; give exactly one key option "
                         "(to sign and encrypt at once: --encrypt --sign --private-key-env VAR)")
    params["key_file"] = sign_key
    return True


def passphrase_check_option(func: F) -> F:
    """Add ``--strong-passphrase`` (refuse a weak passphrase) to a command that encrypts with a new key.

    Its old spelling ``--strict`` is not kept as an alias: ``build`` and ``pin`` use ``--strict`` for
    what every command means by it (a memory file that cannot be carried is an error)."""
    return click.option(
        "--strong-passphrase", "strong_passphrase",
        is_flag=True,
        help=f"Refuse (exit 2) a passphrase shorter than {PASSPHRASE_MIN_CHARS} characters; "
        "without it such a passphrase is used with a warning.",
    )(func)


def resolve_key_spec(
    *,
    environ: Mapping[str, str] | None = None,
    new_key: bool = False,
    strong_passphrase: bool = False,
    identity_env: bool = True,
    **params: Any,
) -> KeySpec | None:
    """Turn a command's parameters into a :class:`KeySpec`, or ``None`` if no key option was given.

    Other parameters of the command are ignored, so a command can pass all of
    its ``**params``. With no key option, a key that opens comes from
    ``$BUNDLEKIT_IDENTITY`` if set (not with ``identity_env=False``).
    The rules are ``bundle.keyoptions.key_spec``'s; a weak
    passphrase for a new key is warned about on stderr (``cli.output``).
    """
    options = KeyOptions.from_params({**params, "strong_passphrase": strong_passphrase})
    return key_spec(options, environ=environ, new_key=new_key, warn=output.warn, identity_env=identity_env)
