"""``bundlekit diff OLD [NEW]``: memories added, removed and changed, each line labelled by its side.

NEW defaults to the memory tree (``-d``, ``$BUNDLEKIT_MEMORY_DIR``, else ``./memory``), so ``diff bundle.car``
is what changed in the tree since that bundle was built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from bundlekit.bundle.diff import DiffResult, diff_sources
from bundlekit.bundle.sources import gateway_source
from bundlekit.cli import output
from bundlekit.cli._keyopts import key_options, resolve_key_spec
from bundlekit.cli._params import tree_option
from bundlekit.cli._urls import check_urls
from bundlekit.errors import UsageError

__all__ = ["diff"]


@click.command("diff")
@click.argument("old", callback=check_urls)
@click.argument("new", required=False, callback=check_urls)
@tree_option("The memory tree NEW defaults to.")
@click.option("--gateway", "gateways", multiple=True, metavar="URL", callback=check_urls,
              help="Trustless gateway, tried in order.")
@click.option("--json", "as_json", is_flag=True, help="Print the diff as JSON (with the two sides as old and new).")
@click.option("--exit-code", is_flag=True, help="Exit 1 when OLD and NEW differ (like git diff --exit-code).")
@key_options
def diff(old: str, new: str | None, tree: Path, gateways: tuple[str, ...], as_json: bool, exit_code: bool, **params: Any) -> None:
    """Compare OLD with NEW (each a memory directory, CAR, CID or bundle URI) memory by memory; without
    NEW, with the memory tree (-d).

    The order is that of `diff OLD NEW`: "+ KEY  only in NEW" is a memory
    NEW added, "- KEY  only in OLD" one it removed, "~ KEY  changed: FIELDS"
    one in both whose named fields (or body) differ. To see what changed in
    a tree since its bundle was built: bundlekit diff bundle.car
    """

    if new is None and not tree.is_dir():
        raise UsageError(f"no memory tree at {tree}: give NEW, -d DIR or set $BUNDLEKIT_MEMORY_DIR")
    result = diff_sources(old, new if new is not None else tree, source=gateway_source(gateways), key=resolve_key_spec(**params))
    output.warn_all(result.warnings)
    if as_json:
        output.data_json(result.to_dict())
    else:
        *rows, summary = _lines(result)
        for line in rows:
            output.data(output.printable(line))  # a changed field is a frontmatter key: file-derived text
        output.status(summary)
    if exit_code and result.different:
        click.get_current_context().exit(1)


def _lines(result: DiffResult) -> list[str]:
    """One line per differing memory (labelled by side), then the counts."""
    rows = [("-", key, f"only in {result.old_label}") for key in result.removed]
    rows += [("+", key, f"only in {result.new_label}") for key in result.added]
    rows += [("~", c.key, f"changed: {', '.join(c.fields)}") for c in result.changed]
    width = max((len(key) for _mark, key, _what in rows), default=0)
    lines = [f"{mark} {key.ljust(width)}  {what}" for mark, key, what in rows]
    lines.append(
        f"{result.old_label} -> {result.new_label}: {len(result.added)} added, {len(result.removed)} removed, "
        f"{len(result.changed)} changed, {result.unchanged} unchanged; timeline entries: "
        f"{result.timeline_added} added, {result.timeline_removed} removed"
    )
    return lines
