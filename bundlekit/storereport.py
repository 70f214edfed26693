"""What ``bundlekit store verify`` found: ``StoreReport`` (the counts and each problem) and the problems it names
(``BlockProblem``, ``RecordProblem``, ``PackProblem``), each with the advice a user can follow.

Apart from ``blockstore``, which makes them in ``BlockStore.verify`` only: every other command, a writer's sync
round among them, uses the store without defining these four dataclasses (~2.2 ms of CPU, DEVELOPERS.md "Lazy
imports").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bundlekit.ipld.cid import cid_to_str

__all__ = ["BlockProblem", "PackProblem", "RecordProblem", "StoreReport"]


@dataclass
class BlockProblem:
    """A block ``BlockStore.verify`` found wrong: ``damaged`` (its file did not hash to its CID: removed, as
    ``get`` removes it, so a re-import repairs it), ``missing`` (a pinned DAG links it, no file holds it) or
    ``unsupported`` (a codec or hash the store cannot check: left alone) or ``unreadable`` (its file cannot be
    read, ``reason`` says why: left alone); the pins whose DAG needs it."""

    cid: bytes
    problem: str
    pins: list[tuple[bytes, str | None]] = field(default_factory=list)  # (root, the pin's name)
    reason: str = ""

    def advice(self) -> str:
        """What to do about it, in words a user can follow."""
        if self.problem == "unsupported":
            return "a codec or hash bundlekit cannot check; remove the file if you did not put it there"
        if self.problem == "unreadable":
            return (f"its file cannot be read ({self.reason}); check its permissions and the disk, or remove it and "
                    "re-import a CAR that holds it (`bundlekit store import FILE.car`)")
        removed = "removed from the store; " if self.problem == "damaged" else ""
        if not self.pins:
            return f"{removed}no pin needs it: nothing to do"
        return (f"{removed}re-import a CAR that holds it (`bundlekit store import FILE.car`) or load its bundle "
                "again from a gateway; or drop the pin (`bundlekit store unpin CID`) and run `bundlekit store gc`")

    def to_dict(self) -> dict[str, Any]:
        return {"cid": cid_to_str(self.cid), "problem": self.problem,
                "pins": [{"cid": cid_to_str(root), "name": name} for root, name in self.pins],
                "advice": self.advice()}


@dataclass
class RecordProblem:
    """An IPNS record kept under ``ipns/`` that does not verify for its name (``reason`` says why)."""

    name: str
    path: Path
    reason: str

    def advice(self) -> str:
        return (f"delete {self.path} (the name then resolves from its routing endpoints and gateways) or publish "
                "the name again (`bundlekit name publish`)")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "problem": self.reason, "advice": self.advice()}


@dataclass
class PackProblem:
    """A pack index ``BlockStore.verify`` could not read (``reason``): none of its pack's blocks is found."""

    index: Path
    reason: str

    def advice(self) -> str:
        return ("no block is found through it: `bundlekit store gc` removes it and its pack (a pin that needs one of "
                "them is named missing: re-import a CAR that holds it)")

    def to_dict(self) -> dict[str, Any]:
        return {"index": str(self.index), "problem": self.reason, "advice": self.advice()}


@dataclass
class StoreReport:
    """What ``BlockStore.verify`` checked and found: counts, then each problem (at most ``MAX_NAMED`` of a kind
    named; ``unnamed`` counts the rest)."""

    root: Path
    blocks: int = 0
    bytes: int = 0
    pins: int = 0
    records: int = 0
    expired: list[str] = field(default_factory=list)
    problems: list[BlockProblem] = field(default_factory=list)
    bad_records: list[RecordProblem] = field(default_factory=list)
    bad_packs: list[PackProblem] = field(default_factory=list)
    unnamed: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems and not self.bad_records and not self.bad_packs and not self.unnamed

    def count(self, problem: str) -> int:
        return sum(1 for p in self.problems if p.problem == problem)

    def summary(self) -> str:
        """One line: what was checked and, when something is wrong, how much of each kind."""
        checked = (f"{self.blocks} blocks ({self.bytes} bytes), {self.pins} pins, {self.records} IPNS records "
                   f"checked in {self.root}")
        if self.ok:
            return checked
        found = [f"{n} {kind} block{'s' if n != 1 else ''}" for kind in ("damaged", "missing", "unsupported", "unreadable")
                 if (n := self.count(kind))]
        if self.bad_records:
            found.append(f"{len(self.bad_records)} IPNS record{'s' if len(self.bad_records) != 1 else ''} "
                         "that do not verify")
        if self.bad_packs:
            found.append(f"{len(self.bad_packs)} pack " + ("index that does not read" if len(self.bad_packs) == 1
                                                             else "indexes that do not read"))
        if self.unnamed:
            found.append(f"{self.unnamed} more problems not named")
        return f"{checked}: {', '.join(found)}"

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "store": str(self.root), "blocks": self.blocks, "bytes": self.bytes,
                "pins": self.pins, "records": self.records, "expired_records": list(self.expired),
                "problems": [p.to_dict() for p in self.problems],
                "records_bad": [r.to_dict() for r in self.bad_records],
                "packs_bad": [p.to_dict() for p in self.bad_packs], "unnamed": self.unnamed}
