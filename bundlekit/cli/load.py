"""``bundlekit load`` and ``bundlekit fork``: bundles back into memory trees, verified."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from bundlekit.bundle.fork import fork_bundle
from bundlekit.bundle.layers import load_layered, parse_layer_option
from bundlekit.bundle.load import load_bundle
from bundlekit.cli._keyopts import key_options, resolve_key_spec
from bundlekit.errors import UsageError

__all__ = ["fork", "load"]


def _warn(warnings: list[str]) -> None:
    for line in warnings:
        click.echo(f"warning: {line}", err=True)


@click.command("load")
@click.argument("uri", required=False)
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path),
              help="Write the memory tree here (a new or empty directory).")
@click.option("--gateway", "gateways", multiple=True, metavar="URL", help="Trustless gateway, tried in order.")
@click.option("--layer", "layers", multiple=True, metavar="NAME=URI", help="Load layered bundles (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@key_options
def load(uri: str | None, output: Path | None, gateways: tuple[str, ...], layers: tuple[str, ...],
         as_json: bool, **params: Any) -> None:
    """Load the bundle at URI (ipfs://CID, gateway URL, .car, manifest URL), verified.

    Skipped files are listed as warnings on stderr; a file that does not match
    its CID fails the load (exit 3) and nothing is written.
    """
    key = resolve_key_spec(**params)
    if layers:
        if uri is not None:
            raise UsageError("give either URI or --layer NAME=URI options, not both")
        if output is None:
            raise UsageError("--layer needs -o DIR")

        outcome = load_layered(parse_layer_option(layers), output, gateways=list(gateways), key=key)
        _warn(outcome.warnings)
        if as_json:
            click.echo(json.dumps(outcome.to_dict(), sort_keys=True))
        else:
            click.echo(f"loaded {len(layers)} layers into {output}: {len(outcome.winners)} memories")
        return
    if uri is None:
        raise UsageError("give a bundle URI (or --layer NAME=URI)")

    result = load_bundle(uri, gateways=gateways, key=key, out_dir=output)
    _warn(result.warnings)
    if as_json:
        click.echo(json.dumps(result.summary(), sort_keys=True))
        return
    if not result.manifest_verified:
        click.echo("warning: the manifest came from a plain URL and is not content-addressed; "
                   "files were checked against the CIDs it lists", err=True)
    root = result.summary()["root"] or uri
    where = f" into {output}" if output is not None else ""
    click.echo(f"loaded {root}: {len(result.files)} files{where}, {len(result.warnings)} skipped")


@click.command("fork")
@click.argument("uri")
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
@click.option("--strategy", type=click.Choice(["merge", "replace"]), default="merge", show_default=True,
              help="merge keeps local memories on conflict; replace takes the bundle's.")
@click.option("--gateway", "gateways", multiple=True, metavar="URL", help="Trustless gateway, tried in order.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@key_options
def fork(uri: str, dest: Path, strategy: str, gateways: tuple[str, ...], as_json: bool, **params: Any) -> None:
    """Import the bundle at URI into the memory tree DEST (all or nothing), source = the bundle's CID."""

    result = fork_bundle(uri, dest, strategy=strategy, gateways=gateways, key=resolve_key_spec(**params))
    _warn(result.loaded.warnings)
    if as_json:
        click.echo(json.dumps(result.summary(), sort_keys=True, default=str))
    else:
        click.echo(f"forked {result.loaded.source} into {dest}: {result.memories} {'memory' if result.memories == 1 else 'memories'} ({strategy})")
