"""A memory file's frontmatter read without PyYAML when it is certainly simple: what YAML reads, faster.

Output reads every memory it shows from its file at that moment (the derived
index holds no copy of it: specs/memory.md, "Derived index"), so ``memory list``
and a build parse every file. PyYAML costs about half a millisecond a file and
fifty to import; almost every frontmatter is lines of ``key: value`` whose
values YAML can only read one way. :func:`quick_frontmatter` reads exactly
those, and says ``None`` for anything else, which then goes to the bounded
YAML reader (``frontmatter.load_frontmatter``). It never guesses: each form it
takes is one PyYAML 6.0.x reads as stated (``yaml/resolver.py``: implicit types
are chosen by a scalar's first character, and for a letter only the boolean
and null words apply; ``yaml/scanner.py``: a plain scalar in block context ends
at ``: `` or `` #``, and a single-line quoted scalar is its text when it holds
no quote or escape), and tests/memory/test_quickyaml.py compares it with PyYAML
on generated frontmatter:

* a key: an ASCII letter, then letters, digits, ``_`` or ``-`` (not a YAML word);
* ``key: value`` where the value is plain text (a letter first, no ``: ``, no
  `` #``, no trailing ``:`` or space, printable, no line break of any kind; not a
  YAML boolean or null word), ``true``/``false``, a decimal integer of at most
  18 digits without a leading zero, one of our timestamps, ``30d``/``90d``, text
  in single or double quotes holding no quote, backslash or control character,
  or a flow list ``[a, b]`` of plain words;
* ``key:`` followed by the lines ``- item`` (one indentation for all) of a block
  list of such plain text or quoted text.

No blank lines, comments, duplicate keys, tabs or carriage returns; at most
``MAX_NODES`` values.
"""

from __future__ import annotations

import re
from typing import Any

from bundlekit.memory.frontmatter import MAX_NODES

__all__ = ["quick_frontmatter"]

# PyYAML's boolean and null words (yaml/resolver.py); "true"/"false" are read here, the others go to PyYAML.
_WORDS = frozenset(
    "yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF null Null NULL".split()  # noqa: SIM905
)
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
# A character PyYAML reads as itself inside a plain scalar and that is no break for str.splitlines either.
_CHAR = r"[^\x00-\x20\x7f-\x9f:#\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]"
_PLAIN = re.compile(rf"[A-Za-z](?:{_CHAR}|:(?={_CHAR}|[:#])|(?<! )#| (?=[^#]))*")
_QUOTED_CHAR = r"[^\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff\\"
_SINGLE = re.compile(rf"'({_QUOTED_CHAR}']*)'")
_DOUBLE = re.compile(rf'"({_QUOTED_CHAR}"]*)"')
_INT = re.compile(r"0|[1-9][0-9]{0,17}")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_WORD_LIST = re.compile(r"\[((?:[A-Za-z][A-Za-z0-9]*(?: [A-Za-z0-9]+)*)(?:, [A-Za-z][A-Za-z0-9]*(?: [A-Za-z0-9]+)*)*)?\]")
_ITEM = re.compile(r"( *)- (.*)")
# The common line, in one match: a key and a plain text value (still checked against the YAML words).
_PLAIN_LINE = re.compile(rf"([A-Za-z][A-Za-z0-9_-]*): ({_PLAIN.pattern})")
_SPECIAL_TEXT = frozenset(("30d", "90d"))


def _text(value: str) -> str | None:
    """``value`` as YAML reads it when it is plain or simply quoted text, else ``None``."""
    first = value[:1]
    if first == "'":
        match = _SINGLE.fullmatch(value)
        return None if match is None else match.group(1)
    if first == '"':
        match = _DOUBLE.fullmatch(value)
        return None if match is None else match.group(1)
    if _PLAIN.fullmatch(value) and value not in _WORDS:
        return value
    return None


def _scalar(value: str) -> Any:
    """The value of ``key: value`` as YAML reads it, or ``_UNSURE``."""
    if value == "true":
        return True
    if value == "false":
        return False
    first = value[:1]
    if first.isdigit() and first.isascii():
        if _INT.fullmatch(value):
            return int(value)
        if _TIMESTAMP.fullmatch(value) or value in _SPECIAL_TEXT:
            return value
        return _UNSURE
    if first == "[":
        match = _WORD_LIST.fullmatch(value)
        if match is None:
            return _UNSURE
        items = match.group(1).split(", ") if match.group(1) else []
        return _UNSURE if any(item in _WORDS for item in items) else items
    text = _text(value)
    return _UNSURE if text is None else text


_UNSURE: Any = object()


def quick_frontmatter(text: str) -> dict[str, Any] | None:
    """The mapping YAML reads from the frontmatter ``text`` (what lies between the fences) when it is of
    the simple forms in the module docstring, else ``None`` (read it with ``load_frontmatter``)."""
    if "\r" in text or "\t" in text:
        return None
    lines = text.split("\n")
    if lines and lines[0] == "":
        del lines[0]
    if lines and lines[-1] == "":
        del lines[-1]
    meta: dict[str, Any] = {}
    nodes = 1
    items: list[str] | None = None  # the block list being read
    indent: str | None = None
    for line in lines:
        if items is not None and line[:1] in (" ", "-"):
            match = _ITEM.fullmatch(line)
            if match is None or (indent is not None and match.group(1) != indent):
                return None
            indent = match.group(1)
            item = _text(match.group(2))
            if item is None:
                return None
            items.append(item)
            nodes += 1
            continue
        if items is not None and not items:
            return None  # "key:" with no items is null: PyYAML decides
        items = indent = None
        simple = _PLAIN_LINE.fullmatch(line)
        if simple is not None and simple.group(2) not in _WORDS:
            key, value = simple.groups()
            if key in _WORDS or key in meta:
                return None
            meta[key] = value
            nodes += 2
            continue
        key, colon, value = line.partition(": ")
        if not colon:
            if not line.endswith(":"):
                return None
            key, value = line[:-1], ""
        if not _KEY.fullmatch(key) or key in _WORDS or key in meta:
            return None
        if value:
            scalar = _scalar(value)
            if scalar is _UNSURE:
                return None
            meta[key] = scalar
            nodes += 2 + (len(scalar) if isinstance(scalar, list) else 0)
        else:
            items = meta[key] = []
            nodes += 2
        if nodes > MAX_NODES:
            return None
    if items is not None and not items:
        return None
    return meta if meta and nodes <= MAX_NODES else None
