"""Convert memory between bundlekit trees and other agent-memory systems.

One module per foreign format turns its store into neutral records
(:class:`~bundlekit.convert._common.Entry`) and back; this module holds the
registry and the two public verbs::

    import_from("massgen", "workspace1", "memory")      # foreign -> bundlekit tree
    export_to("claude-code", "memory", "claude-mem")    # bundlekit tree -> foreign

Formats: ``massgen``, ``claude-code``, ``three.ws``, ``magic-context``,
``magicfrog`` and ``letta`` (``specs/interop.md`` maps every field and lists
what is lossy). Every conversion reports what it left out (fields a format has
no place for, timeline events, files and rows it skipped) as warnings, and
every loss in ``ConvertResult.losses``; with ``strict`` a loss refuses the
conversion before anything is written.
Device-bound memory (MagicFrog's ``device`` dimension) is refused in both
directions unless ``include_device=True, local_only=True``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bundlekit.convert import claude_code, letta, magic_context, magicfrog, massgen, threews
from bundlekit.convert._common import (
    Entry,
    ExportPlan,
    ForeignTree,
    Loss,
    Unholdable,
    dropped_fields,
    field_losses,
)
from bundlekit.convert._tree import read_tree, write_tree
from bundlekit.convert.magicfrog import check_device, is_device_entry
from bundlekit.errors import UsageError
from bundlekit.memory.device import device_bound_keys, refuse_device_memory

__all__ = [
    "FORMATS",
    "ConvertResult",
    "Entry",
    "ExportPlan",
    "ForeignTree",
    "Format",
    "Loss",
    "Unholdable",
    "device_bound_keys",
    "export_to",
    "get_format",
    "import_from",
    "read_foreign",
    "refuse_device_memory",
    "write_foreign",
]


def _has_no_timeline(options: Mapping[str, Any]) -> str:
    return "has no timeline"


def _fields(*names: str) -> Callable[[Mapping[str, Any]], frozenset[str]]:
    kept = frozenset(names)
    return lambda options: kept


def _every_field(options: Mapping[str, Any]) -> None:
    return None


def _keeps_timeline(options: Mapping[str, Any]) -> None:
    return None


def _claude_code_fields(options: Mapping[str, Any]) -> frozenset[str]:
    return claude_code.kept_fields(str(options.get("form") or "top"))


@dataclass(frozen=True)
class Format:
    """A foreign memory format: how to read it, how to write it, which options each takes.

    ``timeline_dropped(write_options)`` says why the writer leaves the
    timeline out under those options (a clause after the format's name, e.g.
    "has no timeline"), or ``None`` when it writes every event; an export
    counts only the events written and warns about the rest.
    ``write(tree, dest, strict=..., **write_options)`` writes through an
    :class:`ExportPlan` (``_common.write_planned``): a memory the format cannot
    hold exactly is written in its nearest form or left out, and named in
    ``tree.losses``; ``strict`` refuses the export instead, writing nothing.
    ``kept(write_options)`` are the bundlekit frontmatter fields the writer
    carries (besides its own ``x-<format>-*`` keys), ``None`` when it carries
    every field; an export names every other field it met in a warning and,
    per memory, in ``losses`` (so ``strict`` refuses it, as it refuses the
    dropped timeline). ``lossy`` says in a few words what the format cannot
    hold (``convert --help`` lists it).
    """

    name: str
    summary: str
    read: Callable[..., ForeignTree]
    write: Callable[..., list[Path]]
    read_options: frozenset[str]
    write_options: frozenset[str]
    kept: Callable[[Mapping[str, Any]], frozenset[str] | None]
    lossy: str
    timeline_dropped: Callable[[Mapping[str, Any]], str | None] = _has_no_timeline


@dataclass
class ConvertResult:
    """What a conversion did: counts of what was written, the paths written, and what was left out.

    ``timeline`` counts the events written: on import the ones new to the
    tree (events it already had are not written again), on export none for a
    format without a timeline (a warning then says how many were left out).
    """

    format: str
    direction: str  # "import" | "export"
    dest: Path
    memories: int
    timeline: int
    paths: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Everything not carried exactly: memories written changed or left out, the fields a format has
    #: no place for (one per memory; one warning counts them all), dropped timeline events (key None).
    losses: list[Loss] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (paths as strings)."""
        return {
            "format": self.format,
            "direction": self.direction,
            "dest": str(self.dest),
            "memories": self.memories,
            "timeline": self.timeline,
            "paths": [str(p) for p in self.paths],
            "warnings": list(self.warnings),
            "losses": [loss.to_dict() for loss in self.losses],
        }


_DEVICE_OPTIONS = frozenset({"include_device", "local_only", "exclude_device"})


_FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format(
            "massgen",
            "MassGen workspace memory/short_term and memory/long_term",
            massgen.read_massgen,
            massgen.write_massgen,
            frozenset({"timezone"}),
            frozenset({"agent_id"}),
            _fields(*massgen.KEPT_FIELDS),
            "type, tags, source, decay, revision; a name that is not the key (MassGen's name is the file "
            "name); the timeline; '---' in a value (written as an em dash)",
        ),
        Format(
            "claude-code",
            "Claude Code memory directory (MEMORY.md + topic files)",
            claude_code.read_claude_code,
            claude_code.write_claude_code,
            frozenset(),
            frozenset({"form"}),
            _claude_code_fields,
            "tags, source, decay, important, revision, created, updated (--form top); the timeline; "
            "'---' in a value (written as an em dash); '[', ']', '\\' in MEMORY.md's link text",
        ),
        Format(
            "three.ws",
            "three.ws export blob or localStorage dump (JSON)",
            threews.read_threews,
            threews.write_threews,
            frozenset({"agent_id", "now", "key"}),
            frozenset({"namespace", "mode", "storage", "key", "rng"}),
            _fields("name", "description", "type", "created", "updated", "source", "decay", "tags", "important"),
            "revision; the timeline in the encrypted form; '[', ']', '\\' in a stored index's link text",
            threews.timeline_dropped,
        ),
        Format(
            "magic-context",
            "Magic Context SQLite database (memories table, one project)",
            magic_context.read_magic_context,
            magic_context.write_magic_context,
            frozenset({"project", "repo", "clock"}),
            frozenset({"project"}),
            _fields("created", "updated", "important", "type"),
            "name, description, tags, source, decay, revision; the timeline",
        ),
        Format(
            "magicfrog",
            "MagicFrog five-dimension memory tree",
            magicfrog.read_magicfrog,
            magicfrog.write_magicfrog,
            frozenset({"dimension", "project", "effective", "agent", "task"}) | _DEVICE_OPTIONS,
            frozenset({"dimension", "project"}) | _DEVICE_OPTIONS,
            _fields("updated", "revision"),
            "name, description, type, tags, source, decay, important, created; the timeline",
        ),
        Format(
            "letta",
            "Letta Agent File (.af): one agent's core-memory blocks",
            letta.read_letta,
            letta.write_letta,
            frozenset({"agent_id", "all_blocks"}),
            frozenset({"agent_id", "model"}),
            _every_field,
            "nothing of a memory (bundlekit's fields travel in block metadata, the timeline in the "
            "agent's); a block over Letta's default limit gets its limit raised to fit",
            _keeps_timeline,
        ),
    )
}
_ALIASES = {"threews": "three.ws", "claude_code": "claude-code", "magic_context": "magic-context"}

#: The format names, as the CLI offers them.
FORMATS: tuple[str, ...] = tuple(_FORMATS)


def get_format(name: str) -> Format:
    """The :class:`Format` registered as ``name`` (or an alias). Raises ``UsageError``."""
    canonical = _ALIASES.get(name, name)
    fmt = _FORMATS.get(canonical)
    if fmt is None:
        raise UsageError(f"unknown memory format {name!r}; use one of {', '.join(FORMATS)}")
    return fmt


def _check_options(fmt: Format, options: dict[str, Any], allowed: frozenset[str], verb: str) -> None:
    unknown = sorted(k for k, v in options.items() if k not in allowed and v is not None)
    if unknown:
        can = ", ".join(sorted(allowed)) or "none"
        raise UsageError(f"{fmt.name} {verb} does not take {', '.join(unknown)}; it takes: {can}")


def read_foreign(fmt: str, src: str | os.PathLike[str], **options: Any) -> ForeignTree:
    """Read a foreign store into neutral records without touching any bundlekit tree."""
    spec = get_format(fmt)
    _check_options(spec, options, spec.read_options, "import")
    return spec.read(src, **{k: v for k, v in options.items() if v is not None})


def write_foreign(
    fmt: str,
    tree: ForeignTree,
    dest: str | os.PathLike[str],
    *,
    include_device: bool = False,
    local_only: bool = False,
    exclude_device: bool = False,
    strict: bool = False,
    **options: Any,
) -> list[Path]:
    """Write neutral records into a foreign store, applying the device rule first.

    Memories the format cannot hold exactly are written in their nearest form
    or left out, and named in ``tree.losses`` and ``tree.warnings``; with
    ``strict`` any such loss raises ``ConvertError`` and nothing is written.
    """

    spec = get_format(fmt)
    _check_options(spec, options, spec.write_options, "export")
    if spec.name == "magicfrog":
        options.update(include_device=include_device, local_only=local_only, exclude_device=exclude_device)
    else:
        entries = tree.entries
        if exclude_device and not include_device:
            entries = [e for e in entries if not is_device_entry(e)]
        entries = check_device(entries, include_device=include_device, local_only=local_only, action="export")
        # The same warnings list: what the writer reports reaches the caller's tree.
        tree = ForeignTree(entries, tree.timeline, tree.warnings, tree.losses)
    return spec.write(tree, dest, strict=strict, **{k: v for k, v in options.items() if v is not None})


def _refuse_in_place(src: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """Converting a store onto itself rewrites the files being converted: refuse (``UsageError``)."""
    if os.path.exists(dest) and os.path.realpath(src) == os.path.realpath(dest):
        raise UsageError(
            f"the output {os.fspath(dest)} is the source itself; converting in place would overwrite "
            "the files being converted: write to another directory"
        )


def _refuse_inside_tree(src: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """An export written inside the tree it converts replaces the tree's own files (``-o memory/MEMORY.md``
    overwrote the index with a three.ws blob) or adds files to it: refuse (``UsageError``) before reading."""
    tree, out = os.path.realpath(src), os.path.realpath(dest)
    if out != tree and os.path.commonpath([tree, out]) == tree:
        raise UsageError(
            f"the output {os.fspath(dest)[:200]} is inside the memory tree {os.fspath(src)[:200]} being converted; "
            "it would overwrite or add to the tree's files: write outside it"
        )


def import_from(
    fmt: str,
    src: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    strategy: str = "replace",
    allow_secrets: bool = False,
    strict: bool = False,
    **options: Any,
) -> ConvertResult:
    """Convert the foreign store ``src`` (format ``fmt``) into the bundlekit tree ``dest``.

    A foreign memory that cannot be read (not UTF-8, too large, a bad
    timestamp read as the file's time) is left out or changed and named in a
    warning and in ``losses``; with ``strict`` any such loss raises
    ``ConvertError`` before the tree is touched.

    ``options`` are the format's reader options (see ``specs/interop.md``).
    ``strategy`` is how to treat memories already in ``dest``: ``replace``
    (incoming wins) or ``merge`` (``dest`` wins). The tree is written through
    ``Memory.import_``: validated, secret-guarded, all or nothing. Raises
    ``UsageError`` (unknown format or option, ``dest`` is ``src``), ``ConvertError`` (unreadable
    input), ``DeviceMemoryError`` (device memory without a local-only request)
    and the memory store's errors.
    """
    if strategy not in ("replace", "merge"):
        raise UsageError(f"unknown import strategy {strategy!r}; use replace or merge")
    spec = get_format(fmt)
    _refuse_in_place(src, dest)
    tree = read_foreign(spec.name, src, **options)
    report = write_tree(tree, dest, strategy=strategy, allow_secrets=allow_secrets, strict=strict)
    path = Path(dest)
    return ConvertResult(
        spec.name,
        "import",
        path,
        len(tree.entries),
        report.timeline_added,
        [path / f"{e.key}.md" for e in tree.entries],
        list(tree.warnings),
        list(tree.losses),
    )


def export_to(
    fmt: str,
    src: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    include_device: bool = False,
    local_only: bool = False,
    exclude_device: bool = False,
    strict: bool = False,
    **options: Any,
) -> ConvertResult:
    """Convert the bundlekit tree ``src`` into format ``fmt`` at ``dest``.

    ``options`` are the format's writer options. Every memory is converted: a
    value the format cannot hold exactly is written in its nearest faithful
    form, or the memory is left out, and either way the memory is named in a
    warning and in ``losses`` (``specs/interop.md`` section 1.4). With
    ``strict`` any such loss raises ``ConvertError`` and nothing is written.
    Device-bound memories (read
    from a MagicFrog ``device`` dimension) are refused with
    ``DeviceMemoryError`` unless ``include_device`` and ``local_only`` are both
    set, or left out with ``exclude_device``.
    """

    spec = get_format(fmt)
    _refuse_in_place(src, dest)
    _refuse_inside_tree(src, dest)
    tree = read_tree(src)
    if spec.name == "three.ws" and options.get("namespace") is None:
        # A blob names its agent; the tree's directory name is the memory store's default namespace.
        options["namespace"] = Path(src).resolve().name
    written = tree.entries
    if exclude_device and not include_device:
        written = [e for e in tree.entries if not is_device_entry(e)]
    # What the format has no place for is known before planning: a loss like any other, so
    # ``strict`` refuses it before the first byte is written (ExportPlan.earlier).
    warnings = _format_losses(spec, tree, written, options)
    paths = write_foreign(
        spec.name,
        tree,
        dest,
        include_device=include_device,
        local_only=local_only,
        exclude_device=exclude_device,
        strict=strict,
        **options,
    )
    left_out = len({loss.key for loss in tree.losses if loss.left_out} & {e.key for e in written})
    # The events written: none where the format drops the timeline, else those the writer kept.
    timeline = 0 if spec.timeline_dropped(options) is not None else len(tree.timeline)
    return ConvertResult(
        spec.name,
        "export",
        Path(dest),
        len(written) - left_out,
        timeline,
        paths,
        [*tree.warnings, *warnings],
        list(tree.losses),
    )


def _format_losses(
    spec: Format, tree: ForeignTree, written: list[Entry], options: Mapping[str, Any]
) -> list[str]:
    """Record in ``tree.losses`` what ``spec`` cannot carry of any memory; return the warnings saying so.

    The fields the format has no place for (one loss per memory, one warning
    with counts) and the timeline events it drops (one loss, ``memory:
    null``); device memories ``exclude_device`` left out get a warning only
    (the option's choice).
    """
    warnings: list[str] = []
    if len(written) != len(tree.entries):
        # A choice --exclude-device makes (device memory never leaves this machine), not a loss.
        device = len(tree.entries) - len(written)
        warnings.append(f"left out {device} device memories (they never leave this machine)")
    kept = spec.kept(options)
    if kept is not None:
        tree.losses.extend(field_losses(written, kept, spec.name))
        warnings.extend(dropped_fields(written, kept, spec.name))
    dropped = spec.timeline_dropped(options)
    if dropped is not None and tree.timeline:
        count = len(tree.timeline)
        change = f"left out {count} timeline {'event' if count == 1 else 'events'}: {spec.name} {dropped}"
        tree.losses.append(Loss(None, change, left_out=True))
        warnings.append(change)
    return warnings
