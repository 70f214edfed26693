"""What ``bundlekit mcp`` serves: a memory tree, a verified bundle, or a layered view.

Three sources, chosen by the options of ``bundlekit mcp``:

* ``-d DIR`` alone: the tree at ``DIR``, read-write. It must exist
  (``Memory.exists``, as for ``bundlekit memory`` commands that read;
  ``bundlekit memory init`` makes one), so a typo never starts a server
  over an empty, new tree.
* ``--from URI``: the bundle is loaded and verified exactly as
  ``bundlekit load`` does (every byte checked, decrypted with the key
  options), into ``-d DIR`` (then read-write: DIR is where writes go)
  or, read-only, held in memory (``Memory(None)``: the files, their index
  and the timeline in dicts and an in-memory SQLite database), so no
  decrypted byte is ever written to disk and nothing outlives the process,
  however it ends.
* ``--layer NAME=URI`` (repeatable): the effective view of the layers, held
  in memory (read-only), or written to ``-d DIR`` (read-write).

Beside any of them, ``--workspace [LABEL=]URI`` (repeatable) adds teammates'
shared bundles as read-only layers (``bundle.workspace``): loaded and verified
the same way, held in memory, seen by recall and the context block with their
publisher's label, never written to.

A load that fails verification raises before the server starts, so a
tampered bundle is refused at start with the loader's message (exit 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bundlekit._closing import Closing
from bundlekit.bundle.load import LoadOptions
from bundlekit.bundle.sources import BlockSource
from bundlekit.bundle.workspace import WorkspaceLayer, open_workspace
from bundlekit.crypto import KeySpec
from bundlekit.errors import UsageError
from bundlekit.flows.load import LoadRequest, load_tree
from bundlekit.memory import Memory

__all__ = ["ServedMemory", "open_served_memory"]


@dataclass
class ServedMemory(Closing):
    """The memory a server answers from.

    ``read_only`` is True when nothing may be written (a URI or layers without
    ``-d``); ``origin`` says where it came from (a directory, a URI, or
    ``layers:<names>``); ``root`` is the verified root CID of a loaded bundle; ``workspace`` the teammates'
    shared bundles served beside it, read-only.
    """

    memory: Memory
    read_only: bool
    origin: str
    root: str | None = None
    workspace: list[WorkspaceLayer] = field(default_factory=list)

    @property
    def tree_dir(self) -> Path | None:
        """The tree's directory on disk (None for a bundle or layered view held in memory)."""
        return self.memory.root

    def close(self) -> None:
        """Nothing to remove: a read-only source lives in memory, a tree on disk is the user's."""


def _existing_tree(path: Path) -> Memory:
    """The tree at ``path`` if it is there to read (``Memory.exists``, the rule every ``memory`` command uses)."""
    memory = Memory(path)
    if not memory.exists():
        raise UsageError(
            f"no memory tree at {path} (no MEMORY.md, no memory files): run `bundlekit memory -d {path} init`"
        )
    return memory


def open_served_memory(
    *,
    memory_dir: Path | None = None,
    from_uri: str | None = None,
    layers: Sequence[tuple[str, str]] = (),
    source: BlockSource | None = None,
    key: KeySpec | None = None,
    options: LoadOptions | None = None,
    workspace: Sequence[tuple[str | None, str]] = (),
) -> ServedMemory:
    """Open the source the options name (see the module docstring); bundles are loaded from ``source`` with
    ``options`` (``load_bundle``'s).

    Raises ``UsageError`` for a missing or conflicting source, and what
    ``load_bundle`` / the layer loader raise (``IntegrityError``, ``WrongKeyError``,
    ``LoadError`` ...) for a bundle that cannot be loaded and verified.
    """
    if from_uri is not None and layers:
        raise UsageError("give either --from URI or --layer NAME=URI options, not both")
    if from_uri is not None or layers:
        loaded = load_tree(LoadRequest(from_uri, tuple(layers), memory_dir, source=source, key=key, options=options))
        served = ServedMemory(loaded.memory, read_only=memory_dir is None, origin=loaded.origin, root=loaded.root)
    elif memory_dir is None:
        raise UsageError("say what to serve: -d DIR (or $BUNDLEKIT_MEMORY_DIR, or a tree at ./memory), --from URI "
                         "or --layer NAME=URI")
    else:
        served = ServedMemory(_existing_tree(memory_dir), read_only=False, origin=str(memory_dir))
    served.workspace = open_workspace(workspace, source=source, key=key, options=options)  # verified before serving
    return served
