"""A seeding and an unseeding, each one change of the tree with its timeline entry (all or nothing).

:func:`read_account` runs a seeder (ownership first, then its proposals); :func:`preview_seed` plans what it
would write over the tree as it is; :func:`write_seed` writes exactly that plan, re-planned under the tree's
lock: if the tree changed since the plan was shown, nothing is written (``SeedError``: run it again).
The memories and the ``seeded`` timeline entry go in one ``Transaction.apply`` (validated first, journalled,
put back on failure). :func:`unseed` removes what :func:`~bundlekit.seed.plan.plan_unseed` found, with an
``unseeded`` entry, the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bundlekit.errors import SeedError, UsageError
from bundlekit.memory import Memory
from bundlekit.memory.timeline import day_file_for, encode_entry, make_entry
from bundlekit.seed.plan import DIGEST_FIELD, SeedPlan, UnseedPlan, plan_seed, plan_unseed
from bundlekit.seed.protocol import Account, Proposal, SeedRequest
from bundlekit.seed.registry import seeder_declared

__all__ = ["read_account", "preview_seed", "unseed", "write_seed"]

# What names a seed (``LANE:HANDLE`` in every memory it writes): a handle as the built-in services spell theirs.
_HANDLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_PROOF = re.compile(r"[\x21-\x7e]{1,200}")


def read_account(lane: str, request: SeedRequest) -> tuple[Account, list[object]]:
    """The verified account and its proposals from the seeder registered as ``lane`` (it writes nothing).

    Options the seeder does not take are refused (``UsageError``) before anything is read; a failed
    ownership proof is a ``SignatureError`` (exit 3); a service that cannot be read a ``SeedError``.
    """
    factory, taken, _ = seeder_declared(lane)
    unknown = sorted(set(request.options) - set(taken))
    if unknown:
        raise UsageError(f"seeder {lane!r} takes no option {', '.join(unknown)} "
                         f"(it takes: {', '.join(taken) or 'none'})")
    with factory.from_request(request) as seeder:
        account = seeder.account()
        if not isinstance(account, Account) or account.lane != lane or not _HANDLE.fullmatch(str(account.handle)) \
                or not isinstance(account.proof, str) or not _PROOF.fullmatch(account.proof):
            raise SeedError(f"seeder {lane!r} returned no verified account of its own lane (a handle of letters, "
                            "digits, '_', '.', '-'; a one-line proof); it breaks the seeder contract")
        proposals = list(seeder.propose(account))
    return account, proposals


def preview_seed(memory: Memory, account: Account, proposals: Sequence[object], *, now: datetime,
                 max_memories: int, secrets: Sequence[str] = (), strict: bool = False) -> SeedPlan:
    """The plan over the tree as it is now (nothing written)."""
    with memory.transaction(lock=False) as tx:
        records = tx.records()
    return plan_seed(records, account, proposals, now=now, max_memories=max_memories, secrets=secrets,
                     strict=strict, broken=memory.broken())


def _with_entry(days: Mapping[str, bytes], entry: dict[str, Any]) -> dict[str, bytes | None]:
    """The day file ``entry`` belongs to, as stored plus the entry."""
    day = day_file_for(entry)
    return {day: days.get(day, b"") + encode_entry(entry)}


def write_seed(memory: Memory, shown: SeedPlan, *, now: datetime, max_memories: int,
               secrets: Sequence[str] = (), strict: bool = False) -> SeedPlan:
    """Write ``shown`` (the plan the user consented to) with a ``seeded`` timeline entry, under the lock.

    Re-planned there from the same proposals: a plan that differs (the tree changed) writes nothing and
    raises ``SeedError``. A plan with nothing to write writes nothing, not even the entry.
    """
    proposals: list[Proposal] = [p.proposal for p in shown.writes]
    with memory.transaction() as tx:
        plan = plan_seed(tx.records(), shown.account, proposals, now=now, max_memories=max_memories,
                         secrets=secrets, strict=strict, broken=memory.broken())
        if [(p.filename, p.record.raw) for p in plan.writes] != [(p.filename, p.record.raw) for p in shown.writes]:
            raise SeedError("the tree changed since the seeding was shown; nothing was written, run it again")
        if not plan.writes:
            return plan
        entry = make_entry("seeded", {
            "seed": plan.account.seed, "proof": plan.account.proof,
            "memories": {p.record.key: p.record.meta[DIGEST_FIELD] for p in plan.writes},
            "skipped": len(shown.skipped), "dropped": len(shown.dropped),
        }, now)
        tx.apply({p.filename: p.record.raw for p in plan.writes}, _with_entry(tx.days(), entry))
    return plan


def unseed(memory: Memory, lane: str, *, now: datetime, account: str | None = None, force: bool = False,
           dry_run: bool = False) -> UnseedPlan:
    """Remove the memories ``lane`` seeded and nobody edited since (``force``: edited ones too) with an
    ``unseeded`` timeline entry, planned and validated under the lock before anything is deleted."""
    with memory.transaction() as tx:
        plan = plan_unseed(tx.records(), lane, account=account, force=force)
        if dry_run or not plan.remove:
            return plan
        entry = make_entry("unseeded", {
            "lane": lane, "account": account, "force": force,
            "memories": {r.key: r.meta.get(DIGEST_FIELD) for r in plan.remove}, "kept": plan.kept,
        }, now)
        tx.apply({r.filename: None for r in plan.remove}, _with_entry(tx.days(), entry))
    return plan
