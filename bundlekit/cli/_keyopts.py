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

A command that builds a bundle also applies ``@sign_options`` (``--sign``, ``--signer``)
and hands ``KeyOptions.from_params(params)`` to ``bundle.signature.build_keys`` or ``publish_keys``,
which hold the rules of which options go together and read the signer and the key.

A command applies ``@key_options`` and calls ``resolve_key_spec(**params)``,
which returns the :class:`~bundlekit.crypto.KeySpec` or ``None`` when no key
option was given (the rules live in ``bundle.keyoptions``: this module only
parses). A command that encrypts anew (``build``, ``pin``) also
applies ``@strict_option`` and passes ``new_key=True``: a passphrase shorter
than ``PASSPHRASE_MIN_CHARS`` then draws a warning on stderr, or with
``--strict`` a usage error (exit 2), before any work is done.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from bundlekit.bundle.keyoptions import KeyOptions, key_spec
from bundlekit.cli import output
from bundlekit.crypto._keys import PASSPHRASE_MIN_CHARS, KeySpec

__all__ = [
    "key_options", "resolve_key_spec", "sign_options", "strict_option",
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


def resolve_key_spec(
    *,
    environ: Mapping[str, str] | None = None,
    new_key: bool = False,
    strict: bool = False,
    **params: Any,
) -> KeySpec | None:
    """Turn a command's parameters into a :class:`KeySpec`, or ``None`` if no key option was given.

    Other parameters of the command are ignored, so a command can pass all of
    its ``**params``. The rules are ``bundle.keyoptions.key_spec``'s; a weak
    passphrase for a new key is warned about on stderr (``cli.output``).
    """
    options = KeyOptions.from_params({**params, "strict": strict})
    return key_spec(options, environ=environ, new_key=new_key, warn=output.warn)
