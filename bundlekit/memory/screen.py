"""Where the secret guard runs: on the text as stored *and* on what it parses to.

A credential can be written so the stored text does not show it: YAML escapes
(``"\\x73k-ant-..."``, ``\\u`` escapes, line continuations) or JSON escapes in a
timeline line. So a memory is checked twice, on its raw text and on each parsed
value (name, description, every frontmatter value and key, the body); a
timeline entry on its line and on each of its string values and keys. A
memory key is checked too: it becomes a file name and an index line, which
stay readable even in an encrypted bundle, so that check has no bypass.
The scanner itself is ``bundlekit._secrets`` (``find_secrets``/``guard``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from bundlekit._secrets import find_secrets, guard
from bundlekit.memory.record import MemoryRecord

__all__ = ["guard_entry", "guard_key", "guard_record", "record_values_clean"]


def _strings(value: Any, where: str | None) -> Iterator[tuple[str, str | None]]:
    """Every string in ``value`` (mapping keys included) with a name saying where it sits (none when ``where`` is
    ``None``: a scan of every value at once names no place, and formatting 17 names a memory cost more than it)."""
    if isinstance(value, str):
        yield value, where
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key, None if where is None else f"{where} key")
            yield from _strings(item, None if where is None else f"{where}[{key!r}]" if isinstance(key, str) else where)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _strings(item, where)
    elif isinstance(value, bytes):
        yield value.decode("latin-1"), where


def _values(record: MemoryRecord, where: str | None) -> Iterator[tuple[str, str | None]]:
    for key, value in record.meta.items():
        yield from _strings(key, None if where is None else f"{where} frontmatter key")
        yield from _strings(value, None if where is None else f"{where} frontmatter {key!r}")
    yield record.body, None if where is None else f"{where} body"


def _joined(record: MemoryRecord) -> str:
    """Every parsed value of ``record`` joined by newlines, for one scan: no rule matches across a line break
    (no pattern's character classes hold one, and a boundary check sees the newline as it sees a text's end),
    so the joined text holds a match exactly when one of the values does. A string key whose value is a string, a
    number, a boolean, null or a list of strings (nearly every field) is taken as it is, without ``_strings``'
    generators (the same texts, in the same order: a first follow joins 10,000 memories' fields, issue 37)."""
    parts: list[str] = []
    for key, value in record.meta.items():
        if type(key) is str:
            kind = type(value)
            if kind is str:
                parts += (key, value)
                continue
            if kind in _NO_TEXT:
                parts.append(key)
                continue
            if kind is list and all(type(item) is str for item in value):
                parts.append(key)
                parts += value
                continue
        parts += (text for text, _place in _strings(key, None))
        parts += (text for text, _place in _strings(value, None))
    parts.append(record.body)
    return "\n".join(parts)


#: Value types that hold no text (``_strings`` yields nothing for them).
_NO_TEXT = frozenset({int, float, bool, type(None)})


def guard_key(key: str, where: str = "memory key") -> None:
    """Refuse a memory key (or file name) that looks like a credential (:class:`SecretDetectedError`).

    No bypass: ``allow_secrets`` is for text that only looks like a secret, and a
    key ends up in file names and plaintext index lines.
    """
    guard(key, where, can_allow=False)


def guard_record(
    record: MemoryRecord, where: str, *, allow_secrets: bool = False, can_allow: bool = True, fields_first: bool = False
) -> None:
    """The guard on a memory's raw text, then on each parsed value (see the module docstring).

    ``fields_first`` (a write, whose file the caller has never seen) guards the values first, so a finding
    names the field and its line (``body line 2``), not a line of the rendered file.
    """
    if allow_secrets:
        return
    if not find_secrets(f"{record.raw}\n{_joined(record)}"):  # one scan of the text and its values (``_joined``)
        return
    # Something matched: the checks one by one, so the error names the first place, as the order says.
    if not fields_first:
        guard(record.raw, where, can_allow=can_allow)
    for text, place in _values(record, where):
        guard(text, place or where, can_allow=can_allow)
    if fields_first:
        guard(record.raw, where, can_allow=can_allow)


def record_values_clean(record: MemoryRecord) -> bool:
    """True when no parsed value of ``record`` matches a secret rule (the derived index keeps this)."""
    # One scan of the values joined by newlines (no rule matches across a line break): a finding
    # here only flags the record; guard_record then says which value.
    return not find_secrets(_joined(record))


def guard_entry(
    entry: Mapping[str, Any], line: str, where: str, *, allow_secrets: bool = False, can_allow: bool = False
) -> None:
    """The guard on a timeline entry: its encoded ``line``, then each string in it (keys included)."""
    if allow_secrets:
        return
    guard(line, where, can_allow=can_allow)
    for text, place in _strings(entry, where):
        guard(text, place or where, can_allow=can_allow)
