"""Memory keys: portable file names, checked before anything touches the disk.

A key names one memory file, ``<key>.md``. The rules keep a tree portable to
macOS and Windows (case-insensitive file systems) and safe to join to a path:

* letters, digits, ``_``, ``-`` and ``.`` only (ASCII);
* no leading dot (hidden names are the store's own: ``.bundlekit/``, temp files);
* at most :data:`MAX_KEY_LENGTH` characters;
* not ``MEMORY`` in any case (that name is the index);
* unique ignoring case within one tree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bundlekit.errors import InvalidKeyError

__all__ = [
    "HIDDEN_DIR",
    "INDEX_NAME",
    "MAX_KEY_LENGTH",
    "TIMELINE_DIR",
    "check_unique",
    "filename_for",
    "key_from_filename",
    "memory_files",
    "validate_key",
]

MAX_KEY_LENGTH = 128
INDEX_NAME = "MEMORY.md"
TIMELINE_DIR = "timeline"  # the day files: timeline/YYYY-MM-DD.jsonl
# The store's own files (the derived index, the lock): one hidden folder, never bundled, exported or converted.
HIDDEN_DIR = ".bundlekit"
_RESERVED = "memory"  # compared case-folded
_KEY_RE = re.compile(r"[A-Za-z0-9_.-]+")


def validate_key(key: object) -> str:
    """Return ``key`` unchanged if it is a valid memory key.

    Raises :class:`InvalidKeyError` naming the rule that failed.
    """
    if not isinstance(key, str) or not key:
        raise InvalidKeyError(
            f"memory key {key!r} is empty or not a string; use letters, digits, '_', '-', '.'"
        )
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidKeyError(
            f"memory key {key[:40]!r}... is {len(key)} characters long; the limit is {MAX_KEY_LENGTH}"
        )
    if not _KEY_RE.fullmatch(key):
        raise InvalidKeyError(
            f"memory key {key!r} contains characters other than ASCII letters, digits, '_', '-', '.'; rename it"
        )
    if key.startswith("."):
        raise InvalidKeyError(f"memory key {key!r} starts with a dot (hidden files are reserved); rename it")
    if key.lower() == _RESERVED:
        raise InvalidKeyError(f"memory key {key!r} is reserved for the index (MEMORY.md); choose another key")
    return key


def memory_files(keys: Iterable[object]) -> list[str]:
    """The file names of those of ``keys`` that are valid keys (others, as a tampered index may hold, are
    left out: no name from the index reaches a path unchecked)."""
    names = []
    for key in keys:
        try:
            names.append(filename_for(key))  # type: ignore[arg-type]
        except InvalidKeyError:
            continue
    return names


def filename_for(key: str) -> str:
    """The file name of a memory: ``<key>.md``. Validates the key first."""
    return validate_key(key) + ".md"


def key_from_filename(name: str) -> str:
    """Return the key of a memory file name ``<key>.md``.

    Raises :class:`InvalidKeyError` when the name does not end in ``.md`` or the
    key part breaks a key rule.
    """
    if not name.endswith(".md") or name == ".md":
        raise InvalidKeyError(f"file name {name!r} is not a memory file name (<key>.md)")
    return validate_key(name[: -len(".md")])


def check_unique(keys: Iterable[str], *, where: str = "the memory tree") -> None:
    """Raise :class:`InvalidKeyError` if two keys differ only in case (or are the same key twice).

    One set of the folded keys answers the usual case, every key unique (issue 37: 10,000 keys twice a sync
    round); only when it is smaller than the keys are they sorted to name the first pair."""
    keys = list(keys)
    if len({key.lower() for key in keys}) == len(keys):
        return
    seen: dict[str, str] = {}
    for key in sorted(keys):
        folded = key.lower()
        other = seen.get(folded)
        if other is not None:
            raise InvalidKeyError(
                f"memory keys {other!r} and {key!r} in {where} differ only in case, which breaks on macOS "
                "and Windows; rename or merge one of them"
            )
        seen[folded] = key
