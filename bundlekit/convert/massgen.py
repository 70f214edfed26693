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
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bundlekit.convert._common import (
    Entry,
    ForeignTree,
    atomic_write,
    derive_keys,
    first_line,
    format_time,
    line_fields,
    parse_time,
    same_instant,
    single_line,
    skipped_link,
    split_at_dashes,
)
from bundlekit.errors import ConvertError

__all__ = [
    "KEPT_FIELDS",
    "TIERS",
    "parse_massgen_file",
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
    quotes literally). Known fields come first in MassGen's order. A value
    holding ``---`` would end MassGen's frontmatter early: ``ConvertError``.
    """
    order = [k for k in _KNOWN if k in fields] + sorted(k for k in fields if k not in _KNOWN)
    for k in order:
        if "---" in single_line(fields[k]) or "---" in k:
            raise ConvertError(
                f"the {k} {fields[k]!r} holds '---', where MassGen ends the frontmatter; edit it and retry"
            )
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
    raw: list[tuple[str | None, str | None, str, Path, dict[str, str] | None, str]] = []
    for workspace, archive, root in _memory_roots(Path(src)):
        for tier, path in _walk(root, tree):
            try:
                fields, content = parse_massgen_file(path.read_text(encoding="utf-8"))
            except UnicodeDecodeError as exc:
                raise ConvertError(f"MassGen memory {path} is not UTF-8 text; convert it and retry") from exc
            except OSError as exc:
                raise ConvertError(f"cannot read MassGen memory {path}: {exc}") from exc
            if fields is None:
                tree.warnings.append(
                    f"{path} has no frontmatter (MassGen itself skips it); imported with name {path.stem!r}"
                )
            raw.append((workspace, archive, tier, path, fields, content))

    keys = derive_keys((fields or {}).get("name") or path.stem for _w, _a, _t, path, fields, _c in raw)
    naive: list[str] = []
    for key, (workspace, archive, tier, path, fields, content) in zip(keys, raw):
        tree.entries.append(_entry(key, workspace, archive, tier, path, fields, content, zone, naive))
    if naive and timezone is None:
        tree.warnings.append(
            f"read {len(naive)} timestamps without a zone as this machine's local time ({zone_name}); "
            "pass --timezone to choose the zone MassGen ran in"
        )
    return tree


def _entry(
    key: str,
    workspace: str | None,
    archive: str | None,
    tier: str,
    path: Path,
    fields: dict[str, str] | None,
    content: str,
    zone: tzinfo,
    naive: list[str],
) -> Entry:
    found = fields or {}
    name = found.get("name") or path.stem
    meta: dict[str, Any] = {
        "name": name,
        "description": found.get("description") or first_line(content) or name,
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
        meta[field] = _read_time(value, zone, where, naive) if value else format_time(_file_time(path))
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


def write_massgen(
    tree: ForeignTree, dest: str | os.PathLike[str], *, agent_id: str | None = None
) -> list[Path]:
    """Write ``tree`` as a MassGen workspace at ``dest`` (``dest/memory/<tier>/<name>.md``).

    The tier (the directory) is ``x-massgen-tier`` when present, else
    ``short_term`` for important memories and ``long_term`` for the rest; a
    ``tier:`` line that disagreed with the directory is written back as read.
    A file read without frontmatter is written back without one. The MassGen name is
    ``x-massgen-name`` or the key (always filesystem-safe). ``agent_id`` fills
    ``agent_id`` where an entry has none. Entries that came from several
    workspaces go back to ``dest/<workspace>/memory/``, archived answers to
    ``dest/<agent>_answer_<n>/``. Returns the paths
    written. Raises ``ConvertError`` when two entries would land on one file.
    """
    out = Path(dest)
    planned: list[tuple[Path, str]] = []
    seen: dict[str, str] = {}
    for entry in tree.entries:
        meta = entry.meta
        tier = meta.get("x-massgen-tier")
        if tier not in TIERS:
            tier = "short_term" if meta.get("important") is True else "long_term"
        name = str(meta.get("x-massgen-name") or entry.key)
        fields: dict[str, str] = {
            "name": name,
            "description": single_line(meta.get("description", "")),
        }
        tier_field = meta.get("x-massgen-tier-field")
        if tier_field is None:
            fields["tier"] = str(tier)
        elif tier_field != "":
            fields["tier"] = str(tier_field)
        agent = meta.get("x-massgen-agent-id", agent_id)
        if agent is not None:
            fields["agent_id"] = str(agent)
        for field in ("created", "updated"):
            value = _time_field(meta, field)
            if value is not None:
                fields[field] = value
        extra = meta.get("x-massgen-extra")
        if isinstance(extra, dict):
            for k, v in extra.items():
                if str(k) not in fields and ":" not in str(k):
                    fields[str(k)] = str(v)
        workspace = meta.get("x-massgen-workspace")
        archive = meta.get("x-massgen-archive")
        stem = str(meta.get("x-massgen-file") or name)
        for part, field in (
            (stem, "x-massgen-file"),
            (workspace, "x-massgen-workspace"),
            (archive, "x-massgen-archive"),
        ):
            if part is not None and (
                not str(part) or "/" in str(part) or "\\" in str(part) or str(part).startswith(".")
            ):
                raise ConvertError(f"memory {entry.key!r} has an unsafe {field} {part!r}; fix it and retry")
        if archive is not None:
            base = out / str(archive)
        elif workspace is not None:
            base = out / str(workspace) / "memory"
        else:
            base = out / "memory"
        path = base / str(tier) / f"{stem}.md"
        where = str(path).lower()
        if where in seen:
            raise ConvertError(
                f"memories {seen[where]!r} and {entry.key!r} would both be written to {path}; "
                "rename one (x-massgen-name) and retry"
            )
        seen[where] = entry.key
        try:
            text = render_massgen_file(fields, entry.body)
        except ConvertError as exc:
            raise ConvertError(f"memory {entry.key!r}: {exc}") from exc
        if meta.get("x-massgen-frontmatter") is False:
            text = entry.body.strip("\n") + "\n"
        planned.append((path, text))
    # Everything was checked before the first write.
    for path, text in planned:
        atomic_write(path, text)
    return [path for path, _text in planned]
