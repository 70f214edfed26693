"""Convert memory between bundlekit trees and other agent-memory systems.

One module per foreign format turns its store into neutral records
(:class:`~bundlekit.convert._common.Entry`) and back, and says what it is in its own
``FORMAT`` (a :class:`~bundlekit.convert._format.Format`); this module collects them into
the registry and holds the two public verbs::

    import_from("massgen", "workspace1", "memory")      # foreign -> bundlekit tree
    export_to("claude-code", "memory", "claude-mem")    # bundlekit tree -> foreign

Formats: ``massgen``, ``claude-code`` (module ``claude_code``), ``three.ws``
(``threews``), ``magic-context`` (``magic_context``), ``magicfrog`` and ``letta``
(``specs/interop.md`` maps every field and lists what is lossy). Beside them:
``_format`` (``Format``), ``_common`` (neutral records, the export plan, the device
rule), ``_sqlite`` (the one bounded reader of foreign SQLite) and ``_tree`` (the one
place a bundlekit tree is touched). Every conversion reports what it left out (fields a format has
no place for, timeline events, files and rows it skipped) as warnings, and
every loss in ``ConvertResult.losses``; with ``strict`` a loss refuses the
conversion before anything is written.
Device-bound memory (MagicFrog's ``device`` dimension) is refused in both
directions unless ``include_device=True, local_only=True``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
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
    check_device,
    dropped_fields,
    field_losses,
    is_device_entry,
)
from bundlekit.convert._format import Format
from bundlekit.convert._tree import read_tree, write_tree
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


# Each format module's own ``FORMAT``, in the order ``convert --help`` and the CLI's choices list them.
_FORMATS: dict[str, Format] = {
    f.name: f for f in (massgen.FORMAT, claude_code.FORMAT, threews.FORMAT, magic_context.FORMAT,
                        magicfrog.FORMAT, letta.FORMAT)
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
