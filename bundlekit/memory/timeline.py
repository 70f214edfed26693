"""The timeline: an append-only event log, one JSON object per line, one file per UTC day.

``timeline/YYYY-MM-DD.jsonl``; each line is
``{"ts": "<YYYY-MM-DDTHH:MM:SS.mmmZ>", "type": "<type>", ...data}`` serialised
compactly (``separators=(",", ":")``, UTF-8, keys in insertion order: ``ts``,
``type``, then the data in the order given). The day of a line is the UTC date
of its ``ts``.

A ``forgot`` entry (``Memory.forget``) names the version it removed: ``{"key", "name", "revision",
"sha256"}``, the digest of the whole file text as it was (``version_digest``), so a merge removes that
version and no other (``specs/memory.md``, "Forget"; ``specs/sync.md``, "Merge rules").
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from bundlekit.errors import MemoryStoreError, UsageError
from bundlekit.memory.filesize import MAX_MEMORY_BYTES, too_large
from bundlekit.memory.timefmt import format_timestamp_ms, parse_timestamp

__all__ = [
    "DAY_FILE_RE",
    "day_file_for",
    "encode_entry",
    "forgot_data",
    "make_entry",
    "merge_entries",
    "parse_day",
    "validate_entry",
    "version_digest",
]

DAY_FILE_RE = re.compile(r"(\d{4}-\d{2}-\d{2})\.jsonl")


def make_entry(entry_type: str, data: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """Build a timeline entry. ``ts`` and ``type`` always come from us: data cannot override them.

    Raises :class:`UsageError` for an empty type or data that is not JSON-serialisable.
    """
    if not isinstance(entry_type, str) or not entry_type.strip():
        raise UsageError("a timeline entry needs a non-empty type, e.g. note('user_said', text=...)")
    entry: dict[str, Any] = {"ts": format_timestamp_ms(now), "type": entry_type}
    for key, value in data.items():
        if key not in ("ts", "type"):
            entry[key] = value
    try:
        encode_entry(entry)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"timeline entry {entry_type!r} holds data that is not JSON-serialisable") from exc
    return entry


def version_digest(text: str) -> str:
    """The SHA-256 (hex) of a memory file's whole text, UTF-8: what a ``forgot`` entry names as the version it
    removed."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def forgot_data(key: str, name: str, digest: str, revision: int | None) -> dict[str, Any]:
    """The data of a ``forgot`` entry: the key and name (as the caller masked them) and the version removed,
    its ``revision`` (None, left out, for a file that does not parse) and ``digest``, the ``sha256`` of its
    file text (:func:`version_digest`; never the body itself)."""
    data: dict[str, Any] = {"key": key, "name": name}
    if revision is not None:
        data["revision"] = revision
    data["sha256"] = digest
    return data


def encode_entry(entry: Mapping[str, Any]) -> bytes:
    """One line of a day file, newline included."""
    return (json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode(
        "utf-8"
    )


def day_file_for(entry: Mapping[str, Any]) -> str:
    """``YYYY-MM-DD.jsonl`` for the UTC day of the entry's ``ts``."""
    return parse_timestamp(entry["ts"]).strftime("%Y-%m-%d") + ".jsonl"


def validate_entry(entry: object, where: str, *, escaped: bool = True) -> dict[str, Any]:
    """Check that ``entry`` is an object with a parseable ``ts`` and a non-empty string ``type``, holding text
    only. ``escaped=False`` says it was decoded from a JSON line with no ``\\u`` in it: strict UTF-8 text holds
    no lone surrogate, and JSON makes one only from a ``\\u`` escape, so that check is skipped (a day file's
    lines rarely hold one; encoding every entry again was a third of parsing a timeline)."""
    if not isinstance(entry, dict):
        raise MemoryStoreError(f"{where} is not a JSON object; fix or remove it")
    ts = entry.get("ts")
    try:
        parse_timestamp(ts)
    except (ValueError, TypeError) as exc:
        raise MemoryStoreError(f"{where} has no valid ISO 8601 'ts'; fix or remove it") from exc
    if not isinstance(entry.get("type"), str) or not entry["type"]:
        raise MemoryStoreError(f"{where} has no string 'type'; fix or remove it")
    if not escaped:
        return entry
    try:  # JSON's \ud800 escape decodes to a lone surrogate: text no output or file can encode
        json.dumps(entry, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MemoryStoreError(f"{where} holds a lone UTF-16 surrogate (a \\uD800-\\uDFFF escape), "
                               "which is not text; fix or remove it") from exc
    except RecursionError as exc:  # nested as deep as json.loads took, from a deeper frame: as parse_day says it
        raise MemoryStoreError(f"{where} is not valid JSON; fix or remove that line") from exc
    return entry


def parse_day(name: str, data: bytes, *, strict: bool = True) -> list[dict[str, Any]]:
    """The entries of one day file, in file order. Blank lines are skipped.

    Raises :class:`MemoryStoreError` naming the file and line of anything malformed.
    With ``strict=False`` (lock-free readers) a last line that has no newline
    yet and is not valid JSON is taken to be an append in flight and skipped.
    A day of more bytes than a memory file may hold (``filesize``; a bundle's, a merge's: the tree's own are
    read no further than that) raises :class:`MemoryFileTooLarge` unparsed: parsed, it takes ~14 times its size.
    """
    if not DAY_FILE_RE.fullmatch(name):
        raise MemoryStoreError(f"timeline/{name} is not named YYYY-MM-DD.jsonl; rename or remove it")
    if len(data) > MAX_MEMORY_BYTES:
        raise too_large(f"timeline/{name}", len(data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryStoreError(f"timeline/{name} is not UTF-8 text") from exc
    entries: list[dict[str, Any]] = []
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"timeline/{name} line {number}"
        try:
            value = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
            if not strict and number == len(lines):
                break
            raise MemoryStoreError(f"{where} is not valid JSON; fix or remove that line") from exc
        entries.append(validate_entry(value, where, escaped="\\u" in line))
    return entries


def _canonical(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def merge_entries(
    existing: Iterable[dict[str, Any]], incoming: Iterable[dict[str, Any]]
) -> tuple[list[dict[str, Any]], int]:
    """Merge two entry lists by timestamp, dropping exact duplicates.

    Two entries are duplicates when they hold the same keys and values. The
    result is sorted by parsed ``ts`` (stable: existing entries first, then in
    their order). Returns the merged list and how many incoming entries were new.
    """
    merged: list[dict[str, Any]] = []
    seen: set[str] = set()
    added = 0
    for is_new, source in ((False, existing), (True, incoming)):
        for entry in source:
            canon = _canonical(entry)
            if canon in seen:
                continue
            seen.add(canon)
            merged.append(entry)
            added += is_new
    merged.sort(key=lambda e: parse_timestamp(e["ts"]))
    return merged, added
