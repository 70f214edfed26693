"""MagicFrog five-dimension memory trees <-> neutral records.

MagicFrog keeps Markdown notes under ``memory/<dimension>/`` in its data
directory (``account``, ``user``, ``agent``, ``device``; ``task`` too, or inside
a project at ``.magicfrog/memory/``). Notes may be nested (``notes/style.md``;
agent and task notes may start with an ``<agentId>/`` or ``<taskId>/`` prefix,
which is part of the path and kept as such). Frontmatter is ``revision``,
``updated`` and, for device notes, ``machine``. Legacy ``machine/`` and
``project/`` directories read as ``device`` and ``task``.

Every entry records ``x-magicfrog-dimension`` and ``x-magicfrog-path`` (the
path inside the dimension root), so a nested path maps to a flat key
(``notes/style.md`` -> ``notes.style``) and back without loss.

Device notes never leave their machine: reading or writing them is refused with
``DeviceMemoryError`` unless the caller asks for a local-only copy
(``include_device=True, local_only=True``) or leaves them out
(``exclude_device=True``).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from bundlekit.convert._common import (
    Entry,
    ExportPlan,
    ForeignTree,
    Unholdable,
    check_device,
    derive_keys,
    dump_yaml,
    first_line,
    format_time,
    is_device_entry,
    left_out_file,
    merge_extra,
    parse_time,
    read_markdown,
    recorded_path_problem,
    same_instant,
    skipped_link,
    time_or,
    write_planned,
)
from bundlekit.convert._format import DEVICE_OPTIONS, Format, kept
from bundlekit.errors import ConvertError
from bundlekit.memory.device import LAYERS, LOCAL_ONLY_FIELD

__all__ = [
    "CHAIN",
    "DIMENSIONS",
    "DIMENSION_TYPES",
    "FORMAT",
    "LEGACY",
    "check_device",
    "is_device_entry",
    "path_to_key",
    "plan_magicfrog",
    "read_magicfrog",
    "write_magicfrog",
]

#: The override chain, least to most specific (the memory layers).
CHAIN = LAYERS
#: Every dimension; ``device`` sits outside the chain.
DIMENSIONS = CHAIN + ("device",)
#: Legacy three-tier directories and the dimension they read as.
LEGACY = {"machine": "device", "project": "task"}
#: Dimension -> bundlekit type.
DIMENSION_TYPES = {
    "account": "user",
    "user": "user",
    "agent": "feedback",
    "task": "project",
    "device": "reference",
}

_LOCAL_ONLY = LOCAL_ONLY_FIELD


def path_to_key(path: str, dimension: str | None = None) -> str:
    """The key a note path maps to before disambiguation: ``notes/style.md`` -> ``notes.style``.

    With ``dimension`` the key is prefixed (``task.notes.style``), which keeps
    the same path in two dimensions apart in one tree.
    """
    stem = path.removesuffix(".md")
    key = stem.replace("/", ".")
    return f"{dimension}.{key}" if dimension else key


def format_mf_time(dt: datetime) -> str:
    """MagicFrog's timestamp spelling: UTC, milliseconds, ``Z``."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _dimension_roots(src: Path, project: Path | None) -> list[tuple[str, str, Path]]:
    """(dimension, directory name, root) for every dimension directory found."""
    if not src.is_dir():
        raise ConvertError(f"{src} is not a directory; pass a MagicFrog data directory or memory tree")
    base = src / "memory" if (src / "memory").is_dir() else src
    roots: list[tuple[str, str, Path]] = []
    for name in DIMENSIONS + tuple(LEGACY):
        if (base / name).is_dir():
            roots.append((LEGACY.get(name, name), name, base / name))
    for proj in (src, project):
        if proj is not None and (proj / ".magicfrog" / "memory").is_dir():
            roots.append(("task", ".magicfrog", proj / ".magicfrog" / "memory"))
    if not roots:
        raise ConvertError(
            f"no MagicFrog dimensions under {src}: expected account/, user/, agent/, task/ or device/ "
            "(or memory/ holding them, or .magicfrog/memory/)"
        )
    return roots


def read_magicfrog(
    src: str | os.PathLike[str],
    *,
    dimension: str | None = None,
    project: str | os.PathLike[str] | None = None,
    include_device: bool = False,
    local_only: bool = False,
    exclude_device: bool = False,
    effective: bool = False,
    agent: str | None = None,
    task: str | None = None,
) -> ForeignTree:
    """Read a MagicFrog memory tree into neutral records.

    ``dimension`` keeps only that dimension and derives keys from paths alone
    (what a dimension layer needs); without it every dimension is read and keys
    carry the dimension as a prefix. ``project`` adds a project's
    ``.magicfrog/memory/`` as task notes. ``effective`` reads the merged view
    instead: for a path found in several chain dimensions only the most
    specific (account < user < agent < task) is kept, keys come from paths
    alone, and device notes (outside the chain) keep a ``device.`` prefix.
    ``agent`` and ``task`` (effective view only) name who the view is for:
    ``agent/<agent>/P`` is then path ``P`` for that agent and overrides the
    shared ``agent/P`` (likewise ``task/<task>/P``). Device notes follow
    :func:`check_device`. Raises ``ConvertError`` on bad input.
    """
    _check_view(dimension, effective, agent, task)
    tree = ForeignTree()
    found = _find_notes(Path(src), Path(project) if project is not None else None, dimension, tree)
    if effective:
        found, views = _effective(found, tree, {"agent": agent, "task": task})
        keys = derive_keys(
            path_to_key(view, "device" if item[0] == "device" else None) for item, view in zip(found, views)
        )
    else:
        keys = derive_keys(path_to_key(rel, None if dimension else dim) for dim, _d, rel, _p in found)
    for key, note in zip(keys, found):
        entry = _read_note(tree, key, note)
        if entry is not None:
            tree.entries.append(entry)
    _apply_device_rule(
        tree, include_device=include_device, local_only=local_only, exclude_device=exclude_device
    )
    return tree


def _check_view(dimension: str | None, effective: bool, agent: str | None, task: str | None) -> None:
    """Refuse a contradictory or malformed choice of what to read (``ConvertError``) before reading."""
    if effective and dimension is not None:
        raise ConvertError("choose either one dimension or the effective view, not both")
    if (agent is not None or task is not None) and not effective:
        raise ConvertError("--agent and --task choose whose effective view to read; add --effective")
    for label, scope in (("agent", agent), ("task", task)):
        if scope is not None and (not scope or "/" in scope or scope.startswith(".")):
            raise ConvertError(f"{label} id {scope!r} is not a single path segment; pass the bare id")
    if dimension is not None and dimension not in DIMENSIONS:
        raise ConvertError(f"unknown MagicFrog dimension {dimension!r}; use one of {', '.join(DIMENSIONS)}")


def _find_notes(
    src: Path, project: Path | None, dimension: str | None, tree: ForeignTree
) -> list[tuple[str, str, str, Path]]:
    """(dimension, directory name, path in the dimension, file) of every note, canonical dimensions first.

    Hidden paths are skipped; links and files that are not Markdown are named in ``tree.warnings``.
    """
    found: list[tuple[str, str, str, Path]] = []
    for dim, dirname, root in _dimension_roots(src, project):
        if dimension is not None and dim != dimension:
            continue
        for path in sorted(root.rglob("*")):
            posix = PurePosixPath(path.relative_to(root).as_posix())
            if any(part.startswith(".") for part in posix.parts):
                continue
            if skipped_link(path, tree.warnings) or not path.is_file():
                continue
            if posix.suffix != ".md":
                tree.warnings.append(f"{path} is not a Markdown note; left out")
                continue
            found.append((dim, dirname, str(posix), path))
    # Canonical dimensions first, so a legacy duplicate gets the suffixed key.
    found.sort(key=lambda f: (DIMENSIONS.index(f[0]), f[1] in LEGACY or f[1] == ".magicfrog", f[2]))
    return found


def _read_note(tree: ForeignTree, key: str, note: tuple[str, str, str, Path]) -> Entry | None:
    """The neutral record of one note; None when it cannot be read (named in ``tree``'s warnings, losses)."""
    dim, dirname, rel, path = note
    try:
        fm, body = read_markdown(path)
    except ConvertError as exc:
        left_out_file(tree, path, exc)
        return None
    mtime = format_time(datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(microsecond=0))
    stamp = mtime
    if "updated" in fm:
        stamp = time_or(tree, fm["updated"], mtime, where=str(path), field="updated")
    updated = parse_time(stamp)
    name = PurePosixPath(rel).stem
    meta: dict[str, Any] = {
        "name": name,
        "description": first_line(body) or name,
        "type": DIMENSION_TYPES[dim],
        "created": format_time(updated),
        "updated": format_time(updated),
        "x-magicfrog-dimension": dim,
        "x-magicfrog-path": rel,
    }
    meta.update(_kept_fields(fm, dim, dirname))
    return Entry(key, meta, body)


def _kept_fields(fm: dict[str, Any], dim: str, dirname: str) -> dict[str, Any]:
    """What a note's frontmatter and place hold that a tree keeps (``revision``, ``x-magicfrog-*``)."""
    meta: dict[str, Any] = {}
    if "updated" in fm:
        raw = fm["updated"]
        meta["x-magicfrog-updated"] = format_mf_time(raw) if isinstance(raw, datetime) else str(raw)
    revision = fm.get("revision")
    if isinstance(revision, int) and not isinstance(revision, bool) and revision >= 1:
        meta["revision"] = revision
    elif revision is not None:
        meta["x-magicfrog-revision"] = revision
    if "machine" in fm:
        meta["x-magicfrog-machine"] = fm["machine"]
    if dirname in LEGACY:
        meta["x-magicfrog-legacy"] = dirname
    if dirname == ".magicfrog":
        meta["x-magicfrog-root"] = "project"
    if dim == "device":
        meta[_LOCAL_ONLY] = True
    extra = {k: v for k, v in fm.items() if k not in ("revision", "updated", "machine")}
    if extra:
        meta["x-magicfrog-extra"] = extra
    return meta


def _apply_device_rule(
    tree: ForeignTree, *, include_device: bool, local_only: bool, exclude_device: bool
) -> None:
    """Leave device notes out (``exclude_device``, with a warning), or apply :func:`check_device`."""
    device = [e for e in tree.entries if is_device_entry(e)]
    if device and exclude_device and not include_device:
        tree.entries = [e for e in tree.entries if not is_device_entry(e)]
        tree.warnings.append(f"left out {len(device)} device memories (they never leave this machine)")
    else:
        tree.entries = check_device(
            tree.entries, include_device=include_device, local_only=local_only, action="convert"
        )


def _scoped(item: tuple[str, str, str, Path], scopes: dict[str, str | None]) -> tuple[float, str]:
    """(specificity rank, path in the merged view) of one note.

    The chain ranks are account 0, user 1, agent 2, task 3; a note under the
    chosen agent's or task's id prefix ranks half a step above its dimension's
    shared notes, and its path loses the prefix.
    """
    dim, _dirname, rel, _path = item
    rank = float(CHAIN.index(dim))
    scope = scopes.get(dim)
    if scope is not None and rel.startswith(scope + "/"):
        return rank + 0.5, rel[len(scope) + 1 :]
    return rank, rel


def _effective(
    found: list[tuple[str, str, str, Path]], tree: ForeignTree, scopes: dict[str, str | None]
) -> tuple[list[tuple[str, str, str, Path]], list[str]]:
    """Keep, per path in the merged view (ignoring case), the note of the most specific level.

    Notes are visited least specific first, legacy directories before
    canonical ones within a level, so a later note overrides an earlier one.
    Device notes are outside the chain and all kept. Each override is noted in
    ``tree.warnings``. Returns the notes kept and their paths in the view.
    """
    winners: dict[str, tuple[tuple[str, str, str, Path], str]] = {}
    device: list[tuple[tuple[str, str, str, Path], str]] = []
    ranked = []
    for item in found:
        if item[0] == "device":
            device.append((item, item[2]))
            continue
        rank, view = _scoped(item, scopes)
        ranked.append((rank, item[1] not in LEGACY, view, item))
    for _rank, _canonical, view, item in sorted(ranked, key=lambda r: (r[0], r[1], r[2])):
        folded = view.lower()
        if folded in winners:
            lost = winners[folded][0]
            tree.warnings.append(f"{lost[0]}/{lost[2]} is overridden by {item[0]}/{item[2]}")
        winners[folded] = (item, view)
    chosen = sorted(winners.values(), key=lambda w: w[1]) + device
    return [c[0] for c in chosen], [c[1] for c in chosen]


def _safe_rel(entry: Entry, plan: ExportPlan) -> PurePosixPath:
    """Where ``entry`` goes in its dimension: ``x-magicfrog-path``, else ``<key>.md``."""
    rel = str(entry.meta.get("x-magicfrog-path") or f"{entry.key}.md")
    problem = recorded_path_problem(rel)
    if problem is not None:
        plan.altered(entry.key, f"x-magicfrog-path {problem}; written as {entry.key}.md instead")
        rel = f"{entry.key}.md"
    path = PurePosixPath(rel)
    if path.suffix != ".md":
        path = path.with_name(path.name + ".md")
    return path


def _render_note(entry: Entry, plan: ExportPlan) -> str:
    meta = entry.meta
    fm: dict[str, Any] = {}
    if "revision" in meta:
        fm["revision"] = meta["revision"]
    elif "x-magicfrog-revision" in meta:
        fm["revision"] = meta["x-magicfrog-revision"]
    updated = meta.get("updated")
    if updated is not None:
        current = format_mf_time(parse_time(updated, what=f"updated of {entry.key!r}"))
        original = meta.get("x-magicfrog-updated")
        fm["updated"] = same_instant(original, current) if original is not None else current
    if "x-magicfrog-machine" in meta:
        fm["machine"] = meta["x-magicfrog-machine"]
    merge_extra(plan, entry.key, "x-magicfrog-extra", meta.get("x-magicfrog-extra"), fm)
    lines = []
    for k, v in fm.items():
        if k == "updated" and isinstance(v, str):
            # MagicFrog writes the timestamp bare, as in its docs.
            lines.append(f"updated: {v}\n")
        else:
            lines.append(dump_yaml({k: v}))
    body = entry.body.strip("\n")
    return "---\n" + "".join(lines) + "---\n" + (body + "\n" if body else "")


def write_magicfrog(
    tree: ForeignTree,
    dest: str | os.PathLike[str],
    *,
    dimension: str = "user",
    project: str | os.PathLike[str] | None = None,
    include_device: bool = False,
    local_only: bool = False,
    exclude_device: bool = False,
    strict: bool = False,
) -> list[Path]:
    """Write ``tree`` as a MagicFrog data directory at ``dest`` (:func:`plan_magicfrog`); return the paths.

    With ``strict``, a memory that would be written changed or left out
    refuses the export (``ConvertError``, nothing written).
    """
    device = {"include_device": include_device, "local_only": local_only, "exclude_device": exclude_device}
    options = {"dimension": dimension, "project": project, **device}
    return write_planned("magicfrog", plan_magicfrog, tree, dest, strict=strict, **options)


def plan_magicfrog(
    tree: ForeignTree,
    dest: str | os.PathLike[str],
    plan: ExportPlan,
    *,
    dimension: str = "user",
    project: str | os.PathLike[str] | None = None,
    include_device: bool = False,
    local_only: bool = False,
    exclude_device: bool = False,
) -> None:
    """Plan ``tree`` as a MagicFrog data directory at ``dest`` (``dest/memory/<dimension>/...``).

    Each entry goes to its ``x-magicfrog-dimension`` (legacy directories are
    written to their canonical dimension, as MagicFrog does) at its
    ``x-magicfrog-path``; entries without them go to ``dimension`` at
    ``<key>.md``. Task notes read from a project's ``.magicfrog/memory/`` go
    back under ``project`` (default ``dest``). Device entries follow
    :func:`check_device`. Losses recorded in ``plan``: an unusable recorded
    path gives way to ``<key>.md``; an extra key that is not a plain line key
    is not written; a memory naming an unknown dimension, or whose file
    another already takes, is left out.
    """
    if dimension not in DIMENSIONS:
        raise ConvertError(f"unknown MagicFrog dimension {dimension!r}; use one of {', '.join(DIMENSIONS)}")
    entries = tree.entries
    if exclude_device and not include_device:
        entries = [e for e in entries if not is_device_entry(e)]
    entries = check_device(entries, include_device=include_device, local_only=local_only, action="export")
    out = Path(dest)
    proj = Path(project) if project is not None else out
    seen: dict[str, str] = {}

    def place(entry: Entry) -> Path:
        dim = entry.meta.get("x-magicfrog-dimension", dimension)
        dim = LEGACY.get(str(dim), str(dim))
        if dim not in DIMENSIONS:
            raise Unholdable(f"it names an unknown MagicFrog dimension {dim!r}")
        rel = _safe_rel(entry, plan)
        if dim == "task" and entry.meta.get("x-magicfrog-root") == "project":
            path = proj / ".magicfrog" / "memory" / rel
        else:
            path = out / "memory" / dim / rel
        where = str(path).lower()
        if where in seen:
            raise Unholdable(f"memory {seen[where]!r} is already written to {path}")
        seen[where] = entry.key
        return path

    for entry, path in plan.memories(entries, place):
        plan.add(path, _render_note(entry, plan))


#: This format, as ``bundlekit.convert`` registers it (its writer applies the device rule itself).
FORMAT = Format(
    name="magicfrog",
    summary="MagicFrog five-dimension memory tree",
    read=read_magicfrog,
    write=write_magicfrog,
    read_options=frozenset({"dimension", "project", "effective", "agent", "task"}) | DEVICE_OPTIONS,
    write_options=frozenset({"dimension", "project"}) | DEVICE_OPTIONS,
    kept=kept("updated", "revision"),
    lossy="name, description, type, tags, source, decay, important, created; the timeline",
)
