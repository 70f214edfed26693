"""``bundlekit diff A B``: memories added, removed and changed."""

from __future__ import annotations

import json
from typing import Any

import click

from bundlekit.bundle.diff import diff_sources
from bundlekit.cli._keyopts import key_options, resolve_key_spec

__all__ = ["diff"]


@click.command("diff")
@click.argument("a")
@click.argument("b")
@click.option("--gateway", "gateways", multiple=True, metavar="URL", help="Trustless gateway, tried in order.")
@click.option("--json", "as_json", is_flag=True, help="Print the diff as JSON.")
@click.option("--exit-code", is_flag=True, help="Exit 1 when A and B differ (like git diff --exit-code).")
@key_options
def diff(a: str, b: str, gateways: tuple[str, ...], as_json: bool, exit_code: bool, **params: Any) -> None:
    """Compare A and B (each a memory directory, CAR, CID or bundle URI) memory by memory."""

    result = diff_sources(a, b, gateways=gateways, key=resolve_key_spec(**params))
    for line in result.warnings:
        click.echo(f"warning: {line}", err=True)
    if as_json:
        click.echo(json.dumps(result.to_dict(), sort_keys=True))
    else:
        for key in result.added:
            click.echo(f"+ {key}")
        for key in result.removed:
            click.echo(f"- {key}")
        for change in result.changed:
            click.echo(f"~ {change.key} ({', '.join(change.fields)})")
        click.echo(f"{len(result.added)} added, {len(result.removed)} removed, "
                   f"{len(result.changed)} changed, {result.unchanged} unchanged; timeline "
                   f"+{result.timeline_added} -{result.timeline_removed} entries")
    if exit_code and result.different:
        click.get_current_context().exit(1)
