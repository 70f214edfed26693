"""The options of the commands that embed (``memory recall``, ``memory context``, ``build --embeddings``):
which embedder, and for an OpenAI-compatible endpoint its URL and model (the key only from the environment)."""

from __future__ import annotations

from typing import Any

import click

from bundlekit.embed.protocol import EmbedderSettings

__all__ = ["embedder_options", "embedder_settings"]


def embedder_options(command: Any) -> Any:
    """``--embedder``, ``--embed-url`` and ``--embed-model`` (and their environment variables): what a command
    that ranks by meaning embeds with. The endpoint's key is only ever read from ``BUNDLEKIT_EMBED_KEY``."""
    for option in reversed((
        click.option("--embedder", metavar="NAME", envvar="BUNDLEKIT_EMBEDDER",
                     help="Embedder for --rank semantic/hybrid: wordllama (offline, the 'semantic' extra; the "
                          "default) or openai (an OpenAI-compatible endpoint) [env BUNDLEKIT_EMBEDDER]."),
        click.option("--embed-url", metavar="URL", envvar="BUNDLEKIT_EMBED_URL",
                     help="The OpenAI-compatible API's base URL (POST URL/embeddings); implies --embedder openai; "
                          "its key from $BUNDLEKIT_EMBED_KEY [env BUNDLEKIT_EMBED_URL]."),
        click.option("--embed-model", metavar="NAME", envvar="BUNDLEKIT_EMBED_MODEL",
                     help="The endpoint's embedding model [env BUNDLEKIT_EMBED_MODEL]."),
    )):
        command = option(command)
    return command


def embedder_settings(embedder: str | None, embed_url: str | None, embed_model: str | None) -> EmbedderSettings:
    """The settings the ``embedder_options`` give (an endpoint URL alone names the ``openai`` embedder)."""
    return EmbedderSettings(name=embedder or ("openai" if embed_url else None), url=embed_url, model=embed_model)
