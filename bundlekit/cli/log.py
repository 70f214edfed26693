"""``bundlekit log URI``: a bundle's lineage, newest first, each step loaded and verified.

One line per step on stdout (root, created, publisher, memory diff from its
parent); ``--json`` prints ``{"steps": [...], "note": ...}``. A walk cut short
(depth limit, unreachable parent) says why on stderr.
"""

from __future__ import annotations

from typing import Any

import click

from bundlekit.bundle.log import DEFAULT_DEPTH, walk_lineage
from bundlekit.bundle.sources import gateway_source
from bundlekit.cli import output
from bundlekit.cli._keyopts import key_options, resolve_key_spec
from bundlekit.cli._params import Count

__all__ = ["log"]


@click.command("log")
@click.argument("uri")
@click.option("--gateway", "gateways", multiple=True, metavar="URL", help="Trustless gateway, tried in order.")
@click.option("--depth", type=Count(0), default=DEFAULT_DEPTH, show_default=True, help="At most this many steps.")
@click.option("--json", "as_json", is_flag=True, help="Print the steps as JSON.")
@key_options
def log(uri: str, gateways: tuple[str, ...], depth: int, as_json: bool, **params: Any) -> None:
    """Walk URI's parents back: root, created, publisher and memory changes per step."""
    lineage = walk_lineage(uri, source=gateway_source(gateways), key=resolve_key_spec(**params), depth=depth)
    if as_json:
        output.data_json(lineage.to_dict())
    else:
        for step in lineage.steps:
            diff = step.diff
            change = (f"+{diff['added']} -{diff['removed']} ~{diff['changed']}" if diff is not None
                      else "(oldest reached)" if not step.parents else "")
            output.data(f"{step.root}  {step.created or '-'}  {step.publisher or 'unsigned'}  {change}".rstrip())
    if lineage.note:
        output.warn(lineage.note)
