"""Release retention: which old pins ``bundlekit unpin --name-prefix P --keep N`` retires.

A pinner that supports retention lists its pins by name (``list(name_prefix)``
returning ``PinEntry``) and removes one by CID (``unpin``); ``local``,
``kubo``, ``psa``, ``pinata`` and ``cluster`` do, the others raise
``UsageError`` saying they cannot. The plan:

1. the pins whose name starts with the prefix, one per CID (the newest entry
   of a CID stands for it);
2. newest first: by ``created`` (ISO 8601 text; an entry without a date
   counts as oldest), then by name, descending, digit runs compared as
   numbers (kubo lists no dates: ``memory-v1.10.0`` is newer than ``memory-v1.9.0``);
3. the first ``keep`` are kept, the rest retired. A CID kept under one name is
   never retired under another.

An empty prefix is refused (``UsageError``): it would match every pin on the
service, unnamed ones and those bundlekit never made included.

Nothing is removed unless ``act`` is true (the CLI's ``--yes``): a dry run
returns the same plan.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from bundlekit.errors import BundlekitError, PinError, UsageError
from bundlekit.ipld.cid import parse_cid
from bundlekit.pinning.protocol import PinEntry
from bundlekit.pinning.registry import create_pinner

__all__ = ["RetirePlan", "carry_out", "plan_retirement", "retire", "retire_everywhere"]

_DIGITS = re.compile(r"(\d+)")


@dataclass
class RetirePlan:
    """What a retention run keeps and retires, newest first, and whether it acted."""

    pinner: str
    keep: list[PinEntry] = field(default_factory=list)
    retire: list[PinEntry] = field(default_factory=list)
    acted: bool = False


def _name_order(name: str) -> tuple[str | int, ...]:
    """``name`` with its digit runs as numbers: ``memory-v1.10.0`` sorts after ``memory-v1.9.0``."""
    return tuple(int(part) if i % 2 else part for i, part in enumerate(_DIGITS.split(name)))


def _newest_first(entry: PinEntry) -> tuple[str, tuple[str | int, ...]]:
    return (entry.created or "", _name_order(entry.name or ""))


def plan_retirement(pinner: str, entries: list[PinEntry], keep: int) -> RetirePlan:
    """Split ``entries`` into the ``keep`` newest and the rest (the rules in the module docstring)."""
    if keep < 0:
        raise UsageError(f"--keep must be 0 or more, not {keep}")
    by_cid: dict[str, PinEntry] = {}
    for entry in sorted(entries, key=_newest_first, reverse=True):
        by_cid.setdefault(entry.cid, entry)
    ordered = sorted(by_cid.values(), key=_newest_first, reverse=True)
    return RetirePlan(pinner, keep=ordered[:keep], retire=ordered[keep:])


def retire(pinner: Any, name_prefix: str, keep: int, *, act: bool = False) -> RetirePlan:
    """Plan (and with ``act``, carry out) the retirement of ``pinner``'s old pins named ``name_prefix``...

    Raises UsageError for an empty ``name_prefix`` (it would match every pin)
    and for a pinner that cannot list its pins, and the pinner's
    ``PinError`` when listing or unpinning fails (see :func:`carry_out`).
    """
    if not name_prefix.strip():
        # An empty prefix matches every pin, unnamed ones and those bundlekit never made included.
        raise UsageError("--name-prefix must not be empty: retention only touches pins named like releases "
                         "(e.g. memory-)")
    plan = plan_retirement(getattr(pinner, "name", "?"), pinner.list(name_prefix=name_prefix), keep)
    if act:
        carry_out(pinner, plan)
    return plan


def carry_out(pinner: Any, plan: RetirePlan) -> None:
    """Unpin every pin ``plan`` retires; validated first, so a bad entry stops it before the first unpin.

    Each retired CID is parsed before anything is removed (a malformed one from the
    service raises ``CIDError`` with every pin in place). An unpin cannot be undone (the
    service may drop the content), so a failure part-way raises ``PinError`` naming what
    was already unpinned and the failure; running the same retention again finishes it.
    """
    cids = [parse_cid(entry.cid) for entry in plan.retire]
    for done, cid in enumerate(cids):
        try:
            pinner.unpin(cid)
        except BundlekitError as exc:
            gone = ", ".join(e.cid for e in plan.retire[:done]) or "none"
            raise PinError(
                f"{plan.pinner}: unpinned {done} of {len(cids)} pin(s) ({gone}), then {plan.retire[done].cid} "
                f"failed: {exc}; run the same command again to retire the rest"
            ) from exc
    plan.acted = True


def retire_everywhere(
    pinner_names: Iterable[str], name_prefix: str, keep: int, *, act: bool = False
) -> list[RetirePlan]:
    """:func:`retire` on each named pinner (a name given twice counts once), one plan per pinner, in order.

    Validate, then act: every pinner is built (``create_pinner``, from the process
    environment) and listed, and every plan made, before the first unpin, so a missing
    secret or a listing that fails on the second pinner leaves the first untouched.
    """
    with ExitStack() as stack:
        pinners = [stack.enter_context(create_pinner(name)) for name in dict.fromkeys(pinner_names)]
        plans = [retire(pinner, name_prefix, keep) for pinner in pinners]
        if act:
            for pinner, plan in zip(pinners, plans, strict=True):
                carry_out(pinner, plan)
    return plans
