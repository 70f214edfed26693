"""The ``MEMORY.md`` index: regenerated from the memory files on every change, never trusted.

Layout (specs/memory.md, "Index"): ``# Agent Memory``; then for each
non-empty type, in the order user, feedback, project, reference, a blank
line, ``## <Title>`` and one line per memory sorted by key (code-point
order): ``- Name (`key.md`) — description``. At most :data:`MAX_INDEX_LINES`
lines: past that the tail is cut and a last line says how many memories were
left out.

The same renderer draws the plaintext index of an encrypted bundle: only the
line changes (:func:`linked_index_line`, passed as ``line``), so the layout
and the line limit cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from bundlekit.memory.record import MEMORY_TYPES, MemoryRecord

__all__ = [
    "INDEX_TITLE",
    "MAX_INDEX_LINES",
    "SECTION_TITLES",
    "index_line",
    "linked_index_line",
    "omitted_line",
    "render_index",
]

INDEX_TITLE = "# Agent Memory"
SECTION_TITLES = {"user": "User", "feedback": "Feedback", "project": "Project", "reference": "Reference"}
MAX_INDEX_LINES = 200


def index_line(record: MemoryRecord) -> str:
    """The index line of one memory."""
    return f"- {record.name} (`{record.key}.md`) — {record.description}"


def linked_index_line(record: MemoryRecord, cid: str, *, redact: bool = False) -> str:
    """The index line of one memory in an encrypted bundle: it links the encrypted file by CID.

    ``- Name ([<key>.md](ipfs://<cid>)) — description``; with ``redact`` the
    `` — description`` part is left out (names stay visible by design).
    """
    line = f"- {record.name} ([{record.key}.md](ipfs://{cid}))"
    return line if redact else f"{line} — {record.description}"


def omitted_line(count: int) -> str:
    """The last line of a cut index, saying how many memories it leaves out."""
    noun = "memory" if count == 1 else "memories"
    return f"_{count} more {noun} not listed: the index stops at {MAX_INDEX_LINES} lines._"


def render_index(
    records: Iterable[MemoryRecord], *, line: Callable[[MemoryRecord], str] = index_line
) -> str:
    """Render the index text (ending in a newline) for ``records``, one ``line(record)`` per memory."""
    by_type: dict[str, list[MemoryRecord]] = {t: [] for t in MEMORY_TYPES}
    for record in records:
        by_type[record.type].append(record)
    lines = [INDEX_TITLE]
    total = sum(len(section) for section in by_type.values())
    for memory_type in MEMORY_TYPES:
        section = by_type[memory_type]
        if not section or len(lines) > MAX_INDEX_LINES:
            continue
        section.sort(key=lambda r: r.key)
        lines.append("")
        lines.append(f"## {SECTION_TITLES[memory_type]}")
        # Format only what can be kept (plus one line to know the limit is passed): the rest is counted.
        room = MAX_INDEX_LINES + 1 - len(lines)
        lines.extend(line(r) for r in section[: max(room, 0)])
    if len(lines) > MAX_INDEX_LINES:
        kept = lines[: MAX_INDEX_LINES - 1]
        # Do not end on a blank line or a heading with no entries under it.
        while kept and (kept[-1] == "" or kept[-1].startswith("## ")):
            kept.pop()
        left_out = total - sum(1 for text in kept if text.startswith("- "))
        lines = [*kept, omitted_line(left_out)]
    return "\n".join(lines) + "\n"
