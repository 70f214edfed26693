"""Claude Code auto-memory directory <-> neutral records.

A Claude Code memory directory holds ``MEMORY.md`` (one line per memory:
``- [Title](file.md) — hook``) and topic files, found recursively (``*.md`` at
any depth except ``MEMORY.md``). Claude Code reads ``name`` and ``description``
at the top level of a topic file's frontmatter and ``type`` and ``modified``
from its ``metadata:`` mapping merged over the top level; when it rewrites a
memory it writes ``name``, ``description`` and ``metadata: {node_type: memory,
type, originSessionId, modified}``. Its frontmatter ends at the first ``---``
anywhere (:func:`~bundlekit.convert._common.split_at_dashes`).

We read every one of those forms (and the older one with ``name`` and
``description`` under ``metadata:`` too), keep the whole ``metadata`` mapping
(``originSessionId`` included) in ``x-claude-code-metadata`` so a round trip
gives it back, and write the top-level form (``form="top"``), Claude Code's own
form (``form="metadata"``) or each memory as read (``form="source"``).
A memory in a subfolder gets a key from its relative path (``team/a.md`` ->
``team.a``) and ``x-claude-code-file`` (``team/a``) to find the way back.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from bundlekit.convert._common import (
    DELIMITER_STANDIN,
    MEMORY_TYPES,
    Entry,
    ExportPlan,
    ForeignTree,
    derive_keys,
    first_line,
    format_time,
    left_out_file,
    line_key_problem,
    parse_time,
    read_foreign_text,
    read_frontmatter,
    recorded_path_problem,
    render_markdown,
    same_instant,
    single_line,
    skipped_link,
    split_at_dashes,
    time_or,
    without_delimiter,
    write_planned,
    index_line_loss,
)
from bundlekit.convert._format import Format
from bundlekit.errors import ConvertError
from bundlekit.memory.index import IndexLink, parse_index, render_links

__all__ = [
    "FORMAT",
    "FORMS",
    "kept_fields",
    "parse_index",
    "plan_claude_code",
    "read_claude_code",
    "render_index",
    "write_claude_code",
]

#: The index lines Claude Code reads, in the one form of ``bundlekit.memory.index``.
render_index = render_links

#: Frontmatter forms ``write_claude_code`` accepts.
FORMS = ("top", "metadata", "source")

INDEX = "MEMORY.md"

_CORE = ("name", "description", "type")
# Read from metadata: merged over the top level (Claude Code's rule); name and description are top-level keys.
_MERGED = ("type", "modified")
_TIMES = ("created", "updated")


def _claude_time(dt_text: str) -> str:
    """Claude Code's ``modified`` spelling (JavaScript ``toISOString``): UTC, milliseconds, ``Z``."""
    dt = parse_time(dt_text)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _topic_paths(root: Path, warnings: list[str]) -> list[PurePosixPath]:
    """Every topic file under ``root`` (relative, sorted): ``*.md`` at any depth except ``MEMORY.md``; hidden parts skipped.

    A symbolic link is left out with a warning (``skipped_link``).
    """
    found = []
    for path in sorted(root.rglob("*.md")):
        rel = PurePosixPath(path.relative_to(root).as_posix())
        if path.name == INDEX or any(p.startswith(".") for p in rel.parts) or skipped_link(path, warnings):
            continue
        if not path.is_file():
            continue
        found.append(rel)
    return sorted(found)


def _read_topic(path: Path, where: str, warnings: list[str]) -> tuple[dict[str, Any], str]:
    fm_text, body = split_at_dashes(read_foreign_text(path).removeprefix("\ufeff"))
    if fm_text is None:
        warnings.append(f"{where} has no frontmatter; name taken from the index or the file name")
    return read_frontmatter(fm_text, where=where, warnings=warnings), body


def _entry_meta(
    tree: ForeignTree,
    fm: dict[str, Any],
    body: str,
    rel: PurePosixPath,
    where: str,
    mtime: str,
    link: tuple[int, str, str] | None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    inner = fm.get("metadata")
    metadata = {str(k): v for k, v in inner.items()} if isinstance(inner, dict) else {}
    top = {k: v for k, v in fm.items() if k != "metadata"}
    if isinstance(inner, dict):
        meta["x-claude-code-form"] = "metadata"
        meta["x-claude-code-metadata"] = metadata
    # name/description: top level first (Claude Code's rule), then the older nested form.
    core = {k: top.get(k, metadata.get(k)) for k in ("name", "description")}
    core.update({k: metadata.get(k, top.get(k)) for k in _MERGED})
    title = link[1] if link else None
    hook = link[2] if link else None
    name = single_line(core["name"] or title or rel.stem)
    description = single_line(core["description"] or hook or first_line(body) or name)
    meta.update({"name": name, "description": description})
    ctype = core["type"]
    meta["type"] = ctype if ctype in MEMORY_TYPES else "reference"
    if ctype is not None and ctype not in MEMORY_TYPES:
        meta["x-claude-code-type"] = ctype
    modified = core["modified"]
    for field in _TIMES:
        if field in top:
            meta[field] = time_or(tree, top[field], mtime, where=where, field=field)
            meta[f"x-claude-code-{field}"] = top[field]
        elif modified is not None:
            meta[field] = time_or(tree, modified, mtime, where=where, field="modified")
        else:
            meta[field] = mtime
    if "modified" in top:
        meta["x-claude-code-modified"] = top["modified"]
    if "type" in top and "type" in metadata:
        # Shadowed by metadata.type (Claude Code's merge); kept so the file comes back as it was.
        meta["x-claude-code-top-type"] = top["type"]
    extra = {k: v for k, v in top.items() if k not in _CORE and k not in _TIMES and k != "modified"}
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
    return meta


def read_claude_code(src: str | os.PathLike[str]) -> ForeignTree:
    """Read a Claude Code memory directory (``MEMORY.md`` plus topic files at any depth).

    Every ``*.md`` file under the directory except ``MEMORY.md`` is a memory,
    linked from the index or not; links to missing files are ignored and index
    lines that are not links are reported as left out. Frontmatter that is not
    valid YAML is read line by line with a warning; a file without frontmatter
    is read with its name from the index or the file name. Raises
    ``ConvertError`` on a missing directory or a file that is not UTF-8.
    """
    root = Path(src)
    if not root.is_dir():
        raise ConvertError(f"{root} is not a directory; pass a Claude Code memory directory")
    tree = ForeignTree()
    index_path = root / INDEX
    links: list[IndexLink] = []
    index_text = ""
    if index_path.is_file():
        try:
            index_text = read_foreign_text(index_path)
        except ConvertError as exc:
            left_out_file(tree, index_path, exc)
    if index_text:
        links = parse_index(index_text)
        prose = sum(1 for line in index_text.splitlines() if line.strip()) - len(links)
        if prose > 0:
            tree.warnings.append(
                f"left out {prose} line{'s' if prose != 1 else ''} of {INDEX} that are not memory links "
                "(headings, prose); the index is rebuilt from the memories"
            )
    by_file: dict[str, tuple[int, str, str]] = {}
    for pos, (link_title, link_file, link_hook) in enumerate(links):
        by_file.setdefault(link_file, (pos, link_title, link_hook))

    rels = _topic_paths(root, tree.warnings)
    keys = derive_keys(str(rel.with_suffix("")).replace("/", ".") for rel in rels)
    for key, rel in zip(keys, rels):
        path = root / rel
        where = str(path)
        try:
            fm, body = _read_topic(path, where, tree.warnings)
        except ConvertError as exc:
            left_out_file(tree, path, exc)
            continue
        mtime = format_time(datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(microsecond=0))
        meta = _entry_meta(tree, fm, body, rel, where, mtime, by_file.get(str(rel)))
        stem = str(rel.with_suffix(""))
        if key != stem:
            meta["x-claude-code-file"] = stem
        tree.entries.append(Entry(key, meta, body))
    return tree


def _metadata_block(entry: Entry, form: str, core: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The ``metadata:`` mapping to write and the core keys it holds."""
    meta = entry.meta
    recorded = meta.get("x-claude-code-metadata")
    block: dict[str, Any] = dict(recorded) if isinstance(recorded, dict) else {}
    if form == "metadata":
        # Claude Code's own rewrite: name and description at the top level, the rest here.
        block.pop("name", None)
        block.pop("description", None)
        block = {"node_type": block.pop("node_type", "memory"), "type": core["type"], **block}
    held = {k for k in _CORE if k in block}
    for k in held:
        block[k] = core[k]
    if "modified" in block or (form == "metadata" and not _untimed(entry)):
        block["modified"] = _modified(entry, block.get("modified"))
    return block, held


def _untimed(entry: Entry) -> bool:
    """Whether ``entry`` was read from a Claude Code file without any timestamp and not changed since.

    Its ``created``/``updated`` are then the file's mtime (section 3 of
    ``specs/interop.md``), which is not written back: a file read with no
    ``modified``, ``created`` or ``updated`` (none recorded) whose ``updated``
    is still its ``created``. Every memory read from Claude Code carries
    ``x-claude-code-order`` or ``x-claude-code-indexed``.
    """
    meta = entry.meta
    if "x-claude-code-order" not in meta and "x-claude-code-indexed" not in meta:
        return False
    recorded = meta.get("x-claude-code-metadata")
    if any(f"x-claude-code-{f}" in meta for f in ("created", "updated", "modified")):
        return False
    if isinstance(recorded, dict) and "modified" in recorded:
        return False
    return meta.get("updated") == meta.get("created")


def _modified(entry: Entry, original: Any) -> str:
    current = _claude_time(str(entry.meta.get("updated") or entry.meta.get("created")))
    return str(same_instant(original, current)) if original is not None else current


def kept_fields(form: str = "top") -> frozenset[str]:
    """The bundlekit fields a Claude Code export writes in ``form`` (the rest is reported as left out)."""
    base = {"name", "description", "type"}
    if form in ("metadata", "source"):
        base |= {"updated"}
    return frozenset(base)


def _holdable(plan: ExportPlan, key: str, field: str, value: Any) -> Any:
    """``value`` (a scalar, list or mapping) as a Claude Code frontmatter holds it; each change is a loss.

    Claude Code ends the frontmatter at the first ``---`` anywhere: in text it
    becomes an em dash. A mapping key that could not be one plain line key
    (:func:`line_key_problem`) is not written.
    """
    if isinstance(value, str):
        written = without_delimiter(value)
        if written != value:
            plan.altered(
                key, f"{field}: '---' (where Claude Code ends frontmatter) written as {DELIMITER_STANDIN!r}"
            )
        return written
    if isinstance(value, (list, tuple)):
        return [_holdable(plan, key, f"{field}[{i}]", v) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            name = str(k)
            problem = line_key_problem(name)
            if problem:
                plan.altered(key, f"{field or 'frontmatter'}: key {name!r} {problem}; not written")
                continue
            out[name] = _holdable(plan, key, f"{field}.{name}" if field else name, v)
        return out
    return value


def _topic_file(entry: Entry, form: str, plan: ExportPlan) -> str:
    meta = entry.meta
    core: dict[str, Any] = {
        "name": meta.get("name", entry.key),
        "description": meta.get("description", ""),
        "type": meta.get("x-claude-code-type", meta.get("type", "reference")),
    }
    if form == "source":
        form = "metadata-kept" if meta.get("x-claude-code-form") == "metadata" else "top"
    fm: dict[str, Any] = {}
    if form == "top":
        fm.update(core)
    else:
        block, held = _metadata_block(entry, form, core)
        fm.update({k: v for k, v in core.items() if k not in held and not (form == "metadata" and k == "type")})
        if form != "metadata" and "x-claude-code-top-type" in meta:
            fm["type"] = meta["x-claude-code-top-type"]
        fm["metadata"] = block
    for field in _TIMES:
        if f"x-claude-code-{field}" in meta:
            # The file had its own timestamp: the original spelling while it
            # still names the same instant, else the current value.
            fm[field] = same_instant(meta[f"x-claude-code-{field}"], meta.get(field))
    if "x-claude-code-modified" in meta:
        fm["modified"] = _modified(entry, meta["x-claude-code-modified"])
    extra = meta.get("x-claude-code-extra")
    if isinstance(extra, dict):
        fm.update({str(k): v for k, v in extra.items() if k not in fm and k != "metadata"})
    return render_markdown(_holdable(plan, entry.key, "", fm), entry.body)


def _file_stem(entry: Entry, plan: ExportPlan) -> str:
    """Where ``entry`` is written (no ``.md``): its recorded path, or its key when that cannot be used."""
    recorded = entry.meta.get("x-claude-code-file")
    if recorded is None:
        return entry.key
    stem = str(recorded)
    problem = recorded_path_problem(stem)
    if problem is None and PurePosixPath(stem).name.upper() == "MEMORY":
        problem = "names the index MEMORY.md"
    linked = entry.meta.get("x-claude-code-indexed") is not False
    if problem is None and linked and re.search(r"[\s()<>]", stem):
        problem = "holds a space or bracket, which a MEMORY.md link cannot point to"
    if problem is None:
        return stem
    plan.altered(entry.key, f"x-claude-code-file {problem}; written as {entry.key}.md instead")
    return entry.key


def write_claude_code(
    tree: ForeignTree, dest: str | os.PathLike[str], *, form: str = "top", strict: bool = False
) -> list[Path]:
    """Write ``tree`` as a Claude Code memory directory at ``dest`` (:func:`plan_claude_code`); the paths.

    With ``strict``, a memory that would be written changed or left out
    refuses the export (``ConvertError``, nothing written).
    """
    return write_planned("claude-code", plan_claude_code, tree, dest, strict=strict, form=form)


def plan_claude_code(
    tree: ForeignTree, dest: str | os.PathLike[str], plan: ExportPlan, *, form: str = "top"
) -> None:
    """Plan ``tree`` as a Claude Code memory directory at ``dest``.

    One topic file per entry (``x-claude-code-file`` or the key, plus ``.md``;
    a recorded subfolder path is kept) and a ``MEMORY.md`` listing them in their
    original index order, then by key; entries read from files the index did
    not link stay unlinked. ``form`` is ``top`` (default), ``metadata`` (what
    Claude Code itself writes) or ``source``; another raises ``ConvertError``.

    What Claude Code cannot hold is recorded in ``plan`` (``specs/interop.md``
    section 3): ``---`` in any frontmatter text becomes an em dash; a key that
    is not a plain line key is not written; a recorded path that cannot name
    the file (NUL or control character, absolute, ``..``, hidden, ``MEMORY``,
    or for a linked memory a space or bracket) gives way to the key; a memory
    whose file another already takes is left out.
    """
    if form not in FORMS:
        raise ConvertError(f"unknown Claude Code frontmatter form {form!r}; use one of {', '.join(FORMS)}")
    root = Path(dest)
    rows: list[tuple[float, str, tuple[str, str, str]]] = []
    seen: dict[str, str] = {}
    for entry in tree.entries:
        filename = f"{_file_stem(entry, plan)}.md"
        if filename.lower() in seen:
            plan.left_out(entry.key, f"memory {seen[filename.lower()]!r} is already written to {filename}")
            continue
        seen[filename.lower()] = entry.key
        plan.add(root / filename, _topic_file(entry, form, plan))
        if entry.meta.get("x-claude-code-indexed") is False:
            continue
        order = entry.meta.get("x-claude-code-order")
        title = str(entry.meta.get("x-claude-code-title", entry.meta.get("name", entry.key)))
        hook = str(entry.meta.get("x-claude-code-hook", entry.meta.get("description", "")))
        rank = float(order) if isinstance(order, int) and not isinstance(order, bool) else float("inf")
        index_line_loss(plan, entry.key, title, filename, hook, "MEMORY.md")
        rows.append((rank, entry.key, (title, filename, hook)))
    rows.sort(key=lambda r: (r[0], r[1]))
    plan.add(root / INDEX, render_links([r[2] for r in rows]))


def _kept(options: Mapping[str, Any]) -> frozenset[str]:
    return kept_fields(str(options.get("form") or "top"))


#: This format, as ``bundlekit.convert`` registers it.
FORMAT = Format(
    name="claude-code",
    summary="Claude Code memory directory (MEMORY.md + topic files)",
    read=read_claude_code,
    write=write_claude_code,
    read_options=frozenset(),
    write_options=frozenset({"form"}),
    kept=_kept,
    lossy="tags, source, decay, important, revision, created, updated (--form top); the timeline; "
    "'---' in a value (written as an em dash); '[', ']', '\\' in MEMORY.md's link text",
)
