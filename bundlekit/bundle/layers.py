"""Dimension merge: several memory layers (account, user, agent, task) -> one effective view.

MagicFrog's override chain (seed 000) orders its dimensions from least to
most specific, ``account < user < agent < task``; when the same path exists in
several, the effective view keeps only the most specific. Here each layer is a
bundlekit memory tree (a directory) or a bundle (any URI ``bundlekit load``
accepts, fetched and verified), and a path is a memory file ``<key>.md``,
compared ignoring case as keys are. Timelines are not overridden: the
effective timeline is the union of the layers' events, without duplicates.

``load_layered`` writes the effective view as a memory tree (the engine of
``bundlekit load --layer NAME=URI``); ``render_layered_context`` renders it as
one ``<memory>`` block, most specific layer first (the engine of
``bundlekit memory context --layer NAME=DIR``). The device dimension is not a
layer: it never merges across machines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bundlekit._fs import atomic_directory
from bundlekit.bundle.load import LoadOptions, load_bundle
from bundlekit.bundle.share import enforce_share
from bundlekit.errors import LoadError, UsageError
from bundlekit.memory import Memory, MemoryRecord
from bundlekit.memory.device import LAYERS
from bundlekit.memory.files import TreeFiles, read_tree_files
from bundlekit.memory.ranking import CHARS_PER_TOKEN
from bundlekit.memory.transfer import EXPORT_VERSION
from bundlekit.memory.withhold import withheld_warning, withhold

if TYPE_CHECKING:
    from bundlekit.bundle.sources import BlockSource
    from bundlekit.crypto._keys import KeySpec

__all__ = [
    "CHARS_PER_TOKEN",
    "LAYERS",
    "LayeredResult",
    "LayeredView",
    "effective_view",
    "layered_memory",
    "load_layered",
    "parse_layer_option",
    "render_layered_context",
]



@dataclass
class LayeredView:
    """The effective view: the winning record per key and where it came from."""

    records: list[tuple[str, MemoryRecord]]  # (layer, record), sorted by key
    timeline: list[dict[str, Any]]
    overridden: list[tuple[str, str, str]] = field(default_factory=list)  # (key, lost layer, won layer)
    warnings: list[str] = field(default_factory=list)


@dataclass
class LayeredResult:
    """What ``load_layered`` wrote."""

    out_dir: Path
    winners: dict[str, str]  # key -> layer it came from
    overridden: list[tuple[str, str, str]]
    warnings: list[str]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "out_dir": str(self.out_dir),
            "memories": len(self.winners),
            "winners": dict(self.winners),
            "overridden": [{"key": k, "layer": lost, "by": won} for k, lost, won in self.overridden],
            "warnings": list(self.warnings),
        }


def parse_layer_option(values: Iterable[str]) -> list[tuple[str, str]]:
    """Turn CLI ``NAME=URI`` strings into ``(name, uri)`` pairs. Raises ``UsageError``."""
    out = []
    for value in values:
        name, sep, uri = value.partition("=")
        if not sep or not uri:
            raise UsageError(f"--layer {value!r} is not NAME=URI (NAME one of {', '.join(LAYERS)})")
        out.append((name.strip(), uri.strip()))
    return out


def _check_layers(layers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    if not layers:
        raise UsageError(f"no layers given; pass at least one of {', '.join(LAYERS)} as NAME=URI")
    seen: set[str] = set()
    for name, _src in layers:
        if name not in LAYERS:
            hint = " (device memory never merges across machines)" if name == "device" else ""
            raise UsageError(f"unknown layer {name!r}{hint}; use {', '.join(LAYERS)}")
        if name in seen:
            raise UsageError(f"layer {name!r} is given twice; give each layer once")
        seen.add(name)
    # Least specific first, so each later layer overrides what came before.
    return sorted(layers, key=lambda layer: LAYERS.index(layer[0]))


def _open_layer(
    src: str, warnings: list[str], *, source: BlockSource | None, key: KeySpec | None, options: LoadOptions | None
) -> Memory:
    """A Memory over one layer: the directory itself, or a verified bundle held in memory (a shared bundle
    held to its own ``share`` claim: what it does not claim is dropped, named in ``warnings``)."""
    path = Path(src)
    if path.is_dir():
        return Memory(path)

    result = load_bundle(src, source=source, key=key, options=options)
    tree = read_tree_files(result.files, source=src)
    records, timeline = enforce_share(result.manifest, tree.records, tree.timeline,
                                      lambda w: warnings.append(f"{src}: {w}"))
    memory = Memory(None)
    memory.import_(TreeFiles(records, timeline).export_blob(), "replace")
    return memory


def effective_view(
    layers: Sequence[tuple[str, str]],
    *,
    source: BlockSource | None = None,
    key: KeySpec | None = None,
    options: LoadOptions | None = None,
) -> LayeredView:
    """Merge ``layers`` (``(name, directory or URI)``) into the effective view; a bundle layer is loaded from
    ``source`` with ``options`` (``load_bundle``'s).

    Raises ``UsageError`` for an unknown or repeated layer name, and whatever
    ``Memory`` or ``load_bundle`` raise for a layer that cannot be read.
    """
    winners: dict[str, tuple[str, MemoryRecord]] = {}
    overridden: list[tuple[str, str, str]] = []
    timeline: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    for name, src in _check_layers(layers):
        memory = _open_layer(src, warnings, source=source, key=key, options=options)
        for record in memory.list():
            folded = record.key.lower()
            if folded in winners:
                overridden.append((record.key, winners[folded][0], name))
            winners[folded] = (name, record)
        for event in memory.timeline():
            timeline.setdefault(_event_id(event), event)
    records = sorted(winners.values(), key=lambda item: item[1].key)
    events = sorted(timeline.values(), key=lambda e: (str(e.get("ts", "")), _event_id(e)))
    return LayeredView(records, events, sorted(overridden), warnings)


def layered_memory(
    layers: Sequence[tuple[str, str]],
    *,
    source: BlockSource | None = None,
    key: KeySpec | None = None,
    options: LoadOptions | None = None,
) -> Memory:
    """The effective view of ``layers`` as an in-memory :class:`Memory` (nothing written).

    Lets code use ``recall``, ``context_block`` or ``export`` on the merged view.
    Raises what :func:`effective_view` raises.
    """
    view = effective_view(layers, source=source, key=key, options=options)
    memory = Memory(None)
    memory.import_(_view_blob(view), strategy="replace")
    return memory


def _view_blob(view: LayeredView) -> dict[str, Any]:
    return {
        "version": EXPORT_VERSION,
        "files": {record.filename: record.raw for _layer, record in view.records},
        "timeline": view.timeline,
    }


def _event_id(event: dict[str, Any]) -> str:
    return json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def load_layered(
    layers: list[tuple[str, str]],
    out_dir: str | os.PathLike[str],
    *,
    source: BlockSource | None = None,
    key: KeySpec | None = None,
    options: LoadOptions | None = None,
) -> LayeredResult:
    """Write the effective view of ``layers`` as a memory tree at ``out_dir``.

    ``out_dir`` must not exist or be empty. The tree is built in a temporary
    directory beside it and renamed into place (``_fs.atomic_directory``), so
    nothing half-merged is ever left behind; an OS failure is a ``LoadError``.
    Memory files are copied byte for byte from the winning layer;
    ``MEMORY.md`` is rebuilt. Raises ``UsageError`` for bad layers or a
    non-empty ``out_dir``.
    """
    dest = Path(out_dir)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UsageError(f"{dest} exists and is not an empty directory; choose a new output directory")
    view = effective_view(layers, source=source, key=key, options=options)
    # A view read with a key holds decrypted memories: a private directory then.
    mode = 0o700 if key is not None else None
    with atomic_directory(
        dest, error=LoadError, mode=mode, hint="choose another output directory", parents=True
    ) as tmp:
        # The layers were validated when they were written or loaded; imported
        # memory is re-checked here, secrets included, before anything lands.
        Memory(tmp).import_(_view_blob(view), strategy="replace")
    return LayeredResult(
        dest, {record.key: layer for layer, record in view.records}, view.overridden, view.warnings
    )


def _section(layer: str, records: list[MemoryRecord]) -> list[str]:
    return [
        f"### {r.name} (`{r.filename}`)\n{r.description}\n\n{r.body}\n"
        if r.body
        else f"### {r.name} (`{r.filename}`)\n{r.description}\n"
        for r in records
    ]


def render_layered_context(
    layers: list[tuple[str, str]],
    max_tokens: int = 8192,
    *,
    source: BlockSource | None = None,
    key: KeySpec | None = None,
    options: LoadOptions | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> str:
    """Render the effective view of ``layers`` as one ``<memory>`` block, most specific first.

    Layout: ``<memory>``, then for each layer that has memories, in the order
    task, agent, user, account, a ``## <layer>`` heading and one entry per
    memory (``### Name (`key.md`)``, its description, its body), important
    memories first, then the most recently updated, then by key; then
    ``</memory>``. The whole block fits ``max_tokens`` at 4 characters per
    token: an entry that does not fit is left out and the next one tried.
    Returns ``""`` when no memory fits. Layers are directories or bundle URIs.
    What looks like a credential is withheld (``memory.withhold``; ``on_warning`` hears which file).
    """
    if max_tokens < 0:
        raise UsageError(f"max_tokens must be 0 or more, not {max_tokens}")
    view = effective_view(layers, source=source, key=key, options=options)
    if on_warning is not None:
        for warning in view.warnings:
            on_warning(warning)
    budget = max_tokens * CHARS_PER_TOKEN
    head, tail = "<memory>\n", "</memory>"
    used = len(head) + len(tail)
    parts = [head]
    for layer in reversed(LAYERS):
        records = [_shown(r, layer, on_warning) for name, r in view.records if name == layer]
        records.sort(key=lambda r: (not r.important, -r.updated.timestamp(), r.key))
        heading = f"## {layer}\n\n"
        chosen: list[str] = []
        for text in _section(layer, records):
            cost = len(text) + 1 + (0 if chosen else len(heading))
            if used + cost <= budget:
                used += cost
                chosen.append(text)
        if chosen:
            parts.append(heading + "\n".join(chosen) + "\n")
    if len(parts) == 1:
        return ""
    parts.append(tail)
    return "".join(parts)


def _shown(record: MemoryRecord, layer: str, on_warning: Callable[[str], None] | None) -> MemoryRecord:
    """``record`` as the context may show it: credentials withheld, a warning naming the layer's file."""
    shown, fields = withhold(record)
    if fields and on_warning is not None:
        on_warning(withheld_warning(f"{layer}: {record.filename}", fields))
    return shown
