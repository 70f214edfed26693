"""Claude Code memory directory <-> neutral records.

A Claude Code memory directory holds ``MEMORY.md`` (one line per memory:
``- [Title](file.md) — hook``) and one topic file per memory whose YAML
frontmatter carries ``name``, ``description`` and ``type`` either at the top
level or under a ``metadata:`` mapping. We read both forms and write the
top-level form unless asked for ``form="metadata"`` (or ``form="source"``: each
memory in the form it was read in).

Claude Code's types are bundlekit's (user, feedback, project, reference); an
unknown type is kept in ``x-claude-code-type`` and read as ``reference``.
Topic files carry no timestamps; we use the file's modification time (UTC).
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bundlekit.convert._common import (
    MEMORY_TYPES,
    Entry,
    ForeignTree,
    atomic_write,
    derive_keys,
    first_line,
    format_time,
    parse_time,
    read_markdown,
    render_markdown,
    same_instant,
    single_line,
)
from bundlekit.errors import ConvertError

__all__ = ["FORMS", "parse_index", "read_claude_code", "render_index", "write_claude_code"]

#: Frontmatter forms ``write_claude_code`` accepts.
FORMS = ("top", "metadata", "source")

INDEX = "MEMORY.md"

# ``- [Title](file.md) — hook``; the dash may be an em dash, an en dash or a hyphen.
_LINK = re.compile(
    r"^\s*[-*+]\s*\[(?P<title>(?:\\.|[^\]\\])*)\]\((?P<file>[^)\s]+)\)\s*(?:(?:—|–|-{1,2})\s*(?P<hook>.*?))?\s*$"
)
_CORE = ("name", "description", "type")


def parse_index(text: str) -> list[tuple[str, str, str]]:
    """The ``(title, file, hook)`` of every link line of a ``MEMORY.md``, in order.

    Other lines (headings, prose) are ignored.
    """
    out: list[tuple[str, str, str]] = []
    for line in text.splitlines():
        m = _LINK.match(line)
        if m:
            title = re.sub(r"\\(.)", r"\1", m.group("title"))
            out.append((title, m.group("file"), m.group("hook") or ""))
    return out


def _escape_title(title: str) -> str:
    return title.replace("\\", "\\\\").replace("]", "\\]").replace("[", "\\[")


def render_index(rows: list[tuple[str, str, str]]) -> str:
    """Render ``MEMORY.md`` link lines (one per row) as Claude Code writes them."""
    lines = []
    for title, file, hook in rows:
        line = f"- [{_escape_title(single_line(title))}]({file})"
        hook = single_line(hook)
        lines.append(f"{line} — {hook}" if hook else line)
    return "\n".join(lines) + ("\n" if lines else "")


def _time(raw: Any, path: Path, field: str) -> str:
    return format_time(parse_time(raw, what=f"{field} in {path}"))


def read_claude_code(src: str | os.PathLike[str]) -> ForeignTree:
    """Read a Claude Code memory directory (``MEMORY.md`` plus topic files).

    Every ``*.md`` file next to ``MEMORY.md`` is a memory, linked from the index
    or not; links to missing files are ignored. Raises ``ConvertError`` on a
    missing directory or malformed frontmatter (naming the file).
    """
    root = Path(src)
    if not root.is_dir():
        raise ConvertError(f"{root} is not a directory; pass a Claude Code memory directory")
    index_path = root / INDEX
    links = parse_index(index_path.read_text(encoding="utf-8")) if index_path.is_file() else []
    by_file: dict[str, tuple[int, str, str]] = {}
    for pos, (link_title, link_file, link_hook) in enumerate(links):
        by_file.setdefault(link_file, (pos, link_title, link_hook))

    paths = sorted(p for p in root.glob("*.md") if p.name != INDEX and p.is_file())
    keys = derive_keys(p.stem for p in paths)
    entries = []
    for key, path in zip(keys, paths):
        fm, body = read_markdown(path)
        meta: dict[str, Any] = {}
        core = fm
        if isinstance(fm.get("metadata"), dict) and not any(k in fm for k in _CORE):
            core = {str(k): v for k, v in fm["metadata"].items()}
            meta["x-claude-code-form"] = "metadata"
            rest = {k: v for k, v in core.items() if k not in _CORE}
            if rest:
                meta["x-claude-code-metadata"] = rest
            fm = {k: v for k, v in fm.items() if k != "metadata"}
        link = by_file.get(path.name)
        title = link[1] if link else None
        hook = link[2] if link else None
        name = single_line(core.get("name") or title or path.stem)
        description = single_line(core.get("description") or hook or first_line(body) or name)
        ctype = core.get("type")
        meta.update({"name": name, "description": description})
        if ctype in MEMORY_TYPES:
            meta["type"] = ctype
        else:
            meta["type"] = "reference"
            if ctype is not None:
                meta["x-claude-code-type"] = ctype
        mtime = format_time(datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(microsecond=0))
        for field in ("created", "updated"):
            if field in fm:
                meta[field] = _time(fm[field], path, field)
                meta[f"x-claude-code-{field}"] = fm[field]
            else:
                meta[field] = mtime
        extra = {k: v for k, v in fm.items() if k not in _CORE and k not in ("created", "updated")}
        if extra:
            meta["x-claude-code-extra"] = extra
        if link is None:
            meta["x-claude-code-indexed"] = False
        else:
            meta["x-claude-code-order"] = link[0]
            if title != name:
                meta["x-claude-code-title"] = title
            if hook != description:
                meta["x-claude-code-hook"] = hook
        if key != path.stem:
            meta["x-claude-code-file"] = path.stem
        entries.append(Entry(key, meta, body))
    return ForeignTree(entries)


def _topic_file(entry: Entry, form: str) -> str:
    meta = entry.meta
    core: dict[str, Any] = {
        "name": meta.get("name", entry.key),
        "description": meta.get("description", ""),
        "type": meta.get("x-claude-code-type", meta.get("type", "reference")),
    }
    if form == "source":
        form = "metadata" if meta.get("x-claude-code-form") == "metadata" else "top"
    fm: dict[str, Any] = {}
    if form == "metadata":
        inner = dict(core)
        extra_meta = meta.get("x-claude-code-metadata")
        if isinstance(extra_meta, dict):
            inner.update({k: v for k, v in extra_meta.items() if k not in inner})
        fm["metadata"] = inner
    else:
        fm.update(core)
    for field in ("created", "updated"):
        if f"x-claude-code-{field}" in meta:
            # The file had its own timestamp: the original spelling while it
            # still names the same instant, else the current value.
            fm[field] = same_instant(meta[f"x-claude-code-{field}"], meta.get(field))
    extra = meta.get("x-claude-code-extra")
    if isinstance(extra, dict):
        fm.update({str(k): v for k, v in extra.items() if k not in fm and k != "metadata"})
    return render_markdown(fm, entry.body)


def write_claude_code(tree: ForeignTree, dest: str | os.PathLike[str], *, form: str = "top") -> list[Path]:
    """Write ``tree`` as a Claude Code memory directory at ``dest``.

    One topic file per entry (``x-claude-code-file`` or the key, plus ``.md``)
    and a ``MEMORY.md`` listing them in their original index order, then by
    key; entries read from files the index did not link stay unlinked.
    ``form`` is ``top`` (default), ``metadata`` or ``source``. Returns the
    paths written. Every name is checked before anything is written: a bad
    ``form``, an unsafe or a doubly used file name raise ``ConvertError``.
    """
    if form not in FORMS:
        raise ConvertError(f"unknown Claude Code frontmatter form {form!r}; use one of {', '.join(FORMS)}")
    root = Path(dest)
    planned: list[tuple[Path, str]] = []
    rows: list[tuple[float, str, tuple[str, str, str]]] = []
    seen: set[str] = set()
    for entry in tree.entries:
        stem = str(entry.meta.get("x-claude-code-file") or entry.key)
        if "/" in stem or "\\" in stem or stem.startswith(".") or stem.upper() == "MEMORY":
            raise ConvertError(f"memory {entry.key!r} names an unsafe file {stem!r}; fix x-claude-code-file")
        filename = f"{stem}.md"
        if filename.lower() in seen:
            raise ConvertError(f"two memories would both be written to {filename}; rename one and retry")
        seen.add(filename.lower())
        planned.append((root / filename, _topic_file(entry, form)))
        if entry.meta.get("x-claude-code-indexed") is False:
            continue
        order = entry.meta.get("x-claude-code-order")
        title = str(entry.meta.get("x-claude-code-title", entry.meta.get("name", entry.key)))
        hook = str(entry.meta.get("x-claude-code-hook", entry.meta.get("description", "")))
        rank = float(order) if isinstance(order, int) and not isinstance(order, bool) else float("inf")
        rows.append((rank, entry.key, (title, filename, hook)))
    rows.sort(key=lambda r: (r[0], r[1]))
    planned.append((root / INDEX, render_index([r[2] for r in rows])))
    for path, text in planned:
        atomic_write(path, text)
    return [path for path, _text in planned]
