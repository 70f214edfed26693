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

import functools
import re
from typing import Any

from bundlekit.memory.frontmatter import MAX_NODES

__all__ = ["quick_frontmatter"]

# PyYAML's boolean and null words (yaml/resolver.py); "true"/"false" are read here, the others go to PyYAML.
_WORDS = frozenset(
    "yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF null Null NULL".split()  # noqa: SIM905
)
_KEY = r"[A-Za-z][A-Za-z0-9_-]*"
# A character PyYAML reads as itself inside a plain scalar and that is no break for str.splitlines either.
_CHAR = r"[^\x00-\x20\x7f-\x9f:#\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]"
_PLAIN = rf"[A-Za-z](?:{_CHAR}|:(?={_CHAR}|[:#])|(?<! )#| +(?=[^#\s]))*"
_QUOTED_CHAR = r"[^\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff\\"
_TEXT = rf"(?:{_PLAIN}|'{_QUOTED_CHAR}']*'|\"{_QUOTED_CHAR}\"]*\")"
_WORD = r"[A-Za-z][A-Za-z0-9]*(?: [A-Za-z0-9]+)*"
_VALUE = (
    rf"(?:{_TEXT}|0|[1-9][0-9]{{0,17}}|[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}T[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}Z|30d|90d"
    rf"|\[(?:{_WORD}(?:, {_WORD})*)?\])"
)
# The whole frontmatter in one match: "key: value" lines and "key:" lines each followed by one or more "- item"
# lines of one indentation (the backreference). Then its lines are split in one more call.
# Compiled on first use (about 4 ms): a command that parses no file (``memory list`` from the index) skips it.
_DOCUMENT_PATTERN = rf"\n?(?:{_KEY}: {_VALUE}\n|{_KEY}:\n( *)- {_TEXT}\n(?:\1- {_TEXT}\n)*)+"


@functools.cache
def _document() -> re.Pattern[str]:
    return re.compile(_DOCUMENT_PATTERN)

_LINES = re.compile(rf"^(?:({_KEY}):(?: (.*))?| *- (.*))$", re.MULTILINE)


def _value(text: str) -> Any:
    """A value :func:`_document` matched, as YAML reads it; ``_UNSURE`` for a YAML word it leaves to PyYAML."""
    first = text[0]
    if first == "'" or first == '"':
        return text[1:-1]
    if first == "[":
        items = text[1:-1].split(", ") if len(text) > 2 else []
        return _UNSURE if any(item in _WORDS for item in items) else items
    if first <= "9":  # a digit: an integer, or one of our timestamps, 30d, 90d (text)
        return int(text) if text.isdigit() else text
    if text in _WORDS:
        return True if text == "true" else False if text == "false" else _UNSURE
    return text


_UNSURE: Any = object()


def quick_frontmatter(text: str) -> dict[str, Any] | None:
    """The mapping YAML reads from the frontmatter ``text`` (what lies between the fences) when it is of
    the simple forms in the module docstring, else ``None`` (read it with ``load_frontmatter``)."""
    if _document().fullmatch(text) is None:
        return None
    meta: dict[str, Any] = {}
    items: list[Any] = []
    nodes = 1
    for key, value, item in _LINES.findall(text):
        if key:
            if key in _WORDS or key in meta:
                return None  # a YAML word as a key, or a key twice (YAML keeps the last): PyYAML decides
            if value:
                converted = _value(value)
                if converted is _UNSURE:
                    return None
                meta[key] = converted
                nodes += 2 + (len(converted) if isinstance(converted, list) else 0)
            else:
                items = meta[key] = []
                nodes += 2
        else:
            converted = _value(item)
            if converted is _UNSURE or item[0] == "[" or item[0] <= "9":
                return None  # only text is matched as an item; a word goes to PyYAML
            items.append(converted)
            nodes += 1
    return meta if nodes <= MAX_NODES else None
