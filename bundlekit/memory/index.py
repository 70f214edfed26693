"""The ``MEMORY.md`` index: the one renderer and the one parser of its link lines.

The index is regenerated from the memory files on every change and never
trusted as data. Its form is the one three.ws's runtime writes and reads
(``_rebuildIndex`` in ``src/memory/index.js`` of ``nirholas/three.ws``) and
Claude Code reads (specs/memory.md, "Index")::

    # Memory

    ## User
    - [Name](key.md) — description

    ## Feedback
    ...

Sections come in the order user, feedback, project, reference (empty ones left
out), lines sorted by key in code-point order. At most :data:`MAX_INDEX_LINES`
lines: past that the tail is cut and a last line says how many memories were
left out.

An encrypted bundle's plaintext index has the same layout, but each line links
the encrypted file by CID the way three.ws's ``_rebuildEncryptedIndex`` does:
``- [key.md](ipfs://<cid>) — description`` (the `` — description`` part left
out when redacted). Pass ``links`` to :func:`render_index`.

What looks like a credential in a name or description is written as
``[withheld]`` (``withhold``): a hand-planted file never puts one in the index.

Text inside a line never holds ``[``, ``]`` or ``\\``: they are written as the
HTML character references ``&#91;``, ``&#93;``, ``&#92;`` (and ``&`` as
``&amp;`` where it would start one of those), which every Markdown reader
shows as the character and which cannot close a link early or forge one:
three.ws's link pattern has no escapes. :func:`parse_index` decodes them (and
CommonMark's backslash escapes, for indexes written by others). A control character
(C0, DEL, C1, a bidi control) is written as its visible escape (``_terminal.printable``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple, Protocol

from bundlekit._terminal import printable
from bundlekit.memory.record import MEMORY_TYPES, MemoryRecord

__all__ = [
    "INDEX_TITLE",
    "MAX_INDEX_LINES",
    "SECTION_TITLES",
    "IndexLink",
    "IndexRecord",
    "broken_fields",
    "index_line",
    "link_line",
    "list_rest",
    "list_fields",
    "list_line",
    "omitted_line",
    "parse_index",
    "render_index",
    "render_links",
]

INDEX_TITLE = "# Memory"
SECTION_TITLES = {"user": "User", "feedback": "Feedback", "project": "Project", "reference": "Reference"}
MAX_INDEX_LINES = 200
_DASH = "\u2014"  # EM DASH, between spaces, before a description


class IndexRecord(Protocol):
    """What the index needs of a memory: a ``MemoryRecord``, or a row of a derived index."""

    @property
    def key(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def type(self) -> str: ...


class IndexLink(NamedTuple):
    """One link line of an index: its link text, its target and the text after the dash ("" if none)."""

    title: str
    target: str
    description: str


_ESCAPES = {"[": "&#91;", "\\": "&#92;", "]": "&#93;"}
# Patterns compiled on first use (re caches them): a command that renders or parses no index skips that.
_NEEDS_ESCAPE = r"[\[\]\\]|&(?=#9[123];|amp;)"
# CommonMark: a backslash escapes ASCII punctuation only.
_DECODE = r"&(#91|#92|#93|amp);|\\([!-/:-@\[-`{-~])"
_DECODED = {"#91": "[", "#92": "\\", "#93": "]", "amp": "&"}
# ``- [Title](target) — text``; bullet ``-``, ``*`` or ``+``; the dash may be an em dash, an en dash,
# ``-`` or ``--``; the text is optional. A backslash escapes a bracket in the title (CommonMark).
_LINK = (
    r"^\s*[-*+]\s*\[(?P<title>(?:\\.|[^\]\\])*)\]\((?P<target>[^)\s]+)\)"
    r"\s*(?:(?:\u2014|\u2013|-{1,2})\s*(?P<text>.*?))?\s*$"
)


def _escape(text: str) -> str:
    """``text`` as it may stand in an index line: one line, no bracket or backslash, no control character (an
    ESC, a NUL, a bidi override an agent put in a title is written as its visible escape, ``\\x1b`` or
    ``\\u202e``, as a terminal is shown it: ``cat MEMORY.md`` must not retitle or recolour a terminal)."""
    flat = printable(" ".join(text.replace("\t", " ").splitlines()).strip())
    return re.sub(_NEEDS_ESCAPE, lambda m: _ESCAPES.get(m.group(), "&amp;"), flat)


def _unescape(text: str) -> str:
    return re.sub(_DECODE, lambda m: _DECODED[m.group(1)] if m.group(1) else m.group(2), text)


def link_line(title: str, target: str, description: str | None = None) -> str:
    """``- [title](target) — description`` (without the dash part when ``description`` is None or empty).

    ``title`` and ``description`` are escaped (module docstring), and what
    looks like a credential in them is withheld (``withhold.mask``: an index is
    plaintext, even in an encrypted bundle); ``target`` is written as given and
    must not hold ``)`` or white space.
    """
    # Imported here: the secret rules are needed only when an index is rendered.
    from bundlekit.memory.withhold import mask

    line = f"- [{_escape(mask(title))}]({target})"
    text = _escape(mask(description)) if description is not None else ""
    return f"{line} {_DASH} {text}" if text else line


def render_links(rows: Iterable[tuple[str, str, str]]) -> str:
    """Link lines for ``(title, target, description)`` rows in the given order, each ending in a newline."""
    return "".join(link_line(title, target, description) + "\n" for title, target, description in rows)


def omitted_line(count: int) -> str:
    """The last line of a cut index, saying how many memories it leaves out."""
    noun = "memory" if count == 1 else "memories"
    return f"_{count} more {noun} not listed: the index stops at {MAX_INDEX_LINES} lines._"


def list_fields(record: MemoryRecord) -> str:
    """The memory's line in ``bundlekit memory list`` before it is escaped for a terminal: key, type,
    revision, updated, name — description (tab-separated). Made from the record just read from its file."""
    return f"{record.key}\t{list_rest(record, record.name, record.description)}"


def list_rest(record: MemoryRecord, name: str, description: str) -> str:
    """:func:`list_fields` after the key and its tab, with ``name`` and ``description`` in the record's (the
    index keeps this with them withheld, and puts the key from the file name before it)."""
    return f"{record.type}\tr{record.revision}\t{record.meta['updated']}\t{name} — {description}"


def broken_fields(key: str, problem: str) -> str:
    """The ``bundlekit memory list`` line of a memory file that does not parse: key, ``broken``, ``-`` for
    revision and updated, and the problem (naming the file and line, never a value of it)."""
    return f"{key}\tbroken\t-\t-\t{problem}"


def list_line(record: MemoryRecord) -> str:
    """:func:`list_fields`, terminal-safe (:func:`bundlekit._terminal.printable`). The fields are single
    lines, so a listing of these lines is the listing escaped."""
    return printable(list_fields(record))


def index_line(record: IndexRecord) -> str:
    """The plain index's line for ``record``: ``- [name](key.md) — description``."""
    return link_line(record.name, f"{record.key}.md", record.description)


def _record_line(record: IndexRecord, links: Mapping[str, str] | None, redact: bool) -> str:
    filename = f"{record.key}.md"
    if links is None:
        return index_line(record)
    return link_line(filename, f"ipfs://{links[record.key]}", None if redact else record.description)


def render_index(
    records: Iterable[IndexRecord],
    *,
    links: Mapping[str, str] | None = None,
    redact: bool = False,
    total: int | None = None,
) -> str:
    """Render the index text (ending in a newline) of ``records``.

    Plain: ``- [name](key.md) — description`` per memory. With ``links`` (key
    -> CID text of the encrypted file) the encrypted form
    ``- [key.md](ipfs://<cid>) — description``, and with ``redact`` the
    description is left out. Records are read through :class:`IndexRecord`
    (``key``, ``name``, ``description``, ``type`` in the four types).
    ``total``: the number of memories when ``records`` holds only the first
    :data:`MAX_INDEX_LINES` in all (by type in the index's order, then by
    key), all that can be shown.
    """
    by_type: dict[str, list[IndexRecord]] = {t: [] for t in MEMORY_TYPES}
    for record in records:
        by_type[record.type].append(record)
    lines = [INDEX_TITLE]
    if total is None:
        total = sum(len(section) for section in by_type.values())
    for memory_type in MEMORY_TYPES:
        section: Sequence[IndexRecord] = by_type[memory_type]
        if not section or len(lines) > MAX_INDEX_LINES:
            continue
        section = sorted(section, key=lambda r: r.key)
        lines.append("")
        lines.append(f"## {SECTION_TITLES[memory_type]}")
        # Format only what can be kept (plus one line to know the limit is passed): the rest is counted.
        room = MAX_INDEX_LINES + 1 - len(lines)
        lines.extend(_record_line(r, links, redact) for r in section[: max(room, 0)])
    if len(lines) > MAX_INDEX_LINES:
        kept = lines[: MAX_INDEX_LINES - 1]
        # Do not end on a blank line or a heading with no entries under it.
        while kept and (kept[-1] == "" or kept[-1].startswith("## ")):
            kept.pop()
        left_out = total - sum(1 for text in kept if text.startswith("- "))
        lines = [*kept, omitted_line(left_out)]
    return "\n".join(lines) + "\n"


def parse_index(text: str) -> list[IndexLink]:
    """Every link line of an index, in order, decoded; other lines (headings, prose) are ignored.

    Reads what :func:`render_index` and :func:`render_links` write (so
    ``parse_index(render_links(rows)) == rows`` for one-line text), and the
    variants other writers use: bullets ``*`` and ``+``, an en dash or hyphens
    before the description, backslash escapes in the title.
    """
    out: list[IndexLink] = []
    for line in text.splitlines():
        m = re.match(_LINK, line)
        if m:
            out.append(IndexLink(_unescape(m.group("title")), m.group("target"), _unescape(m.group("text") or "")))
    return out
