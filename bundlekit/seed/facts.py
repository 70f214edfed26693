"""The small rules every lane applies to what an account service answers: the values it documents, or nothing.

An answer is foreign input: a field is taken only when it has the documented type, text is cut to one line
(names, descriptions) or to a bound (bodies), a handle must match the service's own rule before it names a
memory key, and lists are read to a bound. A value that breaks a rule is dropped (the fact is left out), or,
for the account's own handle, refused whole (``SeedError``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from bundlekit.errors import SeedError

__all__ = ["MAX_LINE", "MAX_TEXT", "bullets", "handle", "handle_ok", "items", "key_part", "line", "number", "text"]

MAX_LINE = 200  # a name or description: one line of the index
MAX_TEXT = 2000  # one fact's text (a bio, a post)
_KEY_UNSAFE = re.compile(r"[^a-z0-9_.-]+")
_SPACES = re.compile(r"\s+")


def _kept(char: str) -> str:
    """``char`` as a fact keeps it: a line or paragraph separator (U+0085, U+2028, U+2029) as a line break; a
    control character (C0 but tab and line break, DEL, C1) or an invisible format character (bidi overrides and
    isolates, zero-width space, soft hyphen, BOM, the tag characters that smuggle text past a reader) dropped,
    so what a memory shows is what it holds and a credential split by one is whole for the guard; the
    zero-width joiners (U+200C, U+200D) stay: emoji and several scripts need them."""
    if char in "\n\t":
        return char
    category = unicodedata.category(char)
    if category in ("Zl", "Zp") or char == "\x85":
        return "\n"
    if category in ("Cc", "Cs", "Co", "Cn") or (category == "Cf" and char not in "\u200c\u200d"):
        return ""
    return char


def text(value: object, limit: int = MAX_TEXT) -> str | None:
    """``value`` when it is non-blank text, stripped, cut to ``limit`` characters (with ``...``); else None.
    Control, invisible format and unpaired surrogate characters are dropped (:func:`_kept`)."""
    if not isinstance(value, str):
        return None
    cleaned = "".join(_kept(c) for c in value).strip()
    if not cleaned:
        return None
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 3].rstrip() + "..."


def line(value: object, limit: int = MAX_LINE) -> str | None:
    """``text`` on one line: every run of whitespace, line breaks included, becomes one space."""
    found = text(value, limit * 2)
    return None if found is None else text(_SPACES.sub(" ", found), limit)


def number(value: object) -> int | None:
    """A documented count: a non-negative integer (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53 else None


def handle(value: object, pattern: str, what: str) -> str:
    """The account's handle when it matches the service's rule ``pattern`` (it names memory keys and the
    seed); ``SeedError`` otherwise (the answer is not the documented account)."""
    if isinstance(value, str) and re.fullmatch(pattern, value):
        return value
    raise SeedError(f"{what} is not a valid handle in the service's answer; refused (nothing was written)")


def key_part(value: str, limit: int = 60) -> str:
    """``value`` as part of a memory key: lower case, runs of anything but ``a-z0-9_.-`` as ``-``, cut."""
    part = _KEY_UNSAFE.sub("-", value.lower()).strip("-.")[:limit].strip("-.")
    return part or "x"


def items(value: object, limit: int) -> Iterator[Mapping[str, Any]]:
    """The first ``limit`` objects of a documented list (anything else in it skipped); nothing for a non-list."""
    if not isinstance(value, list):
        return
    taken = 0
    for item in value:
        if taken >= limit:
            return
        if isinstance(item, dict):
            taken += 1
            yield item


def handle_ok(value: str, pattern: str) -> bool:
    """True when ``value`` matches the service's rule ``pattern`` whole."""
    return re.fullmatch(pattern, value) is not None


def bullets(fields: Iterable[tuple[str, str | None]]) -> str:
    """``- LABEL: VALUE`` lines for the fields that have a value; a value of several lines (a bio) continues
    indented under its own item, so the account's text can never start a line of the memory: it cannot forge a
    fact of its own (``- Location: ...``), a heading, or a ``---`` line at the start of one."""
    def indented(value: str) -> str:
        return "\n".join(f"  {part}" if part.strip() else "" for part in value.split("\n")).lstrip()

    return "\n".join(f"- {label}: {indented(value)}" for label, value in fields if value)
