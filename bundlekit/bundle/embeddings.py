"""Embeddings in a bundle: the derived index's vectors as one file, so a loaded tree recalls by meaning at once.

``build --embeddings`` packs the vectors of the very memory files it packs
(``Memory.meaning.export_vectors``: computed where the index lacks them) as
``memory/embeddings.f16``: one little-endian float16 vector per memory, unit
length, in the order of the manifest's ``embeddings.keys`` (specs/bundle.md,
"Embeddings"). The manifest names the model id, the dimension and the keys.
In an encrypted bundle the file is encrypted like every memory file
(``memory/embeddings.f16.enc``, the same key and recipe): vectors reveal the
text they were computed from, so they are never stored in plaintext.

``load`` never writes the file into the tree: the vectors go into the new
tree's derived index (``Memory.meaning.import_vectors``) when this machine embeds with
the same model id; otherwise they are left out, with a note, and the vectors
are computed at the first recall by meaning. Vectors that are not what the
manifest says (length, NaN or infinity) are left out with a warning: they
only ever rank, and the memories load whatever they hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bundlekit.bundle.manifest import EMBEDDINGS_DTYPE, EMBEDDINGS_PATH, ENC_SUFFIX, MEMORY_DIR
from bundlekit.errors import BundlekitError, UsageError
from bundlekit.memory import Memory

__all__ = ["EMBEDDINGS_FILE", "embeddings_file", "manifest_entry", "restore_embeddings"]

#: Where the file sits among the tree's files while a bundle is built or loaded (never written into a tree).
EMBEDDINGS_FILE = EMBEDDINGS_PATH[len(MEMORY_DIR) + 1 :]


def embeddings_file(mem: Memory, tree_files: Sequence[tuple[str, bytes]]) -> tuple[tuple[str, bytes], dict[str, Any]]:
    """The embeddings file of the memory files among ``tree_files`` (path, bytes) and its manifest fields
    (all but ``path``: :func:`manifest_entry` adds it)."""
    model_id, dimension, keys, blob = mem.meaning.export_vectors(tree_files)
    return (EMBEDDINGS_FILE, blob), {"model": model_id, "dimension": dimension, "dtype": EMBEDDINGS_DTYPE, "keys": keys}


def manifest_entry(fields: Mapping[str, Any], *, encrypted: bool) -> dict[str, Any]:
    """The manifest's ``embeddings`` object: ``fields`` and the file's bundle path."""
    return {**fields, "path": EMBEDDINGS_PATH + (ENC_SUFFIX if encrypted else "")}


def check_buildable(compat: str | None) -> None:
    """``UsageError`` for a form that cannot carry embeddings (three.ws reads only its own files)."""
    if compat is not None:
        raise UsageError(f"--embeddings cannot be combined with --compat {compat}: that runtime reads only memory files")


def restore_embeddings(tree_dir: Path | None, manifest: Mapping[str, Any], blob: bytes) -> list[str]:
    """Keep a loaded bundle's vectors (``blob``, decrypted) in the index of the tree being written at
    ``tree_dir`` (nothing for a load held in memory); the warnings of what was left out and why."""
    entry = manifest.get("embeddings")
    if tree_dir is None or not isinstance(entry, dict):
        return []
    mem = Memory(tree_dir)
    try:
        try:
            here = mem.meaning.embedder().model_id  # the embedder is made, its model is not loaded
        except BundlekitError as exc:
            return [f"{EMBEDDINGS_PATH}: the bundle's vectors were left out ({exc})"]
        if here != entry["model"]:
            return [
                f"{EMBEDDINGS_PATH}: the bundle's vectors are of model {entry['model']}, this machine embeds with "
                f"{here}; they are computed at the first recall by meaning"
            ]
        try:
            mem.meaning.import_vectors(entry["model"], entry["dimension"], entry["keys"], blob)
        except ValueError as exc:
            return [f"{EMBEDDINGS_PATH}: the bundle's vectors were left out ({exc})"]
        return []
    finally:
        mem.close()
