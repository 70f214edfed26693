"""The real wordllama embedder, counting what it is asked to embed (how tests see what is computed again)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from bundlekit.embed.wordllama import WordLlamaEmbedder


class CountingEmbedder:
    """``WordLlamaEmbedder`` (the model the ``semantic`` extra installs) recording every batch of texts."""

    name = "wordllama"

    def __init__(self, model_id: str | None = None) -> None:
        self.inner = WordLlamaEmbedder()
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
        self.inner.close()
