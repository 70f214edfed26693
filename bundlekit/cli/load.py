"""``bundlekit load`` and ``bundlekit fork``: bundles back into memory trees, verified.

``--json`` prints one line of JSON on stdout; otherwise the summary
("loaded ... into DIR", or "verified ..." when ``load`` writes nothing),
warnings and the progress bar go to stderr.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from bundlekit.bundle.layers import load_layered, parse_layer_option
from bundlekit.bundle.load import DEFAULT_DEADLINE, DEFAULT_MAX_BYTES, LoadOptions, bounded_options, load_bundle
from bundlekit.bundle.sources import gateway_source
from bundlekit.cli import output
from bundlekit.cli._keyopts import key_options, resolve_key_spec
from bundlekit.cli._params import Count, Seconds, legacy_tree_argument, tree_option
from bundlekit.cli._urls import check_urls
from bundlekit.errors import UsageError
from bundlekit.flows.fork import ForkRequest, fork as fork_flow
from bundlekit.flows.load import load_into
from bundlekit.net.http import HttpOptions

_PUBLISHER = click.option(
    "--publisher", "publishers", multiple=True, metavar="ID",
    help="Require a signature by ID (Ethereum address or did:key; repeatable): refuse others, exit 3.")

__all__ = ["fork", "load"]


def _load_limits(command: Callable[..., None]) -> Callable[..., None]:
    """``--deadline``, ``--follow-redirects`` and ``--max-bytes``, given to ``command`` as one ``limits``
    (``LoadOptions``: the options are the values it holds, checked by their click types already)."""

    @click.option("--deadline", type=Seconds(), default=DEFAULT_DEADLINE, show_default=True, metavar="SECONDS",
                  help="Give up when the load (and each response) takes longer.")
    @click.option("--follow-redirects", is_flag=True,
                  help="Follow a gateway's redirects to other hosts (same-host ones always; https to http never).")
    @click.option("--max-bytes", type=Count(0), default=DEFAULT_MAX_BYTES, show_default=True,
                  help="Refuse a bundle whose files claim more bytes than this, together, before anything "
                       "is written (a memory bundle's bound; see README, \"One name for one thing\").")
    @functools.wraps(command)
    def with_limits(*args: Any, deadline: float, follow_redirects: bool, max_bytes: int, **kwargs: Any) -> None:
        http = HttpOptions(follow_redirects=follow_redirects)
        command(*args, limits=LoadOptions(http=http, deadline=deadline, max_bytes=max_bytes), **kwargs)

    return with_limits


@click.command("load")
@click.argument("uri", required=False, callback=check_urls)
@click.option("-o", "--output", "output_path", type=click.Path(file_okay=False, path_type=Path),
              help="Write the memory tree here (a new or empty directory); without it, only verify.")
@click.option("--gateway", "gateways", multiple=True, metavar="URL", callback=check_urls,
              help="Trustless gateway, tried in order.")
@click.option("--layer", "layers", multiple=True, metavar="NAME=URI", help="Load layered bundles (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@_load_limits
@_PUBLISHER
@key_options
def load(uri: str | None, output_path: Path | None, gateways: tuple[str, ...], layers: tuple[str, ...],
         as_json: bool, limits: LoadOptions, publishers: tuple[str, ...], **params: Any) -> None:
    """Load the bundle at URI (ipfs://CID, ipns://NAME, gateway URL, .car, manifest URL), verified.

    Skipped files are listed as warnings on stderr; a file that does not match
    its CID fails the load (exit 3) and nothing is written.
    """
    key = resolve_key_spec(**params)
    if layers:
        if uri is not None:
            raise UsageError("give either URI or --layer NAME=URI options, not both")
        if output_path is None:
            raise UsageError("--layer needs -o DIR")
        if publishers:
            raise UsageError("--publisher applies to one URI, not to --layer loads")

        # One deadline for all the layers: folded into the HTTP options here, once.
        bounded = bounded_options(limits.http, limits.deadline)
        outcome = load_layered(parse_layer_option(layers), output_path, source=gateway_source(gateways), key=key,
                               options=LoadOptions(http=bounded))
        output.warn_all(outcome.warnings)
        if as_json:
            output.data_json(outcome.to_dict())
        else:
            output.status(f"loaded {len(layers)} layers into {output_path}: {len(outcome.winners)} memories")
        return
    if uri is None:
        raise UsageError("give a bundle URI (or --layer NAME=URI)")

    with output.Progress("loading", unit="files") as progress:
        options = replace(limits, progress=progress.callback, publishers=publishers)
        if output_path is None:  # verified, nothing written
            result = load_bundle(uri, source=gateway_source(gateways), key=key, options=options)
        else:
            result = load_into(uri, output_path, source=gateway_source(gateways), key=key, options=options)
    output.warn_all(result.warnings)
    if result.publisher is not None:
        output.status(f"signed by {result.publisher} (signature verified)")
    if as_json:
        output.data_json(result.summary())
        return
    if not result.manifest_verified:
        output.warn("the manifest came from a plain URL and is not content-addressed; "
                    "files were checked against the CIDs it lists")
    root = result.summary()["root"] or uri
    if output_path is None:  # nothing written: say what was done, and how to keep the files
        output.status(f"verified {root}: {len(result.files)} files, {len(result.warnings)} skipped; "
                      "nothing written (add -o DIR to write the memory tree)")
    else:
        output.status(f"loaded {root}: {len(result.files)} files into {output_path}, "
                      f"{len(result.warnings)} skipped")


@click.command("fork")
@click.argument("uri", callback=check_urls)
@legacy_tree_argument("dest")
@tree_option("The memory tree to import into.")
@click.option("--strategy", type=click.Choice(["merge", "replace"]), default="merge", show_default=True,
              help="merge keeps local memories on conflict; replace takes the bundle's.")
@click.option("--gateway", "gateways", multiple=True, metavar="URL", callback=check_urls,
              help="Trustless gateway, tried in order.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@_PUBLISHER
@key_options
def fork(uri: str, tree: Path, strategy: str, gateways: tuple[str, ...], as_json: bool, publishers: tuple[str, ...],
         **params: Any) -> None:
    """Import the bundle at URI into the memory tree (-d), all or nothing, each memory file as the bundle
    holds it; the tree remembers the bundle's root as its parent (the base `merge` finds when it comes back)."""

    result = fork_flow(ForkRequest(uri, tree, strategy=strategy, gateways=gateways,
                                   key=resolve_key_spec(**params), load=LoadOptions(publishers=publishers)))
    output.warn_all(result.loaded.warnings)
    if as_json:
        output.data_json(result.summary())
    else:
        output.status(f"forked {result.loaded.source} into {tree}: {result.memories} {'memory' if result.memories == 1 else 'memories'} ({strategy})")
