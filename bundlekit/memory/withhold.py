"""What output shows of a memory that holds a credential: the memory with the credential withheld.

The guard refuses a credential on every write and before every build, but a
file planted by hand is still read: ``list``, ``recall``, ``context``,
``MEMORY.md`` and the MCP tools would show its parsed values, and a YAML
escape (``"\\x73k-ant-..."``) hides the credential from the stored text, not
from what it decodes to. Everything that shows a memory therefore shows
:func:`withhold`'s copy of a record read from its file whose values hold one
(``screen.record_values_clean``, run on what output is about to show): each match of a secret rule in a parsed value
(name, description, every frontmatter value and key, the body) is replaced by
:data:`WITHHELD` (``bundlekit._redact.mask``: the one redaction every output passes, so the CLI, the MCP
tools and the browsing interface withhold the same text). The rest of the memory stays readable, so the memory can still
be found and fixed. ``WITHHELD`` is shorter than any match of a rule, so a
withheld text never outgrows the budget the original was fitted into. The
copy's file text (``raw``) is rendered again from the withheld values: the
stored text would still carry the credential behind its escapes.

A timeline entry planted by hand is shown the same way (:func:`withhold_entry`).

The stored file is unchanged: the warning names the file (``bundlekit build``
refuses the tree and names the line), and its writer removes the credential.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bundlekit._redact import WITHHELD, each_string, mask
from bundlekit.memory.record import MemoryRecord, render_memory_file

__all__ = ["WITHHELD", "mask", "withheld_warning", "withhold", "withhold_entry"]


def _masked(value: Any) -> Any:
    return each_string(value, mask)


def withhold(record: MemoryRecord) -> tuple[MemoryRecord, list[str]]:
    """A copy of ``record`` with every credential in its parsed values withheld, and which fields held one
    (``name``, ``description``, ``frontmatter 'tags'``, ``a frontmatter key``, ``body``; never the text).

    The copy's ``raw`` is the file rendered from the withheld values, not the stored text: an escape
    (``\\x73k-ant-...``) hides a credential from :func:`mask` as it does from the guard's first look.
    """
    fields: list[str] = []
    meta: dict[Any, Any] = {}
    for key, value in record.meta.items():
        shown_key, shown = _masked(key), _masked(value)
        if shown_key != key:
            fields.append("a frontmatter key")
        if shown != value:
            fields.append(key if key in ("name", "description") else f"frontmatter {shown_key!r}")
        meta[shown_key] = shown
    body = mask(record.body)
    if body != record.body:
        fields.append("body")
    if not fields:
        return record, []
    raw = render_memory_file(meta, body, where=record.filename)
    return MemoryRecord(key=record.key, meta=meta, body=body, raw=raw), fields


def withhold_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the timeline ``entry`` with every credential in its strings (keys included) withheld."""
    shown: dict[str, Any] = _masked(entry)
    return shown


def withheld_warning(filename: str, fields: list[str]) -> str:
    """The warning for a memory shown with ``fields`` withheld: the file and the fields, never the text."""
    return (
        f"{filename}: {', '.join(fields)} withheld from the output: it looks like a credential; "
        "remove it from the file (`bundlekit build` refuses the tree and names the line)"
    )
