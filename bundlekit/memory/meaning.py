"""``Meaning``: recall by meaning for one tree: the embedder, the vectors it ranks by, a bundle's vectors.

Reached as ``Memory.meaning``. The embedder (an ``Embedder``, or ``EmbedderSettings`` naming one; default
``EmbedderSettings.from_env()``) is loaded on the first recall by meaning and kept until :meth:`close`;
the vectors live in the derived index (``catalog.vectors``, and packed for reading in ``memory/vecfile``),
computed where it lacks them (``memory/semantic``, numpy), ranked by ``memory/bymeaning`` (no numpy); both
imported only here and only when used ("Lazy imports" in DEVELOPERS.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from bundlekit.embed.protocol import DEFAULT_EMBEDDER, EmbedderSettings, check_model_id, semantic_installed
from bundlekit.embed.registry import create_embedder
from bundlekit.errors import UsageError
from bundlekit.memory import ranking
from bundlekit.memory.access import TreeAccess
from bundlekit.memory.catalog import Catalog, CatalogUnusable
from bundlekit.memory.naming import INDEX_NAME

if TYPE_CHECKING:
    from bundlekit.embed.protocol import Embedder
    from bundlekit.memory.bymeaning import Scored, VectorCache
    from bundlekit.memory.usage import Boosts

__all__ = ["Meaning"]


class Meaning:
    """The embedder and vectors of one tree (``tree``: what its ``Memory`` delegates to)."""

    def __init__(self, tree: TreeAccess, embedder: Embedder | EmbedderSettings | None) -> None:
        self._tree = tree
        self._embedder_spec = embedder
        self._embedder: Embedder | None = None
        self._vectors: VectorCache | None = None
        self._installed: bool | None = None  # semantic_installed(), asked once (four module searches: ~1.4 ms)

    def ranking_for(self, rank: str | None = None) -> str:
        """The ranking ``rank`` names, or for None the default: ``hybrid`` when vectors can be computed here
        (an embedder given or configured, or the ``semantic`` extra installed), else ``salience``."""
        if rank is not None:
            if rank not in ranking.RANKS:
                raise UsageError(f"rank must be one of {', '.join(ranking.RANKS)}, not {rank!r}")
            return rank
        spec = self._embedder_spec if self._embedder_spec is not None else EmbedderSettings.from_env()
        if isinstance(spec, EmbedderSettings) and spec.name is None:
            if self._installed is None:
                self._installed = semantic_installed()
            return "hybrid" if self._installed else "salience"
        return "hybrid"

    def embedder(self) -> Embedder:
        """The embedder this tree ranks by meaning with, loaded once (``UsageError`` naming the ``semantic``
        extra when there is none)."""
        with self._tree.mutex:
            if self._embedder is None:
                spec = self._embedder_spec if self._embedder_spec is not None else EmbedderSettings.from_env()
                self._embedder = _open_embedder(spec, "recall by meaning (--rank semantic or hybrid)")
            return self._embedder

    def embed_tree(self) -> int:
        """Compute the vectors the index lacks (all of them for a new model); how many were computed."""
        from bundlekit.memory.bymeaning import VectorCache, model_key

        embedder = self.embedder()
        tree = self._tree
        with tree.mutex:
            if self._vectors is None:
                self._vectors = VectorCache()
            # A recall's rows may take the last full check's word ("Freshness"); a bundle's never.
            catalog = tree.index.refresh(trusted=not tree.whole)
            hold = (lambda: nullcontext()) if tree.index.private else tree.backend.hold
            try:
                if self._vectors.holds_every_vector(catalog, model_key(embedder), embedder.dimension):
                    return 0  # nothing to compute: numpy and the embedding code are not imported
                return _fill(catalog, embedder, hold, self._vectors)
            except CatalogUnusable as exc:
                tree.index.rebuild(str(exc))
                return _fill(tree.index.refresh(trusted=not tree.whole), embedder, hold, self._vectors)

    def export_vectors(self, files: Sequence[tuple[str, bytes]]) -> tuple[str, int, list[str], bytes]:
        """The vectors of the memory files among ``files`` (tree path, bytes: what a bundle packs), computed
        where the index lacks them: (model id, dimension, their keys in file order, the float16 vectors
        concatenated). ``EmbedderError`` when a file changed since its bytes were taken."""
        from bundlekit.memory.bymeaning import model_key
        from bundlekit.memory.semantic import export

        with self._tree.whole_tree():  # a bundle's vectors: every file checked, never the last check's word
            self.embed_tree()
        embedder = self.embedder()
        digests = {name: hashlib.sha256(data).digest() for name, data in files
                   if "/" not in name and name != INDEX_NAME and name.endswith(".md")}
        keys, blob = self._tree.read(lambda catalog: export(catalog, model_key(embedder), digests))
        return embedder.model_id, embedder.dimension, keys, blob

    def import_vectors(self, model_id: str, dimension: int, keys: Sequence[str], blob: bytes) -> int:
        """Keep ``blob`` (float16 vectors of the model ``model_id``, one per key of ``keys``) as the index's
        vectors of those memories (a bundle's, just loaded): a recall by meaning with that model then computes
        none. How many memories got one. ``ValueError`` for vectors that are not ``len(keys)`` finite ones."""
        from bundlekit.memory.semantic import restore

        model = f"{check_model_id(model_id)}#{dimension}"
        tree = self._tree
        with tree.mutex:
            catalog = tree.index.refresh()
            with nullcontext() if tree.index.private else tree.backend.hold(), catalog.writing():
                count = restore(catalog, model, dimension, keys, blob)
            self._vectors = None
            return count

    def by_meaning(
        self, catalog: Catalog, needle: str, mode: str, limit: int | None, min_similarity: float | None = None,
        usage: Boosts | None = None,
    ) -> list[Scored]:
        """Every memory (or the nearest ``limit``) ranked by meaning (``mode``: semantic or hybrid) against
        ``needle``, with ``usage``'s boosts when given, inside a read of ``catalog`` (``memory/semantic.rank``)."""
        from bundlekit.memory.bymeaning import Ask, VectorCache, rank

        if self._vectors is None:
            self._vectors = VectorCache()
        return rank(catalog, self._vectors, self.embedder(), needle, self._tree.now().timestamp(),
                    Ask(mode, limit, min_similarity, usage))

    def close(self) -> None:
        """Let the vectors and the embedder go (one this tree loaded is closed; one given is the caller's)."""
        self._vectors = None
        if self._embedder is not None and self._embedder is not self._embedder_spec:
            self._embedder.close()
        self._embedder = None


def _open_embedder(spec: Embedder | EmbedderSettings, what: str) -> Embedder:
    """The embedder ``spec`` gives: an ``Embedder`` as it is; the built-in default without numpy's import
    (``embed/registry``, no entry-point scan); any other through ``semantic.open_embedder``."""
    if isinstance(spec, EmbedderSettings) and (spec.name or DEFAULT_EMBEDDER) == DEFAULT_EMBEDDER and semantic_installed():
        return create_embedder(spec)
    from bundlekit.memory.semantic import open_embedder

    return open_embedder(spec, what)


def _fill(catalog: Catalog, embedder: Embedder, hold: Callable[[], AbstractContextManager[object]],
          cache: VectorCache) -> int:
    """``semantic.fill``: numpy and the embedding code imported only when vectors are computed."""
    from bundlekit.memory.semantic import fill

    return fill(catalog, embedder, hold, cache)
