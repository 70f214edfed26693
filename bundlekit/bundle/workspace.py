"""Team workspaces: teammates' shared bundles as read-only layers beside an agent's own tree.

``mcp --workspace [LABEL=]URI_OR_NAME`` (repeatable) adds each teammate's shared bundle (a CAR, an
``ipfs://`` or ``ipns://`` URI, a gateway URL, or a bare IPNS name) to what recall and the context
block see. Each layer is fetched and verified exactly as ``bundlekit load`` does (every byte checked,
every bound held), held in memory (``Memory(None)``: nothing of it is written to disk) and held to its
own ``share`` claim (``bundle.share.enforce_share``: a memory of a type the manifest does not name, or
marked ``share: private``, is dropped and named in a warning).

A layer is labelled with its publisher, as MassGen labels each memory with the agent that wrote it
(``### <name> [Agent: <agent_id>]``, github.com/massgen/MassGen
``docs/source/user_guide/memory_filesystem_mode.rst`` at 304dbaa1, "System Prompt Format"): the
``LABEL`` given, else the manifest's verified signer, else its namespace. Writes never reach a layer
(there is no path from a tool to one), and a merge never pulls a layer into the tree: layers live only
in the serving process.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bundlekit.bundle.load import LoadOptions, load_bundle
from bundlekit.bundle.share import enforce_share
from bundlekit.errors import UsageError
from bundlekit.memory import Memory, MemoryRecord
from bundlekit.memory.files import read_tree_files
from bundlekit.memory.ranking import CHARS_PER_TOKEN, RecallHit
from bundlekit.memory.transfer import EXPORT_VERSION
from bundlekit.memory.withhold import withheld_warning, withhold

if TYPE_CHECKING:
    from bundlekit.bundle.sources import BlockSource
    from bundlekit.crypto._keys import KeySpec

__all__ = [
    "OWN",
    "WorkspaceLayer",
    "open_workspace",
    "parse_workspace_option",
    "workspace_context",
    "workspace_recall",
]

#: The source label of a hit from the agent's own tree (no layer may take it).
OWN = "own"
MAX_LABEL = 64
_LABEL = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.@:-]")
_TAG = re.compile(r"<(?=\s*/?\s*workspace)", re.IGNORECASE)
_IPNS_NAME = re.compile(r"(k51[a-z0-9]{40,80}|12D3Koo[A-Za-z0-9]{40,60}|Qm[A-Za-z0-9]{44})")


@dataclass
class WorkspaceLayer:
    """One teammate's shared bundle: who published it, its memories (read-only, in memory), its root."""

    publisher: str
    memory: Memory
    uri: str
    root: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: Its memories in context order (important first, then the most recently updated, then by key), listed
    #: once when it opens: a layer never changes, and listing a large one on every context call costs seconds.
    records: list[MemoryRecord] = field(default_factory=list)


def parse_workspace_option(values: Iterable[str]) -> list[tuple[str | None, str]]:
    """``[LABEL=]URI_OR_NAME`` strings as ``(label or None, uri)``; a bare IPNS name becomes ``ipns://NAME``.

    Raises ``UsageError`` for an empty value or a label that is not a short plain name.
    """
    out: list[tuple[str | None, str]] = []
    for value in values:
        label: str | None = None
        head, sep, rest = value.partition("=")
        if sep and "/" not in head and ":" not in head:
            if not _LABEL.fullmatch(head) or head.casefold() == OWN:
                raise UsageError(f"--workspace {value[:80]!r}: the label must be a plain name of letters, digits "
                                 f"and ._@- (at most {MAX_LABEL}), not {OWN!r}")
            label, value = head, rest
        uri = value.strip()
        if not uri:
            raise UsageError("--workspace needs a bundle: a .car, an ipfs:// or ipns:// URI, a URL or an IPNS name")
        if _IPNS_NAME.fullmatch(uri) and not Path(uri).exists():
            uri = f"ipns://{uri}"
        out.append((label, uri))
    return out


def open_workspace(
    specs: Sequence[tuple[str | None, str]],
    *,
    source: BlockSource | None = None,
    key: KeySpec | None = None,
    options: LoadOptions | None = None,
) -> list[WorkspaceLayer]:
    """Load and verify each layer (``load_bundle``: what it raises, it raises here, before anything serves).

    Raises ``UsageError`` when two layers would carry the same label.
    """
    layers: list[WorkspaceLayer] = []
    for label, uri in specs:
        layer = _open_layer(label, uri, source=source, key=key, options=options)
        if any(other.publisher == layer.publisher for other in layers):
            raise UsageError(f"two workspace layers are both labelled {layer.publisher!r}; "
                             "name them with --workspace LABEL=URI")
        layers.append(layer)
    return layers


def _open_layer(
    label: str | None, uri: str, *, source: BlockSource | None, key: KeySpec | None, options: LoadOptions | None
) -> WorkspaceLayer:
    """One layer: loaded, verified, held to its share claim, labelled."""
    result = load_bundle(uri, source=source, key=key, options=options)
    warnings = [f"{uri}: {w}" for w in result.warnings]
    tree = read_tree_files(result.files, source=uri)
    records, timeline = enforce_share(result.manifest, tree.records, tree.timeline,
                                      lambda w: warnings.append(f"{uri}: {w}"))
    if "share" not in result.manifest:
        warnings.append(f"{uri}: not a shared bundle (its manifest names no share); every memory in it is shown")
    claimed = label or result.publisher or str(result.manifest.get("namespace", ""))
    # A bundle names itself: one short, plain label (no brackets or line breaks to forge another's entry).
    publisher = _UNSAFE.sub("_", claimed)[:MAX_LABEL] or "unnamed"
    if publisher.casefold() == OWN:  # "OWN" would read as the agent's own tree as surely as "own"
        publisher = f"{publisher}-layer"
    memory = Memory(None)
    # As --from: the files as they are; one that looks like it holds a credential is shown withheld, not refused.
    memory.import_({"version": EXPORT_VERSION, "files": {r.filename: r.raw for r in records.values()},
                    "timeline": timeline}, strategy="replace", allow_secrets=True)
    ordered = sorted(memory.list(), key=lambda r: (not r.important, -r.updated.timestamp(), r.key))
    return WorkspaceLayer(publisher, memory, uri, result.root_cid, warnings, ordered)


def workspace_recall(
    own: Memory, layers: Sequence[WorkspaceLayer], query: str, limit: int, *, rank: str | None = None,
    min_similarity: float | None = None,
) -> list[dict[str, Any]]:
    """Recall over the own tree and every layer, best score first, at most ``limit`` hits.

    Each hit is ``RecallHit.to_dict`` with its ``body``, ``source`` (``"own"`` or the layer's publisher)
    and ``read_only`` (True for a layer). Ties keep the own tree first, then the layers in order.
    """
    found: list[tuple[float, int, str, RecallHit]] = []
    for order, (name, memory) in enumerate([(OWN, own), *((layer.publisher, layer.memory) for layer in layers)]):
        for hit in memory.recall(query, limit, rank=memory.ranking_for(rank), min_similarity=min_similarity):
            found.append((hit.score, order, name, hit))
    found.sort(key=lambda item: (-item[0], item[1], item[3].key))
    return [
        {**hit.to_dict(place), "body": hit.record.body, "source": name, "read_only": name != OWN}
        for place, (_score, _order, name, hit) in enumerate(found[:limit], 1)
    ]


def workspace_context(
    own: Memory, layers: Sequence[WorkspaceLayer], max_tokens: int,
    on_warning: Callable[[str], None] | None = None,
) -> str:
    """The own tree's context block, then the layers' memories within what is left of ``max_tokens``.

    The layers' part is ``<workspace>`` ... ``</workspace>``: a ``## Shared by <publisher> (read-only)``
    heading per layer and one entry per memory, ``### <name> [Agent: <publisher>]``, its description in
    italics, its body (MassGen's form), important memories first, then the most recently updated, then by
    key; an entry that does not fit is left out and the next one tried. The layers share what is left
    max-min fairly (:func:`_fair_rooms`: one huge layer cannot starve another); a layer's text cannot close
    the block (:func:`_inert`). What looks like a credential is withheld (``memory.withhold``).
    """
    block = own.context_block(max_tokens)
    budget = max_tokens * CHARS_PER_TOKEN - len(block)
    head, tail = "\n<workspace>\n", "</workspace>\n"
    entries = [(layer, _entries(layer, on_warning)) for layer in layers]
    headings = [len(_heading(layer)) + 1 for layer in layers]
    needs = [heading + sum(len(text) + 1 for text in texts) for heading, (_layer, texts) in zip(headings, entries, strict=True)]
    parts: list[str] = []
    for (layer, texts), heading, room in zip(entries, headings, _fair_rooms(needs, budget - len(head) - len(tail)), strict=True):
        chosen = _fitted(texts, heading, room)
        if chosen:
            parts.append(_heading(layer) + "\n".join(chosen) + "\n")
    if not parts:
        return block
    return block + head + "".join(parts) + tail


def _heading(layer: WorkspaceLayer) -> str:
    return f"## Shared by {layer.publisher} (read-only)\n\n"


def _fair_rooms(needs: Sequence[int], total: int) -> list[int]:
    """The characters each layer may take of ``total``: max-min fair (the smallest needs are met first, the
    rest split evenly), so one huge layer cannot starve the others whatever its place in the order."""
    rooms = [0] * len(needs)
    left = max(total, 0)
    for place, index in enumerate(sorted(range(len(needs)), key=lambda i: needs[i])):
        rooms[index] = min(needs[index], left // (len(needs) - place))
        left -= rooms[index]
    return rooms


def _entries(layer: WorkspaceLayer, on_warning: Callable[[str], None] | None) -> list[str]:
    """Every entry of ``layer``, in context order (``WorkspaceLayer.records``)."""
    return [_entry(_shown(record, layer, on_warning), layer.publisher) for record in layer.records]


def _fitted(texts: Sequence[str], heading: int, room: int) -> list[str]:
    """The entries among ``texts`` that fit in ``room`` characters with their ``heading``, in order (one that
    does not fit is left out and the next one tried)."""
    chosen: list[str] = []
    used = heading
    for text in texts:
        if used + len(text) + 1 <= room:
            used += len(text) + 1
            chosen.append(text)
    return chosen


def _entry(record: MemoryRecord, publisher: str) -> str:
    """One memory's entry, its text inert: no ``<workspace>`` tag of the layer's closes the block, so nothing a
    teammate wrote can read as the agent's own memory after it."""
    body = f"\n{_inert(record.body)}\n" if record.body else ""
    return f"### {_inert(record.name)} [Agent: {publisher}]\n*{_inert(record.description)}*\n{body}"


def _inert(text: str) -> str:
    """``text`` with every ``<workspace``/``</workspace`` tag (any case, spaces inside) opened as ``&lt;``."""
    return _TAG.sub("&lt;", text)


def _shown(record: MemoryRecord, layer: WorkspaceLayer, on_warning: Callable[[str], None] | None) -> MemoryRecord:
    shown, fields = withhold(record)
    if fields and on_warning is not None:
        on_warning(withheld_warning(f"{layer.publisher}: {record.filename}", fields))
    return shown
