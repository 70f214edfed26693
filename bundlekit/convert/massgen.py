"""MassGen filesystem memory mode <-> neutral records.

A MassGen workspace keeps ``memory/short_term/*.md`` and ``memory/long_term/*.md``.
Each file has a frontmatter block of ``key: value`` lines (``name``,
``description``, ``tier``, ``agent_id``, ``created``, ``updated``) and the
memory content as its body. MassGen's parser is not YAML: it splits each line
on the first colon and strips both sides. So we read exactly that way (a
``description: Note: x`` line is fine for them and for us), and we write only
single-line, unquoted values that their parser reads back unchanged.

Mapping (see ``specs/interop.md``): ``short_term`` -> type ``project`` and
``important: true`` (always in context); ``long_term`` -> type ``reference``
(loaded on demand). Timestamps without a zone are read as UTC; the original
strings are kept in ``x-massgen-created`` / ``x-massgen-updated`` and written
back verbatim while they still denote the same instant.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bundlekit.convert._common import (
    Entry,
    ForeignTree,
    atomic_write,
    derive_keys,
    first_line,
    format_time,
    parse_time,
    same_instant,
    single_line,
)
from bundlekit.errors import ConvertError

__all__ = ["TIERS", "parse_massgen_file", "read_massgen", "render_massgen_file", "write_massgen"]

#: MassGen's two tiers, in the order we read them.
TIERS = ("short_term", "long_term")

_KNOWN = ("name", "description", "tier", "agent_id", "created", "updated")


def parse_massgen_file(text: str) -> tuple[dict[str, str], str]:
    """Parse one memory file the way MassGen does.

    Returns ``(fields, content)``: every frontmatter line holding a colon is
    split on its first colon, both sides stripped; other lines are ignored.
    Raises ``ConvertError`` when the text does not open with a ``---`` fence.
    """
    text = text.removeprefix("\ufeff")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ConvertError("no frontmatter: the file must start with a '---' line")
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            break
    else:
        raise ConvertError("frontmatter is never closed: add a '---' line after it")
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
    content = "\n".join(lines[end + 1 :]).strip("\n")
    return fields, content


def render_massgen_file(fields: dict[str, str], content: str) -> str:
    """Render a memory file MassGen reads back to the same fields and content.

    Values are flattened to one line and left unquoted (their parser would keep
    quotes literally). Known fields come first in MassGen's order.
    """
    order = [k for k in _KNOWN if k in fields] + sorted(k for k in fields if k not in _KNOWN)
    head = "".join(f"{k}: {single_line(fields[k])}\n" for k in order)
    return f"---\n{head}---\n\n{content.strip(chr(10))}\n"


def _memory_roots(src: Path) -> list[tuple[str | None, Path]]:
    """The ``memory/`` directories under ``src``: (workspace label or None, path)."""
    if not src.is_dir():
        raise ConvertError(f"{src} is not a directory; pass a MassGen workspace or its memory/ directory")
    if any((src / t).is_dir() for t in TIERS):
        return [(None, src)]
    if (src / "memory").is_dir():
        return [(None, src / "memory")]
    # A folder of workspaces (workspace1/, workspace2/, ...): the orchestrator's view.
    found: list[tuple[str | None, Path]] = [
        (d.name, d / "memory") for d in sorted(src.iterdir()) if (d / "memory").is_dir()
    ]
    if not found:
        raise ConvertError(
            f"no MassGen memory under {src}: expected memory/short_term or memory/long_term; "
            "pass a workspace directory"
        )
    return found


def _file_time(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(microsecond=0)


def read_massgen(src: str | os.PathLike[str]) -> ForeignTree:
    """Read a MassGen workspace (or its ``memory/`` dir, or a folder of workspaces).

    Files are taken in a fixed order (workspace, tier, file name), so derived
    keys are deterministic. A file missing ``created``/``updated`` gets its
    modification time. Raises ``ConvertError`` naming the file on bad input.
    """
    raw: list[tuple[str | None, str, Path, dict[str, str], str]] = []
    for workspace, root in _memory_roots(Path(src)):
        for tier in TIERS:
            tier_dir = root / tier
            if not tier_dir.is_dir():
                continue
            # Only regular files, as the other readers take them: a directory named x.md is not a memory.
            for path in sorted(p for p in tier_dir.glob("*.md") if p.is_file()):
                try:
                    fields, content = parse_massgen_file(path.read_text(encoding="utf-8"))
                except (ConvertError, UnicodeDecodeError, OSError) as exc:
                    raise ConvertError(f"cannot read MassGen memory {path}: {exc}") from exc
                raw.append((workspace, tier, path, fields, content))

    keys = derive_keys(fields.get("name") or path.stem for _w, _t, path, fields, _c in raw)
    entries: list[Entry] = []
    for key, (workspace, tier, path, fields, content) in zip(keys, raw):
        name = fields.get("name") or path.stem
        file_tier = fields.get("tier") or tier
        meta: dict[str, Any] = {
            "name": name,
            "description": fields.get("description") or first_line(content) or name,
            "type": "project" if file_tier == "short_term" else "reference",
            "x-massgen-tier": file_tier,
        }
        if file_tier == "short_term":
            meta["important"] = True
        for field in ("created", "updated"):
            value = fields.get(field)
            where = f"{field} in {path}"
            meta[field] = format_time(parse_time(value, what=where) if value else _file_time(path))
            if value:
                meta[f"x-massgen-{field}"] = value
        if "agent_id" in fields:
            meta["x-massgen-agent-id"] = fields["agent_id"]
        if key != name:
            meta["x-massgen-name"] = name
        if path.stem != name:
            meta["x-massgen-file"] = path.stem
        if workspace is not None:
            meta["x-massgen-workspace"] = workspace
        if tier != file_tier:
            meta["x-massgen-dir"] = tier
        extra = {k: v for k, v in fields.items() if k not in _KNOWN}
        if extra:
            meta["x-massgen-extra"] = extra
        entries.append(Entry(key, meta, content))
    return ForeignTree(entries)


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

    The tier is ``x-massgen-tier`` when present, else ``short_term`` for
    important memories and ``long_term`` for the rest. The MassGen name is
    ``x-massgen-name`` or the key (always filesystem-safe). ``agent_id`` fills
    ``agent_id`` where an entry has none. Entries that came from several
    workspaces go back to ``dest/<workspace>/memory/``. Returns the paths
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
            "tier": str(tier),
        }
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
        folder = str(meta.get("x-massgen-dir") or tier)
        stem = str(meta.get("x-massgen-file") or name)
        for part, field in (
            (stem, "x-massgen-file"),
            (folder, "x-massgen-dir"),
            (workspace, "x-massgen-workspace"),
        ):
            if part is not None and (
                not str(part) or "/" in str(part) or "\\" in str(part) or str(part).startswith(".")
            ):
                raise ConvertError(f"memory {entry.key!r} has an unsafe {field} {part!r}; fix it and retry")
        base = out / str(workspace) / "memory" if workspace is not None else out / "memory"
        path = base / folder / f"{stem}.md"
        where = str(path).lower()
        if where in seen:
            raise ConvertError(
                f"memories {seen[where]!r} and {entry.key!r} would both be written to {path}; "
                "rename one (x-massgen-name) and retry"
            )
        seen[where] = entry.key
        planned.append((path, render_massgen_file(fields, entry.body)))
    # Everything was checked before the first write.
    for path, text in planned:
        atomic_write(path, text)
    return [path for path, _text in planned]
