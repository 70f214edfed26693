"""The embedder registry: the built-in embedders, and those found through the ``bundlekit.embedders`` entry-point group.

The built-ins (``wordllama``, ``openai``: :data:`BUILT_IN`, registered in ``pyproject.toml`` as a
third-party package registers) are found by name without reading the installed distributions' entry
points: that scan (``importlib.metadata``, ~30 ms) is made only for another name, or to list them all.
Whether the default embedder can run is known without it (``protocol.semantic_installed``: its packages
are findable).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

from bundlekit._lazy import extra_install_line
from bundlekit._terminal import printable
from bundlekit.embed.protocol import DEFAULT_EMBEDDER, Embedder, EmbedderSettings, semantic_installed
from bundlekit.errors import BundlekitError, EmbedderError, UsageError

if TYPE_CHECKING:
    from importlib import metadata

__all__ = ["BUILT_IN", "ENTRY_POINT_GROUP", "SEMANTIC_EXTRA", "available_embedders", "create_embedder",
           "missing_extra", "semantic_installed"]

ENTRY_POINT_GROUP = "bundlekit.embedders"
SEMANTIC_EXTRA = "semantic"
# The built-in embedders as pyproject.toml registers them (tests/embed/test_registry.py checks they agree).
BUILT_IN = {"wordllama": "bundlekit.embed.wordllama:WordLlamaEmbedder", "openai": "bundlekit.embed.openai:OpenAIEmbedder"}

def missing_extra(what: str) -> UsageError:
    """The usage error for ranking by meaning without the extra, naming it and how to install it."""
    return UsageError(
        f"{what} needs an embedding model: install the optional extra {SEMANTIC_EXTRA!r} "
        f"({extra_install_line(SEMANTIC_EXTRA)}), or choose another ranking (--rank salience or relevance)"
    )


def available_embedders() -> dict[str, metadata.EntryPoint]:
    """Registered embedders by name, sorted (the first registration of a name wins); nothing imported."""
    from importlib import metadata

    found: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return dict(sorted(found.items()))


def create_embedder(settings: EmbedderSettings) -> Embedder:
    """The embedder ``settings`` name (the default when None), built by its factory's ``from_settings``.

    ``UsageError`` when the name is not registered, when its module cannot
    be loaded, or when vectors cannot be computed here (no numpy: the
    ``semantic`` extra names what to install).
    """
    name = settings.name or DEFAULT_EMBEDDER
    if importlib.util.find_spec("numpy") is None or (name == DEFAULT_EMBEDDER and not semantic_installed()):
        raise missing_extra(f"the {name!r} embedder")
    value = BUILT_IN.get(name)
    try:
        if value is not None:  # ours: no entry-point scan
            module, _, attribute = value.partition(":")
            factory = getattr(importlib.import_module(module), attribute)
        else:
            registered = available_embedders()
            ep = registered.get(name)
            if ep is None:
                known = ", ".join(sorted({*BUILT_IN, *registered}))
                raise UsageError(f"no embedder named {name[:80]!r} is registered (available: {known}); check --embedder")
            value = ep.value
            factory = ep.load()
    except (ImportError, AttributeError) as exc:
        raise UsageError(
            f"embedder {name!r} is registered as {value} but cannot be loaded ({type(exc).__name__}); "
            "reinstall the package that provides it"
        ) from exc
    try:
        embedder: Embedder = factory.from_settings(settings)
    except BundlekitError:
        raise
    except Exception as exc:  # a third-party factory is foreign code: its failure is said as the embedder's
        raise EmbedderError(
            f"embedder {name!r} could not be set up ({type(exc).__name__}: {printable(str(exc)[:200])})"
        ) from exc
    if not isinstance(embedder, Embedder):
        raise EmbedderError(f"embedder {name!r} ({value}) did not give an embedder (no embed, model_id, ...)")
    return embedder
