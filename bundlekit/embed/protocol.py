"""The Embedder contract: texts in, one float vector per text out, with the model's id and dimension.

As small as the ``Pinner`` contract (``pinning/protocol``): an embedder is
found by name in the ``bundlekit.embedders`` entry-point group
(``embed/registry``), built from :class:`EmbedderSettings` by its factory's
``from_settings``, and used by the memory layer to rank by meaning
(``memory/semantic``). Built-ins (``wordllama``, ``openai``) register exactly
as a third-party package would.

``model_id`` names the model whose vectors these are: the derived index and a
bundle's embeddings file keep it, and vectors of another model id (or
dimension) are never compared with these; they are computed again.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from bundlekit.errors import UsageError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "DEFAULT_EMBEDDER",
    "KEY_ENV",
    "MAX_DIMENSION",
    "MAX_MODEL_ID",
    "Embedder",
    "EmbedderFactory",
    "EmbedderSettings",
    "check_model_id",
    "semantic_installed",
]

DEFAULT_EMBEDDER = "wordllama"
KEY_ENV = "BUNDLEKIT_EMBED_KEY"  # the OpenAI-compatible endpoint's key (never an option: options end up in shells' history)
MAX_DIMENSION = 8192  # more than any embedding model we know of (OpenAI's largest: 3072)
MAX_MODEL_ID = 200
# Printable ASCII without quotes or backslashes: a model id goes into the index, a manifest and messages.
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,199}")


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one model.

    ``embed`` returns a float32 array of shape ``(len(texts), dimension)``,
    one row per text in order; it raises ``EmbedderError`` when it cannot.
    ``model_id`` (at most :data:`MAX_MODEL_ID` characters, :func:`check_model_id`)
    and ``dimension`` identify the vectors; ``close`` releases what it holds.
    """

    name: str

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class EmbedderSettings:
    """Which embedder to use and how to reach it: ``name`` (an entry point in ``bundlekit.embedders``;
    None: the default, ``wordllama`` when the ``semantic`` extra is installed), and for an HTTP endpoint
    its ``url`` and ``model``. The key is read from the environment variable :data:`KEY_ENV` in ``env``."""

    name: str | None = None
    url: str | None = None
    model: str | None = None
    env: Mapping[str, str] | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EmbedderSettings:
        """Settings from ``BUNDLEKIT_EMBEDDER``, ``BUNDLEKIT_EMBED_URL`` and ``BUNDLEKIT_EMBED_MODEL``."""
        env = os.environ if env is None else env
        return cls(
            name=env.get("BUNDLEKIT_EMBEDDER") or None,
            url=env.get("BUNDLEKIT_EMBED_URL") or None,
            model=env.get("BUNDLEKIT_EMBED_MODEL") or None,
            env=env,
        )

    def environment(self) -> Mapping[str, str]:
        return os.environ if self.env is None else self.env


class EmbedderFactory(Protocol):
    """What an entry point in ``bundlekit.embedders`` must load to."""

    def from_settings(self, settings: EmbedderSettings) -> Embedder: ...


# What the built-in wordllama embedder and every vector computation need (the `semantic` extra).
_SEMANTIC_MODULES = ("numpy", "wordllama", "tokenizers", "safetensors")


def semantic_installed() -> bool:
    """Whether the ``semantic`` extra's packages are installed (found, not imported: a plain recall asks)."""
    return all(importlib.util.find_spec(name) is not None for name in _SEMANTIC_MODULES)


def check_model_id(value: object, *, what: str = "model id") -> str:
    """``value`` when it is a usable model id (printable ASCII, at most :data:`MAX_MODEL_ID` characters, no
    quotes, spaces or control characters); ``UsageError`` naming ``what`` otherwise."""
    if not isinstance(value, str) or not _MODEL_ID.fullmatch(value):
        shown = repr(value)[:80] if isinstance(value, str) else type(value).__name__
        raise UsageError(
            f"{what} {shown} is not a usable model id (letters, digits and ._:/@+=- only, "
            f"at most {MAX_MODEL_ID} characters)"
        )
    return value
