"""Text safe to show on a terminal: control characters become visible escapes.

The escaping the CLI applies to text from files (:func:`printable`, :func:`printable_field`; ``cli/output``
exports both), here at the base layer so that the memory index can store its ``memory list`` lines
already escaped (a 10,000-line listing is then printed without a search over its ~1 MB).
"""

from __future__ import annotations

import re

from bundlekit._marks import CONTROL, CONTROLS, marks

__all__ = ["printable", "printable_field"]

# The controls (``_marks.CONTROLS``) and a carriage return not ending a line.
_CONTROLS = CONTROLS
_UNPRINTABLE = re.compile(f"[{_CONTROLS}]|\r(?!\n)")
# One field of a tab-separated listing: tab and newline too, so a name cannot forge a column or a row.
_UNPRINTABLE_FIELD = re.compile(f"[\t\n\r{_CONTROLS}]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` safe to show on a terminal: each control character that could move the cursor, recolour,
    retitle or reorder what is shown becomes a visible escape (ESC as ``\\x1b``, a lone CR as ``\\x0d``,
    RLO as ``\\u202e``). Tab, newline and CRLF line ends stay as they are; everything else is unchanged."""
    if not marks(text)[0] & CONTROL:  # none of the characters _UNPRINTABLE can match (a CR ending a line too)
        return text
    return _UNPRINTABLE.sub(_escaped, text)


def printable_field(text: str) -> str:
    """One field of a tab-separated listing (a file name from a foreign DAG) safe to show: as :func:`printable`,
    and tab, newline and CR escaped too, so one name stays one field of one row."""
    return _UNPRINTABLE_FIELD.sub(_escaped, text)
