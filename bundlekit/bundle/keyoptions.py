"""The key options as plain values: which one was given, and the key it names.

Secrets never travel as values here: each option names an environment
variable or a file that holds the secret (``KeyOptions``). At most one may be
given (``--recipient`` and ``--recipients-file`` together are one: the recipients
key source). When none is given and the key only opens, ``$BUNDLEKIT_IDENTITY``
(an age identity itself) is the key, if it is set. ``key_spec`` turns the one
option into the :class:`~bundlekit.crypto.KeySpec` that encrypts or opens a bundle; ``bundle.signature.manifest_signer`` turns it
into the signer of a manifest. The CLI (``cli/_keyopts``) parses the options
into a ``KeyOptions``; the MCP server and the Python API can give one directly.
Messages name the options as a user types them (``KEY_OPTION_FLAGS``) and never
show a secret.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from bundlekit._lazy import lazy_module
from bundlekit.crypto._keys import (
    IDENTITY_ENV,
    KeySpec,
    PassphraseKey,
    PrivateKeySigner,
    RawKeyFile,
    SignatureKey,
    parse_signature_hex,
    weak_passphrase,
)
from bundlekit.errors import KeySourceError, UsageError

if TYPE_CHECKING:
    from bundlekit.crypto import recipients
else:  # imported when a recipient or an identity is named (DEVELOPERS.md, "Lazy imports": a build with none)
    recipients = lazy_module("bundlekit.crypto.recipients")

__all__ = ["KEY_OPTION_FLAGS", "KeyOptions", "environment_secret", "key_spec"]

# field name -> the option as the user types it, in the order messages name them
KEY_OPTION_FLAGS: Final[Mapping[str, str]] = {
    "signature_env": "--signature-env",
    "signature_file": "--signature-file",
    "passphrase_env": "--passphrase-env",
    "key_file": "--key-file",
    "private_key_env": "--private-key-env",
    "identity_file": "--identity-file",
    "recipient": "--recipient",
    "recipients_file": "--recipients-file",
}

_MAX_SECRET_FILE = 4096  # a signature file is 132 characters; refuse to slurp a wrong, huge file


@dataclass(frozen=True)
class KeyOptions:
    """Where a key comes from: names of environment variables and files, never a secret itself.

    ``strict`` refuses a weak passphrase for a new key instead of warning about it.
    """

    signature_env: str | None = None
    signature_file: str | os.PathLike[str] | None = None
    passphrase_env: str | None = None
    key_file: str | os.PathLike[str] | None = None
    private_key_env: str | None = None
    identity_file: str | os.PathLike[str] | None = None
    recipient: tuple[str, ...] = ()
    recipients_file: str | os.PathLike[str] | None = None
    strong_passphrase: bool = False

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> KeyOptions:
        """The key options among a command's parameters (the others are ignored)."""
        return cls(**{f.name: params[f.name] for f in fields(cls) if params.get(f.name) is not None})

    def given(self) -> dict[str, Any]:
        """The options given (field name -> value), in ``KEY_OPTION_FLAGS`` order."""
        return {name: getattr(self, name) for name in KEY_OPTION_FLAGS if getattr(self, name)}

    def flags(self) -> list[str]:
        """The options given, as the user typed them."""
        return [KEY_OPTION_FLAGS[name] for name in self.given()]

    def recipients_given(self) -> bool:
        """Whether ``--recipient`` or ``--recipients-file`` was given (the recipients key source)."""
        return bool(self.recipient or self.recipients_file)

    def without_recipients(self) -> KeyOptions:
        """These options but the recipients: what signs a bundle the recipients encrypt."""
        return replace(self, recipient=(), recipients_file=None)

    def only_recipients(self) -> KeyOptions:
        """The recipients alone: what encrypts when another key option signs."""
        return KeyOptions(recipient=self.recipient, recipients_file=self.recipients_file)

    def one(self) -> tuple[str, Any] | None:
        """The one option given (field name, value), or None; ``UsageError`` when more than one is.

        ``--recipient`` and ``--recipients-file`` are one source (the recipients of both count).
        """
        given = self.given()
        if "recipient" in given:
            given.pop("recipients_file", None)
        if len(given) > 1:
            flags = [KEY_OPTION_FLAGS[name] for name in given]
            raise UsageError(f"{' and '.join(flags)} cannot be combined; give exactly one key option")
        return next(iter(given.items()), None)


def environment_secret(var: str, environ: Mapping[str, str], what: str) -> str:
    """The value of ``$var``; ``KeySourceError`` naming the variable (never a value) when unset or empty."""
    value = environ.get(var)
    if not value:
        raise KeySourceError(f"environment variable {var} is not set or empty; export the {what} in it")
    return value


def key_spec(
    options: KeyOptions,
    *,
    environ: Mapping[str, str] | None = None,
    new_key: bool = False,
    warn: Callable[[str], None] | None = None,
    identity_env: bool = True,
) -> KeySpec | None:
    """The :class:`KeySpec` the one key option names, or ``None`` if none was given.

    With none given, a key that opens (not ``new_key``) is read from
    ``$BUNDLEKIT_IDENTITY`` when it is set, unless ``identity_env`` is false (a
    command whose key opens no bundle). An identity file others can read is
    handed to ``warn``. With ``new_key`` (the key will encrypt, not open) a weak passphrase is
    handed to ``warn``, or refused when ``options.strong_passphrase``. Raises
    ``UsageError`` if more than one key option is given or ``strict`` refuses
    the passphrase, ``KeySourceError`` if the named variable or file is
    missing or holds no usable key (the secret itself is never shown).
    """
    env = os.environ if environ is None else environ
    chosen = options.one()
    if chosen is None:
        return _identity_from_environment(env) if identity_env and not new_key else None
    name, value = chosen
    if name in ("recipient", "recipients_file"):
        listed = list(options.recipient)
        if options.recipients_file:
            listed += recipients.read_recipients_file(options.recipients_file)
        return recipients.RecipientsKey(listed)
    if name == "identity_file":
        return recipients.IdentityKey(recipients.read_identity_file(value, warn=warn))
    if name == "signature_env":
        return SignatureKey(parse_signature_hex(environment_secret(value, env, "wallet signature"),
                                                where=f"${value}"))
    if name == "signature_file":
        return SignatureKey(parse_signature_hex(_read_text(Path(value)), where=Path(value).name))
    if name == "passphrase_env":
        passphrase = environment_secret(value, env, "passphrase")
        if new_key:
            _check_new_passphrase(passphrase, strict=options.strong_passphrase, warn=warn)
        return PassphraseKey(passphrase)
    if name == "key_file":
        return RawKeyFile.from_path(Path(value))
    return PrivateKeySigner(environment_secret(value, env, "private key").strip())


def _identity_from_environment(env: Mapping[str, str]) -> KeySpec | None:
    """The identities in ``$BUNDLEKIT_IDENTITY`` (the identity file's text itself), or None when unset."""
    text = env.get(IDENTITY_ENV)
    if not text:
        return None
    if len(text) > recipients.MAX_IDENTITY_FILE:
        raise KeySourceError(f"${IDENTITY_ENV} is over {recipients.MAX_IDENTITY_FILE} characters; put the identity itself "
                             "in it (AGE-SECRET-KEY-1...), or give --identity-file FILE")
    if "\n" not in text.strip() and not text.lstrip().startswith(("AGE-", "-----", "#")) and os.path.exists(text):
        raise KeySourceError(f"${IDENTITY_ENV} holds the path of a file, not an identity: give --identity-file "
                             f"with that path, or put the identity itself in ${IDENTITY_ENV}")
    return recipients.IdentityKey(recipients.parse_identities(text, where=f"${IDENTITY_ENV}"))


def _check_new_passphrase(passphrase: str, *, strict: bool, warn: Callable[[str], None] | None) -> None:
    """Warn (or, ``strict``, refuse) when a passphrase that will encrypt is weak."""
    problem = weak_passphrase(passphrase)
    if problem is None:
        return
    if strict:
        raise UsageError(f"{problem} (--strong-passphrase refuses it)")
    if warn is not None:
        warn(problem)


def _read_text(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_SECRET_FILE + 1)
    except OSError as exc:
        raise KeySourceError(f"cannot read {path}: {exc.strerror}; check the path and permissions") from exc
    if len(data) > _MAX_SECRET_FILE:
        raise KeySourceError(f"{path.name} is too large to be a signature file; give the hex signature only")
    return data.decode("ascii", "replace")
