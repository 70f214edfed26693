"""The real wordllama embedder, counting what it is asked to embed (how tests see what is computed again).

The model is loaded once per test process (:func:`shared_model`) and shared by every ``CountingEmbedder``:
a load reads 16 MB of weights and a tokenizer (about a second on a loaded machine), and tests made a
fresh one dozens of times. What a test checks of loading itself it checks on a ``WordLlamaEmbedder`` of
its own (tests/embed).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from bundlekit.embed.wordllama import WordLlamaEmbedder


_MODEL: list[WordLlamaEmbedder] = []


def shared_model() -> WordLlamaEmbedder:
    """This process's one ``WordLlamaEmbedder``, made on first use; it loads its files on its first ``embed``."""
    if not _MODEL:
        _MODEL.append(WordLlamaEmbedder())
    return _MODEL[0]


class CountingEmbedder:
    """``WordLlamaEmbedder`` (the model the ``semantic`` extra installs) recording every batch of texts."""

    name = "wordllama"

    def __init__(self, model_id: str | None = None) -> None:
        self.inner = shared_model()
        self._model_id = model_id
        self.batches: list[list[str]] = []

    @property
    def model_id(self) -> str:
        return self._model_id or self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def texts(self) -> int:
        return sum(len(b) for b in self.batches)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.batches.append(list(texts))
        return self.inner.embed(texts)

    def close(self) -> None:
        """Nothing to release: the model is shared by the whole test process (:func:`shared_model`)."""
