"""One memory file: frontmatter plus a Markdown body, parsed and rendered canonically.

Parsing splits the ``---`` fences with python-frontmatter and reads the YAML
with :func:`bundlekit.memory.frontmatter.load_frontmatter` (bounded, no
aliases or tags, timestamps left as the strings written), so every value reads
back as the plain scalar it was written as and unknown keys survive untouched.
``created`` and ``updated`` are then normalised to ``YYYY-MM-DDTHH:MM:SSZ``.

Rendering is deterministic: the keys come in a fixed order (required, then
``revision``, then the optional known keys, then unknown keys in their
original order); every text value is written plain where YAML readers and
three.ws's line reader see the same text, else double-quoted, lists and
mappings in flow style (:func:`bundlekit.memory.frontmatter.dump_frontmatter`),
so any single-line text reads back exactly as given and every machine writes
the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cached_property
from typing import Any

from bundlekit.errors import FrontmatterError
from bundlekit.memory.filesize import check_text_size
from bundlekit.memory.frontmatter import (
    YAML_TIMESTAMP_TAG,
    dump_frontmatter,
    load_frontmatter,
    plain_problem,
    reads_back,
    without_timestamps,
)
from bundlekit.memory.quickyaml import quick_frontmatter
from bundlekit.memory.timefmt import format_timestamp, parse_timestamp

__all__ = [
    "DECAY_VALUES",
    "MEMORY_TYPES",
    "OPTIONAL_KEYS",
    "REQUIRED_KEYS",
    "YAML_TIMESTAMP_TAG",
    "MemoryRecord",
    "frontmatter_text",
    "name_as_written",
    "parse_memory_file",
    "render_memory_file",
    "rendered_record",
    "unplain_keys",
    "validate_meta",
    "without_timestamps",
]

MEMORY_TYPES = ("user", "feedback", "project", "reference")
DECAY_VALUES = ("never", "30d", "90d")
REQUIRED_KEYS = ("name", "description", "type", "created", "updated")
# Rendering order of the known keys; unknown keys follow in their own order.
KNOWN_ORDER = (
    "name",
    "description",
    "type",
    "created",
    "updated",
    "revision",
    "source",
    "decay",
    "tags",
    "important",
)
OPTIONAL_KEYS = ("revision", "source", "decay", "tags", "important")


# python-frontmatter's fence (``frontmatter.default_handlers.YAMLHandler.FM_BOUNDARY``, 1.3.0: the same pattern and
# flag, tests/memory/test_quickyaml.py checks it): its split is used here without importing it, since importing it
# imports PyYAML, which a command reading simple frontmatter never needs (``quickyaml``).
_FENCE = re.compile(r"^-{3,}\s*$", re.MULTILINE)


@dataclass(frozen=True)
class MemoryRecord:
    """A parsed memory file.

    ``meta`` is the full frontmatter (timestamps normalised), ``body`` the
    Markdown after it (stripped), ``raw`` the file's text exactly as stored.
    """

    key: str
    meta: dict[str, Any]
    body: str
    raw: str = field(repr=False)
    # Scratch space for values derived from this (immutable) record, e.g. ranking constants.
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def name(self) -> str:
        return str(self.meta["name"])

    @cached_property
    def description(self) -> str:
        return str(self.meta["description"])

    @cached_property
    def type(self) -> str:
        return str(self.meta["type"])

    @property
    def revision(self) -> int:
        """The stored revision; a file written without one counts as revision 1."""
        value = self.meta.get("revision", 1)
        return int(value)

    @property
    def created(self) -> datetime:
        return parse_timestamp(self.meta["created"])

    @cached_property
    def updated(self) -> datetime:
        return parse_timestamp(self.meta["updated"])

    @cached_property
    def updated_epoch(self) -> float:
        """``updated`` as POSIX seconds (ranking arithmetic on floats is much cheaper than on datetimes)."""
        return self.updated.timestamp()

    @cached_property
    def folded_text(self) -> str:
        """Name, description and body case-folded and joined by NUL, kept so repeated recall does no
        re-work. A query never holds NUL, so no match can span two fields."""
        return f"{self.name.casefold()}\0{self.description.casefold()}\0{self.body.casefold()}"

    @property
    def tags(self) -> list[str]:
        return list(self.meta.get("tags") or [])

    @property
    def important(self) -> bool:
        return bool(self.meta.get("important", False))

    @property
    def decay(self) -> str | None:
        value = self.meta.get("decay")
        return None if value is None else str(value)

    @property
    def filename(self) -> str:
        return f"{self.key}.md"

    def summary(self) -> dict[str, Any]:
        """The memory without its body, as ``memory list --json`` and the MCP ``memory_list`` tool show it."""
        return {
            "key": self.key,
            "name": self.name,
            "description": self.description,
            "type": self.type,
            "revision": self.revision,
            "created": self.meta["created"],
            "updated": self.meta["updated"],
            "tags": self.tags,
            "important": self.important,
        }


def _single_line_str(meta: Mapping[str, Any], name: str, where: str, *, required: bool) -> None:
    if name not in meta or meta[name] is None:
        if required:
            raise FrontmatterError(f"{where}: frontmatter is missing required key {name!r}; add it")
        return
    value = meta[name]
    if not isinstance(value, str) or not value.strip():
        raise FrontmatterError(f"{where}: frontmatter {name!r} must be a non-empty string")
    if value.splitlines() != [value]:
        raise FrontmatterError(
            f"{where}: frontmatter {name!r} must be a single line (the index has one line each)"
        )


def validate_meta(meta: Mapping[str, Any], where: str) -> None:
    """Check a frontmatter mapping against the schema (specs/memory.md, "Frontmatter").

    Raises :class:`FrontmatterError` naming ``where`` and the offending key.
    Values are not echoed back, so a credential in a bad field never reaches a message.
    """
    for key in meta:
        if not isinstance(key, str):
            raise FrontmatterError(
                f"{where}: frontmatter keys must be strings, found a {type(key).__name__} key"
            )
    _single_line_str(meta, "name", where, required=True)
    _single_line_str(meta, "description", where, required=True)
    if "type" not in meta:
        raise FrontmatterError(f"{where}: frontmatter is missing required key 'type'; add it")
    if meta["type"] not in MEMORY_TYPES:
        raise FrontmatterError(f"{where}: frontmatter 'type' must be one of {', '.join(MEMORY_TYPES)}")
    for name in ("created", "updated"):
        if name not in meta or meta[name] is None:
            raise FrontmatterError(f"{where}: frontmatter is missing required key {name!r}; add it")
        try:
            parse_timestamp(meta[name])
        except (ValueError, TypeError) as exc:
            raise FrontmatterError(
                f"{where}: frontmatter {name!r} is not an ISO 8601 date or UTC date-time "
                "(e.g. 2026-04-14T12:03:12Z)"
            ) from exc
    if "revision" in meta:
        revision = meta["revision"]
        if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
            raise FrontmatterError(f"{where}: frontmatter 'revision' must be an integer from 1")
    _single_line_str(meta, "source", where, required=False)
    if "decay" in meta and meta["decay"] not in DECAY_VALUES:
        raise FrontmatterError(f"{where}: frontmatter 'decay' must be one of {', '.join(DECAY_VALUES)}")
    if "tags" in meta:
        tags = meta["tags"]
        if not isinstance(tags, list) or not all(
            isinstance(t, str) and t.strip() and t.splitlines() == [t] for t in tags
        ):
            raise FrontmatterError(f"{where}: frontmatter 'tags' must be a list of one-line strings")
    if "important" in meta and not isinstance(meta["important"], bool):
        raise FrontmatterError(f"{where}: frontmatter 'important' must be true or false")


# A lone UTF-16 surrogate: what Python makes of bytes that are not UTF-8 in an argument (``surrogateescape``).
_SURROGATE = re.compile("[\ud800-\udfff]")


def _holds_surrogate(value: object) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, list):
        return any(_holds_surrogate(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_surrogate(k) or _holds_surrogate(v) for k, v in value.items())
    return False


def _check_text(meta: Mapping[str, Any], body: str, where: str) -> None:
    """Refuse a frontmatter value or a body holding a lone UTF-16 surrogate (``--name $'\\xff'``: bytes that are
    not UTF-8, passed as text), naming the field, never the value: no file can hold it (the body failed to
    encode with an internal error, a name was written as a YAML escape no reader takes back)."""
    for name, value in (*meta.items(), ("\0body", body)):
        if _holds_surrogate(value):
            what = "the body" if name == "\0body" else f"frontmatter {name!r}"
            raise FrontmatterError(f"{where}: {what} holds a lone UTF-16 surrogate (bytes that are not UTF-8, "
                                   "given as text), which is not text; give it as UTF-8 text")


_CANONICAL_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def _normalise_timestamps(meta: dict[str, Any]) -> None:
    for name in ("created", "updated"):
        value = meta.get(name)
        # Already in our form (and valid: validate_meta parsed it): formatting it again gives it back.
        if value is not None and not (isinstance(value, str) and _CANONICAL_TIMESTAMP.fullmatch(value)):
            meta[name] = format_timestamp(parse_timestamp(value))


def parse_memory_file(text: str, *, key: str = "", where: str | None = None) -> MemoryRecord:
    """Parse the text of a memory file into a validated :class:`MemoryRecord`.

    ``key`` is recorded on the record; ``where`` names the file in error
    messages (default ``<key>.md``). Raises :class:`FrontmatterError` when the
    frontmatter is missing, is not YAML, is not a mapping, or breaks the schema.
    """
    where = where or (f"{key}.md" if key else "memory file")
    check_text_size(text, where)  # a merged, loaded or converted file as the tree's reads bound its files
    if not text.lstrip().startswith("---"):
        raise FrontmatterError(f"{where}: no YAML frontmatter (the file must start with a '---' line)")
    parts = _FENCE.split(text.strip(), 2)
    if len(parts) != 3:
        raise FrontmatterError(f"{where}: frontmatter is not closed by a '---' line")
    _before, fm_text, body = parts
    loaded = quick_frontmatter(fm_text)
    verbatim = loaded is not None
    if loaded is None:
        # The split keeps the newline after the opening fence: line 0 of fm_text is that fence.
        fence_line = text[: len(text) - len(text.lstrip())].count("\n") + 1
        loaded = load_frontmatter(fm_text, where=where, first_line=fence_line)
    if not isinstance(loaded, dict):
        raise FrontmatterError(f"{where}: frontmatter must be a YAML mapping of keys to values")
    validate_meta(loaded, where)
    meta: dict[str, Any] = dict(loaded)
    _normalise_timestamps(meta)
    record = MemoryRecord(key=key, meta=meta, body=body.strip(), raw=text)
    if verbatim:
        # Every text value is a stretch of ``text`` between characters no secret rule spans (quickyaml), and
        # normalised timestamps hold none: a guard finding nothing in ``text`` finds nothing in the values.
        record.memo["verbatim"] = True
    return record


def frontmatter_text(text: str) -> str:
    """The frontmatter of a memory file's text as written, between its fences ("" when it has none)."""
    parts = _FENCE.split(text.strip(), 2)
    return parts[1] if len(parts) == 3 and text.lstrip().startswith("---") else ""


def name_as_written(text: str) -> str | None:
    """The one-line ``name`` the frontmatter of a memory file that does not validate still holds (for the
    timeline entry of its forget), or ``None`` when it holds none or is not YAML at all."""
    parts = _FENCE.split(text.strip(), 2)
    if len(parts) != 3 or not text.lstrip().startswith("---"):
        return None
    try:
        loaded = quick_frontmatter(parts[1])
        if loaded is None:
            loaded = load_frontmatter(parts[1], where="memory file")
    except FrontmatterError:
        return None
    name = loaded.get("name") if isinstance(loaded, dict) else None
    return name if isinstance(name, str) and name.strip() and name.splitlines() == [name] else None


def _plain(value: Any) -> Any:
    """Turn dates into our textual form so the dump is stable; recurse into containers."""
    if isinstance(value, datetime):
        return format_timestamp(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def unplain_keys(meta: Mapping[str, Any]) -> list[str]:
    """The schema keys of ``meta`` whose text has no plain form (``render_memory_file`` double-quotes it, and
    a line reader such as three.ws's shows the quotes)."""
    out = []
    for name in KNOWN_ORDER:
        value = meta.get(name)
        texts = value if isinstance(value, list) else [value]
        flow = isinstance(value, list)
        if any(isinstance(t, str) and plain_problem(t, flow=flow) is not None for t in texts):
            out.append(name)
    return out


def render_memory_file(meta: Mapping[str, Any], body: str, *, where: str = "memory") -> str:
    """Render frontmatter and body into the canonical text of a memory file.

    The frontmatter is validated first (:class:`FrontmatterError`); the body is
    stripped of surrounding whitespace. Layout: ``---``, the YAML, ``---``, a
    blank line, the body, a final newline (no blank line or body when empty).
    Text with no plain form is double-quoted (:func:`unplain_keys` names the
    schema keys that hold such text, for an importer or exporter to report).
    """
    return _render(meta, body, where=where)[0]


def _render(meta: Mapping[str, Any], body: str, *, where: str) -> tuple[str, dict[str, Any]]:
    """:func:`render_memory_file`, and the frontmatter values as written (dates as text, in order)."""
    validate_meta(meta, where)
    _check_text(meta, body, where)
    ordered: dict[str, Any] = {}
    for name in KNOWN_ORDER:
        if name in meta and meta[name] is not None:
            ordered[name] = meta[name]
    for name, value in meta.items():
        if name not in ordered and name not in KNOWN_ORDER:
            ordered[name] = value
    plain = _plain(ordered)
    for name in ("created", "updated"):
        plain[name] = format_timestamp(parse_timestamp(plain[name]))
    # ``where`` names the file, never a value: a value may be what the secret guard is about to refuse.
    dumped = dump_frontmatter(plain, where=where)
    body = body.strip()
    text = f"---\n{dumped}---\n"
    text = f"{text}\n{body}\n" if body else text
    check_text_size(text, where)  # never write a memory every reader would leave out
    return text, plain


def rendered_record(key: str, meta: Mapping[str, Any], body: str, *, where: str) -> MemoryRecord:
    """The record of the file :func:`render_memory_file` writes for ``meta`` and ``body``: what
    :func:`parse_memory_file` reads from that text. When YAML certainly reads the frontmatter back as
    written (``frontmatter.reads_back``: plain text, integers, booleans, lists of plain text) it is built
    from the values as written, without parsing (nor loading PyYAML); else the text is parsed."""
    text, plain = _render(meta, body, where=where)
    if not reads_back(plain):
        return parse_memory_file(text, key=key, where=where)
    validate_meta(plain, where)
    return MemoryRecord(key=key, meta=plain, body=body.strip(), raw=text)
