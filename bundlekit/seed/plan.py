"""What a seeding would write, decided before anything is written: the plan the user is shown and consents to.

From a verified :class:`~bundlekit.seed.protocol.Account` and a seeder's proposals, :func:`plan_seed` renders
each memory file exactly as it would be written, with two more frontmatter fields (specs/memory.md,
"Seeding"): ``seed`` (``github:octocat``: which account wrote it) and ``seed_sha256`` (:func:`seed_digest` of
every other frontmatter value and the body: what proves at ``unseed`` that nobody edited it since). Each
proposal is then checked, one at a time, and one that cannot be written is named, never blocking the rest:
a key or frontmatter the tree refuses, credential-looking text (the secret guard, as for a user's write),
a known secret's value (the token), a key that holds a memory this seed did not write or that was edited
since, and everything past the cap. ``strict`` makes any of them an error before anything is written.
:func:`plan_unseed` finds exactly the memories a seed wrote that are unedited (``force``: edited ones too).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bundlekit._redact import redact_known
from bundlekit.errors import FrontmatterError, InvalidKeyError, SecretDetectedError, SeedError, UsageError
from bundlekit.memory import screen
from bundlekit.memory.naming import filename_for, validate_key
from bundlekit.memory.record import MEMORY_TYPES, MemoryRecord, rendered_record, validate_meta
from bundlekit.memory.timefmt import format_timestamp
from bundlekit.seed.protocol import Account, Proposal

__all__ = ["DIGEST_FIELD", "SEED_FIELD", "Planned", "SeedPlan", "UnseedPlan", "plan_seed", "plan_unseed",
           "seed_digest", "unedited"]

SEED_FIELD = "seed"
_WHITESPACE = re.compile(r"\s+")
DIGEST_FIELD = "seed_sha256"


def seed_digest(key: str, meta: Mapping[str, Any], body: str) -> str:
    """SHA-256 (hex) of a memory's key, its frontmatter values but ``seed_sha256`` and its body, as canonical
    JSON: the same for the file as written and as read back; any edit to a value or the body changes it, and so
    does a copy or a rename to another key (the user's own copy of a seeded memory is not the seed's to delete)."""
    values = {k: v for k, v in meta.items() if k != DIGEST_FIELD}
    text = json.dumps({"key": key, "meta": values, "body": body}, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def unedited(record: MemoryRecord) -> bool:
    """True when ``record`` still holds exactly what its seeding wrote, under the key it was written to (its
    ``seed_sha256`` matches)."""
    return record.meta.get(DIGEST_FIELD) == seed_digest(record.key, record.meta, record.body)


@dataclass(frozen=True)
class Planned:
    """One memory the seeding writes: the proposal, the record as it will be written, and whether it creates
    (``"add"``) or refreshes an unedited memory of the same seed (``"update"``)."""

    proposal: Proposal
    record: MemoryRecord
    action: str

    @property
    def filename(self) -> str:
        return self.record.filename


@dataclass
class SeedPlan:
    """A seeding's whole outcome before it happens: what it writes, what it skips (key -> why), what the cap
    dropped (keys), and what is already there unchanged."""

    account: Account
    writes: list[Planned] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def warnings(self) -> list[str]:
        """One line per memory not written (never a value: the guard's message names the field)."""
        lines = [f"{key}: not written: {why}" for key, why in self.skipped.items()]
        if self.dropped:
            lines.append(f"{len(self.dropped)} more proposed past the cap, not written: {', '.join(self.dropped)}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON values (``--json``): every memory in full, as it would be written."""
        return {
            "seed": self.account.seed, "proof": self.account.proof,
            "write": [{"action": p.action, "key": p.record.key, "type": p.record.type, "name": p.record.name,
                       "description": p.record.description, "body": p.record.body, "origin": p.proposal.origin}
                      for p in self.writes],
            "skipped": [{"key": k, "reason": why} for k, why in self.skipped.items()],
            "dropped": list(self.dropped), "unchanged": list(self.unchanged),
        }


def _render(account: Account, proposal: Proposal, now: datetime, created: str | None) -> MemoryRecord:
    """The record as written: the proposal's fields, its origin as ``source``, the seed and its digest."""
    if proposal.type not in MEMORY_TYPES:
        raise FrontmatterError(f"type must be one of {', '.join(MEMORY_TYPES)}")
    stamp = format_timestamp(now)
    meta: dict[str, Any] = {"name": proposal.name, "description": proposal.description, "type": proposal.type,
                            "created": created or stamp, "updated": stamp, "revision": 1,
                            "source": proposal.origin, SEED_FIELD: account.seed}
    where = filename_for(proposal.key)
    validate_meta(meta, where)
    first = rendered_record(proposal.key, meta, proposal.body, where=where)
    meta[DIGEST_FIELD] = seed_digest(first.key, first.meta, first.body)
    record = rendered_record(proposal.key, meta, proposal.body, where=where)
    if not unedited(record):  # what is written must read back as what is recorded
        raise FrontmatterError("does not read back as written")
    return record


def _check(record: MemoryRecord, secrets: Sequence[str]) -> None:
    """The secret guard, as for a user's write, and the known secrets' values (the token) anywhere, in every
    spelling the one redaction point knows (percent- or JSON-escaped, base64) and split by whitespace: a service
    echoing the token base64-encoded or broken over lines into a bio must not put it in a memory."""
    screen.guard_record(record, f"{record.filename} (not written)", fields_first=True, can_allow=False)
    squeezed = _WHITESPACE.sub("", record.raw)  # a token split by a line break or spaces is still the token
    if secrets and (redact_known(record.raw, secrets) != record.raw or redact_known(squeezed, secrets) != squeezed):
        raise SecretDetectedError(f"{record.filename} holds the credential that read the account; not written")


def _place(plan: SeedPlan, proposal: Proposal, current: MemoryRecord | None, now: datetime,
           secrets: Sequence[str]) -> None:
    """Plan one proposal: a write, a skip with its reason, or unchanged."""
    key = proposal.key
    if current is not None and current.key != key:
        plan.skipped[key] = (f"the tree holds {current.key!r}, the same key but for case (one file on macOS and "
                             "Windows); kept")
        return
    if current is not None and current.meta.get(SEED_FIELD) != plan.account.seed:
        plan.skipped[key] = "the tree already holds a memory under this key that this seed did not write; kept"
        return
    if current is not None and not unedited(current):
        plan.skipped[key] = "edited since it was seeded; kept"
        return
    try:
        record = _render(plan.account, proposal, now, current.meta.get("created") if current else None)
        _check(record, secrets)
    except (FrontmatterError, SecretDetectedError) as exc:
        plan.skipped[key] = str(exc)
        return
    if current is not None and seed_digest(key, {**current.meta, "updated": "", "created": ""}, current.body) == \
            seed_digest(key, {**record.meta, "updated": "", "created": ""}, record.body):
        plan.unchanged.append(key)
        return
    plan.writes.append(Planned(proposal, record, "add" if current is None else "update"))


def _valid(proposal: object) -> Proposal:
    """A seeder's proposal, checked (a seeder is foreign code): the contract's type and a valid key."""
    if not isinstance(proposal, Proposal):
        raise SeedError("the seeder proposed something that is not a Proposal; it breaks the seeder contract")
    fields = (proposal.key, proposal.type, proposal.name, proposal.description, proposal.body, proposal.origin)
    if not all(isinstance(value, str) for value in fields):
        raise SeedError("the seeder proposed a memory whose fields are not all text; it breaks the seeder contract")
    return proposal


def plan_seed(records: Iterable[MemoryRecord], account: Account, proposals: Iterable[object], *, now: datetime,
              max_memories: int, secrets: Sequence[str] = (), strict: bool = False,
              broken: Iterable[str] = ()) -> SeedPlan:
    """The plan of one seeding over the tree's current ``records`` and the keys of its ``broken`` files (that do
    not parse: never replaced) (see the module). With ``strict`` any memory not written is an error
    (``SeedError``, nothing written)."""
    plan = SeedPlan(account)
    current = {r.key.lower(): r for r in records}  # keys are unique ignoring case ("Keys")
    unparsed = {k.lower() for k in broken}
    seen: set[str] = set()
    for proposal in (_valid(p) for p in proposals):
        try:
            validate_key(proposal.key)
        except InvalidKeyError as exc:
            plan.skipped[proposal.key[:80] or "(empty key)"] = str(exc)
            continue
        folded = proposal.key.lower()
        if folded in seen:
            plan.skipped[proposal.key] = "proposed twice (ignoring case); the first is kept"
            continue
        seen.add(folded)
        if folded in unparsed:
            plan.skipped[proposal.key] = "the tree holds a file under this key that does not parse; kept"
            continue
        if len(plan.writes) + len(plan.unchanged) >= max_memories:
            plan.dropped.append(proposal.key)
            continue
        _place(plan, proposal, current.get(folded), now, secrets)
    if strict and (plan.skipped or plan.dropped):
        raise SeedError("--strict: " + "; ".join(plan.warnings()) + "; nothing was written")
    return plan


@dataclass
class UnseedPlan:
    """What an unseed removes (unedited, or every one with ``force``) and keeps (edited since seeded)."""

    lane: str
    remove: list[MemoryRecord] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)  # with ``account``: the lane's other seeds the tree holds

    def warnings(self) -> list[str]:
        """One line per edited memory kept, and, when ``--account`` matched nothing, the seeds it could have
        meant (a handle is compared exactly: ``--account OCTOCAT`` is not ``github:octocat``)."""
        lines = [f"{key}: edited since it was seeded; kept (--force deletes it too)" for key in self.kept]
        if self.others and not self.remove and not self.kept:
            lines.append(f"no memory here was seeded from that account; this tree holds memories seeded from "
                         f"{', '.join(self.others)} (--account takes the handle exactly)")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {"lane": self.lane, "removed": [r.key for r in self.remove], "kept": list(self.kept)}


def plan_unseed(records: Iterable[MemoryRecord], lane: str, *, account: str | None = None,
                force: bool = False) -> UnseedPlan:
    """Every memory whose ``seed`` is ``lane:<handle>`` (``account``: that handle only): the unedited ones
    to remove, the edited ones kept and named (removed too with ``force``)."""
    if not lane or not all(c.isalnum() or c in "-_" for c in lane):
        raise UsageError(f"{lane[:40]!r} is not a seeder name (letters, digits, '-' and '_')")
    plan = UnseedPlan(lane)
    for record in sorted(records, key=lambda r: r.key):
        seed = record.meta.get(SEED_FIELD)
        if not isinstance(seed, str) or seed.partition(":")[0] != lane:
            continue
        if account is not None and seed.partition(":")[2] != account:
            if seed not in plan.others:
                plan.others.append(seed)
            continue
        if force or unedited(record):
            plan.remove.append(record)
        else:
            plan.kept.append(record.key)
    return plan
