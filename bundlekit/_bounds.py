"""Whole numbers a user or a model gives: the text checked first, then the range, before anything uses them.

The one rule for every numeric argument of the CLI (``cli/_params.Count``) and of the MCP
tools and prompts (``mcp_server``): a number arrives as text (or as an ``int`` a JSON
parser made), and two things go wrong after a bare ``int()``:

* converting the text itself fails in ways a caller does not expect: 5,000 digits exceed
  CPython's limit on decimal conversion (``ValueError: Exceeds the limit (4300 digits)``,
  docs.python.org "Integer string conversion length limitation"), which surfaced as an
  internal error with a traceback;
* a number the surface accepts overflows further in: SQLite binds at most a signed 64-bit
  INTEGER (``OverflowError: Python int too large to convert to SQLite INTEGER`` from
  ``memory recall --limit 9223372036854775808``).

So :meth:`Bound.parse` reads at most :data:`MAX_DIGITS` digits (an optional sign, then
ASCII digits; white space around is ignored) before converting, and every bound has an
upper end no larger than :data:`MAX_COUNT`. Errors are ``ValueError`` with a message
naming the range and never echoing more than a few characters of what was given; each
surface turns it into its usage error (click's exit 2, MCP's ``-32602`` invalid params).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "CONTEXT_TOKENS", "DEADLINE_SECONDS", "MAX_COUNT", "MAX_DIGITS", "RECALL_LIMIT", "Bound", "parse_seconds",
    "shown_value",
]

#: The largest signed 64-bit integer: SQLite's INTEGER, C's ssize_t.
MAX_COUNT: Final = 2**63 - 1
#: Digits of MAX_COUNT: more can never be in range, so they are never converted.
MAX_DIGITS: Final = len(str(MAX_COUNT))
_WHOLE = re.compile(r"[+-]?[0-9]+")


def shown_value(value: object, *, quoted: int = 24) -> str:
    """What an error may repeat of a given value: up to ``quoted`` characters whole, longer ones only as their
    length (never a cut-off piece: the output redaction must see a credential whole to withhold it)."""
    text = str(value)
    return repr(text) if len(text) <= quoted else f"a value of {len(text)} characters"


@dataclass(frozen=True)
class Bound:
    """An inclusive range ``low..high`` for one kind of count (``high`` at most :data:`MAX_COUNT`)."""

    low: int
    high: int

    def __post_init__(self) -> None:
        if not -MAX_COUNT <= self.low <= self.high <= MAX_COUNT:
            raise ValueError(f"a bound must lie within a signed 64-bit integer, not {self.low}..{self.high}")

    def parse(self, text: str, what: str) -> int:
        """``text`` as a whole number in range; ``ValueError`` naming ``what`` and the range otherwise."""
        stripped = text.strip()
        if not stripped.isascii() or not _WHOLE.fullmatch(stripped):
            raise ValueError(f"{what} must be a whole number from {self.low} to {self.high}, not {shown_value(text)}")
        if len(stripped.lstrip("+-").lstrip("0")) > MAX_DIGITS:
            raise ValueError(f"{what} must be from {self.low} to {self.high}, not a number of "
                             f"{len(stripped)} digits")
        return self.check(int(stripped), what)

    def check(self, value: int, what: str) -> int:
        """``value`` itself when in range; ``ValueError`` naming ``what`` and the range otherwise."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{what} must be a whole number from {self.low} to {self.high}")
        if not self.low <= value <= self.high:
            shown = str(value) if value.bit_length() <= 64 else "a larger number"  # str() of a huge int can fail
            raise ValueError(f"{what} must be from {self.low} to {self.high}, not {shown}")
        return value


#: Memories a recall returns (CLI ``memory recall --limit``; MCP ``memory_recall`` has its own, smaller cap).
RECALL_LIMIT: Final = Bound(0, 1_000_000)
#: A context block's token budget (CLI ``memory context --max-tokens``, MCP ``memory_context``, which also
#: refuses 0): 400 MB of text, far past any tree.
CONTEXT_TOKENS: Final = Bound(0, 100_000_000)
#: A deadline in seconds (``load --deadline``): positive and finite (``nan`` would never pass, ``inf`` never end),
#: at most about 31 years.
DEADLINE_SECONDS: Final = 1e9
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def parse_seconds(text: str, what: str, high: float = DEADLINE_SECONDS) -> float:
    """``text`` as a number of seconds above 0 and at most ``high``: a plain decimal, never ``nan`` or ``inf``."""
    stripped = text.strip()
    if len(stripped) > 40 or not stripped.isascii() or not _DECIMAL.fullmatch(stripped):
        raise ValueError(f"{what} must be a number of seconds above 0 and at most {high:g}, not {shown_value(text)}")
    value = float(stripped)
    if not (math.isfinite(value) and 0 < value <= high):
        raise ValueError(f"{what} must be above 0 and at most {high:g} seconds, not {stripped}")
    return value
