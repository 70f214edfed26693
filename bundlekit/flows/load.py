"""Load into a tree: a verified bundle, or the effective view of layered bundles, as a memory tree.

Written to a directory (then a tree on disk, read-write) or held in memory (``Memory(None)``: nothing
decrypted is written, nothing outlives the process). The MCP server's ``--from`` and ``--layer`` take this
way; a bundle held in memory keeps every file as it is, one holding what looks like a credential included
(the reader withholds it on output, the rule of the served tools), where an import into a tree would refuse it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bundlekit.bundle.fork import keeping_source
from bundlekit.bundle.layers import layered_memory, load_layered
from bundlekit.bundle.load import LoadOptions, LoadResult, load_bundle
from bundlekit.bundle.merge import car_source, keep_car_blocks
from bundlekit.bundle.sources import BlockSource
from bundlekit.crypto import KeySpec
from bundlekit.errors import UsageError
from bundlekit.memory import Memory
from bundlekit.memory.files import read_tree_files

__all__ = ["LoadRequest", "LoadedTree", "load_into", "load_tree"]


@dataclass(frozen=True)
class LoadRequest:
    """One load: the bundle at ``uri`` or the ``layers`` (``(name, uri)`` pairs, lowest first), into the
    directory ``tree`` (None: held in memory), its blocks from ``source`` (None: the URI decides), decrypted
    with ``key``, loaded with ``options`` (``load_bundle``'s)."""

    uri: str | None = None
    layers: tuple[tuple[str, str], ...] = ()
    tree: Path | None = None
    source: BlockSource | None = None
    key: KeySpec | None = None
    options: LoadOptions | None = None


@dataclass
class LoadedTree:
    """The tree loaded, where it came from (the URI, or ``layers:<names>``) and a bundle's verified root."""

    memory: Memory
    origin: str
    root: str | None = None


def load_tree(request: LoadRequest) -> LoadedTree:
    """Load as ``request`` says; raises ``UsageError`` for neither or both of a URI and layers, and what
    ``load_bundle`` and the layer loader raise (``IntegrityError``, ``WrongKeyError``, ``LoadError`` ...)."""
    if (request.uri is None) == (not request.layers):
        raise UsageError("a load takes either a URI or layers, not both or neither")
    if request.uri is not None:
        return _bundle(request.uri, request)
    return _layers(request)


def load_into(uri: str, tree: Path, *, source: BlockSource | None = None, key: KeySpec | None = None,
              options: LoadOptions | None = None) -> LoadResult:
    """The bundle at ``uri`` written as a new tree at ``tree`` (``load_bundle``), which remembers its root as
    its parent; the blocks the load read are kept in the local store as a fork keeps them (unpinned, a cache),
    so a later merge into this tree finds that base on this machine. Raises what ``load_bundle`` raises."""
    car = car_source(uri) if source is None else None
    result = load_bundle(uri, source=car or keeping_source(uri, source), key=key, out_dir=tree, options=options)
    if result.root is not None:
        keep_car_blocks(car)
    return result


def _bundle(uri: str, request: LoadRequest) -> LoadedTree:
    if request.tree is not None:
        result = load_into(uri, request.tree, source=request.source, key=request.key, options=request.options)
        return LoadedTree(Memory(request.tree), uri, result.root_cid)
    result = load_bundle(uri, source=request.source, key=request.key, options=request.options)  # nothing written
    namespace = result.manifest.get("namespace") if isinstance(result.manifest, dict) else None
    memory = Memory(None, namespace=namespace if isinstance(namespace, str) and namespace else None)
    # The bundle's files as they are, as a tree on disk would hold them: a memory holding what looks
    # like a credential is served withheld (the tools' rule), not refused as an import would.
    memory.import_(read_tree_files(result.files, source=uri).export_blob(), "replace", allow_secrets=True)
    return LoadedTree(memory, uri, result.root_cid)


def _layers(request: LoadRequest) -> LoadedTree:
    origin = "layers:" + ",".join(name for name, _uri in request.layers)
    if request.tree is not None:
        load_layered(list(request.layers), request.tree, source=request.source, key=request.key,
                     options=request.options)
        return LoadedTree(Memory(request.tree), origin)
    memory = layered_memory(request.layers, source=request.source, key=request.key, options=request.options)
    return LoadedTree(memory, origin)
