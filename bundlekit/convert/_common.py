"""Neutral records shared by every format module, and the helpers they all need.

A format module reads its foreign store into a :class:`ForeignTree` (a list of
:class:`Entry`: a bundlekit key, the full bundlekit frontmatter, the body) and
writes one back out of a ``ForeignTree``. Those two directions are pure
functions over files or databases; only :mod:`bundlekit.convert._tree` touches a
bundlekit memory tree. That keeps each format testable alone.

Conventions every format follows (``specs/interop.md`` has the tables):

* A format's own fields live in frontmatter keys named ``x-<format>-<field>``.
* Timestamps in bundlekit frontmatter are ISO 8601 strings in UTC with a ``Z``
  suffix. A foreign timestamp without a zone is read as UTC.
* Keys derived from foreign names are valid bundlekit keys (see :func:`derive_keys`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml

from bundlekit._fs import atomic_write_bytes, os_reason
from bundlekit.errors import ConvertError, FrontmatterError, InvalidKeyError
from bundlekit.memory.frontmatter import load_frontmatter
from bundlekit.memory.naming import MAX_KEY_LENGTH, validate_key
from bundlekit.memory.record import MEMORY_TYPES, without_timestamps
from bundlekit.memory.timefmt import format_timestamp

__all__ = [
    "KEY_MAX",
    "MEMORY_TYPES",
    "Entry",
    "ForeignTree",
    "atomic_write",
    "derive_keys",
    "dropped_fields",
    "dump_yaml",
    "first_line",
    "format_time",
    "is_valid_key",
    "line_fields",
    "load_yaml",
    "output_dir_problem",
    "parse_time",
    "read_frontmatter",
    "read_markdown",
    "render_markdown",
    "same_instant",
    "sanitize_key",
    "single_line",
    "skipped_link",
    "split_at_dashes",
    "split_frontmatter",
]

#: Longest bundlekit key (the memory store's limit).
KEY_MAX = MAX_KEY_LENGTH

_BAD_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class Entry:
    """One memory in neutral form: its bundlekit key, full frontmatter and body.

    ``meta`` holds the bundlekit fields (``name``, ``description``, ``type``,
    ``created``, ``updated``, optional ``important``, ``revision``, ...) plus the
    namespaced ``x-<format>-*`` keys that carry what only the foreign format has.
    """

    key: str
    meta: dict[str, Any]
    body: str


@dataclass
class ForeignTree:
    """What a format module reads or writes: entries plus timeline events."""

    entries: list[Entry] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    #: Things a reader skipped or could not carry, one sentence each.
    warnings: list[str] = field(default_factory=list)


def is_valid_key(key: str) -> bool:
    """True when ``key`` is a portable bundlekit key (ignoring uniqueness): the memory store's rules."""
    try:
        validate_key(key)
    except InvalidKeyError:
        return False
    return True


def sanitize_key(name: str) -> str:
    """Turn any foreign name into a valid bundlekit key, deterministically.

    Runs of characters outside ``[A-Za-z0-9_.-]`` become one ``_``; leading dots
    are dropped; the result is cut to :data:`KEY_MAX`; an empty result becomes
    ``untitled`` and the reserved ``MEMORY`` becomes ``MEMORY_``.
    """
    key = _BAD_CHARS.sub("_", name).lstrip(".")
    key = key[:KEY_MAX].rstrip(".") or "untitled"
    if key.upper() == "MEMORY":
        key = key + "_"
    return key


def derive_keys(names: Iterable[str]) -> list[str]:
    """Derive one unique (ignoring case) valid key per name, in input order.

    A name that is already a valid key and does not collide is kept as is.
    Colliding keys get ``-2``, ``-3``, ... in input order, so callers must pass
    names in a deterministic order. The caller records the original name in a
    namespaced key whenever the key differs from it.
    """
    taken: set[str] = set()
    out: list[str] = []
    for name in names:
        base = sanitize_key(name)
        key = base
        n = 2
        while key.lower() in taken:
            suffix = f"-{n}"
            key = base[: KEY_MAX - len(suffix)] + suffix
            n += 1
        taken.add(key.lower())
        out.append(key)
    return out


def parse_time(value: object, *, what: str = "timestamp") -> datetime:
    """Parse a timestamp from frontmatter or a foreign store into aware UTC.

    Accepts ``datetime`` (naive means UTC), ``date`` (midnight UTC), ISO 8601
    strings with or without a zone (none means UTC) and a ``Z`` suffix.
    Raises :class:`ConvertError` for anything else.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        try:
            dt = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError as exc:
            raise ConvertError(
                f"{what} is not an ISO 8601 timestamp (e.g. 2026-04-14T12:03:12Z); fix or remove it"
            ) from exc
    else:
        raise ConvertError(
            f"{what} is not an ISO 8601 timestamp (e.g. 2026-04-14T12:03:12Z); fix or remove it"
        )
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def format_time(dt: datetime) -> str:
    """Render an aware datetime as bundlekit writes it: ISO 8601, UTC, whole seconds, ``Z``.

    Fractions of a second are dropped (the memory store keeps whole seconds);
    formats that carry finer times keep their original spelling in an
    ``x-<format>-*`` key, see :func:`same_instant`. The memory store's own
    :func:`~bundlekit.memory.timefmt.format_timestamp` (a naive value is UTC).
    """
    return format_timestamp(dt)


def _yaml_value(value: Any) -> Any:
    # Dates and datetimes become strings, so every writer of a file gets the
    # same bytes whatever type a reader handed us.
    if isinstance(value, datetime):
        return format_time(parse_time(value))
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _yaml_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_yaml_value(v) for v in value]
    return value


class _KeepDumper(yaml.SafeDumper):
    """Safe dumper that writes date-like strings bare (as they were read) and never uses aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


# Foreign files are read and written back with dates as text: a bare
# ``created: 2026-03-22`` stays exactly that, in both directions.
_KeepDumper.yaml_implicit_resolvers = without_timestamps(yaml.SafeDumper.yaml_implicit_resolvers)


def load_yaml(text: str, *, where: str) -> dict[str, Any]:
    """Parse foreign frontmatter (safe YAML, timestamps kept as strings) into a mapping.

    The memory store's bounded reader (``bundlekit.memory.frontmatter``: no
    aliases or tags, 64-bit integers, a value budget). Raises ``ConvertError``
    naming ``where`` for bad YAML or a non-mapping.
    """
    if not text.strip():
        return {}
    try:
        data = load_frontmatter(text, where=where)
    except FrontmatterError as exc:
        raise ConvertError(f"malformed YAML frontmatter in {where}; fix it and retry ({exc})") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConvertError(f"frontmatter of {where} is not a mapping of keys to values; fix it and retry")
    return {str(k): v for k, v in data.items()}


def dump_yaml(mapping: Mapping[str, Any]) -> str:
    """Dump a mapping as block YAML in the given key order, one line per scalar."""
    return yaml.dump(
        {str(k): _yaml_value(v) for k, v in mapping.items()},
        Dumper=_KeepDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )


def render_markdown(meta: Mapping[str, Any], body: str) -> str:
    """Render frontmatter (real YAML, keys in the given order) and a body."""
    dumped = dump_yaml(meta)
    text = f"---\n{dumped}---\n"
    body = body.strip("\n")
    return text + ("\n" + body + "\n" if body else "")


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Split ``---`` fenced frontmatter from a Markdown text.

    Returns ``(frontmatter_text, body)``; ``frontmatter_text`` is None when the
    text does not open with a ``---`` line or the fence is never closed.
    The body loses the blank lines right after the fence and at its end.
    """
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return None, text.strip("\r\n")
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip() == "---":
            fm = "".join(lines[1:i])
            body = "".join(lines[i + 1 :])
            return fm, body.strip("\r\n")
    return None, text.strip("\r\n")


def split_at_dashes(text: str) -> tuple[str | None, str]:
    """Split frontmatter the way MassGen (``content.split("---", 2)``) and Claude Code find it.

    The text must start with ``---``; the frontmatter then ends at the next
    ``---`` *anywhere*, even inside a value. Returns ``(frontmatter_text,
    body)`` with both stripped of surrounding whitespace, or ``(None, text)``
    when there is no such frontmatter.
    """
    if not text.startswith("---"):
        return None, text.strip()
    parts = text.split("---", 2)
    if len(parts) < 3:
        return None, text.strip()
    return parts[1].strip(), parts[2].strip()


def line_fields(text: str) -> dict[str, str]:
    """``key: value`` lines split on the first colon, both sides stripped (the non-YAML readers' rule)."""
    fields: dict[str, str] = {}
    for line in text.split("\n"):
        line = line.strip()
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
    return fields


def read_frontmatter(fm_text: str | None, *, where: str, warnings: list[str]) -> dict[str, Any]:
    """Parse foreign frontmatter as YAML; when that fails, read it line by line and warn.

    The fallback is the first-colon line splitter (what MassGen and three.ws
    use): a file an agent wrote by hand with ``description: Note: x`` is read as
    the agent meant it, and ``warnings`` says which file was read that way.
    """
    if fm_text is None:
        return {}
    try:
        return load_yaml(fm_text, where=where)
    except ConvertError:
        warnings.append(f"{where}: frontmatter is not valid YAML; read it line by line (key: value)")
        return dict(line_fields(fm_text))


def dropped_fields(entries: Iterable[Entry], kept: Iterable[str], fmt: str) -> list[str]:
    """One warning naming the frontmatter fields a writer for ``fmt`` leaves out, with counts.

    ``kept`` are the fields the writer carries; the format's own ``x-<fmt>-*``
    keys are carried by definition. Returns ``[]`` when nothing is left out.
    """
    keep = set(kept)
    own = f"x-{fmt.replace('.', '')}-"
    counts: dict[str, int] = {}
    for entry in entries:
        for k, v in entry.meta.items():
            if v is None or k in keep or k.startswith(own) or f"{own}{k}" in entry.meta:
                continue
            counts[k] = counts.get(k, 0) + 1
    if not counts:
        return []
    parts = [f"{k} ({n} {'memory' if n == 1 else 'memories'})" for k, n in sorted(counts.items())]
    return [f"left out fields {fmt} has no place for: {', '.join(parts)}"]


def read_markdown(path: os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """Read a foreign Markdown file: its frontmatter (``{}`` when it has none) and its body.

    Raises :class:`ConvertError` naming ``path`` when it is not UTF-8 or its frontmatter is malformed.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            fm_text, body = split_frontmatter(fh.read())
    except UnicodeDecodeError as exc:
        raise ConvertError(f"{os.fspath(path)} is not UTF-8 text; convert it and retry") from exc
    return (load_yaml(fm_text, where=os.fspath(path)) if fm_text is not None else {}), body


def skipped_link(path: Path, warnings: list[str]) -> bool:
    """Whether ``path`` is a symbolic link, which an importer leaves out (and says so in ``warnings``).

    A link inside a foreign store may point anywhere on the machine (``/etc/passwd``, a key file);
    following it would copy that file into a memory tree that may be published.
    """
    if not path.is_symlink():
        return False
    warnings.append(f"skipped {path}: a symbolic link (not followed; copy the file in instead)")
    return True


def first_line(body: str, limit: int = 120) -> str:
    """First non-empty line of a body, without Markdown heading marks, cut to ``limit``."""
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return ""


def single_line(value: object) -> str:
    """A value flattened to one line: line breaks and tabs become spaces, ends trimmed."""
    return " ".join(str(value).replace("\t", " ").splitlines()).strip()


def output_dir_problem(exc: OSError) -> str:
    """What went wrong creating an output directory, in words (``makedirs`` says "File exists" for a file in the way)."""
    return os_reason(exc)


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write ``data`` to ``path`` atomically (``bundlekit._fs``: temp file beside it, fsync, rename).

    Parent directories are created. Nothing half-written is ever left at ``path``.
    Raises :class:`ConvertError` when the file cannot be written (a parent is a
    file, ``path`` is a directory, no permission, disk full), naming ``path``.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    atomic_write_bytes(path, raw, error=ConvertError, hint="choose another output path", parents=True)


def same_instant(original: Any, current: Any) -> Any:
    """``original`` when it denotes the same second as ``current``, else ``current``.

    Lets a writer give a foreign timestamp back in its own spelling (a bare
    date, no zone, milliseconds, ...) as long as nobody changed it in between.
    The comparison is to the second because bundlekit keeps whole seconds.
    """
    if current is None:
        return original
    try:
        if parse_time(original).replace(microsecond=0) == parse_time(current).replace(microsecond=0):
            return original
    except ConvertError:
        pass
    return current
