"""What a format module tells the registry: :class:`Format`, and the small rules its fields are built from.

Each format module ends with its own ``FORMAT = Format(name=..., ...)``, keyword by keyword;
``bundlekit.convert`` collects them (in the order ``convert --help`` lists them) and does nothing
format-specific beyond that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bundlekit.convert._common import ForeignTree

__all__ = ["DEVICE_OPTIONS", "Format", "every_field", "has_no_timeline", "keeps_timeline", "kept"]

#: The device rule's options (``--include-device``, ``--local-only``, ``--exclude-device``).
DEVICE_OPTIONS = frozenset({"include_device", "local_only", "exclude_device"})


def has_no_timeline(options: Mapping[str, Any]) -> str:
    """``timeline_dropped`` of a format with no place for the timeline, whatever its options."""
    return "has no timeline"


def keeps_timeline(options: Mapping[str, Any]) -> None:
    """``timeline_dropped`` of a format that writes every event."""
    return None


def every_field(options: Mapping[str, Any]) -> None:
    """``kept`` of a format that carries every frontmatter field."""
    return None


def kept(*names: str) -> Callable[[Mapping[str, Any]], frozenset[str]]:
    """``kept`` of a format that carries the frontmatter fields ``names``, whatever its options."""
    fields = frozenset(names)
    return lambda options: fields


@dataclass(frozen=True)
class Format:
    """A foreign memory format: how to read it, how to write it, which options each takes.

    ``timeline_dropped(write_options)`` says why the writer leaves the
    timeline out under those options (a clause after the format's name, e.g.
    "has no timeline"), or ``None`` when it writes every event; an export
    counts only the events written and warns about the rest.
    ``write(tree, dest, strict=..., **write_options)`` writes through an
    :class:`~bundlekit.convert._common.ExportPlan` (``_common.write_planned``): a memory the format cannot
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
    timeline_dropped: Callable[[Mapping[str, Any]], str | None] = has_no_timeline
