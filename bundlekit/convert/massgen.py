"""MassGen filesystem memory mode <-> neutral records.

A MassGen workspace keeps ``memory/short_term/*.md`` and ``memory/long_term/*.md``;
when an agent submits an answer MassGen archives that ``memory/`` directory to
``.massgen/sessions/<session>/archived_memories/<agent>_answer_<n>/``. Each file
has a frontmatter block of ``key: value`` lines (``name``, ``description``,
``created``, ``updated``, sometimes ``tier`` and ``agent_id``) and the memory
content as its body. MassGen's reader (``SystemMessageBuilder._parse_memory_file``
in massgen 0.1.97) is not YAML: the file must start with ``---``, the frontmatter
ends at the next ``---`` anywhere (``content.split("---", 2)``), and each line
is split on its first colon, both sides stripped. We read exactly that way and
write only single-line, unquoted values that parser reads back unchanged.

Mapping (see ``specs/interop.md``): the tier is the directory the file is in
(moving a file from ``short_term/`` to ``long_term/`` is how MassGen promotes a
memory; a ``tier:`` line that says otherwise is kept but loses). ``short_term``
-> type ``project`` and ``important: true`` (always in context); ``long_term``
-> type ``reference`` (loaded on demand). MassGen writes naive local
timestamps; they are read in the zone given (default: this machine's, said in
a warning) and the original strings are written back while they still denote
the same instant.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bundlekit.convert._common import (
    DELIMITER_STANDIN,
    Entry,
    ExportPlan,
    ForeignTree,
    Loss,
    bad_time,
    derive_keys,
    first_line,
    format_time,
    left_out_file,
    line_fields,
    line_key_problem,
    merge_extra,
    parse_time,
    read_foreign_text,
    recorded_path_problem,
    same_instant,
    single_line,
    skipped_link,
    split_at_dashes,
    without_delimiter,
    write_planned,
)
from bundlekit.convert._format import Format, kept
from bundlekit.errors import ConvertError

__all__ = [
    "FORMAT",
    "KEPT_FIELDS",
    "TIERS",
    "parse_massgen_file",
    "plan_massgen",
    "read_massgen",
    "render_massgen_file",
    "resolve_timezone",
    "write_massgen",
]

#: MassGen's two tiers, in the order we read them.
TIERS = ("short_term", "long_term")

#: The bundlekit fields a MassGen export carries (``important`` becomes the tier).
KEPT_FIELDS = frozenset({"name", "description", "created", "updated", "important"})

_KNOWN = ("name", "description", "tier", "agent_id", "created", "updated")
_ARCHIVE_DIR = re.compile(r"^.+_answer_\d+$")
_ARCHIVES = "archived_memories"


def parse_massgen_file(text: str) -> tuple[dict[str, str] | None, str]:
    """Parse one memory file the way MassGen does.

    Returns ``(fields, content)``: ``fields`` is None when the text does not
    start with ``---`` or has no second ``---`` (MassGen skips such a file);
    otherwise every frontmatter line holding a colon is split on its first
    colon, both sides stripped. ``content`` is stripped, as MassGen strips it.
    """
    fm_text, content = split_at_dashes(text)
    if fm_text is None:
        return None, content
    return line_fields(fm_text), content


def render_massgen_file(fields: dict[str, str], content: str) -> str:
    """Render a memory file MassGen reads back to the same fields and content.

    Values are flattened to one line and left unquoted (their parser would keep
    quotes literally). Known fields come first in MassGen's order. The caller
    passes keys :func:`~bundlekit.convert._common.line_key_problem` accepts and
    values without ``---`` (:func:`write_massgen` sees to both); a key or value
    that would still end a line or the frontmatter early raises ``ConvertError``.
    """
    order = [k for k in _KNOWN if k in fields] + sorted(k for k in fields if k not in _KNOWN)
    for k in order:
        problem = line_key_problem(k) or ("holds '---'" if "---" in single_line(fields[k]) else None)
        if problem:
            raise ConvertError(f"the field {k!r} (or its value) {problem}, which MassGen would misread")
    head = "".join(f"{k}: {single_line(fields[k])}\n" for k in order)
    return f"---\n{head}---\n\n{content.strip(chr(10))}\n"


def resolve_timezone(name: str | None) -> tuple[tzinfo, str]:
    """The zone naive MassGen timestamps are read in, and its name.

    ``None`` or ``"local"`` is this machine's zone; otherwise an IANA name
    (``Europe/Berlin``) or ``UTC``. Raises ``ConvertError`` for an unknown name.
    """
    if name is None or name == "local":
        local = datetime.now().astimezone().tzinfo or UTC
        return local, str(datetime.now(local).tzname() or "local")
    try:
        return ZoneInfo(name), name
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConvertError(
            f"unknown time zone {name!r}; pass an IANA name such as Europe/Berlin, or UTC"
        ) from exc


def _archive_roots(base: Path) -> list[tuple[str, Path]]:
    """``<agent>_answer_<n>`` directories under an ``archived_memories`` directory."""
    return [(d.name, d) for d in sorted(base.iterdir()) if d.is_dir() and _ARCHIVE_DIR.match(d.name)]


def _memory_roots(src: Path) -> list[tuple[str | None, str | None, Path]]:
    """The memory directories under ``src``: (workspace label, archive label, path)."""
    if not src.is_dir():
        raise ConvertError(f"{src} is not a directory; pass a MassGen workspace or its memory/ directory")
    if any((src / t).is_dir() for t in TIERS):
        return [(None, None, src)]
    if (src / "memory").is_dir():
        return [(None, None, src / "memory")]
    for base in (src, src / _ARCHIVES):
        archives = _archive_roots(base) if base.is_dir() else []
        if archives:
            return [(None, name, path) for name, path in archives]
    # A folder of workspaces (workspace1/, workspace2/, ...): the orchestrator's view.
    found: list[tuple[str | None, str | None, Path]] = [
        (d.name, None, d / "memory") for d in sorted(src.iterdir()) if (d / "memory").is_dir()
    ]
    if not found:
        raise ConvertError(
            f"no MassGen memory under {src}: expected memory/short_term or memory/long_term, or "
            "archived_memories/<agent>_answer_<n>/; pass a workspace directory"
        )
    return found


def _file_time(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(microsecond=0)


def _walk(root: Path, tree: ForeignTree) -> Iterator[tuple[str, Path]]:
    """(tier, file) for every memory file under ``root``, tier by tier; anything else is listed in ``tree.warnings``."""
    found: list[tuple[int, str, Path]] = []
    for path in sorted(root.rglob("*")):
        if skipped_link(path, tree.warnings) or not path.is_file():
            continue
        rel = path.relative_to(root)
        if len(rel.parts) == 2 and rel.parts[0] in TIERS and path.suffix == ".md":
            found.append((TIERS.index(rel.parts[0]), rel.parts[0], path))
        else:
            tree.warnings.append(f"skipped {path}: not a memory file (MassGen reads memory/<tier>/*.md only)")
    for _rank, tier, path in sorted(found):
        yield tier, path


class _MemoryFile(NamedTuple):
    """One MassGen memory file as read: where it sat (workspace, archive, tier, path) and what it held."""

    workspace: str | None
    archive: str | None
    tier: str
    path: Path
    fields: dict[str, str] | None  # None: the file had no frontmatter
    content: str


def _read_time(value: str, zone: tzinfo, where: str, naive: list[str]) -> str:
    dt = parse_time(value, what=where) if value else None
    if dt is None:
        raise ConvertError(f"{where} is empty")
    probe = value.strip()
    if not probe.endswith(("Z", "z")) and datetime.fromisoformat(probe).tzinfo is None:
        naive.append(where)
        return format_time(datetime.fromisoformat(probe).replace(tzinfo=zone))
    return format_time(dt)


def read_massgen(src: str | os.PathLike[str], *, timezone: str | None = None) -> ForeignTree:
    """Read a MassGen workspace, its ``memory/`` dir, a folder of workspaces or an ``archived_memories`` dir.

    Files are taken in a fixed order (workspace or archive, tier, file name), so
    derived keys are deterministic. The tier is the directory. A file without
    frontmatter (which MassGen itself skips) is imported with its file name as
    name, and a warning. Timestamps without a zone are read in ``timezone``
    (default: this machine's zone, with a warning). A file missing
    ``created``/``updated`` gets its modification time. Files that are not
    memories are listed as skipped. Raises ``ConvertError`` naming the file on
    bad input.
    """
    zone, zone_name = resolve_timezone(timezone)
    tree = ForeignTree()
    raw: list[_MemoryFile] = []
    for workspace, archive, root in _memory_roots(Path(src)):
        for tier, path in _walk(root, tree):
            try:
                fields, content = parse_massgen_file(read_foreign_text(path))
            except ConvertError as exc:
                left_out_file(tree, path, exc)
                continue
            if fields is None:
                tree.warnings.append(
                    f"{path} has no frontmatter (MassGen itself skips it); imported with name {path.stem!r}"
                )
            raw.append(_MemoryFile(workspace, archive, tier, path, fields, content))

    keys = derive_keys((f.fields or {}).get("name") or f.path.stem for f in raw)
    naive: list[str] = []
    for key, file in zip(keys, raw):
        tree.entries.append(_entry(tree, key, file, zone, naive))
    if naive and timezone is None:
        tree.warnings.append(
            f"read {len(naive)} timestamps without a zone as this machine's local time ({zone_name}); "
            "pass --timezone to choose the zone MassGen ran in"
        )
    return tree


def _entry(tree: ForeignTree, key: str, file: _MemoryFile, zone: tzinfo, naive: list[str]) -> Entry:
    """The neutral record of one file; a time without a zone is read in ``zone``, noted in ``naive``."""
    workspace, archive, tier, path, fields, content = file
    found = fields or {}
    name = found.get("name") or path.stem
    # MassGen splits lines at "\n" only: a value may hold U+2028 or a lone CR, which a tree's one-line
    # name and description cannot; they are read as one line (the original name is kept below).
    flat = single_line(name)
    description = found.get("description") or first_line(content) or flat
    if flat != name or single_line(description) != description:
        tree.losses.append(Loss(str(path), "name or description read as one line"))
        tree.warnings.append(f"{path}: name or description holds a line break; read as one line")
    meta: dict[str, Any] = {
        "name": flat,
        "description": single_line(description),
        "type": "project" if tier == "short_term" else "reference",
        "x-massgen-tier": tier,
    }
    if tier == "short_term":
        meta["important"] = True
    if fields is None:
        meta["x-massgen-frontmatter"] = False
    elif found.get("tier", "") != tier:
        # The directory wins; the line is kept as it was ("" when there was none).
        meta["x-massgen-tier-field"] = found.get("tier", "")
    for field in ("created", "updated"):
        value = found.get(field)
        where = f"{field} in {path}"
        mtime = format_time(_file_time(path))
        try:
            meta[field] = _read_time(value, zone, where, naive) if value else mtime
        except ConvertError:
            bad_time(tree, str(path), field)
            meta[field] = mtime
        if value:
            meta[f"x-massgen-{field}"] = value
    if "agent_id" in found:
        meta["x-massgen-agent-id"] = found["agent_id"]
    if key != name:
        meta["x-massgen-name"] = name
    if path.stem != name:
        meta["x-massgen-file"] = path.stem
    if workspace is not None:
        meta["x-massgen-workspace"] = workspace
    if archive is not None:
        meta["x-massgen-archive"] = archive
    extra = {k: v for k, v in found.items() if k not in _KNOWN}
    if extra:
        meta["x-massgen-extra"] = extra
    return Entry(key, meta, content)


def _time_field(meta: dict[str, Any], field: str) -> str | None:
    value = meta.get(field)
    if value is None:
        return None
    current = format_time(parse_time(value, what=field))
    original = meta.get(f"x-massgen-{field}")
    # The original spelling survives only while it still names the same second.
    if isinstance(original, str):
        return str(same_instant(original, current))
    return current


def _line_value(plan: ExportPlan, key: str, field: str, value: object) -> str:
    """``value`` as a MassGen line holds it: one line, ends trimmed, ``---`` an em dash; a change: a loss."""
    text = str(value)
    flat = single_line(text)
    written = without_delimiter(flat)
    if flat != text:
        plan.altered(key, f"{field}: line breaks, tabs or surrounding spaces written as one trimmed line")
    if written != flat:
        plan.altered(
            key, f"{field}: '---' (where MassGen ends the frontmatter) written as {DELIMITER_STANDIN!r}"
        )
    return written


def _safe_part(plan: ExportPlan, key: str, field: str, part: object, fallback: str | None) -> str | None:
    """A recorded file or folder name, or ``fallback`` (with a loss) when it cannot name one folder entry."""
    if part is None:
        return None
    text = str(part)
    problem = recorded_path_problem(text) or ("holds '/'" if "/" in text else None)
    if problem is None:
        return text
    where = f"{fallback}.md" if field == "x-massgen-file" else "memory/"
    plan.altered(key, f"{field} {problem}; written to {where} instead")
    return fallback


def _fields(plan: ExportPlan, entry: Entry, tier: str, name: str, agent_id: str | None) -> dict[str, str]:
    """The frontmatter lines of one memory, every key and value one that MassGen's reader gives back."""
    meta = entry.meta
    fields: dict[str, str] = {
        "name": _line_value(plan, entry.key, "name", name),
        "description": _line_value(plan, entry.key, "description", meta.get("description", "")),
    }
    tier_field = meta.get("x-massgen-tier-field")
    if tier_field is None:
        fields["tier"] = tier
    elif tier_field != "":
        fields["tier"] = _line_value(plan, entry.key, "x-massgen-tier-field", tier_field)
    agent = meta.get("x-massgen-agent-id", agent_id)
    if agent is not None:
        fields["agent_id"] = _line_value(plan, entry.key, "agent_id", agent)
    for field in ("created", "updated"):
        value = _time_field(meta, field)
        if value is not None:
            fields[field] = _line_value(plan, entry.key, field, value)
    extra: dict[str, Any] = {}
    merge_extra(plan, entry.key, "x-massgen-extra", meta.get("x-massgen-extra"), extra, reserved=_KNOWN)
    for k, v in extra.items():
        fields[k] = _line_value(plan, entry.key, f"x-massgen-extra {k}", v)
    return fields


def write_massgen(
    tree: ForeignTree, dest: str | os.PathLike[str], *, agent_id: str | None = None, strict: bool = False
) -> list[Path]:
    """Write ``tree`` as a MassGen workspace at ``dest`` (:func:`plan_massgen`).

    Returns the paths written. With ``strict``, a memory that would be written
    changed or left out refuses the export (``ConvertError``, nothing written).
    """
    return write_planned("massgen", plan_massgen, tree, dest, strict=strict, agent_id=agent_id)


def plan_massgen(
    tree: ForeignTree, dest: str | os.PathLike[str], plan: ExportPlan, *, agent_id: str | None = None
) -> None:
    """Plan ``tree`` as a MassGen workspace at ``dest`` (``dest/memory/<tier>/<name>.md``).

    The tier (the directory) is ``x-massgen-tier`` when present, else
    ``short_term`` for important memories and ``long_term`` for the rest; a
    ``tier:`` line that disagreed with the directory is written back as read.
    A file read without frontmatter is written back without one. The MassGen name is
    ``x-massgen-name`` or the key (always filesystem-safe); a tree ``name`` that
    differs from it is a loss. ``agent_id`` fills
    ``agent_id`` where an entry has none. Entries that came from several
    workspaces go back to ``dest/<workspace>/memory/``, archived answers to
    ``dest/<agent>_answer_<n>/``.

    What MassGen cannot hold is recorded in ``plan`` (``specs/interop.md``
    section 2): a value is flattened to one trimmed line and ``---`` in it
    becomes an em dash; an ``x-massgen-extra`` key that is not a plain line key
    is not written; an unusable recorded file, workspace or archive name gives
    way to the key or ``memory/``; a memory whose file another memory already
    takes is left out.
    """
    out = Path(dest)
    seen: dict[str, str] = {}
    for entry in tree.entries:
        meta = entry.meta
        tier = meta.get("x-massgen-tier")
        if tier not in TIERS:
            tier = "short_term" if meta.get("important") is True else "long_term"
        name = str(meta.get("x-massgen-name") or entry.key)
        if meta.get("name") is not None and str(meta["name"]) != name:
            # MassGen's name names the file too; the tree's name would give the memory another key.
            instead = "its recorded x-massgen-name" if meta.get("x-massgen-name") else "the key"
            plan.altered(
                entry.key, f"name: MassGen's name is the memory's file name; {instead} is written in its place"
            )
        if meta.get("x-massgen-file") is not None:
            stem = _safe_part(plan, entry.key, "x-massgen-file", meta["x-massgen-file"], entry.key)
        else:
            stem = _safe_part(plan, entry.key, "x-massgen-name", name, entry.key)
        workspace = _safe_part(plan, entry.key, "x-massgen-workspace", meta.get("x-massgen-workspace"), None)
        archive = _safe_part(plan, entry.key, "x-massgen-archive", meta.get("x-massgen-archive"), None)
        if archive is not None:
            base = out / archive
        elif workspace is not None:
            base = out / workspace / "memory"
        else:
            base = out / "memory"
        path = base / str(tier) / f"{stem}.md"
        where = str(path).lower()
        if where in seen:
            plan.left_out(
                entry.key, f"memory {seen[where]!r} is already written to {path}; rename one (x-massgen-name)"
            )
            continue
        seen[where] = entry.key
        if meta.get("x-massgen-frontmatter") is False:
            text = entry.body.strip("\n") + "\n"
        else:
            text = render_massgen_file(_fields(plan, entry, str(tier), name, agent_id), entry.body)
        plan.add(path, text)


#: This format, as ``bundlekit.convert`` registers it.
FORMAT = Format(
    name="massgen",
    summary="MassGen workspace memory/short_term and memory/long_term",
    read=read_massgen,
    write=write_massgen,
    read_options=frozenset({"timezone"}),
    write_options=frozenset({"agent_id"}),
    kept=kept(*KEPT_FIELDS),
    lossy="type, tags, source, decay, revision; a name that is not the key (MassGen's name is the file "
    "name); the timeline; '---' in a value (written as an em dash)",
)
