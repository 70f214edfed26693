"""The marks a text holds, found in one pass: what the output checks ask of a text before they run a rule over it.

The secret guard (``_secrets.find_secrets``), the terminal escaping (``_terminal.printable``) and the output
redaction (``_redact.redact``) each start by asking whether the text holds what their rules need: the secret
rules' triggers (``k-`` for an ``sk-`` key, ``AKIA``, ``yJ``, ...), ``@`` for a URL's password, ``=`` for a
query's, ``%`` or ``\\`` for an escape, a control character for the terminal. Asked of a 15 MB ``memory list``
of 100,000 memories one search at a time, that was about twenty passes over the string (~150 ms); :func:`marks`
answers them all in one, in C (``bundlekit/_textscan.c``, built by ``setup.py``; where it is not built, the
same answers come from Python's searches, :func:`marks_in_python`). A mark decides nothing: where it is found
the rules run exactly as before, and where it is not, none of the rules it gates can match (each mark is a
literal every match of those rules holds). The tests compare the two on random and adversarial text
(``tests/cli/test_marks.py``).

The answer for the last text asked about is kept (a ``str`` is immutable: the same object holds the same
marks), so the listing the memory layer checked, escaped and handed to the output is scanned once, not three
times, and each check of one message scans it once. Long texts and short ones are remembered apart (one of
each): a listing's checks do not scan it again because a status line was checked between them.

:func:`marks_utf8` gives the same marks of UTF-8 bytes without decoding them (None for bytes that are not
UTF-8): a kept ``memory list`` of 100,000 memories is checked and printed as the bytes it was read as
(``_redact.shown_as_is``), not decoded into a 15 MB string and encoded again.
"""

from __future__ import annotations

import functools
import re

try:
    import bundlekit._textscan as _textscan
except ImportError:  # not built (no C compiler at install): Python's searches give the same answers
    _textscan = None  # type: ignore[assignment]

__all__ = [
    "AT", "BACKSLASH", "CONTROL", "CONTROLS", "EQUALS", "ESC", "JSON_KEY", "LINE_SEP", "PERCENT", "TRIGGERS",
    "WITHHELD", "WITHHELD_ESCAPED", "WITHHELD_TEXT", "compiled", "marks", "marks_in_python", "marks_utf8", "trigger_bit",
]

AT = 1 << 0  # "@"
EQUALS = 1 << 1  # "="
JSON_KEY = 1 << 2  # '"' then ":", whitespace between allowed (``_redact._QUERY_SECRET_JSON``'s ``"\\s*:``)
PERCENT = 1 << 3  # "%"
BACKSLASH = 1 << 4  # "\\"
WITHHELD = 1 << 5  # "[withheld]" (``_redact.WITHHELD``)
WITHHELD_ESCAPED = 1 << 6  # "[withheld]\\"
CONTROL = 1 << 7  # a character ``_terminal.printable`` escapes, or a CR
ESC = 1 << 8  # "\x1b"
LINE_SEP = 1 << 9  # U+2028 or U+2029: a line break to ``str.splitlines``, which ``_terminal.printable`` leaves
# The secret rules' triggers (``_secrets``' sources, as written there) the scan knows, bit 16 + i each. A trigger
# not listed here is not looked for by the scan: its rules run on every text (``trigger_bit`` gives None).
TRIGGERS = (
    r"A[KS]IA",
    r"g(?:h[pousr]_|ithub_pat_)",
    r"k-",
    r"xox",
    r"k_(?:live|test|prod)_",
    r"AIza",
    r"-----BEGIN ",
    r"yJ",
)
_TRIGGER_BITS = {source: 1 << (16 + i) for i, source in enumerate(TRIGGERS)}
WITHHELD_TEXT = "[withheld]"  # what the redaction puts in a credential's place (``_redact.WITHHELD``)
# What ``_terminal.printable`` escapes, as a character class's body: C0 controls but tab and newline, DEL, C1
# controls, and the Unicode bidi controls (ALM, LRM, RLM, the embeddings and overrides, the isolates); and a
# carriage return not ending a line. CONTROL marks any of these or any CR (bundlekit/_textscan.c's is_control).
CONTROLS = "\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL_CHARS = f"[{CONTROLS}\r]"
# A JSON key's end: '"', whitespace, ":" (``{"url?token" : "..."}`` is JSON too).
_JSON_KEY = r'"\s*:'
_SINGLE = ((AT, "@"), (EQUALS, "="), (PERCENT, "%"), (BACKSLASH, "\\"), (WITHHELD, WITHHELD_TEXT),
           (WITHHELD_ESCAPED, WITHHELD_TEXT + "\\"), (ESC, "\x1b"), (LINE_SEP, "\u2028"), (LINE_SEP, "\u2029"))
# A text this long or longer is remembered apart from shorter ones.
REMEMBERED_FROM = 64 * 1024
# The last short and the last long text asked about with their marks, each as one tuple (read once: another
# thread may replace it meanwhile).
_last: list[tuple[str, tuple[int, int]]] = [("", (0, 0)), ("", (0, 0))]
# The last bytes asked about (``marks_utf8``) and their answer, kept as ``_last`` is.
_last_utf8: list[tuple[bytes, tuple[int, int, int] | None]] = [(b"", (0, 0, 0))]


def compiled() -> bool:
    """Whether the compiled scan is built here."""
    return _textscan is not None


def trigger_bit(source: str | None) -> int | None:
    """The mark of the secret trigger ``source`` (a regular expression's source, as ``_secrets`` writes it), or
    None when the scan does not look for it (its rules then run on every text)."""
    return None if source is None else _TRIGGER_BITS.get(source)


@functools.cache
def _patterns() -> tuple[tuple[re.Pattern[str], int], ...]:
    """The regular expressions :func:`marks_in_python` searches, with their marks: compiled on first use (a process
    with the compiled scan never compiles them)."""
    return ((re.compile(_CONTROL_CHARS), CONTROL), (re.compile(_JSON_KEY), JSON_KEY),
            *((re.compile(source), bit) for source, bit in _TRIGGER_BITS.items()))


def marks_in_python(text: str) -> tuple[int, int]:
    """:func:`marks` with Python's searches (where the compiled scan is not built, and what the tests compare
    it with). A ``str`` subclass is read as the ``str`` it holds, as the compiled scan reads it (its own ``in``
    or ``count`` could answer otherwise)."""
    if type(text) is not str:
        text = str.__str__(text)
    bits = 0
    for bit, literal in _SINGLE:
        if literal in text:
            bits |= bit
    for pattern, bit in _patterns():
        if pattern.search(text) is not None:
            bits |= bit
    return bits, text.count("\n")


def marks(text: str) -> tuple[int, int]:
    """The marks ``text`` holds, as (bits: the constants above or'ed, how many newlines it holds)."""
    slot = len(text) >= REMEMBERED_FROM
    last_text, last_found = _last[slot]
    if last_text is text:
        return last_found
    found = _textscan.marks(text) if _textscan is not None else marks_in_python(text)
    _last[slot] = (text, found)
    return found


def marks_utf8(data: bytes) -> tuple[int, int, int] | None:
    """The marks of the text ``data`` is the UTF-8 of, as (bits, newlines, characters): ``marks(text)`` and
    ``len(text)`` of ``data.decode("utf-8")``, found without decoding it; None when ``data`` is not UTF-8 (as
    Python's strict decoder reads it). The answer for ``bytes`` (immutable) is remembered as :func:`marks`' is;
    not for another buffer (a ``bytearray``, a ``memoryview`` of one), which the same object may hold changed."""
    last_data, last_found = _last_utf8[0]
    if last_data is data:
        return last_found
    if _textscan is not None:
        found: tuple[int, int, int] | None = _textscan.marks_utf8(data)
    else:
        try:
            text = str(data, "utf-8")  # any buffer, as the compiled scan takes
        except UnicodeDecodeError:
            found = None
        else:
            found = (*marks_in_python(text), len(text))
    if len(data) >= REMEMBERED_FROM and type(data) is bytes:
        _last_utf8[0] = (data, found)
    return found
