"""Proof that the person seeding owns a Farcaster fid: an EIP-191 signature over a message naming the fid,
the agent namespace and a time, from one of the fid's verified Ethereum addresses.

The message (:func:`ownership_message`) is four lines, exactly::

    bundlekit seed: allow an agent to seed its memory from a Farcaster account
    fid: 6833
    namespace: my-agent
    issued: 2026-12-04T23:59:00Z

:func:`check_message` accepts only that form (rebuilt from its fields and compared byte for byte), the fid
and namespace asked for, and a time at most :data:`MAX_AGE` old and :data:`MAX_SKEW` ahead: anything else is
a ``SignatureError`` (exit 3), before any account is read. The signature is checked with the encryption
layer's wallet code (``crypto/signing.verify_signature``: EIP-191 ``personal_sign`` recovery, eth-account,
the ``wallet`` extra) against each verified address; the fid's verified addresses come from the hub
(``seed/farcaster``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from datetime import datetime, timedelta

from bundlekit.crypto.signing import verify_signature
from bundlekit.errors import SignatureError, UsageError
from bundlekit.memory.timefmt import format_timestamp, parse_timestamp

__all__ = ["MAX_AGE", "MAX_SKEW", "check_message", "ownership_message", "signer_among"]

HEADER = "bundlekit seed: allow an agent to seed its memory from a Farcaster account"
MAX_AGE = timedelta(minutes=10)
MAX_SKEW = timedelta(minutes=2)


def _unshown(char: str) -> bool:
    """True for a character a wallet would not show as itself: a control, a bidi or other invisible format
    character, a line or paragraph separator (``agent\u2028fid: 1`` would read as a line of its own)."""
    return unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp")


def ownership_message(fid: int, namespace: str, issued: datetime) -> str:
    """The exact text to sign (UTF-8, a final line break); ``UsageError`` for a namespace that is empty or
    holds a line break, another control character or an invisible one (the message is four lines, shown as
    such)."""
    if not namespace or namespace != namespace.strip() or any(_unshown(c) for c in namespace):
        raise UsageError("the agent namespace must be one line of text without surrounding spaces")
    return f"{HEADER}\nfid: {fid}\nnamespace: {namespace}\nissued: {format_timestamp(issued)}\n"


def check_message(message: str, fid: int, namespace: str, now: datetime) -> None:
    """``SignatureError`` unless ``message`` is exactly an ownership message for ``fid`` and ``namespace``,
    issued within the last ``MAX_AGE`` (and no more than ``MAX_SKEW`` ahead of ``now``)."""
    lines = message.split("\n")
    fields = dict(line.partition(": ")[::2] for line in lines[1:4]) if len(lines) == 5 else {}
    try:
        issued = parse_timestamp(fields.get("issued", ""))
    except Exception:  # noqa: BLE001  (any unparseable time: not the message's form)
        issued = None
    if issued is None or lines[0] != HEADER or message != ownership_message(fid, namespace, issued):
        if "\r" in message:
            raise SignatureError("the signed message has CR line ends (a Windows editor?): sign it byte for byte as "
                                 "`--print-message` prints it, LF line ends; nothing was read or written")
        if fields.get("fid") not in (None, str(fid)):
            raise SignatureError(f"the signed message names another fid, not {fid}; nothing was read or written")
        if "namespace" in fields and fields["namespace"] != namespace:
            raise SignatureError("the signed message names another agent namespace; nothing was read or written")
        raise SignatureError("the signed message is not a bundlekit ownership message (`bundlekit memory seed "
                             "farcaster --fid N --print-message` prints one); nothing was read or written")
    if issued < now - MAX_AGE:
        raise SignatureError(f"the signed message expired (issued {format_timestamp(issued)}, valid for "
                             f"{int(MAX_AGE.total_seconds() // 60)} minutes); sign a new one")
    if issued > now + MAX_SKEW:
        raise SignatureError("the signed message is issued in the future; check the clock and sign a new one")


def signer_among(message: str, signature: bytes, addresses: Iterable[str]) -> str:
    """The address in ``addresses`` that signed ``message`` (EIP-191); ``SignatureError`` when none did: a
    forged signature, or one from an address the fid has not verified."""
    data = message.encode("utf-8")
    for address in addresses:
        if verify_signature(address, data, signature):
            return address
    raise SignatureError("the signature is not from any Ethereum address this fid has verified on Farcaster; "
                         "nothing was written")
