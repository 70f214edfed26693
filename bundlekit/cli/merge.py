"""``bundlekit merge SOURCE [-d DIR]``: a bundle merged into a memory tree over their common ancestor.

The report goes to stdout: one row per key something happened to (KEY, ACTION, FROM,
DETAIL), or one line of JSON with ``--json``; the summary and notes go to stderr.
``--dry-run`` reports without writing. A ``fail`` conflict exits 1 with nothing written.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from bundlekit._lazy import lazy_module
from bundlekit.bundle.loadoptions import LoadOptions
from bundlekit.bundle.merge import DEFAULT_MAX_MANIFESTS, MergeOptions, MergeResult
from bundlekit.cli import output
from bundlekit.cli._keyopts import key_options, resolve_key_spec
from bundlekit.cli._params import Count, tree_option
from bundlekit.cli._urls import check_urls
from bundlekit.memory.conflicts import CONFLICT_POLICIES

if TYPE_CHECKING:
    from bundlekit.flows import merge as merge_flow
else:  # imported when `bundlekit merge` runs (DEVELOPERS.md, "Lazy imports": `sync` takes this module's report rows)
    merge_flow = lazy_module("bundlekit.flows.merge")

__all__ = ["merge", "report_rows"]

#: ``--on-conflict`` as every command that merges takes it.
ON_CONFLICT = click.option(
    "--on-conflict", type=click.Choice(CONFLICT_POLICIES), default="both", show_default=True,
    help="When both sides changed a memory differently: both (the newer keeps the key, the other a sibling), "
         "newer, ours, theirs, or fail (exit 1, nothing written).")


def report_rows(result: MergeResult) -> list[str]:
    """The table of a merge report: a header and one row per key something happened to."""
    entries = result.report.entries
    if not entries:
        return []
    rows = [("KEY", "ACTION", "FROM", "DETAIL")] + [(e.key, e.action, e.source, e.detail) for e in entries]
    widths = [max(len(output.printable(r[i])) for r in rows) for i in range(3)]
    return ["  ".join(output.printable(cell).ljust(widths[i]) for i, cell in enumerate(r[:3]))
            + "  " + output.printable(r[3]) for r in rows]


def summary_line(result: MergeResult, *, dry_run: bool) -> str:
    """One status line: what was merged over which base and what it did."""
    counts = result.report.counts()
    order = sorted(counts, key=lambda action: action != "deleted")  # a deletion is named first
    done = ", ".join(f"{counts[action]} {action}" for action in order) or "no change"
    verb = "would merge" if dry_run else "merged"
    return (f"{verb} {result.root or result.report.theirs} over "
            f"{result.base or 'no common ancestor'}: {done}; {result.report.timeline_added} timeline lines"
            + ("" if dry_run or result.written else " (nothing to write)"))


@click.command("merge")
@click.argument("source", callback=check_urls)
@tree_option("The memory tree to merge into.", hidden_aliases=("--into",))
@ON_CONFLICT
@click.option("--dry-run", is_flag=True, help="Show the report; write nothing.")
@click.option("--gateway", "gateways", multiple=True, metavar="URL", callback=check_urls,
              help="Trustless gateway, tried in order (for SOURCE and its ancestors).")
@click.option("--publisher", "publishers", multiple=True, metavar="ID",
              help="Require SOURCE signed by ID (Ethereum address or did:key; repeatable): refuse others, exit 3.")
@click.option("--max-manifests", type=Count(0), default=DEFAULT_MAX_MANIFESTS, show_default=True,
              help="Read at most this many manifests looking for the common ancestor.")
@click.option("--allow-deletes", is_flag=True,
              help="Apply a merge that deletes all of the tree's memories or more than a quarter of them "
                   "(refused otherwise, exit 1, nothing written).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one line of JSON.")
@key_options
def merge(source: str, tree: Path, on_conflict: str, dry_run: bool, gateways: tuple[str, ...],
          publishers: tuple[str, ...], max_manifests: int, allow_deletes: bool, as_json: bool,
          **params: Any) -> None:
    """Merge the bundle at SOURCE (any URI `load` takes, verified) into the memory tree (-d).

    Per memory: one side's change is taken; a change against a deletion is kept; both changed
    differently is a conflict (--on-conflict). Timelines are joined. Deletions are listed first;
    one that would remove more than a quarter of the tree needs --allow-deletes. Nothing is
    written unless the whole merge succeeds.
    """
    result = merge_flow.merge(merge_flow.MergeRequest(
        source, tree, gateways=gateways, key=resolve_key_spec(**params), load=LoadOptions(publishers=publishers),
        options=MergeOptions(on_conflict=on_conflict, dry_run=dry_run, max_manifests=max_manifests,
                             allow_deletes=allow_deletes)))
    output.warn_all(result.warnings)
    for note in result.notes:
        output.status(note)
    if as_json:
        output.data_json(result.to_dict())
    else:
        for row in report_rows(result):
            output.data(row)
    output.status(summary_line(result, dry_run=dry_run))
