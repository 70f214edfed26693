"""Three-way merge of memory trees: base, ours, theirs -> one tree and a report (pure, deterministic).

The rules (``specs/sync.md``, "Merge rules"), per memory key, comparing each side's
file text with the base's:

* unchanged on one side: the other side's version (a deletion included: a memory one
  side forgot and the other left alone stays forgotten, but over an unproven base only when
  theirs' timeline forgot that very version); the same text on both: it. Theirs the same as
  the base, or as ours: ours, untouched. Two texts that differ only in a ``source: ipfs://``
  field (what ``fork`` once stamped into every memory) are the same version;
* deleted on one side, changed on the other: the change is kept, the deletion reported, unless
  the deleting side's timeline forgot the very version the other side holds;
* changed on both: first a field-level merge, when the two sides changed different
  frontmatter fields (or one the body and the other a field): each side's fields, tags as
  a three-way set union, ``updated`` the later, ``revision`` one above both; otherwise a
  conflict, resolved by the policy (``CONFLICT_POLICIES``): ``newer`` (the later
  ``updated`` wins; equal times: the greater file text, so the outcome never depends on
  which side is which), ``ours``, ``theirs``, ``both`` (the ``newer`` winner keeps the key,
  the other side's memory is kept under a sibling key ``<key>.conflict-<tag>``, ``tag`` from the losing
  version's digest, whose frontmatter names the key: nothing is lost, and every writer keeping that version
  makes the same file) or ``fail``;
* no base version and both sides have one (added on both, or no common ancestor): a
  conflict, unless the texts are equal; theirs only: theirs', unless ours' timeline forgot
  that version (or, an entry naming no version, at or after its ``updated``); ours only: ours
  (no base never deletes);
* a ``forgot`` counts only when neither the base's timeline nor the other side's holds it (merged
  once, it decides nothing again; seen by the other side, which still holds that version, it was
  written again after it), and a timestamp past now + ``MAX_CLOCK_SKEW`` orders before every other time
  (warned): a clock ahead, or a forged far-future date, wins nothing by it;
* a device-bound memory (``memory.device``) on any side: ours stays exactly as it is;
  theirs never comes in.

The timeline, per day file: the union of both sides' lines (deduplicated by their exact
bytes) minus the base lines one side removed (``prune_timeline``); a day whose lines are
exactly ours keeps our bytes (unless theirs holds those lines in other bytes), any other is ordered by
time (then bytes).

Nothing here touches a file: :func:`merge_trees` takes three :class:`TreeState`s and returns a
:class:`MergeOutcome` (the merged memories and day files, the report); ``Transaction.apply``
writes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from bundlekit._bounds import MAX_COUNT
from bundlekit.errors import ConflictError, UsageError
from bundlekit.memory.device import is_device_bound
from bundlekit.memory.files import read_tree_files
from bundlekit.memory.conflicts import CONFLICT_POLICIES
from bundlekit.memory.naming import MAX_KEY_LENGTH, TIMELINE_DIR, check_unique
from bundlekit.memory.record import MemoryRecord, rendered_record
from bundlekit.memory.timefmt import format_timestamp, parse_timestamp, utc_now
from bundlekit.memory.timeline import parse_day, version_digest

if TYPE_CHECKING:
    from bundlekit.memory.transaction import Transaction

__all__ = [
    "CONFLICT_FROM",
    "CONFLICT_OF",
    "CONFLICT_POLICIES",
    "MAX_CLOCK_SKEW",
    "Conflict",
    "MergeEntry",
    "MergeOutcome",
    "MergeReport",
    "TreeState",
    "merge_trees",
    "sibling_key",
]

#: The frontmatter of a conflict sibling: the key it lost and where it came from.
CONFLICT_OF: Final = "x-bundlekit-conflict-of"
CONFLICT_FROM: Final = "x-bundlekit-conflict-from"
#: How far past the merging machine's clock a timestamp may be and still order anything (a memory's ``updated``,
#: a ``forgot``): a later one orders before every other time (``_order``), with a warning.
MAX_CLOCK_SKEW: Final = timedelta(minutes=10)
#: Where a timestamp past now + ``MAX_CLOCK_SKEW`` orders: before every honest one. Counted as that bound instead, a
#: forged ``9999-12-31`` would still beat every edit made before the merge.
_EARLIEST: Final = datetime.min.replace(tzinfo=UTC)
_SAME_EVERYWHERE: Final = frozenset({"updated", "revision"})  # bookkeeping, not a change of content
#: Hex digits of the losing version's digest in a sibling's key.
_TAG_LENGTH: Final = 10


@dataclass(frozen=True)
class TreeState:
    """One side of a merge: where it came from (``label``: ``ipfs://<root>``, or a name for a local
    tree), its memories by key and its timeline day files (``YYYY-MM-DD.jsonl`` -> bytes)."""

    label: str
    records: Mapping[str, MemoryRecord]
    days: Mapping[str, bytes]

    @classmethod
    def empty(cls, label: str = "nothing") -> TreeState:
        return cls(label, {}, {})

    @classmethod
    def from_files(cls, label: str, files: Mapping[str, bytes]) -> TreeState:
        """A tree's loaded files (``<key>.md``, ``timeline/<day>``; ``MEMORY.md`` ignored), validated
        as ``memory.files`` validates them."""
        tree = read_tree_files(files, source=label)
        prefix = f"{TIMELINE_DIR}/"
        days = {path[len(prefix):]: bytes(data) for path, data in files.items() if path.startswith(prefix)}
        return cls(label, tree.records, days)

    @classmethod
    def from_transaction(cls, label: str, tx: Transaction) -> TreeState:
        """A tree's memories and day files as they are now (each day file checked as a loaded one is), read in
        ``tx`` (``Memory.transaction``: under the tree's lock, so the merge can be written in it)."""
        days = tx.days()
        for name, data in days.items():
            parse_day(name, data)
        return cls(label, {r.key: r for r in tx.records()}, days)


@dataclass(frozen=True)
class MergeEntry:
    """What happened to one key: ``action`` (added, updated, deleted, kept, merged, conflict, device,
    forgotten, sibling), the side it came ``source``d from (ours, theirs, both) and a detail."""

    key: str
    action: str
    source: str
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "action": self.action, "from": self.source, "detail": self.detail}


@dataclass(frozen=True)
class Conflict:
    """A key both sides changed differently: how it was resolved, which side kept the key, the sibling made."""

    key: str
    resolution: str
    winner: str
    sibling: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"key": self.key, "resolution": self.resolution, "winner": self.winner, "sibling": self.sibling}


@dataclass
class MergeReport:
    """Every key something happened to (sorted), every conflict, and the timeline lines taken in."""

    ours: str
    theirs: str
    base: str | None
    entries: list[MergeEntry] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    timeline_added: int = 0
    warnings: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for entry in self.entries:
            out[entry.action] = out.get(entry.action, 0) + 1
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        return {"ours": self.ours, "theirs": self.theirs, "base": self.base, "counts": self.counts(),
                "entries": [e.to_dict() for e in self.entries],
                "conflicts": [c.to_dict() for c in self.conflicts], "timeline_added": self.timeline_added}


@dataclass
class MergeOutcome:
    """The merged tree (memories by key, day files) and its report."""

    records: dict[str, MemoryRecord]
    days: dict[str, bytes]
    report: MergeReport

    def changes(self, ours: TreeState) -> tuple[dict[str, str | None], dict[str, bytes | None]]:
        """What turns ``ours`` into this outcome: memory file name -> new text (None: delete), and day file
        name -> new bytes (None: delete); only what differs."""
        files: dict[str, str | None] = {}
        for key in sorted(set(ours.records) | set(self.records)):
            new, old = self.records.get(key), ours.records.get(key)
            if (new.raw if new else None) != (old.raw if old else None):
                files[f"{key}.md"] = new.raw if new is not None else None
        days: dict[str, bytes | None] = {}
        for day in sorted(set(ours.days) | set(self.days)):
            if self.days.get(day) != ours.days.get(day):
                days[day] = self.days.get(day)
        return files, days


def sibling_key(key: str, version: str) -> str:
    """``<key>.conflict-<tag>``: the key of the memory a ``both`` conflict keeps beside ``key``; ``tag`` is the first
    10 hex digits of ``version`` (the losing text's ``version_digest``), so every writer that keeps one losing
    version names it alike, whichever side it lost on, and two merges of it make one sibling."""
    suffix = f".conflict-{version[:_TAG_LENGTH]}"
    return key[: MAX_KEY_LENGTH - len(suffix)] + suffix


def merge_trees(
    base: TreeState, ours: TreeState, theirs: TreeState, *, on_conflict: str = "both", proven: bool = True,
    now: datetime | None = None,
) -> MergeOutcome:
    """Merge ``theirs`` into ``ours`` over their common ``base`` (module rules).

    ``proven``: the base is vouched for (a signature the merge trusts, or a caller's own base); when not,
    theirs lacking a memory the base held deletes it only where theirs' timeline forgot that very version.
    ``now`` (default: the clock) bounds every timestamp that orders anything (``MAX_CLOCK_SKEW``).
    Raises ``UsageError`` for an unknown policy and ``ConflictError`` naming the keys with ``fail``
    when any key conflicts (nothing is decided then).
    """
    if on_conflict not in CONFLICT_POLICIES:
        raise UsageError(f"--on-conflict must be one of {', '.join(CONFLICT_POLICIES)}, not {on_conflict!r}")
    report = MergeReport(ours=ours.label, theirs=theirs.label, base=base.label if base.records or base.days else None)
    ctx = _Context(proven, (now or utc_now()) + MAX_CLOCK_SKEW,
                   _tombstones(ours.days, base.days, theirs.days), _tombstones(theirs.days, base.days, ours.days),
                   report)
    result: dict[str, MemoryRecord] = {}
    siblings: list[tuple[str, MemoryRecord, str, str]] = []  # (key it lost, the memory, where it came from, winner)
    failed: list[str] = []
    for key in sorted(set(base.records) | set(ours.records) | set(theirs.records)):
        b, o, t = base.records.get(key), ours.records.get(key), theirs.records.get(key)
        decided = _decide(key, b, o, t, ctx)
        if decided is not _CONFLICT:
            if isinstance(decided, MemoryRecord):
                result[key] = decided
            continue
        assert o is not None and t is not None
        if on_conflict == "fail":
            failed.append(key)
            continue
        winner = _winner(o, t, on_conflict, ctx.limit)
        loser, loser_side = (t, theirs.label) if winner == "ours" else (o, ours.label)
        result[key] = o if winner == "ours" else t
        if on_conflict == "both":  # reported once its sibling has a key (``_add_sibling``)
            siblings.append((key, loser, loser_side, winner))
        else:
            _report_conflict(report, key, on_conflict, winner, None)
    if failed:
        raise ConflictError(f"{len(failed)} memories changed differently on both sides (first: {failed[0]!r}); "
                            "nothing was merged: choose --on-conflict newer, ours, theirs or both")
    for key, loser, label, winner in siblings:
        _report_conflict(report, key, on_conflict, winner, _add_sibling(result, key, loser, label, report))
    check_unique(result, where="the merged tree")
    days, added = _merge_days(base.days, ours.days, theirs.days)
    report.timeline_added = added
    report.entries.sort(key=lambda e: (e.action != "deleted", e.key, e.action))  # every deletion first
    report.warnings.extend(_future_warnings(((ours, ctx.ours_forgot), (theirs, ctx.theirs_forgot)), ctx.limit))
    return MergeOutcome(result, days, report)


_CONFLICT: Final = object()


@dataclass(frozen=True)
class _Tomb:
    """One ``forgot`` entry: when (as written) and the version it names (None: an entry older than versions)."""

    ts: datetime
    sha256: str | None


@dataclass(frozen=True)
class _Context:
    """What every key's decision shares: whether the base is proven, the latest time that may order anything,
    each side's ``forgot`` entries the base does not hold (by key), the report."""

    proven: bool
    limit: datetime
    ours_forgot: Mapping[str, list[_Tomb]]
    theirs_forgot: Mapping[str, list[_Tomb]]
    report: MergeReport


def _decide(
    key: str, b: MemoryRecord | None, o: MemoryRecord | None, t: MemoryRecord | None, ctx: _Context,
) -> MemoryRecord | None | object:
    """The merged memory of one key, ``None`` for none, or ``_CONFLICT``; notes what it did in ``ctx.report``."""
    note = ctx.report.entries.append
    if any(r is not None and is_device_bound(r.meta) for r in (b, o, t)):
        if t is not None and (o is None or t.raw != o.raw):
            note(MergeEntry(key, "device", "ours", "device-bound memory: never crosses machines"))
        return o
    if _same(o, t) or (b is not None and _same(t, b)):
        return o  # theirs holds ours, or changed nothing: the tree stays exactly as it is
    if b is not None:
        return _decide_with_base(key, b, o, t, ctx)
    if o is None:
        assert t is not None
        if _names(ctx.ours_forgot, t, ctx.limit, legacy=True):
            note(MergeEntry(key, "forgotten", "ours", "forgotten by ours after theirs last changed it"))
            return None
        note(MergeEntry(key, "added", "theirs"))
        return t
    if t is None:
        if key in ctx.theirs_forgot:
            note(MergeEntry(key, "kept", "ours", "forgotten by theirs, but no common ancestor held it: kept"))
        return o
    return _CONFLICT


def _decide_with_base(
    key: str, b: MemoryRecord, o: MemoryRecord | None, t: MemoryRecord | None, ctx: _Context,
) -> MemoryRecord | None | object:
    """``_decide`` for a key the base holds and theirs changed."""
    note = ctx.report.entries.append
    if _same(o, b):  # only theirs changed
        if t is not None:
            note(MergeEntry(key, "updated", "theirs"))
            return t
        if ctx.proven or (o is not None and _names(ctx.theirs_forgot, o, ctx.limit)):
            note(MergeEntry(key, "deleted", "theirs"))
            return None
        note(MergeEntry(key, "kept", "ours", "absent from theirs, whose timeline forgot no such version and whose "
                                            "descent from the base is unproven (unsigned): kept"))
        return o
    if o is None or t is None:  # deleted on one side, changed on the other
        if t is None and o is not None and _names(ctx.theirs_forgot, o, ctx.limit):
            note(MergeEntry(key, "deleted", "theirs", "forgotten by theirs in the very version ours holds"))
            return None
        if o is None and t is not None and _names(ctx.ours_forgot, t, ctx.limit):
            note(MergeEntry(key, "forgotten", "ours", "forgotten by ours in the very version theirs holds"))
            return None
        kept, gone = ("theirs", "ours") if o is None else ("ours", "theirs")
        note(MergeEntry(key, "kept", kept, f"deleted by {gone} but changed by {kept}: the change is kept"))
        return t if o is None else o
    merged = _field_merge(key, b, o, t, ctx.limit)
    if merged is not None:
        note(MergeEntry(key, "merged", "both", "different fields changed on each side"))
        return merged
    return _CONFLICT


def _same(x: MemoryRecord | None, y: MemoryRecord | None) -> bool:
    """The same version: the same text, or texts that differ only in a ``source: ipfs://...`` field (what
    ``fork`` once stamped into every memory it imported, without a revision: provenance, not an edit)."""
    if x is None or y is None:
        return x is y
    return x.raw == y.raw or (x.body == y.body and (_stamped(x) or _stamped(y)) and _unstamped(x) == _unstamped(y))


def _stamped(record: MemoryRecord) -> bool:
    source = record.meta.get("source")
    return isinstance(source, str) and source.startswith("ipfs://")


def _unstamped(record: MemoryRecord) -> dict[str, Any]:
    return {k: v for k, v in record.meta.items() if not (k == "source" and _stamped(record))}


def _names(forgot: Mapping[str, list[_Tomb]], record: MemoryRecord, limit: datetime, *, legacy: bool = False) -> bool:
    """True when a ``forgot`` of ``record``'s key names its very version; with ``legacy``, also one that names no
    version and is no earlier than its ``updated`` (both as ``_order`` orders them: a clock ahead orders nothing)."""
    digest = version_digest(record.raw)
    return any(tomb.sha256 == digest
               or (legacy and tomb.sha256 is None and _order(tomb.ts, limit) >= _order(record.updated, limit))
               for tomb in forgot.get(record.key, ()))


def _winner(o: MemoryRecord, t: MemoryRecord, policy: str, limit: datetime) -> str:
    """Which side keeps the key: the named one, else the later ``updated`` (then the greater text); an ``updated``
    past ``limit`` orders before every other (``_order``), so a clock ahead (or a forged date) wins nothing by it."""
    if policy in ("ours", "theirs"):
        return policy
    return "ours" if (_order(o.updated, limit), o.raw) > (_order(t.updated, limit), t.raw) else "theirs"


def _order(when: datetime, limit: datetime) -> datetime:
    """``when`` as it orders in a merge: itself, or, past ``limit`` (now + ``MAX_CLOCK_SKEW``), before every other
    time: a date no clock here has reached proves nothing, and counted as ``limit`` it would beat every honest edit."""
    return when if when <= limit else _EARLIEST


def _fields(record: MemoryRecord) -> dict[str, Any]:
    return {**{k: v for k, v in record.meta.items() if k not in _SAME_EVERYWHERE}, "\0body": record.body}


def _field_merge(
    key: str, b: MemoryRecord, o: MemoryRecord, t: MemoryRecord, limit: datetime,
) -> MemoryRecord | None:
    """Both sides' changes when no field (tags aside) changed differently on both; else None (also when no
    revision is left above both: a frontmatter integer stops at 64 bits, and the conflict keeps both sides)."""
    if max(o.revision, t.revision) >= MAX_COUNT:
        return None
    fb, fo, ft = _fields(b), _fields(o), _fields(t)
    names = sorted(set(fb) | set(fo) | set(ft))
    merged: dict[str, Any] = {}
    for name in names:
        vb, vo, vt = fb.get(name, _ABSENT), fo.get(name, _ABSENT), ft.get(name, _ABSENT)
        if vo == vt or vt == vb:
            value = vo
        elif vo == vb:
            value = vt
        elif name == "tags" and all(isinstance(v, list) or v is _ABSENT for v in (vb, vo, vt)):
            value = _tag_union(vb, vo, vt)
        else:
            return None
        if value is not _ABSENT:
            merged[name] = value
    body = merged.pop("\0body", "")
    meta = {name: merged[name] for name in names if name in merged and name != "\0body"}
    meta["updated"] = max(o.meta["updated"], t.meta["updated"], key=lambda text: _order(parse_timestamp(text), limit))
    meta["revision"] = max(o.revision, t.revision) + 1
    return rendered_record(key, meta, str(body), where=f"the merge of {key}.md")


def _tag_union(vb: object, vo: object, vt: object) -> list[str]:
    """Three-way set union: every tag either side has, minus those a side removed from the base; sorted."""
    base, ours, theirs = ({str(x) for x in v} if isinstance(v, list) else set() for v in (vb, vo, vt))
    return sorted((ours | theirs) - (base - ours) - (base - theirs))


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Final = _Absent()


def _report_conflict(report: MergeReport, key: str, policy: str, winner: str, sibling: str | None) -> None:
    report.conflicts.append(Conflict(key, policy, winner, sibling))
    report.entries.append(MergeEntry(key, "conflict", winner, f"resolved {policy}"
                                     + (f"; the other kept as {sibling}" if sibling else "")))


def _add_sibling(result: dict[str, MemoryRecord], key: str, loser: MemoryRecord, label: str,
                 report: MergeReport) -> str:
    """Keep ``loser`` beside the key it lost (a sibling's own ``CONFLICT_OF``: never a sibling of a sibling) under
    the key its version names (``sibling_key``; ``-2``, ``-3`` ... when another text holds it); returns the key it
    got. The sibling's text depends on the losing version alone (``CONFLICT_FROM`` is left out: ``label`` differs
    by side), so writers keeping the same version make the same file, which merges as one."""
    original = loser.meta.get(CONFLICT_OF)
    of = original if isinstance(original, str) and original else key
    meta = {k: v for k, v in loser.meta.items() if k != CONFLICT_FROM}
    meta[CONFLICT_OF] = of
    base = sibling_key(of, version_digest(loser.raw))
    candidate, n = base, 1
    while True:
        record = rendered_record(candidate, meta, loser.body, where=f"{candidate}.md")
        held = result.get(candidate)
        if held is None or held.raw == record.raw:
            break
        n += 1
        suffix = f"-{n}"
        candidate = base[: MAX_KEY_LENGTH - len(suffix)] + suffix
    result[candidate] = record
    report.entries.append(MergeEntry(candidate, "sibling", "ours" if label == report.ours else "theirs",
                                     f"the losing side of the conflict on {key}, from {label}"))
    return candidate


def _tombstones(
    days: Mapping[str, bytes], base: Mapping[str, bytes], other: Mapping[str, bytes],
) -> dict[str, list[_Tomb]]:
    """Key -> the ``forgot`` entries of these day files that neither the base's nor the other side's hold. One the
    base held was merged before: it decides nothing again. One the other side holds too was seen there, so a
    version that side still holds came back after it (forgotten, then brought back with the very same text, and
    so the same digest: an old export imported, an old bundle forked in again) and that forget is not of it."""
    held = {line for held_by in (base, other) for line in _all_lines(held_by) if b'"forgot"' in line}
    found: dict[str, list[_Tomb]] = {}
    for line in _all_lines(days):
        if b'"forgot"' not in line or line in held:
            continue
        entry = json.loads(line)
        key, ts, digest = entry.get("key"), entry.get("ts"), entry.get("sha256")
        if entry.get("type") == "forgot" and isinstance(key, str) and isinstance(ts, str):
            found.setdefault(key, []).append(_Tomb(parse_timestamp(ts), digest if isinstance(digest, str) else None))
    return found


def _future_warnings(sides: Iterable[tuple[TreeState, Mapping[str, list[_Tomb]]]], limit: datetime) -> list[str]:
    """One warning per side holding memories or new ``forgot`` entries dated past ``limit`` (counted as ``limit``)."""
    out: list[str] = []
    limit_text = format_timestamp(limit)
    for side, forgot in sides:
        late = sorted(r.key for r in side.records.values() if _later(r, limit, limit_text))
        late += sorted(f"forgot {k}" for k, tombs in forgot.items() if any(tomb.ts > limit for tomb in tombs))
        if late:
            out.append(f"{side.label}: {len(late)} dated later than now + {MAX_CLOCK_SKEW} (first: {late[0]}); "
                       "ordered before every other time in the merge: a clock ahead wins nothing")
    return out


def _later(record: MemoryRecord, limit: datetime, limit_text: str) -> bool:
    """``record.updated > limit``, decided on the normalised text (``YYYY-MM-DDTHH:MM:SSZ`` sorts as time does)
    without parsing it when it has that form: a merge of 10,000 memories would parse 20,000 dates."""
    text = record.meta.get("updated")
    if isinstance(text, str) and len(text) == len(limit_text) and text.endswith("Z") and text <= limit_text:
        return False
    return record.updated > limit


def _lines(data: bytes | None) -> list[bytes]:
    """A day file's non-blank lines, each ending in one newline."""
    if data is None:
        return []
    return [line.rstrip(b"\r") + b"\n" for line in data.split(b"\n") if line.strip()]


def _all_lines(days: Mapping[str, bytes]) -> Iterable[bytes]:
    for name in sorted(days):
        yield from _lines(days[name])


def _line_order(line: bytes) -> tuple[Any, bytes]:
    """A merged day's order: by ``ts``, then by the bytes (the same order whichever side is which)."""
    return parse_timestamp(json.loads(line)["ts"]), line


def _merge_days(
    base: Mapping[str, bytes], ours: Mapping[str, bytes], theirs: Mapping[str, bytes]
) -> tuple[dict[str, bytes], int]:
    """Per day: (ours | theirs) minus the base lines either side removed; returns the days and the lines added
    to ours. Ours keep their bytes when they hold exactly those lines, unless theirs hold the same lines in
    other bytes (a line twice, another order, a CR): then both sides get the ordered form, so two writers
    syncing end with the same bytes instead of publishing their own forms back and forth for ever."""
    days: dict[str, bytes] = {}
    added = 0
    for name in sorted(set(ours) | set(theirs)):
        if theirs.get(name) in (base.get(name), ours.get(name)):  # theirs changed nothing of this day
            if name in ours:
                days[name] = ours[name]
            continue
        b: set[bytes] = set(_lines(base.get(name)))
        o: set[bytes] = set(_lines(ours.get(name)))
        t: set[bytes] = set(_lines(theirs.get(name)))
        kept: set[bytes] = (o | t) - (b - o) - (b - t)
        if not kept:
            continue
        added += len(kept - o)
        if kept == o and name in ours and (t != kept or theirs[name] == ours[name]):
            days[name] = ours[name]  # theirs holds no other bytes of these very lines: ours stay as they are
        else:
            ordered: list[bytes] = sorted(kept, key=_line_order)
            days[name] = b"".join(ordered)
    return days, added
